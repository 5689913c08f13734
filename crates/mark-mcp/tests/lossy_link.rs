//! mark-mcp over a real network's faults: a real `mark-server` serving the
//! Node.js API corpus behind mark-testkit's UDP relay (50 ms each way, 3%
//! loss, some reordering and duplication; then a black hole), read by the
//! real `mark-mcp` binary over stdio.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use mark_testkit::{Direction, LinkShape, UdpRelay};
use serde_json::json;
use std::time::{Duration, Instant};
use support::{Mcp, corpus, serve_copy_of};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_lossy_link_gives_the_same_answers() {
    let corpus = corpus("nodejs-api");
    let (_store, server) = serve_copy_of(&corpus, &[] as &[&str]);
    let relay = UdpRelay::start(
        server.addr,
        LinkShape::lossy(Duration::from_millis(50), 0.03),
        42,
    )
    .unwrap();
    let mcp = Mcp::start(
        &server.reader_args_via(relay.addr(), &["--timeout", "90s", "--crawl-wait", "120s"]),
    )
    .await;

    // A whole document, byte for byte.
    let small = std::fs::read_to_string(corpus.join("synopsis.md")).unwrap();
    let whole = mcp
        .call("mark_fetch", json!({"url": "/synopsis.md", "mode": "full"}))
        .await;
    whole.assert_full();
    assert_eq!(whole.body().trim_end(), small.trim_end());
    // A large one as an outline, and one of its sections, verbatim from the file.
    let fs = std::fs::read_to_string(corpus.join("fs.md")).unwrap();
    let outline = mcp.fetch("/fs.md").await;
    assert_eq!(
        (outline.status(), outline.field("mode")),
        ("ok", Some("outline")),
        "{}",
        outline.text
    );
    let section = mcp.fetch("/fs.md#fsreadfilepath-options-callback").await;
    assert_eq!(section.status(), "ok", "{}", section.text);
    assert!(
        section.body().starts_with("### `fs.readFile(path"),
        "{}",
        section.text
    );
    assert!(
        fs.contains(section.body().trim_end()),
        "the section is the file's own text"
    );
    // A card over a full crawl of all 64 documents: every backlink (22, as over loopback).
    let card = mcp.call("mark_explore", json!({"url": "/errors.md"})).await;
    assert_eq!(card.status(), "ok", "{}", card.text);
    assert!(
        card.text.contains("## Backlinks (22; graph complete)"),
        "{}",
        card.text
    );
    let stats = relay.stats();
    assert!(
        stats.dropped > 0 && stats.duplicated > 0 && stats.reordered > 0,
        "{stats:?}"
    );
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_hole_is_a_tool_error_within_the_timeout_and_the_session_recovers() {
    // A server without WATCH and --fresh-for 0s: every read asks the server
    // (a healthy watch would keep the crawl's copy of errors.md fresh).
    let (_store, server) = serve_copy_of(&corpus("nodejs-api"), &["--max-watches", "0"]);
    let relay = UdpRelay::start(server.addr, LinkShape::CLEAN, 7).unwrap();
    let mcp = Mcp::start(
        &server.reader_args_via(relay.addr(), &["--timeout", "2s", "--fresh-for", "0s"]),
    )
    .await;
    assert_eq!(mcp.fetch("/synopsis.md").await.status(), "ok", "connected");

    relay.black_hole(Direction::ToServer, true);
    relay.black_hole(Direction::ToClient, true);
    let asked = Instant::now();
    let dark = mcp.fetch("/errors.md").await;
    let waited = asked.elapsed();
    assert!(dark.is_error, "{}", dark.text);
    assert!(
        dark.text.contains("the server stopped answering"),
        "{}",
        dark.text
    );
    // Within --timeout (2 s), with room for a loaded machine; never a hang.
    assert!(waited < Duration::from_secs(5), "{waited:?}");

    relay.black_hole(Direction::ToServer, false);
    relay.black_hole(Direction::ToClient, false);
    let healed = mcp.fetch("/errors.md").await;
    assert_eq!(
        healed.status(),
        "ok",
        "the same session reconnects: {}",
        healed.text
    );
    mcp.stop().await;
}
