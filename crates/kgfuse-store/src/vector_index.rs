//! Upkeep of the approximate nearest-neighbour (IVF-RQ) index over the vectors.
//!
//! The index is an accelerator, not data: searches are correct without it (rows it
//! does not cover are scanned exactly), so building or refreshing it never fails
//! a write. When it is built and refreshed is [`VectorIndexConfig`] in
//! `kgfuse.toml`.
//!
//! [`VectorIndexConfig`]: kgfuse_core::config::VectorIndexConfig

use crate::{Store, StoreError};
use kgfuse_core::progress::Progress;
use kgfuse_vector::{MIN_ROWS_FOR_VECTOR_INDEX, VectorIndexStatus};

/// What [`Store::maintain_vector_index`] decided after a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndexUpkeep {
    /// Nothing to do.
    None,
    /// No index yet and the table reached the automatic size: build one.
    Build,
    /// The rows written since the last build or refresh are many: fold them in.
    Refresh,
}

/// The upkeep a table of `rows` rows needs, given its index `status` (never a
/// build below [`MIN_ROWS_FOR_VECTOR_INDEX`], whatever the configuration says).
pub(crate) fn upkeep(
    rows: usize,
    status: Option<VectorIndexStatus>,
    auto_build_rows: usize,
    refresh_share: f64,
) -> IndexUpkeep {
    match status {
        None if auto_build_rows > 0 && rows >= auto_build_rows.max(MIN_ROWS_FOR_VECTOR_INDEX) => {
            IndexUpkeep::Build
        }
        None => IndexUpkeep::None,
        Some(status) => {
            #[allow(clippy::cast_precision_loss)]
            let share = status.unindexed_rows as f64 / status.indexed_rows.max(1) as f64;
            if status.unindexed_rows > 0 && share > refresh_share {
                IndexUpkeep::Refresh
            } else {
                IndexUpkeep::None
            }
        }
    }
}

impl Store {
    /// Builds (or rebuilds, retraining its partitions) the vector index now,
    /// whatever the automatic threshold says (but not below
    /// [`MIN_ROWS_FOR_VECTOR_INDEX`] rows). Waits for running writes.
    pub async fn build_vector_index(
        &self,
        progress: &dyn Progress,
    ) -> Result<VectorIndexStatus, StoreError> {
        let _write = self.begin_write().await;
        let rows = self.vectors.len().await?;
        progress.start(
            &format!("building the vector index (IVF-RQ) over {rows} rows"),
            None,
        );
        let status = self.vectors.build_vector_index().await;
        progress.finish();
        Ok(status?)
    }

    /// How much of the vector table the index covers; `None` without an index.
    pub async fn vector_index_status(&self) -> Result<Option<VectorIndexStatus>, StoreError> {
        Ok(self.vectors.vector_index_status().await?)
    }

    /// Called at the end of every write, with the write lock held: builds the index
    /// once the table is large enough, or folds in rows written since. A failure is
    /// logged and the write still succeeds.
    pub(crate) async fn maintain_vector_index(&self, progress: &dyn Progress) {
        let settings = &self.config.vector_index;
        let decided = async {
            let rows = self.vectors.len().await?;
            let status = self.vectors.vector_index_status().await?;
            Ok::<_, StoreError>((
                rows,
                upkeep(
                    rows,
                    status,
                    settings.auto_build_rows,
                    settings.refresh_share,
                ),
            ))
        };
        let outcome = match decided.await {
            Ok((rows, IndexUpkeep::Build)) => {
                progress.start(
                    &format!(
                        "building the vector index (IVF-RQ) over {rows} rows \
                         (vector_index.auto_build_rows = {})",
                        settings.auto_build_rows
                    ),
                    None,
                );
                let built = self.vectors.build_vector_index().await.map(|_| ());
                progress.finish();
                built.map_err(StoreError::from)
            }
            Ok((_, IndexUpkeep::Refresh)) => {
                progress.start("adding new rows to the vector index", None);
                let refreshed = self.vectors.refresh_indexes().await;
                progress.finish();
                refreshed.map_err(StoreError::from)
            }
            Ok((_, IndexUpkeep::None)) => Ok(()),
            Err(e) => Err(e),
        };
        if let Err(e) = outcome {
            tracing::warn!(
                "vector index upkeep failed ({e}); searches stay correct, only slower; \
                 `kgfuse index vectors` rebuilds it"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::load_text;
    use kgfuse_core::config::StoreConfig;

    /// Turtle with `n` labelled things numbered from `from`.
    fn things(from: usize, n: usize) -> String {
        let mut ttl = String::from("@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n");
        for i in from..from + n {
            ttl.push_str(&format!(
                "<urn:thing:{i}> rdfs:label \"thing {i} of kind {}\" .\n",
                i % 7
            ));
        }
        ttl
    }

    #[tokio::test]
    async fn a_store_builds_its_index_at_the_threshold_and_folds_in_new_rows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = StoreConfig::new(kgfuse_core::config::EmbedderKind::Hash, 32);
        config.vector_index.auto_build_rows = 500;
        let store = Store::init(&dir.path().join("store"), config)
            .await
            .expect("init");
        // The kgfuse vocabulary the store carries from the start (73 rows today).
        let carried = store.stats().await.expect("stats").vector_rows;
        assert!(carried < 100, "{carried} rows before any load");
        load_text(&store, dir.path(), "a.ttl", &things(0, 400)).await;
        assert_eq!(store.stats().await.expect("stats").vector_index, None);
        load_text(&store, dir.path(), "b.ttl", &things(400, 200)).await;
        let built = store.stats().await.expect("stats").vector_index;
        assert_eq!(
            built,
            Some(VectorIndexStatus {
                index_type: "IVF_RQ".into(),
                indexed_rows: carried + 600,
                unindexed_rows: 0
            }),
            "built when the table reached 500 rows"
        );
        load_text(&store, dir.path(), "c.ttl", &things(600, 50)).await;
        let kept = store.stats().await.expect("stats").vector_index;
        assert_eq!(
            kept.map(|s| s.unindexed_rows),
            Some(50),
            "50 new rows are under the 10 % refresh share"
        );
        load_text(&store, dir.path(), "d.ttl", &things(650, 30)).await;
        let refreshed = store.stats().await.expect("stats").vector_index;
        assert_eq!(
            refreshed,
            Some(VectorIndexStatus {
                index_type: "IVF_RQ".into(),
                indexed_rows: carried + 680,
                unindexed_rows: 0
            }),
            "80 new rows passed the share: folded in"
        );
        let hits = store
            .search(
                &"thing 677 of kind 5".into(),
                1,
                kgfuse_vector::KindFilter::Any,
            )
            .await
            .expect("search");
        assert_eq!(hits[0].iri, "urn:thing:677");
        assert!(store.check().await.expect("check").is_ok());
        // Replacing a file rewrites and deletes rows through the indexed iri column.
        load_text(&store, dir.path(), "a.ttl", &things(0, 100)).await;
        assert_eq!(
            store.stats().await.expect("stats").vector_rows,
            carried + 380
        );
        assert!(store.check().await.expect("check").is_ok());
    }

    fn status(indexed_rows: usize, unindexed_rows: usize) -> Option<VectorIndexStatus> {
        Some(VectorIndexStatus {
            index_type: "IVF_PQ".into(),
            indexed_rows,
            unindexed_rows,
        })
    }

    #[test]
    fn builds_once_the_table_reaches_the_threshold() {
        assert_eq!(upkeep(49_999, None, 50_000, 0.1), IndexUpkeep::None);
        assert_eq!(upkeep(50_000, None, 50_000, 0.1), IndexUpkeep::Build);
        assert_eq!(
            upkeep(1_000_000, None, 0, 0.1),
            IndexUpkeep::None,
            "0 = never"
        );
        assert_eq!(
            upkeep(100, None, 10, 0.1),
            IndexUpkeep::None,
            "too few to train"
        );
        assert_eq!(upkeep(256, None, 10, 0.1), IndexUpkeep::Build);
    }

    #[test]
    fn refreshes_when_new_rows_pass_the_share() {
        assert_eq!(
            upkeep(60_000, status(60_000, 0), 50_000, 0.1),
            IndexUpkeep::None
        );
        assert_eq!(
            upkeep(66_000, status(60_000, 6_000), 50_000, 0.1),
            IndexUpkeep::None,
            "exactly the share"
        );
        assert_eq!(
            upkeep(66_001, status(60_000, 6_001), 50_000, 0.1),
            IndexUpkeep::Refresh
        );
        // A manually built index on a small table is kept up to date too.
        assert_eq!(
            upkeep(120, status(100, 20), 50_000, 0.1),
            IndexUpkeep::Refresh
        );
    }
}
