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
    GraphName, NamedNode, NamedOrBlankNode, NamedOrBlankNodeRef, Quad, QuadRef, TermRef, Triple,
};
use std::collections::HashSet;

/// Past this many touched nodes a write rebuilds the derived graph instead of
/// remembering each node (memory stays bounded on big loads).
pub(crate) const MAX_TOUCHED: usize = 200_000;

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
        self.schema |= kgfuse_entail::is_schema_predicate(
            kgfuse_graph::model::NamedNodeRef::new_unchecked(predicate),
        );
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
/// the schema, or would hold more than [`MAX_TOUCHED`] triples here, rebuilds
/// the derived graph after its commit instead.
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
    /// What the new triples entail, and the new triples that could have been derived.
    entailed: HashSet<Triple>,
    asserted: HashSet<Triple>,
    /// Derived triples this load asserts, found by `closing_quads`.
    stale: Vec<Triple>,
    schema_changed: bool,
    overflow: bool,
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
        if self.entailed.len() + self.asserted.len() > MAX_TOUCHED {
            self.overflow = true;
            self.entailed.clear();
            self.asserted.clear();
        }
    }

    /// The derived triples to write with the load: what it entails, less what
    /// is asserted. Also finds [`NewEntailments::stale`].
    pub(crate) fn closing_quads(
        &mut self,
        graph: &kgfuse_graph::Graph,
    ) -> Result<Vec<Quad>, kgfuse_graph::GraphError> {
        if !self.enabled || self.schema_changed || self.overflow {
            return Ok(Vec::new());
        }
        let entailed: Vec<Triple> = self.entailed.drain().collect();
        let looked_up: Vec<Triple> = entailed
            .iter()
            .chain(self.asserted.iter())
            .cloned()
            .collect();
        let held = graph.where_held(&looked_up)?;
        self.stale = self
            .asserted
            .iter()
            .filter(|t| held.derived.contains(*t))
            .cloned()
            .collect();
        let into = GraphName::NamedNode(NamedNode::new_unchecked(
            kgfuse_core::ontology::INFERRED_GRAPH,
        ));
        Ok(entailed
            .into_iter()
            .filter(|t| !self.asserted.contains(t) && !held.asserted.contains(t))
            .map(|t| t.in_graph(into.clone()))
            .collect())
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
            self.graph.remove_inferred(entailments.stale())?;
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
        let schema = &touched.schema_before;
        let about_touched = |t: &Triple| touched.nodes.contains(&t.subject);
        // A set: a node typed by a range is typed once per triple pointing at it
        // (every `?f kgfuse:inPackage p` types `p`), and each derived triple is
        // looked up in the store once, not once per premise.
        let mut inferred: HashSet<Triple> = schema
            .closure()
            .into_iter()
            .map(|i| i.triple)
            .filter(about_touched)
            .collect();
        for asserted in self.graph.asserted_about(
            &touched.nodes,
            &touched.deriving,
            &touched.typing,
            Premises::EnoughToEntail,
        )? {
            inferred.extend(
                schema
                    .expand(&asserted)
                    .into_iter()
                    .map(|i| i.triple)
                    .filter(about_touched),
            );
        }
        let inferred: Vec<Triple> = inferred.into_iter().collect();
        self.graph.replace_inferred(&touched.nodes, &inferred)?;
        tracing::debug!(
            nodes = touched.nodes.len(),
            inferred = inferred.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "entailment recomputed for the touched nodes"
        );
        Ok(())
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
            asserted_in,
            inferred,
            derivations,
        })
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
        let store = Store::init(&dir.path().join("store"), StoreConfig::new("hash", 16))
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

    /// An extracted source of `(subject, predicate, object)` local names.
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
        store
            .write_sources(&first, &[], &NoProgress)
            .await
            .expect("first write");
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
}
