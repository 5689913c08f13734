//! Opening the files the store serves: regular files only, and never a
//! blocking open. A named pipe (FIFO) opened for reading waits for a writer,
//! forever; a device or a socket is no document. So the path's kind is
//! checked before the open, the open does not block (`O_NONBLOCK`, which a
//! regular file ignores), and the file opened is checked again (the path may
//! have been swapped between the two).

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

/// What a path that is no regular file is, as a sentence part
/// (`a named pipe (FIFO)`); `None` for a regular file, a folder, or nothing.
pub(crate) fn odd_kind(meta: &Metadata) -> Option<&'static str> {
    let kind = meta.file_type();
    if kind.is_file() || kind.is_dir() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return Some("a named pipe (FIFO)");
        }
        if kind.is_socket() {
            return Some("a socket");
        }
        if kind.is_block_device() || kind.is_char_device() {
            return Some("a device file");
        }
    }
    Some("not a regular file")
}

/// Opens `path` for reading when it is a regular file (a symlink to one
/// counts): the file and its metadata; `None` when nothing is there or it
/// is anything else. Never blocks on the open.
pub(crate) fn open(path: &Path) -> io::Result<Option<(File, Metadata)>> {
    match fs::metadata(path) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Ok(None),
        Err(e) if missing(&e) => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = match options.open(path) {
        Ok(f) => f,
        Err(e) if missing(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let opened = file.metadata()?;
    Ok(opened.is_file().then_some((file, opened)))
}

/// The bytes of `path` when it is a regular file (see [`open`]).
pub(crate) fn read(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let Some((mut file, meta)) = open(path)? else {
        return Ok(None);
    };
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

fn missing(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_named_pipe_is_refused_at_once_and_a_file_read() {
        let dir = tempfile::tempdir().unwrap();
        let pipe = dir.path().join("pipe.md");
        mark_testkit::make_fifo(&pipe).unwrap();
        let started = Instant::now();
        assert!(open(&pipe).unwrap().is_none());
        assert!(read(&pipe).unwrap().is_none());
        assert!(started.elapsed() < Duration::from_secs(1));
        assert_eq!(
            odd_kind(&fs::metadata(&pipe).unwrap()),
            Some("a named pipe (FIFO)")
        );
        let file = dir.path().join("a.md");
        fs::write(&file, "# A\n").unwrap();
        assert_eq!(read(&file).unwrap().unwrap(), b"# A\n");
        assert_eq!(odd_kind(&fs::metadata(&file).unwrap()), None);
        assert!(read(&dir.path().join("none.md")).unwrap().is_none());
        assert!(read(dir.path()).unwrap().is_none(), "a folder");
    }

    #[test]
    fn devices_and_sockets_are_refused() {
        let null = Path::new("/dev/null");
        assert!(read(null).unwrap().is_none());
        assert_eq!(
            odd_kind(&fs::metadata(null).unwrap()),
            Some("a device file")
        );
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("s.md");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        assert!(read(&socket).unwrap().is_none());
        assert_eq!(odd_kind(&fs::metadata(&socket).unwrap()), Some("a socket"));
    }
}
