//! Claude Code's SessionStart hook (`mark-mcp hook session-start`).
//!
//! The hook prints Claude Code's hook JSON holding the root document's card
//! (`/index.md`, else `/README.md`, else the root listing), at most
//! [`CONTEXT_BYTES`]. It has one deadline for all of it, [`HOOK_DEADLINE`]
//! (well under the `timeout` in `hooks.json`): the first failure of the
//! source (a timeout, a refused connection) or the deadline ends it with
//! one line, and the session starts without a card. It waits for the link
//! graph at most [`HOOK_CRAWL_WAIT`] and shows backlinks only when the graph
//! is complete, so it never says anything about backlinks it did not wait
//! for. It never searches, so it never builds or writes a search index.
//!
//! After a compaction or `/clear` (stdin `source: compact|clear`) it tells
//! the running MCP server to forget what it delivered: see
//! [`crate::context_reset`].
//!
//! As a plugin's hook it takes the plugin's options from the environment
//! Claude Code gives it (`CLAUDE_PLUGIN_OPTION_SOURCE`,
//! `CLAUDE_PLUGIN_OPTION_PIN`) when `--source` and `--pin` are not given: a
//! hook that named an unset option as `${user_config.pin}` would not run at
//! all (see [`plugin_options`]).

use crate::crawl::Unwatched;
use crate::envelope::ToolText;
use crate::explore::{ExploreParams, ShowBacklinks, explore_card};
use crate::list::{ListParams, list};
use crate::session::Session;
use std::io::{IsTerminal, Read};
use std::time::{Duration, Instant};

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

/// The whole hook's deadline: source requests, crawl wait and all.
pub const HOOK_DEADLINE: Duration = Duration::from_secs(5);
/// The longest the hook waits for the link graph (within the deadline).
pub const HOOK_CRAWL_WAIT: Duration = Duration::from_secs(1);

/// The SessionStart hook: tells the running server to forget its
/// deliveries when the model lost its context, and answers with the hook
/// JSON (the result's text).
pub async fn session_start(session: &Session, event: &HookEvent, now: Instant) -> ToolText {
    if event.drops_context() {
        match crate::context_reset::signal() {
            Ok(told) => tracing::debug!(told, "context reset signalled"),
            Err(e) => {
                tracing::warn!("could not tell the running mark-mcp about the context reset: {e}")
            }
        }
    }
    let about = session.source().describe();
    let context = match tokio::time::timeout(HOOK_DEADLINE, root_card(session, now)).await {
        Ok(Ok(card)) => {
            let lead = format!(
                "Knowledge base served by mark-mcp ({about}); the mark skill says how to read it. Its root:\n\n"
            );
            let room = CONTEXT_BYTES.saturating_sub(lead.len());
            format!("{lead}{}", cut(&card.render(), room))
        }
        Ok(Err(failure)) => failure_line(&about, &failure),
        Err(_) => failure_line(
            &about,
            &format!("no answer within {}s", HOOK_DEADLINE.as_secs()),
        ),
    };
    let json = serde_json::json!({
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": context,
        }
    });
    ToolText::new("ok").with_text(format!("{json}\n"))
}

/// The one line the model (and, on stderr, the person) gets when the source
/// failed at session start.
fn failure_line(about: &str, failure: &str) -> String {
    let what = format!(
        "could not read the knowledge base ({about}) at session start: {}",
        crate::envelope::one_line(failure, 300)
    );
    eprintln!("mark-mcp: {what}");
    cut(
        &format!("mark-mcp {what}. The mark tools will say more when called."),
        CONTEXT_BYTES,
    )
}

/// The card of the first root document there is, else the root listing;
/// `Err` with the source's one-line failure at the first one (a timeout, a
/// refused connection), without trying the others.
async fn root_card(session: &Session, now: Instant) -> Result<ToolText, String> {
    for url in ROOT_DOCUMENTS {
        let params = ExploreParams {
            url: url.to_string(),
            ..ExploreParams::default()
        };
        let card = explore_card(
            session,
            params,
            now,
            &Unwatched,
            ShowBacklinks::OnlyComplete,
        )
        .await;
        match card.status.as_str() {
            "ok" => return Ok(card),
            "not-found" => continue,
            _ => return Err(card.text),
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
    if listing.is_error {
        return Err(listing.text);
    }
    Ok(crate::result::ResultBuilder::shorten_to(
        listing,
        CONTEXT_BYTES,
    ))
}

/// Fills `source` and `pin` from the plugin options Claude Code hands its
/// hooks (`CLAUDE_PLUGIN_OPTION_SOURCE`, `CLAUDE_PLUGIN_OPTION_PIN`) where
/// the command line gave none; an empty or unset option stays unset.
pub fn plugin_options(source: &mut Option<String>, pin: &mut Option<String>) {
    let option = |key: &str| {
        std::env::var(format!("CLAUDE_PLUGIN_OPTION_{key}"))
            .ok()
            .filter(|v| !v.trim().is_empty())
    };
    if source.is_none() {
        *source = option("SOURCE");
    }
    if pin.is_none() {
        *pin = option("PIN");
    }
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
    fn a_long_card_is_cut_at_a_line_and_says_so() {
        let text = "line of the card\n".repeat(500);
        let out = cut(&text, 300);
        assert!(
            out.len() <= 300 && out.ends_with("for the whole card)\n"),
            "{out}"
        );
    }
}
