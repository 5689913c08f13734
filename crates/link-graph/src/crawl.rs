//! The crawl planner: which LIST and FETCH to send next, within bounds. It does no I/O and
//! reads no clock; a driver (mark-mcp's async crawler, or a loop in a test) sends the
//! requests, reports each result back, and passes the current time in.
//!
//! ```
//! use std::time::Instant;
//! use link_graph::{CrawlLimits, CrawlPlan, CrawlStep, LinkGraph};
//! use mark_proto::list::ListEntry;
//!
//! // A two-level source, answered from memory here; mark-mcp sends LIST and FETCH instead.
//! let list = |dir: &str| match dir {
//!     "/" => vec![ListEntry::file("a.md"), ListEntry::dir("sub"), ListEntry::file("logo.png")],
//!     _ => vec![ListEntry::file("b.md")],
//! };
//! let mut graph = LinkGraph::new();
//! let mut plan = CrawlPlan::new("/", CrawlLimits::default(), Instant::now())?;
//! while !plan.is_finished() {
//!     // A real driver starts every step it gets, then awaits one result at a time.
//!     let Some(step) = plan.next_step(Instant::now()) else { break };
//!     match step {
//!         CrawlStep::List { dir, .. } => {
//!             for path in plan.on_listed(&dir, list(&dir), None)? {
//!                 graph.note_discovered(&path)?;
//!             }
//!         }
//!         CrawlStep::Fetch { path } => {
//!             // FETCH with `if-none-match: graph.etag(&path)`; on `ok`, index the body.
//!             graph.update(&path, "etag-1", None, [])?;
//!             plan.on_fetched(&path, 100)?;
//!         }
//!     }
//! }
//! let outcome = plan.outcome();
//! assert!(outcome.complete);
//! graph.mark_complete();
//! assert_eq!(graph.coverage().to_string(), "graph complete");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

use mark_proto::list::ListEntry;

use crate::error::PlanError;
use crate::paths::check_canonical;

/// Bounds of one crawl.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrawlLimits {
    /// Documents fetched at most (default 5,000).
    pub max_documents: usize,
    /// Body bytes received at most (default 64 MiB). Checked before each FETCH, so the
    /// crawl may pass it by what is in flight.
    pub max_bytes: u64,
    /// Time from the start after which no new request goes out (default 60 s). Requests
    /// in flight finish under their own timeouts.
    pub time_budget: Duration,
    /// Requests in flight at once (default 8).
    pub max_in_flight: usize,
}

impl Default for CrawlLimits {
    fn default() -> CrawlLimits {
        CrawlLimits {
            max_documents: 5_000,
            max_bytes: 64 * 1024 * 1024,
            time_budget: Duration::from_secs(60),
            max_in_flight: 8,
        }
    }
}

/// One request for the driver to send.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CrawlStep {
    /// `LIST dir` (ends with `/`), with the `cursor` metadata when continuing a paged listing.
    List {
        /// The directory, e.g. `/` or `/guides/`.
        dir: String,
        /// The `next-cursor` of the previous page, if any.
        cursor: Option<String>,
    },
    /// `FETCH path`, conditional on the graph's etag for it.
    Fetch {
        /// The document, e.g. `/guides/intro.md`.
        path: String,
    },
}

/// LIST steps (pages count one each) a crawl hands out at most unless told otherwise
/// ([`CrawlPlan::with_max_listings`]): listing goes on after a fetch bound is hit, so the
/// count of known documents keeps growing, and this stops a source with endless folders
/// or cursors before the time budget does.
pub const DEFAULT_MAX_LISTINGS: usize = 10_000;

/// Why a crawl stopped before its frontier was empty (the first bound hit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// `max_documents` fetches were sent. Listing goes on.
    Documents(usize),
    /// `max_bytes` body bytes were received. Listing goes on.
    Bytes(u64),
    /// The listing cap was reached. Fetching of the documents already known goes on.
    Listings(usize),
    /// The time budget ran out: no new request of either kind.
    Deadline(Duration),
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::Documents(n) => write!(f, "document limit ({n}) reached"),
            StopReason::Bytes(n) => write!(f, "byte limit ({n} bytes) reached"),
            StopReason::Listings(n) => write!(f, "listing limit ({n} listings) reached"),
            StopReason::Deadline(d) => write!(f, "time limit ({} s) reached", d.as_secs_f64()),
        }
    }
}

/// Where a crawl stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrawlOutcome {
    /// FETCH steps handed out.
    pub documents: usize,
    /// LIST steps handed out (pages count one each).
    pub listings: usize,
    /// Body bytes reported by the driver.
    pub bytes: u64,
    /// Steps the driver reported as failed.
    pub failures: usize,
    /// Names in listings that could not make a canonical path.
    pub rejected_names: usize,
    /// Listings ended early because the server answered `complete: false`
    /// with a `next-cursor` this crawl had already followed in that folder
    /// (its paging loops): the rest of such a folder is unknown.
    pub repeated_cursors: usize,
    /// Set once a bound was hit.
    pub stopped: Option<StopReason>,
    /// Finished with an empty frontier, no bound hit, no failure and no
    /// listing ended by a repeated cursor: call
    /// [`LinkGraph::mark_complete`](crate::LinkGraph::mark_complete).
    pub complete: bool,
}

/// A bounded breadth-first crawl of one source, as pure state: see the module example.
/// Listings go before fetches, so the count of known documents grows early; once a fetch
/// bound (documents, bytes) is hit, listing goes on until the deadline or the listing cap,
/// so that count stays a close lower bound of the source's total.
#[derive(Debug)]
pub struct CrawlPlan {
    limits: CrawlLimits,
    max_listings: usize,
    /// `None`: the budget reaches past what `Instant` can hold, so there is no deadline.
    deadline: Option<Instant>,
    listing_open: bool,
    fetching_open: bool,
    dirs: VecDeque<(String, Option<String>)>,
    docs: VecDeque<String>,
    seen_dirs: HashSet<String>,
    /// The `(folder, cursor)` pages asked for (bounded by the listing cap).
    seen_cursors: HashSet<(String, String)>,
    seen_docs: HashSet<String>,
    in_flight: HashSet<String>,
    outcome: CrawlOutcome,
}

impl CrawlPlan {
    /// A crawl of `root` (a directory; a missing trailing `/` is added) starting at `now`.
    pub fn new(root: &str, limits: CrawlLimits, now: Instant) -> Result<CrawlPlan, PlanError> {
        if !root.starts_with('/') {
            return Err(PlanError::BadRoot(root.to_owned()));
        }
        let root = if root.ends_with('/') {
            root.to_owned()
        } else {
            format!("{root}/")
        };
        Ok(CrawlPlan {
            limits,
            max_listings: DEFAULT_MAX_LISTINGS,
            deadline: now.checked_add(limits.time_budget),
            listing_open: true,
            fetching_open: true,
            dirs: VecDeque::from([(root.clone(), None)]),
            docs: VecDeque::new(),
            seen_dirs: HashSet::from([root]),
            seen_cursors: HashSet::new(),
            seen_docs: HashSet::new(),
            in_flight: HashSet::new(),
            outcome: CrawlOutcome {
                documents: 0,
                listings: 0,
                bytes: 0,
                failures: 0,
                rejected_names: 0,
                repeated_cursors: 0,
                stopped: None,
                complete: false,
            },
        })
    }

    /// The same plan with at most `max_listings` LIST steps instead of
    /// [`DEFAULT_MAX_LISTINGS`].
    pub fn with_max_listings(mut self, max_listings: usize) -> CrawlPlan {
        self.max_listings = max_listings;
        self
    }

    /// When no new request may start: a driver can race its in-flight requests against it.
    /// `None` when `start + time_budget` is past what the clock can represent: no deadline.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Records the first bound hit; later ones only close their kind of step.
    fn hit(&mut self, reason: StopReason) {
        self.outcome.stopped.get_or_insert(reason);
    }

    /// The next request to send, or `None` if there is none now: the frontier is empty,
    /// `max_in_flight` requests are out, or the bounds allow no more. Call it until `None`
    /// after every report.
    pub fn next_step(&mut self, now: Instant) -> Option<CrawlStep> {
        if self.deadline.is_some_and(|deadline| now >= deadline) {
            self.hit(StopReason::Deadline(self.limits.time_budget));
            self.listing_open = false;
            self.fetching_open = false;
        }
        if self.in_flight.len() >= self.limits.max_in_flight {
            return None;
        }
        if self.listing_open && !self.dirs.is_empty() {
            if self.outcome.listings >= self.max_listings {
                self.hit(StopReason::Listings(self.max_listings));
                self.listing_open = false;
            } else if let Some((dir, cursor)) = self.dirs.pop_front() {
                self.in_flight.insert(dir.clone());
                self.outcome.listings += 1;
                return Some(CrawlStep::List { dir, cursor });
            }
        }
        if !self.fetching_open || self.docs.is_empty() {
            return None;
        }
        if self.outcome.documents >= self.limits.max_documents {
            self.hit(StopReason::Documents(self.limits.max_documents));
            self.fetching_open = false;
            return None;
        }
        if self.outcome.bytes >= self.limits.max_bytes {
            self.hit(StopReason::Bytes(self.limits.max_bytes));
            self.fetching_open = false;
            return None;
        }
        let path = self.docs.pop_front()?;
        self.in_flight.insert(path.clone());
        self.outcome.documents += 1;
        Some(CrawlStep::Fetch { path })
    }

    fn close(&mut self, key: &str) -> Result<(), PlanError> {
        if self.in_flight.remove(key) {
            Ok(())
        } else {
            Err(PlanError::NotInFlight(key.to_owned()))
        }
    }

    /// Reports a LIST answer: its entries (names inside `dir`, as `mark_proto::list::parse`
    /// gives them) and, if the listing is paged and not complete, the `next-cursor` to ask
    /// for the next page. A cursor already followed in this folder is not followed again
    /// (the server's paging loops): the listing ends there, counted in
    /// [`CrawlOutcome::repeated_cursors`], and the crawl is not complete. Returns the paths
    /// of the documents first found here: pass each to
    /// [`LinkGraph::note_discovered`](crate::LinkGraph::note_discovered).
    ///
    /// Files are documents when their name ends in `.md` (any case); other files are
    /// ignored. A name that would not make a canonical path (holding `/`, `.` or `..`, a
    /// control character) is refused and counted in [`CrawlOutcome::rejected_names`].
    pub fn on_listed(
        &mut self,
        dir: &str,
        entries: impl IntoIterator<Item = ListEntry>,
        next_cursor: Option<String>,
    ) -> Result<Vec<String>, PlanError> {
        self.close(dir)?;
        if let Some(cursor) = next_cursor {
            if self.seen_cursors.insert((dir.to_owned(), cursor.clone())) {
                self.dirs.push_front((dir.to_owned(), Some(cursor)));
            } else {
                self.outcome.repeated_cursors += 1;
            }
        }
        let mut found = Vec::new();
        for ListEntry { name, is_dir } in entries {
            if !is_dir && !name.to_ascii_lowercase().ends_with(".md") {
                continue;
            }
            // Names in one Unicode form, the one links resolve to (a macOS folder lists NFD).
            let path = format!("{dir}{}", markdown_slice::unicode_form(&name));
            if name.contains('/') || check_canonical(&path).is_err() {
                self.outcome.rejected_names += 1;
            } else if is_dir {
                let sub = format!("{path}/");
                if self.seen_dirs.insert(sub.clone()) {
                    self.dirs.push_back((sub, None));
                }
            } else if self.seen_docs.insert(path.clone()) {
                self.docs.push_back(path.clone());
                found.push(path);
            }
        }
        Ok(found)
    }

    /// Reports a FETCH answer with `bytes` of body (0 for `not-modified`). A `not-found`
    /// counts as fetched too: the document is gone, which is a complete answer.
    pub fn on_fetched(&mut self, path: &str, bytes: u64) -> Result<(), PlanError> {
        self.close(path)?;
        self.outcome.bytes = self.outcome.bytes.saturating_add(bytes);
        Ok(())
    }

    /// Reports a step that failed (timeout, lost connection, server error): the crawl goes
    /// on but will not count as complete.
    pub fn on_failed(&mut self, step: &CrawlStep) -> Result<(), PlanError> {
        let key = match step {
            CrawlStep::List { dir, .. } => dir,
            CrawlStep::Fetch { path } => path,
        };
        self.close(key)?;
        self.outcome.failures += 1;
        Ok(())
    }

    /// Whether nothing is in flight and nothing more will be handed out.
    pub fn is_finished(&self) -> bool {
        self.in_flight.is_empty()
            && (!self.listing_open || self.dirs.is_empty())
            && (!self.fetching_open || self.docs.is_empty())
    }

    /// Counters so far, and whether the crawl is complete.
    pub fn outcome(&self) -> CrawlOutcome {
        CrawlOutcome {
            complete: self.is_finished()
                && self.outcome.stopped.is_none()
                && self.outcome.failures == 0
                && self.outcome.repeated_cursors == 0,
            ..self.outcome
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(name: &str) -> ListEntry {
        ListEntry::file(name)
    }

    fn dir(name: &str) -> ListEntry {
        ListEntry::dir(name)
    }

    /// Hands out every step available now.
    fn drain(plan: &mut CrawlPlan, now: Instant) -> Vec<CrawlStep> {
        std::iter::from_fn(|| plan.next_step(now)).collect()
    }

    /// A crawl of `/` under `limits`, started now; with its start time.
    fn crawl_of_root(limits: CrawlLimits) -> (CrawlPlan, Instant) {
        let t0 = Instant::now();
        (CrawlPlan::new("/", limits, t0).unwrap(), t0)
    }

    /// Hands out the first step of a fresh crawl of `/`, its root listing, at `now`
    /// and answers it with `entries`.
    fn list_root(plan: &mut CrawlPlan, now: Instant, entries: impl IntoIterator<Item = ListEntry>) {
        assert_eq!(drain(plan, now), [list("/", None)]);
        plan.on_listed("/", entries, None).unwrap();
    }

    /// Runs a crawl of a root holding one document, `a.md`, at time `now`.
    fn crawl_one_document(mut plan: CrawlPlan, now: Instant) -> CrawlOutcome {
        list_root(&mut plan, now, [doc("a.md")]);
        assert_eq!(drain(&mut plan, now), [fetch("/a.md")]);
        plan.on_fetched("/a.md", 1).unwrap();
        assert!(drain(&mut plan, now).is_empty());
        assert!(plan.is_finished());
        plan.outcome()
    }

    fn fetch(path: &str) -> CrawlStep {
        CrawlStep::Fetch {
            path: path.to_owned(),
        }
    }

    fn list(dir: &str, cursor: Option<&str>) -> CrawlStep {
        CrawlStep::List {
            dir: dir.to_owned(),
            cursor: cursor.map(str::to_owned),
        }
    }

    #[test]
    fn a_tree_is_listed_then_fetched_once_each_with_paging() {
        let (mut plan, t0) = crawl_of_root(CrawlLimits::default());
        assert_eq!(drain(&mut plan, t0), [list("/", None)]);
        assert!(!plan.is_finished());
        let found = plan
            .on_listed(
                "/",
                [doc("a.md"), dir("sub"), doc("logo.png"), doc("B.MD")],
                Some("c2".to_owned()),
            )
            .unwrap();
        assert_eq!(found, ["/a.md", "/B.MD"]);
        // The next page first, then the sub-directory, then documents.
        assert_eq!(
            drain(&mut plan, t0),
            [
                list("/", Some("c2")),
                list("/sub/", None),
                fetch("/a.md"),
                fetch("/B.MD")
            ]
        );
        let found = plan
            .on_listed("/", [doc("c.md"), doc("a.md"), dir("sub")], None)
            .unwrap();
        assert_eq!(
            found,
            ["/c.md"],
            "a.md and sub/ were seen on the first page"
        );
        let found = plan
            .on_listed("/sub/", [doc("d.md"), dir(".."), doc("bell\u{7}.md")], None)
            .unwrap();
        assert_eq!(found, ["/sub/d.md"]);
        plan.on_fetched("/a.md", 10).unwrap();
        plan.on_fetched("/B.MD", 0).unwrap();
        assert_eq!(drain(&mut plan, t0), [fetch("/c.md"), fetch("/sub/d.md")]);
        plan.on_fetched("/c.md", 5).unwrap();
        plan.on_fetched("/sub/d.md", 5).unwrap();
        assert!(plan.is_finished());
        let outcome = plan.outcome();
        assert_eq!(
            outcome,
            CrawlOutcome {
                documents: 4,
                listings: 3,
                bytes: 20,
                failures: 0,
                rejected_names: 2,
                repeated_cursors: 0,
                stopped: None,
                complete: true,
            }
        );
    }

    #[test]
    fn a_cursor_already_followed_ends_the_listing_incomplete() {
        let (mut plan, t0) = crawl_of_root(CrawlLimits::default());
        assert_eq!(drain(&mut plan, t0), [list("/", None)]);
        plan.on_listed("/", [doc("a.md")], Some("c1".to_owned()))
            .unwrap();
        assert_eq!(
            drain(&mut plan, t0),
            [list("/", Some("c1")), fetch("/a.md")]
        );
        // A loop of two cursors: c1 → c2 → c1.
        plan.on_listed("/", [doc("b.md")], Some("c2".to_owned()))
            .unwrap();
        assert_eq!(
            drain(&mut plan, t0),
            [list("/", Some("c2")), fetch("/b.md")]
        );
        plan.on_listed("/", [doc("a.md")], Some("c1".to_owned()))
            .unwrap();
        assert_eq!(drain(&mut plan, t0), [], "c1 is not asked for again");
        plan.on_fetched("/a.md", 1).unwrap();
        plan.on_fetched("/b.md", 1).unwrap();
        assert!(plan.is_finished());
        let outcome = plan.outcome();
        assert_eq!((outcome.listings, outcome.repeated_cursors), (3, 1));
        assert!(!outcome.complete);
        // The same cursor in another folder is another page.
        let (mut plan, t0) = crawl_of_root(CrawlLimits::default());
        drain(&mut plan, t0);
        plan.on_listed("/", [dir("x")], Some("p".to_owned()))
            .unwrap();
        assert_eq!(
            drain(&mut plan, t0),
            [list("/", Some("p")), list("/x/", None)]
        );
        plan.on_listed("/x/", [], Some("p".to_owned())).unwrap();
        assert_eq!(drain(&mut plan, t0), [list("/x/", Some("p"))]);
    }

    #[test]
    fn the_document_bound_stops_the_crawl_incomplete() {
        let (mut plan, t0) = crawl_of_root(CrawlLimits {
            max_documents: 2,
            ..CrawlLimits::default()
        });
        list_root(&mut plan, t0, [doc("a.md"), doc("b.md"), doc("c.md")]);
        assert_eq!(drain(&mut plan, t0), [fetch("/a.md"), fetch("/b.md")]);
        assert!(!plan.is_finished(), "two fetches are still out");
        plan.on_fetched("/a.md", 1).unwrap();
        plan.on_fetched("/b.md", 1).unwrap();
        assert!(plan.is_finished());
        assert_eq!(plan.outcome().stopped, Some(StopReason::Documents(2)));
        assert!(!plan.outcome().complete);
    }

    #[test]
    fn exactly_max_documents_is_still_complete() {
        let (plan, t0) = crawl_of_root(CrawlLimits {
            max_documents: 1,
            ..CrawlLimits::default()
        });
        assert!(crawl_one_document(plan, t0).complete);
    }

    #[test]
    fn the_byte_bound_stops_new_fetches() {
        let (mut plan, t0) = crawl_of_root(CrawlLimits {
            max_bytes: 100,
            max_in_flight: 1,
            ..CrawlLimits::default()
        });
        list_root(&mut plan, t0, [doc("a.md"), doc("b.md"), doc("c.md")]);
        assert_eq!(drain(&mut plan, t0), [fetch("/a.md")]);
        plan.on_fetched("/a.md", 60).unwrap();
        assert_eq!(drain(&mut plan, t0), [fetch("/b.md")]);
        plan.on_fetched("/b.md", 60).unwrap();
        assert!(drain(&mut plan, t0).is_empty());
        let outcome = plan.outcome();
        assert_eq!(
            (outcome.stopped, outcome.bytes, outcome.complete),
            (Some(StopReason::Bytes(100)), 120, false)
        );
        assert!(plan.is_finished());
    }

    #[test]
    fn the_deadline_stops_new_requests() {
        let (mut plan, t0) = crawl_of_root(CrawlLimits {
            time_budget: Duration::from_secs(10),
            ..CrawlLimits::default()
        });
        assert_eq!(plan.deadline(), Some(t0 + Duration::from_secs(10)));
        list_root(&mut plan, t0, [doc("a.md"), doc("b.md")]);
        let late = t0 + Duration::from_secs(10);
        assert!(drain(&mut plan, late).is_empty());
        assert!(
            drain(&mut plan, t0).is_empty(),
            "once stopped, earlier times do not restart it"
        );
        assert!(plan.is_finished());
        let outcome = plan.outcome();
        assert_eq!(
            outcome.stopped,
            Some(StopReason::Deadline(Duration::from_secs(10)))
        );
        assert_eq!(
            outcome.stopped.map(|s| s.to_string()).as_deref(),
            Some("time limit (10 s) reached")
        );
        assert!(!outcome.complete);
    }

    #[test]
    fn a_budget_past_the_clock_means_no_deadline() {
        let (plan, t0) = crawl_of_root(CrawlLimits {
            time_budget: Duration::MAX,
            ..CrawlLimits::default()
        });
        assert_eq!(plan.deadline(), None);
        let much_later = t0 + Duration::from_secs(100 * 365 * 24 * 3600);
        assert!(crawl_one_document(plan, much_later).complete);
    }

    #[test]
    fn listing_goes_on_after_the_document_bound() {
        let (mut plan, t0) = crawl_of_root(CrawlLimits {
            max_documents: 2,
            ..CrawlLimits::default()
        });
        list_root(
            &mut plan,
            t0,
            [doc("a.md"), doc("b.md"), doc("c.md"), dir("sub")],
        );
        // The fetches go out while /sub/ is still being listed, and use up the bound.
        assert_eq!(
            drain(&mut plan, t0),
            [list("/sub/", None), fetch("/a.md"), fetch("/b.md")]
        );
        assert_eq!(plan.outcome().stopped, Some(StopReason::Documents(2)));
        plan.on_fetched("/a.md", 1).unwrap();
        plan.on_fetched("/b.md", 1).unwrap();
        let found = plan
            .on_listed("/sub/", [doc("d.md"), dir("deeper")], Some("p2".to_owned()))
            .unwrap();
        assert_eq!(found, ["/sub/d.md"]);
        assert!(!plan.is_finished(), "two listings are still to do");
        // Listings only: no third fetch.
        assert_eq!(
            drain(&mut plan, t0),
            [list("/sub/", Some("p2")), list("/sub/deeper/", None)]
        );
        assert_eq!(
            plan.on_listed("/sub/", [doc("e.md")], None).unwrap(),
            ["/sub/e.md"]
        );
        assert_eq!(
            plan.on_listed("/sub/deeper/", [doc("f.md")], None).unwrap(),
            ["/sub/deeper/f.md"]
        );
        assert!(drain(&mut plan, t0).is_empty());
        assert!(plan.is_finished());
        let outcome = plan.outcome();
        assert_eq!(
            (outcome.documents, outcome.listings, outcome.stopped),
            (2, 4, Some(StopReason::Documents(2)))
        );
        assert!(!outcome.complete);
    }

    #[test]
    fn the_deadline_stops_listing_after_the_document_bound() {
        let (mut plan, t0) = crawl_of_root(CrawlLimits {
            max_documents: 1,
            time_budget: Duration::from_secs(10),
            ..CrawlLimits::default()
        });
        list_root(&mut plan, t0, [doc("a.md"), doc("b.md"), dir("sub")]);
        assert_eq!(drain(&mut plan, t0), [list("/sub/", None), fetch("/a.md")]);
        plan.on_fetched("/a.md", 1).unwrap();
        plan.on_listed("/sub/", [dir("deeper")], None).unwrap();
        assert!(drain(&mut plan, t0 + Duration::from_secs(10)).is_empty());
        assert!(plan.is_finished(), "/sub/deeper/ is left unlisted");
        assert_eq!(plan.outcome().stopped, Some(StopReason::Documents(1)));
    }

    #[test]
    fn the_listing_cap_stops_listing_but_not_fetching() {
        let (plan, t0) = crawl_of_root(CrawlLimits::default());
        let mut plan = plan.with_max_listings(2);
        list_root(&mut plan, t0, [doc("a.md"), dir("one"), dir("two")]);
        // One listing left: /one/; /two/ waits, so a.md goes out.
        assert_eq!(drain(&mut plan, t0), [list("/one/", None), fetch("/a.md")]);
        plan.on_listed("/one/", [doc("b.md")], None).unwrap();
        assert_eq!(plan.outcome().stopped, Some(StopReason::Listings(2)));
        assert_eq!(drain(&mut plan, t0), [fetch("/one/b.md")]);
        plan.on_fetched("/a.md", 1).unwrap();
        plan.on_fetched("/one/b.md", 1).unwrap();
        assert!(plan.is_finished());
        let outcome = plan.outcome();
        assert_eq!((outcome.listings, outcome.documents), (2, 2));
        assert!(!outcome.complete, "/two/ was never listed");
        assert_eq!(
            StopReason::Listings(2).to_string(),
            "listing limit (2 listings) reached"
        );
    }

    #[test]
    fn exactly_max_listings_is_still_complete() {
        let (plan, t0) = crawl_of_root(CrawlLimits::default());
        assert!(crawl_one_document(plan.with_max_listings(1), t0).complete);
    }

    #[test]
    fn no_more_than_max_in_flight_requests_are_out() {
        let t0 = Instant::now();
        let limits = CrawlLimits {
            max_in_flight: 2,
            ..CrawlLimits::default()
        };
        let mut plan = CrawlPlan::new("/docs", limits, t0).unwrap();
        assert_eq!(drain(&mut plan, t0), [list("/docs/", None)]);
        plan.on_listed("/docs/", (0..5).map(|i| doc(&format!("{i}.md"))), None)
            .unwrap();
        assert_eq!(drain(&mut plan, t0).len(), 2);
        plan.on_fetched("/docs/0.md", 1).unwrap();
        assert_eq!(drain(&mut plan, t0), [fetch("/docs/2.md")]);
    }

    #[test]
    fn a_failure_leaves_the_crawl_incomplete() {
        let (mut plan, t0) = crawl_of_root(CrawlLimits::default());
        list_root(&mut plan, t0, [doc("a.md")]);
        let steps = drain(&mut plan, t0);
        plan.on_failed(&steps[0]).unwrap();
        assert!(plan.is_finished());
        let outcome = plan.outcome();
        assert_eq!(
            (outcome.failures, outcome.stopped, outcome.complete),
            (1, None, false)
        );
    }

    #[test]
    fn reports_for_steps_not_in_flight_are_refused() {
        let (mut plan, t0) = crawl_of_root(CrawlLimits::default());
        assert_eq!(
            plan.on_fetched("/a.md", 1),
            Err(PlanError::NotInFlight("/a.md".to_owned()))
        );
        list_root(&mut plan, t0, []);
        assert!(plan.on_listed("/", [], None).is_err(), "reported twice");
        assert_eq!(
            CrawlPlan::new("docs/", CrawlLimits::default(), t0).unwrap_err(),
            PlanError::BadRoot("docs/".to_owned())
        );
    }
}
