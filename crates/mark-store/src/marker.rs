//! What a root folder is: a versioned store is recognised only by the
//! marker file the store itself writes (`import`, `mark`, or the first write
//! into an empty folder), never guessed from folder names, so a plain folder
//! that happens to hold a `versions/` folder is never mistaken for a store
//! (which would hide its documents).

use crate::error::StoreError;
use crate::versioned::{VERSIONS_DIR, links_to_own_version, split_version_file_name};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The marker file at the root of a versioned store (hidden: never served).
pub const STORE_MARKER: &str = ".mark-store";
const MARKER_TEXT: &str = "mark-store 1\n# This folder is a Mark versioned store: its documents are the version files\n# in its versions/ folders. Written by mark-store; do not remove.\n";
/// How deep [`RootKind::of`] looks for the old layout (a hint only).
const OLD_LAYOUT_DEPTH: usize = 3;
/// Deepest folder nesting [`mark`] checks.
const MAX_DEPTH: usize = 64;

/// What a root folder holds, as far as the store is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootKind {
    /// A versioned store: it has the marker.
    Store,
    /// No visible entry at all (hidden names aside): a store may start here.
    Empty,
    /// No marker, but `versions/` folders holding version files (`name.vN`
    /// opening with a store frontmatter) in the top
    /// levels: the layout of a store written before the marker existed. It
    /// is served as a plain folder until marked ([`mark`]).
    UnmarkedStore,
    /// Anything else: a plain folder.
    Folder,
}

impl RootKind {
    /// Looks at `root` without changing anything.
    pub fn of(root: &Path) -> io::Result<RootKind> {
        if is_marked(root) {
            return Ok(RootKind::Store);
        }
        let mut visible = fs::read_dir(root)?
            .flatten()
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'));
        if visible.next().is_none() {
            return Ok(RootKind::Empty);
        }
        Ok(if has_version_files(root, 1) {
            RootKind::UnmarkedStore
        } else {
            RootKind::Folder
        })
    }
}

/// Whether a `versions/` folder holding a version file lies within the top
/// levels of `dir` (hidden folders and symlinks skipped).
fn has_version_files(dir: &Path, depth: usize) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let name = e.file_name();
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if !is_dir || name.to_string_lossy().starts_with('.') {
            return false;
        }
        if name == VERSIONS_DIR {
            return fs::read_dir(e.path()).is_ok_and(|files| {
                files.flatten().any(|f| {
                    let named = f
                        .file_name()
                        .to_str()
                        .and_then(split_version_file_name)
                        .is_some();
                    named && starts_like_a_version(&f.path())
                })
            });
        }
        depth < OLD_LAYOUT_DEPTH && has_version_files(&e.path(), depth + 1)
    })
}

/// Whether a file opens with a store frontmatter (`---` then `version:`),
/// as every version file the store writes does.
fn starts_like_a_version(path: &Path) -> bool {
    use std::io::Read;
    const OPENING: &[u8] = b"---\nversion:";
    let mut head = [0u8; OPENING.len()];
    fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == OPENING)
}

/// Whether `root` has the marker.
fn is_marked(root: &Path) -> bool {
    fs::symlink_metadata(root.join(STORE_MARKER)).is_ok_and(|m| m.is_file())
}

/// Writes the marker (temp file + rename, then the folder synced).
pub(crate) fn write_marker(root: &Path) -> io::Result<()> {
    if is_marked(root) {
        return Ok(());
    }
    let temp = root.join(format!("{STORE_MARKER}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut f = fs::File::create(&temp)?;
        f.write_all(MARKER_TEXT.as_bytes())?;
        f.sync_all()?;
        fs::rename(&temp, root.join(STORE_MARKER))
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written?;
    #[cfg(unix)]
    fs::File::open(root)?.sync_all()?;
    Ok(())
}

/// Marks `root` (created if missing) as a versioned store. An unmarked
/// folder is marked only when no document would vanish: a plain `.md` file
/// outside the `versions/` folders (anything but a document link) is not
/// served by a store, so such a folder is refused and should be imported
/// into a new store instead. A marked store is left as it is.
pub fn mark(root: &Path) -> Result<(), StoreError> {
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| StoreError::Import { path, source }
    };
    fs::create_dir_all(root).map_err(io_err(root))?;
    if is_marked(root) {
        return Ok(());
    }
    let mut plain = Vec::new();
    find_plain_documents(root, root, 0, &mut plain).map_err(io_err(root))?;
    if let Some(first) = plain.first() {
        return Err(StoreError::PlainDocuments {
            root: root.to_path_buf(),
            first: first.clone(),
            more: plain.len() - 1,
        });
    }
    write_marker(root).map_err(io_err(root))
}

/// The `.md` files a store would not serve: regular files (or links that
/// do not point into `versions/`) outside the versions folders.
fn find_plain_documents(
    root: &Path,
    dir: &Path,
    depth: usize,
    out: &mut Vec<String>,
) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == VERSIONS_DIR {
            continue;
        }
        let kind = entry.file_type()?;
        let path = entry.path();
        if kind.is_dir() {
            if depth < MAX_DEPTH {
                find_plain_documents(root, &path, depth + 1, out)?;
            }
        } else if name.ends_with(".md") && !is_document_link(&path) {
            let shown: PathBuf = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
            out.push(format!("/{}", shown.display()));
        }
    }
    Ok(())
}

/// A store's document link: a symlink to `versions/<its name>.v<N>`.
fn is_document_link(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str());
    match (fs::read_link(path), name) {
        (Ok(target), Some(name)) => links_to_own_version(&target, name),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_come_from_the_marker_never_from_folder_names() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert_eq!(RootKind::of(root).unwrap(), RootKind::Empty);
        fs::write(root.join(".DS_Store"), "x").unwrap();
        assert_eq!(RootKind::of(root).unwrap(), RootKind::Empty);
        // A notes folder with an (empty) versions folder is a folder.
        fs::create_dir_all(root.join("versions")).unwrap();
        fs::write(root.join("notes.md"), "# Notes\n").unwrap();
        assert_eq!(RootKind::of(root).unwrap(), RootKind::Folder);
        // A file named like a version is not enough...
        fs::create_dir_all(root.join("api/versions")).unwrap();
        fs::write(root.join("api/versions/schema.v1"), "s").unwrap();
        assert_eq!(RootKind::of(root).unwrap(), RootKind::Folder);
        // ...a version file deeper down looks like the old layout.
        fs::write(root.join("api/versions/a.md.v1"), "---\nversion: 1\n---\n").unwrap();
        assert_eq!(RootKind::of(root).unwrap(), RootKind::UnmarkedStore);
        // That is only a hint: marking refuses while documents would vanish.
        let e = mark(root).unwrap_err().to_string();
        assert!(e.contains("/notes.md") && e.contains("import"), "{e}");
        assert!(!root.join(STORE_MARKER).exists());
        fs::remove_file(root.join("notes.md")).unwrap();
        mark(root).unwrap();
        assert_eq!(RootKind::of(root).unwrap(), RootKind::Store);
        mark(root).unwrap();
    }

    #[test]
    fn mark_creates_a_missing_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("new");
        mark(&root).unwrap();
        assert_eq!(RootKind::of(&root).unwrap(), RootKind::Store);
        assert_eq!(fs::read_dir(&root).unwrap().count(), 1, "only the marker");
    }
}
