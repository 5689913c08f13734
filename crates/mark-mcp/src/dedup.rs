//! What this session already delivered, so that asking again for an
//! unchanged slice costs one line instead of the text. Pure logic: the
//! caller passes `now`; records expire after a TTL because clients compact
//! their context and may have lost what they read.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Which version of a document was read: the store's version and etag.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Identity {
    /// The version number, when the source has versions.
    pub version: Option<String>,
    /// The etag (SHA-256 of the stored bytes).
    pub etag: Option<String>,
}

impl Identity {
    /// How to name this read to the agent: `v3`, or a short etag.
    pub fn label(&self) -> String {
        match (&self.version, &self.etag) {
            (Some(v), _) => format!("v{v}"),
            (None, Some(e)) => format!("etag {}", e.get(..12).unwrap_or(e)),
            (None, None) => "the earlier read".to_string(),
        }
    }

    /// The step from `self` to `newer`: `v3 -> v5`, or by etag when the
    /// versions do not tell them apart (a flat folder is always v1).
    pub fn step_to(&self, newer: &Identity) -> String {
        if self.version.is_some() && self.version != newer.version {
            return format!("{} -> {}", self.label(), newer.label());
        }
        let etag = |i: &Identity| {
            Identity {
                version: None,
                etag: i.etag.clone(),
            }
            .label()
        };
        format!("{} -> {}", etag(self), etag(newer))
    }

    fn is_known(&self) -> bool {
        self.version.is_some() || self.etag.is_some()
    }

    /// Whether two reads provably saw the same bytes (never without identity).
    fn same_as(&self, other: &Identity) -> bool {
        self.is_known() && self == other
    }

    /// Whether two reads provably saw different bytes (never without identity).
    fn differs_from(&self, other: &Identity) -> bool {
        self.is_known() && other.is_known() && self != other
    }
}

/// A part of a document that can be delivered.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Slice {
    /// The whole body.
    Body,
    /// One section, by anchor.
    Section(String),
}

/// The BLAKE3 digest of a derived answer (an explore card or page, a
/// lookup's table): what the agent was sent, whatever document it came from.
type TextDigest = [u8; 32];

/// What to do with a requested slice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision<H> {
    /// Deliver the text. `changed_from` holds the identity and snapshot of
    /// the last delivery of this document when it has changed since.
    Deliver {
        /// The earlier identity and its snapshot (e.g. section hashes).
        changed_from: Option<(Identity, H)>,
    },
    /// The same slice of the same version was delivered within the TTL.
    Unchanged {
        /// The identity the agent already has.
        since: Identity,
    },
}

#[derive(Debug)]
struct DocRecord<H> {
    last: Identity,
    snapshot: H,
    at: Instant,
    slices: HashMap<Slice, (Identity, Instant)>,
}

/// The delivery log of one session. `H` is the snapshot kept per document
/// to say what changed (section hashes in practice).
#[derive(Debug)]
pub struct DeliveryLog<H> {
    docs: HashMap<String, DocRecord<H>>,
    texts: HashMap<TextDigest, Instant>,
    ttl: Duration,
}

impl<H: Clone> DeliveryLog<H> {
    /// An empty log whose records live for `ttl`.
    pub fn new(ttl: Duration) -> DeliveryLog<H> {
        DeliveryLog {
            docs: HashMap::new(),
            texts: HashMap::new(),
            ttl,
        }
    }

    fn expire(&mut self, now: Instant) {
        let ttl = self.ttl;
        let alive = |at: Instant| now.saturating_duration_since(at) < ttl;
        self.docs.retain(|_, doc| {
            doc.slices.retain(|_, (_, at)| alive(*at));
            alive(doc.at)
        });
        self.texts.retain(|_, at| alive(*at));
    }

    /// Whether the derived answer made of `parts` is to be sent: not when
    /// the same parts were sent within the TTL (unless `force`). Sending it
    /// is recorded by a digest of the parts. The caller adds as parts
    /// whatever must make two answers differ beyond their text (the version
    /// a card describes).
    pub fn send_text(&mut self, parts: &[&str], force: bool, now: Instant) -> bool {
        let mut hasher = blake3::Hasher::new();
        for part in parts {
            hasher.update(part.as_bytes());
            hasher.update(b"\0");
        }
        let digest: TextDigest = *hasher.finalize().as_bytes();
        self.expire(now);
        let seen = self.texts.insert(digest, now).is_some();
        force || !seen
    }

    /// Forgets every delivery: the client dropped what it held (a compaction
    /// or a clear in Claude Code; see [`crate::hook`]).
    pub fn forget_all(&mut self) {
        self.docs.clear();
        self.texts.clear();
    }

    /// Decides whether to deliver `slice` of `path` as it is now (`current`).
    /// `force` always delivers (with the change note when there is one).
    pub fn check(
        &mut self,
        path: &str,
        slice: &Slice,
        current: &Identity,
        force: bool,
        now: Instant,
    ) -> Decision<H> {
        self.expire(now);
        let Some(doc) = self.docs.get(path) else {
            return Decision::Deliver { changed_from: None };
        };
        if !force
            && let Some((seen, _)) = doc.slices.get(slice)
            && seen.same_as(current)
        {
            return Decision::Unchanged {
                since: seen.clone(),
            };
        }
        let changed_from = doc
            .last
            .differs_from(current)
            .then(|| (doc.last.clone(), doc.snapshot.clone()));
        Decision::Deliver { changed_from }
    }

    /// Records that the agent now has `current` of `path`: the `slice` when
    /// text was delivered, or only the document's identity (`None`) when it
    /// saw an outline (outlines are never deduplicated, but the change was
    /// reported).
    pub fn record(
        &mut self,
        path: &str,
        slice: Option<Slice>,
        current: &Identity,
        snapshot: H,
        now: Instant,
    ) {
        self.expire(now);
        let doc = self
            .docs
            .entry(path.to_string())
            .or_insert_with(|| DocRecord {
                last: current.clone(),
                snapshot: snapshot.clone(),
                at: now,
                slices: HashMap::new(),
            });
        doc.last = current.clone();
        doc.snapshot = snapshot;
        doc.at = now;
        if let Some(slice) = slice {
            doc.slices.insert(slice, (current.clone(), now));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(v: &str) -> Identity {
        Identity {
            version: Some(v.into()),
            etag: Some(format!("etag{v}")),
        }
    }

    const TTL: Duration = Duration::from_secs(1800);

    #[test]
    fn second_read_of_the_same_slice_is_unchanged() {
        let t0 = Instant::now();
        let mut log = DeliveryLog::new(TTL);
        assert_eq!(
            log.check("/a.md", &Slice::Body, &id("3"), false, t0),
            Decision::Deliver { changed_from: None }
        );
        log.record("/a.md", Some(Slice::Body), &id("3"), "h3", t0);
        assert_eq!(
            log.check("/a.md", &Slice::Body, &id("3"), false, t0),
            Decision::Unchanged { since: id("3") }
        );
        assert_eq!(id("3").label(), "v3");
        assert_eq!(id("3").step_to(&id("5")), "v3 -> v5");
        let flat = |e: &str| Identity {
            version: Some("1".into()),
            etag: Some(e.into()),
        };
        assert_eq!(
            flat("aaaa").step_to(&flat("bbbb")),
            "etag aaaa -> etag bbbb"
        );
    }

    #[test]
    fn force_delivers_and_other_slices_still_come() {
        let t0 = Instant::now();
        let mut log = DeliveryLog::new(TTL);
        log.record("/a.md", Some(Slice::Body), &id("3"), "h3", t0);
        assert_eq!(
            log.check("/a.md", &Slice::Body, &id("3"), true, t0),
            Decision::Deliver { changed_from: None }
        );
        let sec = Slice::Section("intro".into());
        assert_eq!(
            log.check("/a.md", &sec, &id("3"), false, t0),
            Decision::Deliver { changed_from: None }
        );
    }

    #[test]
    fn a_changed_document_reports_the_earlier_identity_once() {
        let t0 = Instant::now();
        let mut log = DeliveryLog::new(TTL);
        log.record("/a.md", Some(Slice::Body), &id("3"), "h3", t0);
        assert_eq!(
            log.check("/a.md", &Slice::Body, &id("5"), false, t0),
            Decision::Deliver {
                changed_from: Some((id("3"), "h3"))
            }
        );
        log.record("/a.md", Some(Slice::Body), &id("5"), "h5", t0);
        assert_eq!(
            log.check("/a.md", &Slice::Body, &id("5"), false, t0),
            Decision::Unchanged { since: id("5") }
        );
        // A section last read at v3: delivered, the change was already reported.
        let sec = Slice::Section("intro".into());
        assert_eq!(
            log.check("/a.md", &sec, &id("5"), false, t0),
            Decision::Deliver { changed_from: None }
        );
    }

    #[test]
    fn an_outline_view_records_the_identity_but_no_slice() {
        let t0 = Instant::now();
        let mut log = DeliveryLog::new(TTL);
        log.record("/a.md", None, &id("1"), "h1", t0);
        assert_eq!(
            log.check("/a.md", &Slice::Body, &id("1"), false, t0),
            Decision::Deliver { changed_from: None }
        );
    }

    #[test]
    fn records_expire_after_the_ttl() {
        let t0 = Instant::now();
        let mut log = DeliveryLog::new(TTL);
        log.record("/a.md", Some(Slice::Body), &id("3"), "h3", t0);
        let later = t0 + TTL;
        assert_eq!(
            log.check("/a.md", &Slice::Body, &id("3"), false, later),
            Decision::Deliver { changed_from: None }
        );
        assert!(log.docs.is_empty());
    }

    #[test]
    fn a_derived_text_is_sent_once_per_ttl_unless_forced() {
        let t0 = Instant::now();
        let mut log: DeliveryLog<()> = DeliveryLog::new(TTL);
        let (a, b): (&[&str], &[&str]) = (&["v1", "card"], &["v2", "card"]);
        assert!(log.send_text(a, false, t0));
        assert!(!log.send_text(a, false, t0));
        assert!(
            log.send_text(b, false, t0),
            "another version, the same text"
        );
        assert!(log.send_text(&["v1card"], false, t0), "parts stay apart");
        assert!(log.send_text(a, true, t0));
        // Each sending renews the record; it lapses a TTL after the last.
        assert!(!log.send_text(a, false, t0 + TTL / 2));
        assert!(log.send_text(a, false, t0 + TTL / 2 + TTL));
    }

    #[test]
    fn without_identity_nothing_is_unchanged() {
        let t0 = Instant::now();
        let mut log = DeliveryLog::new(TTL);
        let none = Identity::default();
        log.record("/a.md", Some(Slice::Body), &none, (), t0);
        assert_eq!(
            log.check("/a.md", &Slice::Body, &none, false, t0),
            Decision::Deliver { changed_from: None }
        );
    }
}
