//! Keeping the derived graph in step with the asserted triples (RDFS entailment,
//! [`kgfuse_entail`]). Each write recomputes what its touched nodes entail inside
//! its journalled write; a write that changes the schema (or touches more nodes
//! than [`MAX_TOUCHED`]) rebuilds the whole derived graph, streaming.

use crate::{Store, StoreError};
use kgfuse_core::config::Entailment;
use kgfuse_entail::Schema;
use kgfuse_graph::model::{
    NamedNode, NamedOrBlankNode, NamedOrBlankNodeRef, QuadRef, TermRef, Triple,
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
        let mut inferred: Vec<Triple> = schema
            .closure()
            .into_iter()
            .map(|i| i.triple)
            .filter(about_touched)
            .collect();
        for asserted in
            self.graph
                .asserted_about(&touched.nodes, &touched.deriving, &touched.typing)?
        {
            inferred.extend(
                schema
                    .expand(&asserted)
                    .into_iter()
                    .map(|i| i.triple)
                    .filter(about_touched),
            );
        }
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

fn graph_label(graph: &kgfuse_graph::model::GraphName) -> String {
    match graph {
        kgfuse_graph::model::GraphName::NamedNode(n) => n.as_str().to_owned(),
        kgfuse_graph::model::GraphName::BlankNode(b) => b.to_string(),
        kgfuse_graph::model::GraphName::DefaultGraph => "DEFAULT".to_owned(),
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
            for premise in self.graph.asserted_about(&around, &deriving, &typing)? {
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
    use kgfuse_graph::model::NamedNode;
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

    #[tokio::test]
    async fn recomputing_the_touched_nodes_matches_a_full_rebuild() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::init(&dir.path().join("store"), StoreConfig::new("hash", 16))
            .await
            .expect("init");
        let dir = dir.path();
        load_text(&store, dir, "schema.ttl", SCHEMA).await;
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
        let incremental = derived(&store);
        assert!(incremental.contains(
            "<http://example.org/ops> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://example.org/Team>"
        ));
        store.entail_all().expect("rebuild");
        assert_eq!(incremental, derived(&store));
    }
}
