//! LOOKUP cost on a real corpus (the Node.js API reference, 64 files,
//! 3.2 MB, read in place from `../shared/corpora` or `$MARK_CORPORA`):
//! the first LOOKUP after opening (walk + parse + index every document)
//! against repeated LOOKUPs on the kept index (walk + stat only), a plain
//! FETCH for scale, and the versioned write path (PUBLISH: temp file, fsync,
//! exclusive link, link switch) with a versioned FETCH, on a temp store.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use mark_proto::{Request, Status, Verb};
use mark_store::{Engine, Op, StoreMode, TokenStore, generate_token};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

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

criterion_group!(benches, bench, versioned);
criterion_main!(benches);
