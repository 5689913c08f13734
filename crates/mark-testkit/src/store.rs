//! Temporary stores and tokens, made with the real `mark-server` subcommands.

use crate::{TestkitError, mark_server_binary};
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};
use tempfile::TempDir;

/// Runs `mark-server ARGS…` to completion; returns its stdout on success.
pub fn run_mark_server<S: AsRef<OsStr>>(args: &[S]) -> Result<String, TestkitError> {
    let bin = mark_server_binary()?;
    let out = Command::new(&bin)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| TestkitError::Spawn {
            program: bin.display().to_string(),
            source,
        })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(TestkitError::Command {
            args: args
                .iter()
                .map(|a| a.as_ref().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
}

/// A new versioned store in a temporary directory, imported from a folder of
/// markdown with `mark-server import SRC DEST` (every file becomes v1). The
/// store is the `store` folder inside the returned directory, which is
/// deleted on drop.
pub fn import_store(src: &Path) -> Result<TempStore, TestkitError> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("store");
    run_mark_server(&[OsStr::new("import"), src.as_os_str(), root.as_os_str()])?;
    Ok(TempStore { _dir: dir, root })
}

/// A store in a temporary directory (deleted on drop).
#[derive(Debug)]
pub struct TempStore {
    _dir: TempDir,
    root: std::path::PathBuf,
}

impl TempStore {
    /// The store root, to pass as `--root`.
    pub fn path(&self) -> &Path {
        &self.root
    }
}

/// Adds a token to `tokens_file` with `mark-server token generate` and
/// returns the raw token it printed. `ops` is `read`, `publish` or
/// `read,publish`; `expires` an RFC 3339 time.
pub fn generate_token(
    tokens_file: &Path,
    paths: &str,
    ops: &str,
    expires: Option<&str>,
) -> Result<String, TestkitError> {
    let mut args: Vec<&OsStr> = vec![
        OsStr::new("token"),
        OsStr::new("generate"),
        OsStr::new("--paths"),
        OsStr::new(paths),
        OsStr::new("--ops"),
        OsStr::new(ops),
        OsStr::new("--tokens"),
        tokens_file.as_os_str(),
    ];
    if let Some(when) = expires {
        args.extend([OsStr::new("--expires"), OsStr::new(when)]);
    }
    let out = run_mark_server(&args)?;
    Ok(out.trim().to_string())
}
