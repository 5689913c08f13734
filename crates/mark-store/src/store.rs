//! The two stores behind one face: a versioned store (append-only version
//! files) and a flat folder served read-only. Every function takes a checked
//! [`SafePath`] and proves containment in the root before touching a file.

use crate::clock::unix_seconds;
use crate::paths::{SafePath, is_contained, is_servable, servable_canonical};
use crate::regular;
use crate::versioned::{self, FolderIndex, History, VERSIONS_DIR, sha256_hex};
use mark_proto::list::ListEntry;
use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// How the engine treats its root folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreMode {
    /// A versioned store: every document is a chain of immutable versions,
    /// written through the protocol (PUBLISH, APPEND, ARCHIVE).
    Versioned,
    /// A plain folder served read-only: every `.md` file is a document at
    /// version 1, its bytes served as they are; writes answer `not-permitted`.
    Flat,
}

/// Deepest folder nesting a walk descends (protects against pathological trees).
const MAX_DEPTH: usize = 64;

/// One version of a document as read from disk.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// Version number (always 1 in a flat folder).
    pub version: u64,
    /// The stored file bytes (the etag is their hash).
    pub bytes: Vec<u8>,
    /// Where the served body starts in `bytes`.
    pub body_start: usize,
    /// Modified, Unix seconds.
    pub modified: i64,
    /// Whether the current version is archived.
    pub archived: bool,
}

impl Snapshot {
    /// The body as served.
    pub(crate) fn body(&self) -> &[u8] {
        &self.bytes[self.body_start..]
    }

    /// SHA-256 hex of the stored file.
    pub(crate) fn etag(&self) -> String {
        sha256_hex(&self.bytes)
    }

    /// `sha256-<hex>` of the body as served.
    pub(crate) fn content_hash(&self) -> String {
        format!("sha256-{}", sha256_hex(self.body()))
    }
}

/// What identifies one state of a document cheaply (no read of its bytes):
/// a changed stamp means the catalog must re-read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    /// Current version.
    pub version: u64,
    /// Archived flag.
    pub archived: bool,
    /// Flat files: length and modification time; 0 for versioned documents,
    /// whose versions never change.
    pub len: u64,
    /// See `len`.
    pub mtime_ns: i128,
}

/// The store: a canonical root, a mode, and what VERSIONS learnt of each
/// document's version files (so it reads only the new or changed ones).
#[derive(Debug)]
pub(crate) struct Store {
    root: PathBuf,
    mode: StoreMode,
    version_records: std::sync::Mutex<HashMap<PathBuf, versioned::VersionRecords>>,
}

/// Documents whose version records are kept; past it they are all dropped
/// (the next VERSIONS of each reads its files again, as without them).
const RECORDED_DOCUMENTS: usize = 10_000;

/// Whether two metadata describe the same file (device and inode).
#[cfg(unix)]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}

/// Elsewhere the best available: the same kind, length and modification time.
#[cfg(not(unix))]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    a.file_type() == b.file_type() && a.len() == b.len() && a.modified().ok() == b.modified().ok()
}

fn mtime_ns(m: &fs::Metadata) -> i128 {
    m.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(0))
}

impl Store {
    /// A store over `root`, which must be canonical.
    pub(crate) fn new(root: PathBuf, mode: StoreMode) -> Store {
        Store {
            root,
            mode,
            version_records: std::sync::Mutex::default(),
        }
    }

    /// The canonical root.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The mode.
    pub(crate) fn mode(&self) -> StoreMode {
        self.mode
    }

    /// Whether a path may be served at all: no hidden segment, and in a
    /// versioned store no `versions` segment (the store's own folders).
    pub(crate) fn visible(&self, path: &SafePath) -> bool {
        path.segments().iter().all(|s| {
            !(s.starts_with('.') || (self.mode == StoreMode::Versioned && s == VERSIONS_DIR))
        })
    }

    /// The folder `dir` names, when it exists inside the root.
    pub(crate) fn folder(&self, dir: &SafePath) -> Option<PathBuf> {
        let path = dir.on_disk(&self.root);
        let canonical = path.canonicalize().ok()?;
        (canonical.starts_with(&self.root) && canonical.is_dir()).then_some(canonical)
    }

    /// The versions folder and link of a versioned document, when its
    /// folder exists inside the root and its versions folder is a real folder.
    fn versioned_parts(&self, doc: &SafePath) -> Option<(PathBuf, PathBuf, String)> {
        let name = doc.name()?.to_string();
        let folder = self.folder(&doc.parent())?;
        let vdir = folder.join(VERSIONS_DIR);
        let real = fs::symlink_metadata(&vdir).is_ok_and(|m| m.is_dir());
        real.then(|| (vdir, folder.join(&name), name))
    }

    /// A flat document's file, opened, when it is a regular `.md` file
    /// inside the root with no hidden segment (a named pipe, socket or
    /// device is never opened, see [`regular`]). The checks are made after
    /// the open and on the file opened (its device and inode are the checked
    /// path's), so a symlink swapped between the check and the read serves
    /// nothing.
    fn open_flat(&self, doc: &SafePath) -> io::Result<Option<(fs::File, fs::Metadata)>> {
        let Some(name) = doc.name() else {
            return Ok(None);
        };
        if !name.ends_with(".md") || doc.is_dir_form() {
            return Ok(None);
        }
        let path = doc.on_disk(&self.root);
        let Some((file, opened)) = regular::open(&path)? else {
            return Ok(None);
        };
        // The canonical path has no symlink left to swap: the file there
        // must be the one opened.
        let checked = servable_canonical(&self.root, &path)
            .is_some_and(|real| fs::symlink_metadata(real).is_ok_and(|m| same_file(&m, &opened)));
        Ok(checked.then_some((file, opened)))
    }

    /// What a flat folder holds at `doc`'s path when it is no document
    /// because it is no regular file (`a named pipe (FIFO)`, a socket, a
    /// device), to say so; `None` otherwise.
    pub(crate) fn odd_file(&self, doc: &SafePath) -> Option<&'static str> {
        if self.mode != StoreMode::Flat {
            return None;
        }
        let real = servable_canonical(&self.root, &doc.on_disk(&self.root))?;
        regular::odd_kind(&fs::metadata(real).ok()?)
    }

    /// The current version of `doc`, or `None` when it is not a document.
    pub(crate) fn current(&self, doc: &SafePath) -> io::Result<Option<Snapshot>> {
        match self.mode {
            StoreMode::Flat => self.flat_snapshot(doc),
            StoreMode::Versioned => {
                let Some((vdir, link, name)) = self.versioned_parts(doc) else {
                    return Ok(None);
                };
                let Some(n) = versioned::current_version(&vdir, &link, &name)? else {
                    return Ok(None);
                };
                self.versioned_snapshot(&vdir, &name, n)
            }
        }
    }

    /// Version `n` of `doc`, or `None`.
    pub(crate) fn version(&self, doc: &SafePath, n: u64) -> io::Result<Option<Snapshot>> {
        match self.mode {
            StoreMode::Flat => Ok(self.flat_snapshot(doc)?.filter(|_| n == 1)),
            StoreMode::Versioned => {
                let Some((vdir, _, name)) = self.versioned_parts(doc) else {
                    return Ok(None);
                };
                self.versioned_snapshot(&vdir, &name, n)
            }
        }
    }

    fn flat_snapshot(&self, doc: &SafePath) -> io::Result<Option<Snapshot>> {
        let Some((mut file, opened)) = self.open_flat(doc)? else {
            return Ok(None);
        };
        let mut bytes = Vec::with_capacity(usize::try_from(opened.len()).unwrap_or(0));
        io::Read::read_to_end(&mut file, &mut bytes)?;
        let modified = opened.modified().map(unix_seconds).unwrap_or(0);
        Ok(Some(Snapshot {
            version: 1,
            bytes,
            body_start: 0,
            modified,
            archived: false,
        }))
    }

    fn versioned_snapshot(&self, vdir: &Path, name: &str, n: u64) -> io::Result<Option<Snapshot>> {
        let Some(bytes) = versioned::read_version(vdir, name, n)? else {
            return Ok(None);
        };
        let header = versioned::parse_header(&bytes).map_err(|why| {
            io::Error::other(format!("version file {name}.v{n} is damaged: {why}"))
        })?;
        let modified = match header.modified {
            Some(m) => m,
            None => fs::metadata(vdir.join(versioned::version_file_name(name, n)))?
                .modified()
                .map(unix_seconds)
                .unwrap_or(0),
        };
        // Writers clear the marker with every new version, so a marker
        // naming `n` means `n` is the archived current version.
        let archived = versioned::archived_version(vdir, name)? == Some(n);
        Ok(Some(Snapshot {
            version: n,
            bytes,
            body_start: header.body_start,
            modified,
            archived,
        }))
    }

    /// The history of `doc` with its chain checked; `None` when it is not a document.
    pub(crate) fn history(&self, doc: &SafePath) -> io::Result<Option<History>> {
        match self.mode {
            StoreMode::Flat => Ok(self.flat_snapshot(doc)?.map(|s| History {
                versions: vec![(1, s.modified)],
                chain_error: None,
            })),
            StoreMode::Versioned => {
                let Some((vdir, _, name)) = self.versioned_parts(doc) else {
                    return Ok(None);
                };
                let key = vdir.join(&name);
                let mut records = self
                    .version_records
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .remove(&key)
                    .unwrap_or_default();
                let h = versioned::history(&vdir, &name, &mut records)?;
                let mut all = self
                    .version_records
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if all.len() >= RECORDED_DOCUMENTS {
                    all.clear();
                }
                all.insert(key, records);
                Ok((!h.versions.is_empty()).then_some(h))
            }
        }
    }

    /// The entries of folder `dir`, sorted by name; `None` when it is not a folder.
    pub(crate) fn list(
        &self,
        dir: &SafePath,
        include_archived: bool,
    ) -> io::Result<Option<Vec<ListEntry>>> {
        let Some(folder) = self.folder(dir) else {
            return Ok(None);
        };
        let mut entries = Vec::new();
        for (name, kind) in self.folder_children(&folder)? {
            match kind {
                Child::Dir => entries.push(ListEntry::dir(name)),
                Child::Doc(stamp) if include_archived || !stamp.archived => {
                    entries.push(ListEntry::file(name))
                }
                Child::Doc(_) => {}
            }
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name).then(a.is_dir.cmp(&b.is_dir)));
        Ok(Some(entries))
    }

    /// Every document at or under `scope`, with its stamp, sorted by path.
    pub(crate) fn walk(&self, scope: &SafePath) -> io::Result<Vec<(SafePath, Stamp)>> {
        let mut out = Vec::new();
        if !scope.is_dir_form() {
            let doc = scope.as_document();
            if let Some(s) = self.current(&doc)? {
                let stamp = match self.mode {
                    StoreMode::Versioned => Stamp {
                        version: s.version,
                        archived: s.archived,
                        len: 0,
                        mtime_ns: 0,
                    },
                    StoreMode::Flat => {
                        let m = fs::metadata(doc.under(&self.root))?;
                        Stamp {
                            version: 1,
                            archived: false,
                            len: m.len(),
                            mtime_ns: mtime_ns(&m),
                        }
                    }
                };
                out.push((doc, stamp));
                return Ok(out);
            }
        }
        let dir =
            SafePath::from_segments(scope.segments().to_vec(), true).unwrap_or_else(SafePath::root);
        if let Some(folder) = self.folder(&dir) {
            self.walk_folder(&dir, &folder, 0, &mut out)?;
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    fn walk_folder(
        &self,
        dir: &SafePath,
        folder: &Path,
        depth: usize,
        out: &mut Vec<(SafePath, Stamp)>,
    ) -> io::Result<()> {
        for (name, kind) in self.folder_children(folder)? {
            match kind {
                Child::Dir if depth < MAX_DEPTH => {
                    // One unreadable folder must not hide the rest of the store.
                    let sub = dir.child(&name, true);
                    if let Err(e) = self.walk_folder(&sub, &folder.join(&name), depth + 1, out) {
                        tracing::warn!(folder = %sub.decoded(), error = %e, "skipping an unreadable folder");
                    }
                }
                Child::Dir => {}
                Child::Doc(stamp) => out.push((dir.child(&name, false), stamp)),
            }
        }
        Ok(())
    }

    /// The visible children of a folder: real sub-folders (never symlinks,
    /// so walks cannot leave the root or loop) and documents.
    fn folder_children(&self, folder: &Path) -> io::Result<Vec<(String, Child)>> {
        let mut out = Vec::new();
        // A regular file (not a symlink) is servable when its folder is: one
        // check per listing, not a path resolution per document.
        let folder_servable = is_servable(&self.root, folder);
        for entry in fs::read_dir(folder)? {
            let entry = entry?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if !servable_name(&name) {
                continue;
            }
            let kind = entry.file_type()?;
            match self.mode {
                StoreMode::Versioned => {
                    if kind.is_dir() && name != VERSIONS_DIR {
                        out.push((name, Child::Dir));
                    }
                }
                StoreMode::Flat => {
                    if kind.is_dir() {
                        out.push((name, Child::Dir));
                    } else if name.ends_with(".md")
                        && if kind.is_file() {
                            folder_servable
                        } else {
                            is_servable(&self.root, &entry.path())
                        }
                    {
                        let m = if kind.is_file() {
                            entry.metadata()?
                        } else {
                            fs::metadata(entry.path())?
                        };
                        if m.is_file() {
                            let stamp = Stamp {
                                version: 1,
                                archived: false,
                                len: m.len(),
                                mtime_ns: mtime_ns(&m),
                            };
                            out.push((name, Child::Doc(stamp)));
                        }
                    }
                }
            }
        }
        if self.mode == StoreMode::Versioned {
            let vdir = folder.join(VERSIONS_DIR);
            if fs::symlink_metadata(&vdir).is_ok_and(|m| m.is_dir()) {
                for (name, n, archived) in FolderIndex::read(&vdir)?.docs {
                    if !servable_name(&name) {
                        continue;
                    }
                    let archived = archived == Some(n);
                    out.push((
                        name,
                        Child::Doc(Stamp {
                            version: n,
                            archived,
                            len: 0,
                            mtime_ns: 0,
                        }),
                    ));
                }
            }
        }
        Ok(out)
    }

    /// Removes the temp files crashed writers left in the versions folders
    /// (older than [`versioned::STALE_TEMP_AGE`] at `now`). Only a store
    /// opened with write rights calls it. Failures are logged, not fatal.
    pub(crate) fn remove_crashed_temps(&self, now: std::time::SystemTime) {
        if self.mode != StoreMode::Versioned {
            return;
        }
        let cutoff = now - versioned::STALE_TEMP_AGE;
        let docs = match self.walk(&SafePath::root()) {
            Ok(docs) => docs,
            Err(e) => {
                tracing::warn!(error = %e, "cannot walk the store to remove crashed writers' temp files");
                return;
            }
        };
        let folders: std::collections::BTreeSet<PathBuf> = docs
            .iter()
            .filter_map(|(doc, _)| self.versioned_parts(doc).map(|(vdir, _, _)| vdir))
            .collect();
        for vdir in folders {
            match versioned::remove_stale_temps(&vdir, cutoff) {
                Ok(0) => {}
                Ok(n) => {
                    tracing::info!(folder = %vdir.display(), removed = n, "removed crashed writers' temp files")
                }
                Err(e) => {
                    tracing::warn!(folder = %vdir.display(), error = %e, "cannot remove crashed writers' temp files")
                }
            }
        }
    }

    /// Points every document link at its newest version (after a crash the
    /// link can be one step behind). Costs one walk of the store. Failures
    /// are logged, not fatal: reads never depend on the links, and a
    /// read-only store must still open.
    pub(crate) fn repair_links(&self) {
        if self.mode != StoreMode::Versioned {
            return;
        }
        let docs = match self.walk(&SafePath::root()) {
            Ok(docs) => docs,
            Err(e) => {
                tracing::warn!(error = %e, "cannot walk the store to repair document links");
                return;
            }
        };
        for (doc, stamp) in docs {
            if let Some((_, link, name)) = self.versioned_parts(&doc)
                && let Err(e) = versioned::switch_link(&link, &name, stamp.version)
            {
                tracing::warn!(document = %doc.decoded(), error = %e, "cannot repair the document link");
            }
        }
    }
}

/// Why the folders for a new document cannot be made.
#[derive(Debug)]
pub(crate) enum FolderProblem {
    /// A path segment leads out of the root (a symlink): `not-found`.
    Escapes,
    /// A document or file stands where a folder must be: `bad-request`.
    InTheWay(String),
    /// The file system failed.
    Io(io::Error),
}

impl Store {
    /// Creates the folders leading to `doc` inside the root, refusing
    /// symlinks that leave it and files in the way; also refuses a folder or
    /// an unmanaged regular file standing at the document's own name.
    pub(crate) fn prepare_document(&self, doc: &SafePath) -> Result<(), FolderProblem> {
        let mut dir = self.root.clone();
        let mut shown = String::new();
        for segment in doc.parent().segments() {
            dir.push(segment);
            shown.push('/');
            shown.push_str(segment);
            match fs::symlink_metadata(&dir) {
                Ok(m) if m.is_dir() => {}
                Ok(m) if m.file_type().is_symlink() => {
                    if !is_contained(&self.root, &dir) {
                        return Err(FolderProblem::Escapes);
                    }
                    if !dir.is_dir() {
                        return Err(FolderProblem::InTheWay(shown));
                    }
                }
                Ok(_) => return Err(FolderProblem::InTheWay(shown)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    versioned::create_dir_synced(&dir).map_err(FolderProblem::Io)?;
                }
                Err(e) => return Err(FolderProblem::Io(e)),
            }
        }
        let own = doc.under(&self.root);
        let ours = |target: &Path| {
            doc.name()
                .is_some_and(|n| versioned::links_to_own_version(target, n))
        };
        match fs::symlink_metadata(&own) {
            Ok(m) if m.file_type().is_symlink() => match fs::read_link(&own) {
                Ok(target) if ours(&target) => Ok(()),
                _ if !is_contained(&self.root, &own) => Err(FolderProblem::Escapes),
                _ => Err(FolderProblem::InTheWay(doc.decoded())),
            },
            Ok(_) => Err(FolderProblem::InTheWay(doc.decoded())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(FolderProblem::Io(e)),
        }
    }

    /// Writes the version after `current` (or v1) with `content`, then
    /// points the link at it. `Ok(None)` when another writer took that
    /// number first: re-read and decide again.
    pub(crate) fn write_next(
        &self,
        doc: &SafePath,
        current: Option<&Snapshot>,
        content: &[u8],
        now: i64,
    ) -> io::Result<Option<Snapshot>> {
        let (vdir, link, name) = write_parts(self, doc)
            .ok_or_else(|| io::Error::other("the document's folder vanished"))?;
        let n = current.map_or(1, |c| c.version + 1);
        let bytes = versioned::encode_version(n, current.map(|c| c.bytes.as_slice()), now, content);
        if !versioned::write_version(&vdir, &name, n, &bytes)? {
            return Ok(None);
        }
        // The version is durable now; the link and the marker are
        // conveniences that reads do not depend on.
        if let Err(e) = versioned::switch_link(&link, &name, n) {
            tracing::warn!(document = %doc.decoded(), error = %e, "could not switch the document link");
        }
        if current.is_some_and(|c| c.archived)
            && let Err(e) = versioned::clear_archived(&vdir, &name)
        {
            tracing::warn!(document = %doc.decoded(), error = %e, "could not clear a stale archive marker");
        }
        let body_start = bytes.len() - content.len();
        Ok(Some(Snapshot {
            version: n,
            bytes,
            body_start,
            modified: now,
            archived: false,
        }))
    }

    /// Flags or unflags the current version `n` of `doc` as archived.
    pub(crate) fn set_archived(
        &self,
        doc: &SafePath,
        n: u64,
        archived: bool,
        now: i64,
    ) -> io::Result<()> {
        let (vdir, _, name) = write_parts(self, doc)
            .ok_or_else(|| io::Error::other("the document's folder vanished"))?;
        if archived {
            versioned::set_archived(&vdir, &name, n, now)
        } else {
            versioned::clear_archived(&vdir, &name)
        }
    }
}

/// Hidden names are never served; names no request could spell (control
/// characters, backslashes) are skipped too.
fn servable_name(name: &str) -> bool {
    !name.starts_with('.') && SafePath::from_segments(vec![name.to_string()], false).is_some()
}

/// A child of a folder.
enum Child {
    Dir,
    Doc(Stamp),
}

/// The versions folder, link path and name of a versioned document, for
/// writers. `None` when the parent folder does not exist inside the root.
fn write_parts(store: &Store, doc: &SafePath) -> Option<(PathBuf, PathBuf, String)> {
    let name = doc.name()?.to_string();
    let folder = store.folder(&doc.parent())?;
    Some((folder.join(VERSIONS_DIR), folder.join(&name), name))
}
