//! What the data says about the classes and entities a question names: which
//! properties a class's members use, in which direction, towards which
//! classes, with numbers or text; and along which properties an entity is
//! reached from a class's members. Each read binds its terms in a `VALUES`
//! block ([`kgfuse_lexicon::sparql`]) and looks at a sample, so its cost does not grow
//! with the store.

use crate::RetrieveError;
use crate::plan::Step;
use kgfuse_core::vocab::w3c;
use kgfuse_graph::model::{NamedNode, Term};
use kgfuse_lexicon::sparql::{Solutions, cell_is_true, cell_text, run_all, values};
use kgfuse_store::Store;
use std::collections::BTreeMap;

/// Members of a class read for its profile.
const SAMPLE: usize = 300;
/// Most rows an entity's paths are read from.
const PATH_ROWS: usize = 5_000;

/// How a class's members use one property (in the sample).
#[derive(Debug, Clone, PartialEq)]
pub struct PropertyUse {
    /// The step from a member.
    pub step: Step,
    /// Triples in the sample.
    pub count: usize,
    /// Of those, how many reach a number.
    pub numeric: usize,
    /// Of those, how many reach a literal.
    pub literal: usize,
    /// Classes of the nodes reached, with counts (with entailment, their
    /// superclasses too).
    pub classes: BTreeMap<String, usize>,
}

impl PropertyUse {
    /// Most of its values are numbers.
    pub fn is_numeric(&self) -> bool {
        self.numeric * 2 > self.count
    }

    /// Most of its values are literals.
    pub fn is_literal(&self) -> bool {
        self.literal * 2 > self.count
    }
}

/// The properties of a class's members, most used first.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    /// Each property and direction.
    pub uses: Vec<PropertyUse>,
}

impl Profile {
    /// The use of `property` in either direction, outgoing first.
    pub fn find(&self, property: &str) -> Option<&PropertyUse> {
        self.uses
            .iter()
            .filter(|u| u.step.property == property)
            .min_by_key(|u| u.step.inverse)
    }

    /// Steps from a member to nodes of one of `classes`, most used first.
    pub fn towards(&self, classes: &[String]) -> Vec<&PropertyUse> {
        let mut uses: Vec<&PropertyUse> = self
            .uses
            .iter()
            .filter(|u| classes.iter().any(|c| u.classes.contains_key(c)))
            .collect();
        uses.sort_by_key(|u| {
            std::cmp::Reverse(
                classes
                    .iter()
                    .map(|c| u.classes.get(c).copied().unwrap_or(0))
                    .max(),
            )
        });
        uses
    }
}

/// The nodes a profile describes and walks to an entity start from.
#[derive(Debug, Clone)]
pub enum Start {
    /// Members of one of these classes.
    Classes(Vec<String>),
    /// One of these nodes.
    Nodes(Vec<String>),
}

/// IRIs as terms, the invalid ones left out.
fn iris(list: &[String]) -> Vec<Term> {
    list.iter()
        .filter_map(|c| NamedNode::new(c).ok().map(Term::from))
        .collect()
}

/// The profile of the nodes `start` names (a sample of a class's members).
pub fn profile(store: &Store, start: &Start) -> Result<Profile, RetrieveError> {
    let rdf_type = w3c::RDF_TYPE;
    let members = match start {
        Start::Classes(classes) if !classes.is_empty() => format!(
            "{{ SELECT DISTINCT ?x WHERE {{ {} ?x <{rdf_type}> ?c }} LIMIT {SAMPLE} }}",
            values("c", &iris(classes))
        ),
        Start::Nodes(nodes) if !nodes.is_empty() => values("x", &iris(nodes)),
        _ => return Ok(Profile::default()),
    };
    let text = format!(
        "SELECT ?p ?inverse ?oc (COUNT(*) AS ?n) (SUM(IF(isNumeric(?o), 1, 0)) AS ?numeric) \
           (SUM(IF(isLiteral(?o), 1, 0)) AS ?literal) WHERE {{ \
           {members} \
           {{ ?x ?p ?o BIND(false AS ?inverse) }} UNION {{ ?o ?p ?x BIND(true AS ?inverse) }} \
           FILTER(?p != <{rdf_type}>) \
           OPTIONAL {{ ?o <{rdf_type}> ?oc }} \
         }} GROUP BY ?p ?inverse ?oc"
    );
    let solutions = run_all(store, vec![text])?.pop();
    Ok(solutions.map(|s| read_profile(&s)).unwrap_or_default())
}

fn read_profile(solutions: &Solutions) -> Profile {
    let at = |name: &str| solutions.column(name);
    let (Some(p), Some(inverse), Some(oc), Some(n), Some(numeric), Some(literal)) = (
        at("p"),
        at("inverse"),
        at("oc"),
        at("n"),
        at("numeric"),
        at("literal"),
    ) else {
        return Profile::default();
    };
    let number = |row: &Vec<Option<Term>>, i: usize| {
        cell_text(row.get(i))
            .and_then(|t| t.parse::<f64>().ok())
            .map_or(0, |f| f as usize)
    };
    let mut by_step: BTreeMap<Step, PropertyUse> = BTreeMap::new();
    for row in &solutions.rows {
        let Some(property) = cell_text(row.get(p)) else {
            continue;
        };
        let step = Step {
            property,
            inverse: cell_is_true(row.get(inverse)),
        };
        let use_ = by_step.entry(step.clone()).or_insert_with(|| PropertyUse {
            step,
            count: 0,
            numeric: 0,
            literal: 0,
            classes: BTreeMap::new(),
        });
        let count = number(row, n);
        match cell_text(row.get(oc)) {
            // Without a class the row counts the property's triples; with one,
            // each class of the same objects repeats them.
            None => {
                use_.count += count;
                use_.numeric += number(row, numeric);
                use_.literal += number(row, literal);
            }
            Some(class) => {
                use_.count = use_.count.max(count);
                *use_.classes.entry(class).or_default() += count;
            }
        }
    }
    let mut uses: Vec<PropertyUse> = by_step.into_values().collect();
    uses.sort_by_key(|u| std::cmp::Reverse(u.count));
    Profile { uses }
}

/// A walk from a class's members to an entity, with how many members take it.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityPath {
    /// The steps from the member.
    pub steps: Vec<Step>,
    /// Rows that took it (of at most [`PATH_ROWS`]).
    pub count: usize,
}

/// The walks of one or two steps from `start` to one of `entities`, one-step
/// walks first, then by use.
pub fn entity_paths(
    store: &Store,
    start: &Start,
    entities: &[String],
) -> Result<Vec<EntityPath>, RetrieveError> {
    paths_to(store, start, &iris(entities))
}

/// The walks of one or two steps from `start` to one of `targets`, nodes or
/// literal values (a value ends the walk: `?x language "English"`), one-step
/// walks first, then by use.
pub fn paths_to(
    store: &Store,
    start: &Start,
    targets: &[Term],
) -> Result<Vec<EntityPath>, RetrieveError> {
    let entity_nodes = targets;
    let rdf_type = w3c::RDF_TYPE;
    let start_nodes = match start {
        Start::Classes(classes) => iris(classes),
        Start::Nodes(nodes) => iris(nodes),
    };
    if entity_nodes.is_empty() || start_nodes.is_empty() {
        return Ok(Vec::new());
    }
    let typed = match start {
        Start::Classes(_) => format!("{} ?x <{rdf_type}> ?c .", values("c", &start_nodes)),
        Start::Nodes(_) => values("x", &start_nodes),
    };
    let entities = values("e", entity_nodes);
    let one = format!(
        "SELECT ?p1 ?i1 (COUNT(*) AS ?n) WHERE {{ {{ SELECT ?x ?p1 ?i1 WHERE {{ {entities} \
           {{ ?x ?p1 ?e BIND(false AS ?i1) }} UNION {{ ?e ?p1 ?x BIND(true AS ?i1) }} \
           FILTER(?p1 != <{rdf_type}>) }} LIMIT {PATH_ROWS} }} {typed} }} GROUP BY ?p1 ?i1"
    );
    let two = format!(
        "SELECT ?p1 ?i1 ?p2 ?i2 (COUNT(*) AS ?n) WHERE {{ {{ SELECT ?x ?p1 ?i1 ?p2 ?i2 WHERE {{ {entities} \
           {{ ?y ?p2 ?e BIND(false AS ?i2) }} UNION {{ ?e ?p2 ?y BIND(true AS ?i2) }} \
           FILTER(?p2 != <{rdf_type}> && isIRI(?y)) \
           {{ ?x ?p1 ?y BIND(false AS ?i1) }} UNION {{ ?y ?p1 ?x BIND(true AS ?i1) }} \
           FILTER(?p1 != <{rdf_type}> && ?x != ?e) }} LIMIT {PATH_ROWS} }} {typed} }} \
         GROUP BY ?p1 ?i1 ?p2 ?i2"
    );
    let mut paths = Vec::new();
    let texts = vec![one, two];
    for solutions in run_all(store, texts)? {
        let mut found = read_paths(&solutions);
        found.sort_by_key(|p| std::cmp::Reverse(p.count));
        paths.extend(found);
    }
    Ok(paths)
}

fn read_paths(solutions: &Solutions) -> Vec<EntityPath> {
    let Some(n) = solutions.column("n") else {
        return Vec::new();
    };
    let step = |row: &Vec<Option<Term>>, p: &str, i: &str| {
        let property = cell_text(row.get(solutions.column(p)?))?;
        let inverse = cell_is_true(row.get(solutions.column(i)?));
        Some(Step { property, inverse })
    };
    solutions
        .rows
        .iter()
        .filter_map(|row| {
            let first = step(row, "p1", "i1")?;
            let mut steps = vec![first];
            if solutions.column("p2").is_some() {
                steps.push(step(row, "p2", "i2")?);
            }
            let count = cell_text(row.get(n))?.parse().ok()?;
            Some(EntityPath { steps, count })
        })
        .collect()
}

/// The classes of the subjects of `property`, most used first (from a sample).
pub fn subject_classes(store: &Store, property: &str) -> Result<Vec<String>, RetrieveError> {
    let Ok(node) = NamedNode::new(property) else {
        return Ok(Vec::new());
    };
    let rdf_type = w3c::RDF_TYPE;
    let text = format!(
        "SELECT ?c (COUNT(*) AS ?n) WHERE {{ {{ SELECT ?x WHERE {{ {} ?x ?p ?o }} LIMIT {SAMPLE} }} \
           ?x <{rdf_type}> ?c }} GROUP BY ?c ORDER BY DESC(?n)",
        values("p", &[Term::from(node)])
    );
    first_column(store, text)
}

/// The classes of `nodes`.
pub fn types_of(store: &Store, nodes: &[String]) -> Result<Vec<String>, RetrieveError> {
    let nodes = iris(nodes);
    if nodes.is_empty() {
        return Ok(Vec::new());
    }
    let rdf_type = w3c::RDF_TYPE;
    let text = format!(
        "SELECT DISTINCT ?c WHERE {{ {} ?x <{rdf_type}> ?c }}",
        values("x", &nodes)
    );
    first_column(store, text)
}

/// The first column's values of one query, in order.
fn first_column(store: &Store, text: String) -> Result<Vec<String>, RetrieveError> {
    let solutions = run_all(store, vec![text])?;
    Ok(solutions
        .first()
        .map(|s| s.rows.iter().filter_map(|r| cell_text(r.first())).collect())
        .unwrap_or_default())
}
