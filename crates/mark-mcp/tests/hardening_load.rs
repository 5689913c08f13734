//! Hardening, load and session isolation against a real `mark-server`:
//! 200 concurrent tool calls in one MCP session, and 20 concurrent sessions
//! (20 `mark-mcp` processes) on one server, every answer checked. Each
//! session has its own dedup log: the first read of a document in any
//! session delivers it, whatever the others read. Wall times are printed
//! (`--nocapture`) for the README, never asserted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use futures::future::join_all;
use mark_testkit::{MarkServerProcess, import_store};
use serde_json::json;
use std::time::{Duration, Instant};
use support::{Mcp, kb};

/// A hang guard for a whole batch (debug build, 2 cores), not a perf bound.
const BATCH_LIMIT: Duration = Duration::from_secs(120);

/// Sections of the fixture's large document and how each begins.
const SECTIONS: [(&str, &str); 5] = [
    ("pilots", "## Pilots"),
    ("berths", "## Berths"),
    ("contacts", "## Contacts"),
    ("north-quay", "### North quay"),
    ("spring-tides", "### Spring tides"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_calls_in_one_session() {
    let store = import_store(&kb()).unwrap();
    let server = MarkServerProcess::start(store.path(), &[] as &[&str]).unwrap();
    let mcp = Mcp::start(&server.reader_args(&[])).await;
    let small = std::fs::read_to_string(kb().join("small.md")).unwrap();

    let started = Instant::now();
    let calls = (0..200).map(|i| {
        let (mcp, small) = (&mcp, &small);
        async move {
            match i % 4 {
                0 => {
                    let (anchor, head) = SECTIONS[i % SECTIONS.len()];
                    let r = mcp
                        .call(
                            "mark_fetch",
                            json!({"url": format!("/large.md#{anchor}"), "force": true}),
                        )
                        .await;
                    assert!(r.body().starts_with(head), "call {i}: {}", r.text);
                }
                1 => {
                    let r = mcp
                        .call("mark_fetch", json!({"url": "/small.md", "force": true}))
                        .await;
                    assert_eq!(r.body(), small.as_str(), "call {i}");
                }
                2 => {
                    let r = mcp
                        .call("mark_lookup", json!({"query": "harbour", "force": true}))
                        .await;
                    assert!(r.body().contains("/large.md"), "call {i}: {}", r.text);
                }
                _ => {
                    let r = mcp.call("mark_list", json!({"url": "/"})).await;
                    assert!(r.body().contains("- /small.md"), "call {i}: {}", r.text);
                }
            }
        }
    });
    tokio::time::timeout(BATCH_LIMIT, join_all(calls))
        .await
        .expect("200 concurrent calls hung");
    eprintln!(
        "200 concurrent tool calls, one session: {:?}",
        started.elapsed()
    );
    // The session still answers, and the server saw every LOOKUP and LIST
    // (fetches may be served from the session cache).
    assert_eq!(mcp.fetch("/small.md").await.status(), "unchanged");
    assert_eq!(
        server.wait_for_requests("LOOKUP", "/", 50, Duration::from_secs(5)),
        50
    );
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_concurrent_sessions_and_no_shared_dedup() {
    let store = import_store(&kb()).unwrap();
    let server = MarkServerProcess::start(store.path(), &[] as &[&str]).unwrap();
    let args = server.reader_args(&[]);
    let small = std::fs::read_to_string(kb().join("small.md")).unwrap();

    let started = Instant::now();
    let sessions = join_all((0..20).map(|_| Mcp::start(&args))).await;
    let work = sessions.iter().enumerate().map(|(n, mcp)| {
        let small = &small;
        async move {
            // Every session's first read delivers: dedup is per session.
            let r = mcp.fetch("/small.md").await;
            assert_eq!(
                (r.field("mode"), r.body()),
                (Some("full"), small.as_str()),
                "session {n}"
            );
            let (anchor, head) = SECTIONS[n % SECTIONS.len()];
            let r = mcp.fetch(&format!("/large.md#{anchor}")).await;
            assert!(r.body().starts_with(head), "session {n}: {}", r.text);
            let r = mcp.call("mark_lookup", json!({"query": "ferry"})).await;
            assert!(r.body().contains("/small.md"), "session {n}: {}", r.text);
            // Its own second read is the one that says unchanged.
            assert_eq!(
                mcp.fetch("/small.md").await.status(),
                "unchanged",
                "session {n}"
            );
        }
    });
    tokio::time::timeout(BATCH_LIMIT, join_all(work))
        .await
        .expect("20 concurrent sessions hung");
    eprintln!(
        "20 concurrent sessions (start, 4 calls each): {:?}",
        started.elapsed()
    );

    // A session started after all of them have read /small.md still gets it whole.
    let late = Mcp::start(&args).await;
    assert_eq!(late.fetch("/small.md").await.field("mode"), Some("full"));
    late.stop().await;
    for mcp in sessions {
        mcp.stop().await;
    }
}
