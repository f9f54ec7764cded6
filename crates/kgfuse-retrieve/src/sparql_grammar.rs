//! A GBNF grammar (llama.cpp's constrained decoding) for the SELECT and ASK queries
//! a small model may write: their IRIs can only be the store's known properties
//! and classes and the entities linked in the question, so "unknown predicate"
//! cannot happen. Terms appear as prefixed names where the store has a prefix for
//! them (the query is parsed with the store's prefixes), else as `<IRI>`.
//!
//! The language is a small, regular SPARQL: one or more triple patterns (a
//! predicate or a two-step path), an optional `FILTER(CONTAINS(...))` on a
//! variable's text, `COUNT`, `DISTINCT`, `ORDER BY` and `LIMIT`. When the
//! question names entities, one of the patterns must use one of them. Everything it
//! accepts parses as SPARQL 1.1 (tested); what it cannot express (OPTIONAL, UNION,
//! nested groups) the model writes without a grammar, on servers that have none.

use kgfuse_graph::compact;

/// What a grammar may name.
#[derive(Debug, Clone, Default)]
pub struct GrammarTerms {
    /// Property IRIs.
    pub properties: Vec<String>,
    /// Class IRIs.
    pub classes: Vec<String>,
    /// Entity IRIs linked in the question.
    pub entities: Vec<String>,
    /// The store's prefixes (prefix, namespace).
    pub prefixes: Vec<(String, String)>,
}

/// The rules that never change; `body`, `prop`, `class` and `entity` are appended.
const FIXED: &str = r#"root ::= select | ask
select ::= "SELECT " distinct? projection " WHERE { " body " }" order? limit?
ask ::= "ASK { " body " }"
distinct ::= "DISTINCT "
projection ::= var (" " var)* | "(COUNT(" distinct? var ") AS ?count)"
triple ::= subject " " verb " " object
subject ::= var | entity
verb ::= "a" | prop | prop "/" prop
object ::= var | entity | class | string | number
filter ::= "FILTER(CONTAINS(LCASE(STR(" var ")), " lower "))"
order ::= " ORDER BY " ("DESC(" var ")" | var)
limit ::= " LIMIT " [1-9] [0-9]?
var ::= "?" [a-z] [a-zA-Z0-9_]*
string ::= "\"" [^"\\\n]+ "\""
lower ::= "\"" [^"\\\nA-Z]+ "\""
number ::= [0-9]+
"#;

/// Without linked entities: any triples.
const BODY: &str = r#"body ::= triple (" . " triple)* (" . " filter)?
"#;

/// With linked entities, a query must use one: a small model otherwise drops the
/// question's subject and lists a whole class.
const BODY_WITH_ENTITY: &str = r#"body ::= (triple " . ")* anchored (" . " triple)* (" . " filter)?
anchored ::= entity " " verb " " object | subject " " verb " " entity
"#;

/// The grammar for `terms`, or `None` when there is no property to name.
pub fn select_ask_grammar(terms: &GrammarTerms) -> Option<String> {
    let alternatives = |iris: &[String]| -> Option<String> {
        let mut written: Vec<String> = Vec::new();
        for iri in iris {
            let text = compact(iri, &terms.prefixes);
            let Some(literal) = gbnf_string(&text) else {
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
    let entities = alternatives(&terms.entities);
    grammar.push_str(if entities.is_some() {
        BODY_WITH_ENTITY
    } else {
        BODY
    });
    grammar.push_str(&format!("prop ::= {properties}\n"));
    // A rule with no alternative is not GBNF: without classes or entities the
    // rule is a variable, which its positions accept anyway.
    let classes = alternatives(&terms.classes).unwrap_or_else(|| "var".to_owned());
    grammar.push_str(&format!("class ::= {classes}\n"));
    let entities = entities.unwrap_or_else(|| "var".to_owned());
    grammar.push_str(&format!("entity ::= {entities}\n"));
    Some(grammar)
}

/// A GBNF string literal for `text`; `None` for text a query term never holds.
fn gbnf_string(text: &str) -> Option<String> {
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

    fn terms() -> GrammarTerms {
        GrammarTerms {
            properties: vec![
                "http://example.org/ub#worksFor".into(),
                "http://www.w3.org/2000/01/rdf-schema#label".into(),
                "http://other.example/terms#odd".into(),
            ],
            classes: vec!["http://example.org/ub#Professor".into()],
            entities: vec!["http://example.org/data/Department0".into()],
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
        assert!(grammar.contains(r#"entity ::= "<http://example.org/data/Department0>""#));
        assert!(
            grammar.contains("anchored ::= entity"),
            "an entity must be used: {grammar}"
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
    fn sentences_of_the_grammar_parse_as_sparql() {
        let options = kgfuse_graph::QueryOptions {
            prefixes: terms().prefixes,
            ..kgfuse_graph::QueryOptions::default()
        };
        for query in [
            "SELECT ?x WHERE { ?x a ub:Professor . ?x ub:worksFor <http://example.org/data/Department0> }",
            "SELECT DISTINCT ?x ?n WHERE { ?x ub:worksFor/rdfs:label ?n . FILTER(CONTAINS(LCASE(STR(?n)), \"dept\")) } ORDER BY DESC(?n) LIMIT 10",
            "SELECT (COUNT(DISTINCT ?x) AS ?count) WHERE { ?x a ub:Professor }",
            "ASK { <http://example.org/data/Department0> rdfs:label \"Department 0\" }",
            "SELECT ?x WHERE { ?x ub:worksFor 42 }",
        ] {
            kgfuse_graph::parse_query(query, &options).unwrap_or_else(|e| panic!("{query}: {e}"));
        }
    }
}
