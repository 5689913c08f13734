//! Finding (or building) the `mark-server` executable.

use crate::TestkitError;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

const BIN_NAME: &str = "mark-server";

/// The path of the `mark-server` executable, building it once if needed.
///
/// Order: `MARK_SERVER_BIN`; `mark-server` in the profile directory of the
/// running executable (`target/debug/deps/test-abc` → `target/debug`); else
/// `cargo build -p mark-server --bin mark-server` into the same target
/// directory (with `--release` when that directory is `release`).
pub fn mark_server_binary() -> Result<PathBuf, TestkitError> {
    static FOUND: OnceLock<PathBuf> = OnceLock::new();
    if let Some(path) = FOUND.get() {
        return Ok(path.clone());
    }
    let path = locate()?;
    Ok(FOUND.get_or_init(|| path).clone())
}

fn locate() -> Result<PathBuf, TestkitError> {
    if let Some(path) = std::env::var_os("MARK_SERVER_BIN") {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().map_err(|source| TestkitError::Spawn {
        program: "current_exe".into(),
        source,
    })?;
    let profile_dir = profile_dir_of(&exe).ok_or_else(|| {
        TestkitError::Build(format!(
            "cannot find the target directory from {}",
            exe.display()
        ))
    })?;
    let candidate = profile_dir.join(exe_name());
    if candidate.is_file() {
        return Ok(candidate);
    }
    build(&profile_dir)?;
    if candidate.is_file() {
        Ok(candidate)
    } else {
        Err(TestkitError::Build(format!(
            "no binary at {} after the build",
            candidate.display()
        )))
    }
}

fn exe_name() -> String {
    format!("{BIN_NAME}{}", std::env::consts::EXE_SUFFIX)
}

/// `target/<profile>/deps/exe` → `target/<profile>`; `target/<profile>/exe` → `target/<profile>`.
fn profile_dir_of(exe: &Path) -> Option<PathBuf> {
    let dir = exe.parent()?;
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.parent().map(Path::to_path_buf)
    } else {
        Some(dir.to_path_buf())
    }
}

fn build(profile_dir: &Path) -> Result<(), TestkitError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target_dir = profile_dir
        .parent()
        .ok_or_else(|| TestkitError::Build("the profile directory has no parent".into()))?;
    let mut cmd = Command::new(&cargo);
    cmd.args(["build", "-p", BIN_NAME, "--bin", BIN_NAME])
        .arg("--target-dir")
        .arg(target_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let status = cmd.status().map_err(|source| TestkitError::Spawn {
        program: cargo.to_string_lossy().into_owned(),
        source,
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(TestkitError::Build(status.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_dir_skips_deps() {
        assert_eq!(
            profile_dir_of(Path::new("/w/target/debug/deps/conformance-123")),
            Some(PathBuf::from("/w/target/debug"))
        );
        assert_eq!(
            profile_dir_of(Path::new("/w/target/release/fetch")),
            Some(PathBuf::from("/w/target/release"))
        );
    }
}
