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
use mark_testkit::{MarkServerProcess, import_store};
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

/// 100 folders of 100 documents, ~1 KB each, 15 links per document: 12 to
/// documents of other folders, 3 to one of 20 hubs in `/hubs/`.
fn generated_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let per = TREE_DOCS / 100;
    std::fs::create_dir_all(dir.path().join("hubs")).unwrap();
    for h in 0..20 {
        std::fs::write(
            dir.path().join(format!("hubs/hub-{h}.md")),
            format!("# Hub {h}\n\nA hub every tenth document links to.\n"),
        )
        .unwrap();
    }
    for f in 0..100 {
        let folder = dir.path().join(format!("f{f:02}"));
        std::fs::create_dir_all(&folder).unwrap();
        for d in 0..per {
            let mut text = format!(
                "# Document {f}-{d}\n\nThe opening paragraph of document {d} in folder {f}, \
                 long enough to be cut like a real one would be.\n"
            );
            for s in 0..3 {
                text.push_str(&format!("\n## Part {s}\n\nText of part {s}. See "));
                for l in 0..4 {
                    let (tf, td) = ((f + s * 7 + l + 1) % 100, (d * 3 + l + s) % per);
                    text.push_str(&format!(
                        "[doc {tf}-{td}](../f{tf:02}/d{td:03}.md#part-{l}), "
                    ));
                }
                text.push_str(&format!("and [hub](/hubs/hub-{}.md).\n", (d + s) % 20));
            }
            std::fs::write(folder.join(format!("d{d:03}.md")), text).unwrap();
        }
    }
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
