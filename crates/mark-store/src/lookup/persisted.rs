//! A persisted index: where it lives (a folder per source under the cache
//! folder, private to the user), how a process opens it, catches up with
//! what other processes committed, takes the writer lock for one update
//! and saves its catalog file beside the commit.
//!
//! The commit is the one truth: tantivy's `meta.json` names the catalog
//! file written just before it (the commit's payload), so a process killed
//! at any moment leaves the last commit and its catalog. An index that is
//! missing, unreadable, of another format or without a readable catalog is
//! rebuilt (one line on stderr), never trusted; a folder that cannot be
//! written, or an update that finds another process's update running for
//! [`LOCK_WAIT`], leaves this process indexing in RAM (one line on
//! stderr). Nothing here writes inside the store's root.

use super::catalog_file::{self, Saved};
use super::{Catalog, INDEX_FORMAT, RowKey};
use crate::paths::SafePath;
use crate::store::{Stamp, Store, StoreMode};
use crate::text_index::TextIndex;
use sha2::{Digest, Sha256};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How long an update waits for another process's update to end before
/// this process indexes in RAM instead.
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(3);
/// How catalog files (and their temporary files) are named.
pub(crate) const CATALOG_PREFIX: &str = "catalog-";
/// The file naming a folder's source, for people and `mark-mcp index`.
pub(crate) const SOURCE_FILE: &str = "source.txt";
/// A document modified this close before its catalog was saved may have
/// changed again within the file system's time resolution: its bytes are
/// checked at the next start (its stamp is not trusted).
const RACY: i128 = 2_000_000_000;

/// The state of a persisted index beside the heap catalog.
#[derive(Debug)]
pub(crate) struct Persisted {
    folder: PathBuf,
    /// The committed catalog file the heap catalog holds (`None`: nothing
    /// was committed with one).
    payload: Option<String>,
    /// The committed index holds entries no readable catalog describes:
    /// the next update clears it first.
    stale: bool,
    /// Changed since the last commit.
    dirty: bool,
}

/// The folder of a source's index under the cache folder `cache`: named by
/// [`INDEX_FORMAT`] and a hash of the canonical root, the store mode and
/// who reads (`reader`: a token's identity; `None`, the engine, which
/// indexes every document and applies read rights per query), never the
/// token itself.
pub(crate) fn source_folder(
    cache: &Path,
    root: &Path,
    mode: StoreMode,
    reader: Option<&str>,
) -> PathBuf {
    let mut key = Sha256::new();
    key.update(root.as_os_str().as_encoded_bytes());
    key.update([0]);
    key.update(match mode {
        StoreMode::Flat => "flat",
        StoreMode::Versioned => "versioned",
    });
    key.update([0]);
    if let Some(reader) = reader {
        key.update(Sha256::digest(reader.as_bytes()));
    }
    let key = hex::encode(key.finalize());
    cache.join(format!("lookup-v{INDEX_FORMAT}-{}", &key[..20]))
}

/// Makes `folder` (and the folders above it that are missing) readable by
/// the user only.
fn make_private(folder: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        builder.mode(0o700);
        builder.create(folder)?;
        std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o700))
    }
    #[cfg(not(unix))]
    builder.create(folder)
}

impl Catalog {
    /// Decides where the index lives before a re-check compares stamps: a
    /// persisted one catches up with other processes' commits; one in RAM
    /// moves to its persisted folder once the store holds more than the
    /// storage's `ram_bytes` of markdown.
    pub(super) fn choose_place(&mut self, store: &Store, found: &[(SafePath, Stamp)]) {
        if self.persisted.is_some() {
            if let Err(e) = self.catch_up() {
                self.fall_back_to_ram(&e.to_string());
            }
            return;
        }
        let Some(storage) = &self.storage else {
            return;
        };
        let bytes: u64 = found.iter().map(|(_, s)| s.len).sum();
        if bytes.max(self.indexed_bytes) <= storage.ram_bytes {
            return;
        }
        let folder = source_folder(&storage.folder, store.root(), store.mode(), None);
        if let Err(e) = self.open_persisted(&folder, store) {
            self.fall_back_to_ram(&e.to_string());
        }
    }

    /// Whether an index in RAM outgrew its storage's `ram_bytes` (a store
    /// whose walk says no sizes, a versioned one, is measured as indexed).
    pub(super) fn outgrew_ram(&self) -> bool {
        self.persisted.is_none()
            && self
                .storage
                .as_ref()
                .is_some_and(|s| self.indexed_bytes > s.ram_bytes)
    }

    fn open_persisted(&mut self, folder: &Path, store: &Store) -> io::Result<()> {
        make_private(folder)?;
        let source = folder.join(SOURCE_FILE);
        if !source.exists() {
            let mode = match store.mode() {
                StoreMode::Flat => "flat",
                StoreMode::Versioned => "versioned",
            };
            let text = format!(
                "root: {}\nmode: {mode}\nformat: {INDEX_FORMAT}\n",
                store.root().display()
            );
            catalog_file::write_atomic(&source, text.as_bytes())?;
        }
        let index = match TextIndex::open_or_create(folder) {
            Ok(index) => index,
            Err(e) => {
                tracing::warn!(
                    "the search index in {} cannot be read ({e}); it is rebuilt",
                    folder.display()
                );
                TextIndex::create_over(folder, LOCK_WAIT)?
            }
        };
        self.clear_heap();
        self.index = Some(index);
        self.persisted = Some(Persisted {
            folder: folder.to_path_buf(),
            payload: None,
            stale: false,
            dirty: false,
        });
        self.load_committed()
    }

    /// Reads what another process committed since this one last read or
    /// wrote the index, when it did.
    fn catch_up(&mut self) -> io::Result<()> {
        let (Some(index), Some(p)) = (self.index.as_mut(), self.persisted.as_ref()) else {
            return Ok(());
        };
        let committed = index.reload()?;
        if committed == p.payload {
            return Ok(());
        }
        self.load_committed()
    }

    /// Replaces the heap catalog by the committed one (the reader is
    /// brought to the last commit first).
    fn load_committed(&mut self) -> io::Result<()> {
        let (Some(index), Some(p)) = (self.index.as_mut(), self.persisted.as_mut()) else {
            return Ok(());
        };
        let mut payload = index.reload()?;
        // A catalog a newer commit replaced may be gone: read the newer one.
        let mut read = None;
        for _ in 0..3 {
            read = payload
                .as_ref()
                .map(|name| catalog_file::read(&p.folder.join(name), |id| index.field(id)));
            match &read {
                Some(Err(e)) if e.kind() == io::ErrorKind::NotFound => {
                    let again = index.reload()?;
                    if again == payload {
                        break;
                    }
                    payload = again;
                }
                _ => break,
            }
        }
        self.clear_heap();
        let (Some(index), Some(p)) = (self.index.as_mut(), self.persisted.as_mut()) else {
            return Ok(());
        };
        p.payload = payload;
        p.stale = false;
        match read {
            None => {
                p.stale = index.holds_entries();
                index.set_live(Default::default());
            }
            Some(Ok(saved)) => self.install(saved),
            Some(Err(e)) => {
                tracing::warn!(
                    "the search index in {} has no readable catalog ({e}); it is rebuilt",
                    p.folder.display()
                );
                p.stale = true;
                index.set_live(Default::default());
            }
        }
        Ok(())
    }

    /// Puts a catalog file's documents on the heap and its statistics in
    /// the index.
    fn install(&mut self, saved: Saved) {
        let racy_after = saved.saved_at_ns - RACY;
        for (path, mut doc) in saved.docs {
            self.indexed_bytes += doc.bytes;
            self.paths.insert(doc.ord, path.clone());
            self.rows.insert(
                doc.ord,
                RowKey {
                    doc: doc.ord,
                    section: None,
                },
            );
            for (i, s) in doc.sections.iter().enumerate() {
                self.rows.insert(
                    s.ord,
                    RowKey {
                        doc: doc.ord,
                        section: Some(i),
                    },
                );
            }
            if doc.stamp.mtime_ns >= racy_after {
                // Never equal to a walk's stamp: its bytes are checked.
                doc.stamp.mtime_ns = i128::MIN;
            }
            self.docs.insert(path, doc);
        }
        self.links.extend(saved.links);
        self.next_ord = saved.next_ord;
        if let Some(index) = self.index.as_mut() {
            index.set_live(saved.live);
        }
    }

    /// Empties the heap catalog (the index is the caller's).
    fn clear_heap(&mut self) {
        self.docs.clear();
        self.rows.clear();
        self.paths.clear();
        self.links.clear();
        self.indexed_bytes = 0;
        self.next_ord = 0;
    }

    /// Readies the index for an update. In RAM: nothing to do (`true`). A
    /// persisted index takes the writer lock (waiting [`LOCK_WAIT`] at
    /// most) and reads what was committed meanwhile; `false` when the heap
    /// catalog changed on the way (another process's commit read, or the
    /// index fell back to RAM): the caller compares the stamps again.
    pub(super) fn begin_update(&mut self) -> io::Result<bool> {
        let (Some(index), Some(p)) = (self.index.as_mut(), self.persisted.as_mut()) else {
            return Ok(true);
        };
        if index.writing() {
            p.dirty = true;
            return Ok(true);
        }
        match index.lock_writer(LOCK_WAIT) {
            Ok(true) => {}
            Ok(false) => {
                self.fall_back_to_ram(&format!(
                    "another process has been updating it for over {} s",
                    LOCK_WAIT.as_secs()
                ));
                return Ok(false);
            }
            Err(e) => {
                self.fall_back_to_ram(&e.to_string());
                return Ok(false);
            }
        }
        let before = self.persisted.as_ref().and_then(|p| p.payload.clone());
        if let Err(e) = self.catch_up() {
            self.fall_back_to_ram(&e.to_string());
            return Ok(false);
        }
        let (Some(index), Some(p)) = (self.index.as_mut(), self.persisted.as_mut()) else {
            return Ok(false);
        };
        if p.stale {
            // The heap catalog is empty: every document is new to it.
            index.clear()?;
            p.stale = false;
        }
        p.dirty = true;
        Ok(p.payload == before)
    }

    /// Commits a persisted index's update: the catalog file first, then
    /// the tantivy commit naming it, which releases the writer lock. Older
    /// catalog files are removed (the one committed before stays for
    /// readers that just read its commit).
    pub(super) fn save(&mut self, now: SystemTime) -> io::Result<()> {
        let (Some(index), Some(p)) = (self.index.as_mut(), self.persisted.as_mut()) else {
            return Ok(());
        };
        if !p.dirty || !index.writing() {
            p.dirty = false;
            return Ok(());
        }
        let bytes = catalog_file::encode(
            &self.docs,
            &self.links,
            self.next_ord,
            index.live_by_path(),
            now,
        );
        let folder = p.folder.clone();
        let keep = p.payload.clone();
        let name = index.commit_with(|opstamp| {
            remove_catalogs_but(&folder, keep.as_deref());
            let name = format!("{CATALOG_PREFIX}{opstamp}.bin");
            catalog_file::write_atomic(&folder.join(&name), &bytes)?;
            Ok(name)
        })?;
        p.payload = Some(name);
        p.dirty = false;
        Ok(())
    }

    /// Leaves persistence for this process: the index is rebuilt in RAM
    /// by the next re-check (one line on stderr says why).
    pub(super) fn fall_back_to_ram(&mut self, why: &str) {
        let folder = self
            .persisted
            .as_ref()
            .map(|p| p.folder.clone())
            .or_else(|| self.storage.as_ref().map(|s| s.folder.clone()))
            .unwrap_or_default();
        tracing::warn!(
            "the search index cannot be kept in {}: {why}; this process indexes in memory",
            folder.display()
        );
        self.persisted = None;
        self.storage = None;
        // Dropping the writer rolls back what it did not commit and
        // releases its lock.
        self.index = None;
        self.clear_heap();
        self.checked_at = None;
    }
}

/// Removes the catalog files in `folder` other than `keep` (files of
/// commits replaced since, or left by a process killed before its commit);
/// called with the writer lock held, so no other process is writing one.
fn remove_catalogs_but(folder: &Path, keep: Option<&str>) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        if name.starts_with(CATALOG_PREFIX) && Some(name) != keep {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// What is kept of a source's index between processes (`Engine::kept_index`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptIndex {
    /// The source's folder in the cache folder.
    pub folder: PathBuf,
    /// Whether the folder exists.
    pub exists: bool,
    /// Bytes of its files.
    pub bytes: u64,
    /// Documents its last commit holds (`None`: no readable commit).
    pub documents: Option<usize>,
    /// When its last commit was written (RFC 3339, UTC).
    pub updated: Option<String>,
}

impl Catalog {
    /// What is kept of the index of the store at `root` (`None`: this
    /// engine keeps none, `--index-dir ''`); with `clear`, removed first
    /// (once no other process is updating it, waiting [`LOCK_WAIT`] at
    /// most), and what was there is reported.
    pub(crate) fn kept_index(&self, store: &Store, clear: bool) -> io::Result<Option<KeptIndex>> {
        let Some(storage) = &self.storage else {
            return Ok(None);
        };
        let folder = source_folder(&storage.folder, store.root(), store.mode(), None);
        let mut kept = KeptIndex {
            exists: folder.is_dir(),
            folder,
            bytes: 0,
            documents: None,
            updated: None,
        };
        if !kept.exists {
            return Ok(Some(kept));
        }
        for entry in std::fs::read_dir(&kept.folder)?.flatten() {
            kept.bytes += entry.metadata().map_or(0, |m| m.len());
        }
        if kept.folder.join("meta.json").is_file() {
            let mut index = TextIndex::open_or_create(&kept.folder)?;
            if let Some(name) = index.reload()? {
                let catalog = kept.folder.join(name);
                kept.updated = std::fs::metadata(&catalog)
                    .and_then(|m| m.modified())
                    .ok()
                    .map(|at| crate::clock::format_rfc3339(crate::clock::unix_seconds(at)));
                kept.documents = catalog_file::read(&catalog, |id| index.field(id))
                    .ok()
                    .map(|saved| saved.docs.len());
            }
        }
        if clear {
            let index = TextIndex::create_over(&kept.folder, LOCK_WAIT)?;
            drop(index);
            std::fs::remove_dir_all(&kept.folder)?;
        }
        Ok(Some(kept))
    }
}
