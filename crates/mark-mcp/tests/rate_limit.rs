//! A server that limits each client's request rate as demarkus does
//! (`mark-server --rate-limit`: a stream over the rate is closed without a
//! byte and its slot never freed), read by the real `mark-mcp` binary over
//! MCP: the crawl paces itself, every card comes within `--crawl-wait`, and
//! the graph still completes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use mark_testkit::MarkServerProcess;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::{Mcp, serve_copy_of};

/// What a card may take beyond `--crawl-wait` on a loaded 2-core machine:
/// its own FETCH and LIST, and building the card.
const CARD_SLACK: Duration = Duration::from_millis(2500);

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/explore")
}

/// Streams the server closed unanswered, from its log.
fn unanswered(server: &MarkServerProcess) -> usize {
    server
        .log_lines()
        .iter()
        .filter(|l| l.contains("stream closed unanswered"))
        .count()
}

async fn timed_card(mcp: &Mcp, args: serde_json::Value, wait: Duration) -> support::Reply {
    let started = Instant::now();
    let card = mcp.call("mark_explore", args).await;
    let took = started.elapsed();
    eprintln!("card in {took:?}");
    assert!(
        took < wait + CARD_SLACK,
        "the card took {took:?}, --crawl-wait is {wait:?}"
    );
    assert_eq!(card.status(), "ok", "{}", card.text);
    card
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_paces_itself_under_a_rate_limit_and_cards_come_within_crawl_wait() {
    // 10 requests a second after a burst of 10, 10 streams per connection:
    // the ~40 requests of a crawl of the fixture go over it at once.
    let (_store, server) = serve_copy_of(
        &fixture(),
        &[
            "--rate-limit",
            "10/s",
            "--rate-burst",
            "10",
            "--max-streams",
            "10",
        ],
    );
    let wait = Duration::from_secs(2);
    let mcp =
        Mcp::start(&server.reader_args(&["--crawl-wait", "2s", "--graph-fresh-for", "0s"])).await;
    timed_card(&mcp, json!({"url": "/hub.md"}), wait).await;
    assert!(
        unanswered(&server) > 0,
        "the server never limited the crawl"
    );
    // Cards again at once, each crawling again while the server limits:
    // each within --crawl-wait, until a paced crawl has read everything.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut cards = 1;
    loop {
        let card = timed_card(&mcp, json!({"url": "/hub.md", "force": true}), wait).await;
        cards += 1;
        if cards >= 4 && card.text.contains("## Backlinks (29; graph complete") {
            break;
        }
        assert!(Instant::now() < deadline, "{}", card.text);
    }
    // Slowed down, never a storm: few streams went unanswered beside the
    // requests answered.
    let answered = server.requests_seen().len();
    let refused = unanswered(&server);
    eprintln!("answered {answered}, closed unanswered {refused}");
    assert!(
        refused * 3 < answered,
        "{refused} unanswered, {answered} answered"
    );
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_crawl_right_after_the_first_meets_demarkus_limits_and_still_answers() {
    // demarkus' own figures: 50 a second, a burst of 100, 10 streams.
    let (_store, server) = serve_copy_of(
        &fixture(),
        &[
            "--rate-limit",
            "50/s",
            "--rate-burst",
            "100",
            "--max-streams",
            "10",
        ],
    );
    let wait = Duration::from_secs(3);
    let mcp = Mcp::start(&server.reader_args(&["--crawl-wait", "3s"])).await;
    for _ in 0..4 {
        let card = timed_card(&mcp, json!({"url": "/hub.md", "force": true}), wait).await;
        assert!(!card.text.contains("failed"), "{}", card.text);
    }
    mcp.stop().await;
}
