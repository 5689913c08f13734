//! Link graph at the size the crawl bounds allow: 10,000 documents, 150,000 edges.
//! Measures build time, backlink and outbound queries, an etag replacement, and memory
//! (the graph's own `approx_bytes()` and the process's resident set growth while building).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::Criterion;
use link_graph::{Edge, LinkGraph, LinkTarget};

const DOCUMENTS: usize = 10_000;
const EDGES_PER_DOCUMENT: usize = 15;
const HUBS: usize = 20;

/// A deterministic pseudo-random sequence (64-bit LCG, high bits).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

fn doc_path(i: usize) -> String {
    format!("/area-{:02}/topic-{i:05}.md", i % 50)
}

/// Document `i`'s edges, made on the fly so the inputs never sit in memory all at once:
/// 13 internal links (a third of them to 20 hub documents, the way `errors.md` attracts
/// links) and 2 external ones, spread over 5 sections, with realistic text lengths.
fn edges(i: usize) -> impl Iterator<Item = Edge> {
    let mut rng = Lcg(i as u64 + 1);
    (0..EDGES_PER_DOCUMENT).map(move |k| {
        let section = Some(format!("section-{}-of-the-document", k % 5));
        let target = if k >= 13 {
            LinkTarget::External(format!(
                "https://example.org/reference/page-{}",
                rng.below(100_000)
            ))
        } else {
            let to = if rng.below(3) == 0 {
                rng.below(HUBS)
            } else {
                rng.below(DOCUMENTS)
            };
            LinkTarget::Document {
                path: doc_path(to),
                fragment: Some(format!("anchor-{}", rng.below(1_000))),
            }
        };
        Edge {
            section,
            text: format!("link text number {k} of {i}"),
            target,
            note: None,
        }
    })
}

fn build() -> LinkGraph {
    let mut graph = LinkGraph::new();
    for i in 0..DOCUMENTS {
        let path = doc_path(i);
        graph
            .update(
                &path,
                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                Some("A document title of moderate length"),
                edges(i),
            )
            .unwrap();
    }
    graph
}

/// Resident set size in bytes, from `/proc/self/status`.
fn rss_bytes() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn report_memory() -> LinkGraph {
    let before = rss_bytes();
    let graph = build();
    let after = rss_bytes();
    let edges: usize = (0..DOCUMENTS)
        .map(|i| graph.outbound(&doc_path(i)).map_or(0, |o| o.len()))
        .sum();
    let approx = graph.approx_bytes();
    println!("graph: {DOCUMENTS} documents, {edges} stored edges (after dedup)");
    println!(
        "approx_bytes: {approx} bytes ({:.1} MiB, {:.0} bytes per edge)",
        approx as f64 / 1048576.0,
        approx as f64 / edges as f64
    );
    if let (Some(before), Some(after)) = (before, after) {
        let grown = after.saturating_sub(before);
        println!(
            "resident set growth while building: {grown} bytes ({:.1} MiB, {:.0} bytes per edge)",
            grown as f64 / 1048576.0,
            grown as f64 / edges as f64
        );
        assert!(grown < 100 * 1024 * 1024, "the graph must fit in 100 MB");
    }
    assert!(approx < 100 * 1024 * 1024, "the graph must fit in 100 MB");
    graph
}

fn benches(c: &mut Criterion, graph: &LinkGraph) {
    let mut group = c.benchmark_group("graph");
    group.sample_size(10);
    group.bench_function("build 10k docs / 150k edges", |b| {
        b.iter(|| black_box(build()))
    });
    group.finish();

    let hub = doc_path(0);
    let typical = doc_path(DOCUMENTS / 2);
    println!(
        "backlinks: hub {} entries, typical {} entries",
        graph.backlinks(&hub).len(),
        graph.backlinks(&typical).len()
    );
    c.bench_function("backlinks of a hub document", |b| {
        b.iter(|| black_box(graph.backlinks(black_box(&hub))))
    });
    c.bench_function("backlinks of a typical document", |b| {
        b.iter(|| black_box(graph.backlinks(black_box(&typical))))
    });
    c.bench_function("outbound of a document", |b| {
        b.iter(|| black_box(graph.outbound(black_box(&typical))))
    });
    c.bench_function("coverage", |b| b.iter(|| black_box(graph.coverage())));
    c.bench_function("update with the same etag (no-op)", |b| {
        let mut graph = build();
        let etag = graph.etag(&typical).unwrap().to_owned();
        b.iter(|| black_box(graph.update(&typical, &etag, None, edges(7)).unwrap()))
    });
    c.bench_function("update with a new etag (replace 15 edges)", |b| {
        let mut graph = build();
        let mut version = 0u64;
        b.iter(|| {
            version += 1;
            let etag = version.to_string();
            black_box(
                graph
                    .update(&typical, &etag, None, edges(version as usize))
                    .unwrap(),
            )
        })
    });
}

fn main() {
    let graph = report_memory();
    let mut criterion = Criterion::default().configure_from_args();
    benches(&mut criterion, &graph);
    criterion.final_summary();
}
