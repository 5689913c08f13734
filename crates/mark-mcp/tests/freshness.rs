//! Fresh means fresh, end to end over the real binaries: `force` asks the
//! source again even within `--fresh-for`, concurrent cold loads of one
//! document share one FETCH, and the link graph is crawled again when it is
//! older than `--graph-fresh-for`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use mark_testkit::MarkServerProcess;
use serde_json::json;
use std::time::Duration;
use support::{Mcp, signal};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_rereads_a_changed_file_within_fresh_for() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f.md");
    std::fs::write(&file, "# F\n\nThe old text.\n").unwrap();
    let root = dir.path().display().to_string();
    let mcp = Mcp::start(&["--root", &root, "--fresh-for", "10m"]).await;
    let first = mcp.fetch("/f.md").await;
    assert!(first.body().contains("The old text."), "{}", first.text);
    std::fs::write(&file, "# F\n\nThe new text.\n").unwrap();
    let forced = mcp
        .call("mark_fetch", json!({"url": "/f.md", "force": true}))
        .await;
    assert_eq!(forced.status(), "ok", "{}", forced.text);
    assert!(forced.body().contains("The new text."), "{}", forced.text);
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_concurrent_cold_fetches_send_one_fetch() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.md"), "# F\n\nShared.\n").unwrap();
    let server = MarkServerProcess::start(dir.path(), &["--flat"]).unwrap();
    let mcp = Mcp::start(&server.reader_args(&["--timeout", "60s"])).await;
    // A stalled server: every call goes out before any answer comes back.
    signal(&server, "STOP");
    let calls = futures::future::join_all((0..8).map(|_| mcp.fetch("/f.md")));
    let thaw = async {
        tokio::time::sleep(Duration::from_millis(800)).await;
        signal(&server, "CONT");
    };
    let (replies, ()) = tokio::join!(calls, thaw);
    // One delivers the text; the others may say the session has it.
    for reply in &replies {
        assert!(
            ["ok", "unchanged"].contains(&reply.status()),
            "{}",
            reply.text
        );
    }
    assert!(replies.iter().any(|r| r.body().contains("Shared.")));
    // Give a wrongly sent second FETCH time to reach the log.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(server.count_requests("FETCH", "/f.md"), 1);
    mcp.stop().await;
}

/// `--timeout` bounds the whole request, the connect included: against a
/// port where nothing answers, `--timeout 1s` fails after about a second
/// (not after a fixed 5 s connect timeout) and says so.
#[test]
fn a_silent_port_fails_within_the_timeout_it_was_given() {
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let host = format!("mark://127.0.0.1:{}", silent.local_addr().unwrap().port());
    let started = std::time::Instant::now();
    let out = std::process::Command::new(support::bin())
        .args(["--host", &host, "--insecure", "--timeout", "1s", "fetch", "/a.md"])
        .env_remove("MARK_TOKEN")
        .output()
        .unwrap();
    let took = started.elapsed();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("within 1s"), "{said}");
    assert!(took < Duration::from_secs(4), "took {took:?}: {said}");
}
