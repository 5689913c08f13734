//! The client: one QUIC endpoint, one connection per (host, port) shared by
//! every request, one bidirectional stream per request.

use std::collections::HashMap;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared, WeakShared};
use mark_proto::{MarkUrl, Request, Response, Verb};
use quinn::{
    Connection, ConnectionError, Endpoint, ReadError, RecvStream, TransportErrorCode, VarInt,
    WriteError,
};
use tokio::time::Instant;

use crate::config::ClientConfig;
use crate::error::ClientError;
use crate::tls::{FailureSlot, TlsSetup, TrustFailure};

/// The TLS alert `no_application_protocol` (RFC 7301), as a QUIC error code.
const NO_APPLICATION_PROTOCOL: u8 = 120;
/// QUIC error codes 0x100..=0x1ff carry a TLS alert.
const CRYPTO_ERRORS: std::ops::RangeInclusive<u64> = 0x100..=0x1ff;
/// Stands in for a deadline past what the clock can represent.
const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
/// How long [`Client::close`] waits for the server to acknowledge.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// A Mark Protocol client. Cheap to clone (all clones share one endpoint
/// and its connections); `Send + Sync`.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

/// One handshake, awaited by every request that needs its connection.
type Handshake = Shared<BoxFuture<'static, Result<Connection, ClientError>>>;

/// The connection to one (host, port), or the handshake under way.
enum Slot {
    Connected(Connection),
    /// Held weakly: when every waiting request gave up (its deadline passed,
    /// it was dropped), the handshake is dropped too and the next request
    /// starts afresh. The number tells this handshake from a later one.
    Connecting(
        WeakShared<BoxFuture<'static, Result<Connection, ClientError>>>,
        u64,
    ),
}

struct Inner {
    endpoint: Endpoint,
    tls: TlsSetup,
    transport: Arc<quinn::TransportConfig>,
    config: ClientConfig,
    /// One slot per (host, port), locked only to read or replace it: the
    /// handshake runs outside the lock and is shared by concurrent requests,
    /// so its failure reaches all of them at once.
    connections: std::sync::Mutex<HashMap<(String, u16), Slot>>,
    /// Numbers the handshakes.
    handshakes: std::sync::atomic::AtomicU64,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client with its own QUIC endpoint on an ephemeral UDP port. Call it
    /// inside a tokio runtime. Fails when the trust settings cannot be
    /// loaded (no system roots, unreadable CA file) or no socket opens.
    pub fn new(config: ClientConfig) -> Result<Client, ClientError> {
        let tls = TlsSetup::new(&config.trust)?;
        if config.keep_alive_interval >= config.idle_timeout {
            return Err(ClientError::Config(format!(
                "the keep-alive interval {:?} must be shorter than the idle timeout {:?}",
                config.keep_alive_interval, config.idle_timeout
            )));
        }
        let mut transport = quinn::TransportConfig::default();
        transport.keep_alive_interval(Some(config.keep_alive_interval));
        let idle = quinn::IdleTimeout::try_from(config.idle_timeout)
            .map_err(|e| ClientError::Config(e.to_string()))?;
        transport.max_idle_timeout(Some(idle));
        // A server never opens streams towards a client.
        transport.max_concurrent_bidi_streams(VarInt::from_u32(0));
        transport.max_concurrent_uni_streams(VarInt::from_u32(0));
        Ok(Client {
            inner: Arc::new(Inner {
                endpoint: open_endpoint()?,
                tls,
                transport: Arc::new(transport),
                config,
                connections: std::sync::Mutex::new(HashMap::new()),
                handshakes: std::sync::atomic::AtomicU64::new(0),
            }),
        })
    }

    /// Sends one request to `host:port` and reads the whole response, all
    /// within one deadline (`request_timeout` from the call): resolving,
    /// the handshake, a retry and the response share it.
    ///
    /// The connection to `host:port` is opened on first use and shared by
    /// all later and concurrent requests; concurrent first requests wait on
    /// one handshake and all see its failure. A connection found closed is
    /// replaced before the request goes out; a read request (FETCH, LIST,
    /// VERSIONS, LOOKUP) that fails because its connection was lost is sent
    /// once more on a new connection, a write never is. A request that times
    /// out on a connection that heard nothing from the server meanwhile
    /// closes it, so the next one starts afresh; one the server closed without
    /// answering ([`ClientError::NoAnswer`]) leaves its connection to the
    /// requests already on it. The
    /// configured token is added as `auth` unless the request carries its own.
    pub async fn request(
        &self,
        host: &str,
        port: u16,
        request: Request,
    ) -> Result<Response, ClientError> {
        let request = self.with_token(request);
        let bytes = request.encode().map_err(ClientError::Encode)?;
        let deadline = deadline_after(self.inner.config.request_timeout);
        let connection = self.connection(host, port, deadline).await?;
        let acknowledged = AtomicBool::new(false);
        match self
            .inner
            .exchange(&connection, &bytes, request.verb, deadline, &acknowledged)
            .await
        {
            Err(e) if e.is_connection_lost() && request.verb.is_idempotent() => {
                tracing::debug!(host, port, verb = %request.verb, "connection lost; sending again on a new connection");
                let connection = self.connection(host, port, deadline).await?;
                self.inner
                    .exchange(&connection, &bytes, request.verb, deadline, &acknowledged)
                    .await
            }
            Err(ClientError::RequestTimeout { timeout })
                if !acknowledged.load(Ordering::Relaxed) =>
            {
                // A silent peer (a server that crashed and came back on the
                // same port never answers the old connection; a link that
                // went dark) would keep this connection until its idle
                // timeout: drop it, and the next request reconnects. A peer
                // that acknowledged this request is alive (just slow), and
                // its connection carries other requests: it stays. (Counting
                // any acknowledgement instead raced with late ones for the
                // previous request.)
                connection.close(VarInt::from_u32(0), b"request timed out");
                Err(ClientError::StoppedAnswering { timeout })
            }
            Err(ClientError::NoAnswer) => {
                // A server over its request rate (demarkus) closes the stream
                // unread and never frees its slot: later requests go on a new
                // connection, and this one closes once its streams are done.
                self.inner.retire(host, port, &connection);
                Err(ClientError::NoAnswer)
            }
            result => result,
        }
    }

    /// `request` with the configured token as `auth`, unless it carries its own.
    pub(crate) fn with_token(&self, mut request: Request) -> Request {
        if let Some(token) = &self.inner.config.token
            && request.metadata.get("auth").is_none()
        {
            request.metadata.insert("auth", token.expose());
        }
        request
    }

    /// The configuration this client was made with.
    pub(crate) fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// FETCHes `url` (its path, version suffix included; never its
    /// fragment), conditionally when `if_none_match` is an etag.
    pub async fn fetch(
        &self,
        url: &MarkUrl,
        if_none_match: Option<&str>,
    ) -> Result<Response, ClientError> {
        let mut request = Request::new(Verb::Fetch, url.path());
        if let Some(etag) = if_none_match {
            request = request.with_meta("if-none-match", etag);
        }
        self.request(url.host(), url.port(), request).await
    }

    /// Closes every connection politely and waits (briefly) for the servers
    /// to acknowledge. Later requests open new connections.
    pub async fn close(&self) {
        let slots: Vec<Slot> = self.inner.slots().drain().map(|(_, s)| s).collect();
        for slot in slots {
            if let Slot::Connected(connection) = slot {
                connection.close(VarInt::from_u32(0), b"client closing");
            }
        }
        let _ = tokio::time::timeout(CLOSE_GRACE, self.inner.endpoint.wait_idle()).await;
    }

    /// The live connection to `host:port` by `deadline`: the one kept, the
    /// handshake under way, or a new handshake that later requests join.
    pub(crate) async fn connection(
        &self,
        host: &str,
        port: u16,
        deadline: Instant,
    ) -> Result<Connection, ClientError> {
        let key = (host.to_ascii_lowercase(), port);
        let (handshake, number) = {
            let mut slots = self.inner.slots();
            let running = match slots.get(&key) {
                Some(Slot::Connected(c)) if c.close_reason().is_none() => return Ok(c.clone()),
                Some(Slot::Connecting(weak, n)) => weak.upgrade().map(|h| (h, *n)),
                _ => None,
            };
            running.unwrap_or_else(|| {
                let inner = Arc::clone(&self.inner);
                let (host, number) = (
                    host.to_string(),
                    inner.handshakes.fetch_add(1, Ordering::Relaxed),
                );
                let handshake: Handshake = async move { inner.connect(&host, port).await }
                    .boxed()
                    .shared();
                if let Some(weak) = handshake.downgrade() {
                    slots.insert(key.clone(), Slot::Connecting(weak, number));
                }
                (handshake, number)
            })
        };
        let result = tokio::time::timeout_at(deadline, handshake)
            .await
            .unwrap_or_else(|_| {
                Err(ClientError::ConnectTimeout {
                    server: format!("{host}:{port}"),
                    timeout: self.inner.config.request_timeout,
                })
            });
        let mut slots = self.inner.slots();
        // Only the handshake still in the slot is settled here: a later one
        // (this one failed and another request started anew) is left alone.
        if matches!(slots.get(&key), Some(Slot::Connecting(_, n)) if *n == number) {
            match &result {
                Ok(connection) => slots.insert(key, Slot::Connected(connection.clone())),
                Err(_) => slots.remove(&key),
            };
        }
        result
    }
}

/// `timeout` from now; a timeout too large for the clock means no deadline
/// worth keeping.
pub(crate) fn deadline_after(timeout: Duration) -> Instant {
    Instant::now()
        .checked_add(timeout)
        .unwrap_or_else(|| Instant::now() + FAR_FUTURE)
}

impl Inner {
    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<(String, u16), Slot>> {
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes `connection` out of use for `host:port` (if it is still the one
    /// kept): the next request opens a new one.
    fn retire(&self, host: &str, port: u16, connection: &Connection) {
        let key = (host.to_ascii_lowercase(), port);
        let mut slots = self.slots();
        if matches!(slots.get(&key), Some(Slot::Connected(c)) if c.stable_id() == connection.stable_id())
        {
            slots.remove(&key);
        }
    }

    /// The longest a handshake may take, as its timeout message names it.
    fn handshake_bound(&self) -> Duration {
        self.config.connect_timeout.min(self.config.request_timeout)
    }

    /// Resolves `host` and runs the QUIC handshake, within `connect_timeout`
    /// when one is set (each request waiting on it also keeps its own deadline).
    async fn connect(&self, host: &str, port: u16) -> Result<Connection, ClientError> {
        let deadline = deadline_after(self.config.connect_timeout);
        let timeout = self.handshake_bound();
        // An IPv6 literal may come in URL brackets; the TLS name is the bare IP.
        let server_name = host.trim_start_matches('[').trim_end_matches(']');
        let candidates = tokio::time::timeout_at(deadline, self.resolve(server_name, port))
            .await
            .map_err(|_| ClientError::Resolve {
                host: host.to_string(),
                reason: format!("no answer within {timeout:?}"),
            })??;
        self.connect_any(&candidates, server_name, deadline).await
    }

    /// Races one handshake per candidate address (a name often resolves to
    /// both `::1` and `127.0.0.1` while the server listens on one of them);
    /// the first to finish wins and the others are dropped. When all fail,
    /// the first failure is reported.
    async fn connect_any(
        &self,
        candidates: &[SocketAddr],
        server_name: &str,
        deadline: Instant,
    ) -> Result<Connection, ClientError> {
        let timeout = self.handshake_bound();
        let mut attempts = tokio::task::JoinSet::new();
        for &addr in candidates {
            let (crypto, failure) = self.tls.for_connection()?;
            let mut quic = quinn::ClientConfig::new(crypto);
            quic.transport_config(self.transport.clone());
            let connecting = self
                .endpoint
                .connect_with(quic, addr, server_name)
                .map_err(|e| ClientError::Connect {
                    addr,
                    reason: e.to_string(),
                })?;
            attempts.spawn(async move { (addr, failure, connecting.await) });
        }
        let mut first_failure: Option<ClientError> = None;
        let race = async {
            while let Some(joined) = attempts.join_next().await {
                match joined {
                    Ok((addr, _, Ok(connection))) => {
                        tracing::debug!(%addr, server_name, "connected");
                        return Some(connection);
                    }
                    Ok((addr, failure, Err(e))) => {
                        first_failure.get_or_insert_with(|| {
                            handshake_error(e, &failure, server_name, addr, timeout)
                        });
                    }
                    Err(e) => {
                        first_failure.get_or_insert_with(|| ClientError::Connect {
                            addr: candidates[0],
                            reason: e.to_string(),
                        });
                    }
                }
            }
            None
        };
        match tokio::time::timeout_at(deadline, race).await {
            Ok(Some(connection)) => Ok(connection),
            // A refusal seen before the deadline says more than the timeout.
            Ok(None) | Err(_) => Err(first_failure.unwrap_or(ClientError::ConnectTimeout {
                server: candidates[0].to_string(),
                timeout,
            })),
        }
    }

    /// The addresses of `host` worth a handshake: the first of each address
    /// family this endpoint can reach, in the resolver's order.
    async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, ClientError> {
        let resolve_error = |reason: String| ClientError::Resolve {
            host: host.to_string(),
            reason,
        };
        let ipv4_only = self
            .endpoint
            .local_addr()
            .map(|a| a.is_ipv4())
            .unwrap_or(false);
        let mut candidates: Vec<SocketAddr> = Vec::with_capacity(2);
        for addr in tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| resolve_error(e.to_string()))?
        {
            let reachable = addr.is_ipv4() || !ipv4_only;
            if reachable && !candidates.iter().any(|c| c.is_ipv4() == addr.is_ipv4()) {
                candidates.push(addr);
            }
        }
        if candidates.is_empty() {
            return Err(resolve_error(
                "it has no address this machine can reach".to_string(),
            ));
        }
        Ok(candidates)
    }

    /// One request on its own stream, by the request's deadline.
    async fn exchange(
        &self,
        connection: &Connection,
        request: &[u8],
        verb: Verb,
        deadline: Instant,
        acknowledged: &AtomicBool,
    ) -> Result<Response, ClientError> {
        let timeout = self.config.request_timeout;
        let raw = tokio::time::timeout_at(
            deadline,
            self.send_and_read(connection, request, verb, acknowledged),
        )
        .await
        .map_err(|_| ClientError::RequestTimeout { timeout })??;
        if raw.is_empty() {
            return Err(ClientError::NoAnswer);
        }
        Response::parse(&raw).map_err(ClientError::Malformed)
    }

    async fn send_and_read(
        &self,
        connection: &Connection,
        request: &[u8],
        verb: Verb,
        acknowledged: &AtomicBool,
    ) -> Result<Vec<u8>, ClientError> {
        let (mut send, mut recv) = connection.open_bi().await.map_err(connection_lost)?;
        let cap = self.config.max_response_bytes;
        match send.write_all(request).await {
            Ok(()) => {
                // Finishing tells the server the request is complete; it fails
                // only when the stream is already gone, which the read reports.
                let _ = send.finish();
                // The peer acknowledging every request byte (or stopping the
                // stream) is the sign of life a timeout is judged by.
                let note_acknowledged = async {
                    if send.stopped().await.is_ok() {
                        acknowledged.store(true, Ordering::Relaxed);
                    }
                    std::future::pending().await
                };
                tokio::select! {
                    answer = read_capped(&mut recv, cap, verb) => answer,
                    never = note_acknowledged => never,
                }
            }
            // The server stopped reading (a request over its limit, say) but
            // may still answer why.
            Err(WriteError::Stopped(code)) => {
                acknowledged.store(true, Ordering::Relaxed);
                match read_capped(&mut recv, cap, verb).await {
                    Ok(answer) if !answer.is_empty() => Ok(answer),
                    Ok(_) | Err(ClientError::StreamReset { .. }) => Err(ClientError::StreamReset {
                        code: code.into_inner(),
                    }),
                    Err(other) => Err(other),
                }
            }
            Err(WriteError::ConnectionLost(e)) => Err(connection_lost(e)),
            Err(other) => Err(ClientError::ConnectionLost {
                reason: other.to_string(),
            }),
        }
    }
}

/// Reads the whole stream, holding at most `cap` bytes: past the cap the
/// stream is stopped and the bytes are dropped.
async fn read_capped(
    recv: &mut RecvStream,
    cap: usize,
    verb: Verb,
) -> Result<Vec<u8>, ClientError> {
    let mut buf = Vec::new();
    loop {
        // One byte past the cap is enough to know it is exceeded.
        match recv
            .read_chunk((cap - buf.len()).saturating_add(1), true)
            .await
        {
            Ok(Some(chunk)) => {
                buf.extend_from_slice(&chunk.bytes);
                if buf.len() > cap {
                    let _ = recv.stop(VarInt::from_u32(0));
                    return Err(ClientError::TooLarge { cap, verb });
                }
            }
            Ok(None) => return Ok(buf),
            Err(ReadError::Reset(code)) => {
                return Err(ClientError::StreamReset {
                    code: code.into_inner(),
                });
            }
            Err(ReadError::ConnectionLost(e)) => return Err(connection_lost(e)),
            Err(other) => {
                return Err(ClientError::ConnectionLost {
                    reason: other.to_string(),
                });
            }
        }
    }
}

pub(crate) fn connection_lost(e: ConnectionError) -> ClientError {
    ClientError::ConnectionLost {
        reason: e.to_string(),
    }
}

/// Turns a failed handshake into the error that says why: a refusal the
/// verifier recorded, a refused ALPN, another TLS failure, a timeout.
fn handshake_error(
    e: ConnectionError,
    failure: &FailureSlot,
    host: &str,
    addr: SocketAddr,
    timeout: Duration,
) -> ClientError {
    let recorded = failure
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(failure) = recorded {
        return match failure {
            TrustFailure::Untrusted {
                reason,
                fingerprint,
            } => ClientError::CertificateUntrusted {
                host: host.to_string(),
                reason,
                fingerprint,
            },
            TrustFailure::PinMismatch { expected, got } => ClientError::PinMismatch {
                host: host.to_string(),
                expected,
                got,
            },
        };
    }
    let code = match &e {
        ConnectionError::ConnectionClosed(close) => Some(close.error_code),
        ConnectionError::TransportError(t) => Some(t.code),
        _ => None,
    };
    match code {
        Some(code) if code == TransportErrorCode::crypto(NO_APPLICATION_PROTOCOL) => {
            ClientError::Alpn {
                host: host.to_string(),
            }
        }
        Some(code) if CRYPTO_ERRORS.contains(&u64::from(code)) => ClientError::Tls {
            host: host.to_string(),
            reason: e.to_string(),
        },
        _ if matches!(e, ConnectionError::TimedOut) => ClientError::ConnectTimeout {
            server: addr.to_string(),
            timeout,
        },
        _ => ClientError::Connect {
            addr,
            reason: e.to_string(),
        },
    }
}

/// A dual-stack socket when the machine has IPv6, else an IPv4 one.
fn open_endpoint() -> Result<Endpoint, ClientError> {
    Endpoint::client(SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0)))
        .or_else(|_| Endpoint::client(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))))
        .map_err(|e| ClientError::Endpoint(e.to_string()))
}

/// The misbehaving test server of the integration tests, for the unit tests
/// that need a real peer.
#[cfg(test)]
#[path = "../tests/support/mod.rs"]
mod test_support;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Trust;

    use super::test_support as support;

    fn client(trust: Trust, connect_timeout: Duration) -> Client {
        Client::new(ClientConfig {
            trust,
            connect_timeout,
            ..ClientConfig::default()
        })
        .unwrap()
    }

    #[tokio::test]
    async fn the_address_that_answers_wins_the_race() {
        let server = support::TestServer::start(support::echo);
        // A socket that never answers, as ::1 does when the server listens on
        // 127.0.0.1 only.
        let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let client = client(Trust::Pin(server.fingerprint), Duration::from_secs(5));
        let deadline = Instant::now() + Duration::from_secs(5);
        let candidates = [silent.local_addr().unwrap(), server.addr];
        let started = Instant::now();
        let connection = client
            .inner
            .connect_any(&candidates, "127.0.0.1", deadline)
            .await
            .unwrap();
        // A dual-stack endpoint reports the IPv4-mapped form.
        let remote = connection.remote_address();
        assert_eq!(
            (remote.ip().to_canonical(), remote.port()),
            (server.addr.ip(), server.addr.port())
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "took {:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn a_refusal_says_more_than_a_timeout() {
        let server = support::TestServer::start(support::echo);
        let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let client = client(Trust::Pin([1; 32]), Duration::from_millis(500));
        let deadline = Instant::now() + Duration::from_millis(500);
        let candidates = [silent.local_addr().unwrap(), server.addr];
        let err = client
            .inner
            .connect_any(&candidates, "127.0.0.1", deadline)
            .await
            .unwrap_err();
        assert!(matches!(err, ClientError::PinMismatch { .. }), "{err}");
    }

    #[tokio::test]
    async fn resolving_keeps_one_address_per_family() {
        let client = client(Trust::Insecure, Duration::from_secs(5));
        let candidates = client.inner.resolve("127.0.0.1", 6309).await.unwrap();
        assert_eq!(candidates, vec![SocketAddr::from(([127, 0, 0, 1], 6309))]);
    }
}
