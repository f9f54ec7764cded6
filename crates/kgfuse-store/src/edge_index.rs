//! The walks' edge index ([`kgfuse_graph::EdgeIndex`]) built on a thread of its
//! own. Building it reads every edge of the graph (17-19 s at 100,000 functions),
//! and the request that found the index worth building used to wait for all of
//! it; now that request, and every one until the index is ready, walks Oxigraph
//! as before (the same walks, slower), and the next ones use the index.

use crate::derived::{Derived, WholeStore};
use kgfuse_graph::{EdgeIndex, Graph};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

/// The index as the store's derived values keep it (`None`: the graph is too
/// large to index).
pub(crate) struct KeptIndex(pub(crate) Option<Arc<EdgeIndex>>);

impl WholeStore for KeptIndex {}

/// The build under way, if any; the store's clones share it. Dropping it (with
/// the last clone of the store) stops the build and waits for its thread, so the
/// graph's files are free again once the store is gone.
#[derive(Default)]
pub(crate) struct Background {
    running: Mutex<Option<Running>>,
}

struct Running {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Background {
    /// Starts building the index of `graph` into `derived` (at most `max_edges`
    /// edges) unless a build is under way.
    pub(crate) fn start(&self, graph: &Graph, derived: &Derived, max_edges: usize) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if running.as_ref().is_some_and(|r| !r.thread.is_finished()) {
            return;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let generation = derived.generation();
        let (graph, derived, stopped) = (graph.clone(), derived.clone(), Arc::clone(&stop));
        let spawned = std::thread::Builder::new()
            .name("kgfuse-edge-index".into())
            .spawn(move || {
                let index = match graph.edge_index_unless_stopped(max_edges, &stopped) {
                    Ok(index) => index,
                    Err(e) => {
                        // Kept as "no index", so a failing build is not retried on
                        // every request; walks read the graph instead.
                        tracing::warn!("the walks' edge index was not built: {e}");
                        None
                    }
                };
                if !stopped.load(Ordering::Relaxed) {
                    derived.keep(generation, Arc::new(KeptIndex(index.map(Arc::new))));
                }
            });
        match spawned {
            Ok(thread) => *running = Some(Running { stop, thread }),
            Err(e) => tracing::warn!("no thread for the walks' edge index: {e}"),
        }
    }

    /// Waits for the build under way, if any; stops it first when `stop`.
    fn finish(&self, stop: bool) {
        let running = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(running) = running {
            if stop {
                running.stop.store(true, Ordering::Relaxed);
            }
            let _ = running.thread.join();
        }
    }

    /// Waits for the build under way, if any.
    pub(crate) fn wait(&self) {
        self.finish(false);
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.finish(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;
    use crate::test_support::load_text;
    use kgfuse_core::config::StoreConfig;
    use kgfuse_core::progress::NoProgress;

    const CHAIN: &str = "<urn:a> <urn:calls> <urn:b> .\n<urn:b> <urn:calls> <urn:c> .\n";
    const ONE_MORE: &str = "<urn:c> <urn:calls> <urn:d> .\n";

    async fn store_with_chain(dir: &std::path::Path) -> Store {
        let store = Store::init(
            &dir.join("store"),
            StoreConfig::new(kgfuse_core::config::EmbedderKind::Hash, 16),
        )
        .await
        .expect("init");
        load_text(&store, dir, "chain.nt", CHAIN).await;
        store
    }

    fn kept(store: &Store) -> Option<Option<Arc<EdgeIndex>>> {
        store
            .derived
            .get::<KeptIndex>()
            .map(|index| index.0.clone())
    }

    #[tokio::test]
    async fn the_index_built_on_its_own_thread_is_kept_for_the_next_walks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store_with_chain(dir.path()).await;
        assert!(kept(&store).is_none());
        store
            .edge_index_build
            .start(&store.graph, &store.derived, usize::MAX);
        store.edge_index_build.wait();
        let index = kept(&store).expect("kept").expect("an index");
        let read_here = store
            .graph
            .edge_index(usize::MAX)
            .expect("index")
            .expect("embedded");
        assert_eq!(index.len(), read_here.len());
        assert!(index.len() >= 2, "the chain's edges at least");
        // Over the cap, "no index" is kept, so the build is not tried again.
        load_text(&store, dir.path(), "more.nt", ONE_MORE).await;
        store
            .edge_index_build
            .start(&store.graph, &store.derived, 1);
        store.edge_index_build.wait();
        assert!(matches!(kept(&store), Some(None)));
    }

    #[tokio::test]
    async fn an_index_of_a_graph_written_since_its_build_started_is_not_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store_with_chain(dir.path()).await;
        let generation = store.derived.generation();
        load_text(&store, dir.path(), "more.nt", ONE_MORE).await;
        // What a build that started before the load would keep at its end.
        let stale: Option<Arc<EdgeIndex>> = store
            .graph
            .edge_index(usize::MAX)
            .expect("index")
            .map(Arc::new);
        store.derived.keep(generation, Arc::new(KeptIndex(stale)));
        assert!(kept(&store).is_none());
    }

    #[tokio::test]
    async fn a_store_dropped_while_its_index_builds_can_be_opened_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store_with_chain(dir.path()).await;
        let triples = store.stats().await.expect("stats").triples;
        store
            .edge_index_build
            .start(&store.graph, &store.derived, usize::MAX);
        drop(store);
        // The dropped store stopped its build and let go of the graph's files.
        let again = Store::open(&dir.path().join("store"), &NoProgress)
            .await
            .expect("reopen");
        assert_eq!(again.stats().await.expect("stats").triples, triples);
    }
}
