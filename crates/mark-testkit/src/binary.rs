//! Finding (or building) the workspace's executables.

use crate::TestkitError;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The path of the `mark-server` executable, building it once if needed
/// (`MARK_SERVER_BIN` overrides). See [`workspace_binary`].
pub fn mark_server_binary() -> Result<PathBuf, TestkitError> {
    static FOUND: OnceLock<PathBuf> = OnceLock::new();
    if let Some(path) = FOUND.get() {
        return Ok(path.clone());
    }
    let path = match std::env::var_os("MARK_SERVER_BIN") {
        Some(path) => PathBuf::from(path),
        None => workspace_binary("mark-server")?,
    };
    Ok(FOUND.get_or_init(|| path).clone())
}

/// The path of the workspace binary `name` (package and binary of the same
/// name): the one in the profile directory of the running executable
/// (`target/debug/deps/test-abc` → `target/debug`), which `cargo nextest run
/// --workspace` has just built with the test's features; only when it is
/// missing, `cargo build -p NAME --bin NAME` into the same target directory
/// (with `--release` when that directory is `release`). A test never
/// rebuilds a binary that exists: a build with other features would replace
/// it under the feet of tests running beside it.
pub fn workspace_binary(name: &str) -> Result<PathBuf, TestkitError> {
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
    let candidate = profile_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if candidate.is_file() {
        return Ok(candidate);
    }
    build(name, &profile_dir)?;
    if candidate.is_file() {
        Ok(candidate)
    } else {
        Err(TestkitError::Build(format!(
            "no binary at {} after the build",
            candidate.display()
        )))
    }
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

fn build(name: &str, profile_dir: &Path) -> Result<(), TestkitError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target_dir = profile_dir
        .parent()
        .ok_or_else(|| TestkitError::Build("the profile directory has no parent".into()))?;
    let mut cmd = Command::new(&cargo);
    cmd.args(["build", "-p", name, "--bin", name])
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
