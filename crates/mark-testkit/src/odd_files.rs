//! Files that are not regular files, for the tests of what refuses them.

use std::io;
use std::path::Path;

/// Makes a named pipe (FIFO) at `path` with the system's `mkfifo`.
pub fn make_fifo(path: &Path) -> io::Result<()> {
    let status = std::process::Command::new("mkfifo").arg(path).status()?;
    if status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "mkfifo {} failed: {status}",
            path.display()
        )))
    }
}
