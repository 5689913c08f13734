//! The Mark Protocol wire format, and nothing else.
//!
//! This crate turns requests and responses into bytes and back
//! ([`Request`], [`Response`], [`Status`], [`Verb`], [`Metadata`]), parses
//! `mark://` URLs ([`MarkUrl`]) and reads and writes the bodies the protocol
//! defines: LIST entries ([`list`]), VERSIONS lines ([`versions`]), LOOKUP
//! tables ([`lookup`]), WATCH's stream of blocks ([`watch`]), what an APPEND writes ([`append`]) and error bodies ([`Response::error`],
//! [`Response::error_message`]). Every parser is bounded and returns a
//! [`WireError`] on bad input; none panics.
//!
//! It is not a client or a server: it has no sockets, no clock and no async
//! runtime. `mark-client` drives it over QUIC and `mark-store` answers
//! requests with it. See `PROTOCOL.md` in the shared folder for the protocol
//! itself.
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

pub mod append;
mod error;
pub mod list;
pub mod lookup;
mod markdown;
mod message;
mod meta;
mod url;
pub mod versions;
pub mod watch;

pub use error::WireError;
pub use message::{MAX_METADATA, MAX_REQUEST_LINE, Request, Response, Status, Verb, check_path};
pub use meta::{Metadata, is_valid_key};
pub use url::MarkUrl;

/// The default UDP port of the Mark Protocol.
pub const DEFAULT_PORT: u16 = 6309;
/// The ALPN protocol id.
pub const ALPN: &[u8] = b"mark";
