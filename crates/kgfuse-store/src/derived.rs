//! Values computed from the whole store (the data-flow graph of the `paths`
//! strategy, say), kept until the next write. A long-running process (a server, a
//! benchmark) then pays for them once per write instead of once per question.
//! Each is kept under its type: one value of a [`WholeStore`] type per store.

use kgfuse_core::memory::resident_mib;
use std::any::{Any, TypeId, type_name};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// A value computed from the whole store: the store keeps one of each such type
/// ([`crate::Store::derived`]), so a type names what it holds (a newtype, not
/// a bare map that another use could share).
pub trait WholeStore: Any + Send + Sync {}

type Values = HashMap<TypeId, Arc<dyn Any + Send + Sync>>;

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

    /// The kept value of type `T`, built by `build` if absent.
    pub(crate) fn get_or_build<T: WholeStore, E>(
        &self,
        build: impl FnOnce() -> Result<T, E>,
    ) -> Result<Arc<T>, E> {
        if let Some(value) = self.get::<T>() {
            return Ok(value);
        }
        let generation = self.generation();
        let (started, before) = (std::time::Instant::now(), resident_mib());
        let value = Arc::new(build()?);
        let after = resident_mib();
        tracing::debug!(
            value = type_name::<T>(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            resident_mib = after.round(),
            grew_mib = (after - before).round(),
            "whole-store value built"
        );
        self.keep(generation, Arc::clone(&value));
        Ok(value)
    }

    /// The kept value of type `T`, if there is one.
    pub(crate) fn get<T: WholeStore>(&self) -> Option<Arc<T>> {
        let value = self
            .values
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&TypeId::of::<T>())
            .cloned()?;
        value.downcast::<T>().ok()
    }

    /// Which writes have started so far; a value built from what the store held
    /// then is passed to [`Derived::keep`] with it.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Keeps `value`, unless a write has started since `generation` (the value
    /// may then describe a store that is no more).
    pub(crate) fn keep<T: WholeStore>(&self, generation: u64, value: Arc<T>) {
        let mut values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
        if self.generation() == generation {
            values.insert(TypeId::of::<T>(), value as Arc<dyn Any + Send + Sync>);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Builds(u32);
    impl WholeStore for Builds {}
    #[derive(Debug, PartialEq)]
    struct Other(u32);
    impl WholeStore for Other {}

    #[test]
    fn values_live_until_the_next_write() {
        let derived = Derived::default();
        let mut builds = 0;
        let mut get = |d: &Derived| {
            d.get_or_build(|| {
                builds += 1;
                Ok::<_, ()>(Builds(builds))
            })
            .map(|v| v.0)
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
        derived.keep(before, Arc::new(Builds(1)));
        assert!(derived.get::<Builds>().is_none());
        derived.keep(derived.generation(), Arc::new(Builds(2)));
        assert_eq!(derived.get::<Builds>().as_deref(), Some(&Builds(2)));
        assert!(derived.get::<Other>().is_none(), "another type");
    }
}
