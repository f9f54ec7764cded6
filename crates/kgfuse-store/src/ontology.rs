//! The kgfuse vocabulary every store carries ([`kgfuse_core::ontology`]): loaded
//! by `init` into a graph named after its version, replaced in place when a store
//! made by another kgfuse is opened, reported by [`Store::ontology_status`].

use crate::{Store, StoreError};
use kgfuse_core::config::StoreConfig;
use kgfuse_core::ontology;
use kgfuse_core::progress::Progress;
use kgfuse_graph::model::NamedNode;
use kgfuse_graph::{LoadRequest, RdfSource};
use std::path::PathBuf;

/// Where the store keeps a copy of the vocabulary it carries, for people to read
/// (relative to the data directory).
const ONTOLOGY_COPY: &str = "ontology/kgfuse.ttl";

/// How the carried vocabulary compares with this build's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OntologyStatus {
    /// The store carries this build's vocabulary.
    Current(String),
    /// `kgfuse.toml` names no vocabulary graph, or the graph is empty.
    Missing(String),
    /// The store carries another build's vocabulary (first: carried, second: this
    /// build's).
    Stale(String, String),
}

impl OntologyStatus {
    /// True when the store carries this build's vocabulary.
    pub fn is_current(&self) -> bool {
        matches!(self, Self::Current(_))
    }
}

impl std::fmt::Display for OntologyStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Current(graph) => write!(f, "kgfuse vocabulary current in <{graph}>"),
            Self::Missing(graph) => write!(f, "kgfuse vocabulary missing (expected in <{graph}>)"),
            Self::Stale(carried, wanted) => write!(
                f,
                "kgfuse vocabulary stale: <{carried}> is carried, this kgfuse has <{wanted}>"
            ),
        }
    }
}

fn graph_node(iri: &str) -> Result<NamedNode, StoreError> {
    NamedNode::new(iri).map_err(|e| StoreError::Invalid(format!("<{iri}>: {e}")))
}

impl Store {
    /// How the vocabulary the store carries compares with this build's (the
    /// record is read from `kgfuse.toml`, which a write of the vocabulary updates).
    pub fn ontology_status(&self) -> Result<OntologyStatus, StoreError> {
        let wanted = ontology::graph_iri();
        let recorded = StoreConfig::read(&self.dir)?.ontology.graph;
        Ok(match recorded.as_deref() {
            Some(carried) if carried != wanted => OntologyStatus::Stale(carried.to_owned(), wanted),
            Some(carried) if self.graph.contains_graph(&graph_node(carried)?)? => {
                OntologyStatus::Current(wanted)
            }
            _ => OntologyStatus::Missing(wanted),
        })
    }

    /// Makes the store carry this build's vocabulary: loads it into its graph
    /// (a journalled load, so its labels and comments are embedded like any
    /// other), drops the graphs of other builds' vocabularies and records the graph
    /// in `kgfuse.toml`. Does nothing when the store is current. Returns whether
    /// anything changed.
    pub(crate) async fn carry_ontology(&self, progress: &dyn Progress) -> Result<bool, StoreError> {
        if self.ontology_status()?.is_current() {
            return Ok(false);
        }
        let wanted = ontology::graph_iri();
        let copy: PathBuf = self.dir.join(ONTOLOGY_COPY);
        if let Some(parent) = copy.parent() {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::Io {
                path: parent.display().to_string(),
                source,
            })?;
        }
        kgfuse_core::write_atomically(&copy, ontology::KGFUSE_TTL.as_bytes()).map_err(
            |source| StoreError::Io {
                path: copy.display().to_string(),
                source,
            },
        )?;
        let request = LoadRequest {
            sources: vec![RdfSource::from(copy.as_path())],
            graph: Some(graph_node(&wanted)?),
            replace: true,
            base_iri: None,
        };
        self.load(&request, progress).await?;
        let stale: Vec<NamedNode> = self
            .graph
            .named_graphs()?
            .iter()
            .map(|g| g.trim_start_matches('<').trim_end_matches('>'))
            .filter(|g| ontology::is_ontology_graph(g) && *g != wanted)
            .map(graph_node)
            .collect::<Result<_, _>>()?;
        if !stale.is_empty() {
            self.write_sources(&[], &stale, progress).await?;
        }
        // Re-read so concurrent edits of kgfuse.toml by hand are not lost.
        let mut config = StoreConfig::read(&self.dir)?;
        config.ontology.graph = Some(wanted);
        config.write(&self.dir)?;
        Ok(true)
    }
}
