//! `mark_explore` end to end over `--root`: the real `mark-mcp` binary, rmcp's
//! client over stdio, the fixture hub `fixtures/explore` and a temporary copy
//! of the Node.js API corpus.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use markdown_slice::{Document, Target};
use serde_json::json;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::{Mcp, Reply, corpus};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/explore")
}

/// Every `.md` file under `root`, as `/dir/doc.md`.
fn documents(root: &Path, dir: &str, out: &mut Vec<(String, PathBuf)>) {
    for e in std::fs::read_dir(root.join(dir.trim_start_matches('/'))).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().to_string();
        if e.file_type().unwrap().is_dir() {
            documents(root, &format!("{dir}{name}/"), out);
        } else if name.ends_with(".md") {
            out.push((format!("{dir}{name}"), e.path()));
        }
    }
}

/// The documents of `root` with a (non-image) link to `target`, found by
/// parsing every file directly: no crawl, no graph.
fn linking_documents(root: &Path, target: &str) -> BTreeSet<String> {
    let mut docs = Vec::new();
    documents(root, "/", &mut docs);
    docs.into_iter()
        .filter(|(path, file)| {
            let text = std::fs::read_to_string(file).unwrap();
            let doc = Document::parse(text.as_str());
            path != target && doc.links().iter().any(|l| {
                !l.is_image
                    && matches!(l.resolve(path), Target::Internal { path: p, .. } if p == target)
            })
        })
        .map(|(p, _)| p)
        .collect()
}

async fn explore(mcp: &Mcp, url: &str, cursor: Option<&str>) -> Reply {
    let args = match cursor {
        Some(c) => json!({ "url": url, "cursor": c }),
        None => json!({ "url": url }),
    };
    mcp.call("mark_explore", args).await
}

/// The lines of one `## …` section of a card or page (heading excluded).
fn section<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    let body = support::body(text);
    let start = body
        .lines()
        .position(|l| l.starts_with(heading))
        .unwrap_or_else(|| panic!("no {heading} in {text}"));
    body.lines()
        .skip(start + 1)
        .take_while(|l| !l.is_empty())
        .collect()
}

fn heading_line<'a>(text: &'a str, prefix: &str) -> &'a str {
    support::body(text)
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix} in {text}"))
}

/// The cursor a `+N more: cursor "…"` line gives, if any.
fn more_cursor(lines: &[String]) -> Option<String> {
    let last = lines.last()?;
    let rest = last.strip_prefix('+')?.split_once("cursor \"")?.1;
    Some(rest.split('"').next()?.to_string())
}

fn owned(lines: Vec<&str>) -> Vec<String> {
    lines.into_iter().map(str::to_string).collect()
}

/// Every item of one section: the card's lines, then each page its cursors lead to.
async fn all_items(mcp: &Mcp, url: &str, card: &str, heading: &str) -> Vec<String> {
    let mut lines = owned(section(card, heading));
    let mut items = Vec::new();
    for _ in 0..50 {
        let cursor = more_cursor(&lines);
        items.extend(
            lines
                .iter()
                .filter(|l| l.trim_start().starts_with("- "))
                .cloned(),
        );
        let Some(cursor) = cursor else {
            return items;
        };
        let page = explore(mcp, url, Some(&cursor)).await;
        assert_eq!(page.status(), "ok", "{}", page.text);
        lines = owned(section(&page.text, heading));
    }
    panic!("cursors of {heading} never end");
}

/// The path of a `- [text](/path#anchor) …` line.
fn link_path(line: &str) -> String {
    let target = line.split("](").nth(1).unwrap().split(')').next().unwrap();
    target.split('#').next().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hub_card_has_every_section_counted_resolved_and_paged() {
    let mcp = Mcp::start(&["--root", fixture().to_str().unwrap()]).await;
    let card = explore(&mcp, "/hub.md", None).await;
    let text = &card.text;
    assert_eq!(card.status(), "ok", "{text}");
    assert_eq!(card.field("title"), Some("Harbour Hub"));
    assert_eq!(card.field("version"), Some("1"));
    assert_eq!(card.field("tags"), Some("hub, fixture"));
    let size = std::fs::metadata(fixture().join("hub.md")).unwrap().len();
    assert!(
        card.field("size")
            .unwrap()
            .starts_with(&format!("{size} bytes"))
    );
    assert!(text.len() < 2048, "{} bytes:\n{text}", text.len());
    // Sections in order.
    let body = card.body();
    let order: Vec<usize> = [
        "## Outline",
        "## Opening",
        "## Outbound links (19)",
        "## Backlinks (29; graph complete)",
        "## Siblings in / (5)",
    ]
    .iter()
    .map(|h| body.find(h).unwrap_or_else(|| panic!("{h} in {text}")))
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(
        body.trim_end()
            .ends_with("More of a section: mark_explore with its cursor.")
    );
    assert!(body.contains("mark_fetch \"/hub.md#anchor\""));

    // Outline: the H2s only (the lone H1 is the title), then what folds.
    let outline = section(text, "## Outline");
    assert_eq!(
        outline,
        [
            "- Overview (#overview, ~76 tok)",
            "- Links (#links, ~166 tok)",
            "- History (#history, ~30 tok)",
            "- Contacts (#contacts, ~45 tok)",
            "+7 more headings: cursor \"outline.0\" lists all 11",
        ]
    );
    let all_headings = all_items(
        &mcp,
        "/hub.md",
        &explore(&mcp, "/hub.md", Some("outline.0")).await.text,
        "## Outline",
    )
    .await;
    assert_eq!(all_headings.len(), 11);
    assert_eq!(
        all_headings[1],
        "  - Reading order (#reading-order, ~15 tok)"
    );

    assert!(section(text, "## Opening")[0].starts_with("The hub ties the harbour notes together"));

    // Outbound: resolved, deduplicated, internal before external, no image, no self link.
    let links = section(text, "## Outbound links");
    assert_eq!(links.len(), 10);
    assert_eq!(links[9], "+10 more: cursor \"links.9\"");
    let links = all_items(&mcp, "/hub.md", text, "## Outbound links").await;
    let targets: Vec<String> = links
        .iter()
        .map(|l| {
            l.split("](")
                .nth(1)
                .unwrap()
                .trim_end_matches(')')
                .to_string()
        })
        .collect();
    let mut expected = vec![
        "/guides/intro.md".to_string(),
        "/guides/setup.md#install".into(),
        "/guides/deep/notes.md".into(),
        "/about.md#team".into(),
        "/changelog.md".into(),
    ];
    expected.extend((1..=12).map(|i| format!("/refs/ref-{i:02}.md")));
    expected.push("https://example.com/harbour".into());
    expected.push("https://example.com/spec#section-2".into());
    assert_eq!(targets, expected);
    assert_eq!(
        links[0], "- [introduction](/guides/intro.md)",
        "first text kept"
    );

    // Backlinks: every linking document once, paged to the end.
    let backlinks = all_items(&mcp, "/hub.md", text, "## Backlinks").await;
    let sources: BTreeSet<String> = backlinks.iter().map(|l| link_path(l)).collect();
    assert_eq!(backlinks.len(), sources.len());
    assert_eq!(sources, linking_documents(&fixture(), "/hub.md"));
    assert_eq!(sources.len(), 29);
    assert!(backlinks.contains(&"- [Setup](/guides/setup.md#install) (+1 section)".to_string()));
    assert!(backlinks.contains(&"- [Berth 24](/refs/ref-24.md#see-also)".to_string()));

    // Siblings: self excluded, folders with a slash, titles from the graph.
    assert_eq!(
        section(text, "## Siblings in /"),
        [
            "- README.md: Explore fixture",
            "- about.md: About the harbour",
            "- changelog.md: Changelog",
            "- guides/",
            "- refs/",
        ]
    );

    // Two folders down: `../` and `../../` resolve; an empty folder.
    let deep = explore(&mcp, "mark://local/guides/deep/notes.md", None).await;
    assert_eq!(
        section(&deep.text, "## Outbound links (2)"),
        [
            "- [hub links](/hub.md#links)",
            "- [introduction](/guides/intro.md)"
        ]
    );
    assert_eq!(
        heading_line(&deep.text, "## Siblings"),
        "## Siblings in /guides/deep/ (0)"
    );
    assert_eq!(
        heading_line(&deep.text, "## Backlinks"),
        "## Backlinks (1; graph complete)"
    );

    // Bad input: one-sentence tool errors.
    for (url, cursor) in [
        ("/hub.md", Some("nonsense")),
        ("/guides/", None),
        ("/missing.md", None),
    ] {
        let r = explore(&mcp, url, cursor).await;
        assert!(r.is_error || r.status() == "not-found", "{url}: {}", r.text);
    }
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_corpus_backlinks_match_a_direct_scan() {
    let copy = tempfile::tempdir().unwrap();
    support::copy_dir(&corpus("nodejs-api"), copy.path());
    let mcp = Mcp::start(&["--root", copy.path().to_str().unwrap()]).await;
    let card = explore(&mcp, "/errors.md", None).await;
    assert_eq!(card.status(), "ok", "{}", card.text);
    let expected = linking_documents(copy.path(), "/errors.md");
    assert_eq!(expected.len(), 22, "link-graph's scan found 22");
    assert_eq!(
        heading_line(&card.text, "## Backlinks"),
        "## Backlinks (22; graph complete)"
    );
    let backlinks = all_items(&mcp, "/errors.md", &card.text, "## Backlinks").await;
    let sources: BTreeSet<String> = backlinks.iter().map(|l| link_path(l)).collect();
    assert_eq!(sources, expected);
    assert!(card.text.len() < 2048, "{}", card.text.len());

    let fs = explore(&mcp, "/fs.md", None).await;
    assert_eq!(fs.field("title"), Some("File system"));
    assert!(
        fs.text.len() < 2048,
        "fs.md card is {} bytes",
        fs.text.len()
    );
    // The outline shows the shallowest level only: no indented line.
    let outline = section(&fs.text, "## Outline");
    assert!(outline.iter().all(|l| !l.starts_with(' ')), "{outline:?}");
    assert!(outline.last().unwrap().starts_with('+'));
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_graph_memory_bound_leaves_an_honest_partial_graph() {
    let root = corpus("nodejs-api");
    let mcp = Mcp::start(&["--root", root.to_str().unwrap(), "--graph-bytes", "100000"]).await;
    let card = explore(&mcp, "/errors.md", None).await;
    assert_eq!(card.status(), "ok", "{}", card.text);
    let heading = heading_line(&card.text, "## Backlinks");
    assert!(
        heading.contains("graph partial")
            && heading.ends_with("(memory bound of 100000 bytes reached))"),
        "{heading}"
    );
    // With the default bound the same corpus gives all 22 (node_corpus_backlinks_match_a_direct_scan).
    assert!(number_after(heading, "## Backlinks (") < 22, "{heading}");
    mcp.stop().await;
}

/// The number right after `marker` in `text`.
fn number_after(text: &str, marker: &str) -> usize {
    let rest = text.split(marker).nth(1).unwrap();
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap()
}

/// The card's backlinks heading and the crawl note under it, if any.
fn coverage(reply: &Reply) -> (String, Option<String>) {
    let lines = section(&reply.text, "## Backlinks");
    let heading = heading_line(&reply.text, "## Backlinks").to_string();
    (
        heading,
        lines
            .iter()
            .find(|l| l.starts_with("(crawl"))
            .map(|l| l.to_string()),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_crawl_bound_leaves_an_honest_partial_graph() {
    let root = fixture();
    let root = root.to_str().unwrap();
    // 31 documents in the fixture.
    let cases: [(&[&str], &str); 3] = [
        (
            &["--crawl-docs", "5"],
            "crawl stopped: document limit (5) reached",
        ),
        (
            &["--crawl-bytes", "1"],
            "crawl stopped: byte limit (1 bytes) reached",
        ),
        (
            &["--crawl-time", "0ms"],
            "crawl stopped: time limit (0 s) reached",
        ),
    ];
    for (args, note) in cases {
        let mut all = vec!["--root", root];
        all.extend_from_slice(args);
        let mcp = Mcp::start(&all).await;
        let card = explore(&mcp, "/about.md", None).await;
        let (heading, crawl) = coverage(&card);
        assert!(
            heading.contains("graph partial") || heading.contains("graph not built yet"),
            "{args:?}: {heading}"
        );
        assert!(!heading.contains("complete"), "{heading}");
        assert_eq!(
            crawl.as_deref(),
            Some(&*format!("({note})")),
            "{args:?}: {}",
            card.text
        );
        if args[0] == "--crawl-docs" {
            // 5 crawled, and the card's own document (if the crawl had not reached it).
            let indexed = number_after(&heading, "graph partial: ");
            assert!((5..=6).contains(&indexed), "{heading}");
            // Known: listing goes on after the document bound, so every document.
            let known = number_after(&heading, "≥");
            assert_eq!(known, 31, "{heading}");
        }
        mcp.stop().await;
    }

    // A card that does not wait answers at once; the crawl goes on and completes.
    let mcp = Mcp::start(&["--root", root, "--crawl-wait", "0ms"]).await;
    let mut tries = 0;
    loop {
        let card = explore(&mcp, "/hub.md", None).await;
        let (heading, _) = coverage(&card);
        if heading == "## Backlinks (29; graph complete)" {
            break;
        }
        assert!(!heading.contains("complete"), "{heading}");
        tries += 1;
        assert!(
            tries < 100,
            "the background crawl never completed: {heading}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_explore_verb_prints_the_same_card() {
    let out = std::process::Command::new(support::bin())
        .env("XDG_CACHE_HOME", support::cache_home())
        .args(["--root", fixture().to_str().unwrap(), "explore", "/hub.md"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let cli = String::from_utf8(out.stdout).unwrap();
    let mcp = Mcp::start(&["--root", fixture().to_str().unwrap()]).await;
    let card = explore(&mcp, "/hub.md", None).await;
    assert_eq!(cli, card.text);
    let out = std::process::Command::new(support::bin())
        .env("XDG_CACHE_HOME", support::cache_home())
        .args([
            "--root",
            fixture().to_str().unwrap(),
            "explore",
            "/hub.md",
            "--cursor",
            "siblings.3",
        ])
        .output()
        .unwrap();
    let page = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        section(&page, "## Siblings in / (5)"),
        ["- guides/", "- refs/"]
    );
    mcp.stop().await;
}

/// #14.8: a folder of 5,000 documents lists over several LIST pages; the
/// card and a siblings cursor deep into it count the folder's real entries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_siblings_cursor_in_a_folder_of_5000_files_counts_them_all() {
    let dir = tempfile::tempdir().unwrap();
    for i in 1..=5000 {
        std::fs::write(dir.path().join(format!("f{i:04}.md")), format!("# F{i}\n")).unwrap();
    }
    let mcp = Mcp::start(&["--root", dir.path().to_str().unwrap()]).await;
    let card = explore(&mcp, "/f0001.md", None).await;
    assert!(
        card.text.contains("## Siblings in / (4999)\n"),
        "{}",
        card.text
    );
    let page = explore(&mcp, "/f0001.md", Some("siblings.4990")).await;
    assert_eq!(
        page.field("page"),
        Some("from 4991 (of 4999)"),
        "{}",
        page.text
    );
    assert!(page.text.contains("- f5000.md"), "{}", page.text);
    mcp.stop().await;
}
