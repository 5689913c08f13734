//! Where documents come from: one trait whose one request method makes
//! everything above it (cache, dedup, fetch, lookup) the same for a Mark
//! server and a local folder; it also says where its changes can be heard.

use futures::future::BoxFuture;
use mark_proto::{Request, Response};

/// Why a request got no response at all (a response with an error status is
/// not a `SourceError`: it passes through to the agent).
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The QUIC client failed (connect, TLS, timeout, malformed answer, …).
    #[error(transparent)]
    Client(#[from] mark_client::ClientError),
    /// The in-process engine's worker thread failed.
    #[error("the local store stopped while answering ({0}); restart mark-mcp")]
    Local(String),
    /// The in-process engine did not answer in time (a read stalled on a
    /// slow or hung file system).
    #[error(
        "the folder did not answer within {} s (a slow or stalled file system); try again, or give more time with --timeout",
        .0.as_secs_f64()
    )]
    Stalled(std::time::Duration),
}

/// A place that answers Mark Protocol requests.
pub trait Source: Send + Sync {
    /// Sends one request and waits for its response.
    fn send(&self, req: Request) -> BoxFuture<'_, Result<Response, SourceError>>;

    /// The origin of this source's URLs, as [`mark_proto::MarkUrl::origin`]
    /// writes it: `mark://local` for a folder, `mark://host[:port]` for a server.
    fn origin(&self) -> String;

    /// One line saying what this source is, for logs and `get_info`.
    fn describe(&self) -> String;

    /// Why this source will refuse every write, when it knows before any
    /// request (a write preview then fails as the write would); `None` when
    /// only the answer to a write can tell (a server checks its token).
    fn refuses_writes(&self) -> Option<&'static str> {
        None
    }

    /// Where this source's changes can be heard (its change feed).
    fn change_source(&self) -> ChangeSource {
        ChangeSource::None
    }
}

/// Where a source's changes can be heard.
#[derive(Debug, Clone)]
pub enum ChangeSource {
    /// Nowhere: revalidation by `--fresh-for` only.
    None,
    /// A Mark server's `WATCH /` over this client's connection.
    Server {
        /// The client (its connection is shared with the requests).
        client: mark_client::Client,
        /// The server's host.
        host: String,
        /// The server's port.
        port: u16,
    },
    /// File events under a folder.
    Folder {
        /// The folder (canonical).
        root: std::path::PathBuf,
    },
}
