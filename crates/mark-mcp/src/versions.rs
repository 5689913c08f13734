//! `mark_versions`: a document's history, bounded.

use crate::envelope::{ToolText, bounded_lines};
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
}

/// Lists the versions of a document, newest first.
pub async fn versions(session: &Session, params: VersionsParams) -> ToolText {
    history(session, params).await.unwrap_or_else(|t| t)
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
    let lines: Vec<String> = entries
        .iter()
        .map(|e| format!("- v{}  {}", e.version, e.modified))
        .collect();
    let mut text = bounded_lines(
        lines.iter().map(String::as_str),
        16 * 1024,
        MAX_LINES,
        "versions",
    );
    text.push_str(&format!("\nFetch an old version with url \"{path}/vN\"."));
    Ok(ToolText::new("ok")
        .with_opt("current", resp.meta("current"))
        .with_opt("total", resp.meta("total"))
        .with_opt("chain-valid", resp.meta("chain-valid"))
        .with_opt("chain-error", resp.meta("chain-error"))
        .with_text(text))
}
