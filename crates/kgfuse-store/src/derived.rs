//! Values computed from the whole store (the data-flow graph of the `paths`
//! strategy, say), kept until the next write. A long-running process (a server, a
//! benchmark) then pays for them once per write instead of once per question.

use kgfuse_core::memory::resident_mib;
use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

type Values = HashMap<&'static str, Arc<dyn Any + Send + Sync>>;

/// The cache; clones share it.
#[derive(Clone, Default)]
pub(crate) struct Derived {
    values: Arc<Mutex<Values>>,
    /// Bumped when a write starts and when it ends, so a value built while a write
    /// was under way is never kept.
    generation: Arc<AtomicU64>,
    /// The graph's count of changes made elsewhere when last looked at.
    changes_seen: Arc<AtomicU64>,
}

/// Clears the cache when created and again when dropped (the end of a write,
/// including an early return on error).
pub(crate) struct WriteScope(Derived);

impl Drop for WriteScope {
    fn drop(&mut self) {
        self.0.clear();
    }
}

impl Derived {
    fn clear(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.values
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Clears the cache when the graph has changed elsewhere (another process
    /// writing to the same SPARQL server) since it was last looked at.
    pub(crate) fn follow(&self, changes_elsewhere: u64) {
        let seen = self.changes_seen.swap(changes_elsewhere, Ordering::SeqCst);
        if seen != changes_elsewhere {
            self.clear();
        }
    }

    /// Call at the start of every write; keep the scope until the write is done.
    pub(crate) fn write_scope(&self) -> WriteScope {
        self.clear();
        WriteScope(self.clone())
    }

    /// The value under `key`, built by `build` if absent (or of another type).
    pub(crate) fn get_or_build<T, E>(
        &self,
        key: &'static str,
        build: impl FnOnce() -> Result<T, E>,
    ) -> Result<Arc<T>, E>
    where
        T: Any + Send + Sync,
    {
        if let Some(value) = self.get(key) {
            return Ok(value);
        }
        let generation = self.generation();
        let (started, before) = (std::time::Instant::now(), resident_mib());
        let value = Arc::new(build()?);
        let after = resident_mib();
        tracing::debug!(
            key,
            elapsed_ms = started.elapsed().as_millis() as u64,
            resident_mib = after.round(),
            grew_mib = (after - before).round(),
            "whole-store value built"
        );
        self.keep(key, generation, Arc::clone(&value));
        Ok(value)
    }

    /// The value under `key`, if one of type `T` is kept.
    pub(crate) fn get<T: Any + Send + Sync>(&self, key: &'static str) -> Option<Arc<T>> {
        let value = self
            .values
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()?;
        value.downcast::<T>().ok()
    }

    /// Which writes have started so far; a value built from what the store held
    /// then is passed to [`Derived::keep`] with it.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Keeps `value` under `key`, unless a write has started since `generation`
    /// (the value may then describe a store that is no more).
    pub(crate) fn keep<T: Any + Send + Sync>(
        &self,
        key: &'static str,
        generation: u64,
        value: Arc<T>,
    ) {
        let mut values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
        if self.generation() == generation {
            values.insert(key, value as Arc<dyn Any + Send + Sync>);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_live_until_the_next_write() {
        let derived = Derived::default();
        let mut builds = 0;
        let mut get = |d: &Derived| {
            d.get_or_build("k", || {
                builds += 1;
                Ok::<_, ()>(builds)
            })
            .map(|v| *v)
        };
        assert_eq!(get(&derived), Ok(1));
        assert_eq!(get(&derived), Ok(1));
        {
            let _write = derived.write_scope();
        }
        assert_eq!(get(&derived), Ok(2));
    }

    #[test]
    fn a_value_built_across_a_write_is_not_kept() {
        let derived = Derived::default();
        let before = derived.generation();
        {
            let _write = derived.write_scope();
        }
        derived.keep("k", before, Arc::new(1u32));
        assert!(derived.get::<u32>("k").is_none());
        derived.keep("k", derived.generation(), Arc::new(2u32));
        assert_eq!(derived.get::<u32>("k").as_deref(), Some(&2));
        assert!(derived.get::<u64>("k").is_none(), "another type");
    }
}
