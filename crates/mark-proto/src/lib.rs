//! The Mark Protocol wire format, and nothing else.
//!
//! This crate turns requests and responses into bytes and back, parses
//! `mark://` URLs and reads and writes the bodies the protocol defines (LIST
//! entries, VERSIONS lines, LOOKUP tables, error bodies). It has no sockets,
//! no clock and no async runtime: `mark-client` drives it over QUIC and
//! `mark-store` answers requests with it. See `PROTOCOL.md` in the shared
//! folder for the protocol itself.
//!
//! ```
//! use mark_proto::{Request, Response, Status, Verb};
//! let req = Request::new(Verb::Fetch, "/doc.md").with_meta("if-none-match", "abc");
//! let bytes = req.encode().unwrap();
//! assert_eq!(Request::parse(&bytes).unwrap(), req);
//! let resp = Response::parse(b"---\nversion: \"3\"\nstatus: ok\n---\n# Hi\n").unwrap();
//! assert_eq!(resp.status, Status::Ok);
//! assert_eq!(resp.meta("version"), Some("3"));
//! ```

mod error;
mod message;
mod meta;

pub use error::WireError;
pub use message::{MAX_METADATA, MAX_REQUEST_LINE, Request, Response, Status, Verb, check_path};
pub use meta::Metadata;

/// The default UDP port of the Mark Protocol.
pub const DEFAULT_PORT: u16 = 6309;
/// The ALPN protocol id.
pub const ALPN: &[u8] = b"mark";
