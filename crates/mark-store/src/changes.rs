//! What changed in a store, for WATCH: the engine's own writes announce
//! themselves, and a re-check of the store's stamps finds the rest (a flat
//! folder's files edited or deleted, another process writing the store).
//! The engine hands each change to the sink the server set; it keeps no
//! subscriber state.

use crate::paths::SafePath;
use crate::store::{Stamp, Store};
use mark_proto::watch::ChangeOp;
use std::collections::HashMap;
use std::io;
use std::sync::Arc;

/// One change to one document, as a watch event tells it (without cursor).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreChange {
    /// The document's request path, percent-encoded (`/ops/deploy.md`).
    pub path: String,
    /// Its version after the change (0 when it is gone).
    pub version: u64,
    /// `sha256-<hex>` of its body as served; `None` when archived or gone.
    pub hash: Option<String>,
    /// What happened.
    pub op: ChangeOp,
}

/// Where the engine sends changes (set by the server that serves WATCH).
pub type ChangeSink = Arc<dyn Fn(StoreChange) + Send + Sync>;

/// What the last re-check saw of one document: its stamp, and the hash of
/// its body once a change made the tracker read it.
#[derive(Debug, Clone)]
struct Seen {
    stamp: Stamp,
    hash: Option<String>,
}

/// The sink and what the re-check saw last.
#[derive(Default)]
pub(crate) struct ChangeTracker {
    sink: Option<ChangeSink>,
    /// `None` until the first re-check takes the store's stamps as its start.
    seen: Option<HashMap<SafePath, Seen>>,
}

impl std::fmt::Debug for ChangeTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeTracker")
            .field("sink", &self.sink.is_some())
            .field("seen", &self.seen.as_ref().map(HashMap::len))
            .finish()
    }
}

impl ChangeTracker {
    pub(crate) fn set_sink(&mut self, sink: Option<ChangeSink>) {
        self.sink = sink;
    }

    /// Tells the sink of a write the engine made to `doc`, and remembers
    /// its new stamp so the next re-check does not tell it again.
    pub(crate) fn written(&mut self, store: &Store, doc: &SafePath, op: ChangeOp) {
        let Some(sink) = self.sink.clone() else {
            return;
        };
        let (stamp, change) = match read_change(store, doc, op) {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(document = %doc.decoded(), error = %e, "cannot read a written document for its watchers");
                return;
            }
        };
        if let (Some(seen), Some(stamp)) = (&mut self.seen, stamp) {
            seen.insert(
                doc.clone(),
                Seen {
                    stamp,
                    hash: change.hash.clone(),
                },
            );
        }
        sink(change);
    }

    /// Walks the store's stamps and tells the sink of every document whose
    /// stamp moved (and whose body or archived flag did, once known) or
    /// that is gone; the first walk only takes the stamps. Returns how many
    /// changes it told.
    pub(crate) fn recheck(&mut self, store: &Store) -> io::Result<usize> {
        let Some(sink) = self.sink.clone() else {
            return Ok(0);
        };
        let found = store.walk(&SafePath::root())?;
        let Some(seen) = &mut self.seen else {
            self.seen = Some(
                found
                    .into_iter()
                    .map(|(path, stamp)| (path, Seen { stamp, hash: None }))
                    .collect(),
            );
            return Ok(0);
        };
        let mut told = 0;
        let mut live: HashMap<SafePath, Seen> = HashMap::with_capacity(found.len());
        for (path, stamp) in found {
            let before = seen.remove(&path);
            let moved = before.as_ref().is_none_or(|b| b.stamp != stamp);
            let mut now = Seen {
                stamp,
                hash: before.as_ref().and_then(|b| b.hash.clone()),
            };
            if moved {
                let (_, change) = read_change(store, &path, ChangeOp::Publish)?;
                let same = before.as_ref().is_some_and(|b| {
                    b.hash.is_some() && b.hash == change.hash && b.stamp.archived == stamp.archived
                });
                now.hash = change.hash.clone();
                if !same {
                    sink(change);
                    told += 1;
                }
            }
            live.insert(path, now);
        }
        for gone in seen.keys() {
            sink(StoreChange {
                path: gone.encoded(),
                version: 0,
                hash: None,
                op: ChangeOp::Remove,
            });
            told += 1;
        }
        *seen = live;
        Ok(told)
    }
}

/// The change `op` made to `doc` as it stands now: an archived document
/// carries no hash and a missing one is removed; with its stamp.
fn read_change(
    store: &Store,
    doc: &SafePath,
    op: ChangeOp,
) -> io::Result<(Option<Stamp>, StoreChange)> {
    let stamp = store
        .walk(doc)?
        .into_iter()
        .find(|(p, _)| p == doc)
        .map(|(_, s)| s);
    let change = match store.current(doc)? {
        Some(snap) if snap.archived => StoreChange {
            path: doc.encoded(),
            version: snap.version,
            hash: None,
            op: ChangeOp::Archive,
        },
        Some(snap) => StoreChange {
            path: doc.encoded(),
            version: snap.version,
            hash: Some(snap.content_hash()),
            op,
        },
        None => StoreChange {
            path: doc.encoded(),
            version: 0,
            hash: None,
            op: ChangeOp::Remove,
        },
    };
    Ok((stamp, change))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Engine, Op, StoreMode, TokenStore};
    use mark_proto::{Request, Status, Verb};
    use std::sync::Mutex;
    use std::time::SystemTime;

    fn collecting(engine: &Engine) -> Arc<Mutex<Vec<StoreChange>>> {
        let told = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&told);
        engine.set_change_sink(Some(Arc::new(move |c| sink.lock().unwrap().push(c))));
        told
    }

    fn ops(told: &Mutex<Vec<StoreChange>>) -> Vec<(String, u64, String)> {
        told.lock()
            .unwrap()
            .drain(..)
            .map(|c| (c.path, c.version, c.op.as_str().to_string()))
            .collect()
    }

    #[test]
    fn writes_tell_what_changed_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let keys = tempfile::tempdir().unwrap();
        let file = keys.path().join("tokens.toml");
        let token = crate::generate_token(&["/**".into()], &[Op::Publish], None, &file).unwrap();
        let engine = Engine::open(
            dir.path(),
            StoreMode::Versioned,
            Some(TokenStore::load(&file).unwrap()),
        )
        .unwrap();
        let told = collecting(&engine);
        engine.recheck_changes().unwrap();
        let send = |verb, body: &str, expected: Option<&str>| {
            let mut r = Request::new(verb, "/a b.md")
                .with_meta("auth", &token)
                .with_body(body.as_bytes().to_vec());
            if let Some(e) = expected {
                r = r.with_meta("expected-version", e);
            }
            engine.handle(&r, SystemTime::now()).status
        };
        assert_eq!(send(Verb::Publish, "# A\n", None), Status::Created);
        assert_eq!(send(Verb::Publish, "# A\n", None), Status::Ok);
        assert_eq!(send(Verb::Append, "more\n", Some("1")), Status::Created);
        assert_eq!(send(Verb::Archive, "", None), Status::Ok);
        assert_eq!(send(Verb::Archive, "", None), Status::Ok);
        assert_eq!(send(Verb::Publish, "", None), Status::Ok);
        assert_eq!(
            ops(&told),
            [
                ("/a%20b.md".into(), 1, "publish".into()),
                ("/a%20b.md".into(), 2, "append".into()),
                ("/a%20b.md".into(), 2, "archive".into()),
                ("/a%20b.md".into(), 2, "publish".into()),
            ]
        );
        // The engine's own writes are not found again by the re-check.
        assert_eq!(engine.recheck_changes().unwrap(), 0);
    }

    #[test]
    fn the_recheck_finds_a_flat_folder_s_saves_and_deletions_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.md"), "# A\n").unwrap();
        std::fs::write(dir.path().join("b.md"), "# B\n").unwrap();
        let engine = Engine::open(dir.path(), StoreMode::Flat, None).unwrap();
        let told = collecting(&engine);
        assert_eq!(
            engine.recheck_changes().unwrap(),
            0,
            "the first walk only starts"
        );
        std::fs::write(dir.path().join("a.md"), "# A, longer\n").unwrap();
        std::fs::remove_file(dir.path().join("b.md")).unwrap();
        std::fs::write(dir.path().join("c.md"), "# C\n").unwrap();
        engine.recheck_changes().unwrap();
        let mut got = ops(&told);
        got.sort();
        assert_eq!(
            got,
            [
                ("/a.md".into(), 1, "publish".into()),
                ("/b.md".into(), 0, "remove".into()),
                ("/c.md".into(), 1, "publish".into()),
            ]
        );
        assert_eq!(engine.recheck_changes().unwrap(), 0);
    }

    #[test]
    fn a_watch_scope_is_checked_like_a_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ops")).unwrap();
        std::fs::write(dir.path().join("ops/deploy.md"), "# D\n").unwrap();
        let engine = Engine::open(dir.path(), StoreMode::Flat, None).unwrap();
        let now = SystemTime::now();
        let scope = |p: &str| engine.watch_scope(&Request::new(Verb::Watch, p), now);
        let folder = scope("/ops/").unwrap();
        assert!(folder.covers("/ops/deploy.md") && !folder.covers("/other.md"));
        let doc = scope("/ops/deploy.md").unwrap();
        assert!(doc.covers("/ops/deploy.md") && !doc.covers("/ops/deploy.md.bak"));
        assert!(scope("/").unwrap().covers("/x/y.md"));
        assert_eq!(scope("/nope/").unwrap_err().status, Status::NotFound);
        assert_eq!(scope("/nope.md").unwrap_err().status, Status::NotFound);
        let direct = engine.handle(&Request::new(Verb::Watch, "/"), now);
        assert_eq!(direct.status, Status::BadRequest);
    }
}
