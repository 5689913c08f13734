//! The slicing rules as an agent meets them, over the real binary (issue #14, items 1–5):
//! outlines name usable anchors, heading text finds the right section, nested headings
//! cut nothing, a rule at the top is not frontmatter, emoji headings are reachable.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::json;
use support::{Mcp, run_once};

/// A folder holding `files`, for `--root`.
fn folder(files: &[(&str, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

/// `mark-mcp --root DIR fetch URL`: stdout and whether it exited 0.
fn fetch(dir: &tempfile::TempDir, url: &str) -> (String, bool) {
    let root = dir.path().display().to_string();
    let out = run_once(["--root", &root, "fetch", url]);
    (String::from_utf8(out.stdout).unwrap(), out.status.success())
}

fn big_document() -> String {
    let mut text = String::from("# Big\n\nIntro.\n\n");
    for i in 1..=60 {
        text.push_str(&format!("## Sec {i}\n\n{}\n\n", "Body text. ".repeat(35)));
    }
    text
}

#[test]
fn the_outline_of_a_titled_document_names_its_sections() {
    let dir = folder(&[("big.md", big_document())]);
    let (out, ok) = fetch(&dir, "/big.md");
    assert!(ok, "{out}");
    assert!(out.contains("\n  - Sec 1 (#sec-1, ~"), "{out}");
    let anchors = out.matches("(#sec-").count();
    assert!(anchors >= 10, "{anchors}: {out}");
    assert!(out.contains("more sections"), "{out}");
    let (section, ok) = fetch(&dir, "/big.md#sec-9");
    assert!(ok && section.contains("## Sec 9\n"), "{section}");
}

#[test]
fn raw_heading_text_fetches_the_heading_with_that_text() {
    let text = "# G\n\n## Setup\n\none\n\n## Setup\n\ntwo\n\n## Setup 1\n\nthree\n".to_string();
    let dir = folder(&[("g.md", text)]);
    let (out, ok) = fetch(&dir, "/g.md#Setup 1");
    assert!(ok, "{out}");
    assert!(out.contains("section: #setup-1-1"), "{out}");
    assert!(out.ends_with("## Setup 1\n\nthree\n"), "{out}");
    let (out, _) = fetch(&dir, "/g.md#setup-1");
    assert!(out.ends_with("## Setup\n\ntwo\n\n"), "{out}");
}

#[test]
fn a_heading_in_a_blockquote_does_not_end_its_section() {
    let text = "# Guide\n\n## Install\n\nFirst.\n\n> ## Warning\n> Careful.\n\nMore install steps.\n\n## Use\n\nuse it\n".to_string();
    let dir = folder(&[("i.md", text)]);
    let (out, ok) = fetch(&dir, "/i.md#install");
    assert!(ok, "{out}");
    assert!(out.contains("More install steps."), "{out}");
    assert!(!out.contains("use it"), "{out}");
    let (out, ok) = fetch(&dir, "/i.md#Warning");
    assert!(ok && out.ends_with("> ## Warning\n> Careful.\n"), "{out}");
}

#[test]
fn a_rule_at_the_top_keeps_the_title() {
    let text = "---\n\n# Title Under Rule\n\nIntro text.\n\n---\n\n## Later\n\nlater\n".to_string();
    let dir = folder(&[("r.md", text)]);
    let (out, ok) = fetch(&dir, "/r.md#title-under-rule");
    assert!(ok, "{out}");
    assert!(out.contains("Intro text."), "{out}");
    let (out, _) = fetch(&dir, "/r.md");
    assert!(out.contains("title: Title Under Rule"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emoji_and_punctuation_sections_are_fetched_by_their_text() {
    let text = "# Launch\n\nintro\n\n## 🚀\n\nlift off\n\n## !!!\n\nloud\n".to_string();
    let dir = folder(&[("e.md", text)]);
    let root = dir.path().display().to_string();
    let mcp = Mcp::start(&["--root", &root]).await;
    let rocket = mcp
        .call("mark_fetch", json!({"url": "/e.md#🚀", "mode": "full"}))
        .await;
    assert_eq!(rocket.status(), "ok", "{}", rocket.text);
    assert!(rocket.body().contains("lift off"), "{}", rocket.text);
    // Another anchorless section in the same session is a delivery of its own.
    let loud = mcp
        .call("mark_fetch", json!({"url": "/e.md#!!!", "mode": "full"}))
        .await;
    assert_eq!(loud.status(), "ok", "{}", loud.text);
    assert!(loud.body().contains("loud"), "{}", loud.text);
    let outline = mcp
        .call("mark_fetch", json!({"url": "/e.md", "mode": "outline"}))
        .await;
    assert!(outline.text.contains("- 🚀 (#🚀, ~"), "{}", outline.text);
    mcp.stop().await;
}

/// `fixtures/append`: documents that grow by appending, past the outline's bound.
fn append_fixtures() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/append")
        .display()
        .to_string()
}

#[test]
fn outlines_and_cards_of_appended_documents_keep_the_newest_and_name_the_cut() {
    let root = append_fixtures();
    let run = |args: &[&str]| {
        let out = run_once([&["--root", root.as_str()], args].concat());
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    // A weekly log: the first weeks, the cut named by its first and last anchor, the
    // newest weeks to the current one.
    let log = run(&["fetch", "/weekly-status.md"]);
    assert!(log.contains("mode: outline"), "{log}");
    assert!(
        log.contains("\n  - Week of 2024-01-08 (#week-of-2024-01-08"),
        "{log}"
    );
    assert!(
        log.contains("more sections: #week-of-2024-01-22 … #week-of-"),
        "{log}"
    );
    assert!(
        log.contains("(#week-of-2025-02-24, ~"),
        "the current week: {log}"
    );
    // A roadmap of 41 phases: the running phase (the last) is in the outline and the card.
    let roadmap = run(&["fetch", "/lantern-roadmap-grown.md"]);
    assert!(
        roadmap.contains("more sections: #phase-3--paging-gateway … #phase-"),
        "{roadmap}"
    );
    assert!(
        roadmap.contains("(#phase-41--quiet-hours-per-team, ~"),
        "{roadmap}"
    );
    let card = run(&["explore", "/lantern-roadmap-grown.md"]);
    assert!(card.contains("Phase 1 — Metrics in one place"), "{card}");
    assert!(card.contains("(+"), "the cut is named: {card}");
    assert!(card.contains("Phase 41 — Quiet hours per team"), "{card}");
}
