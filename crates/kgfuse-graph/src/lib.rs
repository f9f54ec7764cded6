//! The kgfuse RDF graph: an embedded [Oxigraph](https://crates.io/crates/oxigraph)
//! store (RocksDB), or a SPARQL 1.1 server ([`Graph::connect`], [`kgfuse_remote`]), with
//! atomic file loading, SPARQL with timeouts, canned query templates and the scans
//! the paired store needs to keep vectors in step.
//!
//! This is the only kgfuse crate that talks to Oxigraph or a SPARQL server. It knows nothing about
//! vectors: callers observe which subjects a load touched and decide what to embed.
//!
//! ```
//! use kgfuse_graph::{Graph, QueryOptions, QueryOutcome};
//!
//! let graph = Graph::in_memory()?;
//! graph.update(
//!     "INSERT DATA { GRAPH <urn:g> { <urn:a> <http://www.w3.org/2000/01/rdf-schema#label> \"A\" } }",
//!     &QueryOptions::default(),
//! )?;
//! // Queries see the union of all named graphs by default.
//! let outcome = graph.query("SELECT ?l WHERE { <urn:a> rdfs:label ?l }", &QueryOptions::default())?;
//! let QueryOutcome::Solutions { rows, .. } = outcome else { unreachable!() };
//! assert_eq!(rows.len(), 1);
//! # Ok::<(), kgfuse_graph::GraphError>(())
//! ```

mod algebra;
mod backend;
mod casts;
mod cross_products;
mod edge;
mod edge_index;
mod error;
pub mod fingerprint;
mod format;
mod inferred;
mod load;
mod outcome;
mod read_only;
mod rounds;
mod scan;
mod service;
mod sources;
mod sparql;
pub mod templates;
mod views;
mod vocabulary;

pub use edge_index::EdgeIndex;
pub use error::GraphError;
pub use format::{format_from_name, format_from_path};
pub use inferred::{Held, Premises};
pub use kgfuse_remote::{RemoteAuth, RemoteGraphConfig};
pub use load::{
    LoadAction, LoadObserver, LoadPlan, LoadReport, LoadRequest, PlannedFile, RdfSource,
    file_graph_iri, parse_planned_file,
};
pub use outcome::{QueryOutcome, ResultsFormat};
pub use oxigraph::io::RdfFormat;
/// RDF terms (re-exported from Oxigraph's model) used across kgfuse.
pub use oxigraph::model;
pub use read_only::{LimitedOutcome, ReadOnlyOptions, is_update};
pub use rounds::Rounds;
pub use scan::{GraphStats, TextLiteral, text_literal};
pub use service::service_call;
pub use sources::{SourceGraph, StoredSource};
pub use sparql::{
    DEMOTE_AFTER, QueryOptions, parse_query, parse_update, update_clears_whole_store,
};
pub use vocabulary::{KnownTerms, QueryVocabulary, query_vocabulary};

use backend::{Backend, Changes};
use oxigraph::store::Store;
use std::path::Path;
use std::sync::Arc;

/// An RDF dataset: one default graph plus named graphs, persisted in RocksDB or
/// kept on a SPARQL server ([`Graph::connect`]).
///
/// Cheap to clone; clones share the same underlying store.
#[derive(Clone)]
pub struct Graph {
    backend: Backend,
    /// Time spent evaluating queries and walks (see [`Graph::time_spent`]).
    spent: kgfuse_core::timing::TimeSpent,
    /// Time walks spent reading from the store (see [`Graph::walk_read_time`]).
    walk_reads: kgfuse_core::timing::TimeSpent,
}

impl Graph {
    /// Opens (or creates) a persistent store in `path`, creating missing parents.
    pub fn open(path: &Path) -> Result<Self, GraphError> {
        std::fs::create_dir_all(path).map_err(|source| GraphError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let store = Store::open(path).map_err(|e| {
            let message = e.to_string();
            if message.contains("lock") || message.contains("LOCK") {
                GraphError::Locked {
                    path: path.display().to_string(),
                }
            } else {
                GraphError::Storage(e)
            }
        })?;
        Ok(Self {
            backend: Backend::Embedded(store),
            spent: kgfuse_core::timing::TimeSpent::default(),
            walk_reads: kgfuse_core::timing::TimeSpent::default(),
        })
    }

    /// Connects to a graph kept on a SPARQL 1.1 server (see [`kgfuse_remote`]); fails
    /// when the server does not answer or the auth's secrets are missing.
    pub fn connect(config: RemoteGraphConfig) -> Result<Self, GraphError> {
        Ok(Self {
            backend: Backend::Remote(Arc::new(kgfuse_remote::Endpoint::connect(config)?)),
            spent: kgfuse_core::timing::TimeSpent::default(),
            walk_reads: kgfuse_core::timing::TimeSpent::default(),
        })
    }

    /// Total wall time spent inside Oxigraph by queries, walks and vocabulary
    /// checks since this graph was opened (shared by clones).
    pub fn time_spent(&self) -> std::time::Duration {
        self.spent.total()
    }

    /// How many queries, walks and vocabulary checks that time covers (on a
    /// SPARQL server, one may be several requests).
    pub fn calls(&self) -> u64 {
        self.spent.calls()
    }

    /// A throw-away store in memory (tests, examples).
    pub fn in_memory() -> Result<Self, GraphError> {
        Ok(Self {
            backend: Backend::Embedded(Store::new()?),
            spent: kgfuse_core::timing::TimeSpent::default(),
            walk_reads: kgfuse_core::timing::TimeSpent::default(),
        })
    }

    /// Number of quads in the dataset.
    pub fn len(&self) -> Result<usize, GraphError> {
        match &self.backend {
            Backend::Embedded(store) => Ok(store.len()?),
            Backend::Remote(endpoint) => {
                let (_, rows) =
                    endpoint.select("SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }")?;
                match rows.first().and_then(|row| row.first()).cloned().flatten() {
                    Some(model::Term::Literal(n)) => n.value().parse().map_err(|_| {
                        GraphError::Evaluation(format!("the server counted {n} quads"))
                    }),
                    _ => Err(GraphError::Evaluation(
                        "the server did not count the quads".into(),
                    )),
                }
            }
        }
    }

    /// True when the dataset holds no quad.
    pub fn is_empty(&self) -> Result<bool, GraphError> {
        Ok(!self.holds(None, None, None, None)?)
    }

    /// Whether the named graph `graph` holds at least one triple. On a server, a
    /// graph kgfuse never registered holds none of kgfuse's triples, so only a
    /// registered graph costs a request (a first load of many files asks nothing).
    pub fn contains_graph(&self, graph: &model::NamedNode) -> Result<bool, GraphError> {
        if let Some(endpoint) = self.endpoint()
            && endpoint
                .graphs()
                .binary_search(&graph.as_str().to_owned())
                .is_err()
        {
            return Ok(false);
        }
        self.holds(None, None, None, Some(graph.as_ref().into()))
    }

    /// Removes every quad of a named graph and the graph itself.
    pub fn drop_graph(&self, graph: &model::NamedNode) -> Result<(), GraphError> {
        self.apply(&Changes {
            drop: vec![graph.clone()],
            ..Changes::default()
        })
    }

    /// Writes the whole dataset in a quad format (N-Quads or TriG).
    pub fn dump(&self, writer: impl std::io::Write, format: RdfFormat) -> Result<(), GraphError> {
        if !format.supports_datasets() {
            return Err(GraphError::Usage(format!(
                "{} cannot hold named graphs; use N-Quads or TriG",
                format.name()
            )));
        }
        let failed = |e: std::io::Error| GraphError::Serialize(e.to_string());
        match &self.backend {
            Backend::Embedded(store) => store
                .dump_to_writer(format, writer)
                .map(drop)
                .map_err(|e| GraphError::Serialize(e.to_string())),
            Backend::Remote(_) => {
                let mut serializer =
                    oxigraph::io::RdfSerializer::from_format(format).for_writer(writer);
                for quad in self.all_quads() {
                    serializer.serialize_quad(&quad?).map_err(failed)?;
                }
                serializer.finish().map(drop).map_err(failed)
            }
        }
    }

    /// Flushes buffered writes to disk (a remote graph has none).
    pub fn flush(&self) -> Result<(), GraphError> {
        match &self.backend {
            Backend::Embedded(store) => Ok(store.flush()?),
            Backend::Remote(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod ontology_tests {
    use super::*;
    use kgfuse_core::progress::NoProgress;
    use kgfuse_core::vocab::{KGFUSE, kg};

    fn ontology() -> Graph {
        let graph = Graph::in_memory().expect("store");
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ontology/kgfuse.ttl");
        let plan = graph
            .plan_load(&LoadRequest {
                sources: vec![path.as_path().into()],
                ..LoadRequest::default()
            })
            .expect("plan");
        graph
            .execute_load(&plan, &mut |_: model::QuadRef<'_>| {}, &NoProgress)
            .expect("the ontology parses");
        graph
    }

    #[test]
    fn every_vocabulary_constant_is_declared_in_the_ontology() {
        let graph = ontology();
        for (name, iri) in kg::ALL {
            let declared = graph
                .query(
                    &format!(
                        "ASK {{ <{iri}> a ?t FILTER(?t IN (owl:Class, owl:ObjectProperty, owl:DatatypeProperty)) }}"
                    ),
                    &QueryOptions::default(),
                )
                .expect("ask");
            assert_eq!(
                declared,
                QueryOutcome::Boolean(true),
                "{name} = <{iri}> not declared"
            );
        }
    }

    #[test]
    fn every_ontology_term_has_a_label_and_a_comment() {
        let graph = ontology();
        let outcome = graph
            .query(
                &format!(
                    "SELECT ?term WHERE {{ ?term a ?t FILTER(STRSTARTS(STR(?term), \"{KGFUSE}\")) \
                     FILTER NOT EXISTS {{ ?term rdfs:label ?l ; rdfs:comment ?c }} }}"
                ),
                &QueryOptions::default(),
            )
            .expect("select");
        assert_eq!(
            outcome,
            QueryOutcome::Solutions {
                variables: vec!["term".into()],
                rows: vec![]
            }
        );
    }
}
