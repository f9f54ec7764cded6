//! Keeping the derived graph in step with the asserted triples (RDFS entailment,
//! [`kgfuse_entail`]). Each write recomputes what its touched nodes entail inside
//! its journalled write; a write that changes the schema (or touches more nodes
//! than [`MAX_TOUCHED`]) rebuilds the whole derived graph, streaming.

use crate::{Store, StoreError};
use kgfuse_core::config::Entailment;
use kgfuse_entail::Schema;
use kgfuse_graph::Premises;
use kgfuse_graph::model::vocab::rdf;
use kgfuse_graph::model::{
    GraphName, NamedNode, NamedNodeRef, NamedOrBlankNode, NamedOrBlankNodeRef, Quad, QuadRef,
    TermRef, Triple,
};
use std::collections::{BTreeMap, HashSet};

/// Past this many touched nodes a write rebuilds the derived graph instead of
/// remembering each node (memory stays bounded on big loads).
pub(crate) const MAX_TOUCHED: usize = 200_000;

/// The touched nodes whose derived triples one transaction replaces: a write
/// that touches many (a case base over 165,000 functions) keeps RocksDB's
/// transaction, and the process, small.
pub(crate) const NODES_PER_TRANSACTION: usize = 10_000;

/// The nodes a write touched and whether it touched the schema (nothing is noted
/// for a store that infers nothing: the load callback stays cheap).
///
/// A changed triple touches its subject when its predicate derives something
/// about it (a domain or a super-property, own or inherited, or `rdf:type` with a
/// class hierarchy), and its object when its predicate types objects (a range,
/// own or inherited): what is inferred about a node comes from those triples
/// alone (tested in `kgfuse-entail`). So `?f a kgfuse:Function` does not make
/// `kgfuse:Function`, with its thousands of instances, a node to recompute, and a
/// label or a value of a property the schema says nothing about touches nothing.
#[derive(Debug, Default)]
pub(crate) struct Touched {
    enabled: bool,
    /// The schema when the write began (a write that changes it rebuilds all).
    schema_before: Schema,
    /// The predicates that type their objects, under `schema_before`, and their
    /// IRIs for the per-quad lookup.
    typing: Vec<NamedNode>,
    object_typing: HashSet<String>,
    /// The predicates that derive something about their subject, likewise.
    deriving: Vec<NamedNode>,
    subject_deriving: HashSet<String>,
    nodes: HashSet<NamedOrBlankNode>,
    schema: bool,
    overflow: bool,
}

impl Touched {
    /// Notes a written or removed triple.
    pub fn quad(&mut self, quad: QuadRef<'_>) {
        self.triple(quad.subject, quad.predicate.as_str(), quad.object);
    }

    /// Notes a triple by its parts.
    pub fn triple(
        &mut self,
        subject: NamedOrBlankNodeRef<'_>,
        predicate: &str,
        object: TermRef<'_>,
    ) {
        if !self.enabled {
            return;
        }
        self.schema |= kgfuse_entail::is_schema_predicate(NamedNodeRef::new_unchecked(predicate));
        if self.overflow {
            return;
        }
        if self.subject_deriving.contains(predicate)
            && self
                .schema_before
                .derives_about_subject(&NamedNode::new_unchecked(predicate), &object.into_owned())
        {
            self.nodes.insert(subject.into_owned());
        }
        if self.object_typing.contains(predicate) {
            match object {
                TermRef::NamedNode(n) => {
                    self.nodes.insert(n.into_owned().into());
                }
                TermRef::BlankNode(b) => {
                    self.nodes.insert(b.into_owned().into());
                }
                TermRef::Literal(_) => {}
            }
        }
        if self.nodes.len() > MAX_TOUCHED {
            self.overflow = true;
            self.nodes.clear();
        }
    }

    /// Notes every triple of a list.
    pub fn triples<'a>(&mut self, triples: impl IntoIterator<Item = &'a Triple>) {
        for t in triples {
            self.triple(t.subject.as_ref(), t.predicate.as_str(), t.object.as_ref());
        }
    }
}

/// What the new triples of an insert-only load entail, found as they stream
/// by, so the derived triples go into the load's own bulk commit: a separate
/// transaction after a bulk load waits for RocksDB to compact what it wrote
/// (seconds on LUBM-10).
///
/// With the schema unchanged, inserting triples only adds entailments, and
/// what a triple entails comes from it and the schema alone (RDFS's instance
/// rules have one premise): the load's derived triples are the union of what
/// each new triple entails. Two corrections keep the derived graph equal to a
/// full rebuild: a derived triple that is asserted (before or by this load) is
/// not written, and one the derived graph already held that this load asserts
/// is removed after the commit ([`NewEntailments::stale`]). A load that changes
/// the schema rebuilds the derived graph after its commit instead.
///
/// Memory stays bounded on a large load: the triples are noted in chunks of
/// [`MAX_TOUCHED`], and a full chunk is closed (its derived triples looked up
/// and made ready to write, [`NewEntailments::due_quads`]) before the next
/// begins. What ties the chunks together is kept as 128-bit fingerprints: the
/// derived triples already made ready (not written twice; asserted by a later
/// chunk, they become stale) and the derivable triples earlier chunks asserted
/// (never written as derived). Past [`MAX_FINGERPRINTS`] of them the load
/// rebuilds the derived graph after its commit, as a schema change does.
#[derive(Debug, Default)]
pub(crate) struct NewEntailments {
    enabled: bool,
    schema: Schema,
    /// Predicates whose triples entail something (a super-property, a domain or
    /// a range, own or inherited), and classes whose `rdf:type` does.
    premise_predicates: HashSet<String>,
    premise_classes: HashSet<String>,
    /// The shapes a derived triple can have ([`Schema::derivable`]).
    derivable_predicates: HashSet<String>,
    derivable_classes: HashSet<String>,
    /// Triples a chunk notes before it is closed.
    chunk: usize,
    /// What the current chunk's triples entail, and its triples that could have
    /// been derived.
    entailed: HashSet<Triple>,
    asserted: HashSet<Triple>,
    /// The last closed chunk's new derived triples (with their fingerprints),
    /// held back until the next chunk closes: a triple the next chunk asserts
    /// (a parameter's type, after the function that names it) is then never
    /// written, rather than written and removed as stale after the commit.
    held_back: Vec<(Triple, u128)>,
    /// Derived quads of closed chunks, not handed to the writer yet.
    ready: Vec<Quad>,
    /// Fingerprints of the derived triples held back or made ready so far.
    made_ready: HashSet<u128>,
    /// Fingerprints of the derivable triples that closed chunks asserted.
    asserted_before: HashSet<u128>,
    /// Derived triples this load asserts, found as chunks close.
    stale: Vec<Triple>,
    schema_changed: bool,
    overflow: bool,
}

/// Fingerprints of derived and asserted triples a load keeps across its chunks
/// at most (16 bytes each, about twice that in their sets: some 500 MB).
pub(crate) const MAX_FINGERPRINTS: usize = 16_000_000;

/// A 128-bit fingerprint of a triple: two SipHash-1-3 digests of it under
/// different prefixes (the standard library's, optimised in every profile).
/// Two distinct triples share one with a probability of about 2^-128.
fn fingerprint(triple: &Triple) -> u128 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let half = |salt: u8| {
        let mut hasher = DefaultHasher::new();
        salt.hash(&mut hasher);
        triple.hash(&mut hasher);
        hasher.finish()
    };
    (u128::from(half(1)) << 64) | u128::from(half(2))
}

impl NewEntailments {
    /// Notes a new triple.
    pub(crate) fn quad(&mut self, quad: QuadRef<'_>) {
        if !self.enabled || self.schema_changed || self.overflow {
            return;
        }
        if kgfuse_entail::is_schema_predicate(quad.predicate) {
            self.schema_changed = true;
            return;
        }
        let predicate = quad.predicate.as_str();
        let class = match quad.object {
            TermRef::NamedNode(n) if quad.predicate == rdf::TYPE => Some(n.as_str()),
            _ => None,
        };
        let premise = self.premise_predicates.contains(predicate)
            || class.is_some_and(|c| self.premise_classes.contains(c));
        let derivable = self.derivable_predicates.contains(predicate)
            || class.is_some_and(|c| self.derivable_classes.contains(c));
        if !premise && !derivable {
            return;
        }
        let triple = quad.into_owned().into();
        if premise {
            self.entailed
                .extend(self.schema.expand(&triple).into_iter().map(|i| i.triple));
        }
        if derivable {
            self.asserted.insert(triple);
        }
    }

    /// The derived quads ready to write before the load goes on: those of the
    /// current chunk once it is full (`graph` is asked where its triples are
    /// held), else of none.
    pub(crate) fn due_quads(
        &mut self,
        graph: &kgfuse_graph::Graph,
    ) -> Result<Vec<Quad>, kgfuse_graph::GraphError> {
        self.close_if_full(graph)?;
        Ok(std::mem::take(&mut self.ready))
    }

    /// Closes the current chunk once it is full (more than [`MAX_TOUCHED`]
    /// triples); its derived quads wait in `ready`.
    pub(crate) fn close_if_full(
        &mut self,
        graph: &kgfuse_graph::Graph,
    ) -> Result<(), kgfuse_graph::GraphError> {
        if self.entailed.len() + self.asserted.len() > self.chunk {
            self.close_chunk(graph)?;
        }
        Ok(())
    }

    /// Hands the held-back derived triples to `ready` (the last chunk is closed).
    fn release_held_back(&mut self) {
        let into = GraphName::NamedNode(NamedNode::new_unchecked(
            kgfuse_core::ontology::INFERRED_GRAPH,
        ));
        for (triple, print) in std::mem::take(&mut self.held_back) {
            if !self.asserted_before.contains(&print) {
                self.ready.push(triple.in_graph(into.clone()));
            }
        }
    }

    /// The derived quads still to write with the load, once every triple was
    /// noted: what it entails, less what is asserted or was made ready before.
    /// Also completes [`NewEntailments::stale`].
    pub(crate) fn closing_quads(
        &mut self,
        graph: &kgfuse_graph::Graph,
    ) -> Result<Vec<Quad>, kgfuse_graph::GraphError> {
        self.close_chunk(graph)?;
        self.release_held_back();
        Ok(std::mem::take(&mut self.ready))
    }

    /// Closes the current chunk: its derived triples that are neither asserted
    /// (by the store, by this chunk or an earlier one) nor made ready already
    /// are held back, and the last chunk's held-back ones that this chunk does
    /// not assert join `ready`; its asserted triples that the derived graph
    /// holds, or that an earlier chunk wrote, become stale.
    fn close_chunk(&mut self, graph: &kgfuse_graph::Graph) -> Result<(), kgfuse_graph::GraphError> {
        if !self.enabled || self.schema_changed || self.overflow {
            return Ok(());
        }
        let entailed: Vec<(Triple, u128)> = self
            .entailed
            .drain()
            .map(|t| {
                let print = fingerprint(&t);
                (t, print)
            })
            .filter(|(_, print)| {
                !self.made_ready.contains(print) && !self.asserted_before.contains(print)
            })
            .collect();
        let looked_up: Vec<Triple> = entailed
            .iter()
            .map(|(t, _)| t)
            .chain(self.asserted.iter())
            .cloned()
            .collect();
        let held = graph.where_held(&looked_up)?;
        let held_back: HashSet<u128> = self.held_back.iter().map(|(_, print)| *print).collect();
        for triple in self.asserted.drain() {
            let print = fingerprint(&triple);
            let written = self.made_ready.contains(&print) && !held_back.contains(&print);
            if held.derived.contains(&triple) || written {
                self.stale.push(triple);
            }
            self.asserted_before.insert(print);
        }
        self.release_held_back();
        for (triple, print) in entailed {
            if !self.asserted_before.contains(&print) && !held.asserted.contains(&triple) {
                self.made_ready.insert(print);
                self.held_back.push((triple, print));
            }
        }
        if self.made_ready.len() + self.asserted_before.len() > MAX_FINGERPRINTS {
            // Too large to tie together: the derived graph is rebuilt after the
            // commit, which makes whatever was written of it here irrelevant.
            self.overflow = true;
            self.made_ready = HashSet::new();
            self.asserted_before = HashSet::new();
            self.held_back = Vec::new();
            self.stale.clear();
        }
        Ok(())
    }

    /// Whether the derived graph must be rebuilt after the commit.
    pub(crate) fn needs_rebuild(&self) -> bool {
        self.enabled && (self.schema_changed || self.overflow)
    }

    /// Derived triples this load asserted: to remove from the derived graph.
    pub(crate) fn stale(&self) -> &[Triple] {
        &self.stale
    }
}

impl Store {
    pub(crate) fn entails(&self) -> bool {
        self.config.reasoning.entailment == Entailment::Rdfs
    }

    /// An empty record of what a write touches, noting only if the store infers.
    pub(crate) fn touched(&self) -> Result<Touched, StoreError> {
        if !self.entails() {
            return Ok(Touched::default());
        }
        let schema = Schema::from_triples(&self.graph.schema_triples()?);
        let typing = schema.object_typing_predicates();
        let deriving = schema.subject_deriving_predicates();
        Ok(Touched {
            enabled: true,
            object_typing: typing.iter().map(|p| p.as_str().to_owned()).collect(),
            typing,
            subject_deriving: deriving.iter().map(|p| p.as_str().to_owned()).collect(),
            deriving,
            schema_before: schema,
            ..Touched::default()
        })
    }

    /// An empty record of an insert-only load's entailments (noting nothing if
    /// the store infers nothing).
    pub(crate) fn new_entailments(&self) -> Result<NewEntailments, StoreError> {
        if !self.entails() {
            return Ok(NewEntailments::default());
        }
        let schema = Schema::from_triples(&self.graph.schema_triples()?);
        let strings = |nodes: Vec<NamedNode>| -> HashSet<String> {
            nodes.into_iter().map(NamedNode::into_string).collect()
        };
        // `rdf:type` is a premise through its class (checked per triple), or
        // for every triple when it has a super-property or a domain of its own.
        let type_itself = rdf::TYPE.into_owned();
        let mut premise_predicates = strings(schema.object_typing_predicates());
        premise_predicates.extend(strings(
            schema
                .subject_deriving_predicates()
                .into_iter()
                .filter(|p| *p != type_itself || schema.derives_by_property(p))
                .collect(),
        ));
        let (derivable_predicates, derivable_classes) = schema.derivable();
        Ok(NewEntailments {
            enabled: true,
            chunk: self.entailment_chunk,
            premise_predicates,
            premise_classes: strings(schema.subclassed_classes()),
            derivable_predicates: strings(derivable_predicates),
            derivable_classes: strings(derivable_classes),
            schema,
            ..NewEntailments::default()
        })
    }

    /// Finishes an insert-only load's entailment after its commit: a rebuild when
    /// it changed the schema or was too large, else the stale derived triples go.
    pub(crate) fn finish_new_entailments(
        &self,
        entailments: &NewEntailments,
    ) -> Result<(), StoreError> {
        if entailments.needs_rebuild() {
            self.entail_all()?;
        } else if !entailments.stale().is_empty() {
            let started = std::time::Instant::now();
            self.graph.remove_inferred(entailments.stale())?;
            tracing::debug!(
                stale = entailments.stale().len(),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "derived triples the write asserts, removed"
            );
        }
        Ok(())
    }

    /// The derived triples of what a write touched, recomputed (or all of them,
    /// when the schema changed or the write was large).
    pub(crate) fn entail_touched(&self, touched: &Touched) -> Result<(), StoreError> {
        if !touched.enabled || (touched.nodes.is_empty() && !touched.schema && !touched.overflow) {
            return Ok(());
        }
        if touched.schema || touched.overflow {
            self.entail_all()?;
            return Ok(());
        }
        let started = std::time::Instant::now();
        let closure: Vec<Triple> = touched
            .schema_before
            .closure()
            .into_iter()
            .map(|i| i.triple)
            .collect();
        let nodes: Vec<&NamedOrBlankNode> = touched.nodes.iter().collect();
        let mut inferred = 0;
        for chunk in nodes.chunks(self.entailment_nodes_per_transaction.max(1)) {
            let chunk: HashSet<NamedOrBlankNode> = chunk.iter().map(|n| (*n).clone()).collect();
            inferred += self.entail_nodes(&chunk, &closure, touched)?;
        }
        tracing::debug!(
            nodes = touched.nodes.len(),
            inferred,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "entailment recomputed for the touched nodes"
        );
        Ok(())
    }

    /// Replaces the derived triples about `nodes` (some of the touched ones) with
    /// what they entail now, in one transaction; returns how many there are.
    fn entail_nodes(
        &self,
        nodes: &HashSet<NamedOrBlankNode>,
        closure: &[Triple],
        touched: &Touched,
    ) -> Result<usize, StoreError> {
        let about = |t: &Triple| nodes.contains(&t.subject);
        // A set: a node typed by a range is typed once per triple pointing at it
        // (every `?f kgfuse:inPackage p` types `p`), and each derived triple is
        // looked up in the store once, not once per premise.
        let mut inferred: HashSet<Triple> = closure.iter().filter(|t| about(t)).cloned().collect();
        for asserted in self.graph.asserted_about(
            nodes,
            &touched.deriving,
            &touched.typing,
            Premises::EnoughToEntail,
        )? {
            inferred.extend(
                touched
                    .schema_before
                    .expand(&asserted)
                    .into_iter()
                    .map(|i| i.triple)
                    .filter(about),
            );
        }
        let inferred: Vec<Triple> = inferred.into_iter().collect();
        self.graph.replace_inferred(nodes, &inferred)?;
        Ok(inferred.len())
    }

    /// Rebuilds the whole derived graph (or empties it when the store infers
    /// nothing); returns how many triples it holds.
    pub(crate) fn entail_all(&self) -> Result<u64, StoreError> {
        if !self.entails() {
            return Ok(self.graph.rebuild_inferred(&[], &|_| Vec::new())?);
        }
        let started = std::time::Instant::now();
        let schema = Schema::from_triples(&self.graph.schema_triples()?);
        let closure: Vec<Triple> = schema.closure().into_iter().map(|i| i.triple).collect();
        let expand = |t: &Triple| -> Vec<Triple> {
            schema.expand(t).into_iter().map(|i| i.triple).collect()
        };
        let inferred = self.graph.rebuild_inferred(&closure, &expand)?;
        tracing::debug!(
            inferred,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "derived graph rebuilt"
        );
        Ok(inferred)
    }
}

/// Why a triple holds in the store's default (union) graph: see [`Store::why`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct Provenance {
    /// The triple, in N-Triples syntax.
    pub triple: String,
    /// The named graphs that assert it (`DEFAULT` for the default graph); empty
    /// when it is only inferred.
    pub asserted_in: Vec<String>,
    /// Whether the derived graph holds it.
    pub inferred: bool,
    /// Each way RDFS entailment derives it from one asserted triple and the
    /// store's schema (empty when the store infers nothing or nothing derives it).
    pub derivations: Vec<Derivation>,
    /// The recorded fingerprint of each graph of `asserted_in` that has one (a
    /// file loaded into a graph of its own; see [`kgfuse_graph::fingerprint`]),
    /// by graph; left out of JSON when none has.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub fingerprints: BTreeMap<String, String>,
}

/// One derivation of an inferred triple.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Derivation {
    /// The rule that gave the triple, named as in RDF 1.1 Semantics (`rdfs2`
    /// domain, `rdfs3` range, `rdfs7` subPropertyOf, `rdfs9` subClassOf,
    /// `rdfs5+11` the closure of the hierarchies); with a chain (a domain type
    /// lifted through a subclass) the last step's rule.
    pub rule: &'static str,
    /// The asserted triple it came from, in N-Triples syntax.
    pub premise: String,
    /// The graphs that assert the premise.
    pub premise_graphs: Vec<String>,
}

fn graph_label(graph: &GraphName) -> String {
    match graph {
        GraphName::NamedNode(n) => n.as_str().to_owned(),
        GraphName::BlankNode(b) => b.to_string(),
        GraphName::DefaultGraph => "DEFAULT".to_owned(),
    }
}

impl Store {
    /// Why `triple` holds: the graphs asserting it and, for an inferred triple,
    /// the rule and asserted premise of each derivation. Derivations are found
    /// again from the asserted triples a node's entailments come from (its subject
    /// triples and object-typing ones, as for a write; nothing extra is stored
    /// per inferred triple), so they are always those of the current data.
    pub fn why(&self, triple: &Triple) -> Result<Provenance, StoreError> {
        let inferred_graph = kgfuse_core::ontology::INFERRED_GRAPH;
        let mut asserted_in = Vec::new();
        let mut inferred = false;
        for graph in self.graph.graphs_holding(triple)? {
            let label = graph_label(&graph);
            if label == inferred_graph {
                inferred = true;
            } else {
                asserted_in.push(label);
            }
        }
        let mut derivations = Vec::new();
        if self.entails() {
            let schema = Schema::from_triples(&self.graph.schema_triples()?);
            let mut around = HashSet::new();
            around.insert(triple.subject.clone());
            let closure = schema.closure();
            let typing = schema.object_typing_predicates();
            let deriving = schema.subject_deriving_predicates();
            for premise in self
                .graph
                .asserted_about(&around, &deriving, &typing, Premises::All)?
            {
                let rule = schema
                    .expand(&premise)
                    .into_iter()
                    .find(|i| &i.triple == triple)
                    .map(|i| i.rule)
                    .or_else(|| closure_step(&schema, &closure, &premise, triple));
                if let Some(rule) = rule {
                    derivations.push(Derivation {
                        rule: rule.name(),
                        premise_graphs: self.asserting_graphs(&premise)?,
                        premise: premise.to_string(),
                    });
                }
            }
        }
        Ok(Provenance {
            triple: triple.to_string(),
            fingerprints: self.fingerprints_of(&asserted_in)?,
            asserted_in,
            inferred,
            derivations,
        })
    }

    /// The recorded fingerprints of those of `graphs` (IRIs, or `DEFAULT`) that
    /// have one.
    fn fingerprints_of(&self, graphs: &[String]) -> Result<BTreeMap<String, String>, StoreError> {
        let mut out = BTreeMap::new();
        for label in graphs {
            let Ok(graph) = NamedNodeRef::new(label) else {
                continue;
            };
            if let Some(fingerprint) = self.graph.fingerprint_of(graph)? {
                out.insert(label.clone(), fingerprint);
            }
        }
        Ok(out)
    }

    fn asserting_graphs(&self, triple: &Triple) -> Result<Vec<String>, StoreError> {
        Ok(self
            .graph
            .graphs_holding(triple)?
            .iter()
            .map(graph_label)
            .filter(|g| g != kgfuse_core::ontology::INFERRED_GRAPH)
            .collect())
    }
}

/// The closure rule, when `target` is a schema triple the closure adds and
/// `premise` is its first step: the same subject and predicate, and an object
/// that is the target's object or has it among its (strict) supers.
fn closure_step(
    schema: &Schema,
    closure: &[kgfuse_entail::Inferred],
    premise: &Triple,
    target: &Triple,
) -> Option<kgfuse_entail::Rule> {
    let (kgfuse_graph::model::Term::NamedNode(step), kgfuse_graph::model::Term::NamedNode(goal)) =
        (&premise.object, &target.object)
    else {
        return None;
    };
    if premise.subject != target.subject
        || premise.predicate != target.predicate
        || !closure.iter().any(|i| &i.triple == target)
    {
        return None;
    }
    let supers = if target.predicate.as_ref() == kgfuse_graph::model::vocab::rdfs::SUB_CLASS_OF {
        schema.super_classes(step)
    } else {
        schema.super_properties(step)
    };
    (step == goal || supers.contains(goal)).then_some(kgfuse_entail::Rule::SchemaClosure)
}

#[cfg(test)]
mod tests {
    use crate::Store;
    use crate::test_support::load_text;
    use kgfuse_core::config::StoreConfig;
    use kgfuse_core::progress::NoProgress;
    use kgfuse_graph::SourceGraph;
    use kgfuse_graph::model::{NamedNode, Triple};
    use std::collections::BTreeSet;

    const SCHEMA: &str = "@prefix ex: <http://example.org/> .\n\
        @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\
        ex:Manager rdfs:subClassOf ex:Employee .\n\
        ex:leads rdfs:subPropertyOf ex:manages .\n\
        ex:manages rdfs:domain ex:Manager ; rdfs:range ex:Team .\n";

    fn derived(store: &Store) -> BTreeSet<String> {
        let graph = NamedNode::new_unchecked(kgfuse_core::ontology::INFERRED_GRAPH);
        store
            .graph
            .graph_triples(&graph)
            .expect("derived graph")
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// A fresh store (hash embedder) holding [`SCHEMA`], in a directory kept
    /// alive with it.
    async fn store_with_schema() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::init(
            &dir.path().join("store"),
            StoreConfig::new(kgfuse_core::config::EmbedderKind::Hash, 16),
        )
        .await
        .expect("init");
        load_text(&store, dir.path(), "schema.ttl", SCHEMA).await;
        (dir, store)
    }

    #[tokio::test]
    async fn recomputing_the_touched_nodes_matches_a_full_rebuild() {
        let (dir, store) = store_with_schema().await;
        let dir = dir.path();
        let people = "@prefix ex: <http://example.org/> .\n\
            ex:ann ex:leads ex:payments .\n\
            ex:bob ex:manages ex:payments , ex:risk .\n\
            ex:cid a ex:Manager ; ex:knows ex:payments .\n";
        load_text(&store, dir, "people.ttl", people).await;
        // Changes that only reach a node as an object: ex:risk loses the only
        // triple that made it a team, ex:ops becomes one through a sub-property.
        load_text(
            &store,
            dir,
            "people.ttl",
            &people
                .replace(", ex:risk", "")
                .replace("ex:knows ex:payments", "ex:leads ex:ops"),
        )
        .await;
        load_text(
            &store,
            dir,
            "more.ttl",
            "<http://example.org/dee> <http://example.org/manages> <http://example.org/risk> .\n",
        )
        .await;
        let ops_is_a_team = "<http://example.org/ops> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://example.org/Team>";
        assert!(derived(&store).contains(ops_is_a_team));
        // Insert-only loads write their entailments in their own commit: what they
        // now assert leaves the derived graph (ex:ops), and what they entail but
        // assert, here or before, never enters it (ex:eve, ex:fay).
        load_text(
            &store,
            dir,
            "asserted.ttl",
            "@prefix ex: <http://example.org/> .\n\
             ex:ops a ex:Team .\n\
             ex:fay a ex:Team .\n",
        )
        .await;
        load_text(
            &store,
            dir,
            "entailed.ttl",
            "@prefix ex: <http://example.org/> .\n\
             ex:eve a ex:Manager ; ex:leads ex:fay .\n",
        )
        .await;
        let incremental = derived(&store);
        assert!(!incremental.contains(ops_is_a_team));
        assert!(incremental.contains(
            "<http://example.org/eve> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://example.org/Employee>"
        ));
        assert!(incremental.contains(
            "<http://example.org/eve> <http://example.org/manages> <http://example.org/fay>"
        ));
        store.entail_all().expect("rebuild");
        assert_eq!(incremental, derived(&store));
    }

    #[tokio::test]
    async fn a_hub_typed_by_hundreds_of_triples_is_recomputed_from_one_of_them() {
        let (dir, store) = store_with_schema().await;
        let dir = dir.path();
        // More incoming triples than a node reads in full before it counts as a hub.
        let managers = |n: usize| -> String {
            let mut text = String::from("@prefix ex: <http://example.org/> .\n");
            for i in 0..n {
                text.push_str(&format!("ex:m{i} ex:manages ex:hub .\n"));
            }
            text
        };
        load_text(&store, dir, "hub.ttl", &managers(300)).await;
        // A replacement touches the hub again: its type comes from one premise.
        load_text(&store, dir, "hub.ttl", &managers(299)).await;
        let incremental = derived(&store);
        assert!(incremental.contains(
            "<http://example.org/hub> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://example.org/Team>"
        ));
        store.entail_all().expect("rebuild");
        assert_eq!(incremental, derived(&store));
        // With no premise left, the type goes.
        load_text(&store, dir, "hub.ttl", "<urn:x:a> <urn:x:b> <urn:x:c> .\n").await;
        assert!(
            !derived(&store)
                .iter()
                .any(|t| t.contains("example.org/hub"))
        );
    }

    #[tokio::test]
    async fn a_load_in_many_chunks_entails_what_a_full_rebuild_does() {
        let (dir, mut store) = store_with_schema().await;
        let dir = dir.path();
        // Chunks of a few triples, so each case below crosses chunks: a derived
        // triple asserted later (t1 a Team), one asserted before it is derived
        // (t2), one derived in two chunks (t3), with unrelated triples between.
        store.entailment_chunk = 3;
        let filler = |from: usize| -> String {
            (from..from + 6)
                .map(|i| format!("ex:x{i} ex:knows ex:y{i} .\n"))
                .collect()
        };
        let text = format!(
            "@prefix ex: <http://example.org/> .\n\
             ex:a1 ex:manages ex:t1 .\n\
             ex:t2 a ex:Team .\n{}\
             ex:a3 ex:leads ex:t3 .\n{}\
             ex:t1 a ex:Team .\n\
             ex:a2 ex:manages ex:t2 .\n{}\
             ex:a4 ex:manages ex:t3 .\n",
            filler(0),
            filler(10),
            filler(20)
        );
        load_text(&store, dir, "chunks.ttl", &text).await;
        let incremental = derived(&store);
        let is_team = |node: &str| {
            format!(
                "<http://example.org/{node}> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://example.org/Team>"
            )
        };
        assert!(incremental.contains(&is_team("t3")));
        assert!(!incremental.contains(&is_team("t1")));
        assert!(!incremental.contains(&is_team("t2")));
        store.entail_all().expect("rebuild");
        assert_eq!(incremental, derived(&store));
        // The same through written sources (one new graph, the bulk loader).
        let triples: Vec<(String, String, String)> = (0..40)
            .map(|i| {
                (
                    format!("b{i}"),
                    "manages".to_owned(),
                    format!("team{}", i % 7),
                )
            })
            .chain((0..7).map(|i| (format!("team{i}"), "knows".to_owned(), "b0".to_owned())))
            .chain([("team3".to_owned(), "leads".to_owned(), "team5".to_owned())])
            .collect();
        let borrowed: Vec<(&str, &str, &str)> = triples
            .iter()
            .map(|(s, p, o)| (s.as_str(), p.as_str(), o.as_str()))
            .collect();
        write(&store, &[source("teams", "1", &borrowed)]).await;
        let incremental = derived(&store);
        assert!(incremental.contains(&is_team("team5")));
        store.entail_all().expect("rebuild");
        assert_eq!(incremental, derived(&store));
    }

    /// An extracted source of `(subject, predicate, object)` local names.
    /// Writes `sources`, each replacing its graph, dropping none.
    async fn write(store: &Store, sources: &[SourceGraph]) {
        store
            .write_sources(sources, &[], &NoProgress)
            .await
            .expect("write");
    }

    fn source(name: &str, version: &str, triples: &[(&str, &str, &str)]) -> SourceGraph {
        let ex = |local: &str| NamedNode::new_unchecked(format!("http://example.org/{local}"));
        SourceGraph {
            graph: NamedNode::new_unchecked(format!("file:///sources/{name}")),
            path: format!("/sources/{name}"),
            content_hash: version.into(),
            extraction_hash: version.into(),
            extractor: "docs".into(),
            triples: triples
                .iter()
                .map(|(s, p, o)| Triple::new(ex(s), ex(p), ex(o)))
                .collect(),
        }
    }

    #[tokio::test]
    async fn written_sources_entail_what_a_full_rebuild_does() {
        let (_dir, store) = store_with_schema().await;
        let rebuilt = |store: &Store| {
            store.entail_all().expect("rebuild");
            derived(store)
        };
        // New graphs: the bulk loader, entailments in the same commit (each
        // source graph is a kgfuse:SourceFile, a prov:Entity).
        let first = [
            source("a", "1", &[("ann", "leads", "payments")]),
            source("b", "1", &[("bob", "manages", "risk")]),
        ];
        write(&store, &first).await;
        let incremental = derived(&store);
        assert!(incremental.contains(
            "<file:///sources/a> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://www.w3.org/ns/prov#Entity>"
        ));
        assert_eq!(incremental, rebuilt(&store));
        // A replaced graph and a dropped one: a transaction, then the touched
        // nodes recomputed.
        let second = [source("a", "2", &[("ann", "leads", "ops")])];
        let dropped = [first[1].graph.clone()];
        store
            .write_sources(&second, &dropped, &NoProgress)
            .await
            .expect("second write");
        let incremental = derived(&store);
        assert!(!incremental.iter().any(|t| t.contains("risk")));
        assert_eq!(incremental, rebuilt(&store));
    }

    #[tokio::test]
    async fn a_replaced_graph_recomputed_one_node_per_transaction_entails_what_a_rebuild_does() {
        let (_dir, mut store) = store_with_schema().await;
        let team = |version, triples: &[(&str, &str, &str)]| [source("team", version, triples)];
        let first = [
            ("ann", "leads", "payments"),
            ("bob", "manages", "risk"),
            ("cid", "leads", "ops"),
        ];
        write(&store, &team("1", &first)).await;
        // A triple kept (ann), one gone (bob's), one changed (cid's), one new
        // (dee's): each touched node in a transaction of its own.
        store.entailment_nodes_per_transaction = 1;
        let second = [
            ("ann", "leads", "payments"),
            ("cid", "manages", "ops"),
            ("dee", "leads", "risk"),
        ];
        write(&store, &team("2", &second)).await;
        let incremental = derived(&store);
        assert!(
            !incremental
                .iter()
                .any(|t| t.starts_with("<http://example.org/bob>"))
        );
        assert!(incremental.contains(
            "<http://example.org/dee> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://example.org/Manager>"
        ));
        assert!(incremental.contains(
            "<http://example.org/ann> <http://example.org/manages> <http://example.org/payments>"
        ));
        store.entail_all().expect("rebuild");
        assert_eq!(incremental, derived(&store));
    }
}
