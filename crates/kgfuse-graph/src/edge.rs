//! The graph's edges as the walks and scans see them: an [`Edge`] between two
//! IRIs, the [`Neighbourhood`] a walk reaches, and which [`End`] of a quad a read
//! fixes. Both backends and the templates share these, so they live below all three.

use std::collections::{BTreeMap, BTreeSet};

/// An edge met while walking a neighbourhood.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    /// Subject IRI.
    pub subject: String,
    /// Predicate IRI.
    pub predicate: String,
    /// Object IRI.
    pub object: String,
}

/// Nodes reached by a walk with their distance, and the edges used.
pub type Neighbourhood = (BTreeMap<String, usize>, BTreeSet<Edge>);

pub(crate) use kgfuse_remote::End;
