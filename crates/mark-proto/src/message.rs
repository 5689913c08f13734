//! Requests and responses: the two messages of the Mark Protocol, their
//! encoding and their bounded parsing.

use crate::error::WireError;
use crate::meta::{Metadata, parse_block, write_block};

/// Longest request line, `\n` included (PROTOCOL.md, Limits).
pub const MAX_REQUEST_LINE: usize = 4096;
/// Largest metadata block between the `---` delimiters.
pub const MAX_METADATA: usize = 64 * 1024;

/// A request verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    /// Read a document.
    Fetch,
    /// List a directory.
    List,
    /// A document's version history.
    Versions,
    /// Search the card catalog.
    Lookup,
    /// Write a new version.
    Publish,
    /// Append to the current version.
    Append,
    /// Flag the current version archived.
    Archive,
    /// Stream change hints for a document or a folder (a stream of
    /// frontmatter blocks, see [`crate::watch`]).
    Watch,
}

impl Verb {
    /// Every verb, in protocol order.
    pub const ALL: [Verb; 8] = [
        Verb::Fetch,
        Verb::List,
        Verb::Versions,
        Verb::Lookup,
        Verb::Publish,
        Verb::Append,
        Verb::Archive,
        Verb::Watch,
    ];

    /// The verb as it stands on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Fetch => "FETCH",
            Verb::List => "LIST",
            Verb::Versions => "VERSIONS",
            Verb::Lookup => "LOOKUP",
            Verb::Publish => "PUBLISH",
            Verb::Append => "APPEND",
            Verb::Archive => "ARCHIVE",
            Verb::Watch => "WATCH",
        }
    }

    /// Parses a wire verb (exact, upper-case).
    pub fn parse(s: &str) -> Option<Verb> {
        Verb::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Whether the verb changes the store.
    pub fn is_write(self) -> bool {
        matches!(self, Verb::Publish | Verb::Append | Verb::Archive)
    }

    /// Whether sending the request twice has the same effect as once, so a
    /// client may retry it on its own (the read verbs).
    pub fn is_idempotent(self) -> bool {
        !self.is_write()
    }
}

impl std::fmt::Display for Verb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A response status. Unknown statuses are kept as [`Status::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Status {
    /// `ok`
    Ok,
    /// `created`
    Created,
    /// `not-modified`
    NotModified,
    /// `not-found`
    NotFound,
    /// `archived`
    Archived,
    /// `unauthorized`
    Unauthorized,
    /// `not-permitted`
    NotPermitted,
    /// `server-error`
    ServerError,
    /// `conflict`
    Conflict,
    /// `bad-request`
    BadRequest,
    /// `too-large`
    TooLarge,
    /// `unavailable`
    Unavailable,
    /// A status this crate does not know.
    Other(String),
}

impl Status {
    /// The status as it stands on the wire.
    pub fn as_str(&self) -> &str {
        match self {
            Status::Ok => "ok",
            Status::Created => "created",
            Status::NotModified => "not-modified",
            Status::NotFound => "not-found",
            Status::Archived => "archived",
            Status::Unauthorized => "unauthorized",
            Status::NotPermitted => "not-permitted",
            Status::ServerError => "server-error",
            Status::Conflict => "conflict",
            Status::BadRequest => "bad-request",
            Status::TooLarge => "too-large",
            Status::Unavailable => "unavailable",
            Status::Other(s) => s,
        }
    }

    /// Parses a wire status; anything unknown becomes [`Status::Other`].
    pub fn parse(s: &str) -> Status {
        match s {
            "ok" => Status::Ok,
            "created" => Status::Created,
            "not-modified" => Status::NotModified,
            "not-found" => Status::NotFound,
            "archived" => Status::Archived,
            "unauthorized" => Status::Unauthorized,
            "not-permitted" => Status::NotPermitted,
            "server-error" => Status::ServerError,
            "conflict" => Status::Conflict,
            "bad-request" => Status::BadRequest,
            "too-large" => Status::TooLarge,
            "unavailable" => Status::Unavailable,
            other => Status::Other(other.to_string()),
        }
    }

    /// `ok` or `created`.
    pub fn is_success(&self) -> bool {
        matches!(self, Status::Ok | Status::Created)
    }

    /// The title of an error body for this status (`# Not found`), as the
    /// reference server writes it.
    pub fn title(&self) -> &str {
        match self {
            Status::Ok => "Ok",
            Status::Created => "Created",
            Status::NotModified => "Not modified",
            Status::NotFound => "Not found",
            Status::Archived => "Archived",
            Status::Unauthorized => "Unauthorized",
            Status::NotPermitted => "Not permitted",
            Status::ServerError => "Server error",
            Status::Conflict => "Conflict",
            Status::BadRequest => "Bad request",
            Status::TooLarge => "Too large",
            Status::Unavailable => "Unavailable",
            Status::Other(s) => s,
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A request: `VERB /path`, optional metadata, optional body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The verb.
    pub verb: Verb,
    /// The path as sent: starts with `/`, no control characters.
    pub path: String,
    /// Request metadata (`if-none-match`, `auth`, `query`, …).
    pub metadata: Metadata,
    /// The body (PUBLISH and APPEND content); empty otherwise.
    pub body: Vec<u8>,
}

impl Request {
    /// A request with no metadata and no body. The path is checked when encoded.
    pub fn new(verb: Verb, path: impl Into<String>) -> Request {
        Request {
            verb,
            path: path.into(),
            metadata: Metadata::new(),
            body: Vec::new(),
        }
    }

    /// Adds a metadata entry (builder style).
    pub fn with_meta(mut self, key: impl Into<String>, value: impl Into<String>) -> Request {
        self.metadata.insert(key, value);
        self
    }

    /// Sets the body (builder style).
    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> Request {
        self.body = body.into();
        self
    }

    /// Encodes the request for the wire, checking every limit of the protocol.
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        check_path(&self.path)?;
        let line_len = self.verb.as_str().len() + 1 + self.path.len() + 1;
        if line_len > MAX_REQUEST_LINE {
            return Err(WireError::RequestLineTooLong(line_len));
        }
        let mut out = Vec::with_capacity(line_len + self.body.len() + 64);
        out.extend_from_slice(self.verb.as_str().as_bytes());
        out.push(b' ');
        out.extend_from_slice(self.path.as_bytes());
        out.push(b'\n');
        // A body that itself opens with a `---` line (a document with YAML
        // frontmatter) would be read as the metadata block: an empty block
        // in front keeps it a body.
        if !self.metadata.is_empty() || opens_block(&self.body) {
            let block = write_block(&self.metadata)?;
            if block.len() > MAX_METADATA {
                return Err(WireError::MetadataTooLarge(block.len()));
            }
            out.extend_from_slice(b"---\n");
            out.extend_from_slice(block.as_bytes());
            out.extend_from_slice(b"---\n");
        }
        out.extend_from_slice(&self.body);
        Ok(out)
    }

    /// Parses a complete request as a server receives it.
    pub fn parse(bytes: &[u8]) -> Result<Request, WireError> {
        let nl = bytes
            .iter()
            .take(MAX_REQUEST_LINE)
            .position(|&b| b == b'\n')
            .ok_or(if bytes.len() >= MAX_REQUEST_LINE {
                WireError::RequestLineTooLong(bytes.len())
            } else {
                WireError::MissingNewline
            })?;
        let line =
            std::str::from_utf8(&bytes[..nl]).map_err(|_| WireError::NotUtf8("request line"))?;
        let (verb, path) = line.split_once(' ').ok_or(WireError::BadRequestLine)?;
        let verb = Verb::parse(verb).ok_or_else(|| WireError::UnknownVerb(verb.to_string()))?;
        check_path(path)?;
        let rest = &bytes[nl + 1..];
        let (metadata, body) = split_optional_block(rest, MAX_METADATA)?;
        Ok(Request {
            verb,
            path: path.to_string(),
            metadata,
            body: body.to_vec(),
        })
    }
}

/// A response: status and metadata in a frontmatter block, then the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status.
    pub status: Status,
    /// Metadata other than `status`, in the order received.
    pub metadata: Metadata,
    /// The body bytes as served (never altered).
    pub body: Vec<u8>,
}

impl Response {
    /// A response with a status and nothing else.
    pub fn new(status: Status) -> Response {
        Response {
            status,
            metadata: Metadata::new(),
            body: Vec::new(),
        }
    }

    /// Adds a metadata entry (builder style).
    pub fn with_meta(mut self, key: impl Into<String>, value: impl Into<String>) -> Response {
        self.metadata.insert(key, value);
        self
    }

    /// Sets the body (builder style).
    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> Response {
        self.body = body.into();
        self
    }

    /// An error response with the markdown body `# Title\n\nmessage\n`.
    pub fn error(status: Status, title: &str, message: &str) -> Response {
        Response::new(status).with_body(format!("# {title}\n\n{message}\n"))
    }

    /// An error response titled after its status (`# Not found\n\nmessage\n`).
    pub fn error_for(status: Status, message: &str) -> Response {
        let title = status.title().to_string();
        Response::error(status, &title, message)
    }

    /// A metadata value by key.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.metadata.get(key)
    }

    /// Encodes the response; `status` is written first, then the metadata.
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        if self.metadata.get("status").is_some() {
            return Err(WireError::StatusInMetadata);
        }
        let mut all = Metadata::new();
        all.insert("status", self.status.as_str());
        for (k, v) in self.metadata.iter() {
            all.insert(k, v);
        }
        let block = write_block(&all)?;
        let mut out = Vec::with_capacity(block.len() + self.body.len() + 8);
        out.extend_from_slice(b"---\n");
        out.extend_from_slice(block.as_bytes());
        out.extend_from_slice(b"---\n");
        out.extend_from_slice(&self.body);
        Ok(out)
    }

    /// Parses a complete response as a client receives it. The caller bounds
    /// `bytes` (the client reads at most its response cap).
    pub fn parse(bytes: &[u8]) -> Result<Response, WireError> {
        if !bytes.starts_with(b"---\n") && !bytes.starts_with(b"---\r\n") {
            return Err(WireError::MissingFrontmatter);
        }
        let (mut metadata, body) = split_optional_block(bytes, MAX_METADATA)?;
        let status = metadata.remove("status").ok_or(WireError::MissingStatus)?;
        Ok(Response {
            status: Status::parse(&status),
            metadata,
            body: body.to_vec(),
        })
    }

    /// The body as text, when it is UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.body).ok()
    }

    /// The message of an error body (`# Title\n\nmessage`), without the title
    /// and leading blank lines; the whole body when it has no title.
    pub fn error_message(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let text = text.trim_start_matches(['\n', '\r']);
        let rest = match text.strip_prefix("# ") {
            Some(r) => r.split_once('\n').map(|x| x.1).unwrap_or(""),
            None => text,
        };
        rest.trim().to_string()
    }
}

/// Checks a request path: starts with `/`, no NUL, no control characters
/// below 32 except tab, no DEL, no space (the line has exactly one space).
pub fn check_path(path: &str) -> Result<(), WireError> {
    if !path.starts_with('/') {
        return Err(WireError::BadPath("the path must start with /"));
    }
    if path.contains(' ') {
        return Err(WireError::BadPath("the path must not contain a space"));
    }
    if path.bytes().any(|b| (b < 32 && b != b'\t') || b == 127) {
        return Err(WireError::BadPath(
            "the path must not contain control characters",
        ));
    }
    Ok(())
}

/// Whether `bytes` starts with a `---` delimiter line.
fn opens_block(bytes: &[u8]) -> bool {
    bytes == b"---" || bytes.starts_with(b"---\n") || bytes.starts_with(b"---\r\n")
}

/// Splits an optional `---` metadata block off the front of `bytes`. The
/// block holds at most `max` bytes between its delimiters.
pub(crate) fn split_optional_block(
    bytes: &[u8],
    max: usize,
) -> Result<(Metadata, &[u8]), WireError> {
    let open_len = if bytes.starts_with(b"---\n") {
        4
    } else if bytes.starts_with(b"---\r\n") {
        5
    } else {
        return Ok((Metadata::new(), bytes));
    };
    let after = &bytes[open_len..];
    let mut line_start = 0;
    while line_start <= max {
        let rest = &after[line_start..];
        let (line, next) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..i], line_start + i + 1),
            None => (rest, after.len()),
        };
        if line.strip_suffix(b"\r").unwrap_or(line) == b"---" {
            let text = std::str::from_utf8(&after[..line_start])
                .map_err(|_| WireError::NotUtf8("metadata"))?;
            return Ok((parse_block(text)?, &after[next..]));
        }
        if next == after.len() {
            return Err(WireError::UnclosedMetadata);
        }
        line_start = next;
    }
    Err(WireError::MetadataTooLarge(line_start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_round_trips_with_metadata_and_body() {
        let req = Request::new(Verb::Publish, "/notes/a.md")
            .with_meta("auth", "secret")
            .with_meta("expected-version", "3")
            .with_body("# Title\n\nbody\n");
        let bytes = req.encode().unwrap();
        assert_eq!(
            bytes,
            b"PUBLISH /notes/a.md\n---\nauth: secret\nexpected-version: \"3\"\n---\n# Title\n\nbody\n"
        );
        assert_eq!(Request::parse(&bytes).unwrap(), req);
    }

    #[test]
    fn bare_request_is_one_line() {
        let req = Request::new(Verb::Fetch, "/doc.md");
        assert_eq!(req.encode().unwrap(), b"FETCH /doc.md\n");
        assert_eq!(Request::parse(b"FETCH /doc.md\n").unwrap(), req);
    }

    #[test]
    fn body_with_frontmatter_survives_without_metadata() {
        let req = Request::new(Verb::Publish, "/a.md").with_body("---\ntitle: A\n---\n# A\n");
        let bytes = req.encode().unwrap();
        assert!(bytes.starts_with(b"PUBLISH /a.md\n---\n---\n---\ntitle"));
        assert_eq!(Request::parse(&bytes).unwrap(), req);
    }

    #[test]
    fn request_line_limit_is_4096_bytes_with_newline() {
        let fits = format!("/{}", "a".repeat(MAX_REQUEST_LINE - "FETCH /\n".len()));
        let req = Request::new(Verb::Fetch, fits.clone());
        let bytes = req.encode().unwrap();
        assert_eq!(bytes.len(), MAX_REQUEST_LINE);
        assert_eq!(Request::parse(&bytes).unwrap().path, fits);
        let over = format!("{fits}a");
        assert!(matches!(
            Request::new(Verb::Fetch, over.clone()).encode(),
            Err(WireError::RequestLineTooLong(4097))
        ));
        let raw = format!("FETCH {over}\n");
        assert!(matches!(
            Request::parse(raw.as_bytes()),
            Err(WireError::RequestLineTooLong(_))
        ));
    }

    #[test]
    fn request_line_rules() {
        for (raw, want) in [
            (&b"FETCH /a"[..], "newline"),
            (b"FETCH  /a\n", "path"),
            (b"FETCH /a b\n", "path"),
            (b"FETCH a\n", "path"),
            (b"FETCH /a\r\n", "path"),
            (b"FETCH /a\x7f\n", "path"),
            (b"FETCH /a\0\n", "path"),
            (b"fetch /a\n", "verb"),
            (b"GET /a\n", "verb"),
            (b"FETCH\n", "line"),
            (b"FETCH /\xff\n", "utf8"),
        ] {
            let got = Request::parse(raw);
            let ok = match want {
                "newline" => matches!(got, Err(WireError::MissingNewline)),
                "path" => matches!(got, Err(WireError::BadPath(_))),
                "verb" => matches!(got, Err(WireError::UnknownVerb(_))),
                "line" => matches!(got, Err(WireError::BadRequestLine)),
                _ => matches!(got, Err(WireError::NotUtf8(_))),
            };
            assert!(ok, "{raw:?} gave {got:?}");
        }
        assert_eq!(Request::parse(b"FETCH /a\tb\n").unwrap().path, "/a\tb");
    }

    #[test]
    fn metadata_limit_is_64_kib() {
        let value = "x".repeat(MAX_METADATA - "k: \n".len());
        let req = Request::new(Verb::Lookup, "/").with_meta("k", value.clone());
        let bytes = req.encode().unwrap();
        assert_eq!(
            Request::parse(&bytes).unwrap().metadata.get("k"),
            Some(value.as_str())
        );
        let over = Request::new(Verb::Lookup, "/").with_meta("k", format!("{value}x"));
        assert!(matches!(over.encode(), Err(WireError::MetadataTooLarge(_))));
        let raw = format!("LOOKUP /\n---\nk: {value}x\n---\n");
        assert!(matches!(
            Request::parse(raw.as_bytes()),
            Err(WireError::MetadataTooLarge(_))
        ));
        let unclosed = format!("LOOKUP /\n---\n{}", "k: v\n".repeat(20_000));
        assert!(matches!(
            Request::parse(unclosed.as_bytes()),
            Err(WireError::MetadataTooLarge(_))
        ));
    }

    #[test]
    fn unclosed_block_is_an_error() {
        assert!(matches!(
            Request::parse(b"FETCH /a\n---\nk: v\n"),
            Err(WireError::UnclosedMetadata)
        ));
        assert!(matches!(
            Response::parse(b"---\nstatus: ok\n"),
            Err(WireError::UnclosedMetadata)
        ));
    }

    #[test]
    fn response_reads_reference_server_output() {
        let raw = b"---\ncontent-hash: sha256-ab\netag: ab\nmodified: \"2026-02-17T10:00:00Z\"\nstatus: ok\nversion: \"3\"\n---\n# Doc\n";
        let resp = Response::parse(raw).unwrap();
        assert_eq!(resp.status, Status::Ok);
        assert_eq!(resp.meta("version"), Some("3"));
        assert_eq!(resp.meta("modified"), Some("2026-02-17T10:00:00Z"));
        assert_eq!(resp.meta("status"), None);
        assert_eq!(resp.body, b"# Doc\n");
    }

    #[test]
    fn response_accepts_crlf_and_closing_at_end() {
        let resp = Response::parse(b"---\r\nstatus: not-modified\r\n---").unwrap();
        assert_eq!(resp.status, Status::NotModified);
        assert!(resp.body.is_empty());
    }

    #[test]
    fn response_errors() {
        assert!(matches!(
            Response::parse(b"status: ok\n"),
            Err(WireError::MissingFrontmatter)
        ));
        assert!(matches!(
            Response::parse(b""),
            Err(WireError::MissingFrontmatter)
        ));
        assert!(matches!(
            Response::parse(b"---\nversion: 1\n---\n"),
            Err(WireError::MissingStatus)
        ));
        assert!(matches!(
            Response::parse(b"---\nstatus: ok\ngarbage\n---\n"),
            Err(WireError::BadMetadataLine(_))
        ));
        assert!(matches!(
            Response::parse(b"---\nstatus: \xff\n---\n"),
            Err(WireError::NotUtf8(_))
        ));
    }

    #[test]
    fn response_round_trips_and_never_touches_the_body() {
        let resp = Response::new(Status::Ok)
            .with_meta("version", "3")
            .with_meta("entries", "2")
            .with_body("\n\n---\nnot metadata\n---\n");
        let bytes = resp.encode().unwrap();
        assert!(bytes.starts_with(b"---\nstatus: ok\nversion: \"3\"\n"));
        assert_eq!(Response::parse(&bytes).unwrap(), resp);
    }

    #[test]
    fn response_metadata_cannot_override_status() {
        let resp = Response::new(Status::Ok).with_meta("status", "not-found");
        assert!(matches!(resp.encode(), Err(WireError::StatusInMetadata)));
    }

    #[test]
    fn unknown_status_is_kept() {
        let resp = Response::parse(b"---\nstatus: teapot\n---\n").unwrap();
        assert_eq!(resp.status, Status::Other("teapot".into()));
        assert_eq!(resp.encode().unwrap(), b"---\nstatus: teapot\n---\n");
    }

    #[test]
    fn every_status_and_verb_round_trips() {
        for v in Verb::ALL {
            assert_eq!(Verb::parse(v.as_str()), Some(v));
            assert_eq!(v.is_idempotent(), !v.is_write());
        }
        for s in [
            Status::Ok,
            Status::Created,
            Status::NotModified,
            Status::NotFound,
            Status::Archived,
            Status::Unauthorized,
            Status::NotPermitted,
            Status::ServerError,
            Status::Conflict,
            Status::BadRequest,
            Status::TooLarge,
            Status::Unavailable,
        ] {
            assert_eq!(Status::parse(s.as_str()), s);
            assert!(!matches!(Status::parse(s.as_str()), Status::Other(_)));
        }
        assert!(Status::Created.is_success() && !Status::NotFound.is_success());
    }

    #[test]
    fn error_bodies() {
        let resp = Response::error_for(Status::NotFound, "No document at /a.md.");
        assert_eq!(resp.body, b"# Not found\n\nNo document at /a.md.\n");
        assert_eq!(resp.error_message(), "No document at /a.md.");
        // The reference server starts error bodies with a blank line.
        let reference = Response::new(Status::NotFound).with_body("\n# Not found\n\ngone\n");
        assert_eq!(reference.error_message(), "gone");
        let untitled = Response::new(Status::ServerError).with_body("plain words\n");
        assert_eq!(untitled.error_message(), "plain words");
    }
}
