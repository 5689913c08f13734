//! A folder's change feed: file events under `--root` (the `notify`
//! crate), debounced, each mapped to the document it changes (a plain
//! file, or a versioned store's `versions/<name>.vN` and link) and given to
//! [`Session::source_changed`]. Healthy only when the whole folder is
//! watched on a local file system with no event lost; otherwise (a network
//! or FUSE mount, the inotify limit, an overflow) the session revalidates
//! by `--fresh-for` as before, said once on stderr.

use crate::session::Session;
use notify::{Event, RecursiveMode, Watcher};
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Events closer together than this are taken as one change (an editor's
/// save is often several writes and a rename).
const DEBOUNCE: Duration = Duration::from_millis(50);

/// File systems where events may never arrive.
const REMOTE_FILE_SYSTEMS: &[&str] = &[
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "drvfs", "afs", "sshfs", "davfs",
];

/// What the file watcher tells the feed.
enum Heard {
    Paths(Vec<PathBuf>),
    /// Events were lost (an overflow) or the watcher failed.
    Lost(String),
}

/// Starts watching `root` for `session`; says once on stderr when events
/// cannot be trusted there.
pub fn start(session: &Arc<Session>, root: &Path) {
    if let Some(fs) = remote_file_system(root) {
        let why = format!(
            "{} is on a {fs} file system, where file events may never arrive: documents are revalidated by --fresh-for",
            root.display()
        );
        give_up(session, why);
        return;
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let handler = move |event: notify::Result<Event>| {
        let heard = match event {
            Ok(e) if e.need_rescan() => Heard::Lost("file events overflowed".into()),
            // Reads (this session's own among them) change nothing.
            Ok(e) if matches!(e.kind, notify::EventKind::Access(_)) => return,
            Ok(e) => Heard::Paths(e.paths),
            Err(e) => Heard::Lost(e.to_string()),
        };
        let _ = tx.send(heard);
    };
    let mut watcher = match notify::recommended_watcher(handler) {
        Ok(w) => w,
        Err(e) => return unwatched(session, root, &e.to_string()),
    };
    if let Err(e) = watcher.watch(root, RecursiveMode::Recursive) {
        return unwatched(session, root, &e.to_string());
    }
    session.feed().established(Instant::now(), true);
    tokio::spawn(follow(
        Arc::downgrade(session),
        root.to_path_buf(),
        rx,
        watcher,
    ));
}

fn unwatched(session: &Session, root: &Path, why: &str) {
    let why = format!(
        "cannot watch {} for changes ({why}; on Linux the inotify limit is fs.inotify.max_user_watches): documents are revalidated by --fresh-for",
        root.display()
    );
    give_up(session, why);
}

/// Applies the events as they come, `DEBOUNCE` after the first of a burst,
/// until the session ends or events are lost.
async fn follow(
    session: Weak<Session>,
    root: PathBuf,
    mut rx: mpsc::UnboundedReceiver<Heard>,
    _watcher: notify::RecommendedWatcher,
) {
    while let Some(first) = rx.recv().await {
        tokio::time::sleep(DEBOUNCE).await;
        let mut burst = vec![first];
        while let Ok(more) = rx.try_recv() {
            burst.push(more);
        }
        let Some(live) = session.upgrade() else {
            return;
        };
        let mut docs = BTreeSet::new();
        for heard in burst {
            match heard {
                Heard::Paths(paths) => {
                    docs.extend(paths.iter().filter_map(|p| document_of(&root, p)))
                }
                Heard::Lost(why) => {
                    let why = format!(
                        "lost file events under {} ({why}): documents are revalidated by --fresh-for from now on",
                        root.display()
                    );
                    give_up(&live, why);
                    return;
                }
            }
        }
        let now = Instant::now();
        for doc in docs {
            live.source_changed(&doc, now);
        }
    }
}

/// The document key a changed file belongs to: the file itself, or for a
/// versioned store's `dir/versions/name.vN` the document `dir/name`;
/// `None` for hidden names, what is not a `.md` document (a folder) and
/// what is outside `root`.
fn document_of(root: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(root).ok()?;
    let mut names: Vec<String> = Vec::new();
    for c in relative.components() {
        match c {
            Component::Normal(n) => names.push(n.to_str()?.to_string()),
            _ => return None,
        }
    }
    if names.iter().any(|n| n.starts_with('.')) {
        return None;
    }
    if names.len() >= 2 && names[names.len() - 2] == "versions" {
        let name = names.pop()?;
        names.pop();
        let stem = name.rsplit_once(".v").map_or(name.as_str(), |(stem, n)| {
            if n.bytes().all(|b| b.is_ascii_digit()) && !n.is_empty() {
                stem
            } else {
                name.as_str()
            }
        });
        names.push(stem.to_string());
    }
    if !names
        .last()
        .is_some_and(|n| n.to_ascii_lowercase().ends_with(".md"))
    {
        return None;
    }
    let decoded = format!("/{}", names.join("/"));
    crate::keys::document_key(&crate::keys::wire_path(&decoded)).ok()
}

/// The type of the file system holding `root` when events may never
/// arrive on it (a network or FUSE mount), from `/proc/mounts`.
fn remote_file_system(root: &Path) -> Option<String> {
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    let (_, fs) = mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let point = fields.nth(1)?.replace("\\040", " ");
            let fs = fields.next()?.to_string();
            root.starts_with(&point).then_some((point.len(), fs))
        })
        .max_by_key(|(len, _)| *len)?;
    (REMOTE_FILE_SYSTEMS.contains(&fs.as_str()) || fs.starts_with("fuse")).then_some(fs)
}

/// Says once on stderr why folder events cannot be trusted, and turns the
/// session's feed off (documents are revalidated by `--fresh-for`).
fn give_up(session: &Session, why: String) {
    tracing::warn!("{why}");
    session.feed().gave_up(why);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_map_to_their_documents() {
        let root = Path::new("/r");
        let doc = |p: &str| document_of(root, Path::new(p));
        assert_eq!(doc("/r/notes/a b.md").as_deref(), Some("/notes/a%20b.md"));
        assert_eq!(
            doc("/r/ops/versions/deploy.md.v4").as_deref(),
            Some("/ops/deploy.md")
        );
        assert_eq!(doc("/r/ops/deploy.md").as_deref(), Some("/ops/deploy.md"));
        assert_eq!(doc("/r/.mark-store"), None);
        assert_eq!(doc("/r/.obsidian/x.json"), None);
        assert_eq!(doc("/r/ops"), None);
        assert_eq!(doc("/elsewhere/a.md"), None);
    }
}
