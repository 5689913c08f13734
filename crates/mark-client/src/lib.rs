//! The one QUIC client of the Mark Protocol.
//!
//! [`Client`] speaks the protocol over QUIC (quinn, rustls with the ring
//! provider, TLS 1.3 only, ALPN `mark`): one endpoint, one connection per
//! (host, port) reused by every request, one bidirectional stream per
//! request, many at once. A connection found dead is replaced; a read
//! request that fails because its connection was lost is sent once more on a
//! new one (writes never are). Every step has a timeout, responses are
//! capped, and every failure is a typed [`ClientError`] whose message says
//! what happened and what to do.
//!
//! Trust ([`Trust`]): the system roots by default, a CA file, a pinned
//! certificate fingerprint, or an explicit insecure mode for dev servers
//! (which still checks the handshake signature). An auth [`Token`] is sent
//! as `auth` metadata and never printed.
//!
//! [`Client::watch`] opens a WATCH on the same connection and gives its
//! blocks as they come ([`WatchStream`]); [`lacks_watch`] tells a server
//! without WATCH from one that refused for another reason.
//!
//! It is not a cache (mark-mcp caches), not a server, and does not
//! interpret responses beyond parsing them with `mark-proto`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), mark_client::ClientError> {
//! use mark_client::{Client, ClientConfig, Trust, parse_fingerprint};
//! use mark_proto::{Request, Verb};
//! let pin = parse_fingerprint("sha256:ab12…")?;
//! let client = Client::new(ClientConfig { trust: Trust::Pin(pin), ..Default::default() })?;
//! let response = client.request("127.0.0.1", 6309, Request::new(Verb::Fetch, "/doc.md")).await?;
//! println!("{}", response.status);
//! # Ok(()) }
//! ```

mod client;
mod config;
mod error;
mod tls;
mod watch;

pub use client::Client;
pub use config::{ClientConfig, Token, Trust, format_fingerprint, parse_fingerprint};
pub use error::ClientError;
pub use tls::rustls_client_config;
pub use watch::{WatchStart, WatchStream, lacks_watch};
