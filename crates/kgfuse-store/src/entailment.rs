//! Keeping the derived graph in step with the asserted triples (RDFS entailment,
//! [`kgfuse_entail`]). Each write recomputes what its touched nodes entail inside
//! its journalled write; a write that changes the schema (or touches more nodes
//! than [`MAX_TOUCHED`]) rebuilds the whole derived graph, streaming.

use crate::{Store, StoreError};
use kgfuse_core::config::Entailment;
use kgfuse_entail::Schema;
use kgfuse_graph::model::{NamedOrBlankNode, NamedOrBlankNodeRef, QuadRef, TermRef, Triple};
use std::collections::HashSet;

/// Past this many touched nodes a write rebuilds the derived graph instead of
/// remembering each node (memory stays bounded on big loads).
pub(crate) const MAX_TOUCHED: usize = 200_000;

/// The nodes a write touched and whether it touched the schema (nothing is noted
/// for a store that infers nothing: the load callback stays cheap).
#[derive(Debug, Default)]
pub(crate) struct Touched {
    enabled: bool,
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
        self.nodes.insert(subject.into_owned());
        match object {
            TermRef::NamedNode(n) => {
                self.nodes.insert(n.into_owned().into());
            }
            TermRef::BlankNode(b) => {
                self.nodes.insert(b.into_owned().into());
            }
            _ => {}
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
    fn entails(&self) -> bool {
        self.config.reasoning.entailment == Entailment::Rdfs
    }

    /// An empty record of what a write touches, noting only if the store infers.
    pub(crate) fn touched(&self) -> Touched {
        Touched {
            enabled: self.entails(),
            ..Touched::default()
        }
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
        let schema = Schema::from_triples(&self.graph.schema_triples()?);
        let about_touched = |t: &Triple| touched.nodes.contains(&t.subject);
        let mut inferred: Vec<Triple> = schema
            .closure()
            .into_iter()
            .map(|i| i.triple)
            .filter(about_touched)
            .collect();
        for asserted in self.graph.asserted_around(&touched.nodes)? {
            inferred.extend(
                schema
                    .expand(&asserted)
                    .into_iter()
                    .map(|i| i.triple)
                    .filter(about_touched),
            );
        }
        self.graph.replace_inferred(&touched.nodes, &inferred)?;
        Ok(())
    }

    /// Rebuilds the whole derived graph (or empties it when the store infers
    /// nothing); returns how many triples it holds.
    pub(crate) fn entail_all(&self) -> Result<u64, StoreError> {
        if !self.entails() {
            return Ok(self.graph.rebuild_inferred(&[], &|_| Vec::new())?);
        }
        let schema = Schema::from_triples(&self.graph.schema_triples()?);
        let closure: Vec<Triple> = schema.closure().into_iter().map(|i| i.triple).collect();
        let expand = |t: &Triple| -> Vec<Triple> {
            schema.expand(t).into_iter().map(|i| i.triple).collect()
        };
        Ok(self.graph.rebuild_inferred(&closure, &expand)?)
    }
}
