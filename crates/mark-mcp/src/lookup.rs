//! `mark_lookup`: the source's card catalog (LOOKUP), bounded. The same
//! rows again in one session (an identical search, nothing changed) answer
//! `unchanged` in one line, like a re-read document.

use crate::dedup::{AnswerKey, Delivery, answer_digest};
use crate::envelope::{ToolText, bounded_lines};
use crate::outbox::deliver;
use crate::session::Session;
use mark_proto::lookup::query_words;
use mark_proto::{Request, Verb};
use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;
use std::time::Instant;

/// The most rows one lookup returns (the protocol allows 1000; an agent
/// needs the top few).
pub const MAX_LIMIT: u32 = 100;

/// What a lookup matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum MatchMode {
    /// Titles and tags: one row per document.
    Catalog,
    /// Section text: one row per section, with a snippet.
    Body,
}

impl MatchMode {
    fn as_str(self) -> &'static str {
        match self {
            MatchMode::Catalog => "catalog",
            MatchMode::Body => "body",
        }
    }
}

/// Parameters of `mark_lookup` (and of the `lookup` verb).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, clap::Args)]
pub struct LookupParams {
    /// Words that must all match (* for everything).
    pub query: String,
    /// Folder to search, e.g. /projects (default /).
    #[arg(long)]
    #[serde(default)]
    pub scope: Option<String>,
    /// e.g. tag=x,modified-after=2026-01-01
    #[arg(long)]
    #[serde(default)]
    pub filter: Option<String>,
    /// Rows, default 10, at most 100.
    #[arg(long)]
    #[serde(default)]
    pub limit: Option<u32>,
    /// catalog (titles, tags; default) or body (sections, snippets).
    #[arg(long = "match", id = "match", value_enum)]
    #[serde(default, rename = "match")]
    pub match_mode: Option<MatchMode>,
    /// Re-send even if unchanged.
    #[arg(long)]
    #[serde(default)]
    pub force: bool,
}

/// Runs a LOOKUP for the session at time `now`.
pub async fn lookup(session: &Session, params: LookupParams, now: Instant) -> ToolText {
    let force = params.force;
    // An answer is compared only with earlier answers to the same search.
    let key = AnswerKey {
        tool: "lookup",
        subject: [
            params.query.trim(),
            params.scope.as_deref().unwrap_or("/"),
            params.filter.as_deref().unwrap_or(""),
            &params.limit.map(|l| l.to_string()).unwrap_or_default(),
            params.match_mode.map_or("", MatchMode::as_str),
        ]
        .join("\0"),
        part: String::new(),
    };
    let found = match search(session, params).await {
        Ok(t) => t,
        Err(t) => return t,
    };
    let digest = answer_digest(&[&found.render()]);
    if force || !session.log().answer_sent(&key, &digest, now) {
        deliver(
            session,
            Delivery::Answer {
                key,
                digest,
                at: now,
            },
        );
        return found;
    }
    ToolText::new("unchanged")
        .with_opt("matches", found.get("matches").map(str::to_string))
        .with_text(
            "the same rows as an identical lookup earlier this session; force=true to re-send",
        )
}

async fn search(session: &Session, params: LookupParams) -> Result<ToolText, ToolText> {
    let query = params.query.trim();
    if query.is_empty() {
        return Err(ToolText::error(
            "the query is empty; give the words to find, or * for everything",
        ));
    }
    let scope = session.path_of(params.scope.as_deref().unwrap_or("/"))?;
    let limit = params.limit.unwrap_or(10).clamp(1, MAX_LIMIT);
    let mut req = Request::new(Verb::Lookup, scope)
        .with_meta("query", query)
        .with_meta("limit", limit.to_string());
    if let Some(f) = params
        .filter
        .as_deref()
        .map(str::trim)
        .filter(|f| !f.is_empty())
    {
        req = req.with_meta("filter", f);
    }
    if let Some(m) = params.match_mode {
        req = req.with_meta("match", m.as_str());
    }
    let resp = session.send_ok(req).await?;
    let body = String::from_utf8_lossy(&resp.body);
    let rows = body.trim_start_matches(['\n', '\r']).lines();
    let mut text = bounded_lines(
        rows,
        session.settings().page_bytes / 4,
        2 + MAX_LIMIT as usize,
        "rows",
    );
    let matches = resp.meta("matches").unwrap_or("0");
    if matches != "0" {
        text.push_str(
            "\nFetch a hit's section with url \"/path#anchor\" rather than the whole document.",
        );
    }
    // LOOKUP leaves out words under 2 characters: say so, or `phase 5`
    // would look like a search for the fifth phase (`*` has no words).
    let too_short = query_words(query).too_short;
    Ok(ToolText::new("ok")
        .with("matches", matches)
        .with_opt("match", resp.meta("match"))
        .with_text(text)
        .with_opt(
            "note",
            (!too_short.is_empty()).then(|| {
                format!(
                    "not searched (words under 2 characters): {}",
                    too_short.join(" ")
                )
            }),
        ))
}
