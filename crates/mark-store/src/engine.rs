//! The engine: one request in, one response out, over a store.

use crate::auth::{Denial, Op, TokenStore};
use crate::changes::{ChangeSink, ChangeTracker};
use crate::clock::{format_rfc3339, parse_rfc3339, unix_seconds};
use crate::error::StoreError;
use crate::lookup::{Catalog, IndexStorage, LookupQuery};
use crate::manifest;
use crate::marker::RootKind;
use crate::paths::SafePath;
use crate::store::{FolderProblem, Snapshot, Store, StoreMode};
use mark_proto::versions::VersionEntry;
use mark_proto::watch::ChangeOp;
use mark_proto::{Request, Response, Status, Verb};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

/// Default largest document, in bytes (PROTOCOL.md recommends 1 MiB).
pub const DEFAULT_MAX_DOCUMENT_BYTES: usize = 1024 * 1024;
/// Most entries in one LIST page, and the default page size.
pub const MAX_LIST_PAGE: usize = 1000;
/// The path of the agent manifest, always public.
pub const MANIFEST_PATH: &str = "/.well-known/agent-manifest.md";
/// How often a write re-reads and retries when another process took the
/// version number it was about to write. Within one engine writers never
/// race (the per-document lock); across processes each lost race means the
/// other side wrote a version, so this only bounds a pathological losing
/// streak under heavy contention.
const WRITE_ATTEMPTS: usize = 256;

/// A request answered early with an error response.
type Reply = Result<Response, Response>;

/// What a write does after reading the current version.
enum Step<'a> {
    /// Answer without writing (identical content, unarchiving).
    Answer(Response),
    /// Write this content as the next version.
    Write(Cow<'a, [u8]>),
}

/// The Mark Protocol engine over one root folder. `Send + Sync`: share it
/// between threads behind an `Arc`; writes to one document are serialized
/// inside, writes to different documents run in parallel.
#[derive(Debug)]
pub struct Engine {
    store: Store,
    tokens: Option<TokenStore>,
    max_document_bytes: usize,
    name: String,
    opened_at: i64,
    write_locks: Mutex<HashMap<SafePath, Arc<Mutex<()>>>>,
    catalog: Mutex<Catalog>,
    changes: Mutex<ChangeTracker>,
}

/// What one WATCH request may follow: a document, or every document under
/// a folder (see [`Engine::watch_scope`]).
#[derive(Debug, Clone)]
pub struct WatchScope {
    scope: SafePath,
}

impl WatchScope {
    /// Whether a change to `path` (a request path, percent-encoded as in a
    /// [`crate::StoreChange`]) lies in this scope.
    pub fn covers(&self, path: &str) -> bool {
        SafePath::parse(path).is_some_and(|p| {
            if self.scope.is_dir_form() {
                p.starts_with(&self.scope)
            } else {
                p.segments() == self.scope.segments()
            }
        })
    }
}

/// Locks a mutex, taking over a poisoned one: the data it guards (lock
/// handles, a cache) stays consistent even if a holder panicked.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub(crate) fn not_found(what: &str) -> Response {
    Response::error(
        Status::NotFound,
        "Not found",
        &format!("`{what}` is not on this server."),
    )
}

pub(crate) fn bad_request(message: &str) -> Response {
    Response::error(Status::BadRequest, "Bad request", message)
}

fn not_permitted(message: &str) -> Response {
    Response::error(Status::NotPermitted, "Not permitted", message)
}

pub(crate) fn server_error(e: &std::io::Error) -> Response {
    tracing::error!(error = %e, "store failure");
    Response::error(
        Status::ServerError,
        "Server error",
        "The store could not complete this request; try again, and tell the operator if it persists.",
    )
}

fn denial(d: Denial) -> Response {
    match d {
        Denial::Unauthorized => Response::error(
            Status::Unauthorized,
            "Unauthorized",
            "This request needs a valid token (none was given, or it is unknown or expired); give your client one (mark-mcp: --token-file FILE or MARK_TOKEN).",
        ),
        Denial::NotPermitted => {
            not_permitted("The token does not grant this operation on this path.")
        }
    }
}

/// A `version` metadata value that must be a non-negative integer.
fn parse_version_meta(req: &Request, key: &str) -> Result<Option<u64>, Response> {
    match req.metadata.get(key) {
        None => Ok(None),
        Some(v) => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| bad_request(&format!("`{key}: {v}` must be a whole number."))),
    }
}

/// `v<N>` with N ≥ 1 and no leading zero.
fn pinned_version(segment: &str) -> Option<u64> {
    let digits = segment.strip_prefix('v')?;
    if digits.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `sha256-<64 lowercase hex>`.
fn content_hash_name(segment: &str) -> Option<&str> {
    segment.strip_prefix("sha256-").filter(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Whether a conditional request is satisfied: `if-none-match` first (a
/// list of etags or `*`); only without it, `if-modified-since`.
fn not_modified(req: &Request, etag: &str, modified: i64) -> bool {
    if let Some(tags) = req.metadata.get("if-none-match") {
        return tags
            .split(',')
            .map(|t| t.trim().trim_matches('"'))
            .any(|t| t == "*" || t == etag);
    }
    req.metadata
        .get("if-modified-since")
        .and_then(parse_rfc3339)
        .is_some_and(|since| modified <= since)
}

/// A FETCH answer for stored bytes, honouring the conditional headers.
fn document_response(req: &Request, snap: &Snapshot) -> Response {
    let etag = snap.etag();
    if not_modified(req, &etag, snap.modified) {
        return Response::new(Status::NotModified);
    }
    Response::new(Status::Ok)
        .with_meta("version", snap.version.to_string())
        .with_meta("modified", format_rfc3339(snap.modified))
        .with_meta("etag", etag)
        .with_meta("content-hash", snap.content_hash())
        .with_body(snap.body().to_vec())
}

/// The answer to a successful write.
fn written(status: Status, snap: &Snapshot) -> Response {
    Response::new(status)
        .with_meta("version", snap.version.to_string())
        .with_meta("modified", format_rfc3339(snap.modified))
        .with_meta("etag", snap.etag())
        .with_meta("content-hash", snap.content_hash())
}

fn conflict(yours: u64, server: u64) -> Response {
    Response::error(
        Status::Conflict,
        "Conflict",
        &format!("You expected version {yours} but the current version is {server}; fetch it, merge, and retry with expected-version {server}."),
    )
    .with_meta("your-version", yours.to_string())
    .with_meta("server-version", server.to_string())
}

impl Engine {
    /// Opens `root` as a store. `StoreMode::Versioned` needs a marked store
    /// ([`crate::mark`], [`crate::import()`]) or an empty folder (the first
    /// write marks it); anything else is [`StoreError::NotAStore`].
    /// `tokens: None` means reads are public and writes are refused, and
    /// then opening changes nothing on disk; with tokens a versioned store
    /// has its document links repaired (a crash can leave one a step
    /// behind) and crashed writers' temp files removed, at the cost of a
    /// walk of the store.
    pub fn open(
        root: &Path,
        mode: StoreMode,
        tokens: Option<TokenStore>,
    ) -> Result<Engine, StoreError> {
        let canonical = root.canonicalize().map_err(|source| StoreError::Root {
            path: root.to_path_buf(),
            source,
        })?;
        if !canonical.is_dir() {
            return Err(StoreError::NotADirectory(root.to_path_buf()));
        }
        if mode == StoreMode::Versioned {
            let kind = RootKind::of(&canonical).map_err(|source| StoreError::Root {
                path: root.to_path_buf(),
                source,
            })?;
            if !matches!(kind, RootKind::Store | RootKind::Empty) {
                return Err(StoreError::NotAStore(root.to_path_buf()));
            }
        }
        let store = Store::new(canonical, mode);
        if tokens.is_some() {
            store.repair_links();
            store.remove_crashed_temps(SystemTime::now());
        }
        let name = store
            .root()
            .file_name()
            .map_or_else(|| "mark".to_string(), |n| n.to_string_lossy().into_owned());
        Ok(Engine {
            store,
            tokens,
            max_document_bytes: DEFAULT_MAX_DOCUMENT_BYTES,
            name,
            opened_at: unix_seconds(SystemTime::now()),
            write_locks: Mutex::new(HashMap::new()),
            catalog: Mutex::new(Catalog::default()),
            changes: Mutex::new(ChangeTracker::default()),
        })
    }

    /// Sets the largest document a write may produce (default 1 MiB).
    pub fn with_max_document_bytes(mut self, bytes: usize) -> Engine {
        self.max_document_bytes = bytes;
        self
    }

    /// Sets how often LOOKUP looks for changes made outside this engine (a
    /// flat folder's files edited, another process writing the store):
    /// at most once per `every` (default 5 s). The engine's own writes are
    /// seen at once.
    pub fn set_index_recheck(&self, every: Duration) {
        lock(&self.catalog).set_recheck(every);
    }

    /// Sets where LOOKUP's index lives (see [`IndexStorage`]); without it
    /// (`None`, the default) the index is always in RAM.
    pub fn set_index_storage(&self, storage: Option<IndexStorage>) {
        lock(&self.catalog).set_storage(storage);
    }

    /// What is kept of LOOKUP's index of this store between processes
    /// (`None`: nothing is kept, see [`Engine::set_index_storage`]); with
    /// `clear`, it is removed (the next LOOKUP builds it again).
    pub fn kept_index(&self, clear: bool) -> std::io::Result<Option<crate::lookup::KeptIndex>> {
        lock(&self.catalog).kept_index(&self.store, clear)
    }

    /// Sets where changes to documents go (the server's WATCH): each write
    /// this engine makes, and each change [`Engine::recheck_changes`] finds.
    /// `None` stops it.
    pub fn set_change_sink(&self, sink: Option<ChangeSink>) {
        lock(&self.changes).set_sink(sink);
    }

    /// Looks for changes made outside this engine (a flat folder's files
    /// saved or deleted, another process writing the store) by the store's
    /// stamps, and sends each to the change sink; the first call only takes
    /// the stamps as its start. Returns how many it sent. Blocking file I/O
    /// (a walk of the store); does nothing without a sink.
    pub fn recheck_changes(&self) -> std::io::Result<usize> {
        lock(&self.changes).recheck(&self.store)
    }

    /// What a WATCH request may follow, or the ordinary answer refusing it:
    /// `not-found` for a path that is not here, `unauthorized` or
    /// `not-permitted` when its token may not read the scope.
    pub fn watch_scope(&self, req: &Request, now: SystemTime) -> Result<WatchScope, Response> {
        let Some(path) = SafePath::parse(&req.path) else {
            return Err(not_found(&req.path));
        };
        if !self.store.visible(&path) {
            return Err(not_found(&req.path));
        }
        self.may_read(req, path.segments(), now)?;
        let exists = if path.is_dir_form() {
            path.segments().is_empty() || self.store.folder(&path).is_some()
        } else {
            self.store
                .current(&path)
                .map_err(|e| server_error(&e))?
                .is_some()
        };
        if !exists {
            return Err(not_found(&req.path));
        }
        Ok(WatchScope { scope: path })
    }

    /// Whether the WATCH `req` (its token) may still read its `scope` at
    /// `now`: a token that expired ends the watch.
    pub fn watch_permitted(&self, req: &Request, scope: &WatchScope, now: SystemTime) -> bool {
        self.may_read(req, scope.scope.segments(), now).is_ok()
    }

    /// Whether the WATCH `req` sees a change to `path`: in its scope, and
    /// readable with its token (a read token may guard part of the scope).
    pub fn watch_sees(
        &self,
        req: &Request,
        scope: &WatchScope,
        path: &str,
        now: SystemTime,
    ) -> bool {
        scope.covers(path)
            && SafePath::parse(path).is_some_and(|p| self.may_read(req, p.segments(), now).is_ok())
    }

    /// Tells the change sink of a write to `doc`.
    fn announce(&self, doc: &SafePath, op: ChangeOp) {
        lock(&self.changes).written(&self.store, doc, op);
    }

    /// Sets the server name shown in the generated agent manifest (default:
    /// the root folder's name).
    pub fn with_name(mut self, name: impl Into<String>) -> Engine {
        self.name = name.into();
        self
    }

    /// The canonical root folder.
    pub fn root(&self) -> &Path {
        self.store.root()
    }

    /// The store mode.
    pub fn mode(&self) -> StoreMode {
        self.store.mode()
    }

    /// Answers one request. Blocking file I/O; never panics: a failure of
    /// the file system answers `server-error`, and so would a bug.
    pub fn handle(&self, request: &Request, now: SystemTime) -> Response {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.dispatch(request, now)))
            .unwrap_or_else(|_| {
                tracing::error!(verb = %request.verb, "the engine panicked on a request");
                Response::error(
                    Status::ServerError,
                    "Server error",
                    "The server failed on this request.",
                )
            })
    }

    fn dispatch(&self, req: &Request, now: SystemTime) -> Response {
        if req.verb == Verb::Fetch && req.path == "/health" {
            return Response::new(Status::Ok);
        }
        let Some(path) = SafePath::parse(&req.path) else {
            return not_found(&req.path);
        };
        if req.verb == Verb::Fetch && path.decoded() == MANIFEST_PATH {
            return self.manifest(req);
        }
        if !self.store.visible(&path) {
            return not_found(&req.path);
        }
        let reply = match req.verb {
            Verb::Fetch => self.fetch(req, &path, now),
            Verb::List => self.list(req, &path, now),
            Verb::Versions => self.versions(req, &path, now),
            Verb::Lookup => self.lookup(req, &path, now),
            Verb::Publish => self.publish(req, &path, now),
            Verb::Append => self.append(req, &path, now),
            Verb::Archive => self.archive(req, &path, now),
            Verb::Watch => Err(bad_request(
                "WATCH is a stream that only a server answers; send it to mark-server.",
            )),
        };
        if matches!(req.verb, Verb::Publish | Verb::Append | Verb::Archive) && reply.is_ok() {
            self.index_write(&path, now);
        }
        reply.unwrap_or_else(|e| e)
    }

    /// Brings the LOOKUP index up to date after a write to `doc`, so that
    /// searches see it at once without walking the store.
    fn index_write(&self, doc: &SafePath, now: SystemTime) {
        if let Err(e) = lock(&self.catalog).document_changed(&self.store, doc, now) {
            tracing::warn!(document = %doc.decoded(), error = %e, "cannot index a written document");
        }
    }

    /// Whether the request's token may read `segments` (public paths: yes).
    fn may_read(
        &self,
        req: &Request,
        segments: &[String],
        now: SystemTime,
    ) -> Result<(), Response> {
        match &self.tokens {
            Some(t) if t.read_restricted(segments) => t
                .check(req.metadata.get("auth"), segments, Op::Read, now)
                .map_err(denial),
            _ => Ok(()),
        }
    }

    /// Checks that a write may happen at all, and is allowed on `doc`.
    fn may_write(&self, req: &Request, doc: &SafePath, now: SystemTime) -> Result<(), Response> {
        if self.store.mode() == StoreMode::Flat {
            return Err(not_permitted(
                "This folder is served read-only; writes need a versioned store.",
            ));
        }
        if doc.is_dir_form() {
            return Err(bad_request("Write to a document path, not a folder."));
        }
        if let Some(why) = reserved_name(doc) {
            return Err(bad_request(why));
        }
        let Some(tokens) = &self.tokens else {
            return Err(not_permitted(
                "Publishing is disabled: this server has no token store.",
            ));
        };
        tokens
            .check(req.metadata.get("auth"), doc.segments(), Op::Publish, now)
            .map_err(denial)
    }

    /// Runs `write` holding `doc`'s write lock, then drops the lock's entry
    /// when no other writer waits on it, so the map holds only documents
    /// being written.
    fn serialized<T>(&self, doc: &SafePath, write: impl FnOnce() -> T) -> T {
        let handle = lock(&self.write_locks)
            .entry(doc.clone())
            .or_default()
            .clone();
        let result = {
            let _serialized = lock(&handle);
            write()
        };
        let mut locks = lock(&self.write_locks);
        drop(handle);
        // Every clone is taken under the map's lock: one reference is the map's own.
        if locks.get(doc).is_some_and(|l| Arc::strong_count(l) == 1) {
            locks.remove(doc);
        }
        result
    }

    fn fetch(&self, req: &Request, path: &SafePath, now: SystemTime) -> Reply {
        if path.is_dir_form() {
            return Err(not_found(&req.path));
        }
        if let [only] = path.segments()
            && let Some(hash) = content_hash_name(only)
        {
            return self.fetch_by_hash(req, hash, now);
        }
        let pinned = match path.segments() {
            [_, .., last] => pinned_version(last),
            _ => None,
        };
        let doc = if pinned.is_some() {
            path.parent().as_document()
        } else {
            path.clone()
        };
        self.may_read(req, doc.segments(), now)?;
        let current = self
            .store
            .current(&doc)
            .map_err(|e| server_error(&e))?
            .ok_or_else(|| match self.store.odd_file(&doc) {
                Some(kind) => Response::error(
                    Status::NotFound,
                    "Not found",
                    &format!(
                        "`{}` is {kind}, not a regular file: only regular .md files are documents.",
                        req.path
                    ),
                ),
                None => not_found(&req.path),
            })?;
        match pinned {
            Some(n) => {
                let snap = self
                    .store
                    .version(&doc, n)
                    .map_err(|e| server_error(&e))?
                    .ok_or_else(|| not_found(&req.path))?;
                let resp = document_response(req, &snap);
                Ok(if resp.status == Status::Ok {
                    resp.with_meta("current-version", current.version.to_string())
                } else {
                    resp
                })
            }
            None if current.archived => Ok(Response::new(Status::Archived)),
            None => Ok(document_response(req, &current)),
        }
    }

    fn fetch_by_hash(&self, req: &Request, hash: &str, now: SystemTime) -> Reply {
        let wanted = format!("sha256-{hash}");
        let found = lock(&self.catalog)
            .find_by_content_hash(&self.store, &wanted, now)
            .map_err(|e| server_error(&e))?;
        for doc in found {
            if self.may_read(req, doc.segments(), now).is_err() {
                continue;
            }
            if let Some(snap) = self.store.current(&doc).map_err(|e| server_error(&e))?
                && !snap.archived
                && snap.content_hash() == wanted
            {
                return Ok(document_response(req, &snap));
            }
        }
        Err(not_found(&req.path))
    }

    fn manifest(&self, req: &Request) -> Response {
        let file = SafePath::parse(MANIFEST_PATH).map(|p| p.under(self.store.root()));
        let stored = file
            .filter(|f| crate::paths::is_contained(self.store.root(), f))
            .and_then(|f| {
                let bytes = crate::regular::read(&f).ok()??;
                let modified = std::fs::metadata(&f)
                    .and_then(|m| m.modified())
                    .map(unix_seconds)
                    .unwrap_or(self.opened_at);
                Some((bytes, modified))
            });
        let (bytes, modified) = stored.unwrap_or_else(|| {
            (
                manifest::generate(&self.name, self.store.mode(), self.max_document_bytes)
                    .into_bytes(),
                self.opened_at,
            )
        });
        let snap = Snapshot {
            version: 1,
            bytes,
            body_start: 0,
            modified,
            archived: false,
        };
        document_response(req, &snap)
    }

    fn list(&self, req: &Request, path: &SafePath, now: SystemTime) -> Reply {
        self.may_read(req, path.segments(), now)?;
        let page_size = match req.metadata.get("page-size") {
            None => MAX_LIST_PAGE,
            Some(v) => match v.trim().parse::<usize>() {
                Ok(0) | Err(_) => {
                    return Err(bad_request(&format!(
                        "`page-size: {v}` must be a whole number from 1 to {MAX_LIST_PAGE}."
                    )));
                }
                Ok(n) => n.min(MAX_LIST_PAGE),
            },
        };
        let include_archived = match req.metadata.get("include-archived").map(str::trim) {
            None | Some("false") => false,
            Some("true") => true,
            Some(v) => {
                return Err(bad_request(&format!(
                    "`include-archived: {v}` must be true or false."
                )));
            }
        };
        let dir =
            SafePath::from_segments(path.segments().to_vec(), true).unwrap_or_else(SafePath::root);
        let entries = self
            .store
            .list(&dir, include_archived)
            .map_err(|e| server_error(&e))?
            .ok_or_else(|| not_found(&req.path))?;
        let start = req
            .metadata
            .get("cursor")
            .map_or(0, |c| entries.partition_point(|e| e.name.as_str() <= c));
        let page = &entries[start..(start + page_size).min(entries.len())];
        let complete = start + page.len() >= entries.len();
        let mut resp = Response::new(Status::Ok)
            .with_meta("entries", page.len().to_string())
            .with_meta("complete", complete.to_string());
        if !complete && let Some(last) = page.last() {
            resp = resp.with_meta("next-cursor", last.name.clone());
        }
        Ok(resp.with_body(mark_proto::list::write(page)))
    }

    fn versions(&self, req: &Request, path: &SafePath, now: SystemTime) -> Reply {
        if path.is_dir_form() {
            return Err(not_found(&req.path));
        }
        self.may_read(req, path.segments(), now)?;
        let history = self
            .store
            .history(path)
            .map_err(|e| server_error(&e))?
            .ok_or_else(|| not_found(&req.path))?;
        let current = history.versions.last().map_or(0, |v| v.0);
        let mut resp = Response::new(Status::Ok)
            .with_meta("total", history.versions.len().to_string())
            .with_meta("current", current.to_string())
            .with_meta("chain-valid", history.chain_error.is_none().to_string());
        if let Some(err) = &history.chain_error {
            resp = resp.with_meta("chain-error", err.clone());
        }
        let encoded = path.as_document().encoded();
        let lines: Vec<VersionEntry> = history
            .versions
            .iter()
            .rev()
            .map(|(n, modified)| VersionEntry::new(encoded.clone(), *n, format_rfc3339(*modified)))
            .collect();
        let body = mark_proto::versions::write(&lines).map_err(|e| {
            tracing::error!(error = %e, "cannot write a VERSIONS body");
            Response::error(
                Status::ServerError,
                "Server error",
                "The version history could not be written.",
            )
        })?;
        Ok(resp.with_body(body))
    }

    fn lookup(&self, req: &Request, scope: &SafePath, now: SystemTime) -> Reply {
        self.may_read(req, scope.segments(), now)?;
        let query = LookupQuery::from_metadata(&req.metadata).map_err(|why| bad_request(&why))?;
        let readable = |doc: &SafePath| self.may_read(req, doc.segments(), now).is_ok();
        let result = lock(&self.catalog)
            .search(&self.store, scope, &query, &readable, now)
            .map_err(|e| server_error(&e))?;
        Ok(result.into_response(&query))
    }

    /// Runs a write: under the document's lock, reads the current version,
    /// lets `decide` answer or name the new content, and writes it as the
    /// next version. When another process took that number first, reads
    /// again and lets `decide` look at the new state.
    fn write_next<'body>(
        &self,
        doc: &SafePath,
        now: SystemTime,
        decide: impl FnMut(Option<&Snapshot>) -> Result<Step<'body>, Response>,
    ) -> Reply {
        self.serialized(doc, || self.write_next_serialized(doc, now, decide))
    }

    fn write_next_serialized<'body>(
        &self,
        doc: &SafePath,
        now: SystemTime,
        mut decide: impl FnMut(Option<&Snapshot>) -> Result<Step<'body>, Response>,
    ) -> Reply {
        for _ in 0..WRITE_ATTEMPTS {
            let current = self.store.current(doc).map_err(|e| server_error(&e))?;
            let content = match decide(current.as_ref())? {
                Step::Answer(resp) => return Ok(resp),
                Step::Write(content) => content,
            };
            self.check_size(content.len())?;
            if let Some(snap) = self
                .store
                .write_next(doc, current.as_ref(), &content, unix_seconds(now))
                .map_err(|e| server_error(&e))?
            {
                return Ok(written(Status::Created, &snap));
            }
            // Lost the number to another process: let it finish before re-reading.
            std::thread::yield_now();
        }
        Err(Response::error(
            Status::Unavailable,
            "Unavailable",
            "Too many writers raced for this document; retry.",
        ))
    }

    fn publish(&self, req: &Request, doc: &SafePath, now: SystemTime) -> Reply {
        self.may_write(req, doc, now)?;
        let body = req.body.as_slice();
        self.check_size(body.len())?;
        let expected = parse_version_meta(req, "expected-version")?;
        self.prepare(doc)?;
        let mut unarchived = false;
        let reply = self.write_next(doc, now, |current| {
            let server_version = current.map_or(0, |c| c.version);
            if let Some(c) = current
                && (body.is_empty() || c.body() == body)
                && (c.archived || !body.is_empty())
            {
                // Identical content, or an empty body unarchiving: no new version.
                if body.is_empty()
                    && let Some(e) = expected.filter(|e| *e != server_version)
                {
                    return Err(conflict(e, server_version));
                }
                if c.archived {
                    self.store
                        .set_archived(doc, c.version, false, unix_seconds(now))
                        .map_err(|e| server_error(&e))?;
                    unarchived = true;
                }
                return Ok(Step::Answer(written(Status::Ok, c)));
            }
            if body.is_empty() {
                return Err(bad_request(
                    "An empty PUBLISH only unarchives an archived document; send the document as the body.",
                ));
            }
            if let Some(e) = expected.filter(|e| *e != server_version) {
                return Err(conflict(e, server_version));
            }
            Ok(Step::Write(Cow::Borrowed(body)))
        });
        if unarchived || reply.as_ref().is_ok_and(|r| r.status == Status::Created) {
            self.announce(doc, ChangeOp::Publish);
        }
        reply
    }

    fn append(&self, req: &Request, doc: &SafePath, now: SystemTime) -> Reply {
        self.may_write(req, doc, now)?;
        let expected = match parse_version_meta(req, "expected-version")? {
            Some(n) if n >= 1 => n,
            _ => {
                return Err(bad_request(
                    "APPEND needs `expected-version` (the version you append to, at least 1).",
                ));
            }
        };
        if req.body.is_empty() {
            return Err(bad_request("APPEND needs a body: the text to add."));
        }
        self.check_size(req.body.len())?;
        let reply = self.write_next(doc, now, |current| {
            let current = current.ok_or_else(|| not_found(&req.path))?;
            if current.archived {
                return Err(Response::error(
                    Status::Archived,
                    "Archived",
                    "The document is archived; PUBLISH an empty body to unarchive it first.",
                ));
            }
            if expected != current.version {
                return Err(conflict(expected, current.version));
            }
            // demarkus' join: a line end only where the body lacks one.
            let content = mark_proto::append::appended(current.body(), &req.body);
            Ok(Step::Write(Cow::Owned(content)))
        });
        if reply.as_ref().is_ok_and(|r| r.status == Status::Created) {
            self.announce(doc, ChangeOp::Append);
        }
        reply
    }

    fn archive(&self, req: &Request, doc: &SafePath, now: SystemTime) -> Reply {
        self.may_write(req, doc, now)?;
        let expected = parse_version_meta(req, "expected-version")?;
        self.serialized(doc, || self.archive_serialized(req, doc, expected, now))
    }

    fn archive_serialized(
        &self,
        req: &Request,
        doc: &SafePath,
        expected: Option<u64>,
        now: SystemTime,
    ) -> Reply {
        let current = self
            .store
            .current(doc)
            .map_err(|e| server_error(&e))?
            .ok_or_else(|| not_found(&req.path))?;
        if let Some(e) = expected.filter(|e| *e != current.version) {
            return Err(conflict(e, current.version));
        }
        if !current.archived {
            self.store
                .set_archived(doc, current.version, true, unix_seconds(now))
                .map_err(|e| server_error(&e))?;
            self.announce(doc, ChangeOp::Archive);
        }
        Ok(Response::new(Status::Ok).with_meta("version", current.version.to_string()))
    }

    fn check_size(&self, len: usize) -> Result<(), Response> {
        if len > self.max_document_bytes {
            return Err(Response::error(
                Status::TooLarge,
                "Too large",
                &format!(
                    "The document would be {len} bytes; this server takes at most {}.",
                    self.max_document_bytes
                ),
            ));
        }
        Ok(())
    }

    /// Makes the folders for a new document, marking the store first when
    /// this is the first write into the empty folder it was opened on.
    fn prepare(&self, doc: &SafePath) -> Result<(), Response> {
        crate::marker::write_marker(self.store.root()).map_err(|e| server_error(&e))?;
        self.store.prepare_document(doc).map_err(|p| match p {
            FolderProblem::Escapes => not_found(&doc.encoded()),
            FolderProblem::InTheWay(at) => bad_request(&format!("`{at}` is in the way: it is a file or folder not written through the protocol, or a document where a folder must be.")),
            FolderProblem::Io(e) => server_error(&e),
        })
    }
}

/// Names a versioned document may not take, because a request for them
/// would mean something else.
fn reserved_name(doc: &SafePath) -> Option<&'static str> {
    let name = doc.name()?;
    if pinned_version(name).is_some() {
        return Some(
            "A document name of the form `vN` would read as a version number; choose another name.",
        );
    }
    if doc.segments().len() == 1 && (name == "health" || name.starts_with("sha256-")) {
        return Some("`/health` and `/sha256-…` are reserved at the root.");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_is_send_and_sync() {
        fn shared<T: Send + Sync>() {}
        shared::<Engine>();
    }

    #[test]
    fn write_locks_are_dropped_once_no_writer_holds_them() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = tempfile::tempdir().unwrap();
        let file = tokens.path().join("tokens.toml");
        let token =
            crate::generate_token(&["/**".to_string()], &[Op::Publish], None, &file).unwrap();
        let engine = Engine::open(
            dir.path(),
            StoreMode::Versioned,
            Some(TokenStore::load(&file).unwrap()),
        )
        .unwrap();
        for i in 0..50 {
            let path = format!("/doc{i}.md");
            let publish = Request::new(Verb::Publish, path.as_str())
                .with_meta("auth", &token)
                .with_body(b"# Doc\n".to_vec());
            assert_eq!(
                engine.handle(&publish, SystemTime::now()).status,
                Status::Created
            );
            let archive = Request::new(Verb::Archive, path.as_str()).with_meta("auth", &token);
            assert_eq!(
                engine.handle(&archive, SystemTime::now()).status,
                Status::Ok
            );
        }
        assert_eq!(lock(&engine.write_locks).len(), 0);
    }

    #[test]
    fn pinned_versions_and_hash_names() {
        assert_eq!(pinned_version("v3"), Some(3));
        assert_eq!(pinned_version("v0"), None);
        assert_eq!(pinned_version("v03"), None);
        assert_eq!(pinned_version("version"), None);
        let h = "a".repeat(64);
        assert_eq!(content_hash_name(&format!("sha256-{h}")), Some(h.as_str()));
        assert_eq!(content_hash_name("sha256-ABC"), None);
    }

    #[test]
    fn conditional_rules() {
        let r = Request::new(Verb::Fetch, "/a.md").with_meta("if-none-match", "\"e1\", e2");
        assert!(not_modified(&r, "e2", 0));
        assert!(!not_modified(&r, "e3", 0));
        // if-none-match wins over if-modified-since.
        let r = Request::new(Verb::Fetch, "/a.md")
            .with_meta("if-none-match", "x")
            .with_meta("if-modified-since", "2030-01-01T00:00:00Z");
        assert!(!not_modified(&r, "e", 0));
        let r = Request::new(Verb::Fetch, "/a.md")
            .with_meta("if-modified-since", "1970-01-01T00:01:00Z");
        assert!(not_modified(&r, "e", 60));
        assert!(!not_modified(&r, "e", 61));
        let r = Request::new(Verb::Fetch, "/a.md").with_meta("if-modified-since", "garbage");
        assert!(!not_modified(&r, "e", 0));
    }

    #[test]
    fn reserved_names() {
        assert!(reserved_name(&SafePath::parse("/a/v2").unwrap()).is_some());
        assert!(reserved_name(&SafePath::parse("/health").unwrap()).is_some());
        assert!(reserved_name(&SafePath::parse("/a/health").unwrap()).is_none());
        assert!(reserved_name(&SafePath::parse("/notes.md").unwrap()).is_none());
    }
}
