//! Scans over the dataset that the paired store uses to keep vectors in step.

use crate::edge::End;
use crate::{Graph, GraphError, QueryOptions, QueryOutcome};
use kgfuse_core::vocab::w3c;
use oxigraph::model::{
    GraphNameRef, NamedNode, NamedNodeRef, NamedOrBlankNode, NamedOrBlankNodeRef, Quad, QuadRef,
    Term, TermRef,
};
use std::collections::{BTreeMap, BTreeSet};

/// From this many subjects on, [`Graph::text_literals_of`] tries one pass over
/// each predicate's triples before reading subject by subject.
const SCAN_FROM_SUBJECTS: usize = 1_000;

/// How many triples the passes may step over per index read they replace
/// (one per subject and predicate) before they give up. An index read costs
/// several microseconds (LUBM-10's 203,609 named subjects and 11 text
/// predicates: about 10 s of reads), a step a fraction of one: 10 keeps the
/// worst case, a pass that gives up, near the cost of the reads themselves.
const SCAN_STEPS_PER_READ: usize = 10;

/// A pass over whole predicates on behalf of many subjects, with its budget of
/// [`SCAN_STEPS_PER_READ`] triples per index read it replaces.
struct Pass<'a> {
    wanted: std::collections::HashSet<&'a str>,
    budget: usize,
    steps: usize,
}

impl<'a> Pass<'a> {
    /// A pass for `subjects`, replacing one read per subject and predicate.
    fn new(subjects: &'a [String], predicates: usize) -> Self {
        Self {
            wanted: subjects.iter().map(String::as_str).collect(),
            budget: subjects
                .len()
                .saturating_mul(predicates)
                .saturating_mul(SCAN_STEPS_PER_READ),
            steps: 0,
        }
    }
}

/// The types of IRI subjects.
type Types = BTreeMap<String, BTreeSet<String>>;

/// Records the type a `rdf:type` quad gives its IRI subject.
fn add_type(types: &mut Types, quad: Quad) {
    if let (NamedOrBlankNode::NamedNode(s), Term::NamedNode(t)) = (quad.subject, quad.object) {
        types
            .entry(s.into_string())
            .or_default()
            .insert(t.into_string());
    }
}

/// One literal carried by a text predicate.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TextLiteral {
    /// Subject IRI.
    pub subject: String,
    /// Index of the predicate in the list given to the scan.
    pub predicate: usize,
    /// Lexical value of the literal.
    pub value: String,
    /// Graph holding the quad (`""` for the default graph).
    pub graph: String,
}

/// Size of the dataset.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct GraphStats {
    /// Number of quads.
    pub quads: usize,
    /// Number of named graphs.
    pub graphs: usize,
    /// Distinct IRI subjects by rdf:type, largest first.
    pub classes: Vec<(String, u64)>,
}

fn graph_label(graph: GraphNameRef<'_>) -> String {
    match graph {
        GraphNameRef::NamedNode(n) => n.as_str().to_owned(),
        GraphNameRef::BlankNode(b) => b.to_string(),
        GraphNameRef::DefaultGraph => String::new(),
    }
}

/// A literal of the `predicate`-th text predicate on an IRI, unless it is
/// derived (only asserted text is embedded): the one rule for what a vector
/// row's text is made of, whether read from the store or seen in a load.
pub fn text_literal(quad: QuadRef<'_>, predicate: usize) -> Option<TextLiteral> {
    if crate::inferred::is_inferred(quad.graph_name) {
        return None;
    }
    match (quad.subject, quad.object) {
        (NamedOrBlankNodeRef::NamedNode(s), TermRef::Literal(l)) => Some(TextLiteral {
            subject: s.as_str().to_owned(),
            predicate,
            value: l.value().to_owned(),
            graph: graph_label(quad.graph_name),
        }),
        _ => None,
    }
}

impl Graph {
    /// Every literal of the given predicates whose subject is an IRI.
    /// Blank-node subjects are skipped: vector rows are keyed by IRI.
    pub fn text_literals(&self, predicates: &[NamedNode]) -> Result<Vec<TextLiteral>, GraphError> {
        self.literals(None, predicates)
    }

    /// The literals of the given predicates on each of `subjects` (asserted ones
    /// only; an IRI that does not parse has none), read together: on a SPARQL
    /// server, one query per 500 subjects.
    pub fn text_literals_of(
        &self,
        subjects: &[String],
        predicates: &[NamedNode],
    ) -> Result<Vec<TextLiteral>, GraphError> {
        let nodes: Vec<Term> = subjects
            .iter()
            .filter_map(|s| NamedNode::new(s.as_str()).ok().map(Term::from))
            .collect();
        if nodes.is_empty() || predicates.is_empty() {
            return Ok(Vec::new());
        }
        if !self.is_remote()
            && nodes.len() >= SCAN_FROM_SUBJECTS
            && let Some(found) = self.text_literals_by_scan(subjects, predicates)?
        {
            return Ok(found);
        }
        let quads = self.quads_at(End::Subject, &nodes, predicates, None)?;
        Ok(quads
            .into_iter()
            .filter_map(|quad| {
                let predicate = predicates.iter().position(|p| *p == quad.predicate)?;
                text_literal(quad.as_ref(), predicate)
            })
            .collect())
    }

    fn literals(
        &self,
        subject: Option<NamedNodeRef<'_>>,
        predicates: &[NamedNode],
    ) -> Result<Vec<TextLiteral>, GraphError> {
        let mut out = Vec::new();
        for (index, predicate) in predicates.iter().enumerate() {
            for quad in self.quads(
                subject.map(Into::into),
                Some(predicate.as_ref()),
                None,
                None,
            ) {
                out.extend(text_literal(quad?.as_ref(), index));
            }
        }
        Ok(out)
    }

    /// [`Graph::text_literals_of`] for many subjects, embedded: one pass over
    /// each predicate's triples instead of one index read per subject and
    /// predicate. Gives up (`None`) after [`SCAN_STEPS_PER_READ`] triples per
    /// read it replaces, when the predicates are too common for a pass to pay.
    fn text_literals_by_scan(
        &self,
        subjects: &[String],
        predicates: &[NamedNode],
    ) -> Result<Option<Vec<TextLiteral>>, GraphError> {
        let mut pass = Pass::new(subjects, predicates.len());
        let mut out = Vec::new();
        for (index, predicate) in predicates.iter().enumerate() {
            let complete = self.pass_over(predicate, &mut pass, |quad| {
                out.extend(text_literal(quad.as_ref(), index));
            })?;
            if !complete {
                return Ok(None);
            }
        }
        Ok(Some(out))
    }

    /// The triples of `predicate` whose subject `pass` wants, given to `keep`;
    /// false once the pass has stepped over more triples than its budget.
    fn pass_over(
        &self,
        predicate: &NamedNode,
        pass: &mut Pass<'_>,
        mut keep: impl FnMut(Quad),
    ) -> Result<bool, GraphError> {
        for quad in self.quads(None, Some(predicate.as_ref()), None, None) {
            pass.steps += 1;
            if pass.steps > pass.budget {
                return Ok(false);
            }
            let quad = quad?;
            if matches!(&quad.subject, NamedOrBlankNode::NamedNode(s) if pass.wanted.contains(s.as_str()))
            {
                keep(quad);
            }
        }
        Ok(true)
    }

    /// The IRI subjects of every quad the store holds, if it holds at most
    /// `limit` quads (`None` above that, and on a SPARQL server): how a load into a
    /// store that is empty but for a little tells which of its subjects the
    /// store held before it.
    pub fn all_subjects_if_at_most(
        &self,
        limit: usize,
    ) -> Result<Option<std::collections::HashSet<String>>, GraphError> {
        if self.is_remote() {
            return Ok(None);
        }
        let mut subjects = std::collections::HashSet::new();
        for (seen, quad) in self.quads(None, None, None, None).enumerate() {
            if seen >= limit {
                return Ok(None);
            }
            if let NamedOrBlankNode::NamedNode(s) = quad?.subject {
                subjects.insert(s.into_string());
            }
        }
        Ok(Some(subjects))
    }

    /// IRI subjects that carry one of the predicates inside one named graph.
    pub fn text_subjects_in_graph(
        &self,
        graph: &NamedNode,
        predicates: &[NamedNode],
    ) -> Result<BTreeSet<String>, GraphError> {
        let mut out = BTreeSet::new();
        for predicate in predicates {
            for quad in self.quads(
                None,
                Some(predicate.as_ref()),
                None,
                Some(graph.as_ref().into()),
            ) {
                if let NamedOrBlankNode::NamedNode(s) = quad?.subject {
                    out.insert(s.into_string());
                }
            }
        }
        Ok(out)
    }

    /// Whether some node has one of `types` (asserted or derived). On a SPARQL
    /// server the answer is remembered like the vocabulary check's (until this
    /// process writes, 5 s at most), so a retrieval that asks "does the store
    /// hold code?" pays for it once in a while, not on every request.
    pub fn has_instances(&self, types: &[&str]) -> Result<bool, GraphError> {
        let question = format!("instances of {}", types.join(" "));
        let endpoint = self.endpoint();
        if let Some(known) = endpoint.and_then(|e| e.recall(&question)) {
            return Ok(known);
        }
        let rdf_type = NamedNodeRef::new_unchecked(w3c::RDF_TYPE);
        let mut found = false;
        for class in types {
            let Ok(class) = NamedNodeRef::new(class) else {
                continue;
            };
            if self.holds(None, Some(rdf_type), Some(class.into()), None)? {
                found = true;
                break;
            }
        }
        if let Some(endpoint) = endpoint {
            endpoint.remember([(question, found)]);
        }
        Ok(found)
    }

    /// Whether some triple has `node` as its subject (`outgoing`) or object,
    /// with `property` as its predicate (any predicate when `None`), in the
    /// graphs a query reads with `options` (every graph under the union default
    /// graph, else the default graph). Embedded, one index read and no query;
    /// on a SPARQL server `None`, unknown: the question is not worth a round
    /// trip of its own.
    pub fn has_edge(
        &self,
        node: &NamedNode,
        property: Option<&NamedNode>,
        outgoing: bool,
        options: &QueryOptions,
    ) -> Result<Option<bool>, GraphError> {
        if self.is_remote() {
            return Ok(None);
        }
        let graph = (!options.union_default_graph).then_some(GraphNameRef::DefaultGraph);
        let property = property.map(NamedNode::as_ref);
        let spent = self.spent.clone();
        spent
            .measure(|| {
                if outgoing {
                    self.holds(Some(node.as_ref().into()), property, None, graph)
                } else {
                    self.holds(None, property, Some(node.as_ref().into()), graph)
                }
            })
            .map(Some)
    }

    /// The rdf:type IRIs of each subject that has one, sorted and deduplicated,
    /// read together (on a SPARQL server, one query per 500 subjects).
    pub fn types_of_all(
        &self,
        subjects: &[String],
    ) -> Result<BTreeMap<String, Vec<String>>, GraphError> {
        let types = match self.types_by_scan(subjects)? {
            Some(types) => types,
            None => self.types_by_reads(subjects)?,
        };
        Ok(types
            .into_iter()
            .map(|(s, t)| (s, t.into_iter().collect()))
            .collect())
    }

    /// [`Graph::types_of_all`] for many subjects, embedded: one pass over the
    /// `rdf:type` triples (LUBM-1's 15,972 subjects: 235 ms of reads). `None`
    /// when there are too few subjects, on a SPARQL server, or when the pass
    /// steps over more than [`SCAN_STEPS_PER_READ`] triples per subject.
    fn types_by_scan(&self, subjects: &[String]) -> Result<Option<Types>, GraphError> {
        if self.is_remote() || subjects.len() < SCAN_FROM_SUBJECTS {
            return Ok(None);
        }
        let rdf_type = NamedNode::new_unchecked(w3c::RDF_TYPE);
        let mut types = Types::new();
        let mut pass = Pass::new(subjects, 1);
        let complete = self.pass_over(&rdf_type, &mut pass, |quad| add_type(&mut types, quad))?;
        Ok(complete.then_some(types))
    }

    /// [`Graph::types_of_all`] by an index read per subject (on a SPARQL server,
    /// one query per 500 subjects).
    fn types_by_reads(&self, subjects: &[String]) -> Result<Types, GraphError> {
        let nodes: Vec<Term> = subjects
            .iter()
            .filter_map(|s| NamedNode::new(s.as_str()).ok().map(Term::from))
            .collect();
        let rdf_type = NamedNode::new_unchecked(w3c::RDF_TYPE);
        let mut types = Types::new();
        for quad in self.quads_at(End::Subject, &nodes, &[rdf_type], None)? {
            add_type(&mut types, quad);
        }
        Ok(types)
    }

    /// Named graphs, sorted.
    pub fn named_graphs(&self) -> Result<Vec<String>, GraphError> {
        let mut graphs: Vec<String> = self
            .graph_names()?
            .iter()
            .map(ToString::to_string)
            .collect();
        graphs.sort();
        Ok(graphs)
    }

    /// Quads, graphs and typed nodes per class.
    pub fn stats(&self) -> Result<GraphStats, GraphError> {
        let outcome = self.query(
            "SELECT ?class (COUNT(DISTINCT ?s) AS ?n) WHERE { ?s a ?class FILTER(isIRI(?s)) } \
             GROUP BY ?class ORDER BY DESC(?n) ?class",
            &QueryOptions {
                timeout: None,
                ..QueryOptions::default()
            },
        )?;
        let mut classes = BTreeMap::new();
        if let QueryOutcome::Solutions { rows, .. } = outcome {
            for row in rows {
                if let [Some(Term::NamedNode(class)), Some(Term::Literal(n))] = row.as_slice() {
                    classes.insert(class.as_str().to_owned(), n.value().parse().unwrap_or(0));
                }
            }
        }
        let mut classes: Vec<(String, u64)> = classes.into_iter().collect();
        classes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(GraphStats {
            quads: self.len()?,
            graphs: self.named_graphs()?.len(),
            classes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A graph where `n` subjects carry a label and a comment, and `others`
    /// more subjects only a label.
    fn labelled(n: usize, others: usize) -> Graph {
        let (label, comment) = (w3c::RDFS_LABEL, w3c::RDFS_COMMENT);
        let mut triples = String::new();
        for i in 0..n {
            triples.push_str(&format!(
                "<urn:s{i}> <{label}> \"s {i}\" ; <{comment}> \"about {i}\" .\n"
            ));
        }
        for i in 0..others {
            triples.push_str(&format!("<urn:o{i}> <{label}> \"o {i}\" .\n"));
        }
        in_graph(&triples)
    }

    /// An in-memory graph holding `triples` (Turtle statements) in `<urn:g>`.
    fn in_graph(triples: &str) -> Graph {
        let graph = Graph::in_memory().expect("store");
        graph
            .update(
                &format!("INSERT DATA {{ GRAPH <urn:g> {{ {triples} }} }}"),
                &QueryOptions::default(),
            )
            .expect("insert");
        graph
    }

    #[test]
    fn an_edge_is_found_on_its_side_by_its_property_in_the_graphs_a_query_reads() {
        let graph = in_graph("<urn:a> <urn:p> <urn:b> ; <urn:name> \"a\" .");
        graph
            .update(
                "INSERT DATA { <urn:c> <urn:q> <urn:a> }",
                &QueryOptions::default(),
            )
            .expect("insert into the default graph");
        let node = |s: &str| NamedNode::new_unchecked(s);
        let union = QueryOptions::default();
        let has = |n: &str, p: Option<&str>, outgoing: bool, options: &QueryOptions| {
            graph
                .has_edge(&node(n), p.map(node).as_ref(), outgoing, options)
                .expect("read")
        };
        assert_eq!(has("urn:a", Some("urn:p"), true, &union), Some(true));
        assert_eq!(has("urn:a", Some("urn:p"), false, &union), Some(false));
        assert_eq!(has("urn:b", Some("urn:p"), false, &union), Some(true));
        assert_eq!(has("urn:b", None, true, &union), Some(false));
        // A literal object counts: `?a0 ?p ?x` binds it.
        assert_eq!(has("urn:a", Some("urn:name"), true, &union), Some(true));
        assert_eq!(has("urn:a", None, false, &union), Some(true));
        // Without the union default graph only the default graph is read.
        let default_only = QueryOptions {
            union_default_graph: false,
            ..QueryOptions::default()
        };
        assert_eq!(
            has("urn:a", Some("urn:p"), true, &default_only),
            Some(false)
        );
        assert_eq!(
            has("urn:a", Some("urn:q"), false, &default_only),
            Some(true)
        );
    }

    fn predicates() -> Vec<NamedNode> {
        vec![
            NamedNode::new_unchecked(w3c::RDFS_LABEL),
            NamedNode::new_unchecked(w3c::RDFS_COMMENT),
        ]
    }

    fn sorted(mut literals: Vec<TextLiteral>) -> Vec<TextLiteral> {
        literals.sort();
        literals
    }

    #[test]
    fn many_subjects_are_read_in_one_pass_with_the_same_literals() {
        let graph = labelled(1_500, 300);
        let subjects: Vec<String> = (0..1_500).map(|i| format!("urn:s{i}")).collect();
        let by_scan = graph
            .text_literals_by_scan(&subjects, &predicates())
            .expect("scan")
            .expect("a pass pays here: 3,300 triples for 3,000 reads");
        let nodes: Vec<Term> = subjects
            .iter()
            .map(|s| NamedNode::new_unchecked(s.as_str()).into())
            .collect();
        let by_reads: Vec<TextLiteral> = graph
            .quads_at(End::Subject, &nodes, &predicates(), None)
            .expect("reads")
            .iter()
            .filter_map(|q| {
                let index = predicates().iter().position(|p| *p == q.predicate)?;
                text_literal(q.as_ref(), index)
            })
            .collect();
        assert_eq!(by_reads.len(), 3_000);
        assert_eq!(sorted(by_scan), sorted(by_reads.clone()));
        assert_eq!(
            sorted(
                graph
                    .text_literals_of(&subjects, &predicates())
                    .expect("of")
            ),
            sorted(by_reads)
        );
    }

    #[test]
    fn many_subjects_types_are_read_in_one_pass_with_the_same_types() {
        let rdf_type = w3c::RDF_TYPE;
        let mut triples = String::new();
        for i in 0..1_500 {
            triples.push_str(&format!("<urn:s{i}> <{rdf_type}> <urn:C{}> .\n", i % 3));
            if i % 2 == 0 {
                triples.push_str(&format!("<urn:s{i}> <{rdf_type}> <urn:Even> .\n"));
            }
        }
        for i in 0..300 {
            triples.push_str(&format!("<urn:o{i}> <{rdf_type}> <urn:C0> .\n"));
        }
        let graph = in_graph(&triples);
        let subjects: Vec<String> = (0..1_500).map(|i| format!("urn:s{i}")).collect();
        let by_scan = graph
            .types_by_scan(&subjects)
            .expect("scan")
            .expect("a pass pays here: 2,550 triples for 1,500 reads");
        let by_reads = graph.types_by_reads(&subjects).expect("reads");
        assert_eq!(by_reads.len(), 1_500);
        assert_eq!(by_reads["urn:s4"].len(), 2);
        assert_eq!(by_scan, by_reads);
        assert!(
            graph
                .types_by_scan(&subjects[..999])
                .expect("scan")
                .is_none()
        );
    }

    #[test]
    fn a_pass_over_common_predicates_gives_up_and_reads_instead() {
        // 1,000 wanted subjects of 21,000 labelled ones: 2,000 reads against a
        // pass of 22,000 triples, over the budget of 20,000 steps.
        let graph = labelled(1_000, 20_000);
        let subjects: Vec<String> = (0..1_000).map(|i| format!("urn:s{i}")).collect();
        assert!(
            graph
                .text_literals_by_scan(&subjects, &predicates())
                .expect("scan")
                .is_none()
        );
        assert_eq!(
            graph
                .text_literals_of(&subjects, &predicates())
                .expect("of")
                .len(),
            2_000
        );
    }
}
