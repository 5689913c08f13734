//! The search index kept between sessions (issue 29), through the real
//! binary as a user runs it: each session is a new `mark-mcp --root`
//! process; its rows equal a fresh build's (`--index-dir ''`) byte for
//! byte, with edits between sessions; a session killed with SIGKILL while
//! it updates the index leaves one the next session uses or rebuilds; the
//! `index` verb shows and clears it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::time::Duration;
use support::{bin, copy_dir, corpus, run_once};

const QUERIES: [&[&str]; 3] = [
    &["lookup", "harbour tide", "--read", "0"],
    &[
        "lookup",
        "topic field notes heron",
        "--match",
        "body",
        "--limit",
        "30",
        "--read",
        "0",
    ],
    &["lookup", "callback error stream", "--read", "0"],
];

/// What `mark-mcp --root ROOT --index-dir DIR VERB…` prints (the index
/// kept whatever its size: `--index-ram-bytes 0`); it must succeed.
fn run_kept(root: &Path, index_dir: &str, verb: &[&str]) -> String {
    let root = root.display().to_string();
    let mut args = vec!["--root", &root, "--index-ram-bytes", "0"];
    args.extend(["--index-dir", index_dir]);
    args.extend(verb);
    let out = run_once(&args);
    assert!(
        out.status.success(),
        "{verb:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// What each query prints.
fn answers(root: &Path, index_dir: &str) -> Vec<String> {
    QUERIES
        .iter()
        .map(|q| run_kept(root, index_dir, q))
        .collect()
}

fn note(root: &Path, i: usize) -> std::path::PathBuf {
    root.join(format!(
        "Area {:02}/{}.md",
        i % 40,
        mark_testkit::vault_note_name(i)
    ))
}

/// Edits between sessions: notes changed, one removed, one added.
fn edit(root: &Path, round: usize) {
    for i in [(round * 7) % 60, 30 + round % 20] {
        let path = note(root, i);
        if let Ok(text) = std::fs::read_to_string(&path) {
            std::fs::write(
                &path,
                format!("{text}\n## Heron {round}\n\nA heron at the harbour, tide {round}.\n"),
            )
            .unwrap();
        }
    }
    let _ = std::fs::remove_file(note(root, 100 + round));
    std::fs::create_dir_all(root.join("Area 02")).unwrap();
    std::fs::write(
        root.join(format!("Area 02/added {round}.md")),
        format!("# Added {round}\n\nA callback on the harbour stream.\n"),
    )
    .unwrap();
}

#[test]
fn every_session_answers_as_a_fresh_build_with_edits_between() {
    let cache = tempfile::tempdir().unwrap();
    let kept = cache.path().display().to_string();

    // The bundled notes and the Node corpus, read in place.
    let soul = Path::new(env!("CARGO_MANIFEST_DIR")).join("soul");
    let node = corpus("nodejs-api");
    for root in [soul.as_path(), node.as_path()] {
        if !root.is_dir() {
            continue;
        }
        let fresh = answers(root, "");
        assert_eq!(answers(root, &kept), fresh, "{}: built", root.display());
        assert_eq!(answers(root, &kept), fresh, "{}: read", root.display());
    }

    // A copy of the bundled notes and a generated vault, edited between sessions.
    let copy = tempfile::tempdir().unwrap();
    copy_dir(&soul, copy.path());
    let vault = tempfile::tempdir().unwrap();
    mark_testkit::write_vault(vault.path(), 300).unwrap();
    for round in 0..3 {
        for root in [copy.path(), vault.path()] {
            assert_eq!(answers(root, &kept), answers(root, ""), "round {round}");
            edit(root, round);
        }
    }
}

#[test]
fn the_index_verb_shows_and_clears_what_is_kept() {
    let cache = tempfile::tempdir().unwrap();
    let vault = tempfile::tempdir().unwrap();
    mark_testkit::write_vault(vault.path(), 40).unwrap();
    let dir = cache.path().to_str().unwrap();
    let verb = |extra: &[&str]| {
        let mut args = vec!["index"];
        args.extend(extra);
        run_kept(vault.path(), dir, &args)
    };
    assert!(
        verb(&[]).starts_with("No search index is kept for "),
        "before a lookup"
    );
    answers(vault.path(), cache.path().to_str().unwrap());
    let shown = verb(&[]);
    assert!(shown.contains("40 documents; last update: 20"), "{shown}");
    assert!(shown.contains(cache.path().to_str().unwrap()), "{shown}");
    assert!(verb(&["--clear"]).starts_with("Removed the search index kept for "));
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0);
    let off = run_once([
        "--root",
        vault.path().to_str().unwrap(),
        "--index-dir",
        "",
        "index",
    ]);
    assert!(String::from_utf8_lossy(&off.stdout).contains("--index-dir is ''"));
}

/// A small generator, so the kill moments spread over an update.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// `kills` sessions killed with SIGKILL at spread moments of an update
/// (the vault edited before each); after each, the next session answers
/// as a fresh build.
fn killed_sessions_leave_a_usable_index(kills: usize) {
    let cache = tempfile::tempdir().unwrap();
    let kept = cache.path().display().to_string();
    let vault = tempfile::tempdir().unwrap();
    mark_testkit::write_vault(vault.path(), 400).unwrap();
    let mut rng = Lcg(29);
    for round in 0..kills {
        edit(vault.path(), round);
        // Enough changed that the update takes a while.
        for i in 0..60 {
            let path = note(vault.path(), (round * 60 + i) % 400);
            if let Ok(text) = std::fs::read_to_string(&path) {
                std::fs::write(&path, format!("{text}\nRevised in round {round}.\n")).unwrap();
            }
        }
        let mut child = std::process::Command::new(bin())
            .env("XDG_CACHE_HOME", support::cache_home())
            .args(["--root", vault.path().to_str().unwrap()])
            .args(["--index-ram-bytes", "0", "--index-dir", &kept])
            .args(["lookup", "harbour", "--read", "0"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(rng.next(1500)));
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(
            answers(vault.path(), &kept),
            answers(vault.path(), ""),
            "after kill {round}"
        );
    }
}

#[test]
fn sessions_killed_while_updating_leave_an_index_the_next_one_uses() {
    killed_sessions_leave_a_usable_index(4);
}

/// The 50-kill run (README: `cargo test -p mark-mcp --test kept_index -- --ignored`).
#[test]
#[ignore]
fn fifty_sessions_killed_while_updating_leave_an_index_the_next_one_uses() {
    killed_sessions_leave_a_usable_index(50);
}

/// Item 6: `mark-server --root` keeps its index in the same cache folder as
/// `mark-mcp --root` (one folder for the source, shared), and a restarted
/// server answers its first LOOKUP from it as before the restart.
#[test]
fn mark_server_shares_the_index_and_answers_the_same_after_a_restart() {
    let cache = tempfile::tempdir().unwrap();
    let kept = cache.path().display().to_string();
    let vault = tempfile::tempdir().unwrap();
    mark_testkit::write_vault(vault.path(), 120).unwrap();
    let mut server = mark_testkit::MarkServerProcess::start(
        vault.path(),
        &["--flat", "--index-ram-bytes", "0", "--index-dir", &kept],
    )
    .unwrap();
    let over_server = |server: &mark_testkit::MarkServerProcess| {
        let mut args = server.reader_args(&[]);
        args.extend(["lookup", "harbour part", "--read", "0"].map(String::from));
        let out = run_once(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let before = over_server(&server);
    assert!(before.contains("Topic"), "{before}");
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 1);
    answers(vault.path(), &kept);
    assert_eq!(
        std::fs::read_dir(cache.path()).unwrap().count(),
        1,
        "mark-mcp --root uses the server's folder"
    );
    server.restart().unwrap();
    assert_eq!(over_server(&server), before, "after a restart");
}

/// DESIGN.md wave-3 rule 8: the SessionStart hook's process never builds
/// or writes the index, even over a folder whose index would be kept.
#[test]
fn the_session_start_hook_writes_no_index() {
    let cache = tempfile::tempdir().unwrap();
    let vault = tempfile::tempdir().unwrap();
    mark_testkit::write_vault(vault.path(), 40).unwrap();
    std::fs::write(
        vault.path().join("index.md"),
        "# Vault\n\nSee [[Topic 00001 field notes]].\n",
    )
    .unwrap();
    let out = run_once([
        "--root",
        vault.path().to_str().unwrap(),
        "--index-ram-bytes",
        "0",
        "--index-dir",
        cache.path().to_str().unwrap(),
        "hook",
        "session-start",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Vault"));
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0);
}
