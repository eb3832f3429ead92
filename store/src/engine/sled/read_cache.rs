//! In-memory copies of the records read on every document (company,
//! software, resolutions, certificate): decoding them from sled each time
//! costs more than the rest of the request's store work. All writes to them
//! go through this process's store (the data dir is locked), which clears
//! the cache; a generation number keeps a read that raced a write from
//! putting the old value back.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, PoisonError};

use crate::error::StoreResult;

pub(crate) struct ReadCache<K, V> {
    inner: Mutex<(u64, HashMap<K, V>)>,
}

impl<K, V> Default for ReadCache<K, V> {
    fn default() -> Self {
        ReadCache {
            inner: Mutex::new((0, HashMap::new())),
        }
    }
}

impl<K: Hash + Eq + Copy, V: Clone> ReadCache<K, V> {
    /// The cached value, or `load`'s (cached when it found one).
    pub(crate) fn get_or_load(
        &self,
        key: K,
        load: impl FnOnce() -> StoreResult<Option<V>>,
    ) -> StoreResult<Option<V>> {
        let generation = {
            let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(v) = inner.1.get(&key) {
                return Ok(Some(v.clone()));
            }
            inner.0
        };
        let loaded = load()?;
        if let Some(v) = &loaded {
            let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            if inner.0 == generation {
                inner.1.insert(key, v.clone());
            }
        }
        Ok(loaded)
    }

    /// The cached value, without loading it on a miss.
    pub(crate) fn peek(&self, key: K) -> Option<V> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.1.get(&key).cloned()
    }

    /// Forgets everything; called after every write to the cached trees.
    pub(crate) fn clear(&self) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.0 += 1;
        inner.1.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_that_raced_a_write_is_not_cached() {
        let cache: ReadCache<u8, &str> = ReadCache::default();
        // The write lands (and clears) while the load is in progress.
        let v = cache
            .get_or_load(1, || {
                cache.clear();
                Ok(Some("old"))
            })
            .unwrap();
        assert_eq!(v, Some("old"));
        assert_eq!(
            cache.get_or_load(1, || Ok(Some("new"))).unwrap(),
            Some("new")
        );
        // Now cached: the loader is not called.
        assert_eq!(
            cache.get_or_load(1, || panic!("loaded again")).unwrap(),
            Some("new")
        );
    }
}
