//! Client errors: each message is one sentence saying what happened and
//! what to do about it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use mark_proto::{Verb, WireError};
use thiserror::Error;

/// Why a request did not produce a response.
#[derive(Debug, Clone, Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The host name did not resolve to an address.
    #[error("could not resolve `{host}` ({reason}); check the host name and your network")]
    Resolve {
        /// The host as given.
        host: String,
        /// What the resolver said.
        reason: String,
    },
    /// The QUIC handshake did not finish within the request's deadline
    /// (or the connect timeout, when one is set and shorter).
    #[error(
        "no answer from {server} within {timeout:?}; check the host and port and that a Mark server is running there"
    )]
    ConnectTimeout {
        /// `host:port` or the address tried.
        server: String,
        /// The bound that ran out.
        timeout: Duration,
    },
    /// The connection could not be set up (unreachable, refused, closed
    /// during the handshake).
    #[error(
        "could not connect to {addr} ({reason}); check the host and port and that a Mark server is running there"
    )]
    Connect {
        /// The address tried.
        addr: SocketAddr,
        /// What went wrong.
        reason: String,
    },
    /// The TLS handshake failed for a reason other than trust.
    #[error(
        "the TLS handshake with {host} failed ({reason}); check that the server speaks TLS 1.3 over QUIC"
    )]
    Tls {
        /// The server name.
        host: String,
        /// What went wrong.
        reason: String,
    },
    /// The server's certificate is not trusted by the configured roots.
    #[error(
        "the certificate of {host} is not trusted ({reason}); if you trust this server, pin it with --pin {fingerprint}, or use --insecure for a dev server"
    )]
    CertificateUntrusted {
        /// The server name.
        host: String,
        /// Why the verifier refused it.
        reason: String,
        /// `sha256:<hex>` of the certificate the server presented.
        fingerprint: String,
    },
    /// The server's certificate is not the pinned one.
    #[error(
        "the certificate of {host} does not match the pin (expected {expected}, got {got}); check that you reach the right server, or update the pin if its certificate changed"
    )]
    PinMismatch {
        /// The server name.
        host: String,
        /// The pinned fingerprint, `sha256:<hex>`.
        expected: String,
        /// The presented fingerprint, `sha256:<hex>`.
        got: String,
    },
    /// The server does not offer the `mark` ALPN protocol.
    #[error(
        "the server at {host} does not speak the Mark Protocol (it refused ALPN `mark`); check the host and port"
    )]
    Alpn {
        /// The server name.
        host: String,
    },
    /// No complete response within the request timeout.
    #[error(
        "no complete response within {timeout:?}; the server may be slow or overloaded, so retry or raise the request timeout"
    )]
    RequestTimeout {
        /// The request timeout.
        timeout: Duration,
    },
    /// The server did not even acknowledge the request while it waited: the
    /// server or the network between went silent. The connection is
    /// dropped, so the next request reconnects.
    #[error(
        "the server stopped answering (nothing came back within {timeout:?}, not even an acknowledgement of the request); check the network and that the server runs, then retry: the next request reconnects"
    )]
    StoppedAnswering {
        /// The request timeout.
        timeout: Duration,
    },
    /// The response is larger than the configured cap.
    #[error("{}", too_large(*cap, *verb))]
    TooLarge {
        /// The cap in bytes.
        cap: usize,
        /// The request's verb (what to ask for instead depends on it).
        verb: Verb,
    },
    /// The response bytes are not a Mark Protocol response.
    #[error(
        "the server sent a malformed response ({0}); check that the host and port belong to a Mark Protocol server"
    )]
    Malformed(#[source] WireError),
    /// The server ended the response stream without a byte: what a server
    /// limiting requests does (demarkus closes a stream over its rate,
    /// 50 requests a second per client, that way), not a malformed answer.
    #[error(
        "the server closed the stream without answering; it may be limiting how many requests a client sends, so wait a moment and retry"
    )]
    NoAnswer,
    /// The connection died while the request was in flight.
    #[error(
        "the connection to the server was lost ({reason}); retry the request, and for a write fetch the document first to see whether it was applied"
    )]
    ConnectionLost {
        /// What quinn reported.
        reason: String,
    },
    /// The server reset the stream (or stopped reading the request).
    #[error(
        "the server abandoned the request stream (code {code}); retry, or check the server's logs"
    )]
    StreamReset {
        /// The application error code.
        code: u64,
    },
    /// The request itself cannot be encoded.
    #[error("the request cannot be sent ({0}); fix its path or metadata")]
    Encode(#[source] WireError),
    /// The local QUIC endpoint could not be opened.
    #[error(
        "could not open a local UDP socket for QUIC ({0}); create the client inside a tokio runtime and check that UDP is allowed"
    )]
    Endpoint(String),
    /// The settings cannot be turned into a QUIC/TLS configuration.
    #[error("the client configuration is unusable ({0}); check the trust and timeout settings")]
    Config(String),
    /// A CA file could not be read or holds no certificate.
    #[error(
        "could not load CA certificates from {path} ({reason}); pass a PEM file with at least one certificate"
    )]
    CaFile {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// No system root certificate could be loaded.
    #[error(
        "no system root certificates could be loaded ({0}); install the ca-certificates package, or trust the server with --ca-file, --pin or --insecure"
    )]
    NoSystemRoots(String),
    /// A `--pin` value that is not a SHA-256 fingerprint.
    #[error(
        "`{0}` is not a SHA-256 fingerprint; write sha256: followed by 64 hex digits (colons between bytes allowed)"
    )]
    BadFingerprint(String),
}

impl ClientError {
    /// Whether the error says the connection was already dead, so that an
    /// idempotent request may be sent again on a new connection.
    pub(crate) fn is_connection_lost(&self) -> bool {
        matches!(self, ClientError::ConnectionLost { .. })
    }
}

/// The over-cap sentence for an answer to `verb`: what was too large, and
/// what to ask for instead.
fn too_large(cap: usize, verb: Verb) -> String {
    let what = match verb {
        Verb::Lookup => {
            "LOOKUP's table is larger than this client's {cap}-byte cap; ask for fewer rows (a lower limit), narrower words or a smaller scope"
        }
        Verb::List => {
            "the listing is larger than this client's {cap}-byte cap; list a smaller folder"
        }
        Verb::Versions => "the history is larger than this client's {cap}-byte cap",
        _ => {
            "the response is larger than this client's {cap}-byte cap, and a section or page is cut from the whole document so it is no smaller; split the document on the server"
        }
    };
    format!(
        "{}, or raise the cap (mark-mcp --max-response-bytes)",
        what.replace("{cap}", &cap.to_string())
    )
}
