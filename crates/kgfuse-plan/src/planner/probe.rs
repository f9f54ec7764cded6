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
/// Most triples a profile reads in each direction from its members.
const EDGE_SAMPLE: usize = 2_000;
/// Most values of one property whose classes a profile reads.
const CLASS_SAMPLE: usize = 500;
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
    /// superclasses too), estimated from at most [`CLASS_SAMPLE`] of them.
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

/// The profile of the nodes `start` names (a sample of a class's members), in
/// two rounds of reads: how often each property is used in each direction
/// (over at most [`EDGE_SAMPLE`] triples each), then the classes at the far
/// end of at most [`CLASS_SAMPLE`] uses of each property. A member with
/// thousands of neighbours (a module, a tag every function consumes) costs a
/// bounded read, not a type lookup per edge.
pub fn profile(store: &Store, start: &Start) -> Result<Profile, RetrieveError> {
    let members = members(store, start)?;
    if members.is_empty() {
        return Ok(Profile::default());
    }
    // The members as a VALUES block, so each read walks from them: joined with
    // a sub-select instead, Oxigraph may scan every triple of the store.
    let members = values("x", &members);
    let mut uses = property_uses(store, &members)?;
    far_classes(store, &members, &mut uses)?;
    uses.sort_by_key(|u| std::cmp::Reverse(u.count));
    Ok(Profile { uses })
}

/// The nodes `start` names: the nodes themselves, or up to [`SAMPLE`] named
/// members of its classes.
fn members(store: &Store, start: &Start) -> Result<Vec<Term>, RetrieveError> {
    let rdf_type = w3c::RDF_TYPE;
    match start {
        Start::Classes(classes) if !classes.is_empty() => {
            let text = format!(
                "SELECT DISTINCT ?x WHERE {{ {} ?x <{rdf_type}> ?c }} LIMIT {SAMPLE}",
                values("c", &iris(classes))
            );
            Ok(run_all(store, vec![text])?
                .pop()
                .map(|s| {
                    // Named members only: a blank node cannot be written in VALUES.
                    s.rows
                        .into_iter()
                        .filter_map(|row| row.into_iter().next().flatten())
                        .filter(|term| matches!(term, Term::NamedNode(_)))
                        .collect()
                })
                .unwrap_or_default())
        }
        Start::Nodes(nodes) => Ok(iris(nodes)),
        Start::Classes(_) => Ok(Vec::new()),
    }
}

/// Each property the members use, in each direction, with how many of its
/// values are numbers and literals (classes left empty), over at most
/// [`EDGE_SAMPLE`] triples per direction.
fn property_uses(store: &Store, members: &str) -> Result<Vec<PropertyUse>, RetrieveError> {
    let rdf_type = w3c::RDF_TYPE;
    let read = |edge: &str| {
        format!(
            "SELECT ?p (COUNT(*) AS ?n) (SUM(IF(isNumeric(?o), 1, 0)) AS ?numeric) \
               (SUM(IF(isLiteral(?o), 1, 0)) AS ?literal) WHERE {{ \
               {{ SELECT ?p ?o WHERE {{ {members} {edge} FILTER(?p != <{rdf_type}>) }} \
                  LIMIT {EDGE_SAMPLE} }} \
             }} GROUP BY ?p"
        )
    };
    let directions = [false, true];
    let texts = vec![read("?x ?p ?o"), read("?o ?p ?x")];
    let mut uses = Vec::new();
    for (inverse, solutions) in directions.into_iter().zip(run_all(store, texts)?) {
        let at = |name: &str| solutions.column(name);
        let (Some(p), Some(n), Some(numeric), Some(literal)) =
            (at("p"), at("n"), at("numeric"), at("literal"))
        else {
            continue;
        };
        uses.extend(solutions.rows.iter().filter_map(|row| {
            Some(PropertyUse {
                step: Step {
                    property: cell_text(row.get(p))?,
                    inverse,
                },
                count: count_cell(row, n),
                numeric: count_cell(row, numeric),
                literal: count_cell(row, literal),
                classes: BTreeMap::new(),
            })
        }));
    }
    Ok(uses)
}

/// Fills each use's classes from at most [`CLASS_SAMPLE`] of its values (the
/// counts scaled to all of them), one read per use, read together.
fn far_classes(
    store: &Store,
    members: &str,
    uses: &mut [PropertyUse],
) -> Result<(), RetrieveError> {
    let rdf_type = w3c::RDF_TYPE;
    // The uses that reach nodes, each with its property as a parsed IRI.
    let reaching_nodes: Vec<(usize, NamedNode)> = uses
        .iter()
        .enumerate()
        .filter(|(_, u)| u.literal < u.count)
        .filter_map(|(i, u)| Some((i, NamedNode::new(&u.step.property).ok()?)))
        .collect();
    let texts = reaching_nodes
        .iter()
        .map(|(i, property)| {
            let edge = if uses[*i].step.inverse {
                format!("?o {property} ?x")
            } else {
                format!("?x {property} ?o")
            };
            format!(
                "SELECT ?oc (COUNT(*) AS ?n) WHERE {{ \
                   {{ SELECT ?o WHERE {{ {members} {edge} FILTER(!isLiteral(?o)) }} \
                      LIMIT {CLASS_SAMPLE} }} \
                   ?o <{rdf_type}> ?oc }} GROUP BY ?oc"
            )
        })
        .collect();
    for ((i, _), solutions) in reaching_nodes.iter().zip(run_all(store, texts)?) {
        let use_ = &mut uses[*i];
        let (Some(oc), Some(n)) = (solutions.column("oc"), solutions.column("n")) else {
            continue;
        };
        let nodes = use_.count.saturating_sub(use_.literal);
        let sampled = nodes.clamp(1, CLASS_SAMPLE);
        for row in &solutions.rows {
            if let Some(class) = cell_text(row.get(oc)) {
                let scaled = count_cell(row, n) * nodes / sampled;
                use_.classes.insert(class, scaled);
            }
        }
    }
    Ok(())
}

/// A count a query returned in column `at` (0 when it is not a number).
fn count_cell(row: &[Option<Term>], at: usize) -> usize {
    cell_text(row.get(at))
        .and_then(|t| t.parse::<f64>().ok())
        .map_or(0, |f| f as usize)
}

/// A walk from a class's members to an entity, with how many members take it.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityPath {
    /// The steps from the member.
    pub steps: Vec<Step>,
    /// Rows that took it (of at most [`PATH_ROWS`]).
    pub count: usize,
}

/// Whether `start` has a node to walk from: a class without members (a word
/// linked to a vocabulary class nothing is typed with) reaches nothing, and
/// one cheap read says so before the walks read up to [`PATH_ROWS`] rows from
/// each target (a value held by 5,000 nodes, say).
fn has_members(store: &Store, start: &Start) -> Result<bool, RetrieveError> {
    let Start::Classes(classes) = start else {
        return Ok(true);
    };
    let text = format!(
        "SELECT ?x WHERE {{ {} ?x <{rdf_type}> ?c }} LIMIT 1",
        values("c", &iris(classes)),
        rdf_type = w3c::RDF_TYPE,
    );
    Ok(run_all(store, vec![text])?
        .pop()
        .is_some_and(|solutions| !solutions.rows.is_empty()))
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
    if entity_nodes.is_empty() || start_nodes.is_empty() || !has_members(store, start)? {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(name: &str) -> String {
        format!("http://example.org/{name}")
    }

    /// Employees reach their organisation in one step; recipes, a class no
    /// node is typed with, reach nothing.
    #[tokio::test]
    async fn a_class_without_members_reaches_nothing() {
        let (_dir, store) =
            kgfuse_lexicon::testing::with_turtle(kgfuse_lexicon::testing::EMPLOYEES).await;
        let acme = [ex("acme")];
        let employees = Start::Classes(vec![ex("Employee")]);
        let paths = entity_paths(&store, &employees, &acme).expect("paths");
        let first = paths.first().expect("a path from the employees");
        assert_eq!(first.steps[0].property, ex("worksFor"));
        assert_eq!(first.count, 1);
        assert!(has_members(&store, &employees).expect("members"));
        let recipes = Start::Classes(vec![ex("Recipe")]);
        assert!(!has_members(&store, &recipes).expect("members"));
        assert!(
            entity_paths(&store, &recipes, &acme)
                .expect("paths")
                .is_empty()
        );
    }
}
