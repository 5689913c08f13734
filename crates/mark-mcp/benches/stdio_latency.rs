//! End-to-end latency of `mark_fetch` and `mark_explore` through stdio: the
//! release `mark-mcp` binary (built by `cargo bench`) started with `--host`
//! at a real `mark-server` holding `crates/mark-mcp/soul` as a versioned store, and
//! driven by mark-bench's rmcp client session. Beside it, in the same run,
//! the baselines that show what stdio and MCP add: a bare `mark-client`
//! FETCH of the same document over the same loopback QUIC, and an MCP tool
//! call that fails before any I/O.
//!
//! Criterion prints no percentiles, so this is its own harness: after a
//! warm-up, the cases are sampled in interleaved rounds (a drift in the
//! machine's load touches every case alike) and each prints its median, p95
//! and max. Run with `cargo bench -p mark-mcp --bench stdio_latency`
//! (`SAMPLES=N` changes the 1,000 rounds); without `--bench` (as `cargo test
//! --benches` runs it) it makes a few rounds only, to check that it works.
//! Numbers in the crate README.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use mark_bench::{McpSession, ServerCommand};
use mark_client::{Client, ClientConfig, Trust};
use mark_proto::{MarkUrl, Status};
use mark_testkit::{MarkServerProcess, import_store};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// A small whole document (1,123 bytes).
const SMALL: &str = "/people/ana-lima.md";
/// Another small one, for the re-read that revalidates (a document the
/// forced fetches do not touch, so its dedup record stays).
const SMALL_REREAD: &str = "/people/jonas-muller.md";
/// A section (~3 KB) of the largest document (33 KB).
const SECTION: &str = "/projects/lantern/roadmap.md#phase-3--paging-gateway";
/// A document whose card has links, backlinks and siblings.
const CARD: &str = "/projects/lantern/index.md";

/// Calls per case in the pass that counts the requests each case sends.
const CHECK_CALLS: usize = 10;

/// What one sample measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    /// Baseline: `mark_fetch` of an invalid URL, answered before any I/O.
    McpRoundTrip,
    /// Baseline: `mark-client` FETCH of `SMALL`, whole body.
    BareFetch,
    /// Baseline: `mark-client` conditional FETCH of `SMALL` (`not-modified`).
    BareConditional,
    /// `mark_fetch force` of `SMALL`, nothing cached (`--cache-bytes 1`):
    /// a whole-body FETCH each time.
    FetchBody,
    /// `mark_fetch force` of `SMALL` with `--fresh-for 0s`: a conditional
    /// FETCH each time (`not-modified`), the body from the cache.
    FetchRevalidated,
    /// `mark_fetch` of an unchanged document with `--fresh-for 0s`: a
    /// conditional FETCH, then the dedup answer.
    RereadRevalidated,
    /// `mark_fetch force url#anchor` of a cached document within
    /// `--fresh-for`: no request.
    SectionCached,
    /// `mark_fetch` of an unchanged document within `--fresh-for`: the
    /// dedup answer, no request.
    RereadCached,
    /// `mark_explore force` with the link graph built, document cached (a
    /// card makes one LIST of the document's folder for its siblings).
    ExploreWarm,
}

impl Case {
    const ALL: [Case; 9] = [
        Case::McpRoundTrip,
        Case::BareFetch,
        Case::BareConditional,
        Case::FetchBody,
        Case::FetchRevalidated,
        Case::RereadRevalidated,
        Case::SectionCached,
        Case::RereadCached,
        Case::ExploreWarm,
    ];

    fn label(self) -> &'static str {
        match self {
            Case::McpRoundTrip => "MCP round trip (tool error before I/O)",
            Case::BareFetch => "bare mark-client FETCH, whole body",
            Case::BareConditional => "bare mark-client FETCH, not-modified",
            Case::FetchBody => "mark_fetch force, whole body over QUIC",
            Case::FetchRevalidated => "mark_fetch force, revalidated (not-modified)",
            Case::RereadRevalidated => "unchanged re-read, revalidated",
            Case::SectionCached => "mark_fetch url#anchor, section from cache",
            Case::RereadCached => "unchanged re-read, within --fresh-for",
            Case::ExploreWarm => "mark_explore force, warm graph",
        }
    }

    /// The baseline this case is compared with: stdio cases that send a
    /// request against the bare FETCH of the same kind, the others against
    /// the bare MCP round trip.
    fn baseline(self) -> Option<Case> {
        match self {
            Case::McpRoundTrip | Case::BareFetch | Case::BareConditional => None,
            Case::FetchBody => Some(Case::BareFetch),
            Case::FetchRevalidated | Case::RereadRevalidated => Some(Case::BareConditional),
            Case::SectionCached | Case::RereadCached | Case::ExploreWarm => {
                Some(Case::McpRoundTrip)
            }
        }
    }
}

/// The processes and clients under test.
struct Rig {
    /// `--cache-bytes 1 --fresh-for 0s`: every fetch moves the body.
    uncached: McpSession,
    /// `--fresh-for 0s`: every fetch revalidates.
    revalidating: McpSession,
    /// `--fresh-for 1h --crawl`: cached documents need no request.
    fresh: McpSession,
    client: Client,
    small_url: MarkUrl,
    small_etag: String,
}

fn mark_mcp(server: &MarkServerProcess, extra: &[&str]) -> ServerCommand {
    ServerCommand::new(env!("CARGO_BIN_EXE_mark-mcp"), server.reader_args(extra))
}

impl Rig {
    async fn sample(&mut self, case: Case) -> Duration {
        match case {
            Case::McpRoundTrip => {
                let r = self
                    .fresh
                    .call("mark_fetch", json!({ "url": "" }))
                    .await
                    .unwrap();
                assert!(r.is_error, "{}", r.text);
                r.wall
            }
            Case::BareFetch => {
                let started = Instant::now();
                let resp = self.client.fetch(&self.small_url, None).await.unwrap();
                let wall = started.elapsed();
                assert_eq!(resp.status, Status::Ok);
                assert!(!resp.body.is_empty());
                wall
            }
            Case::BareConditional => {
                let started = Instant::now();
                let resp = self
                    .client
                    .fetch(&self.small_url, Some(&self.small_etag))
                    .await
                    .unwrap();
                let wall = started.elapsed();
                assert_eq!(resp.status, Status::NotModified);
                wall
            }
            Case::FetchBody => self
                .uncached
                .timed_call(
                    "mark_fetch",
                    json!({ "url": SMALL, "force": true }),
                    "Ana Lima",
                )
                .await
                .unwrap(),
            Case::FetchRevalidated => self
                .revalidating
                .timed_call(
                    "mark_fetch",
                    json!({ "url": SMALL, "force": true }),
                    "Ana Lima",
                )
                .await
                .unwrap(),
            Case::RereadRevalidated => self
                .revalidating
                .timed_call("mark_fetch", json!({ "url": SMALL_REREAD }), "unchanged")
                .await
                .unwrap(),
            Case::SectionCached => self
                .fresh
                .timed_call(
                    "mark_fetch",
                    json!({ "url": SECTION, "force": true }),
                    "Paging gateway",
                )
                .await
                .unwrap(),
            Case::RereadCached => self
                .fresh
                .timed_call("mark_fetch", json!({ "url": SMALL }), "unchanged")
                .await
                .unwrap(),
            Case::ExploreWarm => self
                .fresh
                .timed_call(
                    "mark_explore",
                    json!({ "url": CARD, "force": true }),
                    "graph complete",
                )
                .await
                .unwrap(),
        }
    }
}

/// Median, p95 (nearest rank) and max of `samples`.
fn summary(samples: &mut [Duration]) -> (Duration, Duration, Duration) {
    samples.sort_unstable();
    let n = samples.len();
    let rank = |q: f64| samples[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    (rank(0.5), rank(0.95), samples[n - 1])
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let (warmup, rounds) = if benching {
        let rounds = std::env::var("SAMPLES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1000);
        (100, rounds)
    } else {
        (3, 5)
    };
    let kb = Path::new(env!("CARGO_MANIFEST_DIR")).join("soul");
    let store = import_store(&kb).unwrap();
    let server = MarkServerProcess::start::<&str>(store.path(), &[]).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let results = rt.block_on(async {
        let client = Client::new(ClientConfig {
            trust: Trust::Pin(server.fingerprint),
            ..ClientConfig::default()
        })
        .unwrap();
        let small_url = MarkUrl::parse(&format!("{}{SMALL}", server.url())).unwrap();
        let first = client.fetch(&small_url, None).await.unwrap();
        let small_etag = first
            .meta("etag")
            .expect("mark-server sends an etag")
            .to_string();
        let mut rig = Rig {
            uncached: McpSession::start(&mark_mcp(
                &server,
                &["--cache-bytes", "1", "--fresh-for", "0s"],
            ))
            .await
            .unwrap(),
            revalidating: McpSession::start(&mark_mcp(&server, &["--fresh-for", "0s"]))
                .await
                .unwrap(),
            fresh: McpSession::start(&mark_mcp(&server, &["--fresh-for", "1h", "--crawl"]))
                .await
                .unwrap(),
            client,
            small_url,
            small_etag,
        };
        // The first reads deliver; from then on the re-reads are unchanged.
        rig.revalidating
            .timed_call("mark_fetch", json!({ "url": SMALL_REREAD }), "Jonas")
            .await
            .unwrap();
        rig.fresh
            .timed_call("mark_fetch", json!({ "url": SMALL }), "Ana Lima")
            .await
            .unwrap();
        for _ in 0..warmup {
            for case in Case::ALL {
                rig.sample(case).await;
            }
        }
        // Which cases reach the server: requests logged per call, counted
        // case by case once the log has caught up.
        let mut requests_per_call = Vec::new();
        for case in Case::ALL {
            let before = server.requests_seen().len();
            for _ in 0..CHECK_CALLS {
                rig.sample(case).await;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            let logged = server.requests_seen().len() - before;
            requests_per_call.push(logged as f64 / CHECK_CALLS as f64);
        }
        let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); Case::ALL.len()];
        for _ in 0..rounds {
            for (i, case) in Case::ALL.into_iter().enumerate() {
                samples[i].push(rig.sample(case).await);
            }
        }
        rig.uncached.close().await;
        rig.revalidating.close().await;
        rig.fresh.close().await;
        rig.client.close().await;
        (samples, requests_per_call)
    });
    let (mut samples, requests_per_call) = results;
    let stats: Vec<(Duration, Duration, Duration)> =
        samples.iter_mut().map(|s| summary(s)).collect();
    let median_of = |case: Case| {
        let i = Case::ALL.iter().position(|c| *c == case).unwrap_or(0);
        stats[i].0
    };
    println!(
        "stdio_latency: {rounds} interleaved rounds after {warmup} warm-up rounds; \
         requests/call: mark-server's log over {CHECK_CALLS} calls of the case alone\n"
    );
    println!("| case | median ms | p95 ms | max ms | requests/call | median ÷ baseline |");
    println!("|---|---:|---:|---:|---:|---|");
    for ((case, (median, p95, max)), requests) in
        Case::ALL.into_iter().zip(&stats).zip(&requests_per_call)
    {
        let ratio = case.baseline().map_or_else(
            || "(baseline)".to_string(),
            |b| {
                format!(
                    "{:.2}× {}",
                    median.as_secs_f64() / median_of(b).as_secs_f64(),
                    match b {
                        Case::BareFetch => "bare FETCH",
                        Case::BareConditional => "bare not-modified",
                        _ => "MCP round trip",
                    }
                )
            },
        );
        println!(
            "| {} | {} | {} | {} | {requests} | {ratio} |",
            case.label(),
            ms(*median),
            ms(*p95),
            ms(*max)
        );
    }
}
