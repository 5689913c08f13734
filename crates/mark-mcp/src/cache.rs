//! The session cache: recently read documents, least recently used first
//! out, bounded by their total weight in bytes, with the time each was
//! last validated against the source. Pure logic: the caller passes `now`
//! and the weight of each value (for a document: its body and parsed parts).

use lru::LruCache;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One cached value with its weight and validation time.
#[derive(Debug)]
struct Slot<T> {
    value: Arc<T>,
    bytes: usize,
    validated_at: Instant,
}

/// An LRU map from document path to a cached value, bounded by bytes.
#[derive(Debug)]
pub struct SessionCache<T> {
    entries: LruCache<String, Slot<T>>,
    max_bytes: usize,
    used: usize,
}

impl<T> SessionCache<T> {
    /// An empty cache that holds at most `max_bytes` of bodies.
    pub fn new(max_bytes: usize) -> SessionCache<T> {
        SessionCache {
            entries: LruCache::unbounded(),
            max_bytes,
            used: 0,
        }
    }

    /// Total bytes of the values held now.
    pub fn bytes_used(&self) -> usize {
        self.used
    }

    /// Number of values held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value for `path` and whether it was validated within `fresh_for`
    /// of `now` (a fresh value needs no request). Marks it recently used.
    pub fn get(&mut self, path: &str, now: Instant, fresh_for: Duration) -> Option<(Arc<T>, bool)> {
        let slot = self.entries.get(path)?;
        let fresh = now.saturating_duration_since(slot.validated_at) < fresh_for;
        Some((Arc::clone(&slot.value), fresh))
    }

    /// Records that the source confirmed the value for `path` at `now`
    /// (a `not-modified` answer).
    pub fn mark_validated(&mut self, path: &str, now: Instant) {
        if let Some(slot) = self.entries.get_mut(path) {
            slot.validated_at = now;
        }
    }

    /// Stores a value weighing `bytes`, validated at `now`, evicting the least
    /// recently used values until the total fits. A value larger than the
    /// whole cache is not kept. Returns the value for the caller to use.
    pub fn insert(&mut self, path: &str, value: T, bytes: usize, now: Instant) -> Arc<T> {
        let value = Arc::new(value);
        self.remove(path);
        if bytes > self.max_bytes {
            return value;
        }
        while self.used + bytes > self.max_bytes {
            match self.entries.pop_lru() {
                Some((_, old)) => self.used -= old.bytes,
                None => break,
            }
        }
        self.used += bytes;
        self.entries.put(
            path.to_string(),
            Slot {
                value: Arc::clone(&value),
                bytes,
                validated_at: now,
            },
        );
        value
    }

    /// Forgets `path` (after a write through this session).
    pub fn remove(&mut self, path: &str) {
        if let Some(old) = self.entries.pop(path) {
            self.used -= old.bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRESH: Duration = Duration::from_secs(5);

    #[test]
    fn freshness_follows_the_validation_time() {
        let t0 = Instant::now();
        let mut c = SessionCache::new(100);
        c.insert("/a.md", "a", 10, t0);
        assert_eq!(
            c.get("/a.md", t0 + Duration::from_secs(4), FRESH)
                .map(|x| x.1),
            Some(true)
        );
        assert_eq!(
            c.get("/a.md", t0 + Duration::from_secs(5), FRESH)
                .map(|x| x.1),
            Some(false)
        );
        c.mark_validated("/a.md", t0 + Duration::from_secs(6));
        assert_eq!(
            c.get("/a.md", t0 + Duration::from_secs(7), FRESH)
                .map(|x| x.1),
            Some(true)
        );
        assert_eq!(c.get("/a.md", t0, Duration::ZERO).map(|x| x.1), Some(false));
    }

    #[test]
    fn evicts_least_recently_used_by_bytes() {
        let t0 = Instant::now();
        let mut c = SessionCache::new(100);
        c.insert("/a.md", 1, 40, t0);
        c.insert("/b.md", 2, 40, t0);
        assert!(c.get("/a.md", t0, FRESH).is_some()); // a is now the most recent
        c.insert("/c.md", 3, 40, t0);
        assert!(c.get("/b.md", t0, FRESH).is_none());
        assert_eq!(c.bytes_used(), 80);
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn replacing_and_removing_keep_the_accounting() {
        let t0 = Instant::now();
        let mut c = SessionCache::new(100);
        c.insert("/a.md", 1, 40, t0);
        c.insert("/a.md", 2, 30, t0);
        assert_eq!(c.bytes_used(), 30);
        c.remove("/a.md");
        assert_eq!(c.bytes_used(), 0);
        assert!(c.is_empty());
    }

    #[test]
    fn a_value_larger_than_the_cache_is_not_kept() {
        let t0 = Instant::now();
        let mut c = SessionCache::new(100);
        c.insert("/a.md", 1, 60, t0);
        let v = c.insert("/huge.md", 2, 101, t0);
        assert_eq!(*v, 2);
        assert!(c.get("/huge.md", t0, FRESH).is_none());
        assert_eq!(c.bytes_used(), 60);
    }
}
