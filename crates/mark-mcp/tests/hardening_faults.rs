//! Hardening, server faults: the real `mark-mcp` binary over `--host`
//! against a real `mark-server` process that is down at start, restarts,
//! stalls (SIGSTOP) or comes back with another certificate under the pin.
//! Each fault is a tool error in one sentence saying what to do, and the
//! session recovers as soon as the server does.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use mark_testkit::{MarkServerProcess, TempStore, write_test_certificate};
use serde_json::json;
use std::time::{Duration, Instant};
use support::{Mcp, Reply, fetch_statuses, kb, serve_copy_of, signal};

/// A hang guard per call, not a performance bound.
const CALL_LIMIT: Duration = Duration::from_secs(40);

async fn fetch_within(mcp: &Mcp, args: serde_json::Value) -> (Reply, Duration) {
    let started = Instant::now();
    let r = tokio::time::timeout(CALL_LIMIT, mcp.call("mark_fetch", args))
        .await
        .expect("a call hung past the guard");
    (r, started.elapsed())
}

/// A server on a copy of the fixture knowledge base whose certificate (so
/// its pin) stays the same across restarts; the store and certificate
/// folder live as long as the guards.
fn server_keeping_its_certificate() -> (TempStore, tempfile::TempDir, MarkServerProcess) {
    let certs = tempfile::tempdir().unwrap();
    let cert = write_test_certificate(certs.path()).unwrap();
    let (store, server) = serve_copy_of(&kb(), &cert.server_args());
    (store, certs, server)
}

fn one_line_error(r: &Reply) -> &str {
    assert!(r.is_error, "expected a tool error: {}", r.text);
    let message = r.body().trim();
    assert!(
        !message.is_empty() && !message.contains('\n') && message.len() < 600,
        "not one sentence: {message:?}"
    );
    message
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_down_at_start_then_up() {
    let (_store, _certs, mut server) = server_keeping_its_certificate();
    let (args, pin) = (server.reader_args(&[]), server.pin());
    server.kill();

    let mcp = Mcp::start(&args).await;
    let (r, took) = fetch_within(&mcp, json!({"url": "/small.md"})).await;
    let message = one_line_error(&r);
    assert!(
        message.contains("Mark server is running"),
        "says what to check: {message}"
    );
    // A closed UDP port answers nothing: the handshake deadline (5 s) says
    // so, not the whole request deadline (15 s) (#28.6).
    assert!(message.contains("within 5s"), "{message}");
    assert!(took < Duration::from_secs(10), "took {took:?}");

    // Up on the same port with the same certificate: the next call connects.
    server.restart().unwrap();
    assert_eq!(server.pin(), pin);
    let (r, _) = fetch_within(&mcp, json!({"url": "/small.md"})).await;
    r.assert_full();
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_restart_mid_session_reconnects_and_revalidates() {
    let (_store, _certs, mut server) = server_keeping_its_certificate();
    let mcp = Mcp::start(&server.reader_args(&["--fresh-for", "0s"])).await;
    let (r, _) = fetch_within(&mcp, json!({"url": "/small.md"})).await;
    assert_eq!(r.field("mode"), Some("full"), "{}", r.text);

    // A clean restart (SIGTERM closes the connections): the next call
    // reconnects at once. The cached copy is revalidated: not modified, so
    // the session answers unchanged without moving the body again.
    signal(&server, "TERM");
    server.child.wait().unwrap();
    server.restart().unwrap();
    let (r, took) = fetch_within(&mcp, json!({"url": "/small.md"})).await;
    assert_eq!(r.status(), "unchanged", "{}", r.text);
    assert!(took < Duration::from_secs(5), "reconnecting took {took:?}");
    let (r, _) = fetch_within(&mcp, json!({"url": "/large.md#pilots"})).await;
    assert!(r.body().starts_with("## Pilots"), "{}", r.text);
    server.wait_for_requests("FETCH", "/large.md", 1, Duration::from_secs(5));
    assert_eq!(fetch_statuses(&server, "/small.md"), ["ok", "not-modified"]);

    // A crash (SIGKILL, no goodbye) and a restart on the same port: the old
    // connection stays silent, so the first call ends at the request timeout
    // in one sentence; the one after it reconnects and succeeds.
    server.restart().unwrap();
    let (r, took) = fetch_within(&mcp, json!({"url": "/small.md"})).await;
    if r.is_error {
        let message = one_line_error(&r);
        assert!(
            message.contains("the server stopped answering"),
            "{message}"
        );
        assert!(took < Duration::from_secs(25), "took {took:?}");
        let (r, _) = fetch_within(&mcp, json!({"url": "/small.md"})).await;
        assert_eq!(r.status(), "unchanged", "{}", r.text);
    } else {
        assert_eq!(r.status(), "unchanged", "{}", r.text);
    }
    server.wait_for_requests("FETCH", "/small.md", 3, Duration::from_secs(5));
    assert_eq!(
        fetch_statuses(&server, "/small.md"),
        ["ok", "not-modified", "not-modified"]
    );
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_server_times_out_then_recovers() {
    let (_store, server) = serve_copy_of::<&str>(&kb(), &[]);
    let mcp = Mcp::start(&server.reader_args(&["--timeout", "2s"])).await;
    let (r, _) = fetch_within(&mcp, json!({"url": "/small.md"})).await;
    assert_eq!(r.status(), "ok", "{}", r.text);

    signal(&server, "STOP");
    let (r, took) = fetch_within(&mcp, json!({"url": "/large.md", "force": true})).await;
    signal(&server, "CONT");
    let message = one_line_error(&r);
    assert!(
        message.contains("the server stopped answering (nothing came back within 2s"),
        "names the timeout: {message}"
    );
    // The call ends at --timeout, not at the hang guard.
    assert!(took < Duration::from_secs(10), "took {took:?}");

    let (r, _) = fetch_within(&mcp, json!({"url": "/large.md", "force": true})).await;
    r.assert_full();
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_certificate_under_a_pin_is_refused() {
    // No --cert: every start makes a new self-signed certificate.
    let (_store, mut server) = serve_copy_of::<&str>(&kb(), &[]);
    let pin = server.pin();
    let mcp = Mcp::start(&server.reader_args(&["--fresh-for", "0s"])).await;
    let (r, _) = fetch_within(&mcp, json!({"url": "/small.md"})).await;
    assert_eq!(r.status(), "ok", "{}", r.text);

    signal(&server, "TERM");
    server.child.wait().unwrap();
    server.restart().unwrap();
    assert_ne!(server.pin(), pin);
    for _ in 0..2 {
        let (r, _) = fetch_within(&mcp, json!({"url": "/small.md", "force": true})).await;
        let message = one_line_error(&r);
        assert!(
            message.contains("does not match the pin")
                && message.contains(&pin)
                && message.contains(&server.pin()),
            "names both fingerprints: {message}"
        );
    }
    mcp.stop().await;
}

/// #14.12: a resource read the server does not answer in time is reported
/// as what happened (an internal error naming the timeout), not as
/// resource-not-found; a missing document still is not-found (-32002).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_read_that_times_out_says_so() {
    // A server without WATCH (as demarkus today) and --fresh-for 0s: the
    // session's crawl may have cached small.md before the stop, and a healthy
    // watch would keep that copy fresh; here every read must ask the server,
    // so the stall is what it meets.
    let (_store, server) = serve_copy_of(&kb(), &["--max-watches", "0"]);
    let mcp = Mcp::start(&server.reader_args(&["--timeout", "2s", "--fresh-for", "0s"])).await;
    let uri = format!("{}/large.md", server.url());
    assert!(mcp.read(&uri).await.is_ok());
    let missing = mcp.read(&uri.replace("large.md", "missing.md")).await;
    assert!(
        missing.as_ref().unwrap_err().contains("-32002"),
        "{missing:?}"
    );

    signal(&server, "STOP");
    let stalled = tokio::time::timeout(CALL_LIMIT, mcp.read(&uri.replace("large.md", "small.md")))
        .await
        .expect("a read hung past the guard");
    signal(&server, "CONT");
    let message = stalled.unwrap_err();
    assert!(
        !message.contains("-32002"),
        "reported as not found: {message}"
    );
    assert!(
        message.contains("the server stopped answering (nothing came back within 2s"),
        "names the timeout: {message}"
    );
    mcp.stop().await;
}

/// #13: `[[Note]]` against a stalled server says why no note's name is
/// known (the crawl's timeout, or that it got no answer within
/// --crawl-wait), not "graph not built yet".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wiki_link_against_a_stalled_server_names_the_timeout() {
    let (_store, server) = serve_copy_of::<&str>(&kb(), &[]);
    signal(&server, "STOP");
    // The crawl's request times out (1 s) within the card's wait (5 s).
    let mcp = Mcp::start(&server.reader_args(&["--timeout", "1s", "--crawl-wait", "5s"])).await;
    let (r, took) = fetch_within(&mcp, json!({"url": "[[Crew]]"})).await;
    let message = one_line_error(&r).to_string();
    assert!(
        message.contains("`[[Crew]]` cannot be resolved: no note's name is known, since the crawl that learns them failed"),
        "{message}"
    );
    assert!(
        message.contains("within 1s"),
        "names the timeout: {message}"
    );
    assert!(!message.contains("graph not built yet"), "{message}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    // Waiting less than the timeout: it says the crawl got no answer in time.
    let waiting =
        Mcp::start(&server.reader_args(&["--timeout", "10s", "--crawl-wait", "1s"])).await;
    let (r, _) = fetch_within(&waiting, json!({"url": "[[Crew]]"})).await;
    let message = one_line_error(&r).to_string();
    assert!(
        message.contains("got no answer from the source within --crawl-wait (1 s)"),
        "{message}"
    );
    signal(&server, "CONT");
    mcp.stop().await;
    waiting.stop().await;
}
