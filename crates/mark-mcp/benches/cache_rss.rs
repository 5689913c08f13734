//! Whether `--cache-bytes` bounds what a session keeps: a generated tree of
//! many large documents (400 of ~100 KB) served by a real `mark-server`, read
//! by the release `mark-mcp` binary over stdio (mark-bench's rmcp client
//! session) with a small bound (1 MB, 8 MB) and with a bound larger than the
//! tree (the unbounded baseline). Every document is fetched in outline mode
//! and then one of its sections, so the cache fills and evicts. The process's
//! resident memory is read from `/proc/PID/status` (VmRSS, and VmHWM, its
//! peak) after the handshake, after a warm-up, after the reads and after
//! body lookups (their rows only, `read: 0`, so the cache is not touched;
//! the index lives in the server, whose resident memory is read before and
//! after all lookups).
//!
//! Search in use: the release `mark-mcp` over the same tree as a `--root`
//! (its own index, no crawl: `--crawl-docs 1`), and over the explore
//! bench's generated 100,000-file tree (`mark_testkit::write_linked_tree`),
//! each with the index in memory (`--index-ram-bytes 1GiB`) and on disk
//! (`--index-ram-bytes 0`, memory-mapped files): resident memory after
//! start, after the first lookup (which builds the index, timed), after
//! all lookups, its peak, and at the end what of it is anonymous (heap)
//! and what file-backed (mapped index files the kernel may drop).
//!
//! The binary exposes no figure of its cache, so the same reads also go
//! through the library's `Session` in this process, whose
//! `cache_bytes_used` is the cache's own accounting, checked after every call
//! against the bound.
//!
//! Linux only (`/proc`). Run with `cargo bench -p mark-mcp --bench
//! cache_rss`; without `--bench` (as `cargo test --benches` runs it) it reads
//! a tenth of the tree, to check that it works. Numbers in the crate README.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use mark_bench::{McpSession, ServerCommand, resident_kib};
use mark_client::{Client, ClientConfig, Trust};
use mark_mcp::fetch::{FetchMode, FetchParams, fetch};
use mark_mcp::session::Session;
use mark_mcp::settings::Settings;
use mark_mcp::source::Source;
use mark_mcp::sources::RemoteSource;
use mark_proto::MarkUrl;
use mark_testkit::{MarkServerProcess, import_store};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

/// Documents in the generated tree.
const DOCS: usize = 400;
/// Sections per document (`## Section K`, ~5 KB each: under the outline
/// threshold, so a section comes whole).
const SECTIONS: usize = 20;
/// Bytes of text per section.
const SECTION_BYTES: usize = 5_000;
/// Documents read before the "after warm-up" sample.
const WARMUP_DOCS: usize = 20;
/// Larger than the whole tree: the unbounded baseline.
const UNBOUNDED: usize = 1 << 30;

const WORDS: [&str; 16] = [
    "harbour",
    "tide",
    "sensor",
    "reading",
    "buffer",
    "quay",
    "ferry",
    "gauge",
    "window",
    "ingest",
    "alert",
    "dashboard",
    "island",
    "probe",
    "retention",
    "metric",
];

/// `DOCS` documents of ~100 KB in 8 folders, with varied text (a small
/// linear congruential generator picks the words).
fn generated_tree(docs: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut word = || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        WORDS[(seed >> 60) as usize]
    };
    for d in 0..docs {
        let folder = dir.path().join(format!("f{}", d % 8));
        std::fs::create_dir_all(&folder).unwrap();
        let mut text = format!("# Document {d}\n\nA generated document for the cache bound.\n");
        for s in 0..SECTIONS {
            text.push_str(&format!("\n## Section {s}\n\n"));
            let start = text.len();
            while text.len() - start < SECTION_BYTES {
                text.push_str(word());
                text.push(if (text.len() - start) % 400 < 8 {
                    '\n'
                } else {
                    ' '
                });
            }
            text.push('\n');
        }
        std::fs::write(folder.join(format!("d{d:03}.md")), text).unwrap();
    }
    dir
}

fn doc_path(d: usize) -> String {
    format!("/f{}/d{d:03}.md", d % 8)
}

/// A field of `/proc/PID/status` in KiB (`RssAnon:`, `RssFile:`, …).
fn status_kib(pid: u32, name: &str) -> u64 {
    mark_bench::proc_status_kib(pid, name)
        .unwrap_or_else(|| panic!("no {name} in /proc/{pid}/status"))
}

/// VmRSS and VmHWM of `pid`, in KiB.
fn memory_kib(pid: u32) -> (u64, u64) {
    resident_kib(pid).unwrap_or_else(|| panic!("no memory figures for {pid}"))
}

fn outline_args(d: usize) -> serde_json::Value {
    json!({ "url": doc_path(d), "mode": "outline" })
}

fn section_url(d: usize) -> String {
    format!("{}#section-{}", doc_path(d), d % SECTIONS)
}

/// Resident memory of one binary run, in KiB.
struct Run {
    bound: usize,
    startup: u64,
    warm: u64,
    end: u64,
    peak: u64,
    after_lookups: u64,
}

/// Body lookups, any word, on the generated tree of large documents.
const LOOKUPS: [&str; 8] = [
    "harbour tide",
    "sensor reading buffer",
    "ferry gauge quay",
    "alert dashboard",
    "island probe window",
    "retention metric",
    "ingest alert tide",
    "document generated",
];

fn lookup_args(query: &str) -> serde_json::Value {
    // force: a repeated lookup sends its rows again (not `unchanged`).
    json!({ "query": query, "match": "body", "read": 0, "force": true })
}

async fn lookups(session: &mut McpSession, queries: &[&str]) {
    for q in queries {
        let r = session.call("mark_lookup", lookup_args(q)).await.unwrap();
        assert!(!r.is_error && r.text.contains('#'), "{q}: {}", r.text);
    }
}

async fn binary_run(server: &MarkServerProcess, bound: usize, docs: usize) -> Run {
    let command = ServerCommand::new(
        env!("CARGO_BIN_EXE_mark-mcp"),
        server.reader_args(&["--cache-bytes", &bound.to_string()]),
    );
    let mut session = McpSession::start(&command).await.unwrap();
    let pid = session.pid().unwrap();
    let (startup, _) = memory_kib(pid);
    let mut warm = 0;
    for d in 0..docs {
        let outline = session.call("mark_fetch", outline_args(d)).await.unwrap();
        assert!(
            !outline.is_error && outline.text.contains("section-1"),
            "{}",
            outline.text
        );
        let section = session
            .call("mark_fetch", json!({ "url": section_url(d) }))
            .await
            .unwrap();
        assert!(
            !section.is_error && section.text.contains(&format!("Section {}", d % SECTIONS)),
            "{}",
            section.text
        );
        if d + 1 == WARMUP_DOCS.min(docs) {
            warm = memory_kib(pid).0;
        }
    }
    let (end, peak) = memory_kib(pid);
    lookups(&mut session, &LOOKUPS).await;
    let after_lookups = memory_kib(pid).0;
    session.close().await;
    Run {
        bound,
        startup,
        warm,
        end,
        peak,
        after_lookups,
    }
}

/// Resident memory of a `--root` run with search in use, in KiB.
struct SearchRun {
    tree: &'static str,
    on_disk: bool,
    startup: u64,
    first: u64,
    first_seconds: f64,
    after: u64,
    peak: u64,
    anon: u64,
    file: u64,
}

async fn search_run(
    tree: &'static str,
    root: &std::path::Path,
    queries: &[&str],
    on_disk: bool,
) -> SearchRun {
    let index_dir = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = vec![
        "--root".into(),
        root.display().to_string(),
        "--crawl-docs".into(),
        "1".into(),
        // The first lookup builds the index of 100,000 files in the call.
        "--timeout".into(),
        "300s".into(),
        "--index-dir".into(),
        index_dir.path().display().to_string(),
        "--index-ram-bytes".into(),
    ];
    args.push(if on_disk { "0" } else { "1GiB" }.into());
    let command = ServerCommand::new(env!("CARGO_BIN_EXE_mark-mcp"), args);
    let mut session = McpSession::start(&command).await.unwrap();
    let pid = session.pid().unwrap();
    let startup = memory_kib(pid).0;
    let started = Instant::now();
    lookups(&mut session, &queries[..1]).await;
    let first_seconds = started.elapsed().as_secs_f64();
    let first = memory_kib(pid).0;
    lookups(&mut session, &queries[1..]).await;
    lookups(&mut session, queries).await;
    let (after, peak) = memory_kib(pid);
    let (anon, file) = (status_kib(pid, "RssAnon:"), status_kib(pid, "RssFile:"));
    let folders = std::fs::read_dir(index_dir.path()).unwrap().count();
    assert_eq!(
        folders,
        usize::from(on_disk),
        "an index folder only on disk"
    );
    session.close().await;
    SearchRun {
        tree,
        on_disk,
        startup,
        first,
        first_seconds,
        after,
        peak,
        anon,
        file,
    }
}

/// The same reads through the library in this process; returns the largest
/// `cache_bytes_used` seen after any call and the figure at the end.
async fn accounted_run(server: &MarkServerProcess, bound: usize, docs: usize) -> (usize, usize) {
    let client = Client::new(ClientConfig {
        trust: Trust::Pin(server.fingerprint),
        ..ClientConfig::default()
    })
    .unwrap();
    let source: Arc<dyn Source> = Arc::new(RemoteSource::new(
        MarkUrl::parse(&server.url()).unwrap(),
        client,
    ));
    let session = Session::new(
        source,
        Settings {
            cache_bytes: bound,
            ..Settings::default()
        },
    );
    let mut most = 0;
    for d in 0..docs {
        for params in [
            FetchParams {
                url: doc_path(d),
                mode: Some(FetchMode::Outline),
                ..FetchParams::default()
            },
            FetchParams {
                url: section_url(d),
                ..FetchParams::default()
            },
        ] {
            let t = fetch(&session, params, Instant::now()).await;
            assert_eq!(t.status, "ok", "{}", t.render());
            let used = session.cache_bytes_used();
            assert!(
                used <= bound,
                "the cache holds {used} bytes over its bound {bound}"
            );
            most = most.max(used);
        }
    }
    (most, session.cache_bytes_used())
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let docs = if benching { DOCS } else { DOCS / 10 };
    let tree = generated_tree(docs);
    let tree_bytes: u64 = (0..docs)
        .map(|d| {
            std::fs::metadata(tree.path().join(&doc_path(d)[1..]))
                .unwrap()
                .len()
        })
        .sum();
    let store = import_store(tree.path()).unwrap();
    let server = MarkServerProcess::start::<&str>(store.path(), &[]).unwrap();
    let server_before = memory_kib(server.child.id()).0;
    let bounds = [1_000_000, 8_000_000, UNBOUNDED];
    let linked_docs = if benching { 100_000 } else { 1_000 };
    let linked = tempfile::tempdir().unwrap();
    mark_testkit::write_linked_tree(linked.path(), linked_docs).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (runs, accounts, searches) = rt.block_on(async {
        let mut runs = Vec::new();
        let mut accounts = Vec::new();
        for bound in bounds {
            runs.push(binary_run(&server, bound, docs).await);
            accounts.push(accounted_run(&server, bound, docs).await);
        }
        let mut searches = Vec::new();
        for on_disk in [false, true] {
            searches.push(search_run("large documents", tree.path(), &LOOKUPS, on_disk).await);
            searches.push(
                search_run(
                    "linked tree",
                    linked.path(),
                    &mark_testkit::LINKED_TREE_QUERIES,
                    on_disk,
                )
                .await,
            );
        }
        (runs, accounts, searches)
    });
    let server_after = memory_kib(server.child.id()).0;
    println!(
        "cache_rss: {docs} documents, {:.1} MiB of markdown; each read in outline mode, then one section\n",
        tree_bytes as f64 / (1024.0 * 1024.0)
    );
    println!(
        "| --cache-bytes | RSS after start MiB | after {WARMUP_DOCS} docs | at end | peak (VmHWM) | end − start | peak − start | after {} lookups | cache's own max bytes_used (in process) |",
        LOOKUPS.len()
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (run, (most, _end)) in runs.iter().zip(&accounts) {
        let bound = if run.bound == UNBOUNDED {
            "1 GiB (unbounded)".to_string()
        } else {
            format!("{} MB", run.bound / 1_000_000)
        };
        println!(
            "| {bound} | {} | {} | {} | {} | {} | {} | {} | {:.2} MB |",
            mib(run.startup),
            mib(run.warm),
            mib(run.end),
            mib(run.peak),
            mib(run.end.saturating_sub(run.startup)),
            mib(run.peak.saturating_sub(run.startup)),
            mib(run.after_lookups),
            *most as f64 / 1_000_000.0
        );
    }
    println!(
        "\nmark-server (holds the index of these lookups): RSS {} MiB before any lookup, {} MiB after all\n",
        mib(server_before),
        mib(server_after)
    );
    let linked_bytes = tree_size(linked.path());
    println!(
        "search in use, mark-mcp --root: large documents = the tree above; linked tree = {linked_docs} files, {:.1} MiB of markdown\n",
        linked_bytes as f64 / (1024.0 * 1024.0)
    );
    println!(
        "| tree | index | RSS after start MiB | after first lookup | first lookup s | after all (each query twice) | peak (VmHWM) | at end: anonymous | file-backed |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in &searches {
        println!(
            "| {} | {} | {} | {} | {:.2} | {} | {} | {} | {} |",
            r.tree,
            if r.on_disk { "on disk" } else { "in memory" },
            mib(r.startup),
            mib(r.first),
            r.first_seconds,
            mib(r.after),
            mib(r.peak),
            mib(r.anon),
            mib(r.file)
        );
    }
}

/// Bytes of the markdown files under `dir`.
fn tree_size(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                tree_size(&e.path())
            } else {
                m.len()
            }
        })
        .sum()
}
