//! MCP resources: documents the user attaches on purpose. A read gives the
//! whole body (or one `#anchor` section) with no outline and no dedup, in
//! pages like `mark_fetch` when it is over `--page-bytes`.

use crate::paging::Cursor;
use crate::session::{Loaded, Session};
use mark_proto::{Request, Status, Verb};
use std::time::Instant;

/// The most top-level documents `resources/list` names.
pub const MAX_LISTED: usize = 50;

/// Path of the agent manifest (PROTOCOL.md, Agent manifest).
pub const AGENT_MANIFEST: &str = "/.well-known/agent-manifest.md";

/// One listed resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// `mark://host/path`.
    pub uri: String,
    /// The path (used as the name).
    pub path: String,
    /// What it is, for the index and the manifest.
    pub description: Option<&'static str>,
}

/// The index (`/index.md` when present), the agent manifest when present,
/// then the top-level documents, at most [`MAX_LISTED`] in all.
pub async fn list(session: &Session) -> Result<Vec<Listed>, String> {
    let resp = session
        .send(Request::new(Verb::List, "/"))
        .await
        .map_err(|t| t.text)?;
    if resp.status != Status::Ok {
        return Err(format!("listing / answered {}", resp.status));
    }
    let entries = mark_proto::list::parse(&resp.body).map_err(|e| e.to_string())?;
    let mut docs: Vec<String> = entries
        .iter()
        .filter(|e| !e.is_dir)
        .map(|e| crate::list::entry_path("/", e))
        .filter(|p| p.ends_with(".md"))
        .collect();
    let mut out = Vec::new();
    let mut add = |path: String, description| {
        out.push(Listed {
            uri: session.url_of(&path),
            path,
            description,
        });
    };
    if let Some(i) = docs.iter().position(|p| p == "/index.md") {
        add(docs.remove(i), Some("the index of this knowledge base"));
    }
    let manifest = session
        .send(Request::new(Verb::Fetch, AGENT_MANIFEST))
        .await;
    if manifest.is_ok_and(|r| r.status == Status::Ok) {
        add(
            AGENT_MANIFEST.to_string(),
            Some("what this server offers agents"),
        );
    }
    for path in docs {
        add(path, None);
    }
    out.truncate(MAX_LISTED);
    Ok(out)
}

/// Why a resource read gave no text, so the client hears what happened:
/// only a missing document or section is "not found".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadFailure {
    /// The uri is not one of this source's documents.
    BadUri(String),
    /// No such document or section.
    NotFound(String),
    /// The source did not give the document: a timeout, a refusal, a server error.
    Failed(String),
}

impl ReadFailure {
    /// The sentence saying what happened.
    pub fn message(&self) -> &str {
        match self {
            ReadFailure::BadUri(m) | ReadFailure::NotFound(m) | ReadFailure::Failed(m) => m,
        }
    }
}

/// Reads a resource: the whole body, or one section for `#anchor` (one
/// block for `#^id`).
pub async fn read(session: &Session, uri: &str, now: Instant) -> Result<String, ReadFailure> {
    let target = session.resolve(uri).map_err(ReadFailure::BadUri)?;
    let cached = match session.load(&target.path, now).await {
        Loaded::Doc(d) => d,
        Loaded::Answer(t) => {
            let message = format!("{}: {}: {}", target.path, t.status, t.text.trim());
            return Err(if t.status == "not-found" {
                ReadFailure::NotFound(message)
            } else {
                ReadFailure::Failed(message)
            });
        }
    };
    let (text, offset) = match target.fragment {
        None => (cached.doc.source(), 0),
        Some(fragment) => match cached.doc.find_part(&fragment) {
            Ok(part) => {
                let range = part.range();
                (
                    cached.doc.source().get(range.clone()).unwrap_or(""),
                    range.start,
                )
            }
            Err(miss) => {
                return Err(ReadFailure::NotFound(crate::fetch::miss_message(
                    &target.path,
                    &fragment,
                    &miss,
                )));
            }
        },
    };
    Ok(first_page(session, uri, &cached, text, offset))
}

/// The whole `text` when it fits `--page-bytes`; else its first page (cut
/// where `mark_fetch` cuts) and a line saying how to read the rest, so a
/// resource read keeps the same whole-result bound as every tool.
fn first_page(
    session: &Session,
    uri: &str,
    cached: &crate::session::CachedDoc,
    text: &str,
    offset: usize,
) -> String {
    let page_bytes = session.settings().page_bytes;
    if text.len() <= page_bytes {
        return text.to_string();
    }
    let pages = crate::fetch::text_pages(&cached.doc, text, offset, page_bytes);
    let next = Cursor::new(
        2,
        cached.identity.etag.as_deref(),
        &(offset..offset + text.len()),
    )
    .encode();
    format!(
        "{}\n\n[page 1 of {}; the rest: mark_fetch with url \"{}\" and cursor \"{next}\"]\n",
        &text[pages[0].clone()],
        pages.len(),
        crate::session::short(uri)
    )
}
