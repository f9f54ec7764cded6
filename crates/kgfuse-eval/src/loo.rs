//! Leave-one-out case retrieval sets: each worked case of a package's tests becomes
//! a question (its docstring, else its name split into words), its gold is the
//! package functions it calls, and the case itself is excluded from retrieval, so
//! the answer cannot be read off the case. Calls resolved only by name count when
//! they land in the package: tests often call through an attribute
//! (`self.json.dumps`), which static resolution cannot follow.

use crate::{EvalError, EvalItem};
use kgfuse::Engine;
use kgfuse::QueryOutcome;
use kgfuse::model::{Literal, Term};
use kgfuse::text::first_paragraph;
use std::collections::{BTreeMap, BTreeSet};

/// Which cases become questions.
#[derive(Debug, Clone, Default)]
pub struct LooOptions {
    /// The package whose functions are the gold (its name, e.g. `json`).
    pub package: String,
    /// Only cases from files under this path (e.g. the package's test directory).
    pub tests: Option<String>,
    /// Longest query, in characters (docstrings can be long).
    pub max_query_chars: usize,
}

const QUERY: &str = "PREFIX kgfuse: <https://w3id.org/kgfuse/ontology#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT ?case ?function ?name ?label ?comment ?path ?package WHERE {
  ?pkg kgfuse:qualifiedName|kgfuse:name|rdfs:label ?package .
  ?function kgfuse:inPackage ?pkg ; kgfuse:qualifiedName ?name .
  ?case a kgfuse:Case ; kgfuse:exercises|kgfuse:exercisesByName ?function .
  OPTIONAL { ?case rdfs:label ?label }
  OPTIONAL { ?case rdfs:comment ?comment }
  OPTIONAL { GRAPH ?g { ?case a kgfuse:Case } ?g kgfuse:sourceFile ?path }
}";

/// What the store says about one case.
#[derive(Default)]
struct CaseRow {
    /// Qualified names of the package functions it exercises.
    gold: BTreeSet<String>,
    label: Option<String>,
    comment: Option<String>,
}

/// `test_dump_sorted_keys` -> `dump sorted keys`; `JSONTestCase.test_x` -> `x`.
fn words_of(name: &str) -> String {
    let last = name.rsplit(['.', '/']).next().unwrap_or(name);
    last.trim_start_matches("test_")
        .replace(['_', '-'], " ")
        .trim()
        .to_owned()
}

/// Builds the question set from what the store holds (the package and its tests
/// must be ingested first).
pub fn make_leave_one_out(
    engine: &Engine,
    options: &LooOptions,
) -> Result<Vec<EvalItem>, EvalError> {
    let bindings = [(
        "package".to_owned(),
        Term::Literal(Literal::new_simple_literal(options.package.as_str())),
    )];
    let QueryOutcome::Solutions { rows, variables } =
        engine.sparql_bound(QUERY, &bindings, &engine.query_options())?
    else {
        return Ok(Vec::new());
    };
    let column = |name: &str| variables.iter().position(|v| v == name);
    let text = |row: &[Option<Term>], name: &str| -> Option<String> {
        match row.get(column(name)?)?.as_ref()? {
            Term::NamedNode(n) => Some(n.as_str().to_owned()),
            Term::Literal(l) => Some(l.value().to_owned()),
            Term::BlankNode(_) => None,
        }
    };
    let mut cases: BTreeMap<String, CaseRow> = BTreeMap::new();
    for row in &rows {
        let (Some(case), Some(name)) = (text(row, "case"), text(row, "name")) else {
            continue;
        };
        if let Some(prefix) = &options.tests
            && !text(row, "path").is_some_and(|p| p.starts_with(prefix.as_str()))
        {
            continue;
        }
        let entry = cases.entry(case).or_default();
        entry.gold.insert(name);
        if entry.label.is_none() {
            entry.label = text(row, "label");
        }
        if entry.comment.is_none() {
            entry.comment = text(row, "comment");
        }
    }
    let max = if options.max_query_chars == 0 {
        300
    } else {
        options.max_query_chars
    };
    let mut items = Vec::new();
    for (
        case,
        CaseRow {
            gold,
            label,
            comment,
        },
    ) in cases
    {
        let query = comment
            .as_deref()
            .map(|c| first_paragraph(c, max))
            .filter(|q| !q.is_empty())
            .unwrap_or_else(|| words_of(label.as_deref().unwrap_or(&case)));
        if query.is_empty() {
            continue;
        }
        let id = case.rsplit('/').next().unwrap_or(&case).to_owned();
        items.push(EvalItem {
            id,
            query,
            gold: gold.into_iter().map(crate::Gold::One).collect(),
            gold_answers: Vec::new(),
            package: Some(options.package.clone()),
            exclude: vec![case],
        });
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_docstrings_become_queries() {
        assert_eq!(
            words_of("test.test_json.TestDump.test_dump_sorted_keys"),
            "dump sorted keys"
        );
        assert_eq!(
            first_paragraph("Check that  dumps\nsorts keys.\n\nMore detail.", 300),
            "Check that dumps sorts keys."
        );
        assert_eq!(first_paragraph("one two three four", 9), "one two");
    }
}
