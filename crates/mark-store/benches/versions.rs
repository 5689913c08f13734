//! VERSIONS and APPEND on a document appended to 1,000 times (10 KB to
//! start, a 100-byte line each time), on a temp store: VERSIONS with the
//! version records kept (each file stat-ed, no body read) against VERSIONS
//! on a freshly opened engine (every version file read and hashed, as before
//! the records existed), and what 1,000 appends cost on disk (each version
//! is a full copy, printed once before the timings).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use mark_proto::{Request, Status, Verb};
use mark_store::{Engine, Op, StoreMode, TokenStore, generate_token};
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, SystemTime};

const APPENDS: u64 = 1000;

fn bytes_under(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                bytes_under(&e.path())
            } else if m.is_file() {
                m.len()
            } else {
                0
            }
        })
        .sum()
}

fn bench(c: &mut Criterion) {
    let now = SystemTime::now();
    let store = tempfile::tempdir().unwrap();
    let secrets = tempfile::tempdir().unwrap();
    let file = secrets.path().join("tokens.toml");
    let token = generate_token(&["/**".to_string()], &[Op::Publish], None, &file).unwrap();
    let writer = Engine::open(
        store.path(),
        StoreMode::Versioned,
        Some(TokenStore::load(&file).unwrap()),
    )
    .unwrap();
    let start = format!("# Log\n\n{}\n", "x".repeat(10_000));
    let publish = Request::new(Verb::Publish, "/log.md")
        .with_meta("auth", &token)
        .with_body(start.clone().into_bytes());
    assert_eq!(writer.handle(&publish, now).status, Status::Created);
    let line = format!("{}\n", "y".repeat(99));
    for v in 1..=APPENDS {
        let append = Request::new(Verb::Append, "/log.md")
            .with_meta("auth", &token)
            .with_meta("expected-version", v.to_string())
            .with_body(line.clone().into_bytes());
        assert_eq!(writer.handle(&append, now).status, Status::Created);
    }
    let on_disk = bytes_under(store.path());
    let current = start.len() as u64 + APPENDS * (line.len() as u64 + 1);
    eprintln!(
        "APPEND x{APPENDS}: current version {current} bytes, store {on_disk} bytes on disk ({:.0}x the current version: each version is a full copy)",
        on_disk as f64 / current as f64
    );

    let versions = Request::new(Verb::Versions, "/log.md");
    let mut group = c.benchmark_group("versions");
    group
        .measurement_time(Duration::from_secs(5))
        .sample_size(20);
    group.bench_function("1001 versions, records kept", |b| {
        assert_eq!(writer.handle(&versions, now).status, Status::Ok);
        b.iter(|| black_box(writer.handle(&versions, now)));
    });
    group.bench_function("1001 versions, every file read (fresh engine)", |b| {
        b.iter(|| {
            let reader = Engine::open(store.path(), StoreMode::Versioned, None).unwrap();
            black_box(reader.handle(&versions, now))
        });
    });
    group.bench_function("fresh engine open alone (for the difference)", |b| {
        b.iter(|| black_box(Engine::open(store.path(), StoreMode::Versioned, None).unwrap()));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
