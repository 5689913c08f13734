//! `mark_publish`, `mark_append`, `mark_archive`: writes a person approves.
//! Without `apply` a write is a preview: the unified diff against the current
//! version, the version it was computed against and the one it would create,
//! and nothing written; it fails exactly where the write would (a conflict
//! with `expected_version`, a body too large). Apply is stateless: the same
//! parameters plus `apply: true`, with the preview's version as
//! `expected_version` so that a write by someone else in between is a
//! conflict. A conflict is explained in one sentence with what to do.

use crate::envelope::{ToolText, bounded_lines};
use crate::result::ResultBuilder;
use crate::session::{Loaded, Session, passthrough};
use mark_proto::{Request, Status, Verb};
use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;
use similar::{ChangeTag, TextDiff};
use std::time::{Duration, Instant};

/// The most diff text a preview shows; the lines past it are counted.
const DIFF_BYTES: usize = 16_000;
/// The most diff lines a preview shows.
const DIFF_LINES: usize = 400;
/// How long a diff may search before it settles for a coarser one (a 1 MB
/// rewrite must not stall the call).
const DIFF_TIME: Duration = Duration::from_secs(2);

/// Parameters of `mark_publish` (and of the `publish` verb).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, clap::Args)]
pub struct PublishParams {
    /// /path or mark://host/path of the document.
    pub url: String,
    /// The whole new markdown body (CLI: `-` reads stdin).
    #[arg(long, allow_hyphen_values = true)]
    pub body: String,
    /// The version you read (0 for a new document).
    #[arg(long)]
    pub expected_version: u64,
    /// Write; without it a preview (diff only, nothing written).
    #[arg(long)]
    #[serde(default)]
    pub apply: bool,
}

/// Parameters of `mark_append` (and of the `append` verb).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, clap::Args)]
pub struct AppendParams {
    /// /path or mark://host/path of the document.
    pub url: String,
    /// Markdown to add at the end (CLI: `-` reads stdin).
    #[arg(long, allow_hyphen_values = true)]
    pub body: String,
    /// The version you read; omitted: the current one.
    #[arg(long)]
    #[serde(default)]
    pub expected_version: Option<u64>,
    /// Write; without it a preview (diff only, nothing written).
    #[arg(long)]
    #[serde(default)]
    pub apply: bool,
}

/// Parameters of `mark_archive` (and of the `archive` verb).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, clap::Args)]
pub struct ArchiveParams {
    /// /path or mark://host/path of the document.
    pub url: String,
    /// Archive; without it a preview (nothing written).
    #[arg(long)]
    #[serde(default)]
    pub apply: bool,
}

/// Publishes a new version of a document, or previews it.
pub async fn publish(session: &Session, params: PublishParams, now: Instant) -> ToolText {
    let t = publish_unbounded(session, params, now).await;
    ResultBuilder::shorten(t, session.settings().page_bytes)
}

async fn publish_unbounded(session: &Session, params: PublishParams, now: Instant) -> ToolText {
    let path = match document_path(session, &params.url, "publish") {
        Ok(p) => p,
        Err(t) => return t,
    };
    if !params.apply {
        return preview_publish(session, &path, &params, now).await;
    }
    let req = Request::new(Verb::Publish, path.as_str())
        .with_meta("expected-version", params.expected_version.to_string())
        .with_body(params.body.into_bytes());
    write(session, &path, req, "publish").await
}

/// Appends to the current version of a document.
pub async fn append(session: &Session, params: AppendParams, now: Instant) -> ToolText {
    let t = append_unbounded(session, params, now).await;
    ResultBuilder::shorten(t, session.settings().page_bytes)
}

async fn append_unbounded(session: &Session, params: AppendParams, now: Instant) -> ToolText {
    let path = match document_path(session, &params.url, "append") {
        Ok(p) => p,
        Err(t) => return t,
    };
    if params.body.is_empty() {
        return ToolText::error("the body to append is empty; give the markdown to add");
    }
    if !params.apply {
        return preview_append(session, &path, &params, now).await;
    }
    let expected = match params.expected_version {
        Some(v) => v,
        None => match current(session, &path, now).await {
            Ok(Some(doc)) => doc.version,
            Ok(None) => return missing(&path, "append to"),
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

/// A document as it is now: its version and body.
struct Current {
    version: u64,
    body: std::sync::Arc<str>,
}

/// The document as it is now (revalidated through the session cache),
/// `None` when it does not exist.
async fn current(session: &Session, path: &str, now: Instant) -> Result<Option<Current>, ToolText> {
    match session.load(path, now).await {
        Loaded::Doc(doc) => {
            let version = doc
                .identity
                .version
                .as_deref()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| {
                    ToolText::error(format!(
                        "{path} has no version number to write over; give expected_version"
                    ))
                })?;
            Ok(Some(Current {
                version,
                body: std::sync::Arc::from(doc.doc.source()),
            }))
        }
        Loaded::Answer(t) if t.status == "not-found" => Ok(None),
        // Archived, refused, timed out: the write cannot go on.
        Loaded::Answer(t) => Err(t.as_error()),
    }
}

fn missing(path: &str, what: &str) -> ToolText {
    ToolText::new("not-found")
        .with_text(format!(
            "{path} does not exist, so there is nothing to {what}; publish it first (expected_version 0)"
        ))
        .as_error()
}

/// The size rule of the Mark Protocol (1 MiB, what mark-server and a local
/// store take), checked before a preview promises a write.
fn check_size(path: &str, len: usize) -> Result<(), ToolText> {
    let max = mark_store::DEFAULT_MAX_DOCUMENT_BYTES;
    if len > max {
        return Err(ToolText::new("too-large")
            .with_text(format!(
                "{path} would be {len} bytes; a Mark document takes at most {max}: split it into several documents"
            ))
            .as_error());
    }
    Ok(())
}

async fn preview_publish(
    session: &Session,
    path: &str,
    params: &PublishParams,
    now: Instant,
) -> ToolText {
    if let Err(t) = refuses(session, "publish", path) {
        return t;
    }
    let doc = match current(session, path, now).await {
        Ok(d) => d,
        Err(t) => return t,
    };
    let (version, old) = match &doc {
        Some(d) => (d.version, &*d.body),
        None => (0, ""),
    };
    if params.expected_version != version {
        return conflict(path, params.expected_version, version, "publish");
    }
    if let Err(t) = check_size(path, params.body.len()) {
        return t;
    }
    if doc.is_some() && old == params.body {
        return ToolText::new("preview")
            .with("against-version", version.to_string())
            .with("outcome", "no change")
            .with_text(format!(
                "{path} v{version} already has exactly this body: applying writes no new version."
            ));
    }
    let next = version + 1;
    let outcome = if doc.is_none() {
        format!("would create {path} as v1")
    } else {
        format!("would create v{next}")
    };
    let apply = format!(
        "nothing written: show the person this diff, then call again with apply: true and expected_version: {version}"
    );
    diff_preview(path, version, next, outcome, apply, old, &params.body)
}

async fn preview_append(
    session: &Session,
    path: &str,
    params: &AppendParams,
    now: Instant,
) -> ToolText {
    if let Err(t) = refuses(session, "append", path) {
        return t;
    }
    let doc = match current(session, path, now).await {
        Ok(Some(d)) => d,
        Ok(None) => return missing(path, "append to"),
        Err(t) => return t,
    };
    let expected = params.expected_version.unwrap_or(doc.version);
    if expected != doc.version {
        return conflict(path, expected, doc.version, "append");
    }
    // The server's join (demarkus' and mark-server's: a line end only
    // where the body lacks one), so the diff approved is the one applied.
    let join = mark_proto::append::separator(doc.body.as_bytes());
    let new = format!("{}{join}{}", doc.body, params.body);
    if let Err(t) = check_size(path, new.len()) {
        return t;
    }
    let apply = format!(
        "nothing written: show the person this diff, then call again with apply: true and expected_version: {}; append is not idempotent, so apply once",
        doc.version
    );
    let outcome = format!("would create v{}", doc.version + 1);
    diff_preview(
        path,
        doc.version,
        doc.version + 1,
        outcome,
        apply,
        &doc.body,
        &new,
    )
}

/// A preview: the versions, the outcome, and the bounded unified diff (its
/// JSON key is `diff`).
fn diff_preview(
    path: &str,
    against: u64,
    creates: u64,
    outcome: String,
    note: String,
    old: &str,
    new: &str,
) -> ToolText {
    let diff = TextDiff::configure()
        .timeout(DIFF_TIME)
        .diff_lines(old, new);
    let (mut added, mut removed) = (0usize, 0usize);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    let before = if against == 0 {
        "/dev/null".to_string()
    } else {
        format!("{path} v{against}")
    };
    let unified = diff
        .unified_diff()
        .context_radius(3)
        .header(&before, &format!("{path} v{creates}"))
        .to_string();
    let shown = bounded_lines(
        unified.lines(),
        DIFF_BYTES,
        DIFF_LINES,
        "diff lines not shown (the body you gave is the whole change)",
    );
    ToolText::new("preview")
        .with("against-version", against.to_string())
        .with("creates-version", creates.to_string())
        .with("outcome", outcome)
        .with("changes", format!("+{added} -{removed} lines"))
        .with("note", note)
        .with_text(shown)
        .with_text_key("diff")
}

/// Archives a document (its versions stay readable), or previews it.
pub async fn archive(session: &Session, params: ArchiveParams, now: Instant) -> ToolText {
    let t = archive_unbounded(session, params, now).await;
    ResultBuilder::shorten(t, session.settings().page_bytes)
}

async fn archive_unbounded(session: &Session, params: ArchiveParams, now: Instant) -> ToolText {
    let path = match document_path(session, &params.url, "archive") {
        Ok(p) => p,
        Err(t) => return t,
    };
    if params.apply {
        let req = Request::new(Verb::Archive, path.as_str());
        return write(session, &path, req, "archive").await;
    }
    if let Err(t) = refuses(session, "archive", &path) {
        return t;
    }
    match current(session, &path, now).await {
        Ok(Some(doc)) => ToolText::new("preview")
            .with("against-version", doc.version.to_string())
            .with("outcome", format!("would archive v{}", doc.version))
            .with(
                "note",
                "nothing written: archive has no expected_version, so apply archives whatever version is current then; call again with apply: true",
            )
            .with_text(format!(
                "{}; its versions stay readable at \"{path}/vN\".",
                archived_listing(session, &path).await
            )),
        Ok(None) => missing(&path, "archive"),
        Err(t) => t,
    }
}

/// What archiving `path` does to its folder's listing on the server in
/// use, learned from one LIST of that folder: a server that pages LIST
/// (mark-server, a folder) leaves archived documents out, one that does not
/// (a March 2026 demarkus server) keeps listing them.
async fn archived_listing(session: &Session, path: &str) -> String {
    let dir = crate::crawl::parent_dir(path);
    let req = Request::new(Verb::List, dir).with_meta("page-size", "1");
    match session.send_ok(req).await {
        Ok(resp) if crate::list::Completeness::of(&resp) == crate::list::Completeness::Unstated => {
            format!(
                "{path} would stay in the listing of {dir}: this server does not page LIST and lists archived documents (as a demarkus server does), though a FETCH of it answers `archived`"
            )
        }
        Ok(_) => format!("{path} would leave the listing of {dir}"),
        Err(_) => format!(
            "{path} answers `archived` to a FETCH once archived; whether it leaves the listing of {dir} depends on the server (mark-server leaves it out, demarkus keeps it), and that listing could not be read"
        ),
    }
}

async fn write(session: &Session, path: &str, req: Request, verb: &str) -> ToolText {
    let resp = match session.send(req).await {
        Ok(r) => r,
        Err(t) => return t,
    };
    session.forget(path);
    let version = resp.meta("version").map(str::to_string);
    if resp.status.is_success() {
        // What this session wrote is not news to it.
        session.feed().wrote(
            path,
            crate::dedup::Identity {
                version: version.clone(),
                etag: resp.meta("etag").map(str::to_string),
            },
        );
    }
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
        Status::Conflict => {
            let number = |k| resp.meta(k).and_then(|v| v.parse().ok()).unwrap_or(0);
            conflict(path, number("your-version"), number("server-version"), verb)
        }
        _ => {
            let t = passthrough(&resp);
            if matches!(resp.status, Status::Unauthorized | Status::NotPermitted) {
                let why = resp.error_message();
                let why = why.lines().next().unwrap_or("").trim();
                return refused(session, t, verb, path, why);
            }
            t.as_error()
        }
    }
}

/// A write the source refuses (or will refuse: a preview says so too),
/// with the advice for the source in use: a server's token, or a folder's
/// `--write` on a versioned store.
fn refused(session: &Session, t: ToolText, verb: &str, path: &str, why: &str) -> ToolText {
    let why = if why.is_empty() {
        String::new()
    } else {
        format!(" ({why})")
    };
    let advice = if session.source().origin() == crate::sources::LOCAL_ORIGIN {
        "a local folder must be a versioned store opened with --write"
    } else {
        "this server needs a token with publish rights on this path (--token-file, MARK_TOKEN or DEMARKUS_AUTH)"
    };
    t.with_text(format!(
        "the source refused to {verb} {path}{why}; {advice}"
    ))
    .as_error()
}

/// The refusal a preview gives when the source is known to refuse writes.
fn refuses(session: &Session, verb: &str, path: &str) -> Result<(), ToolText> {
    match session.source().refuses_writes() {
        Some(why) => Err(refused(
            session,
            ToolText::new("not-permitted"),
            verb,
            path,
            why,
        )),
        None => Ok(()),
    }
}

/// The conflict of a write (or of its preview) over `yours` when the
/// document is at `theirs`.
fn conflict(path: &str, yours: u64, theirs: u64, verb: &str) -> ToolText {
    // The pinned url reads v{theirs} even when the document is archived
    // (its plain url then answers `archived`).
    let next = if verb == "append" {
        format!(
            "fetch \"{path}/v{theirs}\", check whether your text is already there (append is not idempotent), then append with expected_version {theirs}"
        )
    } else {
        format!(
            "fetch \"{path}/v{theirs}\" to see v{theirs}, merge your change into it, then {verb} with expected_version {theirs}"
        )
    };
    ToolText::new("conflict")
        .with("your-version", yours.to_string())
        .with("server-version", theirs.to_string())
        .with_text(format!(
            "conflict: you expected v{yours} but {path} is at v{theirs}; {next}."
        ))
        .as_error()
}
