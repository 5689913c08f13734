//! The versioned store on disk: append-only version files, the link to the
//! newest one and the archive marker. See the crate README for the layout.
//!
//! For a document `name` in folder `D`:
//! - `D/versions/name.v<N>`: version N, a store frontmatter (`version`,
//!   `previous-hash` from v2 on, `modified`) then the content verbatim;
//! - `D/name`: a relative symlink to `versions/name.v<N>` of the newest N;
//! - `D/versions/name.archived`: present when archived, naming the version
//!   it archived (`version: N`).
//!
//! A version file appears under its final name only complete and synced: it
//! is written to a hidden temp file (created with `create_new`), fsynced, and
//! then hard-linked to `name.v<N>`; `link(2)` refuses an existing name, so
//! two writers can never both own N and a version is never overwritten.

use sha2::{Digest, Sha256};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The store's folder of version files, beside the documents.
pub(crate) const VERSIONS_DIR: &str = "versions";
const ARCHIVED_SUFFIX: &str = ".archived";

/// SHA-256 of `bytes` as 64 lowercase hex digits.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The parsed store frontmatter of a version file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    /// `version: N`.
    pub version: u64,
    /// `previous-hash: sha256-<hex>` (v2 on).
    pub previous_hash: Option<String>,
    /// `modified`, Unix seconds, when recorded.
    pub modified: Option<i64>,
    /// Byte offset where the content starts.
    pub body_start: usize,
}

/// Writes a version file: store frontmatter, then `content` verbatim.
pub(crate) fn encode_version(
    version: u64,
    previous: Option<&[u8]>,
    modified: i64,
    content: &[u8],
) -> Vec<u8> {
    let mut out = format!("---\nversion: {version}\n");
    if let Some(prev) = previous {
        out.push_str(&format!("previous-hash: sha256-{}\n", sha256_hex(prev)));
    }
    out.push_str(&format!(
        "modified: {}\n---\n",
        crate::clock::format_rfc3339(modified)
    ));
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(content);
    bytes
}

/// Parses the store frontmatter at the start of a version file.
pub(crate) fn parse_header(bytes: &[u8]) -> Result<Header, String> {
    let rest = bytes
        .strip_prefix(b"---\n")
        .ok_or_else(|| "it does not start with a store frontmatter".to_string())?;
    let mut pos = 0;
    let mut header = Header {
        version: 0,
        previous_hash: None,
        modified: None,
        body_start: 0,
    };
    let mut saw_version = false;
    loop {
        let end = rest[pos..]
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| "its store frontmatter is not closed".to_string())?;
        let line = std::str::from_utf8(&rest[pos..pos + end])
            .map_err(|_| "its store frontmatter is not UTF-8".to_string())?;
        pos += end + 1;
        if line == "---" {
            break;
        }
        let (key, value) = line
            .split_once(':')
            .ok_or_else(|| format!("store frontmatter line `{line}` is not `key: value`"))?;
        let value = value.trim().trim_matches('"');
        match key.trim() {
            "version" => {
                header.version = value
                    .parse()
                    .map_err(|_| format!("`version: {value}` is not a number"))?;
                saw_version = true;
            }
            "previous-hash" => header.previous_hash = Some(value.to_string()),
            "modified" => header.modified = crate::clock::parse_rfc3339(value),
            // Unknown keys are kept by older or newer writers; ignore them.
            _ => {}
        }
    }
    if !saw_version {
        return Err("its store frontmatter has no `version`".to_string());
    }
    header.body_start = 4 + pos;
    Ok(header)
}

/// `name.v<N>`.
pub(crate) fn version_file_name(name: &str, n: u64) -> String {
    format!("{name}.v{n}")
}

/// Splits a versions-folder entry `name.v<N>` into `(name, N)`.
pub(crate) fn split_version_file_name(file: &str) -> Option<(&str, u64)> {
    if file.starts_with('.') {
        return None;
    }
    let (name, digits) = file.rsplit_once(".v")?;
    if name.is_empty()
        || digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || digits.starts_with('0')
    {
        return None;
    }
    Some((name, digits.parse().ok()?))
}

/// Whether a link target is `versions/<name>.v<N>`: the document link the
/// store keeps for `name`.
pub(crate) fn links_to_own_version(target: &Path, name: &str) -> bool {
    let mut parts = target.components();
    parts.next().is_some_and(|c| c.as_os_str() == VERSIONS_DIR)
        && parts
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .and_then(split_version_file_name)
            .is_some_and(|(n, _)| n == name)
        && parts.next().is_none()
}

/// What a versions folder holds, per document name: the highest version and
/// the archived marker's version. One `read_dir`, so LIST and the catalog
/// cost one directory read per folder.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct FolderIndex {
    /// `(name, highest version, archived version)`, sorted by name.
    pub docs: Vec<(String, u64, Option<u64>)>,
}

impl FolderIndex {
    /// Reads `vdir`; a missing folder is empty.
    pub(crate) fn read(vdir: &Path) -> io::Result<FolderIndex> {
        let mut highest: std::collections::BTreeMap<String, (u64, Option<u64>)> =
            Default::default();
        let entries = match fs::read_dir(vdir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(FolderIndex::default()),
            Err(e) => return Err(e),
        };
        let mut markers = Vec::new();
        for entry in entries {
            let entry = entry?;
            let Ok(file) = entry.file_name().into_string() else {
                continue;
            };
            if let Some((name, n)) = split_version_file_name(&file) {
                let slot = highest.entry(name.to_string()).or_default();
                slot.0 = slot.0.max(n);
            } else if let Some(name) = file
                .strip_suffix(ARCHIVED_SUFFIX)
                .filter(|n| !n.is_empty() && !file.starts_with('.'))
            {
                markers.push(name.to_string());
            }
        }
        for name in markers {
            if let Some(slot) = highest.get_mut(&name) {
                slot.1 = archived_version(vdir, &name)?;
            }
        }
        Ok(FolderIndex {
            docs: highest
                .into_iter()
                .map(|(name, (n, a))| (name, n, a))
                .collect(),
        })
    }
}

/// The newest version number of `name`, or `None` when it has none. The
/// link names a candidate; numbers above it are probed because a crash can
/// leave the link one step behind. Without a usable link the folder is read.
pub(crate) fn current_version(vdir: &Path, doc_link: &Path, name: &str) -> io::Result<Option<u64>> {
    let hint = fs::read_link(doc_link).ok().and_then(|target| {
        target.file_name().and_then(|f| f.to_str()).and_then(|f| {
            split_version_file_name(f)
                .filter(|(n, _)| *n == name)
                .map(|(_, v)| v)
        })
    });
    let Some(mut n) = hint.filter(|n| vdir.join(version_file_name(name, *n)).is_file()) else {
        let index = FolderIndex::read(vdir)?;
        return Ok(index
            .docs
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, v, _)| *v));
    };
    while vdir.join(version_file_name(name, n + 1)).is_file() {
        n += 1;
    }
    Ok(Some(n))
}

/// Every version number present for `name`, ascending.
pub(crate) fn all_versions(vdir: &Path, name: &str) -> io::Result<Vec<u64>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(vdir)? {
        let entry = entry?;
        if let Some((n, v)) = entry.file_name().to_str().and_then(split_version_file_name)
            && n == name
        {
            out.push(v);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Reads one version file; `None` when it does not exist. Symlinks are
/// refused: a strict store only serves files it wrote; and anything but a
/// regular file is never opened (see [`crate::regular`]).
pub(crate) fn read_version(vdir: &Path, name: &str, n: u64) -> io::Result<Option<Vec<u8>>> {
    let path = vdir.join(version_file_name(name, n));
    match fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_file() => crate::regular::read(&path),
        Ok(_) => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// A random tag for this process's temp names. The pid alone is not enough:
/// a server killed mid-write leaves its temp file behind, and a restarted
/// server can get the same pid (always pid 1 in a container) and count from
/// 0 again, so the next write would find its temp name taken.
fn process_tag() -> u64 {
    static TAG: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TAG.get_or_init(|| {
        let mut bytes = [0u8; 8];
        if getrandom::fill(&mut bytes).is_err() {
            // No entropy source: the start time still differs between runs.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            bytes = (nanos as u64).to_le_bytes();
        }
        u64::from_le_bytes(bytes)
    })
}

/// A hidden temp name in `dir`, unique to this process and call.
fn temp_path(dir: &Path, stem: &str) -> PathBuf {
    let seq = TEMP_SEQ.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(
        ".{stem}.{}-{:016x}.{seq}.tmp",
        std::process::id(),
        process_tag()
    ))
}

/// How old a temp file must be before it counts as a crashed writer's: a
/// live write holds its temp file for milliseconds, so one this old is
/// never another process's write in progress.
pub(crate) const STALE_TEMP_AGE: std::time::Duration = std::time::Duration::from_secs(600);

/// Whether `file_name` is one of [`temp_path`]'s names.
fn is_temp_name(file_name: &str) -> bool {
    file_name.starts_with('.') && file_name.ends_with(".tmp")
}

/// Removes the temp files in `vdir` last modified before `cutoff` (a
/// writer killed between create and link leaves one); the count removed.
pub(crate) fn remove_stale_temps(vdir: &Path, cutoff: std::time::SystemTime) -> io::Result<usize> {
    let mut removed = 0;
    for entry in fs::read_dir(vdir)? {
        let entry = entry?;
        let name = entry.file_name();
        if !name.to_str().is_some_and(is_temp_name) {
            continue;
        }
        let meta = entry.metadata()?;
        if meta.is_file() && meta.modified().is_ok_and(|m| m < cutoff) {
            fs::remove_file(entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Writes version `n` of `name` exclusively. `Ok(false)` when `n` already
/// exists (another writer won it); the file is then left untouched.
pub(crate) fn write_version(
    vdir: &Path,
    name: &str,
    n: u64,
    file_bytes: &[u8],
) -> io::Result<bool> {
    create_dir_synced(vdir)?;
    let final_path = vdir.join(version_file_name(name, n));
    let temp = temp_path(vdir, &version_file_name(name, n));
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        f.write_all(file_bytes)?;
        f.sync_all()?;
        drop(f);
        match fs::hard_link(&temp, &final_path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        }
    })();
    // The temp name is ours alone; remove it whatever happened.
    let _ = fs::remove_file(&temp);
    if result.as_ref().is_ok_and(|won| *won) {
        sync_dir(vdir)?;
    }
    result
}

/// Points `doc_link` at `versions/name.v<N>` atomically (temp link +
/// rename). Anything but a symlink at that name is left alone.
#[cfg(unix)]
pub(crate) fn switch_link(doc_link: &Path, name: &str, n: u64) -> io::Result<()> {
    let dir = doc_link
        .parent()
        .ok_or_else(|| io::Error::other("a document link has no parent folder"))?;
    let target = Path::new(VERSIONS_DIR).join(version_file_name(name, n));
    match fs::symlink_metadata(doc_link) {
        Ok(m) if !m.file_type().is_symlink() => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "a file that is not a document link stands at the document's name",
            ));
        }
        _ if fs::read_link(doc_link).is_ok_and(|t| t == target) => return Ok(()),
        _ => {}
    }
    let temp = temp_path(dir, name);
    std::os::unix::fs::symlink(&target, &temp)?;
    if let Err(e) = fs::rename(&temp, doc_link) {
        let _ = fs::remove_file(&temp);
        return Err(e);
    }
    sync_dir(dir)
}

/// Without Unix symlinks there is no document link: reads never depend on it.
#[cfg(not(unix))]
pub(crate) fn switch_link(_doc_link: &Path, _name: &str, _n: u64) -> io::Result<()> {
    Ok(())
}

/// Creates `dir` (its parent must exist) unless it exists, and makes the
/// new entry durable by syncing the parent.
pub(crate) fn create_dir_synced(dir: &Path) -> io::Result<()> {
    match fs::create_dir(dir) {
        Ok(()) => dir.parent().map_or(Ok(()), sync_dir),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// The version the archive marker of `name` names, if there is one.
pub(crate) fn archived_version(vdir: &Path, name: &str) -> io::Result<Option<u64>> {
    match fs::read_to_string(vdir.join(format!("{name}{ARCHIVED_SUFFIX}"))) {
        Ok(text) => Ok(text
            .lines()
            .find_map(|l| l.strip_prefix("version:"))
            .and_then(|v| v.trim().trim_matches('"').parse().ok())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes the archive marker naming version `n` (temp file + rename).
pub(crate) fn set_archived(vdir: &Path, name: &str, n: u64, now: i64) -> io::Result<()> {
    let temp = temp_path(vdir, name);
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)?;
    let written = f
        .write_all(
            format!(
                "version: {n}\narchived: {}\n",
                crate::clock::format_rfc3339(now)
            )
            .as_bytes(),
        )
        .and_then(|()| f.sync_all())
        .and_then(|()| fs::rename(&temp, vdir.join(format!("{name}{ARCHIVED_SUFFIX}"))));
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written?;
    sync_dir(vdir)
}

/// Removes the archive marker of `name`, if any.
pub(crate) fn clear_archived(vdir: &Path, name: &str) -> io::Result<()> {
    match fs::remove_file(vdir.join(format!("{name}{ARCHIVED_SUFFIX}"))) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => sync_dir(vdir),
    }
}

/// The outcome of checking a document's chain of versions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct History {
    /// `(version, modified)` ascending; modified from the frontmatter, else
    /// the file's mtime.
    pub versions: Vec<(u64, i64)>,
    /// The first break found, if any.
    pub chain_error: Option<String>,
}

/// What the chain check needs of one version file, kept while the file's
/// stamp is unchanged so that VERSIONS reads and hashes only the files that
/// are new or changed on disk.
#[derive(Debug, Clone)]
pub(crate) struct VersionRecord {
    /// Length, modification and change times, device and inode when read.
    stamp: FileStamp,
    /// `sha256-<hex>` of the whole file, as the next version's `previous-hash`.
    hash: String,
    /// The parsed header, or why it could not be parsed.
    header: Result<Header, String>,
    /// The file's mtime (Unix seconds), for a header without `modified`.
    mtime: i64,
}

/// A file's identity and last change: any write to it changes one of them
/// (the change time moves even when the mtime is set back).
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified_ns: i128,
    changed_ns: i128,
    file_id: (u64, u64),
}

impl FileStamp {
    fn of(m: &fs::Metadata) -> FileStamp {
        let nanos = |t: io::Result<std::time::SystemTime>| {
            t.ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i128)
        };
        #[cfg(unix)]
        let (changed_ns, file_id) = {
            use std::os::unix::fs::MetadataExt;
            (
                i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
                (m.dev(), m.ino()),
            )
        };
        #[cfg(not(unix))]
        let (changed_ns, file_id) = (0, (0, 0));
        FileStamp {
            len: m.len(),
            modified_ns: nanos(m.modified()),
            changed_ns,
            file_id,
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Version files [`record_of`] read on this thread (tests count them).
    static BODY_READS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The records of one document's versions by number, reused across calls.
pub(crate) type VersionRecords = std::collections::HashMap<u64, VersionRecord>;

/// The record of version `n`: `records`' when the file's stamp is the one
/// it was read at, else read (and kept) afresh; `None` when it is not a
/// regular file.
fn record_of(
    vdir: &Path,
    name: &str,
    n: u64,
    records: &mut VersionRecords,
) -> io::Result<Option<VersionRecord>> {
    let path = vdir.join(version_file_name(name, n));
    let meta = match fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_file() => m,
        Ok(_) => return Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let stamp = FileStamp::of(&meta);
    if let Some(r) = records.get(&n).filter(|r| r.stamp == stamp) {
        return Ok(Some(r.clone()));
    }
    let Some(bytes) = read_version(vdir, name, n)? else {
        return Ok(None);
    };
    #[cfg(test)]
    BODY_READS.with(|r| r.set(r.get() + 1));
    let record = VersionRecord {
        // Stamped before the read: a write during it shows at the next call.
        stamp,
        hash: format!("sha256-{}", sha256_hex(&bytes)),
        header: parse_header(&bytes),
        mtime: meta.modified().map(crate::clock::unix_seconds).unwrap_or(0),
    };
    records.insert(n, record.clone());
    Ok(Some(record))
}

/// Every version of `name` with its chain checked (each `previous-hash`
/// against the version before), reading only the version files whose
/// stamps differ from `records` (which it updates).
pub(crate) fn history(
    vdir: &Path,
    name: &str,
    records: &mut VersionRecords,
) -> io::Result<History> {
    let numbers = all_versions(vdir, name)?;
    records.retain(|n, _| numbers.binary_search(n).is_ok());
    let mut versions = Vec::with_capacity(numbers.len());
    let mut chain_error = None;
    let mut previous: Option<String> = None;
    let mut expected = 1;
    for n in numbers {
        let note = |e: &mut Option<String>, msg: String| {
            if e.is_none() {
                *e = Some(msg);
            }
        };
        if n != expected {
            note(&mut chain_error, format!("v{expected} is missing"));
        }
        expected = n + 1;
        let Some(record) = record_of(vdir, name, n, records)? else {
            note(&mut chain_error, format!("v{n} is not a regular file"));
            previous = None;
            continue;
        };
        match &record.header {
            Err(why) => note(&mut chain_error, format!("v{n} is unreadable: {why}")),
            Ok(h) => {
                if h.version != n {
                    note(
                        &mut chain_error,
                        format!("v{n} says it is version {}", h.version),
                    );
                }
                match (n, &h.previous_hash, &previous) {
                    (1, Some(_), _) => note(&mut chain_error, "v1 has a previous-hash".to_string()),
                    (1, None, _) => {}
                    (_, None, _) => note(&mut chain_error, format!("v{n} has no previous-hash")),
                    (_, Some(got), Some(want)) if got != want => note(
                        &mut chain_error,
                        format!("v{n}'s previous-hash does not match v{}", n - 1),
                    ),
                    _ => {}
                }
            }
        }
        let modified = record.header.as_ref().ok().and_then(|h| h.modified);
        versions.push((n, modified.unwrap_or(record.mtime)));
        previous = Some(record.hash);
    }
    Ok(History {
        versions,
        chain_error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_process_temp_file_with_our_pid_does_not_block_a_write() {
        // What a server killed mid-write leaves when its restart gets the
        // same pid: temp names that differ from ours only by the tag.
        let dir = tempfile::tempdir().unwrap();
        let stem = version_file_name("a.md", 1);
        let pid = std::process::id();
        let dead_tag = process_tag().wrapping_add(1);
        for seq in 0..64 {
            fs::write(
                dir.path()
                    .join(format!(".{stem}.{pid}-{dead_tag:016x}.{seq}.tmp")),
                b"half a version",
            )
            .unwrap();
            fs::write(dir.path().join(format!(".{stem}.{pid}.{seq}.tmp")), b"old").unwrap();
        }
        assert!(write_version(dir.path(), "a.md", 1, b"v1").unwrap());
        assert_eq!(fs::read(dir.path().join(&stem)).unwrap(), b"v1");
    }

    #[test]
    fn header_round_trip_keeps_content_verbatim() {
        let content = b"---\ntitle: Mine\n---\n# Doc\n";
        let v1 = encode_version(1, None, 0, content);
        let h = parse_header(&v1).unwrap();
        assert_eq!(
            (h.version, h.previous_hash.as_deref(), h.modified),
            (1, None, Some(0))
        );
        assert_eq!(&v1[h.body_start..], content);
        let v2 = encode_version(2, Some(&v1), 60, b"x");
        let h2 = parse_header(&v2).unwrap();
        assert_eq!(
            h2.previous_hash,
            Some(format!("sha256-{}", sha256_hex(&v1)))
        );
        assert_eq!(&v2[h2.body_start..], b"x");
    }

    #[test]
    fn header_errors_are_reported() {
        assert!(parse_header(b"# no header").is_err());
        assert!(parse_header(b"---\nversion: 1\n").is_err());
        assert!(parse_header(b"---\nmodified: x\n---\n").is_err());
        assert!(parse_header(b"---\nversion: one\n---\n").is_err());
    }

    #[test]
    fn version_file_names() {
        assert_eq!(split_version_file_name("doc.md.v12"), Some(("doc.md", 12)));
        assert_eq!(split_version_file_name("x.v1.v2"), Some(("x.v1", 2)));
        assert_eq!(split_version_file_name("doc.md.v"), None);
        assert_eq!(split_version_file_name("doc.md.v01"), None);
        assert_eq!(split_version_file_name(".doc.md.v1.1.2.tmp"), None);
        assert_eq!(split_version_file_name("doc.md.archived"), None);
    }

    #[test]
    fn exclusive_write_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let vdir = dir.path().join(VERSIONS_DIR);
        assert!(write_version(&vdir, "a.md", 1, b"first").unwrap());
        assert!(!write_version(&vdir, "a.md", 1, b"second").unwrap());
        assert_eq!(read_version(&vdir, "a.md", 1).unwrap().unwrap(), b"first");
        // No temp files are left behind.
        assert_eq!(fs::read_dir(&vdir).unwrap().count(), 1);
    }

    #[test]
    fn current_version_probes_past_a_stale_link() {
        let dir = tempfile::tempdir().unwrap();
        let vdir = dir.path().join(VERSIONS_DIR);
        let link = dir.path().join("a.md");
        assert_eq!(current_version(&vdir, &link, "a.md").unwrap(), None);
        write_version(&vdir, "a.md", 1, b"1").unwrap();
        assert_eq!(current_version(&vdir, &link, "a.md").unwrap(), Some(1));
        switch_link(&link, "a.md", 1).unwrap();
        write_version(&vdir, "a.md", 2, b"2").unwrap();
        assert_eq!(current_version(&vdir, &link, "a.md").unwrap(), Some(2));
        switch_link(&link, "a.md", 2).unwrap();
        assert_eq!(fs::read(&link).unwrap(), b"2");
    }

    #[test]
    fn archive_marker_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let vdir = dir.path().join(VERSIONS_DIR);
        write_version(&vdir, "a.md", 1, b"1").unwrap();
        assert_eq!(archived_version(&vdir, "a.md").unwrap(), None);
        set_archived(&vdir, "a.md", 1, 0).unwrap();
        assert_eq!(archived_version(&vdir, "a.md").unwrap(), Some(1));
        let index = FolderIndex::read(&vdir).unwrap();
        assert_eq!(index.docs, vec![("a.md".to_string(), 1, Some(1))]);
        clear_archived(&vdir, "a.md").unwrap();
        assert_eq!(archived_version(&vdir, "a.md").unwrap(), None);
    }

    #[test]
    fn history_finds_gaps_and_tampering() {
        let dir = tempfile::tempdir().unwrap();
        let vdir = dir.path().join(VERSIONS_DIR);
        let v1 = encode_version(1, None, 10, b"one");
        let v2 = encode_version(2, Some(&v1), 20, b"two");
        write_version(&vdir, "a.md", 1, &v1).unwrap();
        write_version(&vdir, "a.md", 2, &v2).unwrap();
        let mut records = VersionRecords::new();
        let h = history(&vdir, "a.md", &mut records).unwrap();
        assert_eq!(h.versions, vec![(1, 10), (2, 20)]);
        assert_eq!(h.chain_error, None);
        // Rewritten in place, same length, stamps known: still caught.
        fs::write(vdir.join("a.md.v1"), encode_version(1, None, 10, b"ONE")).unwrap();
        let h = history(&vdir, "a.md", &mut records).unwrap();
        assert_eq!(
            h.chain_error.as_deref(),
            Some("v2's previous-hash does not match v1")
        );
        let v4 = encode_version(4, Some(&v2), 40, b"four");
        write_version(&vdir, "b.md", 1, &encode_version(1, None, 1, b"b")).unwrap();
        write_version(&vdir, "b.md", 3, &v4).unwrap();
        let h = history(&vdir, "b.md", &mut VersionRecords::new()).unwrap();
        assert_eq!(h.chain_error.as_deref(), Some("v2 is missing"));
    }

    /// #14.14: while the version files' stamps are unchanged, a history
    /// reads no body; a new version is the only file read; a version
    /// rewritten on disk (mtime set back) is read again and breaks the chain.
    #[test]
    fn history_reads_only_version_files_whose_stamps_changed() {
        let dir = tempfile::tempdir().unwrap();
        let vdir = dir.path().join(VERSIONS_DIR);
        let mut last = encode_version(1, None, 1, b"v1");
        write_version(&vdir, "a.md", 1, &last).unwrap();
        for n in 2..=20 {
            let next = encode_version(n, Some(&last), n as i64, format!("v{n}").as_bytes());
            write_version(&vdir, "a.md", n, &next).unwrap();
            last = next;
        }
        let reads = || BODY_READS.with(std::cell::Cell::get);
        let mut records = VersionRecords::new();
        let before = reads();
        assert_eq!(
            history(&vdir, "a.md", &mut records).unwrap().chain_error,
            None
        );
        assert_eq!(reads() - before, 20);
        let before = reads();
        let h = history(&vdir, "a.md", &mut records).unwrap();
        assert_eq!((h.versions.len(), h.chain_error), (20, None));
        assert_eq!(reads() - before, 0, "unchanged files were read again");
        let v21 = encode_version(21, Some(&last), 21, b"v21");
        write_version(&vdir, "a.md", 21, &v21).unwrap();
        let before = reads();
        assert_eq!(
            history(&vdir, "a.md", &mut records).unwrap().chain_error,
            None
        );
        assert_eq!(reads() - before, 1);
        // Rewrite v5 and put its mtime back: the change time still moves.
        let v5 = vdir.join("a.md.v5");
        let mtime = fs::metadata(&v5).unwrap().modified().unwrap();
        fs::write(&v5, encode_version(5, None, 5, b"V5")).unwrap();
        File::options()
            .write(true)
            .open(&v5)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        let h = history(&vdir, "a.md", &mut records).unwrap();
        assert!(
            h.chain_error.is_some(),
            "a rewritten version kept chain-valid"
        );
    }
}
