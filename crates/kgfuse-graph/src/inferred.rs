//! The derived graph ([`kgfuse_core::ontology::INFERRED_GRAPH`]): what RDFS
//! entailment adds to the asserted triples. `kgfuse-entail` decides what is
//! inferred; this module reads what it needs (the schema, the asserted triples
//! some nodes' entailments come from, every asserted triple in batches) and writes the result.
//! Everything here skips the derived graph when it reads "asserted" triples.

use crate::backend::Changes;
use crate::edge::End;
use crate::{Graph, GraphError};
use kgfuse_core::ontology::INFERRED_GRAPH;
use oxigraph::model::{
    GraphName, GraphNameRef, NamedNodeRef, NamedOrBlankNode, NamedOrBlankNodeRef, Quad, QuadRef,
    Term, Triple,
};
use std::collections::{HashMap, HashSet};

/// Past this many incoming quads a node is a hub (a package, a common type):
/// [`Premises::EnoughToEntail`] reads one premise per typing predicate for it.
const HUB_INCOMING: usize = 256;

/// Triples per remote "which of these are asserted" query.
const ASSERTED_BATCH: usize = 500;

/// The predicates of schema triples (a change to one changes every entailment).
const SCHEMA_PREDICATES: [&str; 4] = [
    "http://www.w3.org/2000/01/rdf-schema#subClassOf",
    "http://www.w3.org/2000/01/rdf-schema#subPropertyOf",
    "http://www.w3.org/2000/01/rdf-schema#domain",
    "http://www.w3.org/2000/01/rdf-schema#range",
];

fn inferred_graph() -> NamedNodeRef<'static> {
    NamedNodeRef::new_unchecked(INFERRED_GRAPH)
}

/// Whether a quad's graph is the derived graph.
pub(crate) fn is_inferred<'a>(graph: impl Into<GraphNameRef<'a>>) -> bool {
    matches!(graph.into(), GraphNameRef::NamedNode(n) if n.as_str() == INFERRED_GRAPH)
}

/// Where some triples are held: see [`Graph::where_held`].
#[derive(Debug, Default)]
pub struct Held {
    /// Those asserted in a graph other than the derived one.
    pub asserted: HashSet<Triple>,
    /// Those the derived graph holds.
    pub derived: HashSet<Triple>,
}

/// How many of a node's object-side premises [`Graph::asserted_about`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Premises {
    /// Every one: each is a derivation to show (`kgfuse why`).
    All,
    /// One asserted triple per node and object-typing predicate (embedded
    /// stores): a range types the object whatever the subject, so one premise
    /// entails what a package's thousands of incoming `inPackage` triples do,
    /// and a write's recomputation stops growing with the store.
    EnoughToEntail,
}

/// Appends the triples of the quads that are not in the derived graph.
fn push_asserted(
    quads: impl Iterator<Item = Result<Quad, GraphError>>,
    out: &mut Vec<Triple>,
) -> Result<(), GraphError> {
    for quad in quads {
        let quad = quad?;
        if !is_inferred(&quad.graph_name) {
            out.push(Triple::from(quad));
        }
    }
    Ok(())
}

/// The triples once each, in first-seen order.
fn dedup(triples: Vec<Triple>) -> Vec<Triple> {
    let mut seen = HashSet::new();
    triples
        .into_iter()
        .filter(|t| seen.insert(t.clone()))
        .collect()
}

impl Graph {
    /// Every asserted schema triple (`rdfs:subClassOf`, `rdfs:subPropertyOf`,
    /// `rdfs:domain`, `rdfs:range`), from any graph but the derived one.
    pub fn schema_triples(&self) -> Result<Vec<Triple>, GraphError> {
        let mut out = Vec::new();
        for predicate in SCHEMA_PREDICATES {
            let predicate = NamedNodeRef::new_unchecked(predicate);
            push_asserted(self.quads(None, Some(predicate), None, None), &mut out)?;
        }
        Ok(dedup(out))
    }

    /// The asserted triples a node's entailments come from: those with one of
    /// `nodes` as subject whose predicate is among `subject_deriving` (the
    /// predicates with a domain or a super-property, `rdf:type` with a
    /// class hierarchy), and those with one as object whose predicate is among
    /// `object_typing` (the predicates with a range), all of them or one per
    /// node and predicate (see [`Premises`]). Nothing is read for an empty list.
    pub fn asserted_about(
        &self,
        nodes: &HashSet<NamedOrBlankNode>,
        subject_deriving: &[oxigraph::model::NamedNode],
        object_typing: &[oxigraph::model::NamedNode],
        premises: Premises,
    ) -> Result<Vec<Triple>, GraphError> {
        let typing: HashSet<&str> = object_typing.iter().map(|p| p.as_str()).collect();
        let nodes: Vec<Term> = nodes.iter().cloned().map(Term::from).collect();
        let mut out = Vec::new();
        if !subject_deriving.is_empty() && !self.is_remote() {
            // Embedded, one read per node with its predicates picked here: a
            // read per (node, predicate) pair cost a RocksDB iterator each, most
            // of a code ingest's time. The order stays the predicates' order.
            let position: HashMap<&str, usize> = subject_deriving
                .iter()
                .enumerate()
                .map(|(i, p)| (p.as_str(), i))
                .collect();
            for node in &nodes {
                let mut own: Vec<Quad> = self
                    .quads_at(End::Subject, std::slice::from_ref(node), &[], None)?
                    .into_iter()
                    .filter(|q| position.contains_key(q.predicate.as_str()))
                    .collect();
                own.sort_by_key(|q| position[q.predicate.as_str()]);
                push_asserted(own.into_iter().map(Ok), &mut out)?;
            }
        } else if !subject_deriving.is_empty() {
            let from = self.quads_at(End::Subject, &nodes, subject_deriving, None)?;
            push_asserted(from.into_iter().map(Ok), &mut out)?;
        }
        if typing.is_empty() {
            return Ok(dedup(out));
        }
        if premises == Premises::EnoughToEntail && !self.is_remote() {
            for node in &nodes {
                self.typing_witnesses(node, object_typing, &typing, &mut out)?;
            }
            return Ok(dedup(out));
        }
        let typed_by = self
            .quads_at(End::Object, &nodes, &[], None)?
            .into_iter()
            .filter(|q| typing.contains(q.predicate.as_str()));
        push_asserted(typed_by.map(Ok), &mut out)?;
        Ok(dedup(out))
    }

    /// Appends the asserted triples pointing at `node` by an object-typing
    /// predicate, enough of them to entail what all do: all of them while the
    /// node has at most [`HUB_INCOMING`] incoming quads (one index read), else one
    /// per predicate (a read per predicate, each stopping at its first match).
    fn typing_witnesses(
        &self,
        node: &Term,
        object_typing: &[oxigraph::model::NamedNode],
        typing: &HashSet<&str>,
        out: &mut Vec<Triple>,
    ) -> Result<(), GraphError> {
        let incoming = self.quads(None, None, Some(node.as_ref()), None);
        for (seen, quad) in incoming.enumerate() {
            if seen == HUB_INCOMING {
                for predicate in object_typing {
                    out.extend(self.first_asserted(None, predicate, Some(node))?);
                }
                return Ok(());
            }
            let quad = quad?;
            if typing.contains(quad.predicate.as_str()) && !is_inferred(&quad.graph_name) {
                out.push(Triple::from(quad));
            }
        }
        Ok(())
    }

    /// Replaces the derived triples whose subject is one of `nodes` with
    /// `inferred`, in one transaction.
    pub fn replace_inferred(
        &self,
        nodes: &HashSet<NamedOrBlankNode>,
        inferred: &[Triple],
    ) -> Result<(), GraphError> {
        let graph = GraphNameRef::NamedNode(inferred_graph());
        let subjects: Vec<Term> = nodes.iter().cloned().map(Term::from).collect();
        let old = self.quads_at(
            End::Subject,
            &subjects,
            &[],
            Some(&inferred_graph().into_owned()),
        )?;
        let asserted = self.asserted_among(inferred)?;
        let insert = inferred
            .iter()
            .filter(|triple| !asserted.contains(*triple))
            .map(|triple| {
                QuadRef::new(&triple.subject, &triple.predicate, &triple.object, graph).into_owned()
            })
            .collect();
        self.apply(&Changes {
            remove: old,
            insert,
            ..Changes::default()
        })
    }

    /// Rebuilds the derived graph from scratch: empties it, then streams every
    /// asserted triple through `expand` into Oxigraph's bulk loader, with
    /// `closure` first. Nothing is held but the loader's buffers: memory does not
    /// grow with the store. Returns the number of triples the derived graph holds.
    pub fn rebuild_inferred(
        &self,
        closure: &[Triple],
        expand: &dyn Fn(&Triple) -> Vec<Triple>,
    ) -> Result<u64, GraphError> {
        self.clear_graph(&inferred_graph().into_owned())?;
        // A server would be asked once per derived triple: it is asked for the
        // asserted triples once instead (one paged scan, held in memory).
        let held = if self.is_remote() {
            Some(self.asserted_triples()?)
        } else {
            None
        };
        let is_asserted = |triple: &Triple| match &held {
            Some(asserted) => Ok(asserted.contains(triple)),
            None => self.is_asserted(triple),
        };
        let into_graph = GraphName::NamedNode(inferred_graph().into_owned());
        let mut written = 0u64;
        let asserted = self
            .all_quads()
            .filter(|quad| !matches!(quad, Ok(q) if is_inferred(&q.graph_name)));
        let inferred = closure
            .iter()
            .cloned()
            .map(Ok)
            .chain(asserted.flat_map(|quad| {
                match quad {
                    Ok(quad) => expand(&Triple::from(quad))
                        .into_iter()
                        .map(Ok)
                        .collect::<Vec<_>>(),
                    Err(e) => vec![Err(e)],
                }
            }));
        let quads = inferred.filter_map(|triple| match triple {
            Ok(triple) => match is_asserted(&triple) {
                Ok(true) => None,
                Ok(false) => {
                    written += 1;
                    Some(Ok(Quad::new(
                        triple.subject,
                        triple.predicate,
                        triple.object,
                        into_graph.clone(),
                    )))
                }
                Err(e) => Some(Err(e)),
            },
            Err(e) => Some(Err(e)),
        });
        let mut writer = self.bulk_writer();
        writer.load(quads)?;
        writer.commit()?;
        // Several asserted triples often give the same derived one (every
        // `?f kgfuse:inModule m` types `m`): count what the graph holds.
        tracing::debug!(written, "derived triples streamed, duplicates included");
        Ok(self.inferred_len()? as u64)
    }

    /// Every asserted triple (not in the derived graph), in memory.
    fn asserted_triples(&self) -> Result<HashSet<Triple>, GraphError> {
        let mut out = HashSet::new();
        for quad in self.all_quads() {
            let quad = quad?;
            if !is_inferred(&quad.graph_name) {
                out.insert(Triple::from(quad));
            }
        }
        Ok(out)
    }

    /// Those of `triples` asserted in some graph other than the derived one.
    fn asserted_among(&self, triples: &[Triple]) -> Result<HashSet<Triple>, GraphError> {
        Ok(self.where_held(triples)?.asserted)
    }

    /// Where each of `triples` is held: asserted (in a graph other than the
    /// derived one), derived, both or neither. Embedded, one lookup each; remote,
    /// one query per [`ASSERTED_BATCH`] triples (their terms in `VALUES`, each
    /// written by Oxigraph's model).
    pub fn where_held(&self, triples: &[Triple]) -> Result<Held, GraphError> {
        let mut held = Held::default();
        let mut note = |triple: &Triple, graph: &GraphName| {
            if is_inferred(graph) {
                held.derived.insert(triple.clone());
            } else {
                held.asserted.insert(triple.clone());
            }
        };
        // VALUES takes no blank nodes (a remote store has none of its own: they
        // are skolemized when written); those are looked up one by one, as is
        // everything in an embedded store.
        let has_blank = |t: &&Triple| {
            matches!(t.subject, NamedOrBlankNode::BlankNode(_))
                || matches!(t.object, Term::BlankNode(_))
        };
        let (one_by_one, named): (Vec<&Triple>, Vec<&Triple>) = if self.is_remote() {
            triples.iter().partition(has_blank)
        } else {
            (triples.iter().collect(), Vec::new())
        };
        for triple in one_by_one {
            for graph in self.graphs_holding(triple)? {
                note(triple, &graph);
            }
        }
        for chunk in named.chunks(ASSERTED_BATCH) {
            let rows: String = chunk
                .iter()
                .map(|t| format!("({} {} {}) ", t.subject, t.predicate, t.object))
                .collect();
            let text = format!(
                "SELECT ?s ?p ?o ?g WHERE {{ VALUES (?s ?p ?o) {{ {rows}}} GRAPH ?g {{ ?s ?p ?o }} }}"
            );
            let options = crate::QueryOptions {
                timeout: None,
                ..crate::QueryOptions::default()
            };
            if let crate::QueryOutcome::Solutions { rows, .. } = self.query(&text, &options)? {
                for row in rows {
                    if let [
                        Some(s),
                        Some(Term::NamedNode(p)),
                        Some(o),
                        Some(Term::NamedNode(g)),
                    ] = row.as_slice()
                    {
                        let subject = match s {
                            Term::NamedNode(n) => NamedOrBlankNode::from(n.clone()),
                            Term::BlankNode(b) => NamedOrBlankNode::from(b.clone()),
                            Term::Literal(_) => continue,
                        };
                        let triple = Triple::new(subject, p.clone(), o.clone());
                        note(&triple, &GraphName::NamedNode(g.clone()));
                    }
                }
            }
        }
        Ok(held)
    }

    /// Removes these triples from the derived graph, in one transaction.
    pub fn remove_inferred(&self, triples: &[Triple]) -> Result<(), GraphError> {
        let graph = GraphNameRef::NamedNode(inferred_graph());
        self.apply(&Changes {
            remove: triples
                .iter()
                .map(|t| QuadRef::new(&t.subject, &t.predicate, &t.object, graph).into_owned())
                .collect(),
            ..Changes::default()
        })
    }

    /// Whether a triple is asserted in some graph other than the derived one (the
    /// derived graph never repeats an asserted triple, so the union default graph
    /// shows each triple once).
    fn is_asserted(&self, triple: &Triple) -> Result<bool, GraphError> {
        let found = self.first_asserted(
            Some(triple.subject.as_ref()),
            &triple.predicate,
            Some(&triple.object),
        )?;
        Ok(found.is_some())
    }

    /// The first asserted triple (not in the derived graph) matching a pattern
    /// with a bound predicate, read from the index without reading the rest.
    fn first_asserted(
        &self,
        subject: Option<NamedOrBlankNodeRef<'_>>,
        predicate: &oxigraph::model::NamedNode,
        object: Option<&Term>,
    ) -> Result<Option<Triple>, GraphError> {
        let object = object.map(Term::as_ref);
        for quad in self.quads(subject, Some(predicate.as_ref()), object, None) {
            let quad = quad?;
            if !is_inferred(&quad.graph_name) {
                return Ok(Some(Triple::from(quad)));
            }
        }
        Ok(None)
    }

    /// The triples of one named graph (what a replacement or a drop removes).
    pub fn graph_triples(
        &self,
        graph: &oxigraph::model::NamedNode,
    ) -> Result<Vec<Triple>, GraphError> {
        self.quads(
            None,
            None,
            None,
            Some(GraphNameRef::NamedNode(graph.as_ref())),
        )
        .map(|q| Ok(Triple::from(q?)))
        .collect()
    }

    /// The graphs that hold a triple, the derived graph included (empty when the
    /// triple is neither asserted nor inferred).
    pub fn graphs_holding(&self, triple: &Triple) -> Result<Vec<GraphName>, GraphError> {
        self.quads(
            Some(triple.subject.as_ref()),
            Some(triple.predicate.as_ref()),
            Some(triple.object.as_ref()),
            None,
        )
        .map(|q| Ok(q?.graph_name))
        .collect()
    }

    /// Quads in the derived graph.
    pub fn inferred_len(&self) -> Result<usize, GraphError> {
        let graph = GraphNameRef::NamedNode(inferred_graph());
        Ok(self.quads(None, None, None, Some(graph)).count())
    }
}
