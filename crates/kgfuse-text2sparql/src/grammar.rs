//! A GBNF grammar (llama.cpp's constrained decoding) for the SELECT and ASK queries
//! a small model may write: their IRIs can only be the store's known properties
//! and classes and the entities linked in the question, so "unknown predicate"
//! cannot happen. Terms appear as prefixed names where the store has a prefix for
//! them (the query is parsed with the store's prefixes), else as `<IRI>`.
//!
//! The language is a small, regular SPARQL: a few triple patterns (a
//! predicate or a two-step path), an optional `FILTER(CONTAINS(...))` on a
//! variable's text, `COUNT`, `DISTINCT`, `ORDER BY` and `LIMIT`. Everything it
//! accepts parses as SPARQL 1.1 (tested); what it cannot express (OPTIONAL, UNION,
//! nested groups) the model writes without a grammar, on servers that have none.
//!
//! An entity of the question is written only with the properties the data has
//! for it, in the data's direction: `<e> p ?x` for a `p` it is the subject of,
//! `?x q <e>` for a `q` it is the object of. A small model otherwise writes
//! `?x ub:researchInterest <professor>` as readily as the other way round, and
//! such a pattern can only match nothing. When the question names entities, one
//! pattern must use one of its *anchors* (the entities it asks about, not the
//! ones that only tell them apart): a small model otherwise drops the subject
//! and lists a whole class.

use kgfuse_core::iri::compact;
use kgfuse_core::vocab::w3c::RDF_TYPE;

/// An entity a grammar may name, with the properties the data has for it.
#[derive(Debug, Clone, Default)]
pub struct GrammarEntity {
    /// Its IRI.
    pub iri: String,
    /// Properties of triples it is the subject of (`rdf:type` is written `a`).
    pub as_subject: Vec<String>,
    /// Properties of triples it is the object of.
    pub as_object: Vec<String>,
    /// Whether the question asks about it (one anchor must be used).
    pub anchor: bool,
}

/// What a grammar may name.
#[derive(Debug, Clone, Default)]
pub struct GrammarTerms {
    /// Property IRIs.
    pub properties: Vec<String>,
    /// Class IRIs.
    pub classes: Vec<String>,
    /// Entities named in the question.
    pub entities: Vec<GrammarEntity>,
    /// The store's prefixes (prefix, namespace).
    pub prefixes: Vec<(String, String)>,
}

/// A term as a query writes it: `a` for `rdf:type`, else a prefixed name where
/// the store has a prefix for it, else `<IRI>`.
pub fn written_term(iri: &str, prefixes: &[(String, String)]) -> String {
    if iri == RDF_TYPE {
        "a".to_owned()
    } else {
        compact(iri, prefixes)
    }
}

/// The rules that never change; `body`, `prop`, `class` and the entity rules are
/// appended.
const FIXED: &str = r#"root ::= select | ask
select ::= "SELECT " distinct? projection " WHERE { " body " }" order? limit?
ask ::= "ASK { " body " }"
distinct ::= "DISTINCT "
projection ::= var (" " var)* | "(COUNT(" distinct? var ") AS ?count)"
triple ::= var " " verb " " object
verb ::= "a" | prop | prop "/" prop
object ::= var | class | string | number
filter ::= "FILTER(CONTAINS(LCASE(STR(" var ")), " lower "))"
order ::= " ORDER BY " ("DESC(" var ")" | var)
limit ::= " LIMIT " [1-9] [0-9]?
var ::= "?" [a-z] [a-zA-Z0-9_]*
string ::= "\"" [^"\\\n]+ "\""
lower ::= "\"" [^"\\\nA-Z]+ "\""
number ::= [0-9]+
"#;

/// Without entities: up to five triples. The bound matters: without it a small
/// model can run on, pattern after pattern, until the token limit cuts the query
/// (measured: 255 tokens, 38 s, a query that does not parse).
const BODY: &str = r#"body ::= triple (" . " triple){0,4} (" . " filter)?
"#;

/// With entities: a pattern may use any of them (`around`), one must use an
/// anchor (`anchored`); up to seven patterns.
const BODY_WITH_ENTITY: &str = r#"body ::= (step " . "){0,3} anchored (" . " step){0,3} (" . " filter)?
step ::= triple | around
"#;

/// The grammar for `terms`, or `None` when there is no property to name.
pub fn select_ask_grammar(terms: &GrammarTerms) -> Option<String> {
    let alternatives = |iris: &[String]| -> Option<String> {
        let mut written: Vec<String> = Vec::new();
        for iri in iris {
            let Some(literal) = gbnf_string(&written_term(iri, &terms.prefixes)) else {
                continue;
            };
            if !written.contains(&literal) {
                written.push(literal);
            }
        }
        (!written.is_empty()).then(|| written.join(" | "))
    };
    let properties = alternatives(&terms.properties)?;
    let mut grammar = String::from(FIXED);
    // Each entity: its rule, and the patterns that use it.
    let mut around = Vec::new();
    let mut anchored = Vec::new();
    for (i, entity) in terms.entities.iter().enumerate() {
        let Some(name) = alternatives(std::slice::from_ref(&entity.iri)) else {
            continue;
        };
        let mut patterns = Vec::new();
        grammar.push_str(&format!("e{i} ::= {name}\n"));
        // Its type is a class (or asked for), never another entity.
        let (typed, others): (Vec<String>, Vec<String>) = entity
            .as_subject
            .iter()
            .cloned()
            .partition(|p| p == RDF_TYPE);
        if !typed.is_empty() {
            patterns.push(format!("e{i} \" a \" (class | var)"));
        }
        if let Some(out) = alternatives(&others) {
            grammar.push_str(&format!("e{i}out ::= {out}\n"));
            patterns.push(format!(
                "e{i} \" \" e{i}out (\"/\" prop)? \" \" (object | entity)"
            ));
        }
        if let Some(into) = alternatives(&entity.as_object) {
            grammar.push_str(&format!("e{i}in ::= {into}\n"));
            patterns.push(format!("var \" \" (prop \"/\")? e{i}in \" \" e{i}"));
        }
        if patterns.is_empty() {
            continue;
        }
        let rule = format!("e{i}pattern");
        grammar.push_str(&format!("{rule} ::= {}\n", patterns.join(" | ")));
        around.push((rule.clone(), format!("e{i}")));
        if entity.anchor {
            anchored.push(rule);
        }
    }
    if around.is_empty() {
        grammar.push_str(BODY);
    } else {
        grammar.push_str(BODY_WITH_ENTITY);
        let all: Vec<&str> = around.iter().map(|(rule, _)| rule.as_str()).collect();
        grammar.push_str(&format!("around ::= {}\n", all.join(" | ")));
        // Without an anchor among them, any entity anchors the query.
        let required = if anchored.is_empty() {
            all.join(" | ")
        } else {
            anchored.join(" | ")
        };
        grammar.push_str(&format!("anchored ::= {required}\n"));
        let names: Vec<&str> = around.iter().map(|(_, name)| name.as_str()).collect();
        grammar.push_str(&format!("entity ::= {}\n", names.join(" | ")));
    }
    grammar.push_str(&format!("prop ::= {properties}\n"));
    // A rule with no alternative is not GBNF: without classes the rule is a
    // variable, which its positions accept anyway.
    let classes = alternatives(&terms.classes).unwrap_or_else(|| "var".to_owned());
    grammar.push_str(&format!("class ::= {classes}\n"));
    Some(grammar)
}

/// A GBNF string literal for `text`; `None` for text a query term never holds.
pub fn gbnf_string(text: &str) -> Option<String> {
    if text
        .chars()
        .any(|c| c == '"' || c == '\\' || c.is_control())
    {
        return None;
    }
    Some(format!("\"{text}\""))
}

/// Every query the grammar accepts parses: a few written by hand along its rules.
#[cfg(test)]
mod tests {
    use super::*;

    const DEPARTMENT: &str = "http://example.org/data/Department0";
    const ALICE: &str = "http://example.org/data/alice";

    fn terms() -> GrammarTerms {
        GrammarTerms {
            properties: vec![
                "http://example.org/ub#worksFor".into(),
                "http://www.w3.org/2000/01/rdf-schema#label".into(),
                "http://other.example/terms#odd".into(),
            ],
            classes: vec!["http://example.org/ub#Professor".into()],
            entities: vec![
                GrammarEntity {
                    iri: ALICE.into(),
                    as_subject: vec!["http://example.org/ub#worksFor".into(), RDF_TYPE.into()],
                    as_object: Vec::new(),
                    anchor: false,
                },
                GrammarEntity {
                    iri: DEPARTMENT.into(),
                    as_subject: vec!["http://www.w3.org/2000/01/rdf-schema#label".into()],
                    as_object: vec!["http://example.org/ub#worksFor".into()],
                    anchor: true,
                },
            ],
            prefixes: vec![
                ("ub".into(), "http://example.org/ub#".into()),
                (
                    "rdfs".into(),
                    "http://www.w3.org/2000/01/rdf-schema#".into(),
                ),
            ],
        }
    }

    #[test]
    fn terms_are_compacted_and_quoted_and_a_term_that_cannot_be_written_is_left_out() {
        let grammar = select_ask_grammar(&terms()).expect("a grammar");
        assert!(grammar.contains(
            r#"prop ::= "ub:worksFor" | "rdfs:label" | "<http://other.example/terms#odd>""#
        ));
        assert!(grammar.contains(r#"class ::= "ub:Professor""#));
        assert!(grammar.contains(r#"e1 ::= "<http://example.org/data/Department0>""#));
        // Each entity with its own properties, in the data's direction.
        assert!(grammar.contains("e0out ::= \"ub:worksFor\"\n"), "{grammar}");
        // A type is a class or a variable, never an entity.
        assert!(
            grammar.contains("e0pattern ::= e0 \" a \" (class | var) | "),
            "{grammar}"
        );
        assert!(!grammar.contains("e0in ::="), "{grammar}");
        assert!(grammar.contains(r#"e1in ::= "ub:worksFor""#), "{grammar}");
        // The anchor must be used; the other entity may be.
        assert!(grammar.contains("anchored ::= e1pattern\n"), "{grammar}");
        assert!(
            grammar.contains("around ::= e0pattern | e1pattern\n"),
            "{grammar}"
        );
        assert_eq!(grammar.matches("body ::=").count(), 1, "{grammar}");
        let none = select_ask_grammar(&GrammarTerms::default());
        assert!(none.is_none(), "no property, no grammar");
        let quote = GrammarTerms {
            properties: vec![
                "http://example.org/a\"b".into(),
                "http://example.org/ok".into(),
            ],
            ..GrammarTerms::default()
        };
        let grammar = select_ask_grammar(&quote).expect("a grammar");
        assert!(
            grammar.contains(r#"prop ::= "<http://example.org/ok>""#),
            "{grammar}"
        );
        assert!(grammar.contains("class ::= var\n"), "{grammar}");
        assert!(
            grammar.contains("body ::= triple ("),
            "no entity, any triples: {grammar}"
        );
    }

    #[test]
    fn without_an_anchor_any_entity_anchors_the_query() {
        let mut terms = terms();
        for entity in &mut terms.entities {
            entity.anchor = false;
        }
        let grammar = select_ask_grammar(&terms).expect("a grammar");
        assert!(
            grammar.contains("anchored ::= e0pattern | e1pattern\n"),
            "{grammar}"
        );
    }

    #[test]
    fn sentences_of_the_grammar_parse_as_sparql() {
        let options = kgfuse_graph::QueryOptions {
            prefixes: terms().prefixes,
            ..kgfuse_graph::QueryOptions::default()
        };
        for query in [
            "SELECT ?x WHERE { ?x a ub:Professor . ?x ub:worksFor <http://example.org/data/Department0> }",
            "SELECT ?d WHERE { <http://example.org/data/alice> ub:worksFor/rdfs:label ?d }",
            "SELECT ?n WHERE { ?x rdfs:label/ub:worksFor <http://example.org/data/Department0> }",
            "ASK { <http://example.org/data/alice> ub:worksFor <http://example.org/data/Department0> }",
            "SELECT DISTINCT ?x ?n WHERE { ?x ub:worksFor/rdfs:label ?n . FILTER(CONTAINS(LCASE(STR(?n)), \"dept\")) } ORDER BY DESC(?n) LIMIT 10",
            "SELECT (COUNT(DISTINCT ?x) AS ?count) WHERE { ?x a ub:Professor }",
            "ASK { <http://example.org/data/Department0> rdfs:label \"Department 0\" }",
            "SELECT ?x WHERE { ?x ub:worksFor 42 }",
        ] {
            kgfuse_graph::parse_query(query, &options).unwrap_or_else(|e| panic!("{query}: {e}"));
        }
    }
}
