//! `mark_explore`: time to the first card, with the link graph cold (a new
//! session: the card waits for the whole crawl) and warm (graph built), on
//! the Node.js API corpus and on a generated 10,000-document tree, both read
//! in process (`--root`); and crawl throughput, documents per second, from a
//! real `mark-server` over loopback QUIC. Run with `cargo bench -p mark-mcp
//! --bench explore` (release); numbers in the crate README.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use link_graph::CrawlLimits;
use mark_client::{Client, ClientConfig, Trust};
use mark_mcp::crawl::{CrawlSettings, SessionGraph, Unwatched, Waited};
use mark_mcp::explore::{ExploreParams, explore};
use mark_mcp::session::Session;
use mark_mcp::settings::Settings;
use mark_mcp::source::Source;
use mark_mcp::sources::{LocalSource, RemoteSource};
use mark_proto::MarkUrl;
use mark_testkit::{MarkServerProcess, import_store, write_linked_tree};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

const TREE_DOCS: usize = 10_000;

fn node_corpus() -> PathBuf {
    std::env::var_os("MARK_CORPORA")
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora"),
            PathBuf::from,
        )
        .join("nodejs-api")
}

/// The linked 10,000-document tree (see `mark_testkit::write_linked_tree`).
fn generated_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_linked_tree(dir.path(), TREE_DOCS).unwrap();
    dir
}

fn card_settings() -> Settings {
    Settings {
        crawl: CrawlSettings {
            // The whole 10k tree, past the default 5,000-document bound.
            limits: CrawlLimits {
                max_documents: 20_000,
                ..CrawlSettings::default().limits
            },
            wait: Duration::from_secs(600),
            ..CrawlSettings::default()
        },
        ..Settings::default()
    }
}

fn card(rt: &Runtime, session: &Session, url: &str) -> usize {
    // `force`: a repeated card would otherwise be the one-line `unchanged`.
    let params = ExploreParams {
        url: url.to_string(),
        cursor: None,
        force: true,
    };
    let t = rt.block_on(explore(session, params, Instant::now()));
    assert_eq!(t.status, "ok", "{}", t.render());
    assert!(t.text.contains("graph complete"), "{}", t.text);
    t.render().len()
}

fn first_card(c: &mut Criterion) {
    let rt = Runtime::new().unwrap();
    let tree = generated_tree();
    let cases = [
        ("node", node_corpus(), "/errors.md"),
        ("tree10k", tree.path().to_path_buf(), "/hubs/hub-3.md"),
    ];
    let mut group = c.benchmark_group("first_card");
    group.sample_size(10);
    for (name, root, url) in &cases {
        let source: Arc<dyn Source> = Arc::new(LocalSource::open(root, false).unwrap());
        group.bench_function(format!("{name}/cold"), |b| {
            b.iter(|| {
                let session = Session::new(Arc::clone(&source), card_settings());
                card(&rt, &session, url)
            })
        });
        let session = Session::new(Arc::clone(&source), card_settings());
        card(&rt, &session, url);
        group.bench_function(format!("{name}/warm"), |b| {
            b.iter(|| card(&rt, &session, url))
        });
    }
    group.finish();
}

fn crawl_over_quic(c: &mut Criterion) {
    let rt = Runtime::new().unwrap();
    let tree = generated_tree();
    let store = import_store(tree.path()).unwrap();
    let server = MarkServerProcess::start::<&str>(store.path(), &[]).unwrap();
    let url = MarkUrl::parse(&server.url()).unwrap();
    let mut group = c.benchmark_group("crawl_quic");
    group.sample_size(10);
    group.throughput(Throughput::Elements((TREE_DOCS + 20) as u64));
    group.bench_function("tree10k", |b| {
        b.iter(|| {
            rt.block_on(async {
                // A new client each time: the handshake is part of a session's crawl.
                let client = Client::new(ClientConfig {
                    trust: Trust::Pin(server.fingerprint),
                    ..ClientConfig::default()
                })
                .unwrap();
                let source: Arc<dyn Source> = Arc::new(RemoteSource::new(url.clone(), client));
                let graph = SessionGraph::new(source, card_settings().crawl);
                assert!(graph.start(std::time::Instant::now(), false));
                let waited = graph.wait(Duration::from_secs(600), &Unwatched).await;
                assert_eq!(waited, Waited::Settled);
                assert!(graph.backlinks("/hubs/hub-0.md").1.complete);
            })
        })
    });
    group.finish();
}

criterion_group!(benches, first_card, crawl_over_quic);
criterion_main!(benches);
