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
}

impl Verb {
    /// Every verb, in protocol order.
    pub const ALL: [Verb; 7] = [
        Verb::Fetch,
        Verb::List,
        Verb::Versions,
        Verb::Lookup,
        Verb::Publish,
        Verb::Append,
        Verb::Archive,
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
        if !self.metadata.is_empty() {
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
        let line = std::str::from_utf8(&bytes[..nl]).map_err(|_| WireError::NotUtf8("request line"))?;
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

    /// A metadata value by key.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.metadata.get(key)
    }

    /// Encodes the response; `status` is written first, then the metadata.
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
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
    if path
        .bytes()
        .any(|b| (b < 32 && b != b'\t') || b == 127)
    {
        return Err(WireError::BadPath("the path must not contain control characters"));
    }
    Ok(())
}

/// Splits an optional `---` metadata block off the front of `bytes`.
fn split_optional_block(bytes: &[u8], max: usize) -> Result<(Metadata, &[u8]), WireError> {
    let open_len = if bytes.starts_with(b"---\n") {
        4
    } else if bytes.starts_with(b"---\r\n") {
        5
    } else {
        return Ok((Metadata::new(), bytes));
    };
    let after = &bytes[open_len..];
    // Find the closing `---` line within the limit.
    let mut pos = 0;
    loop {
        if pos > max {
            return Err(WireError::MetadataTooLarge(pos));
        }
        let line_end = match after[pos..].iter().position(|&b| b == b'\n') {
            Some(i) => pos + i,
            None if after[pos..].strip_suffix(b"\r").unwrap_or(&after[pos..]) == b"---" => {
                let text = std::str::from_utf8(&after[..pos]).map_err(|_| WireError::NotUtf8("metadata"))?;
                return Ok((parse_block(text)?, &[]));
            }
            None => {
                return Err(if after.len() > max {
                    WireError::MetadataTooLarge(after.len())
                } else {
                    WireError::UnclosedMetadata
                });
            }
        };
        let line = &after[pos..line_end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line == b"---" {
            if pos > max {
                return Err(WireError::MetadataTooLarge(pos));
            }
            let text = std::str::from_utf8(&after[..pos]).map_err(|_| WireError::NotUtf8("metadata"))?;
            let meta = parse_block(text)?;
            return Ok((meta, &after[line_end + 1..]));
        }
        pos = line_end + 1;
    }
}
