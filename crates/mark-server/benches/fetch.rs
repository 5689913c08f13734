//! FETCH round trips on loopback against a real `mark-server` process.
//!
//! The server serves a versioned store imported from the shared Node.js API
//! corpus (`../shared/corpora/nodejs-api`, or `$MARK_CORPORA/nodejs-api`);
//! the requests fetch `/os.md` (36 KB, the corpus median) unless said:
//!
//! - `warm_sequential`: one client, one connection, one request at a time;
//! - `warm_concurrent_64`: one client, one connection, 64 requests at once;
//! - `fresh_connection`: a new client (new endpoint, new QUIC + TLS
//!   handshake) for every request — what connection reuse saves;
//! - `warm_sequential_health`: `/health` (no file, no hash) on the warm
//!   connection: the floor of the transport itself;
//! - `engine_in_process`: `mark_store::Engine::handle` on the same store
//!   without any network, the floor the transport adds to.
//!
//! Criterion measures each; afterwards a summary table with the median
//! latency per request and the requests per second of each way is printed
//! to stdout. Run in release: `cargo bench -p mark-server`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mark_client::{Client, ClientConfig, Trust};
use mark_proto::{Request, Status, Verb};
use mark_store::{Engine, StoreMode};
use mark_testkit::{MarkServerProcess, import_store};
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};
use tokio::runtime::Runtime;

const DOC: &str = "/os.md";
const CONCURRENCY: usize = 64;

fn corpus() -> PathBuf {
    let base = std::env::var_os("MARK_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora")
        });
    base.join("nodejs-api")
}

struct Bench {
    runtime: Runtime,
    server: MarkServerProcess,
    store: mark_testkit::TempStore,
}

impl Bench {
    fn start() -> Bench {
        let store = import_store(&corpus()).expect("importing the corpus (is MARK_CORPORA set?)");
        let server =
            MarkServerProcess::start(store.path(), &["--stream-timeout-ms", "30000"]).unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        Bench {
            runtime,
            server,
            store,
        }
    }

    /// An engine over the served store, for the in-process baseline.
    fn engine(&self) -> Engine {
        Engine::open(self.store.path(), StoreMode::Versioned, None).unwrap()
    }

    fn client(&self) -> Client {
        // The client binds its endpoint on the runtime it is made in.
        let _runtime = self.runtime.enter();
        Client::new(ClientConfig {
            trust: Trust::Pin(self.server.fingerprint),
            ..Default::default()
        })
        .unwrap()
    }

    async fn fetch(&self, client: &Client) {
        self.fetch_path(client, DOC).await;
    }

    async fn fetch_path(&self, client: &Client, path: &str) {
        let resp = client
            .request(
                "127.0.0.1",
                self.server.addr.port(),
                Request::new(Verb::Fetch, path),
            )
            .await
            .unwrap();
        assert_eq!(resp.status, Status::Ok);
    }

    async fn fetch_batch(&self, client: &Client) {
        futures::future::join_all((0..CONCURRENCY).map(|_| self.fetch(client))).await;
    }

    async fn fetch_fresh(&self) {
        let client = self.client();
        self.fetch(&client).await;
    }
}

fn fetch(c: &mut Criterion) {
    let bench = Bench::start();
    let warm = bench.client();
    bench.runtime.block_on(bench.fetch(&warm));

    let mut group = c.benchmark_group("fetch");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Elements(1));
    group.bench_function("warm_sequential", |b| {
        b.iter_custom(|iters| {
            bench.runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    bench.fetch(&warm).await;
                }
                start.elapsed()
            })
        })
    });
    group.bench_function("warm_sequential_health", |b| {
        b.iter_custom(|iters| {
            bench.runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    bench.fetch_path(&warm, "/health").await;
                }
                start.elapsed()
            })
        })
    });
    group.throughput(Throughput::Elements(CONCURRENCY as u64));
    group.bench_function("warm_concurrent_64", |b| {
        b.iter_custom(|iters| {
            bench.runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    bench.fetch_batch(&warm).await;
                }
                start.elapsed()
            })
        })
    });
    group.throughput(Throughput::Elements(1));
    group.bench_function("fresh_connection", |b| {
        b.iter_custom(|iters| {
            bench.runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    bench.fetch_fresh().await;
                }
                start.elapsed()
            })
        })
    });
    let engine = bench.engine();
    let request = Request::new(Verb::Fetch, DOC);
    group.bench_function("engine_in_process", |b| {
        b.iter(|| engine.handle(&request, SystemTime::now()))
    });
    group.finish();

    summary(&bench, &warm, &engine);
}

/// Times `n` sequential runs of `one`: (median latency, runs per second).
async fn sequential<F: Future<Output = ()>>(
    n: usize,
    mut one: impl FnMut() -> F,
) -> (Duration, f64) {
    let mut samples = Vec::with_capacity(n);
    let start = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        one().await;
        samples.push(t.elapsed());
    }
    (median(samples), n as f64 / start.elapsed().as_secs_f64())
}

/// Median per-request latency and requests per second of each way.
fn summary(bench: &Bench, warm: &Client, engine: &Engine) {
    let request = Request::new(Verb::Fetch, DOC);
    let rows = bench.runtime.block_on(async {
        let in_process = sequential(2000, || async {
            assert_eq!(
                engine.handle(&request, SystemTime::now()).status,
                Status::Ok
            );
        })
        .await;
        let warm_sequential = sequential(2000, || bench.fetch(warm)).await;
        let health = sequential(2000, || bench.fetch_path(warm, "/health")).await;

        let mut concurrent = Vec::new();
        let start = Instant::now();
        for _ in 0..50 {
            let timed = (0..CONCURRENCY).map(|_| async {
                let t = Instant::now();
                bench.fetch(warm).await;
                t.elapsed()
            });
            concurrent.extend(futures::future::join_all(timed).await);
        }
        let concurrent_rps = (50 * CONCURRENCY) as f64 / start.elapsed().as_secs_f64();

        let fresh = sequential(300, || bench.fetch_fresh()).await;
        [
            ("warm connection, sequential", warm_sequential),
            (
                "warm connection, 64 concurrent",
                (median(concurrent), concurrent_rps),
            ),
            ("fresh connection per request", fresh),
            (
                "warm connection, sequential, /health (transport floor)",
                health,
            ),
            ("engine in process, no network", in_process),
        ]
    });
    println!("\nFETCH {DOC} (36 KB) on loopback, release build, mark-server process");
    println!("| way | median latency | requests/s |");
    println!("|---|---:|---:|");
    for (way, (latency, rps)) in rows {
        println!(
            "| {way} | {:.1} µs | {rps:.0} |",
            latency.as_secs_f64() * 1e6
        );
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

criterion_group!(benches, fetch);
criterion_main!(benches);
