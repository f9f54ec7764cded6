//! The menu a model plans from: the store's classes and properties under short
//! names, with how the data uses each property, and the GBNF grammar of a plan
//! over those names and the question's entities.
//!
//! The menu is read once per store (after each write) from the first members of
//! each class, so its cost does not grow with the store, the same data gives the
//! same menu, and its text is the same for every question: a server that keeps
//! the prompt's prefix (llama.cpp) reads it once.

use crate::RetrieveError;
use crate::plan::Step;
use kgfuse_core::iri::local_name;
use kgfuse_core::vocab::kg::FILE_RECORD;
use kgfuse_core::vocab::{OWL, RDF, RDFS, XSD, w3c};
use kgfuse_graph::model::{NamedNode, Term};
use kgfuse_lexicon::sparql::{Solutions, cell_text, run_all};
use kgfuse_store::Store;
use kgfuse_text2sparql::grammar::gbnf_string;
use std::collections::BTreeMap;

/// Members of each class read to learn how properties are used.
const MEMBERS: usize = 300;
/// Most classes on the menu (the most populated).
const MAX_CLASSES: usize = 80;
/// Most properties on the menu (the most used).
const MAX_PROPERTIES: usize = 120;
/// Subject or object classes shown per property.
const CLASSES_PER_SIDE: usize = 2;
/// Longest example literal shown, in characters.
const EXAMPLE_CHARS: usize = 30;

/// The store's classes and properties under the names a plan uses.
#[derive(Debug, Default)]
pub struct Menu {
    /// Class name to IRI.
    pub classes: BTreeMap<String, String>,
    /// Property name to IRI.
    pub properties: BTreeMap<String, String>,
    /// The menu as the prompt shows it.
    pub text: String,
    /// Each class IRI's name, for the entities' lines.
    names_of_classes: BTreeMap<String, String>,
}

/// How one property is used in the sample.
#[derive(Debug, Default)]
struct Use {
    uses: u64,
    subjects: BTreeMap<String, u64>,
    objects: BTreeMap<String, u64>,
    /// The kind of its literal objects (number, date, text, yes/no) and one example.
    literal: Option<(&'static str, String)>,
}

impl kgfuse_store::WholeStore for Menu {}

impl Menu {
    /// The store's menu, read on first use after each write.
    pub fn of(store: &Store) -> Result<std::sync::Arc<Self>, RetrieveError> {
        store.derived(|| Self::read(store))
    }

    /// The classes by population, then a profile of each of the most
    /// populated: the properties of [`MEMBERS`] of its members (the first by
    /// IRI order in the type index, so the same data gives the same menu), the
    /// classes of their objects, and the least literal as an example.
    fn read(store: &Store) -> Result<Self, RetrieveError> {
        let rdf_type = w3c::RDF_TYPE;
        let classes = format!(
            "SELECT ?c (COUNT(?s) AS ?n) WHERE {{ ?s <{rdf_type}> ?c }} GROUP BY ?c ORDER BY DESC(?n) ?c"
        );
        let Some(classes) = run_all(store, vec![classes])?.pop() else {
            return Ok(Self::default());
        };
        let classes: Vec<(String, u64)> = class_counts(&classes)
            .into_iter()
            .filter(|(iri, _)| !is_schema_term(iri))
            .take(MAX_CLASSES)
            .collect();
        let profiles = classes
            .iter()
            .filter_map(|(iri, _)| {
                let class = Term::from(NamedNode::new(iri).ok()?);
                Some(format!(
                    "SELECT ?p ?oc (COUNT(*) AS ?n) (MIN(?o) AS ?example) WHERE {{ \
                       {{ SELECT ?s WHERE {{ ?s <{rdf_type}> {class} }} LIMIT {MEMBERS} }} \
                       ?s ?p ?o FILTER(?p != <{rdf_type}>) OPTIONAL {{ ?o <{rdf_type}> ?oc }} \
                     }} GROUP BY ?p ?oc"
                ))
            })
            .collect();
        let mut uses = BTreeMap::new();
        for ((class, _), profile) in classes.iter().zip(run_all(store, profiles)?) {
            add_uses(&mut uses, class, &profile);
        }
        Ok(Self::from_counts(&classes, &uses))
    }

    /// The menu of the counted classes and the properties' uses.
    fn from_counts(classes: &[(String, u64)], uses: &BTreeMap<String, Use>) -> Self {
        let mut menu = Self::default();
        for (iri, _) in classes.iter().filter(|(iri, _)| !is_schema_term(iri)) {
            if menu.classes.len() == MAX_CLASSES {
                break;
            }
            let name = unique_name(&menu.classes, iri);
            menu.names_of_classes.insert(iri.clone(), name.clone());
            menu.classes.insert(name, iri.clone());
        }
        let mut ranked: Vec<(&String, &Use)> = uses
            .iter()
            .filter(|(iri, _)| !is_schema_term(iri) || kept_w3c_property(iri))
            .collect();
        ranked.sort_by(|a, b| b.1.uses.cmp(&a.1.uses).then(a.0.cmp(b.0)));
        let mut lines = Vec::new();
        for (iri, usage) in ranked.into_iter().take(MAX_PROPERTIES) {
            let name = unique_name(&menu.properties, iri);
            lines.push(format!("- {name}: {}", menu.describe(usage)));
            menu.properties.insert(name, iri.clone());
        }
        let class_names: Vec<&str> = menu.classes.keys().map(String::as_str).collect();
        menu.text = format!(
            "Classes: {}\nProperties:\n{}",
            class_names.join(", "),
            lines.join("\n")
        );
        menu
    }

    /// `Subject, Subject -> Object` or `Subject -> number, e.g. 42`.
    fn describe(&self, usage: &Use) -> String {
        let side = |counts: &BTreeMap<String, u64>| {
            let mut ranked: Vec<(&String, &u64)> = counts
                .iter()
                .filter(|(iri, _)| self.names_of_classes.contains_key(*iri))
                .collect();
            ranked.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let names: Vec<&str> = ranked
                .iter()
                .take(CLASSES_PER_SIDE)
                .map(|(iri, _)| self.names_of_classes[*iri].as_str())
                .collect();
            names.join(", ")
        };
        let subject = Some(side(&usage.subjects))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "thing".into());
        let object = match &usage.literal {
            Some((kind, example)) if *kind == "text" || *kind == "date" => {
                format!("{kind}, e.g. {example:?}")
            }
            Some((kind, example)) => format!("{kind}, e.g. {example}"),
            None => Some(side(&usage.objects))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "thing".into()),
        };
        format!("{subject} -> {object}")
    }

    /// The class names of a node's types, as the menu writes them.
    pub fn class_names(&self, classes: &[String]) -> Vec<String> {
        classes
            .iter()
            .filter_map(|iri| self.names_of_classes.get(iri).cloned())
            .collect()
    }

    /// A walk as a plan writes it (`^acquirer/country`); `None` when a step's
    /// property is not on the menu.
    pub fn path_name(&self, steps: &[Step]) -> Option<String> {
        let written: Option<Vec<String>> = steps
            .iter()
            .map(|step| {
                let name = self
                    .properties
                    .iter()
                    .find(|(_, iri)| **iri == step.property)
                    .map(|(name, _)| name)?;
                Some(if step.inverse {
                    format!("^{name}")
                } else {
                    name.clone()
                })
            })
            .collect();
        written.map(|w| w.join("/"))
    }

    /// The GBNF grammar of a plan over the menu's names and `entities`' names.
    /// Names a JSON string cannot hold unescaped are left out.
    pub fn grammar(&self, entities: &[String]) -> String {
        let mut grammar = PLAN_RULES.to_owned();
        let class = alternatives(self.classes.keys(), json_string);
        grammar.push_str(&format!(
            "class ::= {}\n",
            class.unwrap_or_else(|| "\"null\"".into())
        ));
        // Inside a path's string: bare names.
        let property =
            alternatives(self.properties.keys(), gbnf_string).unwrap_or_else(|| "\"label\"".into());
        grammar.push_str(&format!("prop ::= {property}\n"));
        match alternatives(entities.iter(), json_string) {
            Some(entity) => {
                grammar.push_str(&format!("entity ::= {entity}\n"));
                grammar.push_str(&format!("test ::= \"\\\"is\\\": \" entity | {TESTS}\n"));
            }
            None => grammar.push_str(&format!("test ::= {TESTS}\n")),
        }
        grammar
    }
}

/// `a | b | c` of the names `write` can write; `None` when it can write none.
fn alternatives<'a>(
    names: impl Iterator<Item = &'a String>,
    write: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    let written: Vec<String> = names.filter_map(|name| write(name)).collect();
    (!written.is_empty()).then(|| written.join(" | "))
}

/// The GBNF literal of `name` as a JSON string (`"\"Film\""`); `None` for a
/// name with a quote, a backslash or a control character.
fn json_string(name: &str) -> Option<String> {
    gbnf_string(name).map(|_| format!("\"\\\"{name}\\\"\""))
}

/// The rules of a plan's JSON that do not depend on the store; `class`, `prop`,
/// `test` and `entity` are appended. Keys come in a fixed order.
const PLAN_RULES: &str = r#"root ::= "{\"answer\": " answer ", \"class\": " ("null" | class) where? group? order? limit? offset? show? "}"
answer ::= "\"rows\"" | "\"yes/no\""
where ::= ", \"where\": [" condition (", " condition){0,5} "]"
condition ::= "{" ("\"not\": true, ")? "\"path\": " path ", " test "}"
path ::= "\"" ("." | step ("/" step){0,2}) "\""
step ::= "^"? prop
op ::= "\"=\"" | "\"!=\"" | "\"<\"" | "\"<=\"" | "\">\"" | "\">=\""
value ::= number | text
number ::= "-"? [0-9]{1,12} ("." [0-9]{1,6})?
text ::= "\"" [^"\\\n]{1,60} "\""
group ::= ", \"group\": {\"function\": " function ", \"of\": " ("\"answer\"" | path) ", \"per\": " ("\"all\"" | "\"answer\"" | path) having? "}"
function ::= "\"count\"" | "\"sum\"" | "\"avg\"" | "\"min\"" | "\"max\""
having ::= ", \"having\": {\"op\": " op ", \"value\": " number "}"
order ::= ", \"order\": {\"by\": " ("\"measure\"" | path) ", \"desc\": " ("true" | "false") "}"
limit ::= ", \"limit\": " [1-9] [0-9]{0,3}
offset ::= ", \"offset\": " [0-9]{1,4}
show ::= ", \"show\": [" path (", " path){0,5} "]"
"#;

/// The tests a condition makes besides naming an entity.
const TESTS: &str = r#""\"op\": " op ", " ("\"value\": " value | "\"than\": " path) | "\"contains\": " text | "\"exists\": true""#;

/// The counted classes, most populated first.
fn class_counts(solutions: &Solutions) -> Vec<(String, u64)> {
    let (Some(c), Some(n)) = (solutions.column("c"), solutions.column("n")) else {
        return Vec::new();
    };
    solutions
        .rows
        .iter()
        .filter_map(|row| {
            let Some(Some(Term::NamedNode(class))) = row.get(c) else {
                return None;
            };
            Some((class.as_str().to_owned(), count(row.get(n))))
        })
        .collect()
}

/// Adds one class's profile to the properties' uses: the class as their
/// subject, their objects' classes, the least example literal.
fn add_uses(uses: &mut BTreeMap<String, Use>, class: &str, solutions: &Solutions) {
    let at = |name: &str| solutions.column(name);
    let (Some(p), Some(oc), Some(n), Some(example)) = (at("p"), at("oc"), at("n"), at("example"))
    else {
        return;
    };
    for row in &solutions.rows {
        let Some(Some(Term::NamedNode(property))) = row.get(p) else {
            continue;
        };
        let usage = uses.entry(property.as_str().to_owned()).or_default();
        let times = count(row.get(n));
        usage.uses += times;
        *usage.subjects.entry(class.to_owned()).or_default() += times;
        if let Some(Some(Term::NamedNode(object_class))) = row.get(oc) {
            *usage
                .objects
                .entry(object_class.as_str().to_owned())
                .or_default() += times;
        }
        if let Some(Some(Term::Literal(literal))) = row.get(example) {
            let shown: String = literal.value().chars().take(EXAMPLE_CHARS).collect();
            // The least of the rows' examples: the same whatever order they come in.
            if usage.literal.as_ref().is_none_or(|(_, kept)| shown < *kept) {
                usage.literal = Some((literal_kind(literal.datatype().as_str()), shown));
            }
        }
    }
}

/// What a literal of this datatype is, in the menu's words.
fn literal_kind(datatype: &str) -> &'static str {
    let Some(local) = datatype.strip_prefix(XSD) else {
        return "text";
    };
    match local {
        "boolean" => "yes/no",
        "date" | "dateTime" | "gYear" | "gYearMonth" | "time" => "date",
        "string" | "normalizedString" | "token" | "language" | "anyURI" => "text",
        _ => "number",
    }
}

/// A count cell's value (0 when unreadable).
fn count(cell: Option<&Option<Term>>) -> u64 {
    cell_text(cell).and_then(|t| t.parse().ok()).unwrap_or(0)
}

/// The IRI's local name, or with a number when another IRI has it already.
fn unique_name(taken: &BTreeMap<String, String>, iri: &str) -> String {
    let local = local_name(iri);
    let local = if local.is_empty() || local.contains(['/', '^', '.']) {
        "term"
    } else {
        local
    };
    let mut name = local.to_owned();
    let mut n = 2;
    while taken.contains_key(&name) {
        name = format!("{local}{n}");
        n += 1;
    }
    name
}

/// The vocabularies' own terms (RDF, RDFS, OWL, XSD) and kgfuse's bookkeeping.
fn is_schema_term(iri: &str) -> bool {
    [RDF, RDFS, OWL, XSD].iter().any(|ns| iri.starts_with(ns)) || FILE_RECORD.contains(&iri)
}

/// The W3C properties that say what things are called or are.
fn kept_w3c_property(iri: &str) -> bool {
    iri == w3c::RDFS_LABEL || iri == w3c::RDFS_COMMENT
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(uses: u64, subject: &str, object: Option<&str>, literal: Option<&str>) -> Use {
        Use {
            uses,
            subjects: BTreeMap::from([(subject.to_owned(), uses)]),
            objects: object
                .map(|o| BTreeMap::from([(o.to_owned(), uses)]))
                .unwrap_or_default(),
            literal: literal.map(|l| ("number", l.to_owned())),
        }
    }

    #[test]
    fn the_menu_names_classes_and_properties_by_their_local_names_most_used_first() {
        let classes = vec![
            ("http://ex.org/Film".to_owned(), 10),
            ("http://www.w3.org/2002/07/owl#Class".to_owned(), 5),
            ("http://ex.org/Person".to_owned(), 3),
        ];
        let uses = BTreeMap::from([
            (
                "http://ex.org/director".to_owned(),
                usage(4, "http://ex.org/Film", Some("http://ex.org/Person"), None),
            ),
            (
                "http://ex.org/runtime".to_owned(),
                usage(9, "http://ex.org/Film", None, Some("95")),
            ),
            (
                "http://other.org/runtime".to_owned(),
                usage(1, "http://ex.org/Film", None, Some("3")),
            ),
            (
                "http://www.w3.org/2000/01/rdf-schema#subClassOf".to_owned(),
                usage(50, "http://ex.org/Film", None, None),
            ),
        ]);
        let menu = Menu::from_counts(&classes, &uses);
        assert_eq!(
            menu.text,
            "Classes: Film, Person\nProperties:\n- runtime: Film -> number, e.g. 95\n\
             - director: Film -> Person\n- runtime2: Film -> number, e.g. 3"
        );
        assert_eq!(menu.properties["runtime2"], "http://other.org/runtime");
        assert_eq!(menu.classes["Film"], "http://ex.org/Film");
        let grammar = menu.grammar(&["Ava \"Lind\"".to_owned(), "Nordlys".to_owned()]);
        assert!(
            grammar.contains("class ::= \"\\\"Film\\\"\" | \"\\\"Person\\\"\"\n"),
            "{grammar}"
        );
        assert!(
            grammar.contains("prop ::= \"director\" | \"runtime\" | \"runtime2\"\n"),
            "{grammar}"
        );
        // A name with a quote cannot be written as one JSON string literal here.
        assert!(
            grammar.contains("entity ::= \"\\\"Nordlys\\\"\"\n"),
            "{grammar}"
        );
    }

    #[test]
    fn without_entities_a_condition_cannot_name_one() {
        let menu = Menu::from_counts(&[], &BTreeMap::new());
        let grammar = menu.grammar(&[]);
        assert!(!grammar.contains("entity"), "{grammar}");
        assert!(grammar.contains("class ::= \"null\"\n"), "{grammar}");
    }
}
