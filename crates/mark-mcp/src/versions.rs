//! `mark_versions`: a document's history, bounded.

use crate::envelope::ToolText;
use crate::paging::cursor_argument;
use crate::session::Session;
use mark_proto::{Request, Verb};
use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

/// The most history lines one result shows (newest first).
const MAX_LINES: usize = 50;

/// Parameters of `mark_versions` (and of the `versions` verb).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, clap::Args)]
pub struct VersionsParams {
    /// /path or mark://host/path of a document.
    pub url: String,
    /// From a "+N older" line: the older versions.
    #[arg(long)]
    #[serde(default)]
    pub cursor: Option<String>,
}

/// `v12`: the newest version a page of older versions starts at.
fn parse_cursor(s: &str) -> Option<u64> {
    s.strip_prefix('v')?.parse().ok().filter(|&n| n >= 1)
}

/// Lists the versions of a document, newest first.
pub async fn versions(session: &Session, params: VersionsParams) -> ToolText {
    let t = history(session, params).await.unwrap_or_else(|t| t);
    crate::result::ResultBuilder::shorten(t, session.settings().page_bytes)
}

async fn history(session: &Session, params: VersionsParams) -> Result<ToolText, ToolText> {
    let path = session.path_of(&params.url)?;
    let resp = session
        .send_ok(Request::new(Verb::Versions, path.as_str()))
        .await?;
    let entries = mark_proto::versions::parse(&resp.body).map_err(|e| {
        ToolText::error(format!(
            "the server's history of {path} is malformed ({e}); try again or report it"
        ))
    })?;
    let from = match cursor_argument(params.cursor.as_deref(), parse_cursor) {
        Ok(from) => from,
        Err(c) => {
            return Err(ToolText::error(format!(
                "cursor `{c}` is not one mark_versions gave; ask for the versions of {path} without a cursor"
            )));
        }
    };
    // Newest first; a cursor starts at the version it names.
    let start = match from {
        None => 0,
        Some(n) => entries.iter().position(|e| e.version == n).ok_or_else(|| {
            ToolText::error(format!(
                "cursor `v{n}` names no version of {path}; ask for its versions without a cursor"
            ))
        })?,
    };
    let shown = &entries[start..entries.len().min(start + MAX_LINES)];
    let mut text: String = shown
        .iter()
        .map(|e| format!("- v{}  {}\n", e.version, e.modified))
        .collect();
    if let Some(next) = entries.get(start + shown.len()) {
        let left = entries.len() - start - shown.len();
        text.push_str(&format!(
            "+{left} older versions: cursor \"v{}\"\n",
            next.version
        ));
    }
    text.push_str(&format!("\nFetch an old version with url \"{path}/vN\"."));
    Ok(ToolText::new("ok")
        .with_opt("current", resp.meta("current"))
        .with_opt("total", resp.meta("total"))
        .with_opt("chain-valid", resp.meta("chain-valid"))
        .with_opt("chain-error", resp.meta("chain-error"))
        .with_text(text))
}
