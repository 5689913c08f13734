//! One change feed per source (DESIGN.md wave-3 rule 5): what the source
//! said changed and the session has not told the agent yet, whether the
//! feed is healthy (so a cached document stays fresh until an event says
//! otherwise), and what the session wrote itself (not news). Pure state:
//! the caller gives the clock; `watch_feed.rs` (a server's WATCH) and
//! `folder_feed.rs` (file events under `--root`) drive it.

use crate::dedup::Identity;
use markdown_slice::SectionHashes;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A feed that sent nothing for this long is not healthy: about two
/// heartbeats of a WATCH stream.
pub const HEALTHY_SILENCE: Duration = Duration::from_secs(40);

/// Paths remembered as changed and not yet told; past it the oldest go
/// (the next read of them revalidates anyway).
const MAX_PENDING: usize = 4096;

/// How the feed stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Health {
    /// No feed (yet, or any more): revalidation by `--fresh-for`.
    Off,
    /// Established at `since`; heard from last at `heard`. `quiet`: a
    /// folder's events, which say nothing while nothing changes, so
    /// silence does not end its health.
    On {
        since: Instant,
        heard: Instant,
        quiet: bool,
    },
}

/// What the feed tells a listener (the `watch` verb), as it happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedHint {
    /// The feed stands (a WATCH acknowledged, a folder watched).
    Established,
    /// A document changed (its key).
    Changed(String),
    /// The feed was lost; it is tried again.
    Lost,
    /// There will be no feed, and why.
    GaveUp(String),
}

/// The session's change feed state.
#[derive(Debug)]
pub struct ChangeFeed {
    /// Who hears each hint as it happens (the `watch` verb).
    listener: Option<tokio::sync::mpsc::UnboundedSender<FeedHint>>,
    health: Health,
    /// Changed paths in the order heard, each once.
    pending: VecDeque<String>,
    queued: HashSet<String>,
    /// The identity each path was last told at (with its section hashes,
    /// the base of the next change's sections) or the session wrote, since
    /// the session last delivered it.
    told: HashMap<String, (Identity, Option<Arc<SectionHashes>>)>,
    /// Whether the source is a folder (its documents are always v1).
    folder: bool,
}

impl ChangeFeed {
    /// A feed with nothing heard, for a folder (`folder`) or a server.
    pub fn new(folder: bool) -> ChangeFeed {
        ChangeFeed {
            listener: None,
            health: Health::Off,
            pending: VecDeque::new(),
            queued: HashSet::new(),
            told: HashMap::new(),
            folder,
        }
    }

    /// Whether the source is a folder.
    pub fn is_folder(&self) -> bool {
        self.folder
    }

    /// Every hint from now on, as it happens.
    pub fn listen(&mut self) -> tokio::sync::mpsc::UnboundedReceiver<FeedHint> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        self.listener = Some(tx);
        rx
    }

    fn hint(&self, hint: FeedHint) {
        if let Some(l) = &self.listener {
            let _ = l.send(hint);
        }
    }

    /// There will be no feed (`why`): revalidation by `--fresh-for`.
    pub fn gave_up(&mut self, why: String) {
        self.health = Health::Off;
        self.hint(FeedHint::GaveUp(why));
    }

    /// `path` changed, whether or not it is news to the session.
    pub fn heard_change(&mut self, path: &str) {
        self.hint(FeedHint::Changed(path.to_string()));
    }

    /// The feed is established at `now` (a WATCH acknowledged; a folder's
    /// watch set up on a local file system).
    pub fn established(&mut self, now: Instant, quiet: bool) {
        self.health = Health::On {
            since: now,
            heard: now,
            quiet,
        };
        self.hint(FeedHint::Established);
    }

    /// The feed said something at `now` (a change, a heartbeat).
    pub fn heard(&mut self, now: Instant) {
        if let Health::On { heard, .. } = &mut self.health {
            *heard = now;
        }
    }

    /// The feed is lost (a dropped stream, `resync`, an overflow): back to
    /// revalidation by `--fresh-for` until it is established again.
    pub fn lost(&mut self) {
        self.health = Health::Off;
        self.hint(FeedHint::Lost);
    }

    /// When the feed became healthy, while it is (a cached document asked
    /// since then is fresh until an event says otherwise); `None` when not.
    pub fn healthy_since(&self, now: Instant) -> Option<Instant> {
        match self.health {
            Health::On {
                since,
                heard,
                quiet,
            } if quiet || now.saturating_duration_since(heard) < HEALTHY_SILENCE => Some(since),
            _ => None,
        }
    }

    /// `path` (a document key) changed.
    pub fn changed(&mut self, path: &str) {
        if self.queued.insert(path.to_string()) {
            self.pending.push_back(path.to_string());
        }
        while self.pending.len() > MAX_PENDING {
            if let Some(old) = self.pending.pop_front() {
                self.queued.remove(&old);
            }
        }
    }

    /// The changed paths not told yet, oldest first.
    pub fn pending(&self) -> impl Iterator<Item = &str> {
        self.pending.iter().map(String::as_str)
    }

    /// `path` needs no telling (told, re-delivered, or not news).
    pub fn settle(&mut self, path: &str) {
        if self.queued.remove(path) {
            self.pending.retain(|p| p != path);
        }
    }

    /// `path` was told at `identity` (its sections `hashes`): the same
    /// change is never told again, and the next is told from here.
    pub fn told(&mut self, path: &str, identity: Identity, hashes: Option<Arc<SectionHashes>>) {
        self.settle(path);
        self.told.insert(path.to_string(), (identity, hashes));
    }

    /// The session wrote `path` (now at `identity`): not news to it.
    pub fn wrote(&mut self, path: &str, identity: Identity) {
        self.told.insert(path.to_string(), (identity, None));
    }

    /// The session delivered `path` again: what it holds is the base now.
    pub fn redelivered(&mut self, path: &str) {
        self.settle(path);
        self.told.remove(path);
    }

    /// What `path` was last told at or written as, since it was delivered.
    pub fn told_state(&self, path: &str) -> Option<(Identity, Option<Arc<SectionHashes>>)> {
        self.told.get(path).cloned()
    }

    /// Whether `identity` of `path` is what was told last or the session
    /// wrote: not news.
    pub fn already_known(&self, path: &str, identity: &Identity) -> bool {
        self.told.get(path).is_some_and(|(t, _)| {
            (t.version.is_some() || t.etag.is_some())
                && (t == identity
                    || (t.etag.is_none() && t.version.is_some() && t.version == identity.version))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(n: &str) -> Identity {
        Identity {
            version: Some(n.into()),
            etag: None,
        }
    }

    #[test]
    fn a_watch_is_healthy_while_it_speaks_and_a_folder_s_while_it_stands() {
        let t0 = Instant::now();
        let mut feed = ChangeFeed::new(false);
        assert_eq!(feed.healthy_since(t0), None);
        feed.established(t0, false);
        assert_eq!(feed.healthy_since(t0 + Duration::from_secs(39)), Some(t0));
        assert_eq!(feed.healthy_since(t0 + HEALTHY_SILENCE), None);
        feed.heard(t0 + Duration::from_secs(30));
        assert_eq!(feed.healthy_since(t0 + HEALTHY_SILENCE), Some(t0));
        feed.lost();
        assert_eq!(feed.healthy_since(t0), None);
        let mut folder = ChangeFeed::new(true);
        folder.established(t0, true);
        assert_eq!(
            folder.healthy_since(t0 + Duration::from_secs(3600)),
            Some(t0)
        );
    }

    #[test]
    fn each_change_waits_once_and_what_was_told_or_written_is_known() {
        let mut feed = ChangeFeed::new(false);
        for p in ["/a.md", "/b.md", "/a.md"] {
            feed.changed(p);
        }
        assert_eq!(feed.pending().collect::<Vec<_>>(), ["/a.md", "/b.md"]);
        feed.told("/a.md", v("4"), None);
        assert_eq!(feed.pending().collect::<Vec<_>>(), ["/b.md"]);
        assert!(feed.already_known("/a.md", &v("4")));
        assert!(!feed.already_known("/a.md", &v("5")));
        feed.wrote("/c.md", v("2"));
        assert!(feed.already_known("/c.md", &v("2")));
        for i in 0..MAX_PENDING + 10 {
            feed.changed(&format!("/{i}.md"));
        }
        assert_eq!(feed.pending().count(), MAX_PENDING);
    }
}
