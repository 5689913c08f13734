//! A big Obsidian-style vault read with `--root` and the default options: a
//! generated vault of 20,000 notes (names with spaces, 10 wiki links by
//! name each, frontmatter tags and aliases; `mark_testkit::write_vault`)
//! beside one of 2,000 (the baseline) in the same run. Each round starts the
//! release `mark-mcp` twice (mark-bench's rmcp client session over stdio)
//! and measures from each start: the first `mark_explore` card of a hub note
//! (it waits for the crawl of the whole vault: `graph complete`) and a warm
//! card (another note's, graph built; median of 5), then, in the second process,
//! the first `mark_lookup` (the search index of the whole vault is built in
//! memory, `--index-dir ''`); and the resident memory (VmRSS) after the
//! cards, and after the lookup and a card (index and graph), with its peak
//! (VmHWM). Two more processes measure the kept index (issue 29): the first
//! `mark_lookup` of a process that builds and keeps it (a new `--index-dir`
//! each round), then of the next process, which reads it.
//!
//! Linux only (`/proc`). Run with `cargo bench -p mark-mcp --bench vault`
//! (`SAMPLES=N` rounds per vault, 3 by default); without `--bench` one round
//! on vaults a tenth the size, to check that it works. Numbers in the top
//! README ("Obsidian vaults").
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use mark_bench::{McpSession, ServerCommand, resident_kib};
use mark_testkit::{vault_note_name, write_vault};
use serde_json::json;
use std::path::Path;
use std::time::Duration;

/// Warm cards per round (their median is the round's figure).
const WARM_CARDS: usize = 5;

/// One round: first card, first lookup, warm card, and VmRSS / VmHWM in KiB
/// after the cards (the graph) and after the lookup and a card (index and
/// graph).
struct Round {
    first_card: Duration,
    first_lookup: Duration,
    warm_card: Duration,
    graph_rss: u64,
    rss: u64,
    peak: u64,
    /// The first lookup of a process that builds the index and keeps it.
    kept_build: Duration,
    /// The first lookup of the next process, which reads the kept index.
    kept_read: Duration,
}

/// `mark-mcp --root VAULT --index-dir INDEX_DIR` (`''`: nothing kept).
async fn start(vault: &Path, index_dir: &str) -> McpSession {
    let command = ServerCommand::new(
        env!("CARGO_BIN_EXE_mark-mcp"),
        ["--root", vault.to_str().unwrap(), "--index-dir", index_dir],
    );
    McpSession::start(&command).await.unwrap()
}

/// The first lookup of a new process, for a note's own name (its catalog
/// row, its title, comes first).
async fn first_lookup(vault: &Path, index_dir: &str, notes: usize) -> (Duration, McpSession) {
    let mut session = start(vault, index_dir).await;
    let wanted = vault_note_name(notes / 2);
    let took = session
        .timed_call(
            "mark_lookup",
            json!({ "query": wanted }),
            &format!("{}.md", wanted.replace(' ', "%20")),
        )
        .await
        .unwrap();
    (took, session)
}

/// The path of note `i` (note 0 is a hub).
fn note(i: usize) -> String {
    format!("/Area {:02}/{}.md", i % 40, vault_note_name(i))
}

/// The first card of note `i` in the session (`force` would crawl again).
async fn card(session: &mut McpSession, i: usize) -> Duration {
    let args = json!({ "url": note(i) });
    session
        .timed_call("mark_explore", args, "graph complete)")
        .await
        .unwrap()
}

/// Four processes, each measured from its start: the first card (and warm
/// ones); the first lookup in memory (and a card, for the memory of both);
/// the first lookup building a kept index, then reading it.
async fn round(vault: &Path, notes: usize) -> Round {
    let mut session = start(vault, "").await;
    let first_card = card(&mut session, 0).await;
    let mut warm = Vec::new();
    for i in 1..=WARM_CARDS {
        warm.push(card(&mut session, i * 7).await);
    }
    let (graph_rss, _) = resident_kib(session.pid().unwrap()).unwrap();
    session.close().await;

    let (in_memory, mut session) = first_lookup(vault, "", notes).await;
    card(&mut session, 0).await;
    let (rss, peak) = resident_kib(session.pid().unwrap()).unwrap();
    session.close().await;
    let kept = tempfile::tempdir().unwrap();
    let kept = kept.path().to_str().unwrap();
    let (building, session) = first_lookup(vault, kept, notes).await;
    session.close().await;
    let (reading, session) = first_lookup(vault, kept, notes).await;
    session.close().await;
    Round {
        first_card,
        first_lookup: in_memory,
        kept_build: building,
        kept_read: reading,
        warm_card: median(warm),
        graph_rss,
        rss,
        peak,
    }
}

fn median<T: Ord + Copy>(mut values: Vec<T>) -> T {
    values.sort();
    values[values.len() / 2]
}

fn markdown_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            if e.file_type().unwrap().is_dir() {
                markdown_bytes(&e.path())
            } else {
                e.metadata().unwrap().len()
            }
        })
        .sum()
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let (sizes, rounds) = if benching {
        let samples = std::env::var("SAMPLES").ok().and_then(|s| s.parse().ok());
        ([2_000, 20_000], samples.unwrap_or(3))
    } else {
        ([200, 2_000], 1)
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut rows = Vec::new();
    for notes in sizes {
        let vault = tempfile::tempdir().unwrap();
        write_vault(vault.path(), notes).unwrap();
        let bytes = markdown_bytes(vault.path());
        let samples: Vec<Round> = (0..rounds)
            .map(|_| rt.block_on(round(vault.path(), notes)))
            .collect();
        let column = |f: fn(&Round) -> Duration| median(samples.iter().map(f).collect());
        let kib = |f: fn(&Round) -> u64| median(samples.iter().map(f).collect());
        rows.push((
            notes,
            bytes,
            [
                column(|r| r.first_card),
                column(|r| r.first_lookup),
                column(|r| r.warm_card),
                column(|r| r.kept_build),
                column(|r| r.kept_read),
            ],
            [kib(|r| r.graph_rss), kib(|r| r.rss), kib(|r| r.peak)],
        ));
    }
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!("{rounds} rounds per vault, medians (each round a new mark-mcp --root VAULT):");
    println!(
        "| notes | markdown | first card (full crawl) | first lookup (index built in memory) | first lookup (index built and kept) | first lookup (index kept) | warm card | RSS, cards only | RSS, lookup and card | peak RSS |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (notes, bytes, [card, lookup, warm, build, read], [graph, rss, peak]) in &rows {
        println!(
            "| {notes} | {:.1} MB | {:.2} s | {:.2} s | {:.2} s | {:.0} ms | {:.1} ms | {:.1} MiB | {:.1} MiB | {:.1} MiB |",
            *bytes as f64 / 1e6,
            card.as_secs_f64(),
            lookup.as_secs_f64(),
            build.as_secs_f64(),
            read.as_secs_f64() * 1000.0,
            warm.as_secs_f64() * 1000.0,
            mib(*graph),
            mib(*rss),
            mib(*peak),
        );
    }
    let ((small, _, a, ma), (big, _, b, mb)) = (&rows[0], &rows[1]);
    let ratio = |x: Duration, y: Duration| y.as_secs_f64() / x.as_secs_f64();
    println!(
        "{big} / {small} notes: first card {:.1}×, first lookup {:.1}×, warm card {:.1}×, RSS {:.1}×",
        ratio(a[0], b[0]),
        ratio(a[1], b[1]),
        ratio(a[2], b[2]),
        mb[1] as f64 / ma[1] as f64,
    );
}
