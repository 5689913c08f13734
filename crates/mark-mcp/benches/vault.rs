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
//! each round), then of the next process, which reads it; and the first
//! card of a process after one whose crawl kept the graph (it starts from
//! the kept graph and revalidates it).
//!
//! A second table times cards on big layouts: 40,000 notes (`write_vault`),
//! 20,000 in 200 folders of 100 sharing their names (`write_shared_names`:
//! every `[[Note NNN]]` resolved by the vault rule), and 12,000 folders of
//! one note each (`write_folder_per_note`: more listings than a server crawl
//! sends). Per round, a process with `--crawl-wait 2s` times its first card
//! (bounded by that wait, whatever the vault), and a process with a wait
//! long enough times its first card with the graph complete (the whole
//! crawl) and the median of 5 warm cards of other notes. These run with
//! `--graph-bytes 96MiB`: the default 32 MiB holds about 26,000 notes of
//! this vault, past which cards say the bound was reached.
//!
//! Linux only (`/proc`). Run with `cargo bench -p mark-mcp --bench vault`
//! (`SAMPLES=N` rounds per vault, 3 by default; `PART=cards` for the second
//! table alone); without `--bench` one round
//! on vaults a tenth the size, to check that it works. Numbers in the top
//! README ("Obsidian vaults").
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use mark_bench::{McpSession, ServerCommand, resident_kib};
use mark_testkit::{
    folder_note_name, shared_name_path, vault_note_name, write_folder_per_note, write_shared_names,
    write_vault,
};
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
    /// The first card of a process that starts from the graph the one
    /// before kept (its crawl revalidates it).
    kept_card: Duration,
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
    let (reading, mut session) = first_lookup(vault, kept, notes).await;
    // This process's crawl keeps the graph; the next one starts from it.
    card(&mut session, 0).await;
    session.close().await;
    let mut session = start(vault, kept).await;
    let kept_card = card(&mut session, 0).await;
    session.close().await;
    Round {
        kept_card,
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

/// A big layout for the cards table: how to write it, and the note of card
/// `i` (card 0 first, then warm ones).
struct Layout {
    name: String,
    write: Box<dyn Fn(&Path)>,
    note: fn(usize) -> String,
}

fn layouts(scale: usize) -> Vec<Layout> {
    let (flat, folders, bundles) = (4_000 * scale, 20 * scale, 1_200 * scale);
    vec![
        Layout {
            name: format!("{flat} notes (write_vault)"),
            write: Box::new(move |p| write_vault(p, flat).unwrap()),
            note,
        },
        Layout {
            name: format!("{folders}×100 notes sharing names"),
            write: Box::new(move |p| write_shared_names(p, folders, 100).unwrap()),
            note: |i| shared_name_path(i * 3 % 20, i * 7 % 100),
        },
        Layout {
            name: format!("{bundles} folders of one note"),
            write: Box::new(move |p| write_folder_per_note(p, bundles).unwrap()),
            note: |i| {
                let name = folder_note_name(i * 11);
                format!("/{name}/{name}.md")
            },
        },
    ]
}

/// `mark-mcp --root VAULT --crawl-wait WAIT` with a graph bound the layouts fit in.
async fn start_waiting(vault: &Path, wait: &str) -> McpSession {
    let root = vault.to_str().unwrap();
    let command = ServerCommand::new(
        env!("CARGO_BIN_EXE_mark-mcp"),
        [
            "--root",
            root,
            "--index-dir",
            "",
            "--crawl-wait",
            wait,
            "--graph-bytes",
            "96MiB",
        ],
    );
    McpSession::start(&command).await.unwrap()
}

/// One round of the cards table: the first card within `--crawl-wait 2s`,
/// the first card with the graph complete, the median warm card.
async fn cards_round(vault: &Path, note: fn(usize) -> String) -> [Duration; 3] {
    let mut session = start_waiting(vault, "2s").await;
    let bounded = session
        .timed_call("mark_explore", json!({ "url": note(0) }), "## Backlinks")
        .await
        .unwrap();
    session.close().await;
    let mut session = start_waiting(vault, "600s").await;
    let args = |i: usize| json!({ "url": note(i) });
    let whole = session
        .timed_call("mark_explore", args(0), "graph complete)")
        .await
        .unwrap();
    let mut warm = Vec::new();
    for i in 1..=WARM_CARDS {
        let took = session.timed_call("mark_explore", args(i), "graph complete)");
        warm.push(took.await.unwrap());
    }
    session.close().await;
    [bounded, whole, median(warm)]
}

fn cards_table(rt: &tokio::runtime::Runtime, scale: usize, rounds: usize) {
    println!(
        "\nCards on big layouts, {rounds} rounds, medians (--index-dir '' --graph-bytes 96MiB):"
    );
    println!("| vault | first card, --crawl-wait 2s | first card, whole crawl | warm card |");
    println!("|---|---:|---:|---:|");
    for layout in layouts(scale) {
        let vault = tempfile::tempdir().unwrap();
        (layout.write)(vault.path());
        let samples: Vec<[Duration; 3]> = (0..rounds)
            .map(|_| rt.block_on(cards_round(vault.path(), layout.note)))
            .collect();
        let column = |k: usize| median(samples.iter().map(|s| s[k]).collect());
        println!(
            "| {} | {:.2} s | {:.2} s | {:.1} ms |",
            layout.name,
            column(0).as_secs_f64(),
            column(1).as_secs_f64(),
            column(2).as_secs_f64() * 1000.0,
        );
    }
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
    let scale = if benching { 10 } else { 1 };
    if std::env::var("PART").is_ok_and(|p| p == "cards") {
        cards_table(&rt, scale, rounds);
        return;
    }
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
                column(|r| r.kept_card),
            ],
            [kib(|r| r.graph_rss), kib(|r| r.rss), kib(|r| r.peak)],
        ));
    }
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!("{rounds} rounds per vault, medians (each round a new mark-mcp --root VAULT):");
    println!(
        "| notes | markdown | first card (full crawl) | first card (graph kept) | first lookup (index built in memory) | first lookup (index built and kept) | first lookup (index kept) | warm card | RSS, cards only | RSS, lookup and card | peak RSS |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (notes, bytes, [card, lookup, warm, build, read, kept_card], [graph, rss, peak]) in &rows {
        println!(
            "| {notes} | {:.1} MB | {:.2} s | {:.2} s | {:.2} s | {:.2} s | {:.0} ms | {:.1} ms | {:.1} MiB | {:.1} MiB | {:.1} MiB |",
            *bytes as f64 / 1e6,
            card.as_secs_f64(),
            kept_card.as_secs_f64(),
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
    cards_table(&rt, scale, rounds);
}
