//! `mark_list`: one page of a directory, as paths an agent can fetch.

use crate::envelope::{ToolText, bounded_lines};
use crate::session::Session;
use mark_proto::list::ListEntry;
use mark_proto::{Request, Response, Status, Verb};
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

/// Entries asked for per page.
const PAGE_SIZE: usize = 200;

/// Parameters of `mark_list` (and of the `list` verb).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, clap::Args)]
pub struct ListParams {
    /// Folder: /dir/ or mark://host/dir/ (default /).
    #[arg(default_value = "/")]
    #[serde(default = "root")]
    pub url: String,
    /// Next-page cursor from an earlier result.
    #[arg(long)]
    #[serde(default)]
    pub cursor: Option<String>,
}

/// The path of a listed entry, percent-encoded as a request path
/// (a folder ends in `/`): its key (see [`crate::keys`]) when `dir` is one,
/// the name in NFC like every key.
pub fn entry_path(dir: &str, entry: &ListEntry) -> String {
    let name = markdown_slice::unicode_form(&entry.name);
    let name = utf8_percent_encode(&name, NAME);
    let slash = if entry.is_dir { "/" } else { "" };
    format!("{dir}{name}{slash}")
}

/// Characters escaped in a path segment: controls, space, and what would end
/// or split a path or URL.
pub(crate) const NAME: &AsciiSet = &CONTROLS.add(b' ').add(b'#').add(b'%').add(b'/').add(b'?');

/// What a LIST answer says of its completeness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completeness {
    /// `complete: true`: every entry is in this answer.
    Complete,
    /// More entries exist; the cursor for the next page, if the server gave one.
    Partial(Option<String>),
    /// Neither `complete` nor `next-cursor`: an older server that does not
    /// page. The listing may or may not be whole; nothing may claim it is.
    Unstated,
}

impl Completeness {
    /// Reads `complete` and `next-cursor` of a LIST answer.
    pub fn of(resp: &Response) -> Completeness {
        let next = resp
            .meta("next-cursor")
            .filter(|c| !c.is_empty())
            .map(str::to_string);
        match (resp.meta("complete"), next) {
            (Some("true"), _) => Completeness::Complete,
            (None, None) => Completeness::Unstated,
            (_, next) => Completeness::Partial(next),
        }
    }
}

/// Whether `path` answers a FETCH (a folder that is not one answered
/// `not-found` to its LIST).
async fn is_document(session: &Session, path: &str) -> bool {
    let req = Request::new(Verb::Fetch, path);
    session
        .send(req)
        .await
        .is_ok_and(|r| matches!(r.status, Status::Ok | Status::Archived))
}

fn root() -> String {
    "/".to_string()
}

/// Lists one page of a directory.
pub async fn list(session: &Session, params: ListParams) -> ToolText {
    let t = list_page(session, params).await.unwrap_or_else(|t| t);
    crate::result::ResultBuilder::shorten(t, session.settings().page_bytes)
}

async fn list_page(session: &Session, params: ListParams) -> Result<ToolText, ToolText> {
    let mut dir = session.path_of(&params.url)?;
    let named = (!dir.ends_with('/')).then(|| dir.clone());
    if !dir.ends_with('/') {
        dir.push('/');
    }
    let mut req =
        Request::new(Verb::List, dir.as_str()).with_meta("page-size", PAGE_SIZE.to_string());
    if let Some(c) = params
        .cursor
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty())
    {
        req = req.with_meta("cursor", c);
    }
    let resp = session.send(req).await?;
    if resp.status != Status::Ok {
        if let Some(doc) = named.filter(|_| resp.status == Status::NotFound)
            && is_document(session, &doc).await
        {
            return Err(ToolText::new("not-found").with_text(format!(
                "{doc} is a document, not a folder: read it with mark_fetch, or list its folder {}",
                crate::crawl::parent_dir(&doc)
            )));
        }
        return Err(crate::session::passthrough(&resp));
    }
    let entries = mark_proto::list::parse(&resp.body).map_err(|e| {
        ToolText::error(format!(
            "the server's listing of {dir} is malformed ({e}); try again or report it"
        ))
    })?;
    // Names that differ only in Unicode form (an NFC and an NFD `résumé.md`)
    // make one path: listed once, and said.
    let mut paths: Vec<String> = Vec::with_capacity(entries.len());
    let mut twice: Vec<String> = Vec::new();
    for e in &entries {
        let path = entry_path(&dir, e);
        if paths.contains(&path) {
            if !twice.contains(&path) {
                twice.push(path);
            }
        } else {
            paths.push(path);
        }
    }
    let lines: Vec<String> = paths.iter().map(|p| format!("- {p}")).collect();
    let mut text = bounded_lines(
        lines.iter().map(String::as_str),
        32 * 1024,
        PAGE_SIZE,
        "entries",
    );
    if !twice.is_empty() {
        let named: Vec<&str> = twice.iter().take(5).map(String::as_str).collect();
        text.push_str(&format!(
            "\nListed once, though the folder holds it under names that differ only in Unicode form (NFC and NFD): {}{}; its path reads one of them, and the other cannot be named apart: rename one to read both.",
            named.join(", "),
            if twice.len() > named.len() { ", …" } else { "" }
        ));
    }
    let completeness = Completeness::of(&resp);
    let complete = match &completeness {
        Completeness::Complete => "true",
        Completeness::Partial(_) => "false",
        Completeness::Unstated => "unknown",
    };
    match &completeness {
        Completeness::Partial(Some(c)) => text.push_str(&format!(
            "\nMore entries: call mark_list with the same url and cursor \"{c}\"."
        )),
        Completeness::Unstated => text.push_str(
            "\nThe server did not say whether this listing is complete (it does not page LIST); it may hold more entries.",
        ),
        _ => {}
    }
    Ok(ToolText::new("ok")
        .with("entries", paths.len().to_string())
        .with("complete", complete)
        .with_text(text))
}
