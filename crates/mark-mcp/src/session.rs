//! One agent session: the source, the settings, the document cache, the
//! folder listings a card shows, and the delivery log. Every capability
//! takes a `&Session`; with stdio there is one session per process.

use crate::cache::{SessionCache, Stamp, Ticket};
use crate::change_feed::ChangeFeed;
use crate::crawl::{CrawlWatcher, SessionGraph, Waited, parent_dir};
use crate::dedup::{DeliveryLog, Identity};
use crate::envelope::ToolText;
use crate::settings::Settings;
use crate::source::{ChangeSource, Source};
use futures::FutureExt;
use futures::future::{BoxFuture, Shared, WeakShared};
use link_graph::LinkTarget;
use mark_proto::list::ListEntry;
use mark_proto::{MarkUrl, Request, Response, Status, Verb};
use markdown_slice::{Block, Document, Heading, Link, LinkKind, SectionHashes};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// A document as the session keeps it: parsed once, with its identity and
/// per-section hashes (to say which sections changed).
#[derive(Debug)]
pub struct CachedDoc {
    /// The parsed body.
    pub doc: Document<Arc<str>>,
    /// Version and etag as served.
    pub identity: Identity,
    /// `modified` as served.
    pub modified: Option<String>,
    /// Hashes of every section.
    pub hashes: Arc<SectionHashes>,
    /// Heading texts that occur more than once (every roadmap phase has a
    /// `Status`): a section under one is named with the headings above it.
    pub repeated_headings: HashSet<String>,
}

/// The heading texts that occur more than once in `doc`.
pub fn repeated_headings<S: AsRef<str>>(doc: &Document<S>) -> HashSet<String> {
    let mut seen = HashSet::new();
    doc.headings()
        .iter()
        .map(|h| h.text.as_str())
        .filter(|t| !seen.insert(*t))
        .map(str::to_string)
        .collect()
}

impl CachedDoc {
    /// Bytes this entry holds: the body plus its parsed headings, links and
    /// section hashes (their heap text and fixed parts), so the cache bound
    /// counts what is really kept.
    pub fn weight(&self) -> usize {
        use std::mem::size_of;
        let doc = &self.doc;
        let headings: usize = doc
            .headings()
            .iter()
            .map(|h| size_of::<Heading>() + h.text.len() + h.anchor.as_ref().map_or(0, String::len))
            .sum();
        let links: usize = doc
            .links()
            .iter()
            .map(|l| {
                size_of::<Link>()
                    + l.text.len()
                    + l.dest.len()
                    + l.fragment.as_ref().map_or(0, String::len)
            })
            .sum();
        let blocks: usize = doc
            .blocks()
            .iter()
            .map(|b| size_of::<Block>() + b.id.len())
            .sum();
        let hashes = hashes_weight(&self.hashes);
        let repeated: usize = self
            .repeated_headings
            .iter()
            .map(|t| t.len() + size_of::<String>())
            .sum();
        doc.source().len() + headings + links + blocks + hashes + repeated + size_of::<CachedDoc>()
    }
}

/// Bytes a document's section hashes hold (each anchor, its hash, its string).
pub fn hashes_weight(hashes: &Arc<SectionHashes>) -> usize {
    hashes
        .sections
        .iter()
        .map(|(a, _)| a.len() + 32 + std::mem::size_of::<String>())
        .sum()
}

/// The bound of the delivery log beside the cache's: a quarter of
/// `--cache-bytes`, and at least [`MIN_LOG_BYTES`] (so a session that caches
/// nothing still tells which sections changed in ordinary documents).
pub fn log_bytes(cache_bytes: usize) -> usize {
    (cache_bytes / 4).max(MIN_LOG_BYTES)
}

/// The smallest bound of the delivery log.
pub const MIN_LOG_BYTES: usize = 1 << 20;

/// A folder's entries as one LIST answered them.
#[derive(Debug)]
pub struct FolderListing {
    /// The entries, in the server's order.
    pub entries: Vec<ListEntry>,
    /// Whether the server said the listing is whole (more than one page:
    /// not; an older server that does not page says nothing).
    pub completeness: crate::list::Completeness,
}

impl FolderListing {
    /// Bytes this listing keeps in memory (its names and the entries).
    fn weight(&self) -> usize {
        self.entries
            .iter()
            .map(|e| e.name.len() + std::mem::size_of::<ListEntry>())
            .sum()
    }
}

/// Memory for cached folder listings (a thousand-entry folder is ~60 KB).
const LISTING_CACHE_BYTES: usize = 1 << 20;

/// A `url` argument resolved against the session's source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The path to request (with `/vN` for a pinned version).
    pub path: String,
    /// The `#anchor`, without `#`.
    pub fragment: Option<String>,
}

/// The notes an unresolvable `[[Name]]` argument offers at most.
const NEAREST_NOTES: usize = 5;

/// `written` parsed, when it is one wiki link as a whole (`[[Name]]`,
/// `![[Name#Heading|text]]`).
fn wiki_argument(written: &str) -> Option<Document<&str>> {
    if !(written.starts_with("[[") || written.starts_with("![[")) || !written.ends_with("]]") {
        return None;
    }
    let doc = Document::parse(written);
    match doc.links() {
        [link] if link.kind == LinkKind::Wiki && link.range == (0..written.len()) => Some(doc),
        _ => None,
    }
}

/// The outcome of reading a document: the document, or a result to pass
/// through as it is (an error status, a non-UTF-8 notice, a source failure).
#[derive(Debug)]
pub enum Loaded {
    /// The document, from the cache or the source.
    Doc(Arc<CachedDoc>),
    /// What to answer instead.
    Answer(ToolText),
}

/// Whether a load may answer from a fresh cache entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// An entry validated within `--fresh-for` is served as it is.
    CacheOk,
    /// Ask the source (conditionally) whatever the entry's age: `force`.
    Revalidate,
}

/// What one FETCH in flight came to, for every load waiting on it.
#[derive(Debug)]
enum Outcome {
    /// The document (new, or the cached one confirmed by `not-modified`),
    /// its weight in the cache and the answer's stamp.
    Doc {
        doc: Arc<CachedDoc>,
        weight: usize,
        stamp: Stamp,
    },
    /// `not-found` or `archived`: the document is gone, by the answer
    /// stamped `stamp`.
    Gone { text: ToolText, stamp: Stamp },
    /// Another status: passed through, the cached copy dropped.
    Failed(ToolText),
    /// What to answer, the cache left as it is (no answer from the source,
    /// a body that is not UTF-8).
    Answer(ToolText),
}

/// One FETCH in flight, shared by the loads of its document.
type Flight = Shared<BoxFuture<'static, Arc<Outcome>>>;
/// A [`Flight`] held without keeping it alive, with its number and the
/// cache ticket taken before its request went out.
type HeldFlight = (WeakShared<BoxFuture<'static, Arc<Outcome>>>, u64, Ticket);

/// The state of one session.
pub struct Session {
    source: Arc<dyn Source>,
    settings: Settings,
    cache: Mutex<SessionCache<CachedDoc>>,
    /// Listings by folder path. LIST has no etag to revalidate with, so a
    /// listing is served only within the freshness window, then asked again.
    listings: Mutex<SessionCache<FolderListing>>,
    /// The FETCH in flight per document (see [`Session::load_with`]), held
    /// weakly, with its number.
    flights: Mutex<HashMap<String, HeldFlight>>,
    flight_numbers: AtomicU64,
    log: Mutex<DeliveryLog<Arc<SectionHashes>>>,
    graph: SessionGraph,
    feed: Mutex<ChangeFeed>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("source", &self.source.describe())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// Locks a mutex, taking the data even if a panicking thread poisoned it
/// (the cache and log stay consistent after every single operation).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Session {
    /// A fresh session over `source`.
    pub fn new(source: Arc<dyn Source>, settings: Settings) -> Session {
        Session {
            cache: Mutex::new(SessionCache::new(settings.cache_bytes)),
            listings: Mutex::new(SessionCache::new(LISTING_CACHE_BYTES)),
            flights: Mutex::new(HashMap::new()),
            flight_numbers: AtomicU64::new(0),
            log: Mutex::new(DeliveryLog::new(
                settings.dedup_ttl,
                log_bytes(settings.cache_bytes),
                hashes_weight,
            )),
            graph: SessionGraph::new(Arc::clone(&source), settings.crawl),
            feed: Mutex::new(ChangeFeed::new(matches!(
                source.change_source(),
                ChangeSource::Folder { .. }
            ))),
            source,
            settings,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The source.
    pub fn source(&self) -> &dyn Source {
        self.source.as_ref()
    }

    /// The session's link graph and its crawl.
    pub fn graph(&self) -> &SessionGraph {
        &self.graph
    }

    /// Total bytes of bodies in the session cache.
    pub fn cache_bytes_used(&self) -> usize {
        lock(&self.cache).bytes_used()
    }

    pub(crate) fn log(&self) -> MutexGuard<'_, DeliveryLog<Arc<SectionHashes>>> {
        lock(&self.log)
    }

    /// The source's change feed (see [`crate::change_feed`]).
    pub fn feed(&self) -> MutexGuard<'_, ChangeFeed> {
        lock(&self.feed)
    }

    /// The source says `path` (a document key) changed at `now`: the cached
    /// copy and the load in flight are forgotten (an answer asked before
    /// now is never kept), and when this session delivered the document
    /// the change waits for the next result's note.
    pub fn source_changed(&self, path: &str, now: Instant) {
        self.forget(path);
        let read = self.log().last_read(path, now).is_some();
        let mut feed = self.feed();
        feed.heard(now);
        feed.heard_change(path);
        if read {
            feed.changed(path);
        }
    }

    /// `mark://host/path` for a path of this source.
    pub fn url_of(&self, path: &str) -> String {
        format!("{}{}", self.source.origin(), path)
    }

    /// Resolves a `url` argument: `/path[#anchor]`, or
    /// `mark://host[:port]/path[#anchor]` naming this session's source.
    pub fn resolve(&self, url: &str) -> Result<Target, String> {
        let url = url.trim();
        let origin = self.source.origin();
        let (path, fragment) = if url.starts_with('/') {
            match url.split_once('#') {
                Some((p, f)) => (p.to_string(), Some(f.to_string())),
                None => (url.to_string(), None),
            }
        } else if url
            .get(..7)
            .is_some_and(|s| s.eq_ignore_ascii_case("mark://"))
        {
            let parsed = MarkUrl::parse(url).map_err(|e| e.to_string())?;
            if parsed.origin() != origin {
                return Err(format!(
                    "`{}` is on {} but this server reads {origin}; use a /path or a {origin}/ URL",
                    short(url),
                    parsed.origin()
                ));
            }
            (
                parsed.path().to_string(),
                parsed.fragment().map(str::to_string),
            )
        } else {
            return Err(format!(
                "`{}` is neither a /path nor a mark:// URL; use /path or {origin}/path",
                short(url)
            ));
        };
        self.target(&path, fragment)
    }

    /// The request path and fragment of `path` (`#` split off).
    fn target(&self, path: &str, fragment: Option<String>) -> Result<Target, String> {
        // One key per document, however the agent spelled it (a space, an
        // escape, a decomposed accent).
        let path = crate::keys::document_key(path)
            .map_err(|e| format!("`{}` is not a usable path: {e}", short(path)))?;
        mark_proto::check_path(&path)
            .map_err(|e| format!("`{}` is not a usable path: {e}", short(&path)))?;
        // No request line could carry it (and a local engine would echo it whole).
        if path.len() > MAX_PATH_BYTES {
            return Err(format!(
                "`{}…` is {} bytes long, over the {MAX_PATH_BYTES}-byte limit of a path; use a shorter path",
                short(&path),
                path.len()
            ));
        }
        Ok(Target {
            path,
            fragment: fragment
                .filter(|f| !f.is_empty())
                .map(|f| markdown_slice::unicode_form(&f).into_owned()),
        })
    }

    /// [`Session::resolve`], and the wiki-link form an agent just read in a
    /// note (`[[Alpha Note#Details]]`, `[[Alpha Note|shown]]`,
    /// `![[Beta#^block-id]]`): the note it names by the vault rule, as a
    /// link in a note at the root would (link-graph's `resolve_edge`, the
    /// rule every link of the graph follows). The graph's crawl is started
    /// if it needs one and waited for within `--crawl-wait`, as for a card,
    /// so that the notes' names are known; `watcher` sees its progress.
    pub async fn resolve_argument(
        &self,
        url: &str,
        now: Instant,
        watcher: &dyn CrawlWatcher,
    ) -> Result<Target, String> {
        let written = url.trim();
        let Some(doc) = wiki_argument(written) else {
            return self.resolve(url);
        };
        let dest = doc.links()[0].dest.as_str();
        if dest.starts_with('#') {
            return Err(format!(
                "`{}` names a heading of the note it is written in; write [[Note{}]] with that note's name",
                short(written),
                short(dest)
            ));
        }
        let graph = self.graph();
        let started = graph.start(now, false);
        let waited = graph.wait(graph.settings().wait, watcher).await;
        if waited == Waited::Cancelled {
            if started {
                graph.stop();
            }
            return Err("cancelled while the crawl learned the notes' names; call it again".into());
        }
        match graph.resolve_links("/", &doc).into_iter().next() {
            Some((_, LinkTarget::Document { path, fragment })) => {
                self.target(&crate::keys::wire_path(&path), fragment)
            }
            Some((_, LinkTarget::Unresolved { name, .. })) => {
                let coverage = graph.coverage();
                let nearest: Vec<String> = graph
                    .nearest_notes(&name, NEAREST_NOTES)
                    .iter()
                    .map(|p| crate::keys::wire_path(p))
                    .collect();
                if nearest.is_empty()
                    && let Some(why) = unlearnt_names(waited, graph)
                {
                    return Err(format!(
                        "`{}` cannot be resolved: no note's name is known, since {why}; check the source, or fetch the note by its /path",
                        short(written)
                    ));
                }
                let nearest = if nearest.is_empty() {
                    "(none: no notes known yet)".to_string()
                } else {
                    nearest.join(", ")
                };
                let seen = if coverage.complete { "" } else { " seen yet" };
                Err(format!(
                    "`{}` names no note{seen} ({coverage}); nearest: {nearest}; fetch one of those, or mark_lookup the name",
                    short(written)
                ))
            }
            _ => Err(format!(
                "`{}` names an attachment, not a note; only notes (.md) can be read",
                short(written)
            )),
        }
    }

    /// Sends a request; a source failure becomes a one-sentence tool error.
    pub async fn send(&self, req: Request) -> Result<Response, ToolText> {
        self.source
            .send(req)
            .await
            .map_err(|e| ToolText::error(e.to_string()))
    }

    /// Sends a request that must answer `ok`; any other status comes back as
    /// the short result to pass through.
    pub async fn send_ok(&self, req: Request) -> Result<Response, ToolText> {
        let resp = self.send(req).await?;
        if resp.status == Status::Ok {
            Ok(resp)
        } else {
            Err(passthrough(&resp))
        }
    }

    /// Resolves a `url` argument to the path to request (see [`Session::resolve`]).
    pub fn path_of(&self, url: &str) -> Result<String, ToolText> {
        self.resolve(url).map(|t| t.path).map_err(ToolText::error)
    }

    /// Reads a document through the cache: a fresh entry costs nothing, a
    /// stale one a conditional FETCH (`not-modified` moves no body).
    pub async fn load(&self, path: &str, now: Instant) -> Loaded {
        self.load_with(path, now, Freshness::CacheOk).await
    }

    /// [`Session::load`], or with [`Freshness::Revalidate`] a conditional
    /// FETCH even for a fresh entry (what `force` asks for).
    ///
    /// Loads of one document share one request in flight: a load that finds
    /// one running waits for its answer rather than sending its own (a
    /// revalidation starts its own, which later loads then join). Answers are
    /// kept newer-wins ([`Stamp::supersedes`]), so a slow older answer never
    /// replaces a newer one in the cache or the graph, and a slow `not-found`
    /// never evicts a newer document. An answer to a request sent before a
    /// write through this session ([`Session::forget`]) is given to its
    /// callers, which were concurrent with the write, but never kept.
    pub async fn load_with(&self, path: &str, now: Instant, freshness: Freshness) -> Loaded {
        // `--fresh-for 0s` asks the source at every read, feed or not.
        let watched_since = if self.settings.fresh_for.is_zero() {
            None
        } else {
            lock(&self.feed).healthy_since(now)
        };
        let cached =
            lock(&self.cache).get_watched(path, now, self.settings.fresh_for, watched_since);
        if let Some((doc, true)) = &cached
            && freshness == Freshness::CacheOk
        {
            return Loaded::Doc(Arc::clone(doc));
        }
        let base = cached.map(|(doc, _)| doc);
        let (flight, number, ticket) = self.flight(path, base, now, freshness);
        let outcome = flight.await;
        {
            let mut flights = lock(&self.flights);
            if flights.get(path).is_some_and(|(_, n, _)| *n == number) {
                flights.remove(path);
            }
        }
        match &*outcome {
            Outcome::Doc { doc, weight, stamp } => {
                let won = {
                    let mut cache = lock(&self.cache);
                    if !cache.is_current(path, ticket) {
                        return Loaded::Doc(Arc::clone(doc));
                    }
                    cache.insert(path, Arc::clone(doc), *weight, *stamp, ticket)
                };
                // Every document read adds its links to the graph.
                self.graph.index(
                    path,
                    doc.identity.etag.as_deref(),
                    &doc.doc,
                    doc.modified.as_deref(),
                    *stamp,
                );
                Loaded::Doc(won)
            }
            Outcome::Gone { text, stamp } => {
                if lock(&self.cache).remove_older(path, *stamp, ticket) {
                    self.graph.forget(path, *stamp);
                }
                Loaded::Answer(text.clone())
            }
            Outcome::Failed(t) => {
                lock(&self.cache).remove(path);
                Loaded::Answer(t.clone())
            }
            Outcome::Answer(t) => Loaded::Answer(t.clone()),
        }
    }

    /// The request in flight for `path` to wait on: the running one, or a new
    /// one (conditional on `base`'s etag) that later loads join; with its
    /// number and cache ticket (taken under the flights' lock, as
    /// [`Session::forget`] drops the running one and forgets the path).
    fn flight(
        &self,
        path: &str,
        base: Option<Arc<CachedDoc>>,
        now: Instant,
        freshness: Freshness,
    ) -> (Flight, u64, Ticket) {
        let mut flights = lock(&self.flights);
        if freshness == Freshness::CacheOk
            && let Some((weak, number, ticket)) = flights.get(path)
            && let Some(running) = weak.upgrade()
        {
            return (running, *number, *ticket);
        }
        let ticket = lock(&self.cache).ticket();
        let number = self.flight_numbers.fetch_add(1, Ordering::Relaxed);
        let flight = fetch_once(Arc::clone(&self.source), path.to_string(), base, now)
            .boxed()
            .shared();
        // Held weakly: when every load waiting on it is dropped (cancelled),
        // so is its request.
        if let Some(weak) = flight.downgrade() {
            flights.insert(path.to_string(), (weak, number, ticket));
        }
        (flight, number, ticket)
    }

    /// `dir`'s listing if it was listed within the freshness window.
    pub fn fresh_listing(&self, dir: &str, now: Instant) -> Option<Arc<FolderListing>> {
        lock(&self.listings)
            .get(dir, now, self.settings.fresh_for)
            .and_then(|(listing, fresh)| fresh.then_some(listing))
    }

    /// The ticket to take before asking for a folder's listing (see
    /// [`Session::keep_listing`]).
    pub fn listing_ticket(&self) -> Ticket {
        lock(&self.listings).ticket()
    }

    /// Keeps `dir`'s listing, just answered to LISTs asked with `ticket`,
    /// for [`Session::fresh_listing`] (unless a write forgot the folder since).
    pub fn keep_listing(
        &self,
        dir: &str,
        listing: FolderListing,
        now: Instant,
        ticket: Ticket,
    ) -> Arc<FolderListing> {
        let weight = listing.weight();
        let stamp = Stamp::new(None, now, now);
        lock(&self.listings).insert(dir, Arc::new(listing), weight, stamp, ticket)
    }

    /// Forgets a cached document and its folder's listing after a write
    /// through this session or a change the source told of (the folder may
    /// have a new entry). A load in
    /// flight since before is not joined by later loads, and its answer is
    /// not kept: it may hold the text before the write.
    pub fn forget(&self, path: &str) {
        let mut flights = lock(&self.flights);
        flights.remove(path);
        lock(&self.cache).forget(path);
        drop(flights);
        lock(&self.listings).forget(parent_dir(path));
    }
}

/// Why the crawl learnt no note's name, when it did not end cleanly: it
/// still waits on the source past `--crawl-wait`, or its requests failed
/// (a timeout says so); `None` when it ran and found none.
fn unlearnt_names(waited: Waited, graph: &SessionGraph) -> Option<String> {
    if waited == Waited::TimedOut {
        return Some(format!(
            "the crawl that learns them got no answer from the source within --crawl-wait ({} s)",
            graph.settings().wait.as_secs_f64()
        ));
    }
    let progress = graph.progress();
    let failure = progress.first_failure?;
    Some(format!(
        "the crawl that learns them failed ({} request{} failed, first: {})",
        progress.failures,
        if progress.failures == 1 { "" } else { "s" },
        crate::envelope::one_line(&failure, 300)
    ))
}

/// Sends one FETCH of `path` (conditional on `base`'s etag), asked at
/// `asked`, and makes of its answer what every waiting load needs (the
/// body parsed once).
async fn fetch_once(
    source: Arc<dyn Source>,
    path: String,
    base: Option<Arc<CachedDoc>>,
    asked: Instant,
) -> Arc<Outcome> {
    let mut req = Request::new(Verb::Fetch, path.as_str());
    if let Some(etag) = base.as_ref().and_then(|d| d.identity.etag.as_deref()) {
        req = req.with_meta("if-none-match", etag);
    }
    let answer = source.send(req).await;
    let answered = Instant::now();
    let resp = match answer {
        Ok(r) => r,
        Err(e) => return Arc::new(Outcome::Answer(ToolText::error(e.to_string()))),
    };
    let stamp = Stamp::new(resp.meta("version"), asked, answered);
    let status = resp.status.clone();
    Arc::new(match (status.clone(), base) {
        (Status::NotModified, Some(doc)) => Outcome::Doc {
            weight: doc.weight(),
            // A `not-modified` names no version: the confirmed copy's counts.
            stamp: Stamp::new(doc.identity.version.as_deref(), asked, answered),
            doc,
        },
        (Status::Ok, _) => parse(&path, resp, stamp),
        (Status::NotFound | Status::Archived, _) => {
            let t = passthrough(&resp);
            let text = if status == Status::Archived && t.text.is_empty() {
                // The protocol's `archived` has no body: say what is still possible.
                t.with_text(format!(
                    "{path} is archived; its versions stay readable at \"{path}/vN\" (mark_versions lists them)."
                ))
            } else {
                t
            };
            Outcome::Gone { text, stamp }
        }
        _ => Outcome::Failed(passthrough(&resp)),
    })
}

/// An `ok` FETCH answer as a cached document (or a notice for a body that
/// is not UTF-8).
fn parse(path: &str, resp: Response, stamp: Stamp) -> Outcome {
    let identity = Identity {
        version: resp.meta("version").map(str::to_string),
        etag: resp.meta("etag").map(str::to_string),
    };
    let modified = resp.meta("modified").map(str::to_string);
    let len = resp.body.len();
    let text: Arc<str> = match String::from_utf8(resp.body) {
        Ok(s) => s.into(),
        Err(_) => {
            return Outcome::Answer(
                ToolText::new("ok")
                    .with_opt("version", identity.version)
                    .with("mode", "notice")
                    .with("size", format!("{len} bytes"))
                    .with_text(format!(
                        "{path} is not UTF-8 text ({len} bytes); mark-mcp delivers markdown only, never raw bytes."
                    )),
            );
        }
    };
    let doc = Document::parse(text);
    let hashes = Arc::new(doc.section_hashes());
    let repeated_headings = repeated_headings(&doc);
    let cached = CachedDoc {
        doc,
        identity,
        modified,
        hashes,
        repeated_headings,
    };
    Outcome::Doc {
        weight: cached.weight(),
        doc: Arc::new(cached),
        stamp,
    }
}

/// The longest path a request line can carry (`VERSIONS <path>\n` is the
/// longest verb's line).
const MAX_PATH_BYTES: usize = mark_proto::MAX_REQUEST_LINE - "VERSIONS \n".len();

/// The first 120 characters of `s`, to quote user input in a one-line
/// message: control characters come escaped (`\n`, `\u{0}`).
pub(crate) fn short(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars().take(120) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// A non-success response as a short result: its status and the server's
/// message on one line.
pub fn passthrough(resp: &Response) -> ToolText {
    let message = resp.error_message();
    let line: String = message
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(300)
        .collect();
    let mut t = ToolText::new(resp.status.as_str());
    if resp.status == Status::Unauthorized {
        // The server's words name its wire field; say what the user sets.
        return t.with_text(
            "the server needs a valid token for this (none was given, or it is unknown or expired): give mark-mcp one with --token-file FILE or the MARK_TOKEN environment variable (or DEMARKUS_AUTH, as demarkus reads it)",
        );
    }
    if !line.is_empty() {
        t = t.with_text(line);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::LocalSource;
    use std::path::Path;

    #[test]
    fn quoted_input_is_short_and_on_one_line() {
        assert_eq!(short("/a\u{0}b\r\n.md"), "/a\\u{0}b\\r\\n.md");
        assert_eq!(short(&"x".repeat(10_000)).len(), 120);
    }

    fn session() -> Session {
        let kb = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/mcp/kb");
        Session::new(
            Arc::new(LocalSource::open(&kb, false).unwrap()),
            Settings::default(),
        )
    }

    #[test]
    fn resolves_paths_and_urls_of_this_source_only() {
        let s = session();
        let t = s.resolve("/large.md#pilots").unwrap();
        assert_eq!(
            (t.path.as_str(), t.fragment.as_deref()),
            ("/large.md", Some("pilots"))
        );
        let t = s.resolve("mark://local/notes/crew.md").unwrap();
        assert_eq!((t.path.as_str(), t.fragment), ("/notes/crew.md", None));
        assert_eq!(s.resolve("/small.md#").unwrap().fragment, None);
        assert_eq!(s.resolve("/doc.md/v2").unwrap().path, "/doc.md/v2");
        // One key per document: a space and its escape name the same one.
        assert_eq!(s.resolve("/a b.md").unwrap().path, "/a%20b.md");
        assert_eq!(s.resolve("/a%20b.md").unwrap().path, "/a%20b.md");
        for bad in [
            "mark://other/x.md",
            "https://example.com/x.md",
            "x.md",
            "/a%2Fb.md",
        ] {
            let e = s.resolve(bad).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
        assert_eq!(s.url_of("/a.md"), "mark://local/a.md");
    }

    #[test]
    fn a_wiki_argument_is_one_wiki_link_as_a_whole() {
        for link in [
            "[[Alpha Note]]",
            "[[Alpha Note#Details|shown]]",
            "![[Beta#^id]]",
        ] {
            assert!(wiki_argument(link).is_some(), "{link}");
        }
        for other in [
            "[[A]] and [[B]]",
            "see [[A]]",
            "[[A",
            "/a.md",
            "[a](b.md)",
            "[[]]",
        ] {
            assert!(wiki_argument(other).is_none(), "{other}");
        }
    }

    #[tokio::test]
    async fn a_fresh_entry_is_served_from_the_cache() {
        let s = session();
        let t0 = Instant::now();
        let Loaded::Doc(first) = s.load("/small.md", t0).await else {
            panic!("small.md loads");
        };
        assert_eq!(s.cache_bytes_used(), first.weight());
        assert!(first.weight() > first.doc.source().len());
        let Loaded::Doc(again) = s.load("/small.md", t0).await else {
            panic!("small.md loads again");
        };
        assert!(Arc::ptr_eq(&first, &again));
        s.forget("/small.md");
        assert_eq!(s.cache_bytes_used(), 0);
        assert!(
            matches!(s.load("/nope.md", t0).await, Loaded::Answer(t) if t.status == "not-found")
        );
    }

    /// The real engine over a folder; the first request is answered by the
    /// engine at once, then says so (`held`) and its answer is held until
    /// the test lets it go (`release`): interleavings without sleeps.
    struct HeldFirst {
        inner: LocalSource,
        gate: Mutex<Option<Gate>>,
    }

    struct Gate {
        held: tokio::sync::oneshot::Sender<()>,
        release: tokio::sync::oneshot::Receiver<()>,
    }

    /// The test's ends of a [`HeldFirst`]'s gate.
    struct Handles {
        held: tokio::sync::oneshot::Receiver<()>,
        release: tokio::sync::oneshot::Sender<()>,
    }

    impl HeldFirst {
        fn over(dir: &Path) -> (HeldFirst, Handles) {
            let (held_tx, held) = tokio::sync::oneshot::channel();
            let (release, release_rx) = tokio::sync::oneshot::channel();
            let source = HeldFirst {
                inner: LocalSource::open(dir, false).unwrap(),
                gate: Mutex::new(Some(Gate {
                    held: held_tx,
                    release: release_rx,
                })),
            };
            (source, Handles { held, release })
        }
    }

    impl Source for HeldFirst {
        fn send(
            &self,
            req: Request,
        ) -> BoxFuture<'_, Result<Response, crate::source::SourceError>> {
            let gate = lock(&self.gate).take();
            Box::pin(async move {
                let answer = self.inner.send(req).await;
                if let Some(gate) = gate {
                    let _ = gate.held.send(());
                    let _ = gate.release.await;
                }
                answer
            })
        }
        fn origin(&self) -> String {
            self.inner.origin()
        }
        fn describe(&self) -> String {
            self.inner.describe()
        }
    }

    /// A cold load of `/f.md` in a session over a folder holding it with
    /// `body` (or not at all), started and answered by the engine, its
    /// answer held at the gate: returns once the engine has read the file.
    struct HeldLoad {
        dir: tempfile::TempDir,
        session: Arc<Session>,
        load: tokio::task::JoinHandle<Loaded>,
        release: tokio::sync::oneshot::Sender<()>,
        t0: Instant,
    }

    async fn held_load(body: Option<&str>) -> HeldLoad {
        let dir = tempfile::tempdir().unwrap();
        if let Some(body) = body {
            std::fs::write(dir.path().join("f.md"), body).unwrap();
        }
        let (source, gate) = HeldFirst::over(dir.path());
        let session = Arc::new(Session::new(Arc::new(source), Settings::default()));
        let t0 = Instant::now();
        let load = tokio::spawn({
            let s = Arc::clone(&session);
            async move { s.load("/f.md", t0).await }
        });
        gate.held.await.unwrap();
        HeldLoad {
            dir,
            session,
            load,
            release: gate.release,
            t0,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slow_older_answer_never_replaces_a_newer_one() {
        // A cold load goes out first; its (old) answer is held back.
        let held = held_load(Some("# F\n\nSee [old](old.md).\n")).await;
        let (s, t0) = (&held.session, held.t0);
        std::fs::write(held.dir.path().join("f.md"), "# F\n\nSee [new](new.md).\n").unwrap();
        // A revalidation asked later gets the new text first.
        let t1 = t0 + std::time::Duration::from_millis(1);
        let Loaded::Doc(new) = s.load_with("/f.md", t1, Freshness::Revalidate).await else {
            panic!("f.md loads");
        };
        assert!(new.doc.source().contains("new.md"));
        held.release.send(()).unwrap();
        let Loaded::Doc(late) = held.load.await.unwrap() else {
            panic!("the slow load answers");
        };
        // The older answer lost: the late load, the cache and the graph
        // hold the new text.
        assert!(Arc::ptr_eq(&late, &new), "{}", late.doc.source());
        let Loaded::Doc(cached) = s.load("/f.md", t1).await else {
            panic!("cached");
        };
        assert!(Arc::ptr_eq(&cached, &new));
        assert_eq!(s.graph().backlinks("/new.md").0.len(), 1);
        assert!(s.graph().backlinks("/old.md").0.is_empty());
    }

    /// A load in flight across a write through this session: its answer
    /// (the text before the write) goes to its caller, but is not cached,
    /// so the next load within `--fresh-for` asks again and gets the new
    /// text; a load started after the write does not join the old request.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_load_in_flight_across_a_write_is_not_served_as_fresh_after_it() {
        // The engine has read the old text; the write lands, then forgets.
        let held = held_load(Some("# F\n\nBefore the write.\n")).await;
        let (s, t0) = (&held.session, held.t0);
        std::fs::write(held.dir.path().join("f.md"), "# F\n\nAfter the write.\n").unwrap();
        s.forget("/f.md");
        // Started after the write: a request of its own, answered at once
        // while the old one is still held.
        let after = tokio::time::timeout(std::time::Duration::from_secs(10), s.load("/f.md", t0))
            .await
            .expect("a load after the write joined the request from before it");
        let Loaded::Doc(after) = after else {
            panic!("f.md loads");
        };
        assert!(
            after.doc.source().contains("After"),
            "{}",
            after.doc.source()
        );
        held.release.send(()).unwrap();
        let Loaded::Doc(old) = held.load.await.unwrap() else {
            panic!("the load in flight answers");
        };
        assert!(
            old.doc.source().contains("Before"),
            "its caller gets its answer"
        );
        // Within --fresh-for, the cache serves the text after the write.
        let Loaded::Doc(cached) = s.load("/f.md", t0).await else {
            panic!("cached");
        };
        assert!(
            cached.doc.source().contains("After"),
            "{}",
            cached.doc.source()
        );
    }

    /// The race the other way round, without the second load: the answer
    /// from before the write must not be cached after the forget.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_answer_from_before_a_write_is_not_cached_after_the_forget() {
        let held = held_load(Some("# F\n\nBefore the write.\n")).await;
        let (s, t0) = (&held.session, held.t0);
        std::fs::write(held.dir.path().join("f.md"), "# F\n\nAfter the write.\n").unwrap();
        s.forget("/f.md");
        held.release.send(()).unwrap();
        assert!(matches!(held.load.await.unwrap(), Loaded::Doc(_)));
        assert_eq!(
            s.cache_bytes_used(),
            0,
            "nothing kept from before the write"
        );
        let Loaded::Doc(next) = s.load("/f.md", t0).await else {
            panic!("f.md loads");
        };
        assert!(next.doc.source().contains("After"), "{}", next.doc.source());
    }

    /// A `not-found` asked before the document was made, answered after a
    /// later load brought it: the document stays cached and in the graph.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stale_not_found_never_evicts_a_newer_document() {
        let held = held_load(None).await;
        let (s, t0) = (&held.session, held.t0);
        std::fs::write(held.dir.path().join("f.md"), "# F\n\nSee [x](x.md).\n").unwrap();
        let t1 = t0 + std::time::Duration::from_millis(1);
        let Loaded::Doc(made) = s.load_with("/f.md", t1, Freshness::Revalidate).await else {
            panic!("f.md loads once made");
        };
        held.release.send(()).unwrap();
        assert!(
            matches!(held.load.await.unwrap(), Loaded::Answer(t) if t.status == "not-found"),
            "the stale load's caller gets its not-found"
        );
        let Loaded::Doc(cached) = s.load("/f.md", t1).await else {
            panic!("still cached");
        };
        assert!(
            Arc::ptr_eq(&cached, &made),
            "served from the cache, not evicted"
        );
        assert_eq!(s.graph().backlinks("/x.md").0.len(), 1, "links kept");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn force_asks_the_source_even_within_the_freshness_window() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.md");
        std::fs::write(&file, "# F\n\nold\n").unwrap();
        let s = Session::new(
            Arc::new(LocalSource::open(dir.path(), false).unwrap()),
            Settings::default(),
        );
        let t0 = Instant::now();
        assert!(matches!(s.load("/f.md", t0).await, Loaded::Doc(_)));
        std::fs::write(&file, "# F\n\nnew\n").unwrap();
        let Loaded::Doc(fresh) = s.load("/f.md", t0).await else {
            panic!("f.md loads");
        };
        assert!(fresh.doc.source().contains("old"), "within --fresh-for");
        let Loaded::Doc(forced) = s.load_with("/f.md", t0, Freshness::Revalidate).await else {
            panic!("f.md loads");
        };
        assert!(forced.doc.source().contains("new"));
    }
}
