//! How a SessionStart hook tells the running MCP server that the model lost
//! its context (a compaction or `/clear`), so the server forgets what it
//! delivered and sends text again instead of `unchanged`.
//!
//! Claude Code tells only its hooks (stdin `source: compact|clear`). Both
//! the hook and the plugin's MCP server are started by the same Claude Code
//! process, with the same `CLAUDE_PLUGIN_DATA`, and that process is found
//! from each side without guessing:
//!
//! - The **server** is started directly by Claude Code (`.mcp.json` names
//!   the executable), so its parent *is* that process, `C`. At start it
//!   registers: an empty file `context-reset/C.S` (`S` its own pid).
//! - The **hook** runs as a descendant of `C`: directly (exec form, as
//!   `hooks.json` has it) or through a shell, which may or may not `exec`
//!   the command (dash, bash and zsh differ). The hook walks its ancestors
//!   (parent, grandparent, … at most [`ANCESTORS`]) and takes the first one
//!   with a live registration: that is `C`. For each registration `C.S` it
//!   creates the marker `C.S.reset`.
//! - Before each read tool call the server removes `C.S.reset`; a removal
//!   that succeeds is the reset (one system call, and a marker is taken
//!   exactly once).
//!
//! A registration is live while its server process runs. Every server start
//! and every hook run removes the files of servers that are gone (crashed or
//! killed), and a server removes its own files when it ends. Outside a
//! plugin (no `CLAUDE_PLUGIN_DATA`), and on systems without process parents
//! (Windows), nothing is written and only `--dedup-ttl` applies.

use std::path::{Path, PathBuf};

/// How many ancestors of the hook are looked at for Claude Code (the hook's
/// parent, a shell or two, and Claude Code itself fit well within).
pub const ANCESTORS: usize = 8;
/// The folder of registrations and markers under `CLAUDE_PLUGIN_DATA`.
const FOLDER: &str = "context-reset";
/// The suffix of a marker (a registration has none).
const MARKER: &str = ".reset";

/// The running server's registration: its marker is taken before each read
/// tool call. Its files are removed when it is dropped.
#[derive(Debug)]
pub struct ContextReset {
    registration: PathBuf,
    marker: PathBuf,
}

impl ContextReset {
    /// Registers the MCP server a plugin started (its parent is Claude
    /// Code); `None` outside a plugin or when the folder cannot be written
    /// (said once on stderr).
    pub fn for_server() -> Option<ContextReset> {
        let data = std::env::var_os("CLAUDE_PLUGIN_DATA")?;
        let folder = Path::new(&data).join(FOLDER);
        let reset = ContextReset::register(&folder, parent_pid()?, std::process::id());
        if let Err(e) = &reset {
            tracing::warn!(folder = %folder.display(), "could not register for context resets ({e}); after a compaction, re-reads may answer unchanged until --dedup-ttl");
        }
        reset.ok()
    }

    fn register(folder: &Path, client: u32, server: u32) -> std::io::Result<ContextReset> {
        std::fs::create_dir_all(folder)?;
        remove_dead(folder);
        let registration = folder.join(format!("{client}.{server}"));
        let marker = folder.join(format!("{client}.{server}{MARKER}"));
        // A marker left from before this server started is not news.
        let _ = std::fs::remove_file(&marker);
        std::fs::write(&registration, b"")?;
        Ok(ContextReset {
            registration,
            marker,
        })
    }

    /// Whether a hook reported a context reset since the last look; the
    /// marker is removed, so each reset is taken once.
    pub fn take(&self) -> bool {
        std::fs::remove_file(&self.marker).is_ok()
    }
}

impl Drop for ContextReset {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.marker);
        let _ = std::fs::remove_file(&self.registration);
    }
}

/// The hook's side: leaves a marker for every live server registered under
/// the nearest ancestor of this process that has one. Returns how many
/// servers were told (0 outside a plugin or when no server runs).
pub fn signal() -> std::io::Result<usize> {
    let Some(data) = std::env::var_os("CLAUDE_PLUGIN_DATA") else {
        return Ok(0);
    };
    let folder = Path::new(&data).join(FOLDER);
    if !folder.is_dir() {
        return Ok(0);
    }
    remove_dead(&folder);
    signal_in(&folder, &ancestors(std::process::id()))
}

/// Leaves a marker for each registration of the first of `ancestors` that
/// has any in `folder`.
fn signal_in(folder: &Path, ancestors: &[u32]) -> std::io::Result<usize> {
    let registrations = registrations(folder)?;
    let Some(client) = ancestors
        .iter()
        .find(|a| registrations.iter().any(|(c, _)| c == *a))
    else {
        return Ok(0);
    };
    let mut told = 0;
    for (_, server) in registrations.iter().filter(|(c, _)| c == client) {
        std::fs::write(folder.join(format!("{client}.{server}{MARKER}")), b"")?;
        told += 1;
    }
    Ok(told)
}

/// The registrations in `folder`, as (client pid, server pid).
fn registrations(folder: &Path) -> std::io::Result<Vec<(u32, u32)>> {
    Ok(std::fs::read_dir(folder)?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|name| parse_registration(&name))
        .collect())
}

/// `C.S` as (C, S); a marker or any other name is `None`.
fn parse_registration(name: &str) -> Option<(u32, u32)> {
    let (client, server) = name.split_once('.')?;
    Some((client.parse().ok()?, server.parse().ok()?))
}

/// Removes the registrations and markers of servers that no longer run
/// (and files of older layouts: anything not named `C.S` or `C.S.reset`).
fn remove_dead(folder: &Path) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let live = parse_registration(name.strip_suffix(MARKER).unwrap_or(name))
            .is_some_and(|(_, server)| is_running(server));
        if !live {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The pids of `pid`'s ancestors, nearest first, at most [`ANCESTORS`].
fn ancestors(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut current = pid;
    while out.len() < ANCESTORS {
        match parent_of(current) {
            Some(parent) if parent != 0 && parent != current => {
                out.push(parent);
                current = parent;
            }
            _ => break,
        }
    }
    out
}

#[cfg(unix)]
fn parent_pid() -> Option<u32> {
    Some(std::os::unix::process::parent_id())
}

#[cfg(not(unix))]
fn parent_pid() -> Option<u32> {
    None
}

/// The parent of `pid`: from `/proc` on Linux, else from `ps`.
fn parent_of(pid: u32) -> Option<u32> {
    if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
        let rest = &stat[stat.rfind(')')? + 1..];
        return rest.split_whitespace().nth(1)?.parse().ok();
    }
    let out = std::process::Command::new("ps")
        .args(["-o", "ppid=", "-p", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    String::from_utf8(out.stdout).ok()?.trim().parse().ok()
}

/// Whether process `pid` runs (`/proc` on Linux, else `ps`).
fn is_running(pid: u32) -> bool {
    if Path::new("/proc/self").exists() {
        return Path::new(&format!("/proc/{pid}")).exists();
    }
    std::process::Command::new("ps")
        .args(["-p", &pid.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_is_taken_once_and_the_files_go_with_the_server() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let reset = ContextReset::register(dir.path(), 7, me).unwrap();
        assert!(!reset.take(), "no marker yet");
        assert_eq!(signal_in(dir.path(), &[3, 7, 1]).unwrap(), 1);
        assert!(reset.take());
        assert!(!reset.take(), "the same reset counts once");
        drop(reset);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn only_the_nearest_registered_ancestor_is_told() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let near = ContextReset::register(dir.path(), 20, me).unwrap();
        std::fs::write(dir.path().join(format!("30.{me}")), b"").unwrap();
        assert_eq!(signal_in(dir.path(), &[10, 20, 30]).unwrap(), 1);
        assert!(near.take());
        assert!(!dir.path().join(format!("30.{me}.reset")).exists());
        assert_eq!(signal_in(dir.path(), &[40, 50]).unwrap(), 0, "no ancestor");
    }

    #[test]
    fn files_of_servers_that_are_gone_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        // A pid above Linux's pid_max (2^22) never runs.
        let gone = 4_999_999;
        for name in [
            format!("5.{gone}"),
            format!("5.{gone}.reset"),
            "12345".into(),
        ] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let live = ContextReset::register(dir.path(), 6, std::process::id()).unwrap();
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(left, vec![live.registration.clone()]);
    }

    #[test]
    fn this_process_has_ancestors() {
        let mine = ancestors(std::process::id());
        assert_eq!(mine.first().copied(), parent_pid());
    }
}
