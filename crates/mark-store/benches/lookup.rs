//! LOOKUP cost on a real corpus (the Node.js API reference, 64 files,
//! 3.2 MB, read in place from `../shared/corpora` or `$MARK_CORPORA`):
//! the first LOOKUP after opening (walk + parse + index every document)
//! against repeated LOOKUPs on the kept index, a plain FETCH for scale, and
//! the versioned write path (PUBLISH: temp file, fsync, exclusive link, link
//! switch) with a versioned FETCH, on a temp store.
//!
//! Warm any-word LOOKUPs (what mark-mcp asks: body mode, `terms: any`) go
//! round a query set, its first query run once before measuring; on the
//! Node corpus, on the explore bench's generated 10,000-document tree
//! (`mark_testkit::write_linked_tree`, with its first LOOKUP after opening)
//! and on 100,000 such small files (first LOOKUP timed once, printed). The
//! engine's clock is the bench's start, so no re-check of the folder falls
//! due while measuring: `strace -c` of `… --bench 'tree100k/warm'` against
//! `… --bench 'tree100k/none'` (the same set-up, nothing measured) shows
//! what warm LOOKUPs ask the system (the iteration count is printed).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use mark_proto::{Request, Status, Verb};
use mark_store::{Engine, Op, StoreMode, TokenStore, generate_token};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

fn corpus() -> Option<PathBuf> {
    let base = std::env::var_os("MARK_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora")
        });
    let dir = base.join("nodejs-api");
    dir.is_dir().then_some(dir)
}

fn lookup(query: &str, mode: &str) -> Request {
    Request::new(Verb::Lookup, "/")
        .with_meta("query", query)
        .with_meta("match", mode)
        .with_meta("limit", "20")
}

/// An any-word body LOOKUP, as mark-mcp sends it.
fn any_lookup(query: &str) -> Request {
    lookup(query, "body")
        .with_meta("terms", "any")
        .with_meta("limit", "10")
}

const NODE_QUERIES: [&str; 6] = [
    "fs.readFile callback",
    "stream readable",
    "ERR_INVALID_ARG_TYPE",
    "worker threads message port",
    "buffer from string encoding",
    "http request timeout",
];

/// Measures warm any-word LOOKUPs round `queries` (the first run once
/// before); returns how many LOOKUPs were measured.
fn warm(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    engine: &Engine,
    queries: &[&str],
    now: SystemTime,
) -> u64 {
    let first = engine.handle(&any_lookup(queries[0]), now);
    assert_eq!(first.status, Status::Ok);
    let rest = &queries[1..];
    let mut n: u64 = 0;
    group.bench_function(name, |b| {
        b.iter(|| {
            let q = rest[(n % rest.len() as u64) as usize];
            n += 1;
            black_box(engine.handle(&any_lookup(q), now))
        })
    });
    n
}

fn bench(c: &mut Criterion) {
    let Some(dir) = corpus() else {
        eprintln!(
            "corpus nodejs-api not found under ../shared/corpora or $MARK_CORPORA; nothing to measure"
        );
        return;
    };
    let now = SystemTime::now();
    let mut group = c.benchmark_group("nodejs-api");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));

    group.bench_function("first lookup (open, parse, index 64 files)", |b| {
        b.iter(|| {
            let engine = Engine::open(&dir, StoreMode::Flat, None).unwrap();
            let r = engine.handle(&lookup("stream readable", "catalog"), now);
            assert_eq!(r.status, Status::Ok);
            black_box(r)
        });
    });

    let engine = Engine::open(&dir, StoreMode::Flat, None).unwrap();
    engine.handle(&lookup("warm", "catalog"), now);
    for (name, query, mode) in [
        ("repeat lookup, catalog", "stream readable", "catalog"),
        ("repeat lookup, body", "stream readable", "body"),
        ("repeat lookup, star", "*", "catalog"),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| black_box(engine.handle(&lookup(query, mode), now)))
        });
    }
    group.bench_function("fetch fs.md (254 KB)", |b| {
        b.iter(|| black_box(engine.handle(&Request::new(Verb::Fetch, "/fs.md"), now)));
    });
    warm(
        &mut group,
        "warm any-word lookup",
        &engine,
        &NODE_QUERIES,
        now,
    );
    group.finish();
}

fn tree10k(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    mark_testkit::write_linked_tree(dir.path(), 10_000).unwrap();
    let now = SystemTime::now();
    let mut group = c.benchmark_group("tree10k");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("first lookup (open, parse, index 10,020 files)", |b| {
        b.iter(|| {
            let engine = Engine::open(dir.path(), StoreMode::Flat, None).unwrap();
            let r = engine.handle(&any_lookup(mark_testkit::LINKED_TREE_QUERIES[0]), now);
            assert_eq!(r.status, Status::Ok);
            black_box(r)
        });
    });
    let engine = Engine::open(dir.path(), StoreMode::Flat, None).unwrap();
    warm(
        &mut group,
        "warm any-word lookup",
        &engine,
        &mark_testkit::LINKED_TREE_QUERIES,
        now,
    );
    group.finish();
}

fn tree100k(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    mark_testkit::write_linked_tree(dir.path(), 100_000).unwrap();
    let now = SystemTime::now();
    let engine = Engine::open(dir.path(), StoreMode::Flat, None).unwrap();
    let started = Instant::now();
    let r = engine.handle(&any_lookup(mark_testkit::LINKED_TREE_QUERIES[0]), now);
    assert_eq!(r.status, Status::Ok);
    eprintln!(
        "tree100k: first lookup (parse, index 100,020 files) {:.2} s, one run",
        started.elapsed().as_secs_f64()
    );
    let mut group = c.benchmark_group("tree100k");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    let n = warm(
        &mut group,
        "warm",
        &engine,
        &mark_testkit::LINKED_TREE_QUERIES,
        now,
    );
    eprintln!("tree100k: {n} warm lookups run (criterion's warm-up included)");
    group.finish();
}

fn versioned(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.toml");
    let token = generate_token(&["/**".to_string()], &[Op::Publish], None, &tokens).unwrap();
    let root = dir.path().join("store");
    mark_store::mark(&root).unwrap();
    let engine = Engine::open(
        &root,
        StoreMode::Versioned,
        Some(TokenStore::load(&tokens).unwrap()),
    )
    .unwrap();
    let now = SystemTime::now();
    let body = "# Notes\n\n".to_string() + &"A line of notes about the project.\n".repeat(300);
    let mut group = c.benchmark_group("versioned");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    let mut i = 0u64;
    group.bench_function("publish a new 10 KB version", |b| {
        b.iter(|| {
            i += 1;
            let req = Request::new(Verb::Publish, "/notes.md")
                .with_meta("auth", &token)
                .with_body(format!("{body}{i}\n"));
            let r = engine.handle(&req, now);
            assert_eq!(r.status, Status::Created);
            black_box(r)
        });
    });
    group.bench_function("fetch the current version", |b| {
        b.iter(|| black_box(engine.handle(&Request::new(Verb::Fetch, "/notes.md"), now)));
    });
    group.finish();
}

criterion_group!(benches, bench, tree10k, tree100k, versioned);
criterion_main!(benches);
