//! The site of a function being written: a question that declares a function
//! the store holds (`def name(...)`, as an editor's stub or a pasted signature
//! shows it) asks for that function's body, and what the body calls lies
//! mostly around it. Measured on six packages' function tasks
//! (eval/tasks/README.md), 41 % of the callees were methods of the function's
//! own class and 42 % other functions of its module.
//!
//! The `site` channel of the fused ranking ([`super::channels`]) lists the
//! functions around the site, best first by [`candidate_score`]: the methods of
//! its class and of the classes it extends, the other functions of its module,
//! and the functions the module's functions call (what its imports are used
//! for). The declared function itself is the question, not an answer: it is left
//! out of every channel.

use crate::RetrieveError;
use crate::functions::iri_terms;
use kgfuse_core::code::is_test_code;
use kgfuse_core::iri::local_name;
use kgfuse_core::vocab::{kg, w3c};
use kgfuse_graph::model::{Literal, Term};
use kgfuse_lexicon::sparql::{self, cell_text};
use kgfuse_store::{Question, Store};
use std::collections::HashMap;

/// How much a method of the site's class (or of a class it extends) counts over
/// another function of the module.
const SAME_CLASS: f64 = 3.0;
/// Lines between two definitions of a module that cost as much as one
/// [`SAME_CLASS`] third: callees are often defined near their callers.
const LINES_PER_POINT: f64 = 200.0;
/// What a candidate outside the module (a callee in another module, a
/// base class's method elsewhere) pays for having no distance.
const ELSEWHERE: f64 = 1.0;

/// The function a question declares, where the store holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Site {
    /// The declared function's node.
    pub function: String,
    /// Its module.
    pub module: String,
    /// The class it is a method of.
    pub class: Option<String>,
    /// The line its definition starts on.
    pub line: Option<i64>,
}

/// The `def` header a question declares: its name and its text without
/// whitespace (`def f(a, b=1) -> int` as `deff(a,b=1)->int`), which is how it is
/// compared with the stored signatures, however the question wraps or spaces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Declared {
    /// The function's name.
    pub name: String,
    /// The header, every whitespace character removed, without the `:`.
    pub header: String,
}

/// The first `def` header in the question: from a line that starts with `def ` or
/// `async def ` to the `:` that ends it outside brackets.
pub(crate) fn declared(question: &str) -> Option<Declared> {
    let (line, header_at) = question.lines().find_map(|line| {
        let trimmed = line.trim_start();
        let def = trimmed.strip_prefix("async ").unwrap_or(trimmed);
        def.starts_with("def ")
            .then(|| (line, line.len() - trimmed.len()))
    })?;
    let start = line.as_ptr() as usize - question.as_ptr() as usize + header_at;
    let text = &question[start..];
    let mut depth = 0_i32;
    let mut end = None;
    for (at, ch) in text.char_indices() {
        match ch {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ':' if depth == 0 => {
                end = Some(at);
                break;
            }
            _ => {}
        }
    }
    let header = without_whitespace(&text[..end?]);
    let after_def = &text[text.find("def ")? + "def ".len()..];
    let name: String = after_def
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(Declared { name, header })
}

/// Most sites one question may have: the same stub in several places (a class
/// copied into two modules) gives each of them.
const MAX_SITES: usize = 3;

/// The sites of the function the question declares: the stored functions of
/// that name whose signature is the declared header (whitespace aside), not
/// held out of the question; where several match, those whose docstring the
/// question quotes, when some do. Empty when the question declares no function,
/// none matches, or more than [`MAX_SITES`] remain (a stub that could be almost
/// anywhere has no site).
pub(crate) fn sites_of(store: &Store, question: &Question) -> Result<Vec<Site>, RetrieveError> {
    let Some(declared) = declared(question.text()) else {
        return Ok(Vec::new());
    };
    let name = Term::from(Literal::new_simple_literal(declared.name.clone()));
    let text = format!(
        "SELECT ?function ?signature ?module ?class ?line ?doc WHERE {{ {values} \
           ?function <{name}> ?name ; <{signature}> ?signature ; <{in_module}> ?module . \
           OPTIONAL {{ ?class <{has_function}> ?function . ?class a <{class_kind}> }} \
           OPTIONAL {{ ?function <{start_line}> ?line }} \
           OPTIONAL {{ ?function <{comment}> ?doc }} }}",
        values = sparql::values("name", &[name]),
        name = kg::NAME,
        signature = kg::SIGNATURE,
        in_module = kg::IN_MODULE,
        has_function = kg::HAS_FUNCTION,
        class_kind = kg::CLASS,
        start_line = kg::START_LINE,
        comment = w3c::RDFS_COMMENT,
    );
    let solutions = sparql::run(store, text)?;
    let question_text = without_whitespace(question.text());
    let mut matches: Vec<(Site, bool)> = solutions
        .rows
        .iter()
        .filter_map(|row| {
            let function = cell_text(row.first())?;
            let signature = without_whitespace(&cell_text(row.get(1))?);
            if signature != declared.header || question.held_out().contains(&function) {
                return None;
            }
            let quoted = cell_text(row.get(5))
                .is_some_and(|doc| question_text.contains(&without_whitespace(&doc)));
            let site = Site {
                function,
                module: cell_text(row.get(2)).unwrap_or_default(),
                class: cell_text(row.get(3)),
                line: cell_text(row.get(4)).and_then(|l| l.parse().ok()),
            };
            Some((site, quoted))
        })
        .collect();
    matches.sort_by(|a, b| a.0.function.cmp(&b.0.function).then(b.1.cmp(&a.1)));
    matches.dedup_by(|a, b| a.0.function == b.0.function);
    if matches.iter().any(|(_, quoted)| *quoted) {
        matches.retain(|(_, quoted)| *quoted);
    }
    if matches.len() > MAX_SITES {
        return Ok(Vec::new());
    }
    Ok(matches.into_iter().map(|(site, _)| site).collect())
}

/// `text` with every whitespace character removed.
fn without_whitespace(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// A function near the site, as the channel's query reads it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Candidate {
    /// The function's node.
    pub iri: String,
    /// Whether it is a method of the site's class or of a class it extends.
    pub same_class: bool,
    /// Whether it is defined in the site's module.
    pub same_module: bool,
    /// The line its definition starts on.
    pub line: Option<i64>,
    /// How many functions of the site's module call it.
    pub callers: usize,
}

/// A candidate's score: [`SAME_CLASS`] for a method of the site's class, plus
/// the log of how many of the module's functions call it (what the module
/// uses often, its body likely uses too), less its distance in lines from the
/// site ([`LINES_PER_POINT`] a point; [`ELSEWHERE`] outside the module).
pub(crate) fn candidate_score(site: &Site, candidate: &Candidate) -> f64 {
    let class = if candidate.same_class {
        SAME_CLASS
    } else {
        0.0
    };
    #[allow(clippy::cast_precision_loss)]
    let used = (candidate.callers as f64).ln_1p();
    #[allow(clippy::cast_precision_loss)]
    let distance = match (candidate.same_module, site.line, candidate.line) {
        (true, Some(at), Some(line)) => (at - line).abs() as f64 / LINES_PER_POINT,
        _ => ELSEWHERE,
    };
    class + used - distance
}

/// The `site` channel: the functions around each site, best first, the
/// sites' lists taken in turn; the sites themselves, classes and test code left
/// out.
pub(crate) fn site_channel(
    store: &Store,
    sites: &[Site],
    depth: usize,
) -> Result<Vec<String>, RetrieveError> {
    let lists = sites
        .iter()
        .map(|site| around(store, site, sites, depth))
        .collect::<Result<Vec<_>, _>>()?;
    let mut ranked: Vec<String> = Vec::new();
    for rank in 0..depth {
        for list in &lists {
            if let Some(iri) = list.get(rank)
                && !ranked.contains(iri)
            {
                ranked.push(iri.clone());
            }
        }
    }
    ranked.truncate(depth);
    Ok(ranked)
}

/// The functions around one site, best first (ties by IRI), none of `sites`.
fn around(
    store: &Store,
    site: &Site,
    sites: &[Site],
    depth: usize,
) -> Result<Vec<String>, RetrieveError> {
    let module = iri_terms(&[site.module.as_str()])?;
    let class = iri_terms(&site.class.iter().collect::<Vec<_>>())?;
    let calls = format!("<{}>|<{}>", kg::CALLS, kg::CALLS_BY_NAME);
    // Three ways to be near: in the module, a method of the class or of a class
    // it extends, called from the module; then how many of the module's
    // functions call it.
    let in_class = if class.is_empty() {
        String::new()
    } else {
        format!(
            "UNION {{ {values} ?class <{extends}>* ?base . ?base <{has_function}> ?function . \
               BIND(true AS ?inClass) }}",
            values = sparql::values("class", &class),
            extends = kg::EXTENDS,
            has_function = kg::HAS_FUNCTION,
        )
    };
    let text = format!(
        "SELECT ?function ?qualified ?line ?inModule ?inClass (COUNT(DISTINCT ?caller) AS ?callers) \
         WHERE {{ {module_values} \
           {{ {{ ?function <{in_module}> ?module . BIND(true AS ?inModule) }} {in_class} \
              UNION {{ ?user <{in_module}> ?module ; {calls} ?function }} }} \
           ?function a <{function_kind}> ; <{qualified_name}> ?qualified . \
           FILTER NOT EXISTS {{ ?function a <{class_kind}> }} \
           OPTIONAL {{ ?function <{start_line}> ?line }} \
           OPTIONAL {{ ?caller <{in_module}> ?module ; {calls} ?function }} }} \
         GROUP BY ?function ?qualified ?line ?inModule ?inClass",
        module_values = sparql::values("module", &module),
        in_module = kg::IN_MODULE,
        function_kind = kg::FUNCTION,
        qualified_name = kg::QUALIFIED_NAME,
        class_kind = kg::CLASS,
        start_line = kg::START_LINE,
    );
    let solutions = sparql::run(store, text)?;
    // Code in a test file may call test helpers; library code does not.
    let site_is_test = is_test_code(local_name(&site.function));
    let mut candidates: HashMap<String, Candidate> = HashMap::new();
    for row in &solutions.rows {
        let (Some(iri), Some(qualified)) = (cell_text(row.first()), cell_text(row.get(1))) else {
            continue;
        };
        let declared = sites.iter().any(|s| s.function == iri);
        if declared || (!site_is_test && is_test_code(&qualified)) {
            continue;
        }
        let candidate = candidates.entry(iri.clone()).or_insert_with(|| Candidate {
            iri,
            same_class: false,
            same_module: false,
            line: None,
            callers: 0,
        });
        candidate.line = candidate
            .line
            .or_else(|| cell_text(row.get(2)).and_then(|l| l.parse().ok()));
        candidate.same_module |= sparql::cell_is_true(row.get(3));
        candidate.same_class |= sparql::cell_is_true(row.get(4));
        candidate.callers = candidate.callers.max(
            cell_text(row.get(5))
                .and_then(|n| n.parse().ok())
                .unwrap_or(0),
        );
    }
    let mut scored: Vec<(f64, String)> = candidates
        .into_values()
        .map(|candidate| (candidate_score(site, &candidate), candidate.iri))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    Ok(scored.into_iter().take(depth).map(|(_, iri)| iri).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declared_header_is_read_whatever_its_wrapping() {
        let question = "Write this:\n    def pick(self, items: list[int],\n             key=lambda x: x) -> int:\n        \"\"\"Choose.\"\"\"";
        assert_eq!(
            declared(question),
            Some(Declared {
                name: "pick".into(),
                header: "defpick(self,items:list[int],key=lambdax:x)->int".into(),
            })
        );
        let asynchronous = declared("async def fetch(url):\n    ...").expect("declared");
        assert_eq!(asynchronous.header, "asyncdeffetch(url)");
        assert_eq!(
            declared("how do I define a function? def is a keyword"),
            None
        );
        assert_eq!(declared("def broken(a, b"), None);
    }

    #[test]
    fn the_class_and_nearness_and_use_order_the_candidates() {
        let site = Site {
            function: "urn:f".into(),
            module: "urn:m".into(),
            class: Some("urn:c".into()),
            line: Some(100),
        };
        let candidate = |same_class, same_module, line, callers| Candidate {
            iri: String::new(),
            same_class,
            same_module,
            line,
            callers,
        };
        let method = candidate_score(&site, &candidate(true, true, Some(400), 0));
        let neighbour = candidate_score(&site, &candidate(false, true, Some(120), 0));
        let far = candidate_score(&site, &candidate(false, true, Some(900), 0));
        let used_elsewhere = candidate_score(&site, &candidate(false, false, None, 6));
        assert!(method > neighbour && neighbour > far);
        assert!(used_elsewhere > far && used_elsewhere > neighbour);
    }

    /// A small code graph: module `m` with class `C` (methods `stub`, `near`,
    /// `far`; `C` extends `Base` of module `b`), functions `helper` and `other`
    /// of `m`, `util` of module `u` (called by two of `m`'s functions), and a
    /// test helper that `m` calls by name.
    const CODE: &str = r#"
@prefix kg: <https://w3id.org/kgfuse/ontology#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix : <urn:code:> .
:m a kg:Module . :u a kg:Module . :b a kg:Module .
:C a kg:Class, kg:Function ; kg:inModule :m ; kg:qualifiedName "m.C" ; kg:extends :Base ;
   kg:hasFunction :stub, :near, :far .
:Base a kg:Class ; kg:inModule :b ; kg:qualifiedName "b.Base" ; kg:hasFunction :inherited .
:stub a kg:Function, kg:Method ; kg:name "stub" ; kg:qualifiedName "m.C.stub" ;
   kg:signature "def stub(self, x: int) -> int" ; kg:inModule :m ; kg:startLine 100 ;
   rdfs:comment "Make a thing." .
:near a kg:Function ; kg:qualifiedName "m.C.near" ; kg:inModule :m ; kg:startLine 90 .
:far a kg:Function ; kg:qualifiedName "m.C.far" ; kg:inModule :m ; kg:startLine 700 .
:inherited a kg:Function ; kg:qualifiedName "b.Base.inherited" ; kg:inModule :b ; kg:startLine 5 .
:helper a kg:Function ; kg:qualifiedName "m.helper" ; kg:inModule :m ; kg:startLine 80 ;
   kg:calls :util .
:other a kg:Function ; kg:qualifiedName "m.other" ; kg:inModule :m ; kg:startLine 400 ;
   kg:calls :util ; kg:callsByName :fixture .
:util a kg:Function ; kg:qualifiedName "u.util" ; kg:inModule :u ; kg:startLine 3 .
:fixture a kg:Function ; kg:qualifiedName "tests.test_m.fixture" ; kg:startLine 9 .
:elsewhere a kg:Function ; kg:name "stub" ; kg:qualifiedName "u.stub" ;
   kg:signature "def stub(self)" ; kg:inModule :u .
"#;

    #[tokio::test]
    async fn a_declared_function_has_its_site_and_its_neighbours_ranked() {
        let (_dir, store) = kgfuse_lexicon::testing::with_turtle(CODE).await;
        let stub = Question::new(
            "def stub(self,\n         x: int) -> int:\n    \"\"\"Make a thing.\"\"\"",
        );
        let sites = sites_of(&store, &stub).expect("sites");
        assert_eq!(
            sites,
            [Site {
                function: "urn:code:stub".into(),
                module: "urn:code:m".into(),
                class: Some("urn:code:C".into()),
                line: Some(100),
            }]
        );
        let ranked = site_channel(&store, &sites, 10).expect("channel");
        // The class's methods (its own nearby, the inherited one) first, then
        // what the module uses (`util`, called twice), then by distance; the stub
        // itself, the class node and the test helper never.
        assert_eq!(
            ranked,
            [
                "urn:code:near",
                "urn:code:inherited",
                "urn:code:util",
                "urn:code:far",
                "urn:code:helper",
                "urn:code:other"
            ]
        );
        // No site: no `def`, another signature, or the stub held out.
        let plain = Question::new("how do I make a thing?");
        assert!(sites_of(&store, &plain).expect("sites").is_empty());
        let other = Question::new("def stub(self, y):\n    ...");
        assert!(sites_of(&store, &other).expect("sites").is_empty());
        let held = stub.holding_out(&["urn:code:stub".to_owned()].into());
        assert!(sites_of(&store, &held).expect("sites").is_empty());
    }
}
