//! The link graph kept between sessions (issue 29), through the real
//! binary as a user runs it: each session is a new `mark-mcp --root`
//! process (`explore`, which crawls); with edits between sessions, every
//! card of a session that starts from the kept graph equals a fresh
//! session's (`--index-dir ''`) byte for byte; a broken kept file is one
//! line on stderr and the same cards; the `index` verb shows and clears it.
//! Over `--host`, a later session revalidates the kept graph with
//! conditional FETCHes (a real `mark-server` logs them `not-modified`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::{Mcp, copy_dir, fetch_statuses, run_once, serve_copy_of};

fn vault() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/vault")
}

/// `mark-mcp --root ROOT --index-dir DIR VERB…`: stdout and stderr; it must succeed.
fn run(root: &Path, index_dir: &str, verb: &[&str]) -> (String, String) {
    let root = root.display().to_string();
    let mut args = vec!["--root", &root, "--index-dir", index_dir];
    args.extend(verb);
    let out = run_once(&args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{verb:?}: {stderr}");
    (String::from_utf8(out.stdout).unwrap(), stderr)
}

const NOTES: [&str; 6] = [
    "/Home.md",
    "/Beta.md",
    "/Gamma.md",
    "/notes/Alpha Note.md",
    "/Projects/Plan.md",
    "/New note.md",
];

/// Each note's card (a note that is not there: its error), from a session
/// with the kept graph in `index_dir` and from a fresh one.
fn cards(root: &Path, index_dir: &str) -> Vec<(String, String)> {
    NOTES
        .iter()
        .map(|note| {
            let args = ["--root", root.to_str().unwrap(), "--index-dir", index_dir];
            let kept = run_once(args.iter().chain(&["explore", note]));
            let args = ["--root", root.to_str().unwrap(), "--index-dir", ""];
            let fresh = run_once(args.iter().chain(&["explore", note]));
            (
                String::from_utf8(kept.stdout).unwrap(),
                String::from_utf8(fresh.stdout).unwrap(),
            )
        })
        .collect()
}

fn kept_files(cache: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(cache)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .unwrap()
                        .to_string_lossy()
                        .starts_with("graph-")
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_later_session_starts_from_the_kept_graph_and_answers_as_a_fresh_one() {
    let root = tempfile::tempdir().unwrap();
    copy_dir(&vault(), root.path());
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().to_str().unwrap();
    let (first, _) = run(root.path(), dir, &["explore", "/Beta.md"]);
    assert!(first.contains("graph complete"), "{first}");
    assert_eq!(
        kept_files(cache.path()).len(),
        1,
        "a complete crawl keeps the graph"
    );
    for round in 0..3 {
        for (kept, fresh) in cards(root.path(), dir) {
            assert_eq!(kept, fresh, "round {round}");
        }
        // Between sessions: a note links anew, one goes, one comes.
        match round {
            0 => {
                let home = root.path().join("Home.md");
                let text = std::fs::read_to_string(&home).unwrap();
                std::fs::write(&home, format!("{text}\nSee also [[Gamma]].\n")).unwrap();
                std::fs::write(
                    root.path().join("New note.md"),
                    "# New\n\n[[Beta]] and [[Plan]].\n",
                )
                .unwrap();
            }
            1 => std::fs::remove_file(root.path().join("notes/Alpha Note.md")).unwrap(),
            _ => {}
        }
    }
}

#[test]
fn a_broken_kept_graph_is_one_line_and_the_same_cards() {
    let root = tempfile::tempdir().unwrap();
    copy_dir(&vault(), root.path());
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().to_str().unwrap();
    run(root.path(), dir, &["explore", "/Beta.md"]);
    let file = kept_files(cache.path()).pop().unwrap();
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    let (card, stderr) = run(root.path(), dir, &["explore", "/Beta.md"]);
    let (fresh, _) = run(root.path(), "", &["explore", "/Beta.md"]);
    assert_eq!(card, fresh);
    let warned: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("was not used"))
        .collect();
    assert_eq!(warned.len(), 1, "{stderr}");
    // That session's complete crawl kept a whole graph again.
    let (_, stderr) = run(root.path(), dir, &["explore", "/Beta.md"]);
    assert!(!stderr.contains("was not used"), "{stderr}");
}

#[test]
fn the_index_verb_shows_and_clears_the_kept_graph() {
    let root = tempfile::tempdir().unwrap();
    copy_dir(&vault(), root.path());
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().to_str().unwrap();
    let (before, _) = run(root.path(), dir, &["index"]);
    assert!(before.contains("No link graph is kept yet"), "{before}");
    run(root.path(), dir, &["explore", "/Beta.md"]);
    let (shown, _) = run(root.path(), dir, &["index"]);
    assert!(shown.contains("The link graph kept: "), "{shown}");
    let (cleared, _) = run(root.path(), dir, &["index", "--clear"]);
    assert!(cleared.contains("Removed the kept link graph"), "{cleared}");
    assert!(kept_files(cache.path()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_a_server_a_later_session_revalidates_the_kept_graph_by_etag() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/explore");
    let (_store, server) = serve_copy_of::<&str>(&fixture, &[]);
    let cache = tempfile::tempdir().unwrap();
    let args = server.reader_args(&["--index-dir", cache.path().to_str().unwrap()]);
    let mut cards = Vec::new();
    for session in 1..=2 {
        let mcp = Mcp::start(&args).await;
        let card = mcp.call("mark_explore", json!({"url": "/hub.md"})).await;
        assert!(card.text.contains("graph complete"), "{}", card.text);
        cards.push(card.text);
        mcp.stop().await;
        assert_eq!(kept_files(cache.path()).len(), 1, "session {session}");
        // A leaf no card read: only the crawls fetched it.
        let wait = Duration::from_secs(10);
        server.wait_for_requests("FETCH", "/refs/ref-17.md", session, wait);
    }
    assert_eq!(cards[0], cards[1]);
    assert_eq!(
        fetch_statuses(&server, "/refs/ref-17.md"),
        ["ok", "not-modified"],
        "the second session's crawl asked with the kept etag"
    );
}
