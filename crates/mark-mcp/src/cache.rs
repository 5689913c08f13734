//! The session cache: recently read documents, least recently used first
//! out, bounded by their total weight in bytes, each with the [`Stamp`] of
//! the answer that brought or last confirmed it. Answers can arrive out of
//! order (two loads in flight at once): an insert keeps the newer of the
//! held and the offered value ([`Stamp::supersedes`]), and a stale
//! `not-found` removes only what is not newer. An answer to a request sent
//! before the path was forgotten (a write through this session) is never
//! kept: each request takes a [`Ticket`] before it goes out, and
//! [`SessionCache::forget`] makes every earlier ticket for that path stale.
//! Pure logic: the caller passes the times and the weight of each value
//! (for a document: its body and parsed parts).

use lru::LruCache;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Taken before a request goes out; its answer may change the cache only
/// while the ticket is current (the path not forgotten since).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ticket(u64);

/// Paths whose last forget is remembered one by one; past it the oldest
/// are dropped and every ticket older than them is stale for all paths (a
/// refused insert only costs a request again).
const FORGOTTEN_PATHS: usize = 4096;

/// When and as what the source vouched for a value: the answer's version
/// (when the source numbers them), when its request was sent and when the
/// answer came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// The version the answer named (`None`: unversioned, or not a number).
    pub version: Option<u64>,
    /// When the request went out: freshness counts from here.
    pub asked: Instant,
    /// When the answer came.
    pub answered: Instant,
}

impl Stamp {
    /// A stamp for an answer to a request sent at `asked` that came at
    /// `answered`, naming `version` (`"3"`; anything else counts as none).
    pub fn new(version: Option<&str>, asked: Instant, answered: Instant) -> Stamp {
        Stamp {
            version: version.and_then(|v| v.trim().parse().ok()),
            asked,
            answered: answered.max(asked),
        }
    }

    /// Whether an answer stamped `self` replaces one stamped `held` (newer
    /// wins). Asked after `held` was answered, it is a later look at the
    /// source, whatever its version (a document can be made anew). The two
    /// requests overlapped otherwise: the higher version wins, and with the
    /// same version or none (a plain folder's is always 1) the one asked
    /// later; a tie goes to the newcomer.
    pub fn supersedes(&self, held: &Stamp) -> bool {
        if self.asked >= held.answered {
            return true;
        }
        match (self.version, held.version) {
            (Some(new), Some(old)) if new != old => new > old,
            _ => self.asked >= held.asked,
        }
    }
}

/// One cached value with its weight and stamp.
#[derive(Debug)]
struct Slot<T> {
    value: Arc<T>,
    bytes: usize,
    stamp: Stamp,
}

/// An LRU map from document path to a cached value, bounded by bytes.
#[derive(Debug)]
pub struct SessionCache<T> {
    entries: LruCache<String, Slot<T>>,
    max_bytes: usize,
    used: usize,
    /// Forgets so far: a ticket is this count when it was taken.
    forgets: u64,
    /// The count at each path's last forget, the oldest first in `order`.
    forgotten: HashMap<String, u64>,
    order: VecDeque<(String, u64)>,
    /// Tickets below it are stale for every path (forgets no longer
    /// remembered one by one).
    floor: u64,
}

impl<T> SessionCache<T> {
    /// An empty cache that holds at most `max_bytes` of bodies.
    pub fn new(max_bytes: usize) -> SessionCache<T> {
        SessionCache {
            entries: LruCache::unbounded(),
            max_bytes,
            used: 0,
            forgets: 0,
            forgotten: HashMap::new(),
            order: VecDeque::new(),
            floor: 0,
        }
    }

    /// A ticket for a request about to go out.
    pub fn ticket(&self) -> Ticket {
        Ticket(self.forgets)
    }

    /// Whether an answer asked with `ticket` may still change `path`'s
    /// entry: the path was not forgotten since the ticket was taken.
    pub fn is_current(&self, path: &str, ticket: Ticket) -> bool {
        ticket.0 >= self.floor && self.forgotten.get(path).is_none_or(|&at| at <= ticket.0)
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
        self.get_watched(path, now, fresh_for, None)
    }

    /// [`SessionCache::get`], where a value asked at or after `watched_since`
    /// (a healthy change feed's start) is also fresh: the feed forgets the
    /// path when it changes, so what is still held is current.
    pub fn get_watched(
        &mut self,
        path: &str,
        now: Instant,
        fresh_for: Duration,
        watched_since: Option<Instant>,
    ) -> Option<(Arc<T>, bool)> {
        let slot = self.entries.get(path)?;
        let fresh = now.saturating_duration_since(slot.stamp.asked) < fresh_for
            || watched_since.is_some_and(|since| slot.stamp.asked >= since);
        Some((Arc::clone(&slot.value), fresh))
    }

    /// Stores a value weighing `bytes` that an answer stamped `stamp`,
    /// asked with `ticket`, brought (or confirmed: the same value again),
    /// unless the value held for `path` is newer; evicts the least recently
    /// used values until the total fits. Returns the value that won, for
    /// the caller to use. Not kept: a value larger than the whole cache, and
    /// one whose ticket is stale (asked before `path` was forgotten: it may
    /// predate a write).
    pub fn insert(
        &mut self,
        path: &str,
        value: Arc<T>,
        bytes: usize,
        stamp: Stamp,
        ticket: Ticket,
    ) -> Arc<T> {
        if !self.is_current(path, ticket) {
            return value;
        }
        if let Some(held) = self.entries.peek(path)
            && !stamp.supersedes(&held.stamp)
        {
            return Arc::clone(&held.value);
        }
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
                stamp,
            },
        );
        value
    }

    /// Drops `path`'s value (it is gone, or failed).
    pub fn remove(&mut self, path: &str) {
        if let Some(old) = self.entries.pop(path) {
            self.used -= old.bytes;
        }
    }

    /// Drops `path`'s value on an answer stamped `stamp`, asked with
    /// `ticket`, that says it is gone, unless the value held is newer or the
    /// ticket is stale (a stale `not-found` never evicts a newer document).
    /// Returns whether the answer counted.
    pub fn remove_older(&mut self, path: &str, stamp: Stamp, ticket: Ticket) -> bool {
        let newer_held = self
            .entries
            .peek(path)
            .is_some_and(|held| !stamp.supersedes(&held.stamp));
        if newer_held || !self.is_current(path, ticket) {
            return false;
        }
        self.remove(path);
        true
    }

    /// Forgets `path` after a write through this session: its value goes,
    /// and no answer to a request asked before now may bring one back.
    pub fn forget(&mut self, path: &str) {
        self.remove(path);
        self.forgets += 1;
        self.forgotten.insert(path.to_string(), self.forgets);
        self.order.push_back((path.to_string(), self.forgets));
        while self.order.len() > FORGOTTEN_PATHS {
            let Some((oldest, at)) = self.order.pop_front() else {
                break;
            };
            if self.forgotten.get(&oldest) == Some(&at) {
                self.forgotten.remove(&oldest);
            }
            self.floor = self.floor.max(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRESH: Duration = Duration::from_secs(5);

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    /// An answer to a request sent at `asked` that came at once.
    fn at(asked: Instant) -> Stamp {
        Stamp::new(None, asked, asked)
    }

    #[test]
    fn freshness_follows_the_validation_time() {
        let t0 = Instant::now();
        let mut c = SessionCache::new(100);
        let a = c.insert("/a.md", Arc::new("a"), 10, at(t0), c.ticket());
        assert_eq!(c.get("/a.md", t0 + secs(4), FRESH).map(|x| x.1), Some(true));
        assert_eq!(
            c.get("/a.md", t0 + secs(5), FRESH).map(|x| x.1),
            Some(false)
        );
        // Confirmed again (a `not-modified`): the same value, a later stamp.
        c.insert("/a.md", a, 10, at(t0 + secs(6)), c.ticket());
        assert_eq!(c.get("/a.md", t0 + secs(7), FRESH).map(|x| x.1), Some(true));
        assert_eq!(c.get("/a.md", t0, Duration::ZERO).map(|x| x.1), Some(false));
    }

    #[test]
    fn an_older_answer_never_replaces_a_newer_one() {
        let t0 = Instant::now();
        let mut c = SessionCache::new(100);
        // Two loads in flight: the one asked at t0 answers after the one
        // asked at t1 (a plain folder: both say version 1).
        let newer = Stamp::new(Some("1"), t0 + secs(1), t0 + secs(2));
        let older = Stamp::new(Some("1"), t0, t0 + secs(3));
        c.insert("/a.md", Arc::new("new"), 10, newer, c.ticket());
        let won = c.insert("/a.md", Arc::new("old"), 10, older, c.ticket());
        assert_eq!(*won, "new");
        assert_eq!(c.get("/a.md", t0, FRESH).map(|x| *x.0), Some("new"));
        // A versioned store: the higher version wins over a later request.
        let v3 = Stamp::new(Some("3"), t0, t0 + secs(5));
        let v2 = Stamp::new(Some("2"), t0 + secs(1), t0 + secs(6));
        c.insert("/b.md", Arc::new("v3"), 10, v3, c.ticket());
        assert_eq!(*c.insert("/b.md", Arc::new("v2"), 10, v2, c.ticket()), "v3");
        // Asked after the held answer came, an answer is simply later: a
        // document made anew starts at version 1 again.
        let anew = Stamp::new(Some("1"), t0 + secs(7), t0 + secs(7));
        assert_eq!(
            *c.insert("/b.md", Arc::new("v1"), 10, anew, c.ticket()),
            "v1"
        );
        assert_eq!(c.bytes_used(), 20);
    }

    #[test]
    fn an_answer_asked_before_a_forget_is_never_kept() {
        let t0 = Instant::now();
        let mut c = SessionCache::new(100);
        c.insert("/a.md", Arc::new("v1"), 10, at(t0), c.ticket());
        // A load asks (ticket), then a write forgets the path, then the
        // load's answer (the text before the write) comes.
        let before = c.ticket();
        c.forget("/a.md");
        assert!(c.get("/a.md", t0, FRESH).is_none());
        let late = c.insert("/a.md", Arc::new("v1"), 10, at(t0 + secs(1)), before);
        assert_eq!(*late, "v1", "the caller still gets its answer");
        assert!(c.get("/a.md", t0, FRESH).is_none(), "but it is not kept");
        assert!(!c.remove_older("/a.md", at(t0 + secs(1)), before));
        // Other paths, and requests asked after the forget, are kept.
        c.insert("/b.md", Arc::new("b"), 10, at(t0), before);
        assert!(c.get("/b.md", t0, FRESH).is_some());
        let after = c.ticket();
        c.insert("/a.md", Arc::new("v2"), 10, at(t0 + secs(2)), after);
        assert_eq!(c.get("/a.md", t0, FRESH).map(|x| *x.0), Some("v2"));
        assert_eq!(c.bytes_used(), 20);
    }

    #[test]
    fn a_stale_not_found_never_removes_a_newer_value() {
        let t0 = Instant::now();
        let mut c = SessionCache::new(100);
        // A not-found asked at t0 comes after a document asked at t1.
        let newer = Stamp::new(Some("1"), t0 + secs(1), t0 + secs(2));
        let stale = Stamp::new(Some("1"), t0, t0 + secs(3));
        c.insert("/a.md", Arc::new("doc"), 10, newer, c.ticket());
        assert!(!c.remove_older("/a.md", stale, c.ticket()));
        assert_eq!(c.get("/a.md", t0, FRESH).map(|x| *x.0), Some("doc"));
        // A not-found asked after the document came removes it.
        let later = Stamp::new(Some("1"), t0 + secs(4), t0 + secs(4));
        assert!(c.remove_older("/a.md", later, c.ticket()));
        assert!(c.is_empty());
    }

    #[test]
    fn forgets_past_the_bound_make_every_older_ticket_stale() {
        let t0 = Instant::now();
        let mut c = SessionCache::new(1000);
        let old = c.ticket();
        for i in 0..=FORGOTTEN_PATHS {
            c.forget(&format!("/f{i}.md"));
        }
        assert_eq!(c.forgotten.len(), FORGOTTEN_PATHS);
        c.insert("/other.md", Arc::new(1), 10, at(t0), old);
        assert!(c.get("/other.md", t0, FRESH).is_none(), "too old to tell");
        c.insert("/other.md", Arc::new(1), 10, at(t0), c.ticket());
        assert!(c.get("/other.md", t0, FRESH).is_some());
    }

    #[test]
    fn evicts_least_recently_used_by_bytes() {
        let t0 = Instant::now();
        let mut c = SessionCache::new(100);
        c.insert("/a.md", Arc::new(1), 40, at(t0), c.ticket());
        c.insert("/b.md", Arc::new(2), 40, at(t0), c.ticket());
        assert!(c.get("/a.md", t0, FRESH).is_some()); // a is now the most recent
        c.insert("/c.md", Arc::new(3), 40, at(t0), c.ticket());
        assert!(c.get("/b.md", t0, FRESH).is_none());
        assert_eq!(c.bytes_used(), 80);
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn replacing_and_removing_keep_the_accounting() {
        let t0 = Instant::now();
        let mut c = SessionCache::new(100);
        c.insert("/a.md", Arc::new(1), 40, at(t0), c.ticket());
        c.insert("/a.md", Arc::new(2), 30, at(t0), c.ticket());
        assert_eq!(c.bytes_used(), 30);
        c.remove("/a.md");
        assert_eq!(c.bytes_used(), 0);
        assert!(c.is_empty());
    }

    #[test]
    fn a_value_larger_than_the_cache_is_not_kept() {
        let t0 = Instant::now();
        let mut c = SessionCache::new(100);
        c.insert("/a.md", Arc::new(1), 60, at(t0), c.ticket());
        let v = c.insert("/huge.md", Arc::new(2), 101, at(t0), c.ticket());
        assert_eq!(*v, 2);
        assert!(c.get("/huge.md", t0, FRESH).is_none());
        assert_eq!(c.bytes_used(), 60);
    }
}
