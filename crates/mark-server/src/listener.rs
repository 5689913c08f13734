//! The QUIC listener: one request per bidirectional stream, bounded in size,
//! time and concurrency, answered by the engine on the blocking pool.
//!
//! Every request is logged once at info level as `request VERB /path ->
//! status` (`request - - -> status` when the bytes were no request). Metadata
//! and bodies are never logged, so tokens never reach the log.

use crate::rate::{Rate, RateLimiter};
use crate::watch_stream::Watches;
use mark_proto::{MAX_METADATA, MAX_REQUEST_LINE, Request, Response, Status, WireError};
use quinn::{Endpoint, RecvStream, SendStream};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tracing::{debug, info, warn};

/// What answers a request: the engine, called on the blocking pool.
pub type Handler = Arc<dyn Fn(&Request, SystemTime) -> Response + Send + Sync>;

/// How much one peer may use.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest request in bytes (line + metadata + body).
    pub max_request: usize,
    /// Time a stream has to deliver its whole request, and then to take the
    /// whole response; a response the client keeps acknowledging gets up to
    /// [`SLOW_LINK_FACTOR`] times as long (a slow or lossy link).
    pub stream_timeout: Duration,
    /// Connections served at once; more are refused.
    pub max_connections: usize,
    /// Concurrent bidirectional streams per connection.
    pub max_streams: u32,
    /// Requests per second per client address (`None`: no limit). A stream
    /// over it is closed without a byte and its request is never read, so
    /// its slot of [`Limits::max_streams`] stays taken for the rest of the
    /// connection, as a demarkus server does (50/s, burst 100, 10 streams).
    pub rate: Option<Rate>,
}

impl Limits {
    /// The request cap for a document size limit: request line, both
    /// metadata delimiters, the metadata limit and the document.
    pub fn request_cap(max_document: usize) -> usize {
        MAX_REQUEST_LINE + 2 * "---\n".len() + MAX_METADATA + max_document
    }
}

/// How long a shutdown waits for requests in flight before closing.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How long a QUIC handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How many stream timeouts a response may take in all while the client
/// keeps acknowledging packets within each one.
pub const SLOW_LINK_FACTOR: u32 = 6;

/// QUIC transport settings for the server.
pub fn transport_config(limits: &Limits) -> quinn::TransportConfig {
    let mut transport = quinn::TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(limits.max_streams.into())
        .max_concurrent_uni_streams(0u8.into());
    transport
}

/// Serves until `shutdown` resolves, then stops accepting, lets requests in
/// flight finish (up to a grace period), ends open watches with `closing`
/// and closes the endpoint. Without `watches`, WATCH goes to the handler
/// like any request.
pub async fn serve(
    endpoint: Endpoint,
    handler: Handler,
    limits: Limits,
    watches: Option<Arc<Watches>>,
    shutdown: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let limiter = limits.rate.map(|rate| Arc::new(RateLimiter::new(rate)));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut connections = JoinSet::new();
    if let Some(w) = &watches {
        tokio::spawn(Arc::clone(w).recheck_until(stop_rx.clone()));
    }
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            incoming = endpoint.accept() => {
                let Some(incoming) = incoming else { break };
                let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
                    warn!(peer = %incoming.remote_address(), "connection refused: {} connections already open", limits.max_connections);
                    incoming.refuse();
                    continue;
                };
                let handler = Arc::clone(&handler);
                let stop = stop_rx.clone();
                let limiter = limiter.clone();
                let watches = watches.clone();
                connections.spawn(async move {
                    serve_connection(incoming, handler, limits, limiter, watches, stop).await;
                    drop(slot);
                });
            }
            () = &mut shutdown => break,
        }
        while connections.try_join_next().is_some() {}
    }
    info!("shutting down: finishing requests in flight");
    let _ = stop_tx.send(true);
    if tokio::time::timeout(SHUTDOWN_GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await
    .is_err()
    {
        warn!("requests still running after {SHUTDOWN_GRACE:?}; closing anyway");
    }
    endpoint.close(0u8.into(), b"server shutting down");
    let _ = tokio::time::timeout(Duration::from_secs(2), endpoint.wait_idle()).await;
}

async fn serve_connection(
    incoming: quinn::Incoming,
    handler: Handler,
    limits: Limits,
    limiter: Option<Arc<RateLimiter>>,
    watches: Option<Arc<Watches>>,
    mut stop: watch::Receiver<bool>,
) {
    let peer = incoming.remote_address();
    let connecting = match incoming.accept() {
        Ok(c) => c,
        Err(e) => {
            debug!(%peer, "handshake refused: {e}");
            return;
        }
    };
    let connection = match tokio::time::timeout(HANDSHAKE_TIMEOUT, connecting).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            debug!(%peer, "handshake failed: {e}");
            return;
        }
        Err(_) => {
            debug!(%peer, "handshake timed out");
            return;
        }
    };
    debug!(%peer, "connection open");
    let mut streams = JoinSet::new();
    let watching = Arc::new(AtomicUsize::new(0));
    // Streams over the rate: never read, so their slots stay taken.
    let mut unanswered: Vec<RecvStream> = Vec::new();
    loop {
        tokio::select! {
            accepted = connection.accept_bi() => match accepted {
                Ok((mut send, recv)) if limiter.as_ref().is_some_and(|l| !l.admit(peer.ip().to_canonical(), Instant::now())) => {
                    info!("stream closed unanswered: {peer} is over the request rate");
                    let _ = send.finish();
                    unanswered.push(recv);
                }
                Ok((send, recv)) => {
                    let stream = Stream {
                        connection: connection.clone(),
                        send,
                        recv,
                        watches: watches.clone(),
                        watching: Arc::clone(&watching),
                        stop: stop.clone(),
                    };
                    streams.spawn(serve_stream(stream, Arc::clone(&handler), limits));
                }
                Err(e) => {
                    debug!(%peer, "connection closed: {e}");
                    break;
                }
            },
            _ = stop.changed() => break,
        }
        while streams.try_join_next().is_some() {}
    }
    // Every stream is bounded by the stream timeout (a watch ends at the
    // stop with `closing`), so this ends.
    while streams.join_next().await.is_some() {}
}

/// One request stream and what a watch on it needs.
struct Stream {
    connection: quinn::Connection,
    send: SendStream,
    recv: RecvStream,
    watches: Option<Arc<Watches>>,
    /// Watches open on this connection.
    watching: Arc<AtomicUsize>,
    stop: watch::Receiver<bool>,
}

async fn serve_stream(stream: Stream, handler: Handler, limits: Limits) {
    let Stream {
        connection,
        mut send,
        mut recv,
        watches,
        watching,
        mut stop,
    } = stream;
    let read =
        tokio::time::timeout(limits.stream_timeout, recv.read_to_end(limits.max_request)).await;
    let (label, response) = match read {
        Err(_) => {
            let _ = recv.stop(0u8.into());
            let message = format!(
                "The request was not complete within {} ms; send the whole request and finish the stream.",
                limits.stream_timeout.as_millis()
            );
            (
                None,
                Response::error(Status::BadRequest, "Bad request", &message),
            )
        }
        Ok(Err(quinn::ReadToEndError::TooLong)) => {
            let _ = recv.stop(0u8.into());
            // Name the limit the sender controls (the document's), not the
            // request cap that adds the line and metadata limits to it.
            let message = format!(
                "The request is too large: a document on this server takes at most {} bytes; split it into several documents.",
                limits.max_request.saturating_sub(Limits::request_cap(0))
            );
            (
                None,
                Response::error(Status::TooLarge, "Too large", &message),
            )
        }
        Ok(Err(quinn::ReadToEndError::Read(e))) => {
            // The peer reset the stream or the connection is gone: nobody to answer.
            debug!("stream read failed: {e}");
            return;
        }
        Ok(Ok(bytes)) => match Request::parse(&bytes) {
            Err(e) => (None, wire_error_response(&e)),
            Ok(request) if request.verb == mark_proto::Verb::Watch && watches.is_some() => {
                if let Some(w) = &watches {
                    w.serve(
                        request,
                        &connection,
                        &mut send,
                        &watching,
                        &mut stop,
                        &limits,
                    )
                    .await;
                }
                return;
            }
            Ok(request) => {
                let label = Some((request.verb, request.path.clone()));
                (
                    label,
                    answer(request, &handler, limits.stream_timeout).await,
                )
            }
        },
    };
    match &label {
        Some((verb, path)) => info!("request {verb} {path} -> {}", response.status),
        None => info!("request - - -> {}", response.status),
    }
    let bytes = response.encode().unwrap_or_else(|e| {
        warn!("response could not be encoded: {e}");
        internal_error_bytes()
    });
    write_bounded(&connection, &mut send, &bytes, &limits).await;
}

/// Writes a whole response and finishes the stream, within the stream
/// timeout (longer while the client keeps acknowledging); resets it when
/// that runs out.
pub(crate) async fn write_bounded(
    connection: &quinn::Connection,
    send: &mut SendStream,
    bytes: &[u8],
    limits: &Limits,
) {
    let write = async {
        send.write_all(bytes).await?;
        send.finish()?;
        // Stay until the peer has the whole response: a connection dropped
        // at shutdown would otherwise discard data still in flight.
        send.stopped().await?;
        Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    };
    match while_acknowledged(connection, limits.stream_timeout, write).await {
        Some(Ok(())) => {}
        Some(Err(e)) => debug!("response write failed: {e}"),
        None => {
            debug!("response write timed out");
            let _ = send.reset(0u8.into());
        }
    }
}

/// Runs `work` for one `timeout`, and again for each further `timeout` in
/// which the peer acknowledged something (it is alive, the link is slow), up
/// to [`SLOW_LINK_FACTOR`] in all; `None` when it ran out.
pub(crate) async fn while_acknowledged<T>(
    connection: &quinn::Connection,
    timeout: Duration,
    work: impl Future<Output = T>,
) -> Option<T> {
    tokio::pin!(work);
    let mut acks = connection.stats().frame_rx.acks;
    for _ in 0..SLOW_LINK_FACTOR {
        if let Ok(done) = tokio::time::timeout(timeout, &mut work).await {
            return Some(done);
        }
        let now = connection.stats().frame_rx.acks;
        if now == acks {
            return None;
        }
        acks = now;
    }
    None
}

/// Runs the engine on the blocking pool (it does file I/O), for at most
/// `deadline`: a read that stalls there (a hung file system) answers
/// `server-error` rather than holding the stream. The thread it blocks is
/// not freed (a blocked read cannot be cancelled), and does not keep the
/// process alive after a shutdown.
async fn answer(request: Request, handler: &Handler, deadline: Duration) -> Response {
    let handler = Arc::clone(handler);
    let (verb, path) = (request.verb, request.path.clone());
    let work = tokio::task::spawn_blocking(move || handler(&request, SystemTime::now()));
    match tokio::time::timeout(deadline, work).await {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => {
            warn!("the engine failed on a request: {e}");
            Response::error(
                Status::ServerError,
                "Server error",
                "The server failed on this request; try again later.",
            )
        }
        Err(_) => {
            warn!(
                "the store did not answer {verb} {path} within {} ms",
                deadline.as_millis()
            );
            Response::error(
                Status::ServerError,
                "Server error",
                &format!(
                    "The store did not answer within {} ms (a slow or stalled file system); try again later.",
                    deadline.as_millis()
                ),
            )
        }
    }
}

/// `too-large` for requests over a protocol limit, `bad-request` otherwise.
fn wire_error_response(error: &WireError) -> Response {
    match error {
        WireError::RequestLineTooLong(_) | WireError::MetadataTooLarge(_) => {
            Response::error(Status::TooLarge, "Too large", &error.to_string())
        }
        _ => Response::error(Status::BadRequest, "Bad request", &error.to_string()),
    }
}

fn internal_error_bytes() -> Vec<u8> {
    b"---\nstatus: server-error\n---\n# Server error\n\nThe response could not be encoded.\n"
        .to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_limits_map_to_too_large_and_the_rest_to_bad_request() {
        let long = format!("FETCH /{}\n", "a".repeat(5000));
        let resp = wire_error_response(&Request::parse(long.as_bytes()).unwrap_err());
        assert_eq!(resp.status, Status::TooLarge);
        let resp = wire_error_response(&Request::parse(b"FETCH doc.md\n").unwrap_err());
        assert_eq!(resp.status, Status::BadRequest);
        assert!(resp.error_message().contains("start with /"));
    }

    #[test]
    fn fallback_error_is_a_valid_response() {
        let resp = Response::parse(&internal_error_bytes()).unwrap();
        assert_eq!(resp.status, Status::ServerError);
    }

    #[test]
    fn request_cap_covers_every_part() {
        assert_eq!(Limits::request_cap(0), 4096 + 8 + 65536);
    }
}
