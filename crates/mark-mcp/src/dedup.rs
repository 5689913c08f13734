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
    /// One block, by its `^block-id` (without `^`).
    Block(String),
}

/// Which page of a slice's text was sent: `number` of `total` (an unpaged
/// text is page 1 of 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// 1-based.
    pub number: usize,
    /// Pages the text has.
    pub total: usize,
}

impl Page {
    /// The only page of an unpaged text.
    pub const WHOLE: Page = Page {
        number: 1,
        total: 1,
    };
}

/// The BLAKE3 digest of a derived answer's text and version.
type TextDigest = [u8; 32];

/// What a derived answer (an explore card or page, a lookup's table) is an
/// answer to: the tool, the path or query, and the part (`card`,
/// `outline.0`). Two answers are compared only under the same key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AnswerKey {
    /// `explore`, `lookup`, `fetch` (an outline).
    pub tool: &'static str,
    /// The document's path, or the query with all its parameters.
    pub subject: String,
    /// Which part of the answer (a card, a page of one section).
    pub part: String,
}

impl AnswerKey {
    fn weight(&self) -> usize {
        self.subject.len() + self.part.len() + 32 + RECORD_OVERHEAD
    }
}

/// Something sent to the agent, to be recorded once its answer goes out
/// (see [`crate::outbox`]).
#[derive(Debug, Clone)]
pub enum Delivery<H> {
    /// Text of a document (`part`), or only its identity (`part: None`: an
    /// outline or a card, which report a change but deliver no text).
    Doc {
        /// The document's path.
        path: String,
        /// The slice and the page of it sent.
        part: Option<(Slice, Page)>,
        /// The version read.
        identity: Identity,
        /// What is kept to say later what changed (section hashes).
        snapshot: H,
        /// When it was sent.
        at: Instant,
    },
    /// A derived answer: its key and the digest of its text and version.
    Answer {
        /// What it answers.
        key: AnswerKey,
        /// Its text and version.
        digest: TextDigest,
        /// When it was sent.
        at: Instant,
    },
}

/// The digest of an answer derived from a document at `identity` (a card,
/// an outline): the same text of another version is another answer.
pub fn document_answer_digest(identity: &Identity, text: &str) -> TextDigest {
    answer_digest(&[
        identity.version.as_deref().unwrap_or(""),
        identity.etag.as_deref().unwrap_or(""),
        text,
    ])
}

/// The digest of a derived answer made of `parts` (its text and whatever
/// else must make two answers differ: the version a card describes).
pub fn answer_digest(parts: &[&str]) -> TextDigest {
    let mut hasher = blake3::Hasher::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update(b"\0");
    }
    *hasher.finalize().as_bytes()
}

/// A requested page of a slice, and the slices that hold that slice,
/// nearest first (a section's enclosing sections, then the body).
#[derive(Debug, Clone, Copy)]
pub struct Wanted<'a> {
    /// The slice asked for.
    pub slice: &'a Slice,
    /// The slices that hold it.
    pub within: &'a [Slice],
    /// The page of it asked for.
    pub page: Page,
}

/// What to do with a requested slice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision<H> {
    /// Deliver the text. `changed_from` holds the identity and snapshot of
    /// the last delivery of this document when it has changed since.
    Deliver {
        /// The earlier identity and its snapshot (`None`: the snapshot
        /// was dropped to keep the log within its bound).
        changed_from: Option<(Identity, Option<H>)>,
    },
    /// The agent has this text of this version.
    Unchanged {
        /// The identity the agent already has.
        since: Identity,
        /// The delivered slice that holds it, when not the slice itself
        /// (the whole body holds every section).
        within: Option<Slice>,
        /// The pages of the slice itself that were sent, when only some
        /// were (empty: all of it was).
        pages_sent: Vec<usize>,
    },
}

/// The pages of one slice sent at one identity.
#[derive(Debug)]
struct SliceRecord {
    identity: Identity,
    total: usize,
    /// Page number and when it was sent.
    sent: Vec<(usize, Instant)>,
}

#[derive(Debug)]
struct DocRecord<H> {
    last: Identity,
    /// `None` once dropped to keep the log within its bound.
    snapshot: Option<H>,
    at: Instant,
    slices: HashMap<Slice, SliceRecord>,
}

/// Whether every page of a slice was sent (see [`DeliveryLog::pages_sent`]).
fn all_pages((total, sent): &(usize, Vec<usize>)) -> bool {
    (1..=*total).all(|n| sent.contains(&n))
}

/// Bytes counted for each record beside its strings (map slots, times).
const RECORD_OVERHEAD: usize = 64;

/// The delivery log of one session. `H` is the snapshot kept per document
/// to say what changed (section hashes in practice), weighed by the
/// function given to [`DeliveryLog::new`]; the log keeps its records within
/// `max_bytes`, dropping the least recently sent snapshots first, then
/// whole records.
#[derive(Debug)]
pub struct DeliveryLog<H> {
    docs: HashMap<String, DocRecord<H>>,
    answers: HashMap<AnswerKey, (TextDigest, Instant)>,
    ttl: Duration,
    max_bytes: usize,
    weigh: fn(&H) -> usize,
    /// Snapshots or records dropped to keep within `max_bytes`.
    dropped: usize,
}

fn doc_weight<H>(path: &str, doc: &DocRecord<H>, weigh: fn(&H) -> usize) -> usize {
    let slices: usize = doc
        .slices
        .iter()
        .map(|(s, r)| {
            let anchor = match s {
                Slice::Body => 0,
                Slice::Section(a) | Slice::Block(a) => a.len(),
            };
            anchor + RECORD_OVERHEAD + r.sent.len() * 24
        })
        .sum();
    path.len() + RECORD_OVERHEAD + slices + doc.snapshot.as_ref().map_or(0, weigh)
}

impl<H: Clone> DeliveryLog<H> {
    /// An empty log whose records live for `ttl` and weigh at most
    /// `max_bytes` (each snapshot weighed by `weigh`).
    pub fn new(ttl: Duration, max_bytes: usize, weigh: fn(&H) -> usize) -> DeliveryLog<H> {
        DeliveryLog {
            docs: HashMap::new(),
            answers: HashMap::new(),
            ttl,
            max_bytes,
            weigh,
            dropped: 0,
        }
    }

    fn alive(&self, at: Instant, now: Instant) -> bool {
        now.saturating_duration_since(at) < self.ttl
    }

    fn expire(&mut self, now: Instant) {
        let ttl = self.ttl;
        let alive = |at: Instant| now.saturating_duration_since(at) < ttl;
        self.docs.retain(|_, doc| {
            doc.slices.retain(|_, r| {
                r.sent.retain(|(_, at)| alive(*at));
                !r.sent.is_empty()
            });
            alive(doc.at)
        });
        self.answers.retain(|_, (_, at)| alive(*at));
    }

    /// Bytes the records weigh now.
    pub fn bytes_used(&self) -> usize {
        let docs: usize = self
            .docs
            .iter()
            .map(|(p, d)| doc_weight(p, d, self.weigh))
            .sum();
        docs + self.answers.keys().map(AnswerKey::weight).sum::<usize>()
    }

    /// How many snapshots or records were dropped to keep the bound.
    pub fn dropped(&self) -> usize {
        self.dropped
    }

    /// Drops the least recently sent snapshots, then records, until the
    /// log fits its bound.
    fn keep_within_bound(&mut self) {
        let mut used = self.bytes_used();
        while used > self.max_bytes {
            let weigh = self.weigh;
            let with_snapshot = self
                .docs
                .iter_mut()
                .filter(|(_, d)| d.snapshot.is_some())
                .min_by_key(|(_, d)| d.at);
            if let Some((_, doc)) = with_snapshot {
                used -= doc.snapshot.take().as_ref().map_or(0, weigh);
                self.dropped += 1;
                continue;
            }
            let oldest = self
                .docs
                .iter()
                .min_by_key(|(_, d)| d.at)
                .map(|(p, _)| p.clone());
            let oldest_answer = self
                .answers
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(k, _)| k.clone());
            match (oldest, oldest_answer) {
                (Some(path), _) => {
                    if let Some(doc) = self.docs.remove(&path) {
                        used -= doc_weight(&path, &doc, weigh);
                    }
                }
                (None, Some(key)) => {
                    self.answers.remove(&key);
                    used -= key.weight();
                }
                (None, None) => break,
            }
            self.dropped += 1;
        }
    }

    /// Forgets every delivery: the client dropped what it held (a compaction
    /// or a clear in Claude Code; see [`crate::hook`]).
    pub fn forget_all(&mut self) {
        self.docs.clear();
        self.answers.clear();
    }

    /// Whether the derived answer `digest` under `key` was sent within the
    /// TTL. Asking does not renew anything: only a sending does.
    pub fn answer_sent(&self, key: &AnswerKey, digest: &TextDigest, now: Instant) -> bool {
        self.answers
            .get(key)
            .is_some_and(|(d, at)| d == digest && self.alive(*at, now))
    }

    /// Whether the agent was sent `slice` of `path`, or the whole body, in
    /// full (every page) at the version this session last read, within the
    /// TTL: it holds that text, as of that read. What a lookup row says
    /// (`read earlier`); no source is asked whether it is still current.
    pub fn holds(&self, path: &str, slice: &Slice, now: Instant) -> bool {
        let Some(doc) = self.docs.get(path).filter(|d| self.alive(d.at, now)) else {
            return false;
        };
        [slice, &Slice::Body].into_iter().any(|s| {
            self.pages_sent(doc, s, &doc.last, now)
                .is_some_and(|p| all_pages(&p))
        })
    }

    /// How many pages `slice` of `doc` has and which of them were sent
    /// within the TTL, when they were sent at `identity` (a known one).
    fn pages_sent(
        &self,
        doc: &DocRecord<H>,
        slice: &Slice,
        identity: &Identity,
        now: Instant,
    ) -> Option<(usize, Vec<usize>)> {
        doc.slices
            .get(slice)
            .filter(|r| r.identity.same_as(identity))
            .map(|r| {
                let sent = r
                    .sent
                    .iter()
                    .filter(|(_, at)| self.alive(*at, now))
                    .map(|(p, _)| *p)
                    .collect();
                (r.total, sent)
            })
    }

    /// The identity and snapshot of the last delivery of `path` when the
    /// document changed since (`current`).
    pub fn changed_from(
        &self,
        path: &str,
        current: &Identity,
        now: Instant,
    ) -> Option<(Identity, Option<H>)> {
        let doc = self.docs.get(path).filter(|d| self.alive(d.at, now))?;
        doc.last
            .differs_from(current)
            .then(|| (doc.last.clone(), doc.snapshot.clone()))
    }

    /// Decides whether to deliver the page of the slice `wanted` of `path`
    /// as it is now (`current`). The agent has the text when the slice, or
    /// one that holds it, was sent whole (every page) at the same version
    /// and etag, or when this very page was. `force` always delivers (with
    /// the change note when there is one).
    pub fn check(
        &self,
        path: &str,
        wanted: &Wanted<'_>,
        current: &Identity,
        force: bool,
        now: Instant,
    ) -> Decision<H> {
        let Wanted {
            slice,
            within,
            page,
        } = *wanted;
        let changed_from = self.changed_from(path, current, now);
        let Some(doc) = self.docs.get(path).filter(|d| self.alive(d.at, now)) else {
            return Decision::Deliver { changed_from };
        };
        if force {
            return Decision::Deliver { changed_from };
        }
        let live = |s: &Slice| self.pages_sent(doc, s, current, now);
        let whole = all_pages;
        if live(slice).is_some_and(|own| whole(&own)) {
            return Decision::Unchanged {
                since: current.clone(),
                within: None,
                pages_sent: Vec::new(),
            };
        }
        for outer in within {
            if live(outer).is_some_and(|o| whole(&o)) {
                return Decision::Unchanged {
                    since: current.clone(),
                    within: Some(outer.clone()),
                    pages_sent: Vec::new(),
                };
            }
        }
        match live(slice) {
            Some((total, mut sent)) if total == page.total && sent.contains(&page.number) => {
                sent.sort_unstable();
                Decision::Unchanged {
                    since: current.clone(),
                    within: None,
                    pages_sent: sent,
                }
            }
            _ => Decision::Deliver { changed_from },
        }
    }

    /// Records what the agent now has.
    pub fn commit(&mut self, delivery: Delivery<H>) {
        match delivery {
            Delivery::Doc {
                path,
                part,
                identity,
                snapshot,
                at,
            } => {
                self.expire(at);
                let doc = self.docs.entry(path).or_insert_with(|| DocRecord {
                    last: identity.clone(),
                    snapshot: None,
                    at,
                    slices: HashMap::new(),
                });
                doc.last = identity.clone();
                doc.snapshot = Some(snapshot);
                doc.at = at;
                if let Some((slice, page)) = part {
                    let record = doc.slices.entry(slice).or_insert_with(|| SliceRecord {
                        identity: identity.clone(),
                        total: page.total,
                        sent: Vec::new(),
                    });
                    if record.identity != identity || record.total != page.total {
                        *record = SliceRecord {
                            identity,
                            total: page.total,
                            sent: Vec::new(),
                        };
                    }
                    record.sent.retain(|(p, _)| *p != page.number);
                    record.sent.push((page.number, at));
                }
            }
            Delivery::Answer { key, digest, at } => {
                self.expire(at);
                self.answers.insert(key, (digest, at));
            }
        }
        self.keep_within_bound();
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

    fn wanted<'a>(slice: &'a Slice, within: &'a [Slice], page: Page) -> Wanted<'a> {
        Wanted {
            slice,
            within,
            page,
        }
    }

    fn log() -> DeliveryLog<&'static str> {
        DeliveryLog::new(TTL, usize::MAX, |h| h.len())
    }

    fn sent(
        path: &str,
        part: Option<(Slice, Page)>,
        v: &str,
        at: Instant,
    ) -> Delivery<&'static str> {
        Delivery::Doc {
            path: path.into(),
            part,
            identity: id(v),
            snapshot: "h",
            at,
        }
    }

    fn body(n: usize, total: usize) -> Option<(Slice, Page)> {
        Some((Slice::Body, Page { number: n, total }))
    }

    fn check(
        log: &DeliveryLog<&'static str>,
        slice: &Slice,
        within: &[Slice],
        page: Page,
        v: &str,
        at: Instant,
    ) -> Decision<&'static str> {
        log.check("/a.md", &wanted(slice, within, page), &id(v), false, at)
    }

    fn unchanged(within: Option<Slice>, pages_sent: Vec<usize>) -> Decision<&'static str> {
        Decision::Unchanged {
            since: id("3"),
            within,
            pages_sent,
        }
    }

    const DELIVER: Decision<&'static str> = Decision::Deliver { changed_from: None };

    #[test]
    fn second_read_of_the_same_slice_is_unchanged() {
        let t0 = Instant::now();
        let mut log = log();
        assert_eq!(
            check(&log, &Slice::Body, &[], Page::WHOLE, "3", t0),
            DELIVER
        );
        log.commit(sent("/a.md", body(1, 1), "3", t0));
        assert_eq!(
            check(&log, &Slice::Body, &[], Page::WHOLE, "3", t0),
            unchanged(None, vec![])
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
    fn the_log_holds_a_section_sent_whole_at_the_last_read_version() {
        let t0 = Instant::now();
        let mut log = log();
        let (intro, other) = (
            Slice::Section("intro".into()),
            Slice::Section("other".into()),
        );
        assert!(!log.holds("/a.md", &intro, t0), "nothing sent");
        let page = |n, total| Some((intro.clone(), Page { number: n, total }));
        log.commit(sent("/a.md", page(1, 2), "1", t0));
        assert!(!log.holds("/a.md", &intro, t0), "one page of two");
        log.commit(sent("/a.md", page(2, 2), "1", t0));
        assert!(log.holds("/a.md", &intro, t0) && !log.holds("/a.md", &other, t0));
        log.commit(sent("/a.md", None, "2", t0));
        assert!(
            !log.holds("/a.md", &intro, t0),
            "read again at v2: held only at v1"
        );
        log.commit(sent("/a.md", body(1, 1), "2", t0));
        assert!(
            log.holds("/a.md", &other, t0),
            "the whole body holds every section"
        );
        assert!(!log.holds("/a.md", &other, t0 + TTL), "expired");
    }

    #[test]
    fn force_delivers_and_other_slices_still_come() {
        let t0 = Instant::now();
        let mut log = log();
        log.commit(sent("/a.md", body(1, 1), "3", t0));
        assert_eq!(
            log.check(
                "/a.md",
                &wanted(&Slice::Body, &[], Page::WHOLE),
                &id("3"),
                true,
                t0
            ),
            DELIVER
        );
        let sec = Slice::Section("intro".into());
        assert_eq!(check(&log, &sec, &[], Page::WHOLE, "3", t0), DELIVER);
    }

    #[test]
    fn a_body_sent_whole_holds_its_sections_and_a_section_its_subsections() {
        let t0 = Instant::now();
        let mut log = log();
        let (intro, sub) = (Slice::Section("intro".into()), Slice::Section("sub".into()));
        log.commit(sent("/a.md", Some((intro.clone(), Page::WHOLE)), "3", t0));
        assert_eq!(
            check(
                &log,
                &sub,
                &[intro.clone(), Slice::Body],
                Page::WHOLE,
                "3",
                t0
            ),
            unchanged(Some(intro.clone()), vec![])
        );
        assert_eq!(
            check(&log, &Slice::Body, &[], Page::WHOLE, "3", t0),
            DELIVER
        );
        // A body sent in part does not hold its sections; sent whole it does.
        log.commit(sent("/a.md", body(1, 2), "3", t0));
        let other = Slice::Section("other".into());
        assert_eq!(
            check(&log, &other, &[Slice::Body], Page::WHOLE, "3", t0),
            DELIVER
        );
        log.commit(sent("/a.md", body(2, 2), "3", t0));
        assert_eq!(
            check(&log, &other, &[Slice::Body], Page::WHOLE, "3", t0),
            unchanged(Some(Slice::Body), vec![])
        );
        // Not at another version.
        assert!(matches!(
            check(&log, &other, &[Slice::Body], Page::WHOLE, "4", t0),
            Decision::Deliver { .. }
        ));
    }

    #[test]
    fn pages_are_recorded_one_by_one() {
        let t0 = Instant::now();
        let mut log = log();
        log.commit(sent("/a.md", body(1, 4), "3", t0));
        let page = |n| Page {
            number: n,
            total: 4,
        };
        assert_eq!(
            check(&log, &Slice::Body, &[], page(1), "3", t0),
            unchanged(None, vec![1])
        );
        assert_eq!(check(&log, &Slice::Body, &[], page(2), "3", t0), DELIVER);
        log.commit(sent("/a.md", body(3, 4), "3", t0));
        assert_eq!(
            check(&log, &Slice::Body, &[], page(3), "3", t0),
            unchanged(None, vec![1, 3])
        );
        for n in [2, 4] {
            log.commit(sent("/a.md", body(n, 4), "3", t0));
        }
        assert_eq!(
            check(&log, &Slice::Body, &[], page(1), "3", t0),
            unchanged(None, vec![])
        );
    }

    #[test]
    fn a_changed_document_reports_the_earlier_identity() {
        let t0 = Instant::now();
        let mut log = log();
        log.commit(sent("/a.md", body(1, 1), "3", t0));
        assert_eq!(
            log.check(
                "/a.md",
                &wanted(&Slice::Body, &[], Page::WHOLE),
                &id("5"),
                false,
                t0
            ),
            Decision::Deliver {
                changed_from: Some((id("3"), Some("h")))
            }
        );
        log.commit(sent("/a.md", body(1, 1), "5", t0));
        assert!(matches!(
            log.check(
                "/a.md",
                &wanted(&Slice::Body, &[], Page::WHOLE),
                &id("5"),
                false,
                t0
            ),
            Decision::Unchanged { .. }
        ));
        // A section last read at v3: delivered, the change was already reported.
        let sec = Slice::Section("intro".into());
        assert_eq!(
            log.check(
                "/a.md",
                &wanted(&sec, &[], Page::WHOLE),
                &id("5"),
                false,
                t0
            ),
            DELIVER
        );
    }

    #[test]
    fn an_identity_alone_records_no_slice() {
        let t0 = Instant::now();
        let mut log = log();
        log.commit(sent("/a.md", None, "3", t0));
        assert_eq!(
            check(&log, &Slice::Body, &[], Page::WHOLE, "3", t0),
            DELIVER
        );
    }

    #[test]
    fn records_expire_after_the_ttl() {
        let t0 = Instant::now();
        let mut log = log();
        log.commit(sent("/a.md", body(1, 1), "3", t0));
        let later = t0 + TTL;
        assert_eq!(
            check(&log, &Slice::Body, &[], Page::WHOLE, "3", later),
            DELIVER
        );
        log.commit(sent("/b.md", None, "1", later));
        assert_eq!(log.docs.len(), 1);
    }

    #[test]
    fn an_answer_is_unchanged_only_under_its_own_key_and_never_renewed() {
        let t0 = Instant::now();
        let mut log = log();
        let key = |subject: &str| AnswerKey {
            tool: "explore",
            subject: subject.into(),
            part: "card".into(),
        };
        let card = answer_digest(&["v1", "card"]);
        assert!(!log.answer_sent(&key("/a.md"), &card, t0));
        log.commit(Delivery::Answer {
            key: key("/a.md"),
            digest: card,
            at: t0,
        });
        assert!(log.answer_sent(&key("/a.md"), &card, t0));
        assert!(!log.answer_sent(&key("/b.md"), &card, t0), "another path");
        assert!(!log.answer_sent(&key("/a.md"), &answer_digest(&["v2", "card"]), t0));
        assert_ne!(answer_digest(&["v1card"]), card, "parts stay apart");
        // Asking again (an unchanged answer) does not renew the record:
        // it lapses a TTL after it was sent.
        assert!(log.answer_sent(&key("/a.md"), &card, t0 + TTL / 2));
        assert!(!log.answer_sent(&key("/a.md"), &card, t0 + TTL));
    }

    #[test]
    fn without_identity_nothing_is_unchanged() {
        let t0 = Instant::now();
        let mut log: DeliveryLog<()> = DeliveryLog::new(TTL, usize::MAX, |_| 0);
        let none = Identity::default();
        log.commit(Delivery::Doc {
            path: "/a.md".into(),
            part: body(1, 1),
            identity: none.clone(),
            snapshot: (),
            at: t0,
        });
        assert_eq!(
            log.check(
                "/a.md",
                &wanted(&Slice::Body, &[], Page::WHOLE),
                &none,
                false,
                t0
            ),
            Decision::Deliver { changed_from: None }
        );
    }

    #[test]
    fn the_log_keeps_within_its_bound_dropping_old_snapshots_first() {
        let t0 = Instant::now();
        let mut log: DeliveryLog<String> = DeliveryLog::new(TTL, 3_000, String::len);
        let big = || "x".repeat(1_000);
        for (i, path) in ["/a.md", "/b.md", "/c.md"].into_iter().enumerate() {
            log.commit(Delivery::Doc {
                path: path.into(),
                part: body(1, 1),
                identity: id("1"),
                snapshot: big(),
                at: t0 + Duration::from_secs(i as u64),
            });
        }
        assert!(log.bytes_used() <= 3_000, "{}", log.bytes_used());
        assert_eq!(log.dropped(), 1);
        let now = t0 + Duration::from_secs(3);
        // The oldest lost its snapshot: a change is still told, not which sections.
        assert_eq!(
            log.changed_from("/a.md", &id("2"), now),
            Some((id("1"), None))
        );
        assert_eq!(
            log.changed_from("/c.md", &id("2"), now),
            Some((id("1"), Some(big())))
        );
        // A tiny bound drops whole records.
        let mut tiny: DeliveryLog<String> = DeliveryLog::new(TTL, 10, String::len);
        tiny.commit(Delivery::Doc {
            path: "/a.md".into(),
            part: body(1, 1),
            identity: id("1"),
            snapshot: big(),
            at: t0,
        });
        assert_eq!(tiny.bytes_used(), 0);
    }
}
