//! The client against a hostile QUIC server on 127.0.0.1: each misbehaviour
//! gives the right typed error within its timeout.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};

use mark_client::{Client, ClientConfig, ClientError, Token, Trust, format_fingerprint};
use mark_proto::{MarkUrl, Request, Status, Verb, WireError};
use mark_testkit::{LinkShape, UdpRelay};
use support::{Action, ServerOptions, TestServer, echo};

/// Every test finishes well within this, or fails instead of hanging.
const GUARD: Duration = Duration::from_secs(20);

fn pinned(server: &TestServer) -> ClientConfig {
    ClientConfig {
        trust: Trust::Pin(server.fingerprint),
        connect_timeout: Duration::from_secs(3),
        request_timeout: Duration::from_secs(5),
        ..ClientConfig::default()
    }
}

fn trusting(server: &TestServer, trust: Trust) -> Client {
    Client::new(ClientConfig {
        trust,
        ..pinned(server)
    })
    .unwrap()
}

async fn fetch(
    client: &Client,
    server: &TestServer,
    path: &str,
) -> Result<mark_proto::Response, ClientError> {
    tokio::time::timeout(
        GUARD,
        client.request("127.0.0.1", server.port(), Request::new(Verb::Fetch, path)),
    )
    .await
    .expect("the request outlived the test guard")
}

#[tokio::test]
async fn pinned_echo_round_trip() {
    let server = TestServer::start(echo);
    let client = Client::new(pinned(&server)).unwrap();
    let response = fetch(&client, &server, "/doc.md").await.unwrap();
    assert_eq!(response.status, Status::Ok);
    assert_eq!(response.meta("path"), Some("/doc.md"));
    assert_eq!(response.text(), Some("# Echo\n\nFETCH /doc.md\n"));
}

#[tokio::test]
async fn fetch_by_url_sends_the_path_and_not_the_fragment() {
    let server = TestServer::start(echo);
    let client = Client::new(pinned(&server)).unwrap();
    let url = MarkUrl::new("127.0.0.1", server.port(), "/dir/doc.md/v2#section").unwrap();
    let response = client.fetch(&url, Some("abc")).await.unwrap();
    assert_eq!(response.meta("path"), Some("/dir/doc.md/v2"));
}

#[tokio::test]
async fn token_is_sent_as_auth_and_never_printed() {
    let server = TestServer::start(echo);
    let client = Client::new(ClientConfig {
        token: Some(Token::new("s3cret-token")),
        ..pinned(&server)
    })
    .unwrap();
    let response = fetch(&client, &server, "/a.md").await.unwrap();
    assert_eq!(response.meta("auth"), Some("s3cret-token"));
    assert!(!format!("{client:?}").contains("s3cret"));
    // A request's own auth wins over the configured token.
    let own = Request::new(Verb::Fetch, "/a.md").with_meta("auth", "other");
    let response = client
        .request("127.0.0.1", server.port(), own)
        .await
        .unwrap();
    assert_eq!(response.meta("auth"), Some("other"));
}

#[tokio::test]
async fn garbage_bytes_are_malformed() {
    let server = TestServer::start(|_, _| Action::Reply(vec![0xff, 0x00, 0x13, 0x37, b'\n', 0xfe]));
    let client = Client::new(pinned(&server)).unwrap();
    let err = fetch(&client, &server, "/a.md").await.unwrap_err();
    assert!(
        matches!(err, ClientError::Malformed(WireError::MissingFrontmatter)),
        "{err}"
    );
}

#[tokio::test]
async fn a_stream_closed_without_a_byte_is_no_answer_not_malformed() {
    // As demarkus ends a stream over its request rate.
    let server = TestServer::start(|_, _| Action::Reply(Vec::new()));
    let client = Client::new(pinned(&server)).unwrap();
    let err = fetch(&client, &server, "/a.md").await.unwrap_err();
    assert!(matches!(err, ClientError::NoAnswer), "{err}");
    assert!(err.to_string().contains("may be limiting"), "{err}");
}

#[tokio::test]
async fn a_response_without_frontmatter_is_malformed() {
    let server = TestServer::start(|_, _| Action::Reply(b"# Just markdown\n".to_vec()));
    let client = Client::new(pinned(&server)).unwrap();
    let err = fetch(&client, &server, "/a.md").await.unwrap_err();
    assert!(
        matches!(err, ClientError::Malformed(WireError::MissingFrontmatter)),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "the server sent a malformed response (the response does not start with a `---` frontmatter block); check that the host and port belong to a Mark Protocol server"
    );
}

#[tokio::test]
async fn a_response_without_status_is_malformed() {
    let server =
        TestServer::start(|_, _| Action::Reply(b"---\nversion: \"1\"\n---\nbody\n".to_vec()));
    let client = Client::new(pinned(&server)).unwrap();
    let err = fetch(&client, &server, "/a.md").await.unwrap_err();
    assert!(
        matches!(err, ClientError::Malformed(WireError::MissingStatus)),
        "{err}"
    );
}

#[tokio::test]
async fn a_body_over_the_cap_is_refused_and_one_at_the_cap_is_read() {
    const CAP: usize = 4096;
    let head = b"---\nstatus: ok\n---\n";
    let server = TestServer::start(move |_, request| {
        let size = if request
            .split(|b| *b == b'\n')
            .next()
            .is_some_and(|l| l.ends_with(b"/big.md"))
        {
            1 << 20
        } else {
            CAP - head.len()
        };
        let mut bytes = head.to_vec();
        bytes.resize(head.len() + size, b'x');
        Action::Reply(bytes)
    });
    let client = Client::new(ClientConfig {
        max_response_bytes: CAP,
        ..pinned(&server)
    })
    .unwrap();
    let err = fetch(&client, &server, "/big.md").await.unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::TooLarge {
                cap: CAP,
                verb: Verb::Fetch
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("split the document"), "{err}");
    // A LOOKUP table over the cap is told in LOOKUP's words.
    let err = client
        .request(
            "127.0.0.1",
            server.addr.port(),
            Request::new(Verb::Lookup, "/big.md").with_meta("query", "x"),
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with("LOOKUP's table is larger"),
        "{err}"
    );
    assert!(err.to_string().contains("a lower limit"), "{err}");
    let exact = fetch(&client, &server, "/exact.md").await.unwrap();
    assert_eq!(exact.body.len(), CAP - head.len());
}

#[tokio::test]
async fn unbounded_limits_neither_overflow_nor_panic() {
    let server = TestServer::start(echo);
    let client = Client::new(ClientConfig {
        max_response_bytes: usize::MAX,
        connect_timeout: Duration::MAX,
        request_timeout: Duration::MAX,
        ..pinned(&server)
    })
    .unwrap();
    assert_eq!(
        fetch(&client, &server, "/a.md").await.unwrap().status,
        Status::Ok
    );
}

#[tokio::test]
async fn a_trickling_server_hits_the_request_timeout() {
    let server = TestServer::start(|_, _| Action::Trickle);
    let timeout = Duration::from_millis(600);
    let client = Client::new(ClientConfig {
        request_timeout: timeout,
        ..pinned(&server)
    })
    .unwrap();
    let started = Instant::now();
    let err = fetch(&client, &server, "/slow.md").await.unwrap_err();
    assert!(
        matches!(err, ClientError::RequestTimeout { timeout: t } if t == timeout),
        "{err}"
    );
    assert!(
        started.elapsed() < timeout * 4,
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_request_the_server_stops_reading_still_gets_its_answer() {
    let server = TestServer::start_with(
        ServerOptions {
            max_request: 1024,
            ..ServerOptions::default()
        },
        echo,
    );
    let client = Client::new(pinned(&server)).unwrap();
    let huge = Request::new(Verb::Publish, "/big.md").with_body(vec![b'x'; 4 << 20]);
    let response = tokio::time::timeout(GUARD, client.request("127.0.0.1", server.port(), huge))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(response.status, Status::TooLarge);
    assert_eq!(response.error_message(), "The request is over the limit.");
}

#[tokio::test]
async fn a_slow_request_leaves_the_shared_connection_open() {
    let server = TestServer::start(|index, request: &[u8]| {
        if request.starts_with(b"FETCH /slow") {
            Action::Trickle
        } else {
            echo(index, request)
        }
    });
    let client = Client::new(ClientConfig {
        request_timeout: Duration::from_millis(600),
        ..pinned(&server)
    })
    .unwrap();
    let err = fetch(&client, &server, "/slow.md").await.unwrap_err();
    assert!(matches!(err, ClientError::RequestTimeout { .. }), "{err}");
    // The server acknowledged the request, so it is alive: its connection stays.
    assert_eq!(
        fetch(&client, &server, "/fast.md").await.unwrap().status,
        Status::Ok
    );
    assert_eq!(server.accepted(), 1);
}

#[tokio::test]
async fn a_server_that_came_back_gets_a_new_connection_after_a_timeout() {
    let first = TestServer::start(echo);
    let relay = UdpRelay::start(first.addr, LinkShape::CLEAN, 1).unwrap();
    // The same certificate cannot be reused by a second test server, so trust any.
    let client = Client::new(ClientConfig {
        trust: Trust::Insecure,
        request_timeout: Duration::from_millis(500),
        connect_timeout: Duration::from_secs(3),
        ..ClientConfig::default()
    })
    .unwrap();
    let port = relay.addr().port();
    let request = || client.request("127.0.0.1", port, Request::new(Verb::Fetch, "/a.md"));
    assert_eq!(request().await.unwrap().status, Status::Ok);
    // The server "restarts": a new process behind the same address knows
    // nothing of the old connection and never answers it.
    let second = TestServer::start(echo);
    relay.retarget(second.addr);
    let mut timeouts = 0;
    let response = loop {
        match tokio::time::timeout(GUARD, request()).await.unwrap() {
            Ok(response) => break response,
            Err(ClientError::StoppedAnswering { .. }) if timeouts < 2 => timeouts += 1,
            Err(other) => panic!("after {timeouts} timeouts: {other}"),
        }
    };
    assert_eq!(response.status, Status::Ok);
    assert!(timeouts >= 1, "the old connection cannot have answered");
    assert_eq!(second.accepted(), 1);
}

#[tokio::test]
async fn a_reset_stream_is_reported_with_its_code() {
    let server = TestServer::start(|_, _| Action::Reset(7));
    let client = Client::new(pinned(&server)).unwrap();
    let err = fetch(&client, &server, "/a.md").await.unwrap_err();
    assert!(matches!(err, ClientError::StreamReset { code: 7 }), "{err}");
}

#[tokio::test]
async fn a_wrong_alpn_is_named() {
    let server = TestServer::start_with(
        ServerOptions {
            alpn: b"h3".to_vec(),
            ..ServerOptions::default()
        },
        echo,
    );
    let client = Client::new(pinned(&server)).unwrap();
    let err = fetch(&client, &server, "/a.md").await.unwrap_err();
    assert!(matches!(err, ClientError::Alpn { .. }), "{err}");
}

#[tokio::test]
async fn a_certificate_that_does_not_match_the_pin_is_refused() {
    let server = TestServer::start(echo);
    let client = trusting(&server, Trust::Pin([7; 32]));
    let err = fetch(&client, &server, "/a.md").await.unwrap_err();
    match &err {
        ClientError::PinMismatch { expected, got, .. } => {
            assert_eq!(expected, &format_fingerprint(&[7; 32]));
            assert_eq!(got, &format_fingerprint(&server.fingerprint));
        }
        other => panic!("expected a pin mismatch, got {other}"),
    }
}

#[tokio::test]
async fn a_self_signed_certificate_is_untrusted_by_the_system_roots() {
    let server = TestServer::start(echo);
    let client = trusting(&server, Trust::SystemRoots);
    let err = fetch(&client, &server, "/a.md").await.unwrap_err();
    match &err {
        ClientError::CertificateUntrusted { fingerprint, .. } => {
            assert_eq!(fingerprint, &format_fingerprint(&server.fingerprint));
            // The message tells the user how to pin this very certificate.
            assert!(
                err.to_string().contains(&format!("--pin {fingerprint}")),
                "{err}"
            );
        }
        other => panic!("expected an untrusted certificate, got {other}"),
    }
}

#[tokio::test]
async fn insecure_mode_accepts_a_self_signed_certificate() {
    let server = TestServer::start(echo);
    let client = trusting(&server, Trust::Insecure);
    assert_eq!(
        fetch(&client, &server, "/a.md").await.unwrap().status,
        Status::Ok
    );
}

#[tokio::test]
async fn a_ca_file_holding_the_certificate_trusts_it() {
    let server = TestServer::start(echo);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ca.pem");
    std::fs::write(&path, &server.cert_pem).unwrap();
    let client = trusting(&server, Trust::CaFile(path));
    assert_eq!(
        fetch(&client, &server, "/a.md").await.unwrap().status,
        Status::Ok
    );
}

#[tokio::test]
async fn a_ca_file_without_certificates_fails_at_creation() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let err = Client::new(ClientConfig {
        trust: Trust::CaFile(empty),
        ..ClientConfig::default()
    })
    .unwrap_err();
    assert!(matches!(err, ClientError::CaFile { .. }), "{err}");
    let err = Client::new(ClientConfig {
        trust: Trust::CaFile(dir.path().join("missing.pem")),
        ..ClientConfig::default()
    })
    .unwrap_err();
    assert!(matches!(err, ClientError::CaFile { .. }), "{err}");
}

#[tokio::test]
async fn a_host_name_is_resolved_and_verified_by_name() {
    // The certificate names `localhost`; the CA file makes it trusted, so the
    // handshake checks the name the client was given.
    let server = TestServer::start(echo);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ca.pem");
    std::fs::write(&path, &server.cert_pem).unwrap();
    let client = trusting(&server, Trust::CaFile(path));
    let response = tokio::time::timeout(
        GUARD,
        client.request(
            "localhost",
            server.port(),
            Request::new(Verb::Fetch, "/a.md"),
        ),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(response.status, Status::Ok);
}

#[tokio::test]
async fn a_keep_alive_longer_than_the_idle_timeout_is_refused() {
    let err = Client::new(ClientConfig {
        trust: Trust::Insecure,
        keep_alive_interval: Duration::from_secs(60),
        idle_timeout: Duration::from_secs(30),
        ..ClientConfig::default()
    })
    .unwrap_err();
    assert!(matches!(err, ClientError::Config(_)), "{err}");
}

#[tokio::test]
async fn sequential_requests_share_one_connection() {
    let server = TestServer::start(echo);
    let client = Client::new(pinned(&server)).unwrap();
    for i in 0..25 {
        let response = fetch(&client, &server, &format!("/doc{i}.md"))
            .await
            .unwrap();
        assert_eq!(response.meta("path"), Some(format!("/doc{i}.md").as_str()));
    }
    assert_eq!(server.accepted(), 1);
    // Clones share the connection too.
    let clone = client.clone();
    fetch(&clone, &server, "/again.md").await.unwrap();
    assert_eq!(server.accepted(), 1);
}

#[tokio::test]
async fn a_closed_connection_is_replaced_for_the_next_request() {
    let server = TestServer::start(echo);
    let client = Client::new(pinned(&server)).unwrap();
    fetch(&client, &server, "/one.md").await.unwrap();
    server.close_connections();
    // Whether or not the close has reached the client yet, the read goes
    // through on a second connection.
    let response = fetch(&client, &server, "/two.md").await.unwrap();
    assert_eq!(response.meta("path"), Some("/two.md"));
    assert_eq!(server.accepted(), 2);
    fetch(&client, &server, "/three.md").await.unwrap();
    assert_eq!(server.accepted(), 2);
}

/// The first connection dies as soon as it receives a request.
fn dies_on_first_connection(index: usize, request: &[u8]) -> Action {
    if index == 0 {
        Action::CloseConnection
    } else {
        echo(index, request)
    }
}

#[tokio::test]
async fn a_read_on_a_dying_connection_is_retried_once() {
    let server = TestServer::start(dies_on_first_connection);
    let client = Client::new(pinned(&server)).unwrap();
    let response = fetch(&client, &server, "/doc.md").await.unwrap();
    assert_eq!(response.status, Status::Ok);
    assert_eq!(server.accepted(), 2);
}

#[tokio::test]
async fn a_write_on_a_dying_connection_is_never_retried() {
    let server = TestServer::start(dies_on_first_connection);
    let client = Client::new(pinned(&server)).unwrap();
    let publish = Request::new(Verb::Publish, "/doc.md").with_body("# Doc\n");
    let err = tokio::time::timeout(GUARD, client.request("127.0.0.1", server.port(), publish))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, ClientError::ConnectionLost { .. }), "{err}");
    assert_eq!(server.accepted(), 1);
    // The next request reconnects.
    assert_eq!(
        fetch(&client, &server, "/doc.md").await.unwrap().status,
        Status::Ok
    );
    assert_eq!(server.accepted(), 2);
}

async fn concurrent_requests(server: &TestServer, count: usize) {
    let client = Client::new(pinned(server)).unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..count {
        let client = client.clone();
        let port = server.port();
        tasks.spawn(async move {
            let path = format!("/doc{i}.md");
            let response = client
                .request("127.0.0.1", port, Request::new(Verb::Fetch, path.clone()))
                .await
                .unwrap();
            assert_eq!(response.meta("path"), Some(path.as_str()));
        });
    }
    let joined = tokio::time::timeout(GUARD, tasks.join_all())
        .await
        .expect("concurrent requests outlived the guard");
    assert_eq!(joined.len(), count);
    assert_eq!(
        server.accepted(),
        1,
        "every concurrent request must share one connection"
    );
}

#[tokio::test]
async fn two_hundred_concurrent_requests_share_one_connection() {
    let server = TestServer::start_with(
        ServerOptions {
            max_streams: 256,
            ..ServerOptions::default()
        },
        echo,
    );
    concurrent_requests(&server, 200).await;
}

#[tokio::test]
async fn more_requests_than_stream_credit_wait_their_turn() {
    let server = TestServer::start(echo);
    concurrent_requests(&server, 200).await;
}

#[tokio::test]
async fn a_silent_port_hits_the_connect_timeout() {
    // A UDP socket that never answers: the handshake cannot finish.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let timeout = Duration::from_millis(400);
    let client = Client::new(ClientConfig {
        trust: Trust::Insecure,
        connect_timeout: timeout,
        ..ClientConfig::default()
    })
    .unwrap();
    let started = Instant::now();
    let err = client
        .request("127.0.0.1", port, Request::new(Verb::Fetch, "/a.md"))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::ConnectTimeout { .. }), "{err}");
    assert!(
        started.elapsed() < timeout * 4,
        "took {:?}",
        started.elapsed()
    );
}

/// Four requests at once against a port where nothing answers, with a
/// 1 s request timeout and no connect timeout: they share one handshake and
/// every one fails when its own deadline passes (not after 5, 10, 15, 20 s,
/// one handshake each in turn), naming the timeout that ran out.
#[tokio::test]
async fn concurrent_requests_to_a_silent_port_fail_together_at_their_deadline() {
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let timeout = Duration::from_secs(1);
    let client = Client::new(ClientConfig {
        trust: Trust::Insecure,
        request_timeout: timeout,
        ..ClientConfig::default()
    })
    .unwrap();
    let started = Instant::now();
    let one = |path: &'static str| {
        let client = client.clone();
        async move {
            let err = client
                .request("127.0.0.1", port, Request::new(Verb::Fetch, path))
                .await
                .unwrap_err();
            (err, started.elapsed())
        }
    };
    let all = async { tokio::join!(one("/a.md"), one("/b.md"), one("/c.md"), one("/d.md")) };
    let (a, b, c, d) = tokio::time::timeout(GUARD, all)
        .await
        .expect("the requests outlived the test guard");
    for (err, took) in [a, b, c, d] {
        assert!(matches!(err, ClientError::ConnectTimeout { .. }), "{err}");
        assert!(err.to_string().contains("within 1s"), "{err}");
        assert!(
            took >= timeout && took < timeout * 3,
            "failed after {took:?}"
        );
    }
}

#[tokio::test]
async fn an_unknown_host_fails_to_resolve() {
    let client = Client::new(ClientConfig {
        trust: Trust::Insecure,
        connect_timeout: Duration::from_secs(3),
        ..ClientConfig::default()
    })
    .unwrap();
    let err = tokio::time::timeout(
        GUARD,
        client.request(
            "no-such-host.invalid",
            6309,
            Request::new(Verb::Fetch, "/a.md"),
        ),
    )
    .await
    .unwrap()
    .unwrap_err();
    assert!(matches!(err, ClientError::Resolve { .. }), "{err}");
}

#[tokio::test]
async fn a_bad_request_is_refused_before_sending() {
    let client = Client::new(ClientConfig {
        trust: Trust::Insecure,
        ..ClientConfig::default()
    })
    .unwrap();
    let err = client
        .request("127.0.0.1", 9, Request::new(Verb::Fetch, "no-slash"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ClientError::Encode(WireError::BadPath(_))),
        "{err}"
    );
}

#[tokio::test]
async fn close_then_request_reconnects() {
    let server = TestServer::start(echo);
    let client = Client::new(pinned(&server)).unwrap();
    fetch(&client, &server, "/a.md").await.unwrap();
    client.close().await;
    fetch(&client, &server, "/b.md").await.unwrap();
    assert_eq!(server.accepted(), 2);
}
