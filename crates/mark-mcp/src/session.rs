//! One agent session: the source, the settings, the document cache, the
//! folder listings a card shows, and the delivery log. Every capability
//! takes a `&Session`; with stdio there is one session per process.

use crate::cache::SessionCache;
use crate::crawl::{SessionGraph, parent_dir};
use crate::dedup::{DeliveryLog, Identity};
use crate::envelope::ToolText;
use crate::settings::Settings;
use crate::source::Source;
use mark_proto::list::ListEntry;
use mark_proto::{MarkUrl, Request, Response, Status, Verb};
use markdown_slice::{Document, Heading, Link, SectionHashes};
use std::collections::HashSet;
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
        let hashes: usize = self
            .hashes
            .sections
            .iter()
            .map(|(a, _)| a.len() + 32 + size_of::<String>())
            .sum();
        let repeated: usize = self
            .repeated_headings
            .iter()
            .map(|t| t.len() + size_of::<String>())
            .sum();
        doc.source().len() + headings + links + hashes + repeated + size_of::<CachedDoc>()
    }
}

/// A folder's entries as one LIST answered them.
#[derive(Debug)]
pub struct FolderListing {
    /// The entries, in the server's order.
    pub entries: Vec<ListEntry>,
    /// `false` when the server had more than one page.
    pub complete: bool,
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

/// The outcome of reading a document: the document, or a result to pass
/// through as it is (an error status, a non-UTF-8 notice, a source failure).
#[derive(Debug)]
pub enum Loaded {
    /// The document, from the cache or the source.
    Doc(Arc<CachedDoc>),
    /// What to answer instead.
    Answer(ToolText),
}

/// The state of one session.
pub struct Session {
    source: Arc<dyn Source>,
    settings: Settings,
    cache: Mutex<SessionCache<CachedDoc>>,
    /// Listings by folder path. LIST has no etag to revalidate with, so a
    /// listing is served only within the freshness window, then asked again.
    listings: Mutex<SessionCache<FolderListing>>,
    log: Mutex<DeliveryLog<Arc<SectionHashes>>>,
    graph: SessionGraph,
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
            log: Mutex::new(DeliveryLog::new(settings.dedup_ttl)),
            graph: SessionGraph::new(Arc::clone(&source), settings.crawl),
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
            fragment: fragment.filter(|f| !f.is_empty()),
        })
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
        let cached = lock(&self.cache).get(path, now, self.settings.fresh_for);
        let mut req = Request::new(Verb::Fetch, path);
        match &cached {
            Some((doc, true)) => return Loaded::Doc(Arc::clone(doc)),
            Some((doc, false)) => {
                if let Some(etag) = &doc.identity.etag {
                    req = req.with_meta("if-none-match", etag.as_str());
                }
            }
            None => {}
        }
        let resp = match self.send(req).await {
            Ok(r) => r,
            Err(t) => return Loaded::Answer(t),
        };
        match (&resp.status, cached) {
            (Status::NotModified, Some((doc, _))) => {
                lock(&self.cache).mark_validated(path, now);
                Loaded::Doc(doc)
            }
            (Status::Ok, _) => self.store(path, resp, now),
            _ => {
                lock(&self.cache).remove(path);
                if matches!(resp.status, Status::NotFound | Status::Archived) {
                    self.graph.forget(path);
                }
                let t = passthrough(&resp);
                Loaded::Answer(if resp.status == Status::Archived && t.text.is_empty() {
                    // The protocol's `archived` has no body: say what is still possible.
                    t.with_text(format!(
                        "{path} is archived; its versions stay readable at \"{path}/vN\" (mark_versions lists them)."
                    ))
                } else {
                    t
                })
            }
        }
    }

    fn store(&self, path: &str, resp: Response, now: Instant) -> Loaded {
        let identity = Identity {
            version: resp.meta("version").map(str::to_string),
            etag: resp.meta("etag").map(str::to_string),
        };
        let modified = resp.meta("modified").map(str::to_string);
        let len = resp.body.len();
        let text: Arc<str> = match String::from_utf8(resp.body) {
            Ok(s) => s.into(),
            Err(_) => {
                return Loaded::Answer(
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
        // Every document read adds its links to the graph.
        self.graph.index(path, identity.etag.as_deref(), &doc);
        let hashes = Arc::new(doc.section_hashes());
        let repeated_headings = repeated_headings(&doc);
        let cached = CachedDoc {
            doc,
            identity,
            modified,
            hashes,
            repeated_headings,
        };
        let weight = cached.weight();
        Loaded::Doc(lock(&self.cache).insert(path, cached, weight, now))
    }

    /// `dir`'s listing if it was listed within the freshness window.
    pub fn fresh_listing(&self, dir: &str, now: Instant) -> Option<Arc<FolderListing>> {
        lock(&self.listings)
            .get(dir, now, self.settings.fresh_for)
            .and_then(|(listing, fresh)| fresh.then_some(listing))
    }

    /// Keeps `dir`'s listing, just answered, for [`Session::fresh_listing`].
    pub fn keep_listing(
        &self,
        dir: &str,
        listing: FolderListing,
        now: Instant,
    ) -> Arc<FolderListing> {
        let weight = listing.weight();
        lock(&self.listings).insert(dir, listing, weight, now)
    }

    /// Forgets a cached document and its folder's listing (after a write
    /// through this session: the folder may have a new entry).
    pub fn forget(&self, path: &str) {
        lock(&self.cache).remove(path);
        lock(&self.listings).remove(parent_dir(path));
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
        for bad in [
            "mark://other/x.md",
            "https://example.com/x.md",
            "x.md",
            "/a b.md",
        ] {
            let e = s.resolve(bad).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
        assert_eq!(s.url_of("/a.md"), "mark://local/a.md");
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
}
