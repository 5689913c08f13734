//! A small, deliberately misbehaving QUIC server for the client tests:
//! real quinn and rustls on 127.0.0.1, a fresh self-signed certificate, and
//! a behaviour chosen per test.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use quinn::crypto::rustls::QuicServerConfig;
use quinn::{Connection, Endpoint, RecvStream, SendStream, VarInt};
use rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer};
use sha2::{Digest, Sha256};

/// What the server does with one request.
pub enum Action {
    /// Write these bytes and finish the stream.
    Reply(Vec<u8>),
    /// Write one byte every 50 ms and never finish.
    Trickle,
    /// Reset the stream with this code.
    Reset(u32),
    /// Close the whole connection without answering.
    CloseConnection,
}

/// Decides the action from the connection's index (0 for the first
/// accepted connection) and the raw request bytes.
pub type Behaviour = Arc<dyn Fn(usize, &[u8]) -> Action + Send + Sync>;

pub struct ServerOptions {
    pub alpn: Vec<u8>,
    pub max_streams: u32,
    /// Past this many request bytes the server stops reading and answers
    /// `too-large`, as mark-server does.
    pub max_request: usize,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            alpn: b"mark".to_vec(),
            max_streams: 100,
            max_request: 1 << 20,
        }
    }
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub fingerprint: [u8; 32],
    pub cert_pem: String,
    accepted: Arc<AtomicUsize>,
    connections: Arc<Mutex<Vec<Connection>>>,
    endpoint: Endpoint,
}

impl TestServer {
    pub fn start(behaviour: impl Fn(usize, &[u8]) -> Action + Send + Sync + 'static) -> TestServer {
        TestServer::start_with(ServerOptions::default(), behaviour)
    }

    pub fn start_with(
        options: ServerOptions,
        behaviour: impl Fn(usize, &[u8]) -> Action + Send + Sync + 'static,
    ) -> TestServer {
        let made = rcgen::generate_simple_self_signed(vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
        ])
        .unwrap();
        let cert: CertificateDer<'static> = made.cert.der().clone();
        let key = PrivatePkcs8KeyDer::from(made.signing_key.serialize_der());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], key.into())
            .unwrap();
        tls.alpn_protocols = vec![options.alpn];
        let max_request = options.max_request;
        let mut config =
            quinn::ServerConfig::with_crypto(Arc::new(QuicServerConfig::try_from(tls).unwrap()));
        let mut transport = quinn::TransportConfig::default();
        transport.max_concurrent_bidi_streams(VarInt::from_u32(options.max_streams));
        config.transport_config(Arc::new(transport));
        let endpoint = Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap();
        let server = TestServer {
            addr: endpoint.local_addr().unwrap(),
            fingerprint: Sha256::digest(cert.as_ref()).into(),
            cert_pem: made.cert.pem(),
            accepted: Arc::default(),
            connections: Arc::default(),
            endpoint: endpoint.clone(),
        };
        let behaviour: Behaviour = Arc::new(behaviour);
        let accepted = server.accepted.clone();
        let connections = server.connections.clone();
        tokio::spawn(async move {
            while let Some(incoming) = endpoint.accept().await {
                let index = accepted.fetch_add(1, Ordering::SeqCst);
                let behaviour = behaviour.clone();
                let connections = connections.clone();
                tokio::spawn(async move {
                    let Ok(connection) = incoming.await else {
                        return;
                    };
                    connections.lock().unwrap().push(connection.clone());
                    while let Ok((send, recv)) = connection.accept_bi().await {
                        let behaviour = behaviour.clone();
                        let connection = connection.clone();
                        tokio::spawn(serve_stream(
                            index,
                            connection,
                            send,
                            recv,
                            behaviour,
                            max_request,
                        ));
                    }
                });
            }
        });
        server
    }

    /// How many connections the server has accepted (handshakes started).
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Closes every connection the server holds.
    pub fn close_connections(&self) {
        for connection in self.connections.lock().unwrap().drain(..) {
            connection.close(VarInt::from_u32(0), b"server closing");
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.endpoint.close(VarInt::from_u32(0), b"test over");
    }
}

async fn serve_stream(
    index: usize,
    connection: Connection,
    mut send: SendStream,
    mut recv: RecvStream,
    behaviour: Behaviour,
    max_request: usize,
) {
    let action = match recv.read_to_end(max_request).await {
        Ok(request) => behaviour(index, &request),
        Err(quinn::ReadToEndError::TooLong) => {
            let _ = recv.stop(VarInt::from_u32(0));
            let answer = mark_proto::Response::error_for(
                mark_proto::Status::TooLarge,
                "The request is over the limit.",
            );
            Action::Reply(answer.encode().unwrap())
        }
        Err(_) => return,
    };
    match action {
        Action::Reply(bytes) => {
            let _ = send.write_all(&bytes).await;
            let _ = send.finish();
            let _ = send.stopped().await;
        }
        Action::Trickle => loop {
            if send.write_all(b"-").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        },
        Action::Reset(code) => {
            let _ = send.reset(VarInt::from_u32(code));
        }
        Action::CloseConnection => connection.close(VarInt::from_u32(1), b"closing on purpose"),
    }
}

/// A well-behaved answer: `ok`, echoing the request's path and auth.
pub fn echo(_: usize, request: &[u8]) -> Action {
    let parsed = mark_proto::Request::parse(request).unwrap();
    let mut response = mark_proto::Response::new(mark_proto::Status::Ok)
        .with_meta("path", parsed.path.clone())
        .with_body(format!("# Echo\n\n{} {}\n", parsed.verb, parsed.path));
    if let Some(auth) = parsed.metadata.get("auth") {
        response = response.with_meta("auth", auth);
    }
    Action::Reply(response.encode().unwrap())
}
