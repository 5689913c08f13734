//! mark-mcp over a long, lossy link against clean loopback, in one run: a
//! real `mark-server` holding the Node.js API corpus (64 documents, 3.3 MB),
//! read by the release `mark-mcp` through mark-testkit's UDP relay, once
//! clean and once at 50 ms each way with 3% loss (1% reordered by 10 ms, 1%
//! duplicated). Each round starts a new `mark-mcp` (a new connection) and
//! measures, through mark-bench's rmcp client session: the first fetch of a
//! small document (handshake included), a section of the largest document
//! (the whole document moves), and the first `mark_explore` card, which
//! waits for the full crawl of the corpus (documents per second = 64 / its
//! time).
//!
//! Run with `cargo bench -p mark-mcp --bench lossy_link` (`SAMPLES=N`
//! rounds per link, 3 by default); without `--bench` one round each, to
//! check that it works. Numbers in the top README.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use mark_bench::{McpSession, ServerCommand};
use mark_testkit::{LinkShape, MarkServerProcess, UdpRelay, import_store};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Documents in the corpus: what a full crawl reads.
const DOCUMENTS: f64 = 64.0;

fn corpus() -> PathBuf {
    let base = std::env::var_os("MARK_CORPORA").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora"),
        PathBuf::from,
    );
    base.join("nodejs-api")
}

/// One round's wall times: first fetch, section, card with the crawl.
type Round = [Duration; 3];

async fn round(server: &MarkServerProcess, relay: &UdpRelay) -> Round {
    let args = server.reader_args_via(relay.addr(), &["--timeout", "120s", "--crawl-wait", "300s"]);
    let command = ServerCommand::new(env!("CARGO_BIN_EXE_mark-mcp"), args);
    let mut session = McpSession::start(&command).await.unwrap();
    let first = session
        .timed_call("mark_fetch", json!({"url": "/synopsis.md"}), "status: ok")
        .await
        .unwrap();
    let section = session
        .timed_call(
            "mark_fetch",
            json!({"url": "/fs.md#fsreadfilepath-options-callback"}),
            "fs.readFile(path",
        )
        .await
        .unwrap();
    let card = session
        .timed_call(
            "mark_explore",
            json!({"url": "/errors.md"}),
            "(22; graph complete)",
        )
        .await
        .unwrap();
    session.close().await;
    [first, section, card]
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let rounds = if benching {
        std::env::var("SAMPLES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(3)
    } else {
        1
    };
    let store = import_store(&corpus()).unwrap();
    let server = MarkServerProcess::start::<&str>(store.path(), &[]).unwrap();
    let links = [
        ("clean loopback", LinkShape::CLEAN),
        (
            "50 ms each way, 3% loss",
            LinkShape::lossy(Duration::from_millis(50), 0.03),
        ),
    ];
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut medians = Vec::new();
    for (seed, (label, shape)) in links.into_iter().enumerate() {
        let relay = UdpRelay::start(server.addr, shape, seed as u64 + 1).unwrap();
        let samples: Vec<Round> = (0..rounds)
            .map(|_| rt.block_on(round(&server, &relay)))
            .collect();
        let column = |i: usize| median(samples.iter().map(|r| r[i]).collect());
        medians.push((label, [column(0), column(1), column(2)], relay.stats()));
    }
    println!("{rounds} rounds per link, medians:");
    println!(
        "| link | first fetch (handshake) | section of fs.md | card with full crawl | crawl documents/s | relay: forwarded / dropped |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (label, [first, section, card], stats) in &medians {
        println!(
            "| {label} | {:.0} ms | {:.0} ms | {:.2} s | {:.1} | {} / {} |",
            first.as_secs_f64() * 1000.0,
            section.as_secs_f64() * 1000.0,
            card.as_secs_f64(),
            DOCUMENTS / card.as_secs_f64(),
            stats.forwarded,
            stats.dropped,
        );
    }
    let (clean, lossy) = (&medians[0].1, &medians[1].1);
    println!(
        "lossy / clean: first fetch {:.1}×, section {:.1}×, card {:.1}×",
        lossy[0].as_secs_f64() / clean[0].as_secs_f64(),
        lossy[1].as_secs_f64() / clean[1].as_secs_f64(),
        lossy[2].as_secs_f64() / clean[2].as_secs_f64(),
    );
}
