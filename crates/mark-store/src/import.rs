//! Turning a folder of markdown into a versioned store.

use crate::error::StoreError;
use crate::marker::{RootKind, write_marker};
use crate::paths::SafePath;
use crate::store::{FolderProblem, Store, StoreMode};
use std::fs;
use std::path::Path;
use std::time::SystemTime;

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Documents written as a new version (v1 for a new store).
    pub imported: usize,
    /// Documents already present with the same content (no new version).
    pub unchanged: usize,
    /// Files skipped, with the reason (in the way, name not allowed, too deep).
    pub skipped: Vec<String>,
    /// Documents imported although over the document limit given, with
    /// their size: served, but a write to one is refused as too large.
    pub over_limit: Vec<(String, usize)>,
}

/// Imports every `.md` file under `src_dir` into the versioned store at
/// `dest_root` (created if missing), keeping the folder structure: each
/// file becomes v1 of its document, or a new version when the document
/// exists with other content. Hidden files and folders (leading `.`) and
/// symlinks are skipped; `modified` is `now`. The destination must be
/// missing, empty or a store; it gets the store marker. Documents over
/// `max_document_bytes` (the limit the store will be served with) are
/// imported and named in [`ImportReport::over_limit`].
pub fn import(
    src_dir: &Path,
    dest_root: &Path,
    now: SystemTime,
    max_document_bytes: usize,
) -> Result<ImportReport, StoreError> {
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| StoreError::Import { path, source }
    };
    fs::create_dir_all(dest_root).map_err(io_err(dest_root))?;
    let root = dest_root.canonicalize().map_err(io_err(dest_root))?;
    match RootKind::of(&root).map_err(io_err(dest_root))? {
        RootKind::Store | RootKind::Empty => {}
        RootKind::UnmarkedStore | RootKind::Folder => {
            return Err(StoreError::Import {
                path: dest_root.to_path_buf(),
                source: std::io::Error::other(
                    "the destination is neither empty nor a versioned store; import into a new folder",
                ),
            });
        }
    }
    write_marker(&root).map_err(io_err(dest_root))?;
    let store = Store::new(root, StoreMode::Versioned);
    let mut report = ImportReport::default();
    let now = crate::clock::unix_seconds(now);
    let mut stack = vec![(src_dir.to_path_buf(), Vec::<String>::new())];
    while let Some((dir, segments)) = stack.pop() {
        let mut entries: Vec<_> = fs::read_dir(&dir)
            .map_err(io_err(&dir))?
            .collect::<Result<_, _>>()
            .map_err(io_err(&dir))?;
        entries.sort_by_key(fs::DirEntry::file_name);
        for entry in entries {
            let file = entry.path();
            let Ok(name) = entry.file_name().into_string() else {
                report
                    .skipped
                    .push(format!("{}: the name is not UTF-8", file.display()));
                continue;
            };
            if name.starts_with('.') {
                continue;
            }
            let kind = entry.file_type().map_err(io_err(&file))?;
            let mut child = segments.clone();
            child.push(name.clone());
            if kind.is_dir() {
                if name == crate::versioned::VERSIONS_DIR {
                    report.skipped.push(format!(
                        "{}: `versions` is the store's own folder name",
                        file.display()
                    ));
                } else {
                    stack.push((file, child));
                }
                continue;
            }
            if !kind.is_file() || !name.ends_with(".md") {
                continue;
            }
            let Some(doc) = SafePath::from_segments(child, false) else {
                report.skipped.push(format!(
                    "{}: the name cannot be a document path",
                    file.display()
                ));
                continue;
            };
            let Some(content) = crate::regular::read(&file).map_err(io_err(&file))? else {
                report
                    .skipped
                    .push(format!("{}: no longer a regular file", file.display()));
                continue;
            };
            if content.len() > max_document_bytes {
                report.over_limit.push((doc.decoded(), content.len()));
            }
            match store.prepare_document(&doc) {
                Ok(()) => {}
                Err(FolderProblem::Io(e)) => {
                    return Err(StoreError::Import {
                        path: file,
                        source: e,
                    });
                }
                Err(FolderProblem::Escapes | FolderProblem::InTheWay(_)) => {
                    report.skipped.push(format!(
                        "{}: something else is in the way at {}",
                        file.display(),
                        doc.decoded()
                    ));
                    continue;
                }
            }
            let current = store.current(&doc).map_err(io_err(&file))?;
            if current
                .as_ref()
                .is_some_and(|c| c.body() == content.as_slice())
            {
                report.unchanged += 1;
                continue;
            }
            match store
                .write_next(&doc, current.as_ref(), &content, now)
                .map_err(io_err(&file))?
            {
                Some(_) => report.imported += 1,
                None => report.skipped.push(format!(
                    "{}: another writer changed {} during the import",
                    file.display(),
                    doc.decoded()
                )),
            }
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn imports_markdown_keeping_folders_and_skipping_hidden() {
        let src = tempfile::tempdir().unwrap();
        let dest = tempfile::tempdir().unwrap();
        fs::create_dir_all(src.path().join("notes/deep")).unwrap();
        fs::create_dir_all(src.path().join(".git")).unwrap();
        fs::write(src.path().join("index.md"), "# Home\n").unwrap();
        fs::write(src.path().join("notes/deep/a.md"), "# A\n").unwrap();
        fs::write(src.path().join("notes/.draft.md"), "secret").unwrap();
        fs::write(src.path().join(".git/x.md"), "x").unwrap();
        fs::write(src.path().join("image.png"), [0u8, 1]).unwrap();
        let report = import(src.path(), dest.path(), UNIX_EPOCH, 1 << 20).unwrap();
        assert_eq!((report.imported, report.unchanged), (2, 0));
        assert_eq!(RootKind::of(dest.path()).unwrap(), RootKind::Store);
        assert!(dest.path().join("versions/index.md.v1").is_file());
        assert!(dest.path().join("notes/deep/versions/a.md.v1").is_file());
        assert!(!dest.path().join("notes/versions").exists());
        assert!(!dest.path().join(".git").exists());
        assert!(
            fs::read(dest.path().join("notes/deep/a.md"))
                .unwrap()
                .ends_with(b"# A\n")
        );
        let again = import(src.path(), dest.path(), UNIX_EPOCH, 1 << 20).unwrap();
        assert_eq!((again.imported, again.unchanged), (0, 2));
        // A plain folder is never imported into (its files would vanish).
        assert!(import(src.path(), src.path(), UNIX_EPOCH, 1 << 20).is_err());
    }
}
