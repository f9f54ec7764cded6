//! The command line's advice on an error: which flag or command fixes it. The
//! libraries' messages say what went wrong and name no flag (HTTP and MCP callers
//! have none); this is where the flags are named.

use kgfuse::{GraphError, StoreError};

/// A hint for the first kgfuse error in `error`'s chain that has one.
pub(crate) fn hint(error: &anyhow::Error) -> Option<&'static str> {
    error.chain().find_map(|cause| {
        if let Some(error) = cause.downcast_ref::<kgfuse::Error>() {
            return error.store().and_then(store_hint);
        }
        if let Some(error) = cause.downcast_ref::<StoreError>() {
            return store_hint(error);
        }
        cause.downcast_ref::<GraphError>().and_then(graph_hint)
    })
}

fn store_hint(error: &StoreError) -> Option<&'static str> {
    match error {
        StoreError::NotInitialised(_) => Some("run `kgfuse init` first, or pass --data DIR"),
        StoreError::AlreadyInitialised(_) => Some("use it, or pick another --data directory"),
        StoreError::VectorsInUse(_) => Some(
            "pass --attach to share that store from this data directory (the same --graph, \
             embedder and dimension), or pick another --vectors prefix",
        ),
        StoreError::PartlyWritten { .. } => Some("`kgfuse check --repair` repairs it now"),
        StoreError::Embed(kgfuse::EmbedError::ModelMissing { .. }) => {
            Some("`kgfuse init --embedder hash` needs no model")
        }
        StoreError::Graph(error) => graph_hint(error),
        StoreError::NothingWritten { cause, .. } => store_hint(cause),
        _ => None,
    }
}

fn graph_hint(error: &GraphError) -> Option<&'static str> {
    match error {
        GraphError::UnknownFormat(_) => {
            Some("pass --format turtle|ntriples|nquads|trig|rdfxml|jsonld")
        }
        GraphError::Locked { .. } => Some("or pass another --data directory"),
        _ => None,
    }
}
