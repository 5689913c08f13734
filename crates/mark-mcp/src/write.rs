//! `mark_publish`, `mark_append`, `mark_archive`: writes with expected-version
//! concurrency; a conflict is explained in one sentence with what to do.

use crate::envelope::ToolText;
use crate::session::{Loaded, Session, passthrough};
use mark_proto::{Request, Response, Status, Verb};
use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;
use std::time::Instant;

/// Parameters of `mark_publish` (and of the `publish` verb).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, clap::Args)]
pub struct PublishParams {
    /// /path or mark://host/path of the document.
    pub url: String,
    /// The whole new markdown body (CLI: `-` reads stdin).
    #[arg(long)]
    pub body: String,
    /// The version you read (0 for a new document).
    #[arg(long)]
    pub expected_version: u64,
}

/// Parameters of `mark_append` (and of the `append` verb).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, clap::Args)]
pub struct AppendParams {
    /// /path or mark://host/path of the document.
    pub url: String,
    /// Markdown to add at the end (CLI: `-` reads stdin).
    #[arg(long)]
    pub body: String,
    /// The version you read; omitted: the current one.
    #[arg(long)]
    #[serde(default)]
    pub expected_version: Option<u64>,
}

/// Parameters of `mark_archive` (and of the `archive` verb).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, clap::Args)]
pub struct ArchiveParams {
    /// /path or mark://host/path of the document.
    pub url: String,
}

/// Publishes a new version of a document.
pub async fn publish(session: &Session, params: PublishParams) -> ToolText {
    let path = match document_path(session, &params.url, "publish") {
        Ok(p) => p,
        Err(t) => return t,
    };
    let req = Request::new(Verb::Publish, path.as_str())
        .with_meta("expected-version", params.expected_version.to_string())
        .with_body(params.body.into_bytes());
    write(session, &path, req, "publish").await
}

/// Appends to the current version of a document.
pub async fn append(session: &Session, params: AppendParams, now: Instant) -> ToolText {
    let path = match document_path(session, &params.url, "append") {
        Ok(p) => p,
        Err(t) => return t,
    };
    if params.body.is_empty() {
        return ToolText::error("the body to append is empty; give the markdown to add");
    }
    let expected = match params.expected_version {
        Some(v) => v,
        None => match current_version(session, &path, now).await {
            Ok(v) => v,
            Err(t) => return t,
        },
    };
    let req = Request::new(Verb::Append, path.as_str())
        .with_meta("expected-version", expected.to_string())
        .with_body(params.body.into_bytes());
    write(session, &path, req, "append").await
}

/// The document a write names. A write always takes a whole document, so a
/// `#anchor` is refused rather than dropped: ignoring it would replace,
/// extend or archive the whole document the caller meant one section of.
fn document_path(session: &Session, url: &str, verb: &str) -> Result<String, ToolText> {
    let target = session.resolve(url).map_err(ToolText::error)?;
    if url.contains('#') {
        let path = &target.path;
        return Err(ToolText::error(format!(
            "{verb} writes a whole document, not one section; use url \"{path}\" (to change one section, fetch \"{path}\", edit that section in the whole body and publish the whole body)"
        )));
    }
    Ok(target.path)
}

/// The version a document is at now, read through the session cache.
async fn current_version(session: &Session, path: &str, now: Instant) -> Result<u64, ToolText> {
    match session.load(path, now).await {
        Loaded::Doc(doc) => doc
            .identity
            .version
            .as_deref()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| {
                ToolText::error(format!(
                    "{path} has no version number to append to; give expected_version"
                ))
            }),
        Loaded::Answer(t) => Err(t),
    }
}

/// Archives a document (its versions stay readable).
pub async fn archive(session: &Session, params: ArchiveParams) -> ToolText {
    match document_path(session, &params.url, "archive") {
        Ok(path) => {
            write(
                session,
                &path,
                Request::new(Verb::Archive, path.as_str()),
                "archive",
            )
            .await
        }
        Err(t) => t,
    }
}

async fn write(session: &Session, path: &str, req: Request, verb: &str) -> ToolText {
    let resp = match session.send(req).await {
        Ok(r) => r,
        Err(t) => return t,
    };
    session.forget(path);
    let version = resp.meta("version").map(str::to_string);
    match resp.status {
        Status::Created => ToolText::new("created")
            .with_opt("version", version.clone())
            .with_text(format!(
                "{path} is now v{}; fetch it with url \"{path}\".",
                version.as_deref().unwrap_or("?")
            )),
        Status::Ok if verb == "archive" => ToolText::new("ok").with_text(format!(
            "{path} is archived; its versions stay readable at \"{path}/vN\"."
        )),
        Status::Ok => ToolText::new("ok")
            .with_opt("version", version)
            .with_text(format!(
                "{path} already has this exact body; no new version was written."
            )),
        Status::Conflict => conflict(path, &resp, verb),
        _ => {
            let t = passthrough(&resp);
            if matches!(resp.status, Status::Unauthorized | Status::NotPermitted) {
                let why = if t.text.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", t.text)
                };
                return t
                    .with_text(format!(
                        "the source refused to {verb} {path}{why}; a server needs a token with publish rights (--token-file or MARK_TOKEN), a local folder must be a versioned store opened with --write"
                    ))
                    .as_error();
            }
            t.as_error()
        }
    }
}

fn conflict(path: &str, resp: &Response, verb: &str) -> ToolText {
    let yours = resp.meta("your-version").unwrap_or("?");
    let theirs = resp.meta("server-version").unwrap_or("?");
    let next = if verb == "append" {
        format!(
            "fetch \"{path}\", check whether your text is already there (append is not idempotent), then append with expected_version {theirs}"
        )
    } else {
        format!(
            "fetch \"{path}\" to see v{theirs}, merge your change into it, then {verb} with expected_version {theirs}"
        )
    };
    ToolText::new("conflict")
        .with("your-version", yours)
        .with("server-version", theirs)
        .with_text(format!(
            "conflict: you expected v{yours} but {path} is at v{theirs}; {next}."
        ))
        .as_error()
}
