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
        .env("XDG_CACHE_HOME", support::cache_home())
        .args([
            "--host",
            &host,
            "--insecure",
            "--timeout",
            "1s",
            "fetch",
            "/a.md",
        ])
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

/// The folder of the graph tests: `/target.md`, and `/a.md` linking to it.
fn linked_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("target.md"), "# Target\n\nLinked to.\n").unwrap();
    std::fs::write(dir.path().join("a.md"), "# A\n\nSee [target](target.md).\n").unwrap();
    dir
}

/// After `a.md` is deleted and `b.md` (linking to the target) is created,
/// a card older than `--graph-fresh-for` crawls again: it lists `b.md`, not
/// `a.md`, and is complete; within the bound its age is shown when stale.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_graph_is_crawled_again_and_shows_its_age() {
    let dir = linked_folder();
    let server = MarkServerProcess::start(dir.path(), &["--flat"]).unwrap();
    let args = server.reader_args(&["--graph-fresh-for", "1s", "--fresh-for", "0s"]);
    let mcp = Mcp::start(&args).await;
    let card = mcp.call("mark_explore", json!({"url": "/target.md"})).await;
    assert!(card.text.contains("(1; graph complete)"), "{}", card.text);
    assert!(card.text.contains("/a.md"), "{}", card.text);
    std::fs::remove_file(dir.path().join("a.md")).unwrap();
    std::fs::write(dir.path().join("b.md"), "# B\n\n[target](target.md)\n").unwrap();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let card = mcp.call("mark_explore", json!({"url": "/target.md"})).await;
    let backlinks = card.text.split("## Backlinks").nth(1).unwrap();
    let backlinks = backlinks.split("## Siblings").next().unwrap();
    assert!(backlinks.contains("/b.md"), "{}", card.text);
    assert!(!backlinks.contains("/a.md"), "{}", card.text);
    assert!(card.text.contains("(1; graph complete)"), "{}", card.text);
    mcp.stop().await;
}

/// `force` on explore crawls again at once, however young the graph.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_on_explore_refreshes_the_graph() {
    let dir = linked_folder();
    let root = dir.path().display().to_string();
    let mcp = Mcp::start(&["--root", &root, "--graph-fresh-for", "1h"]).await;
    let card = mcp.call("mark_explore", json!({"url": "/target.md"})).await;
    assert!(card.text.contains("(1; graph complete)"), "{}", card.text);
    std::fs::write(dir.path().join("b.md"), "# B\n\n[target](target.md)\n").unwrap();
    let card = mcp
        .call("mark_explore", json!({"url": "/target.md", "force": true}))
        .await;
    assert!(card.text.contains("(2; graph complete)"), "{}", card.text);
    mcp.stop().await;
}

/// Exploring a document that does not exist answers at once, without
/// waiting for the crawl (which a stalled LIST holds back here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exploring_a_missing_document_does_not_wait_for_the_crawl() {
    let dir = linked_folder();
    let server = MarkServerProcess::start(dir.path(), &["--flat"]).unwrap();
    let mcp =
        Mcp::start(&server.reader_args(&["--crawl-wait", "8s", "--crawl-docs", "100000"])).await;
    // Warm the connection, then give the crawl a big tree to read.
    assert_eq!(mcp.fetch("/target.md").await.status(), "ok");
    for i in 0..3000 {
        std::fs::write(
            dir.path().join(format!("n{i}.md")),
            format!("# N{i}\n\n[a](a.md)\n"),
        )
        .unwrap();
    }
    let started = std::time::Instant::now();
    let reply = mcp
        .call("mark_explore", json!({"url": "/missing.md"}))
        .await;
    let took = started.elapsed();
    assert_eq!(reply.status(), "not-found", "{}", reply.text);
    assert!(took < Duration::from_secs(3), "took {took:?}");
    mcp.stop().await;
}

/// An older server's LIST says nothing of completeness: mark_list, the
/// card's siblings and the crawl say that rather than `complete`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_that_does_not_say_it_is_complete_is_never_called_complete() {
    let dir = linked_folder();
    let server = MarkServerProcess::start(dir.path(), &["--flat", "--unpaged-list"]).unwrap();
    let mcp = Mcp::start(&server.reader_args(&[])).await;
    let list = mcp.call("mark_list", json!({"url": "/"})).await;
    assert_eq!(list.field("complete"), Some("unknown"), "{}", list.text);
    assert!(list.text.contains("did not say"), "{}", list.text);
    let card = mcp.call("mark_explore", json!({"url": "/target.md"})).await;
    assert!(!card.text.contains("graph complete"), "{}", card.text);
    assert!(
        card.text
            .contains("1 listing did not say whether it is complete"),
        "{}",
        card.text
    );
    assert!(
        card.text
            .contains("the server did not say whether its listing is complete"),
        "{}",
        card.text
    );
    mcp.stop().await;
}

/// A server whose LIST paging loops (`--looping-list`: every page says
/// `complete: false` with the same `next-cursor`): the crawl and the card's
/// siblings ask for that page once, end the listing there, and say so; the
/// graph is never called complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_list_cursor_ends_the_listing_incomplete_with_a_note() {
    let dir = linked_folder();
    let server = MarkServerProcess::start(dir.path(), &["--flat", "--looping-list"]).unwrap();
    let mcp = Mcp::start(&server.reader_args(&[])).await;
    let card = mcp.call("mark_explore", json!({"url": "/target.md"})).await;
    assert_eq!(card.status(), "ok", "{}", card.text);
    assert!(card.text.contains("/a.md"), "{}", card.text);
    assert!(!card.text.contains("graph complete"), "{}", card.text);
    assert!(
        card.text
            .contains("1 listing ended early: the server repeated a next-cursor"),
        "{}",
        card.text
    );
    mcp.stop().await;
    // The crawl's LIST / and its one follow-up, the card's the same: no loop.
    let lists = server.count_requests("LIST", "/");
    assert!(lists <= 4, "{lists} LIST / sent");
}
