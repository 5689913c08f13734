//! The surface review verbs over the real binary: `mark-mcp tools` (every
//! tool with its reasons and its bytes in a real `tools/list`) and
//! `mark-mcp usage` over transcripts recorded from the real Claude Code CLI
//! (fixtures/usage, see its README) plus hand-made edge cases.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use support::{Mcp, kb, run_once};

fn run(args: &[&str]) -> (String, String, bool) {
    let out = run_once(args);
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.success(),
    )
}

fn transcripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/usage/projects")
}

fn usage_json(extra: &[&str]) -> Value {
    let dir = transcripts().display().to_string();
    let mut args = vec!["usage", "--transcripts", dir.as_str(), "--json"];
    args.extend_from_slice(extra);
    let (stdout, stderr, ok) = run(&args);
    assert!(ok, "{stderr}");
    assert!(
        stderr.is_empty(),
        "no progress without a terminal: {stderr}"
    );
    serde_json::from_str(&stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_shows_every_tool_with_reasons_and_its_size_in_tools_list() {
    let (stdout, _, ok) = run(&["tools", "--json"]);
    assert!(ok);
    let cards: Value = serde_json::from_str(&stdout).unwrap();
    let cards = cards.as_array().unwrap();
    assert_eq!(cards.len(), 8);

    let root = kb().display().to_string();
    let mcp = Mcp::start(&["--root", root.as_str(), "--write"]).await;
    let listed = mcp.client.list_all_tools().await.unwrap();
    mcp.stop().await;
    assert_eq!(listed.len(), 8);
    for tool in listed {
        let card = cards
            .iter()
            .find(|c| c["name"] == *tool.name)
            .unwrap_or_else(|| panic!("{} missing from `mark-mcp tools`", tool.name));
        assert!(!card["reasons"].as_array().unwrap().is_empty());
        assert_eq!(
            card["tools_list_bytes"],
            serde_json::to_string(&tool).unwrap().len(),
            "{}",
            tool.name
        );
        let verb = tool.name.trim_start_matches("mark_");
        assert_eq!(card["cli"], format!("mark-mcp {verb}"));
        let read_only = tool.annotations.as_ref().unwrap().read_only_hint == Some(true);
        let words = card["annotations"].as_array().unwrap();
        assert_eq!(words[0] == "read-only", read_only, "{}", tool.name);
    }

    let (table, _, ok) = run(&["tools"]);
    assert!(ok);
    assert!(
        table.contains("| mark_fetch | read | R1 no shell"),
        "{table}"
    );
    assert!(table.contains("write tools:"), "{table}");
}

#[test]
fn usage_reports_the_recorded_claude_code_transcripts() {
    let r = usage_json(&[]);
    assert_eq!(
        (r["files"].as_u64(), r["subagent_files"].as_u64()),
        (Some(4), Some(1))
    );
    let fetch = &r["tools"]["mark_fetch"];
    // 4 calls in session A, 1 in B, 1 in its subagent, 2 hand-made.
    assert_eq!(fetch["calls"], 8, "{r}");
    // The hand-made token-limit error and a missing section.
    assert_eq!(fetch["errors"], 2);
    // `No such tool available`: Claude Code's answer, not mark-mcp's.
    assert_eq!(fetch["not_connected"], 1);
    // Session A's forced read of the 60 KB handbook (<persisted-output>) and
    // the hand-made token-limit error.
    assert_eq!(fetch["not_inline"], 2);
    assert_eq!(fetch["unchanged"], 1);
    assert!(fetch["unchanged_saved_chars"].as_u64().unwrap() > 1000);
    // Session B's handbook read came inline (its save was made to fail).
    assert!(fetch["largest_chars"].as_u64().unwrap() > 60_000);
    // A plugin-named call (mcp__plugin_mark_mark__mark_lookup) counts as mark's.
    assert_eq!(r["tools"]["mark_lookup"]["calls"], 2);
    assert!(r["tools"].get("search").is_none(), "another server's tool");
    let never: Vec<&str> = r["never_called"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(never, ["mark_append", "mark_archive", "mark_publish"]);

    let around = &r["around_mark_mcp"];
    let notes = "/tmp/mark-usage-rec/project/notes";
    assert_eq!(around[format!("{notes}/projects/driftwood")]["reads"], 1);
    assert_eq!(
        around[format!("{notes}/projects")]["searches"],
        1,
        "Grep *.md"
    );
    let shared = &around[format!("{notes}/shared")];
    assert_eq!(
        (shared["reads"].as_u64(), shared["searches"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(
        around[format!("{notes}/journal")]["reads"],
        1,
        "the subagent's Read"
    );
    assert_eq!(around["/etc/notes"]["reads"], 1, "`cat x.md` is a read");

    // Not JSON, and the truncated last line; the unknown line type is no error.
    assert_eq!(r["skipped_lines"], 2);
    assert_eq!(
        r["results_without_call"], 0,
        "the early result met its call"
    );
    assert_eq!(r["calls_without_result"], 1);
}

#[test]
fn usage_filters_by_root_and_since() {
    let r = usage_json(&[
        "--root",
        "/tmp/mark-usage-rec/project/notes",
        "--since",
        "2026-11-01",
    ]);
    let folders: Vec<&String> = r["around_mark_mcp"].as_object().unwrap().keys().collect();
    assert_eq!(
        folders,
        ["journal", "projects", "projects/driftwood", "shared"]
    );
    assert!(
        r["tools"].get("mark_versions").is_none(),
        "the October call"
    );
    assert!(r["period"]["from"].as_str().unwrap() >= "2026-11-01");
}

#[test]
fn usage_prints_markdown_tables_by_default() {
    let dir = transcripts().display().to_string();
    let (stdout, _, ok) = run(&["usage", "--transcripts", &dir]);
    assert!(ok);
    assert!(
        stdout.contains(
            "| tool | calls | errors | not connected | not inline | unchanged | chars seen | ~tokens (est.) |"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("| mark_fetch | 8 | 2 | 1 | 2 | 1 |"),
        "{stdout}"
    );
    assert!(stdout.contains("Not connected: "), "{stdout}");
    assert!(stdout.contains("Never called: mark_append, mark_archive, mark_publish."));
    assert!(stdout.contains("| folder | reads | searches | chars seen |"));
}

#[test]
fn usage_errors_are_one_sentence() {
    let (stdout, stderr, ok) = run(&["usage", "--transcripts", "/nonexistent/transcripts"]);
    assert!(!ok);
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("could not read the transcripts folder /nonexistent/transcripts"),
        "{stderr}"
    );
    let dir = transcripts().display().to_string();
    let (_, stderr, ok) = run(&["usage", "--transcripts", &dir, "--since", "last week"]);
    assert!(!ok);
    assert!(stderr.contains("give --since as YYYY-MM-DD"), "{stderr}");
}

#[test]
fn usage_reads_a_timestamp_with_a_multibyte_character() {
    let dir = tempfile::tempdir().unwrap();
    let call = serde_json::json!({"type": "assistant", "timestamp": "2026-01-0é1T00:00:00Z",
        "message": {"content": [{"type": "tool_use", "id": "a", "name": "mcp__mark__mark_fetch", "input": {}}]}});
    let result = serde_json::json!({"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "a", "content": "status: ok\n\nhello"}]}});
    std::fs::write(dir.path().join("t.jsonl"), format!("{call}\n{result}\n")).unwrap();
    let (stdout, stderr, ok) = run(&["usage", "--transcripts", dir.path().to_str().unwrap()]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("2026-01-0é to 2026-01-0é"), "{stdout}");
}

#[test]
fn usage_help_lists_only_its_own_options() {
    let (stdout, _, ok) = run(&["usage", "--help"]);
    assert!(ok);
    assert!(
        stdout.contains("--transcripts") && stdout.contains("--root"),
        "{stdout}"
    );
    for server in ["--host", "--page-bytes", "--crawl-time", "--write"] {
        assert!(!stdout.contains(server), "{server}: {stdout}");
    }
    let (stdout, _, ok) = run(&["fetch", "--help"]);
    assert!(ok && stdout.contains("--page-bytes"), "{stdout}");
}
