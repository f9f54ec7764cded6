//! Expected results (XML, JSON, TSV, CSV, or an RDF result set or graph) and the
//! comparison of an outcome against them: solutions as multisets (as a sequence
//! when the query orders them), blank nodes matched up to renaming, graphs up to
//! isomorphism.

use anyhow::{Context, Result, bail};
use kgfuse_graph::QueryOutcome;
use oxigraph::io::RdfParser;
use oxigraph::model::dataset::CanonicalizationAlgorithm;
use oxigraph::model::{
    BlankNode, Graph, Literal, NamedNodeRef, NamedOrBlankNode, Term, TermRef, TripleRef,
};
use oxigraph::sparql::results::{
    QueryResultsFormat, QueryResultsParser, ReaderQueryResultsParserOutput,
};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

const RS: &str = "http://www.w3.org/2001/sw/DataAccess/tests/result-set#";

/// What a test expects.
#[derive(Debug, Clone)]
pub enum Expected {
    /// Solutions, a boolean or a graph.
    Outcome(QueryOutcome),
    /// The text of a CSV results document (CSV is lossy: compared as text cells).
    Csv(String),
}

/// Reads an expected-results file by its extension.
pub fn read_expected(path: &Path) -> Result<Expected> {
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let bytes = std::fs::read(path).with_context(|| path.display().to_string())?;
    let results_format = match extension {
        "srx" => QueryResultsFormat::Xml,
        "srj" => QueryResultsFormat::Json,
        "tsv" => QueryResultsFormat::Tsv,
        "csv" => return Ok(Expected::Csv(String::from_utf8(bytes)?)),
        _ => return read_rdf_expected(path, &bytes).map(Expected::Outcome),
    };
    let parsed = QueryResultsParser::from_format(results_format)
        .for_reader(bytes.as_slice())
        .with_context(|| path.display().to_string())?;
    Ok(Expected::Outcome(match parsed {
        ReaderQueryResultsParserOutput::Boolean(value) => QueryOutcome::Boolean(value),
        ReaderQueryResultsParserOutput::Solutions(solutions) => {
            let variables = solutions.variables().to_vec();
            let mut rows = Vec::new();
            for solution in solutions {
                let solution = solution.with_context(|| path.display().to_string())?;
                rows.push(variables.iter().map(|v| solution.get(v).cloned()).collect());
            }
            QueryOutcome::Solutions {
                variables: variables.iter().map(|v| v.as_str().to_owned()).collect(),
                rows,
            }
        }
    }))
}

/// An RDF file: a result set in the `rs:` vocabulary, or else a CONSTRUCT graph.
fn read_rdf_expected(path: &Path, bytes: &[u8]) -> Result<QueryOutcome> {
    let format = kgfuse_graph::format_from_path(path)?;
    let base = crate::engines::file_iri(path)?;
    let mut graph = Graph::new();
    for quad in RdfParser::from_format(format)
        .with_base_iri(base.as_str())?
        .for_slice(bytes)
    {
        let quad = quad.with_context(|| path.display().to_string())?;
        graph.insert(TripleRef::from(quad.as_ref()));
    }
    let rs = |local: &str| format!("{RS}{local}");
    let result_set_type = rs("ResultSet");
    let Some(set) = graph
        .subjects_for_predicate_object(
            NamedNodeRef::new_unchecked("http://www.w3.org/1999/02/22-rdf-syntax-ns#type"),
            NamedNodeRef::new_unchecked(&result_set_type),
        )
        .next()
        .map(|s| s.into_owned())
    else {
        return Ok(QueryOutcome::Graph(
            graph.iter().map(|t| t.into_owned()).collect(),
        ));
    };
    let value = |subject: &NamedOrBlankNode, local: &str| {
        let predicate = rs(local);
        graph
            .object_for_subject_predicate(subject, NamedNodeRef::new_unchecked(&predicate))
            .map(TermRef::into_owned)
    };
    let values = |subject: &NamedOrBlankNode, local: &str| -> Vec<Term> {
        let predicate = rs(local);
        graph
            .objects_for_subject_predicate(subject, NamedNodeRef::new_unchecked(&predicate))
            .map(TermRef::into_owned)
            .collect()
    };
    let as_node = |term: Term| match term {
        Term::NamedNode(n) => Some(NamedOrBlankNode::from(n)),
        Term::BlankNode(b) => Some(NamedOrBlankNode::from(b)),
        _ => None,
    };
    if let Some(Term::Literal(boolean)) = value(&set, "boolean") {
        return Ok(QueryOutcome::Boolean(boolean.value() == "true"));
    }
    let mut variables: Vec<String> = values(&set, "resultVariable")
        .into_iter()
        .filter_map(|v| match v {
            Term::Literal(l) => Some(l.value().to_owned()),
            _ => None,
        })
        .collect();
    variables.sort();
    let mut indexed_rows = Vec::new();
    for solution in values(&set, "solution").into_iter().filter_map(as_node) {
        let mut row = vec![None; variables.len()];
        for binding in values(&solution, "binding").into_iter().filter_map(as_node) {
            let (Some(Term::Literal(name)), Some(term)) =
                (value(&binding, "variable"), value(&binding, "value"))
            else {
                bail!("{}: a binding without variable or value", path.display());
            };
            if let Some(i) = variables.iter().position(|v| v == name.value()) {
                row[i] = Some(term);
            }
        }
        let index = match value(&solution, "index") {
            Some(Term::Literal(l)) => l.value().parse::<u64>().ok(),
            _ => None,
        };
        indexed_rows.push((index, row));
    }
    indexed_rows.sort_by_key(|(index, _)| *index);
    Ok(QueryOutcome::Solutions {
        variables,
        rows: indexed_rows.into_iter().map(|(_, row)| row).collect(),
    })
}

/// Whether the query's solutions come in a defined order (a top-level ORDER BY).
pub fn is_ordered(query: &spargebra::Query) -> bool {
    use spargebra::algebra::GraphPattern;
    let spargebra::Query::Select { pattern, .. } = query else {
        return false;
    };
    let mut pattern = pattern;
    loop {
        match pattern {
            GraphPattern::OrderBy { .. } => return true,
            GraphPattern::Slice { inner, .. }
            | GraphPattern::Project { inner, .. }
            | GraphPattern::Distinct { inner }
            | GraphPattern::Reduced { inner } => pattern = inner,
            _ => return false,
        }
    }
}

/// Whether `actual` is `expected`, up to blank node renaming.
pub fn same_outcome(expected: &QueryOutcome, actual: &QueryOutcome, ordered: bool) -> bool {
    match (expected, actual) {
        (QueryOutcome::Boolean(a), QueryOutcome::Boolean(b)) => a == b,
        (QueryOutcome::Graph(a), QueryOutcome::Graph(b)) => {
            let canonical = |triples: &[oxigraph::model::Triple]| {
                let mut graph: Graph = triples.iter().collect();
                graph.canonicalize(CanonicalizationAlgorithm::Unstable);
                graph
            };
            canonical(a) == canonical(b)
        }
        (
            QueryOutcome::Solutions {
                variables: expected_vars,
                rows: expected_rows,
            },
            QueryOutcome::Solutions {
                variables: actual_vars,
                rows: actual_rows,
            },
        ) => {
            let keyed = |vars: &[String], rows: &[Vec<Option<Term>>]| -> Vec<Row> {
                rows.iter()
                    .map(|row| {
                        vars.iter()
                            .zip(row)
                            .filter_map(|(v, t)| t.clone().map(|t| (v.clone(), t)))
                            .collect()
                    })
                    .collect()
            };
            same_rows(
                &keyed(expected_vars, expected_rows),
                &keyed(actual_vars, actual_rows),
                ordered,
            )
        }
        _ => false,
    }
}

/// A CSV outcome against the expected CSV text: the same columns (in any order:
/// `SELECT *` leaves it open), the rows equal as multisets of cells, blank node
/// labels matched up to renaming.
pub fn same_csv(expected: &str, actual: &str) -> bool {
    let (expected, actual) = (csv_records(expected), csv_records(actual));
    let (Some((expected_head, expected_rows)), Some((actual_head, actual_rows))) =
        (expected.split_first(), actual.split_first())
    else {
        return expected.is_empty() && actual.is_empty();
    };
    let mut sorted = (expected_head.clone(), actual_head.clone());
    sorted.0.sort();
    sorted.1.sort();
    if sorted.0 != sorted.1 {
        return false;
    }
    let to_rows = |head: &[String], records: &[Vec<String>]| -> Vec<Row> {
        records
            .iter()
            .map(|cells| {
                head.iter()
                    .zip(cells)
                    .map(|(name, cell)| {
                        let term = match cell.strip_prefix("_:") {
                            Some(label) => Term::BlankNode(BlankNode::new_unchecked(label)),
                            None => Term::Literal(cell.as_str().into()),
                        };
                        (name.clone(), term)
                    })
                    .collect()
            })
            .collect()
    };
    same_rows(
        &to_rows(expected_head, expected_rows),
        &to_rows(actual_head, actual_rows),
        false,
    )
}

/// The records of a CSV document (RFC 4180 quoting), without empty lines.
fn csv_records(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let (mut record, mut cell) = (Vec::new(), String::new());
    let (mut quoted, mut chars) = (false, text.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => record.push(std::mem::take(&mut cell)),
            ('\r', false) => {}
            ('\n', false) => {
                record.push(std::mem::take(&mut cell));
                if record.iter().any(|c| !c.is_empty()) || record.len() > 1 {
                    records.push(std::mem::take(&mut record));
                }
                record.clear();
            }
            (c, _) => cell.push(c),
        }
    }
    if !cell.is_empty() || !record.is_empty() {
        record.push(cell);
        records.push(record);
    }
    records
}

/// Literals equal as terms, or numbers or booleans of one datatype with the same
/// value: the expected files write them in various lexical forms (`"1.0"` and `"1"`
/// as `xsd:decimal`, `"3.0E4"` and `"30000"` as `xsd:double`, `"0"` and `"false"`).
fn same_literal(expected: &Literal, actual: &Literal) -> bool {
    const NUMERIC: [&str; 4] = ["integer", "decimal", "double", "float"];
    if expected == actual {
        return true;
    }
    let datatype = expected.datatype().as_str();
    if datatype == "http://www.w3.org/2001/XMLSchema#boolean"
        && actual.datatype() == expected.datatype()
    {
        let truth = |v: &str| match v {
            "true" | "1" => Some(true),
            "false" | "0" => Some(false),
            _ => None,
        };
        return truth(expected.value()).is_some()
            && truth(expected.value()) == truth(actual.value());
    }
    let numeric = datatype
        .strip_prefix("http://www.w3.org/2001/XMLSchema#")
        .is_some_and(|local| NUMERIC.contains(&local));
    if !numeric || datatype != actual.datatype().as_str() {
        return false;
    }
    match (
        expected.value().parse::<f64>(),
        actual.value().parse::<f64>(),
    ) {
        (Ok(e), Ok(a)) => e == a || (e.is_nan() && a.is_nan()),
        _ => false,
    }
}

/// A solution as its bound variables, in any order.
type Row = BTreeMap<String, Term>;

/// The rows equal up to blank node renaming (one renaming for all rows), as a
/// sequence when `ordered`, else as multisets. Backtracking search, capped.
fn same_rows(expected: &[Row], actual: &[Row], ordered: bool) -> bool {
    if expected.len() != actual.len() {
        return false;
    }
    let mut search = RowSearch {
        expected,
        actual,
        ordered,
        used: vec![false; actual.len()],
        steps: 0,
    };
    search.extend(0, &BlankMap::default())
}

/// A one-to-one renaming of expected blank nodes to actual ones.
#[derive(Clone, Default)]
struct BlankMap {
    forward: HashMap<BlankNode, BlankNode>,
    backward: HashMap<BlankNode, BlankNode>,
}

impl BlankMap {
    /// The renaming extended so that `expected` matches `actual`, if it can be.
    fn unify(&self, expected: &Row, actual: &Row) -> Option<Self> {
        if expected.len() != actual.len() {
            return None;
        }
        let mut map = self.clone();
        for ((expected_var, expected_term), (actual_var, actual_term)) in
            expected.iter().zip(actual)
        {
            if expected_var != actual_var {
                return None;
            }
            match (expected_term, actual_term) {
                (Term::BlankNode(e), Term::BlankNode(a)) => {
                    match (map.forward.get(e), map.backward.get(a)) {
                        (Some(mapped), _) if mapped != a => return None,
                        (_, Some(mapped)) if mapped != e => return None,
                        _ => {
                            map.forward.insert(e.clone(), a.clone());
                            map.backward.insert(a.clone(), e.clone());
                        }
                    }
                }
                (Term::Literal(e), Term::Literal(a)) if same_literal(e, a) => {}
                (e, a) if e == a => {}
                _ => return None,
            }
        }
        Some(map)
    }
}

struct RowSearch<'a> {
    expected: &'a [Row],
    actual: &'a [Row],
    ordered: bool,
    used: Vec<bool>,
    steps: u32,
}

impl RowSearch<'_> {
    const MAX_STEPS: u32 = 2_000_000;

    fn extend(&mut self, next: usize, map: &BlankMap) -> bool {
        let Some(expected) = self.expected.get(next) else {
            return true;
        };
        let candidates: Vec<usize> = if self.ordered {
            vec![next]
        } else {
            (0..self.actual.len()).filter(|&i| !self.used[i]).collect()
        };
        for candidate in candidates {
            self.steps += 1;
            if self.steps > Self::MAX_STEPS {
                return false;
            }
            let Some(extended) = map.unify(expected, &self.actual[candidate]) else {
                continue;
            };
            self.used[candidate] = true;
            if self.extend(next + 1, &extended) {
                return true;
            }
            self.used[candidate] = false;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxigraph::model::NamedNode;

    const XSD: &str = "http://www.w3.org/2001/XMLSchema#";

    fn row(cells: &[(&str, Term)]) -> Row {
        cells
            .iter()
            .map(|(v, t)| ((*v).to_owned(), t.clone()))
            .collect()
    }

    #[test]
    fn blank_nodes_match_up_to_one_renaming() {
        let [a, b, x, y] =
            ["a", "b", "x", "y"].map(|l| Term::BlankNode(BlankNode::new_unchecked(l)));
        let one = Term::Literal(Literal::from(1));
        let expected = [
            row(&[("s", a.clone()), ("o", one.clone())]),
            row(&[("s", b.clone())]),
        ];
        let renamed = [
            row(&[("s", y.clone())]),
            row(&[("s", x.clone()), ("o", one.clone())]),
        ];
        assert!(same_rows(&expected, &renamed, false));
        assert!(!same_rows(&expected, &renamed, true));
        // Two expected nodes cannot both become one actual node.
        let merged = [row(&[("s", x.clone()), ("o", one)]), row(&[("s", x)])];
        assert!(!same_rows(&expected, &merged, false));
    }

    #[test]
    fn numbers_compare_by_value_within_one_datatype() {
        let typed = |v: &str, t: &str| {
            Literal::new_typed_literal(v, NamedNode::new_unchecked(format!("{XSD}{t}")))
        };
        assert!(same_literal(
            &typed("1.0", "decimal"),
            &typed("1", "decimal")
        ));
        assert!(same_literal(
            &typed("3.0E4", "double"),
            &typed("30000", "double")
        ));
        assert!(!same_literal(
            &typed("1", "integer"),
            &typed("1", "decimal")
        ));
        assert!(!same_literal(
            &typed("1.5", "decimal"),
            &typed("1", "decimal")
        ));
        assert!(!same_literal(&typed("01", "string"), &typed("1", "string")));
    }

    #[test]
    fn csv_cells_compare_as_text_with_quotes_undone() {
        let expected = "x,y\r\n\"a,b\",_:b0\r\n1,\r\n";
        assert!(same_csv(expected, "x,y\r\n1,\r\n\"a,b\",_:n9\r\n"));
        assert!(!same_csv(expected, "x,y\r\n1,\r\na,_:n9\r\n"));
        assert!(same_csv(expected, "y,x\r\n,1\r\n_:n9,\"a,b\"\r\n"));
        assert!(!same_csv(expected, "x,z\r\n1,\r\n\"a,b\",_:n9\r\n"));
    }
}
