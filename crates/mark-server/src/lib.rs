//! The Mark Protocol listener as a library: quinn (rustls with the ring
//! provider, TLS 1.3 only, ALPN `mark`), one request per bidirectional
//! stream within size and time limits, answered by
//! [`mark_store::Engine::handle`] on the blocking pool; WATCH streams
//! change hints ([`Watches`]: the logic in [`watch`], the driver beside it).
//!
//! The `mark-server` binary is a thin command line over this; `mark-mcp
//! demo` uses [`serve_in_background`] to serve its bundled knowledge base
//! from inside its own process.

pub mod listener;
pub mod rate;
pub mod tls;
pub mod watch;
mod watch_stream;

pub use listener::{Handler, Limits, serve};
pub use rate::Rate;
pub use tls::{ServerIdentity, TlsSetupError};
pub use watch_stream::{WatchConfig, Watches};

use mark_store::Engine;
use std::net::SocketAddr;
use std::sync::Arc;

/// Why an endpoint could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The certificate or TLS configuration.
    #[error(transparent)]
    Tls(#[from] TlsSetupError),
    /// The UDP socket could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// A QUIC endpoint bound to `listen` that presents `identity` with the
/// transport settings `limits` ask for. Needs a running tokio runtime.
pub fn endpoint(
    listen: SocketAddr,
    identity: ServerIdentity,
    limits: &Limits,
) -> Result<quinn::Endpoint, ServeError> {
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(identity.quic_config()?));
    config.transport_config(Arc::new(listener::transport_config(limits)));
    quinn::Endpoint::server(config, listen).map_err(|source| ServeError::Bind {
        addr: listen,
        source,
    })
}

/// The handler that answers every request with `engine`.
pub fn engine_handler(engine: Arc<Engine>) -> Handler {
    Arc::new(move |request, now| engine.handle(request, now))
}

/// A server running on a task of the current runtime until
/// [`BackgroundServer::stop`] (or until it is dropped).
#[derive(Debug)]
pub struct BackgroundServer {
    /// The bound address (the real port when 0 was asked for).
    pub addr: SocketAddr,
    /// SHA-256 of the certificate it presents, for clients to pin.
    pub fingerprint: [u8; 32],
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl BackgroundServer {
    /// Stops accepting, lets requests in flight finish and waits for it.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for BackgroundServer {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// Serves `engine` on `listen` with a self-signed certificate for its IP,
/// on a task of the current tokio runtime.
pub fn serve_in_background(
    engine: Arc<Engine>,
    listen: SocketAddr,
    limits: Limits,
) -> Result<BackgroundServer, ServeError> {
    let identity = ServerIdentity::self_signed(listen.ip())?;
    let fingerprint = identity.fingerprint;
    let endpoint = endpoint(listen, identity, &limits)?;
    let addr = endpoint.local_addr().map_err(|source| ServeError::Bind {
        addr: listen,
        source,
    })?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let watches = Watches::new(Arc::clone(&engine), WatchConfig::default());
    let task = tokio::spawn(serve(
        endpoint,
        engine_handler(engine),
        limits,
        Some(watches),
        async move {
            let _ = stopped.await;
        },
    ));
    Ok(BackgroundServer {
        addr,
        fingerprint,
        stop: Some(stop),
        task: Some(task),
    })
}
