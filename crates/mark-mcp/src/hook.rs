//! Claude Code's SessionStart hook (`mark-mcp hook session-start`) and the
//! context-reset marker it leaves for the running MCP server.
//!
//! The hook prints Claude Code's hook JSON holding the root document's card
//! (`/index.md`, else `/README.md`, else the root listing), at most
//! [`CONTEXT_BYTES`]. It never waits for a crawl, so it answers at once
//! whatever the size of the knowledge base.
//!
//! After a compaction or a clear the model no longer holds what it read, so
//! the session's mark-mcp must stop answering `unchanged` for it. Claude Code
//! tells only its hooks (stdin `source: compact|clear`), but it starts both
//! the hook and the plugin's MCP server as its own children with the same
//! `CLAUDE_PLUGIN_DATA`. So the hook touches
//! `$CLAUDE_PLUGIN_DATA/context-reset/<Claude Code's pid>`, and the server
//! (whose parent is that process) looks at the same file before each read
//! tool call: a newer modification time means "forget every delivery".
//! Outside a plugin (no `CLAUDE_PLUGIN_DATA`) only `--dedup-ttl` applies.

use crate::bound::fit;
use crate::envelope::ToolText;
use crate::explore::{ExploreParams, explore};
use crate::list::{ListParams, list};
use crate::session::Session;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

/// The root card's bound, hook text included.
pub const CONTEXT_BYTES: usize = 2048;
/// Documents tried, in order, for the root card.
const ROOT_DOCUMENTS: [&str; 2] = ["/index.md", "/README.md"];
/// How long the hook waits for Claude Code's JSON on stdin.
const STDIN_WAIT: Duration = Duration::from_millis(500);
/// The most of stdin the hook reads.
const STDIN_BYTES: u64 = 64 * 1024;

/// What Claude Code says about the session starting (its hook JSON on stdin).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub struct HookEvent {
    /// `startup`, `resume`, `clear` or `compact`.
    #[serde(default)]
    pub source: Option<String>,
}

impl HookEvent {
    /// Whether the model lost what it had read (so deliveries are forgotten).
    pub fn drops_context(&self) -> bool {
        matches!(self.source.as_deref(), Some("compact" | "clear"))
    }
}

/// Reads the hook's JSON from stdin: none when stdin is a terminal, is not
/// JSON, or says nothing within `STDIN_WAIT`.
pub fn stdin_event() -> HookEvent {
    if std::io::stdin().is_terminal() {
        return HookEvent::default();
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::stdin().take(STDIN_BYTES).read_to_string(&mut text);
        let _ = tx.send(text);
    });
    rx.recv_timeout(STDIN_WAIT)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// The SessionStart hook: leaves the context-reset marker when the model
/// lost its context, and answers with the hook JSON (the result's text).
pub async fn session_start(session: &Session, event: &HookEvent, now: Instant) -> ToolText {
    if event.drops_context()
        && let Some(marker) = ContextReset::marker_for_hook()
        && let Err(e) = touch(&marker)
    {
        tracing::warn!(marker = %marker.display(), "could not leave the context-reset marker: {e}");
    }
    let card = root_card(session, now).await;
    let lead = format!(
        "Knowledge base served by mark-mcp ({}); the mark skill says how to read it. Its root:\n\n",
        session.source().describe()
    );
    let room = CONTEXT_BYTES.saturating_sub(lead.len());
    let mut context = lead;
    context.push_str(&cut(&card.render(), room));
    let json = serde_json::json!({
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": context,
        }
    });
    ToolText::new("ok").with_text(format!("{json}\n"))
}

/// The card of the first root document there is, else the root listing.
async fn root_card(session: &Session, now: Instant) -> ToolText {
    for url in ROOT_DOCUMENTS {
        let params = ExploreParams {
            url: url.to_string(),
            ..ExploreParams::default()
        };
        let card = explore(session, params, now).await;
        if card.status == "ok" {
            return card;
        }
    }
    let listing = list(
        session,
        ListParams {
            url: "/".to_string(),
            ..ListParams::default()
        },
    )
    .await;
    fit(listing, CONTEXT_BYTES)
}

/// `text` cut at a line end to at most `max` bytes, saying so.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    const MORE: &str = "…(cut; mark_explore / for the whole card)\n";
    let end = text.floor_char_boundary(max.saturating_sub(MORE.len()));
    let end = text[..end].rfind('\n').map_or(end, |i| i + 1);
    format!("{}{MORE}", &text[..end])
}

fn touch(path: &Path) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::fs::write(path, format!("{nanos}\n"))
}

/// The running server's view of the context-reset marker.
#[derive(Debug)]
pub struct ContextReset {
    marker: PathBuf,
    /// The marker's modification time when last looked at.
    seen: Mutex<Option<SystemTime>>,
}

impl ContextReset {
    fn marker(data: &Path, claude_pid: u32) -> PathBuf {
        data.join("context-reset").join(claude_pid.to_string())
    }

    /// The marker a hook leaves: Claude Code's pid is `CLAUDE_PID` (else the
    /// hook's parent). None outside a plugin.
    fn marker_for_hook() -> Option<PathBuf> {
        let data = std::env::var_os("CLAUDE_PLUGIN_DATA")?;
        let pid = std::env::var("CLAUDE_PID")
            .ok()
            .and_then(|p| p.parse().ok())
            .or_else(parent_pid)?;
        Some(ContextReset::marker(Path::new(&data), pid))
    }

    /// For the MCP server a plugin started (its parent is Claude Code); None
    /// outside a plugin. A marker already there is old news.
    pub fn for_server() -> Option<ContextReset> {
        let data = std::env::var_os("CLAUDE_PLUGIN_DATA")?;
        let marker = ContextReset::marker(Path::new(&data), parent_pid()?);
        let seen = modified(&marker);
        Some(ContextReset {
            marker,
            seen: Mutex::new(seen),
        })
    }

    /// Whether the marker was touched since the last look (one `stat`).
    pub fn take(&self) -> bool {
        let now = modified(&self.marker);
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if now.is_some() && now != *seen {
            *seen = now;
            return true;
        }
        false
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

#[cfg(unix)]
fn parent_pid() -> Option<u32> {
    Some(std::os::unix::process::parent_id())
}

#[cfg(not(unix))]
fn parent_pid() -> Option<u32> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_compact_and_clear_drop_the_context() {
        let event = |s: &str| HookEvent {
            source: Some(s.to_string()),
        };
        assert!(event("compact").drops_context() && event("clear").drops_context());
        assert!(!event("startup").drops_context() && !event("resume").drops_context());
        assert!(!HookEvent::default().drops_context());
    }

    #[test]
    fn a_touched_marker_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        let marker = ContextReset::marker(dir.path(), 42);
        let reset = ContextReset {
            marker: marker.clone(),
            seen: Mutex::new(modified(&marker)),
        };
        assert!(!reset.take(), "no marker yet");
        touch(&marker).unwrap();
        assert!(reset.take());
        assert!(!reset.take(), "the same touch counts once");
    }

    #[test]
    fn a_long_card_is_cut_at_a_line_and_says_so() {
        let text = "line of the card\n".repeat(500);
        let out = cut(&text, 300);
        assert!(
            out.len() <= 300 && out.ends_with("for the whole card)\n"),
            "{out}"
        );
    }
}
