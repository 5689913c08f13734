//! The session's link graph and the bounded crawl that fills it.
//!
//! One [`SessionGraph`] per session holds a `link_graph::LinkGraph` behind a
//! lock. It is filled two ways: by every document the session fetches (the
//! session calls [`SessionGraph::index`]) and by a crawl of the source from
//! its root, driven here around `link_graph::CrawlPlan`: LIST recursion plus
//! conditional FETCH, many requests in flight, bounded by documents, bytes
//! and time. The crawl runs in a background task; a card waits for it at most
//! [`CrawlSettings::wait`], reporting progress and watching cancellation
//! through a [`CrawlWatcher`].
//!
//! It is not the planner (link-graph decides what to request next) nor a body
//! cache: crawled bodies are parsed for their links and dropped, unless the
//! session searches them itself (a server without LOOKUP, see
//! [`SessionGraph::enable_search`]): then every document the graph takes
//! in also goes into mark-store's [`DocumentIndex`], the engine's own
//! LOOKUP code.

use crate::cache::Stamp;
use crate::kept_graph::KeptGraph;
use crate::keys::{graph_key, wire_path};
use crate::list::Completeness;
use crate::source::{Source, SourceError};
use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use link_graph::{
    Backlink, Coverage, CrawlLimits, CrawlOutcome, CrawlPlan, CrawlStep, Edge, LinkGraph,
    LinkTarget,
};
use mark_proto::{Request, Response, Status, Verb};
use mark_store::lookup::DocumentIndex;
use markdown_slice::Document;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, watch};

/// Entries asked for per LIST page (the protocol's cap).
const LIST_PAGE: &str = "1000";

/// The least time between two progress notifications of one waiting call.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// Bounds and timing of the crawl (command-line options `--crawl-*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrawlSettings {
    /// Documents, bytes, total time and requests in flight of one crawl.
    pub limits: CrawlLimits,
    /// LIST pages one crawl sends at most: a server's endless folders or
    /// cursors stop there; a folder (`--root`) is listed whole
    /// (`usize::MAX`), bounded by bytes and time only.
    pub max_listings: usize,
    /// How long a card waits for an unfinished crawl before it answers with
    /// the graph as it is (the crawl goes on in the background).
    pub wait: Duration,
    /// Age of the graph (from its last crawl's start) after which a card
    /// crawls again; an older graph's age shows on the card.
    pub fresh_for: Duration,
    /// Crawl as soon as the session starts rather than at the first card.
    pub at_start: bool,
    /// Memory the link graph holds at most; past it a document's links are
    /// not kept and cards say the bound was reached.
    pub graph_bytes: usize,
}

impl Default for CrawlSettings {
    fn default() -> CrawlSettings {
        CrawlSettings {
            limits: CrawlLimits {
                max_documents: 5_000,
                max_bytes: 64 * 1024 * 1024,
                time_budget: Duration::from_secs(60),
                max_in_flight: 16,
            },
            max_listings: link_graph::DEFAULT_MAX_LISTINGS,
            wait: Duration::from_secs(10),
            fresh_for: Duration::from_secs(60),
            at_start: false,
            graph_bytes: 32 * 1024 * 1024,
        }
    }
}

/// Where the session's crawl stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrawlState {
    /// No crawl was started (or the last one was stopped before its end).
    Idle,
    /// A crawl is running.
    Running,
    /// The last crawl ended: within its bounds or at one of them.
    Done(CrawlOutcome),
}

/// A snapshot of the crawl, as progress notifications report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrawlProgress {
    /// Documents the crawl has fetched (or found unchanged) so far.
    pub fetched: usize,
    /// Documents the crawl's listings have named so far.
    pub listed: usize,
    /// Requests that failed so far.
    pub failures: usize,
    /// The first failure, as one clause (`LIST /private/ answered unauthorized`).
    pub first_failure: Option<String>,
    /// Listings whose answer said nothing of completeness (an older server
    /// that does not page LIST): the graph cannot be called complete.
    pub unstated_listings: usize,
    /// Running, finished, or not started.
    pub state: CrawlState,
}

impl CrawlProgress {
    fn idle() -> CrawlProgress {
        CrawlProgress {
            fetched: 0,
            listed: 0,
            failures: 0,
            first_failure: None,
            unstated_listings: 0,
            state: CrawlState::Idle,
        }
    }

    /// One line for a progress notification.
    pub fn message(&self) -> String {
        format!(
            "link graph: {} of {} listed documents read",
            self.fetched, self.listed
        )
    }

    /// A parenthesised one-line note on the crawl when it did not end
    /// cleanly (stopped at a bound, still running, failed requests,
    /// listings that did not say they were complete, listings whose paging
    /// looped); `None` otherwise.
    pub fn note(&self) -> Option<String> {
        let stopped = match &self.state {
            CrawlState::Done(o) => o.stopped.map(|s| format!("crawl stopped: {s}")),
            CrawlState::Running => Some(format!(
                "crawl still running: {} of {} listed documents read",
                self.fetched, self.listed
            )),
            CrawlState::Idle => None,
        };
        let failed = self.first_failure.as_ref().map(|f| {
            format!(
                "{} crawl request{} failed, first: {}",
                self.failures,
                if self.failures == 1 { "" } else { "s" },
                crate::envelope::one_line(f, 100)
            )
        });
        let unstated = (self.unstated_listings > 0).then(|| {
            format!(
                "{} listing{} did not say whether {} complete (the server does not page LIST)",
                self.unstated_listings,
                if self.unstated_listings == 1 { "" } else { "s" },
                if self.unstated_listings == 1 {
                    "it is"
                } else {
                    "they are"
                },
            )
        });
        let looped = match &self.state {
            CrawlState::Done(o) if o.repeated_cursors > 0 => Some(format!(
                "{} listing{} ended early: the server repeated a next-cursor it had already given",
                o.repeated_cursors,
                if o.repeated_cursors == 1 { "" } else { "s" },
            )),
            _ => None,
        };
        let clauses: Vec<String> = [stopped, failed, unstated, looped]
            .into_iter()
            .flatten()
            .collect();
        (!clauses.is_empty()).then(|| format!("({})", clauses.join("; ")))
    }
}

/// What a waiting call is told and what may interrupt it: the MCP adapter
/// sends progress notifications and watches the request's cancellation; the
/// CLI watches nothing ([`Unwatched`]).
pub trait CrawlWatcher: Send + Sync {
    /// Called when the crawl made progress (at most every 100 ms).
    fn progress(&self, progress: &CrawlProgress) -> BoxFuture<'_, ()>;
    /// Completes when the caller gave up.
    fn cancelled(&self) -> BoxFuture<'_, ()>;
}

/// A watcher that reports nothing and is never cancelled.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unwatched;

impl CrawlWatcher for Unwatched {
    fn progress(&self, _: &CrawlProgress) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
    fn cancelled(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::pending())
    }
}

/// How a wait for the crawl ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// No crawl is running (it ended, or none was started).
    Settled,
    /// The wait ran out while the crawl goes on.
    TimedOut,
    /// The caller was cancelled.
    Cancelled,
}

/// The graph and, per indexed document, the stamp of the answer its links
/// came from: an older answer (a crawl FETCH sent before a session load
/// that answered first) never replaces newer links. When the session
/// searches itself, the same documents in its search index.
#[derive(Debug, Default)]
struct Indexed {
    graph: LinkGraph,
    stamps: HashMap<String, Stamp>,
    search: Option<DocumentIndex>,
    /// Documents were indexed or removed since the graph was last kept.
    changed: bool,
}

impl Indexed {
    /// Indexes `doc` as `path` (served with `modified`) unless the links
    /// held came from a newer answer.
    fn index<S: AsRef<str>>(
        &mut self,
        path: &str,
        etag: &str,
        doc: &Document<S>,
        modified: Option<&str>,
        stamp: Stamp,
    ) {
        if self
            .stamps
            .get(path)
            .is_some_and(|held| !stamp.supersedes(held))
        {
            return;
        }
        let mut taken = match self.graph.index_document(path, etag, doc) {
            Ok(_) => true,
            Err(e) => {
                tracing::debug!(path, error = %e, "not indexed in the link graph");
                false
            }
        };
        if let Some(search) = &mut self.search {
            match search.insert(&wire_path(path), doc.source().as_bytes(), modified) {
                Ok(()) => taken = true,
                Err(e) => tracing::debug!(path, error = %e, "not indexed for search"),
            }
        }
        if taken {
            self.stamps.insert(path.to_string(), stamp);
            self.changed = true;
        }
    }

    fn remove(&mut self, path: &str) {
        self.changed = true;
        self.graph.remove(path);
        self.stamps.remove(path);
        if let Some(search) = &mut self.search
            && let Err(e) = search.remove(&wire_path(path))
        {
            tracing::debug!(path, error = %e, "not removed from the search index");
        }
    }

    /// The etag a crawl FETCH of `path` may be conditional on: the graph's,
    /// unless the session searches and its index lacks the document (then
    /// its body is needed again).
    fn held_etag(&self, path: &str) -> Option<&str> {
        let etag = self.graph.etag(path)?;
        self.search
            .as_ref()
            .is_none_or(|s| s.contains(&wire_path(path)))
            .then_some(etag)
    }

    /// Forgets the indexed documents a whole crawl's listings no longer
    /// name, unless read since the crawl started (`listed`: what they named).
    fn forget_unlisted(&mut self, listed: &std::collections::HashSet<String>, started: Instant) {
        let gone: Vec<String> = self
            .stamps
            .iter()
            .filter(|(path, stamp)| !listed.contains(*path) && stamp.asked < started)
            .map(|(path, _)| path.clone())
            .collect();
        for path in gone {
            self.remove(&path);
        }
    }
}

struct Shared {
    graph: RwLock<Indexed>,
    source: Arc<dyn Source>,
    settings: CrawlSettings,
    progress: watch::Sender<CrawlProgress>,
    /// The stop signal of the running crawl, if one runs.
    running: Mutex<Option<Arc<Notify>>>,
    /// The last crawl that ran to its end.
    last: Mutex<Option<LastCrawl>>,
    /// The graph kept between sessions, if any ([`SessionGraph::keep_in`]).
    kept: std::sync::OnceLock<KeptGraph>,
    /// Whether the kept graph was loaded (by the first crawl).
    kept_loaded: std::sync::atomic::AtomicBool,
}

/// When the last finished crawl started, and whether it saw everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LastCrawl {
    started: Instant,
    complete: bool,
}

/// Whether a card should crawl now: not while a crawl runs; then when asked
/// to (`force`), when none has finished, or when the last finished one
/// started `fresh_for` or more before `now`.
fn should_crawl(
    running: bool,
    last_started: Option<Instant>,
    now: Instant,
    fresh_for: Duration,
    force: bool,
) -> bool {
    !running
        && (force || last_started.is_none_or(|at| now.saturating_duration_since(at) >= fresh_for))
}

/// `42 s`, `3 min`, `2 h`: an age on a card.
pub fn age_text(age: Duration) -> String {
    match age.as_secs() {
        s if s < 120 => format!("{s} s"),
        s if s < 2 * 3600 => format!("{} min", s / 60),
        s => format!("{} h", s / 3600),
    }
}

/// The link graph of one session and its crawl: see the module documentation.
#[derive(Clone)]
pub struct SessionGraph {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for SessionGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionGraph")
            .field("settings", &self.shared.settings)
            .field("progress", &*self.shared.progress.borrow())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    // The graph stays consistent after every single operation, so a poisoned
    // lock (a panic elsewhere) still holds a usable graph.
    fn read(&self) -> RwLockReadGuard<'_, Indexed> {
        self.graph.read().unwrap_or_else(|e| e.into_inner())
    }
    fn write(&self) -> RwLockWriteGuard<'_, Indexed> {
        self.graph.write().unwrap_or_else(|e| e.into_inner())
    }
}

/// Stops the session's crawl when dropped while it holds one: armed by a
/// call that started a crawl, so that cancelling (or dropping) the call
/// stops it; disarmed (`.0 = None`) once the call no longer waits.
pub struct StopOnDrop<'g>(pub Option<&'g SessionGraph>);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(graph) = self.0 {
            graph.stop();
        }
    }
}

/// The folder holding `path`, with a trailing `/` (`/a/b.md` → `/a/`).
pub fn parent_dir(path: &str) -> &str {
    path.rfind('/').map_or("/", |i| &path[..=i])
}

/// Whether `path` names a current markdown document (not `/doc.md/v2`, not a folder).
fn is_document_path(path: &str) -> bool {
    path.rsplit('/')
        .next()
        .is_some_and(|name| name.len() > 3 && name.to_ascii_lowercase().ends_with(".md"))
}

impl SessionGraph {
    /// An empty graph over `source`; no crawl runs yet.
    pub fn new(source: Arc<dyn Source>, settings: CrawlSettings) -> SessionGraph {
        SessionGraph {
            shared: Arc::new(Shared {
                graph: RwLock::new(Indexed {
                    graph: LinkGraph::with_byte_bound(settings.graph_bytes),
                    stamps: HashMap::new(),
                    search: None,
                    changed: false,
                }),
                source,
                settings,
                progress: watch::Sender::new(CrawlProgress::idle()),
                running: Mutex::new(None),
                last: Mutex::new(None),
                kept: std::sync::OnceLock::new(),
                kept_loaded: std::sync::atomic::AtomicBool::new(false),
            }),
        }
    }

    /// The crawl's settings.
    pub fn settings(&self) -> &CrawlSettings {
        &self.shared.settings
    }

    /// Keeps the graph between sessions in `kept`: the first crawl starts
    /// from what it holds (and revalidates it), and every crawl that ends
    /// complete writes it (see [`crate::kept_graph`]). Set once; later
    /// calls change nothing.
    pub fn keep_in(&self, kept: KeptGraph) {
        let _ = self.shared.kept.set(kept);
    }

    /// Where the crawl stands now.
    pub fn progress(&self) -> CrawlProgress {
        self.shared.progress.borrow().clone()
    }

    /// Starts a crawl in the background when `should_crawl` says so at
    /// `now`: none has finished, the graph is older than
    /// [`CrawlSettings::fresh_for`], or `force`. Returns whether this call
    /// started it. A crawl again goes by conditional FETCHes, and forgets
    /// the documents its listings no longer name. Must be called inside a
    /// tokio runtime.
    pub fn start(&self, now: Instant, force: bool) -> bool {
        let mut running = lock(&self.shared.running);
        let last_started = lock(&self.shared.last).map(|l| l.started);
        let fresh_for = self.shared.settings.fresh_for;
        if !should_crawl(running.is_some(), last_started, now, fresh_for, force) {
            return false;
        }
        let stop = Arc::new(Notify::new());
        *running = Some(Arc::clone(&stop));
        self.shared.progress.send_modify(|p| {
            *p = CrawlProgress {
                state: CrawlState::Running,
                ..CrawlProgress::idle()
            }
        });
        let shared = Arc::clone(&self.shared);
        tokio::spawn(async move {
            let outcome = crawl(&shared, &stop, &Instant::now).await;
            // State and slot change under one lock, so `start` never sees a
            // crawl that has ended but is not yet marked so.
            let mut running = lock(&shared.running);
            shared.progress.send_modify(|p| {
                p.state = match outcome {
                    Some(o) => CrawlState::Done(o),
                    None => CrawlState::Idle,
                }
            });
            *running = None;
        });
        true
    }

    /// The graph's age at `now` when it is older than
    /// [`CrawlSettings::fresh_for`] (from its last finished crawl's start);
    /// `None` while it is fresh or no crawl has finished.
    pub fn stale_age(&self, now: Instant) -> Option<Duration> {
        let started = lock(&self.shared.last).as_ref()?.started;
        let age = now.saturating_duration_since(started);
        (age >= self.shared.settings.fresh_for).then_some(age)
    }

    /// Stops the running crawl, if any: requests in flight are dropped, the
    /// graph keeps what it has and stays partial; the next [`Self::start`]
    /// crawls again (conditional FETCHes make that cheap).
    pub fn stop(&self) {
        if let Some(stop) = lock(&self.shared.running).as_ref() {
            stop.notify_one();
        }
    }

    /// Waits until no crawl is running, for at most `at_most`, telling
    /// `watcher` the progress and giving up when it is cancelled.
    pub async fn wait(&self, at_most: Duration, watcher: &dyn CrawlWatcher) -> Waited {
        let mut rx = self.shared.progress.subscribe();
        // A wait too long to add to the clock is no deadline at all.
        let deadline = tokio::time::Instant::now().checked_add(at_most);
        let mut last_sent: Option<tokio::time::Instant> = None;
        loop {
            let progress = rx.borrow_and_update().clone();
            if progress.state != CrawlState::Running {
                return Waited::Settled;
            }
            let now = tokio::time::Instant::now();
            if last_sent.is_none_or(|at| now.duration_since(at) >= PROGRESS_EVERY) {
                watcher.progress(&progress).await;
                last_sent = Some(now);
            }
            tokio::select! {
                changed = rx.changed() => {
                    if changed.is_err() {
                        return Waited::Settled;
                    }
                }
                () = sleep_until(deadline) => return Waited::TimedOut,
                () = watcher.cancelled() => return Waited::Cancelled,
            }
        }
    }

    /// Starts a crawl when [`Self::start`] says so and waits for it within
    /// [`CrawlSettings::wait`] (see [`Self::wait`]); a cancelled wait stops
    /// a crawl this call started.
    pub async fn start_and_wait(
        &self,
        now: Instant,
        force: bool,
        watcher: &dyn CrawlWatcher,
    ) -> Waited {
        let mut stop_on_drop = StopOnDrop(self.start(now, force).then_some(self));
        let waited = self.wait(self.shared.settings.wait, watcher).await;
        if waited != Waited::Cancelled {
            stop_on_drop.0 = None;
        }
        waited
    }

    /// Makes the session search the documents it takes in itself (for a
    /// server without LOOKUP): from now on each document the graph takes
    /// in goes into a search index too. Those taken in before are not in
    /// it ([`Self::search_misses_documents`]); the next crawl fetches their
    /// bodies again.
    pub fn enable_search(&self) {
        let mut held = self.shared.write();
        if held.search.is_none() {
            held.search = Some(DocumentIndex::new());
        }
    }

    /// Whether the session searches the documents it took in itself.
    pub fn searches(&self) -> bool {
        self.shared.read().search.is_some()
    }

    /// Whether the search index holds fewer documents than the graph.
    pub fn search_misses_documents(&self) -> bool {
        let held = self.shared.read();
        held.search
            .as_ref()
            .is_some_and(|s| s.len() < held.graph.coverage().indexed)
    }

    /// A LOOKUP answered over the documents the session took in, and how
    /// many those are; `None` unless [`Self::enable_search`] was called.
    pub fn search(&self, request: &Request) -> Option<(Response, usize)> {
        let mut held = self.shared.write();
        let search = held.search.as_mut()?;
        Some((search.lookup(request), search.len()))
    }

    /// Adds (or, with a new etag, replaces) the outbound links of a document
    /// the session read (served with `modified`), unless the graph holds
    /// links from a newer answer (`stamp` is this answer's). Pinned versions
    /// and non-documents are left out; without an etag the body's hash
    /// stands in.
    pub fn index<S: AsRef<str>>(
        &self,
        path: &str,
        etag: Option<&str>,
        doc: &Document<S>,
        modified: Option<&str>,
        stamp: Stamp,
    ) {
        let path = &*graph_key(path);
        if !is_document_path(path) {
            return;
        }
        let hash;
        let etag = match etag {
            Some(e) => e,
            None => {
                hash = blake3::hash(doc.source().as_bytes()).to_hex();
                hash.as_str()
            }
        };
        self.shared.write().index(path, etag, doc, modified, stamp);
    }

    /// Forgets a document that answered `not-found` or `archived` to a
    /// request stamped `stamp`, unless the links held came from a newer answer.
    pub fn forget(&self, path: &str, stamp: Stamp) {
        let path = graph_key(path);
        let mut held = self.shared.write();
        if held
            .stamps
            .get(&*path)
            .is_none_or(|kept| stamp.supersedes(kept))
        {
            held.remove(&path);
        }
    }

    /// The links into the document with key `path` (see [`crate::keys`]) and
    /// how complete the graph is.
    pub fn backlinks(&self, path: &str) -> (Vec<Backlink>, Coverage) {
        let coverage = self.coverage();
        (
            self.shared.read().graph.backlinks(&graph_key(path)),
            coverage,
        )
    }

    /// How complete the graph is.
    pub fn coverage(&self) -> Coverage {
        let complete = lock(&self.shared.last).is_some_and(|l| l.complete);
        let coverage = self.shared.read().graph.coverage();
        // Complete while the last finished crawl saw everything and every
        // document known since is indexed (a later crawl that failed or hit
        // a bound makes it partial again).
        Coverage {
            complete: complete && coverage.known.is_none_or(|k| k == coverage.indexed),
            ..coverage
        }
    }

    /// Where each link of the document with key `path` points now: a note
    /// name by the vault rule over the documents the graph knows (see
    /// [`link_graph::document_edges`]).
    pub fn resolve_links<S: AsRef<str>>(
        &self,
        path: &str,
        doc: &Document<S>,
    ) -> Vec<(Edge, LinkTarget)> {
        let path = graph_key(path);
        let graph = &self.shared.read().graph;
        link_graph::document_edges(&path, doc)
            .map(|edge| {
                let target = graph.resolve_edge(&path, &edge);
                (edge, target)
            })
            .collect()
    }

    /// The known notes (graph paths) whose names are most like `name`, at
    /// most `max` (see [`LinkGraph::nearest_notes`]).
    pub fn nearest_notes(&self, name: &str, max: usize) -> Vec<String> {
        self.shared.read().graph.nearest_notes(name, max)
    }

    /// The title the document with key `path` was indexed with.
    pub fn title(&self, path: &str) -> Option<String> {
        self.shared
            .read()
            .graph
            .title(&graph_key(path))
            .map(str::to_string)
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The request for one step: LIST paged, FETCH conditional on the etag the
/// graph holds.
fn request_for(step: &CrawlStep, etag: Option<&str>) -> Request {
    match step {
        CrawlStep::List { dir, cursor } => {
            let req = Request::new(Verb::List, wire_path(dir)).with_meta("page-size", LIST_PAGE);
            match cursor {
                Some(c) => req.with_meta("cursor", c.as_str()),
                None => req,
            }
        }
        CrawlStep::Fetch { path } => {
            let req = Request::new(Verb::Fetch, wire_path(path));
            match etag {
                Some(e) => req.with_meta("if-none-match", e),
                None => req,
            }
        }
    }
}

/// Runs one crawl to its end (`Some(outcome)`) or until `stop` is notified
/// (`None`). `clock` gives the time the plan's deadline is checked against.
async fn crawl(
    shared: &Shared,
    stop: &Notify,
    clock: &(dyn Fn() -> Instant + Sync),
) -> Option<CrawlOutcome> {
    restore_kept(shared, clock()).await;
    let mut plan = match CrawlPlan::new("/", shared.settings.limits, clock()) {
        Ok(p) => p.with_max_listings(shared.settings.max_listings),
        Err(e) => {
            tracing::warn!(error = %e, "crawl not started");
            return None;
        }
    };
    let started = clock();
    let mut in_flight = FuturesUnordered::new();
    // Every document this crawl's listings named, and whether every listing
    // answered in full: only then is a document they do not name gone.
    let mut listed_docs = std::collections::HashSet::new();
    let mut whole_listing = true;
    loop {
        while let Some(step) = plan.next_step(clock()) {
            let req = match &step {
                CrawlStep::Fetch { path } => request_for(&step, shared.read().held_etag(path)),
                CrawlStep::List { .. } => request_for(&step, None),
            };
            let source = Arc::clone(&shared.source);
            let asked = clock();
            in_flight.push(async move {
                let answer = source.send(req).await;
                (step, asked, answer)
            });
        }
        let answered = tokio::select! {
            answered = in_flight.next() => answered,
            () = stop.notified() => return None,
        };
        let Some((step, asked, answer)) = answered else {
            break;
        };
        let reported = report(shared, &mut plan, &step, answer, (asked, clock()));
        if matches!(step, CrawlStep::List { .. })
            && (reported.failure.is_some() || reported.unstated)
        {
            whole_listing = false;
        }
        listed_docs.extend(reported.found.iter().cloned());
        let failures = plan.outcome().failures;
        shared.progress.send_modify(|p| {
            p.fetched += usize::from(reported.fetched);
            p.listed += reported.found.len();
            p.unstated_listings += usize::from(reported.unstated);
            p.failures = failures;
            if p.first_failure.is_none() {
                p.first_failure = reported.failure;
            }
        });
    }
    let outcome = plan.outcome();
    let listing_cut = matches!(
        outcome.stopped,
        Some(link_graph::StopReason::Listings(_) | link_graph::StopReason::Deadline(_))
    );
    if whole_listing && !listing_cut {
        shared.write().forget_unlisted(&listed_docs, started);
    }
    let complete = outcome.complete && shared.progress.borrow().unstated_listings == 0;
    *lock(&shared.last) = Some(LastCrawl { started, complete });
    if complete {
        write_kept(shared).await;
    }
    Some(outcome)
}

/// Before the session's first crawl: the kept graph, stamped `now` (any
/// answer the crawl gets is newer).
async fn restore_kept(shared: &Shared, now: Instant) {
    use std::sync::atomic::Ordering;
    let Some(kept) = shared.kept.get().cloned() else {
        return;
    };
    if shared.kept_loaded.swap(true, Ordering::SeqCst) {
        return;
    }
    let docs = tokio::task::spawn_blocking(move || kept.load())
        .await
        .unwrap_or_default();
    let held = &mut *shared.write();
    let stamp = Stamp::new(None, now, now);
    KeptGraph::restore(docs, &mut held.graph, &mut held.stamps, stamp);
}

/// After a complete crawl that changed the graph: the graph written as
/// the kept one.
async fn write_kept(shared: &Shared) {
    let Some(kept) = shared.kept.get().cloned() else {
        return;
    };
    if !std::mem::take(&mut shared.write().changed) {
        return;
    }
    let bytes = kept.encode(&shared.read().graph);
    let written = tokio::task::spawn_blocking(move || kept.write(&bytes)).await;
    if let Ok(Err(e)) = written {
        tracing::warn!(error = %e, "the link graph could not be kept for the next session");
    }
}

/// What one answered step added to the crawl's progress.
#[derive(Debug, Default)]
struct Reported {
    fetched: bool,
    /// Documents a listing named first.
    found: Vec<String>,
    /// A listing that said nothing of its completeness.
    unstated: bool,
    failure: Option<String>,
}

impl Reported {
    fn failed(what: String) -> Reported {
        Reported {
            failure: Some(what),
            ..Reported::default()
        }
    }
}

/// Feeds one answer to the plan and the graph.
fn report(
    shared: &Shared,
    plan: &mut CrawlPlan,
    step: &CrawlStep,
    answer: Result<Response, SourceError>,
    asked_answered: (Instant, Instant),
) -> Reported {
    let reported = match (step, answer) {
        (_, Err(e)) => Err(format!("{} failed: {e}", describe(step))),
        (CrawlStep::List { dir, .. }, Ok(resp)) => listed(shared, plan, dir, &resp),
        (CrawlStep::Fetch { path }, Ok(resp)) => fetched(shared, plan, path, resp, asked_answered),
    };
    match reported {
        Ok(r) => r,
        Err(failure) => {
            if let Err(e) = plan.on_failed(step) {
                tracing::warn!(error = %e, "crawl bookkeeping");
            }
            Reported::failed(failure)
        }
    }
}

fn describe(step: &CrawlStep) -> String {
    match step {
        CrawlStep::List { dir, .. } => format!("LIST {dir}"),
        CrawlStep::Fetch { path } => format!("FETCH {path}"),
    }
}

fn listed(
    shared: &Shared,
    plan: &mut CrawlPlan,
    dir: &str,
    resp: &Response,
) -> Result<Reported, String> {
    if resp.status != Status::Ok {
        return Err(format!("LIST {dir} answered {}", resp.status.as_str()));
    }
    let entries = mark_proto::list::parse(&resp.body)
        .map_err(|e| format!("LIST {dir} gave a malformed listing ({e})"))?;
    let completeness = Completeness::of(resp);
    let unstated = completeness == Completeness::Unstated;
    let next = match completeness {
        Completeness::Partial(next) => next,
        Completeness::Complete | Completeness::Unstated => None,
    };
    let found = plan
        .on_listed(dir, entries, next)
        .map_err(|e| e.to_string())?;
    let graph = &mut shared.write().graph;
    for path in &found {
        if let Err(e) = graph.note_discovered(path) {
            tracing::debug!(path, error = %e, "listed name left out of the graph");
        }
    }
    Ok(Reported {
        found,
        unstated,
        ..Reported::default()
    })
}

fn fetched(
    shared: &Shared,
    plan: &mut CrawlPlan,
    path: &str,
    resp: Response,
    (asked, answered): (Instant, Instant),
) -> Result<Reported, String> {
    let bytes = match resp.status {
        Status::Ok => {
            let etag = resp
                .meta("etag")
                .or_else(|| resp.meta("content-hash"))
                .map(str::to_string)
                .unwrap_or_else(|| blake3::hash(&resp.body).to_hex().to_string());
            let stamp = Stamp::new(resp.meta("version"), asked, answered);
            let len = resp.body.len() as u64;
            let known = shared.read().held_etag(path) == Some(etag.as_str());
            let modified = resp.meta("modified");
            match std::str::from_utf8(&resp.body) {
                // Parsed outside the lock; indexed only if no newer answer
                // came meanwhile.
                Ok(text) if !known => {
                    let doc = Document::parse(text);
                    shared.write().index(path, &etag, &doc, modified, stamp);
                }
                Ok(_) => {}
                // A body that is not UTF-8 is indexed with no links, so the
                // graph counts it as read (and searched as the engine reads it).
                Err(_) => {
                    let mut held = shared.write();
                    if let Err(e) = held.graph.update(path, &etag, None, []) {
                        tracing::debug!(path, error = %e, "crawled document not indexed");
                    }
                    if let Some(search) = &mut held.search
                        && let Err(e) = search.insert(&wire_path(path), &resp.body, modified)
                    {
                        tracing::debug!(path, error = %e, "crawled document not searched");
                    }
                }
            }
            len
        }
        Status::NotModified => 0,
        Status::NotFound | Status::Archived => {
            shared.write().remove(path);
            0
        }
        other => return Err(format!("FETCH {path} answered {}", other.as_str())),
    };
    plan.on_fetched(path, bytes).map_err(|e| e.to_string())?;
    Ok(Reported {
        fetched: true,
        ..Reported::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::LocalSource;
    use std::path::Path;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The real engine over the fixture, counting how many requests are out at once.
    struct Counted {
        inner: LocalSource,
        now: AtomicUsize,
        most: AtomicUsize,
    }

    impl Source for Counted {
        fn send(&self, req: Request) -> BoxFuture<'_, Result<Response, SourceError>> {
            Box::pin(async move {
                let out = self.now.fetch_add(1, Ordering::SeqCst) + 1;
                self.most.fetch_max(out, Ordering::SeqCst);
                let answer = self.inner.send(req).await;
                self.now.fetch_sub(1, Ordering::SeqCst);
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

    fn counted() -> Arc<Counted> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/explore");
        Arc::new(Counted {
            inner: LocalSource::open(&root, false).unwrap(),
            now: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
        })
    }

    fn graph_over(source: Arc<Counted>, limits: CrawlLimits) -> SessionGraph {
        let settings = CrawlSettings {
            limits,
            ..CrawlSettings::default()
        };
        SessionGraph::new(source, settings)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_full_crawl_is_complete_and_a_second_moves_no_body() {
        let source = counted();
        let graph = graph_over(Arc::clone(&source), CrawlSettings::default().limits);
        let stop = Notify::new();
        let outcome = crawl(&graph.shared, &stop, &Instant::now).await.unwrap();
        assert!(outcome.complete, "{outcome:?}");
        assert_eq!((outcome.documents, outcome.listings), (31, 4));
        let (backlinks, coverage) = graph.backlinks("/hub.md");
        assert!(coverage.complete);
        assert_eq!(graph.title("/hub.md").as_deref(), Some("Harbour Hub"));
        let sources: std::collections::HashSet<_> =
            backlinks.iter().map(|b| b.source.clone()).collect();
        assert_eq!(sources.len(), 29);
        let again = crawl(&graph.shared, &stop, &Instant::now).await.unwrap();
        assert_eq!((again.documents, again.bytes), (31, 0));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_more_than_the_concurrency_bound_is_in_flight() {
        for bound in [1, 3] {
            let source = counted();
            let limits = CrawlLimits {
                max_in_flight: bound,
                ..CrawlSettings::default().limits
            };
            let graph = graph_over(Arc::clone(&source), limits);
            let outcome = crawl(&graph.shared, &Notify::new(), &Instant::now)
                .await
                .unwrap();
            assert!(outcome.complete);
            let most = source.most.load(Ordering::SeqCst);
            assert!(
                most <= bound && most >= 1,
                "{most} in flight, bound {bound}"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_time_budget_is_read_from_the_clock_it_is_given() {
        // Each reading of the clock is one second later: the 5 s budget runs
        // out after a few steps, without sleeping.
        let t0 = Instant::now();
        let ticks = AtomicUsize::new(0);
        let clock = || t0 + Duration::from_secs(ticks.fetch_add(1, Ordering::SeqCst) as u64);
        let limits = CrawlLimits {
            time_budget: Duration::from_secs(5),
            max_in_flight: 1,
            ..CrawlSettings::default().limits
        };
        let graph = graph_over(counted(), limits);
        let outcome = crawl(&graph.shared, &Notify::new(), &clock).await.unwrap();
        assert_eq!(
            outcome.stopped,
            Some(link_graph::StopReason::Deadline(Duration::from_secs(5)))
        );
        assert!(!outcome.complete && outcome.documents < 31);
        assert!(!graph.backlinks("/hub.md").1.complete);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_time_budget_past_the_clock_means_no_deadline() {
        let limits = CrawlLimits {
            time_budget: Duration::MAX,
            ..CrawlSettings::default().limits
        };
        let graph = graph_over(counted(), limits);
        let outcome = crawl(&graph.shared, &Notify::new(), &Instant::now)
            .await
            .unwrap();
        assert!(outcome.complete, "{outcome:?}");
    }

    /// A watcher already cancelled.
    struct Gone;
    impl CrawlWatcher for Gone {
        fn progress(&self, _: &CrawlProgress) -> BoxFuture<'_, ()> {
            Box::pin(std::future::ready(()))
        }
        fn cancelled(&self) -> BoxFuture<'_, ()> {
            Box::pin(std::future::ready(()))
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cancelled_wait_and_a_stopped_crawl_leave_the_graph_partial() {
        let limits = CrawlLimits {
            max_in_flight: 1,
            ..CrawlSettings::default().limits
        };
        let graph = graph_over(counted(), limits);
        let t0 = Instant::now();
        assert!(graph.start(t0, false));
        assert!(!graph.start(t0, true), "one crawl at a time");
        assert_eq!(
            graph.wait(Duration::from_secs(10), &Gone).await,
            Waited::Cancelled
        );
        graph.stop();
        assert_eq!(
            graph.wait(Duration::from_secs(10), &Unwatched).await,
            Waited::Settled
        );
        assert_eq!(graph.progress().state, CrawlState::Idle);
        assert!(!graph.backlinks("/hub.md").1.complete);
        // A stopped crawl starts again and completes.
        assert!(graph.start(t0, false));
        assert_eq!(
            graph.wait(Duration::from_secs(10), &Unwatched).await,
            Waited::Settled
        );
        assert!(matches!(graph.progress().state, CrawlState::Done(o) if o.complete));
        assert!(graph.backlinks("/hub.md").1.complete);
        assert!(
            !graph.start(t0, false),
            "a fresh graph is not crawled again"
        );
        assert_eq!(graph.stale_age(t0), None);
        let later = t0 + graph.settings().fresh_for + Duration::from_secs(5);
        assert!(
            graph
                .stale_age(later)
                .is_some_and(|age| age >= graph.settings().fresh_for)
        );
        assert!(graph.start(later, false), "an old graph is crawled again");
        graph.wait(Duration::from_secs(10), &Unwatched).await;
        assert!(graph.start(later, true), "force crawls a fresh graph again");
        graph.wait(Duration::from_secs(10), &Unwatched).await;
    }

    #[test]
    fn an_older_answer_never_re_indexes_old_links_over_newer_ones() {
        let t0 = Instant::now();
        let secs = Duration::from_secs;
        let old = Document::parse("See [old](old.md).\n");
        let new = Document::parse("See [new](new.md).\n");
        let mut indexed = Indexed {
            search: Some(DocumentIndex::new()),
            ..Indexed::default()
        };
        // The search index follows the graph's rule.
        let finds = |indexed: &mut Indexed, word: &str| {
            let req = Request::new(Verb::Lookup, "/")
                .with_meta("query", word)
                .with_meta("match", "body");
            let found = indexed.search.as_mut().unwrap().lookup(&req);
            found.meta("matches") == Some("1")
        };
        // A session load asked at t1 answered first; the crawl's FETCH asked
        // at t0 answers last, with the old text (a plain folder: version 1).
        indexed.index(
            "/f.md",
            "e-new",
            &new,
            None,
            Stamp::new(Some("1"), t0 + secs(1), t0 + secs(2)),
        );
        indexed.index(
            "/f.md",
            "e-old",
            &old,
            None,
            Stamp::new(Some("1"), t0, t0 + secs(3)),
        );
        assert_eq!(indexed.graph.etag("/f.md"), Some("e-new"));
        assert_eq!(indexed.graph.backlinks("/new.md").len(), 1);
        assert!(indexed.graph.backlinks("/old.md").is_empty());
        assert!(finds(&mut indexed, "new") && !finds(&mut indexed, "old"));
        // Asked after that answer, a later read replaces it.
        indexed.index(
            "/f.md",
            "e-old",
            &old,
            None,
            Stamp::new(Some("1"), t0 + secs(4), t0 + secs(4)),
        );
        assert_eq!(indexed.graph.etag("/f.md"), Some("e-old"));
        assert!(finds(&mut indexed, "old") && !finds(&mut indexed, "new"));
        indexed.remove("/f.md");
        assert!(!finds(&mut indexed, "old"));
    }

    #[test]
    fn a_graph_is_crawled_again_once_older_than_its_bound() {
        let t0 = Instant::now();
        let bound = Duration::from_secs(60);
        assert!(should_crawl(false, None, t0, bound, false), "never crawled");
        assert!(!should_crawl(true, None, t0, bound, true), "one at a time");
        let just_before = t0 + bound - Duration::from_millis(1);
        assert!(!should_crawl(false, Some(t0), just_before, bound, false));
        assert!(
            should_crawl(false, Some(t0), just_before, bound, true),
            "force"
        );
        assert!(should_crawl(false, Some(t0), t0 + bound, bound, false));
        assert_eq!(age_text(Duration::from_secs(42)), "42 s");
        assert_eq!(age_text(Duration::from_secs(300)), "5 min");
        assert_eq!(age_text(Duration::from_secs(3 * 3600)), "3 h");
    }

    #[test]
    fn only_current_markdown_documents_are_indexed() {
        assert!(is_document_path("/a/b.md"));
        assert!(is_document_path("/README.MD"));
        for not in ["/a/b.md/v2", "/dir/", "/.md", "/sha256-00", "/a.txt"] {
            assert!(!is_document_path(not), "{not}");
        }
    }

    #[test]
    fn a_path_s_folder_keeps_its_trailing_slash() {
        assert_eq!(parent_dir("/a/b.md"), "/a/");
        assert_eq!(parent_dir("/b.md"), "/");
        assert_eq!(parent_dir("/a/"), "/a/");
    }
}
