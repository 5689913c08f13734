//! An Obsidian-style vault end to end over `--root`: the real `mark-mcp`
//! binary, rmcp's client over stdio, the fixture vault `fixtures/vault`
//! (names with spaces, `#?%`, an NFD accent, duplicate names, wiki links,
//! blocks, embeds, tags, aliases).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::json;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use support::{Mcp, Reply};

fn vault() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/vault")
}

async fn start() -> Mcp {
    Mcp::start(&["--root", vault().to_str().unwrap()]).await
}

/// `reply` is a tool error whose one line is `expected`.
fn assert_tool_error(reply: &Reply, expected: &str) {
    assert!(reply.is_error, "{}", reply.text);
    assert_eq!(reply.body().trim_end(), expected, "{}", reply.text);
}

async fn explore(mcp: &Mcp, url: &str) -> Reply {
    mcp.call("mark_explore", json!({ "url": url })).await
}

/// The page of a card's part its cursor names (`links.0`: every outbound link).
async fn explore_page(mcp: &Mcp, url: &str, cursor: &str) -> Reply {
    mcp.call("mark_explore", json!({ "url": url, "cursor": cursor }))
        .await
}

/// The `## Backlinks (…)` heading line of a card.
fn backlinks_heading(card: &Reply) -> &str {
    card.body()
        .lines()
        .find(|l| l.starts_with("## Backlinks"))
        .unwrap_or_else(|| panic!("no backlinks in {}", card.text))
}

/// The `- …` lines of one `## …` section of a card.
fn section<'a>(card: &'a Reply, heading: &str) -> Vec<&'a str> {
    let body = card.body();
    body.lines()
        .skip_while(|l| !l.starts_with(heading))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_spelling_of_a_path_names_one_document() {
    let mcp = start().await;
    // A space as the agent reads it in a link, and its escape: one document,
    // one delivery (the second is `unchanged`).
    let spaced = mcp.fetch("/notes/Alpha Note.md").await;
    spaced.assert_full();
    let escaped = mcp.fetch("/notes/Alpha%20Note.md").await;
    assert_eq!(escaped.status(), "unchanged", "{}", escaped.text);
    // A file named in NFD (as macOS writes) by its NFC spelling, escaped or not.
    mcp.fetch("/résumé.md").await.assert_full();
    let again = mcp.fetch("/r%C3%A9sum%C3%A9.md").await;
    assert_eq!(again.status(), "unchanged", "{}", again.text);
    // An escaped `/` names no file: fetch and explore say the same.
    let fetched = mcp.fetch("/notes%2FIndex.md").await;
    let explored = explore(&mcp, "/notes%2FIndex.md").await;
    assert!(fetched.is_error && explored.is_error, "{}", explored.text);
    assert_eq!(fetched.text, explored.text);
    assert!(
        fetched.text.contains("write the path's own `/`"),
        "{}",
        fetched.text
    );
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_with_hash_question_and_percent_keep_their_backlinks_and_titles() {
    let mcp = start().await;
    for (key, title) in [
        ("/hash%23name.md", "Hash"),
        ("/q%3Fname.md", "Question"),
        ("/pct%2520name.md", "Percent"),
        ("/résumé.md", "Résumé"),
    ] {
        let card = explore(&mcp, key).await;
        assert_eq!(card.status(), "ok", "{}", card.text);
        assert_eq!(card.field("title"), Some(title), "{}", card.text);
        assert_eq!(
            backlinks_heading(&card),
            "## Backlinks (1; graph complete)",
            "{key}: {}",
            card.text
        );
        assert!(
            section(&card, "## Backlinks")[0].contains("/Home.md"),
            "{}",
            card.text
        );
    }
    // Siblings show those names with their titles.
    let card = explore_page(&mcp, "/Beta.md", "siblings.0").await;
    let siblings = section(&card, "## Siblings");
    for line in [
        "- hash%23name.md: Hash",
        "- q%3Fname.md: Question",
        "- pct%2520name.md: Percent",
        "- r%C3%A9sum%C3%A9.md: Résumé",
    ] {
        assert!(siblings.contains(&line), "{line} in {}", card.text);
    }
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wiki_links_resolve_by_name_with_the_documented_rule() {
    let mcp = start().await;
    let card = explore(&mcp, "/Home.md").await;
    assert_eq!(card.status(), "ok", "{}", card.text);
    let all = explore_page(&mcp, "/Home.md", "links.0").await;
    let links = section(&all, "## Outbound links");
    for line in [
        // By name anywhere in the vault, case-insensitively, headings kept.
        "- [Alpha Note](/notes/Alpha%20Note.md)",
        "- [its details](/notes/Alpha%20Note.md#Details)",
        "- [Beta](/Beta.md)",
        // Two notes are called Plan: the shortest path; by path; by unique suffix.
        "- [Plan](/Projects/Plan.md)",
        "- [archive/2020/Plan](/archive/2020/Plan.md)",
        "- [Alpha Note#Details#Sub part](/notes/Alpha%20Note.md#Details#Sub part)",
        "- [Beta#^beta-block](/Beta.md#^beta-block)",
        // Embeds of notes are links, said so; the image is not.
        "- [Gamma](/Gamma.md) (embedded note)",
        "- [Gamma#Part one](/Gamma.md#Part one) (embedded note)",
        // Markdown links as Obsidian writes them, without .md or from the root.
        "- [Three laws](/Three%20laws%20of%20motion.md)",
        "- [[Missing Note]]: unresolved, no note has this name",
    ] {
        assert!(links.contains(&line), "{line} in {}", all.text);
    }
    assert!(
        !links.iter().any(|l| l.contains("diagram.png")),
        "an attachment is no document link: {}",
        all.text
    );
    // `[[2020/Plan]]` and `[the plan](Projects/Plan.md)` repeat targets above: listed once.
    assert_eq!(links.len(), 15, "{}", all.text);

    // Backlinks by the same rule: [[Beta]] in notes/ is the root Beta.
    let beta = explore(&mcp, "/Beta.md").await;
    assert_eq!(
        backlinks_heading(&beta),
        "## Backlinks (2; graph complete)",
        "{}",
        beta.text
    );
    let sources = section(&beta, "## Backlinks").join("\n");
    assert!(sources.contains("/notes/Alpha%20Note.md"), "{}", beta.text);
    // [[Index]] from notes/ is its own folder's; from archive/ the archive's.
    let notes_index = explore(&mcp, "/notes/Index.md").await;
    assert_eq!(
        backlinks_heading(&notes_index),
        "## Backlinks (1; graph complete)",
        "{}",
        notes_index.text
    );
    let old_plan = explore(&mcp, "/archive/2020/Plan.md").await;
    // By path and suffix from Home, own folder from Log.
    assert_eq!(
        backlinks_heading(&old_plan),
        "## Backlinks (2; graph complete)",
        "{}",
        old_plan.text
    );
    let gamma = explore(&mcp, "/Gamma.md").await;
    assert_eq!(
        backlinks_heading(&gamma),
        "## Backlinks (1; graph complete)",
        "{}",
        gamma.text
    );
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hidden_folders_are_never_documents() {
    let mcp = start().await;
    let home = explore(&mcp, "/Home.md").await;
    // Seven notes link [[Home]]; .obsidian/ and .trash/ hold two more, never counted.
    assert_eq!(
        backlinks_heading(&home),
        "## Backlinks (6; graph complete)",
        "{}",
        home.text
    );
    let hidden = mcp.fetch("/.obsidian/hidden.md").await;
    assert_eq!(hidden.status(), "not-found", "{}", hidden.text);
    mcp.stop().await;
}

/// Every note of the fixture (hidden folders left out), as `/dir/Name.md` in NFC.
fn notes(dir: &Path, prefix: &str, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = markdown_slice::unicode_form(&e.file_name().to_string_lossy()).into_owned();
        if name.starts_with('.') {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            notes(&e.path(), &format!("{prefix}{name}/"), out);
        } else if name.ends_with(".md") {
            out.push((
                format!("{prefix}{name}"),
                std::fs::read_to_string(e.path()).unwrap(),
            ));
        }
    }
}

/// A second, simple implementation of the vault rule over plain strings: the notes
/// linking to each note (no graph, no markdown parser).
fn expected_backlinks() -> std::collections::BTreeMap<String, BTreeSet<String>> {
    let mut all = Vec::new();
    notes(&vault(), "/", &mut all);
    let paths: Vec<String> = all.iter().map(|(p, _)| p.clone()).collect();
    let by_name = |name: &str, source: &str| -> Option<String> {
        let want = format!("/{}.md", name.trim_end_matches(".md").to_lowercase());
        let folder = &source[..=source.rfind('/').unwrap()];
        let mut hits: Vec<&String> = paths
            .iter()
            .filter(|p| p.to_lowercase().ends_with(&want))
            .collect();
        hits.sort_by_key(|p| {
            let rank = if p.to_lowercase() == want {
                0
            } else if p[..=p.rfind('/').unwrap()] == *folder {
                1
            } else {
                2
            };
            (rank, p.len(), (*p).clone())
        });
        hits.first().map(|p| (*p).clone())
    };
    let mut expected: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for (source, text) in &all {
        let mut targets = Vec::new();
        for wiki in text.split("[[").skip(1) {
            let inner = wiki.split("]]").next().unwrap();
            let name = inner.split('|').next().unwrap().split('#').next().unwrap();
            let attachment = name.rsplit_once('.').is_some_and(|(_, e)| e != "md");
            if !name.is_empty() && !attachment {
                targets.extend(by_name(name, source));
            }
        }
        for md in text.split("](").skip(1) {
            let dest = md.split(')').next().unwrap();
            let dest = percent_encoding::percent_decode_str(dest)
                .decode_utf8()
                .unwrap();
            targets.extend(by_name(&markdown_slice::unicode_form(&dest), source));
        }
        for target in targets.into_iter().filter(|t| t != source) {
            expected.entry(target).or_default().insert(source.clone());
        }
    }
    expected
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_note_s_backlinks_match_a_second_simple_implementation() {
    let mcp = start().await;
    let expected = expected_backlinks();
    let mut all = Vec::new();
    notes(&vault(), "/", &mut all);
    assert_eq!(all.len(), 14, "the fixture has its notes");
    for (note, _) in &all {
        let key = mark_mcp::keys::wire_path(note);
        let page = explore_page(&mcp, &key, "backlinks.0").await;
        let got: BTreeSet<String> = section(&page, "## Backlinks")
            .iter()
            .filter_map(|l| l.split("](").nth(1))
            .map(|t| {
                let key = t.split(['#', ')']).next().unwrap();
                mark_mcp::keys::graph_key(key).into_owned()
            })
            .collect();
        let want = expected.get(note).cloned().unwrap_or_default();
        assert_eq!(got, want, "{note}: {}", page.text);
    }
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notes_that_appear_and_go_are_seen_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    support::copy_dir(&vault(), dir.path());
    let root = dir.path().to_str().unwrap();
    let mcp = Mcp::start(&[
        "--root",
        root,
        "--graph-fresh-for",
        "1s",
        "--fresh-for",
        "0s",
    ])
    .await;
    let beta = explore(&mcp, "/Beta.md").await;
    assert_eq!(
        backlinks_heading(&beta),
        "## Backlinks (2; graph complete)",
        "{}",
        beta.text
    );

    // The owner adds a note linking [[beta]] and deletes Gamma, embedded by Home.
    std::fs::write(dir.path().join("New Note.md"), "# New\n\nSee [[beta]].\n").unwrap();
    std::fs::remove_file(dir.path().join("Gamma.md")).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;

    let beta = explore(&mcp, "/Beta.md").await;
    assert_eq!(
        backlinks_heading(&beta),
        "## Backlinks (3; graph complete)",
        "{}",
        beta.text
    );
    assert!(beta.body().contains("/New%20Note.md"), "{}", beta.text);
    let links = explore_page(&mcp, "/Home.md", "links.0").await;
    assert!(
        section(&links, "## Outbound links")
            .contains(&"- [[Gamma]]: unresolved, no note has this name"),
        "{}",
        links.text
    );
    let list = mcp.call("mark_list", json!({ "url": "/" })).await;
    assert!(
        list.text.contains("New%20Note.md") && !list.text.contains("Gamma.md"),
        "{}",
        list.text
    );
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_id_fetches_that_block_and_its_delivery_key_is_the_block() {
    let mcp = start().await;
    let block = mcp.fetch("/Beta.md#^beta-block").await;
    assert_eq!(
        (block.status(), block.field("mode"), block.field("section")),
        ("ok", Some("block"), Some("#^beta-block")),
        "{}",
        block.text
    );
    assert_eq!(
        block.body().trim_end(),
        "A paragraph ending in a block id. ^beta-block"
    );
    // The same block again is one line; another block of the same note is delivered.
    let again = mcp.fetch("/Beta.md#^beta-block").await;
    assert_eq!(again.status(), "unchanged", "{}", again.text);
    let item = mcp.fetch("/Beta.md#^beta-item").await;
    assert_eq!(item.status(), "ok", "{}", item.text);
    assert_eq!(
        item.body().trim_end(),
        "- a list item with its own id ^beta-item"
    );
    // A block inside a subsection, and several parts in one call.
    let parts = mcp
        .call(
            "mark_fetch",
            json!({ "url": "/notes/Alpha Note.md", "anchors": ["^sub-block", "#^SUB-BLOCK"] }),
        )
        .await;
    assert_eq!(
        parts.body().trim_end(),
        "A nested section. ^sub-block",
        "{}",
        parts.text
    );
    // An unknown id: a tool error naming the nearest ids, like an unknown anchor.
    assert_tool_error(
        &mcp.fetch("/Beta.md#^beta").await,
        "block ^beta not found in /Beta.md; nearest: ^beta-item, ^beta-block",
    );
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_note_read_holds_its_blocks() {
    let mcp = start().await;
    mcp.fetch("/Beta.md").await.assert_full();
    let block = mcp.fetch("/Beta.md#^beta-item").await;
    assert_eq!(block.status(), "unchanged", "{}", block.text);
    assert!(
        block.text.contains("in the whole document read earlier"),
        "{}",
        block.text
    );
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heading_path_fetches_the_sub_under_that_heading() {
    let mcp = start().await;
    // Gamma has a `Summary` under each part: the path says which.
    let second = mcp.fetch("/Gamma.md#Part two#Summary").await;
    assert_eq!(
        second.field("section"),
        Some("#summary-1 (in Part two)"),
        "{}",
        second.text
    );
    assert_eq!(second.body(), "### Summary\n\nThe second part in short.\n");
    let first = mcp.fetch("/Gamma.md#part-one#summary").await;
    assert_eq!(
        first.field("section"),
        Some("#summary (in Part one)"),
        "{}",
        first.text
    );
    // As the card writes a nested wiki link's target.
    let sub = mcp.fetch("/notes/Alpha%20Note.md#Details#Sub part").await;
    assert!(sub.body().starts_with("### Sub part\n"), "{}", sub.text);
    assert_tool_error(
        &mcp.fetch("/Gamma.md#Part two#Nope").await,
        "section #Part two#Nope not found in /Gamma.md; nearest: summary-1",
    );
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wiki_link_form_names_a_note_as_a_url() {
    let mcp = start().await;
    let details = mcp.fetch("[[Alpha Note#Details]]").await;
    assert_eq!(
        details.field("section"),
        Some("#details"),
        "{}",
        details.text
    );
    assert!(
        details.body().starts_with("## Details\n"),
        "{}",
        details.text
    );
    let shown = mcp.fetch(" [[alpha note|the first note]] ").await;
    assert_eq!(shown.field("title"), Some("Alpha Note"), "{}", shown.text);
    shown.assert_full();
    let block = mcp.fetch("[[Beta#^beta-block]]").await;
    assert_eq!(
        block.body().trim_end(),
        "A paragraph ending in a block id. ^beta-block",
        "{}",
        block.text
    );
    let nested = mcp.fetch("[[Gamma#Part two#Summary]]").await;
    assert_eq!(nested.body(), "### Summary\n\nThe second part in short.\n");
    // Two notes are called Plan: the vault rule's pick, as in a link.
    let plan = explore(&mcp, "![[Plan]]").await;
    assert_eq!(plan.field("title"), Some("Plan"), "{}", plan.text);
    let card = explore(&mcp, "[[notes/Alpha Note]]").await;
    assert_eq!(card.field("title"), Some("Alpha Note"), "{}", card.text);

    let missing = mcp.fetch("[[Alpah Note]]").await;
    assert!(missing.is_error, "{}", missing.text);
    assert!(
        missing.body().starts_with(
            "`[[Alpah Note]]` names no note (graph complete); nearest: /notes/Alpha%20Note.md"
        ),
        "{}",
        missing.text
    );
    assert!(
        !missing.body().trim_end().contains('\n'),
        "{}",
        missing.text
    );
    let here = mcp.fetch("[[#Details]]").await;
    assert!(
        here.is_error
            && here
                .text
                .contains("names a heading of the note it is written in"),
        "{}",
        here.text
    );
    let image = explore(&mcp, "![[diagram.png]]").await;
    assert!(
        image.is_error && image.text.contains("names an attachment"),
        "{}",
        image.text
    );
    // The verbs take it too: the same function.
    let root = vault();
    let out = support::run_once([
        "--root",
        root.to_str().unwrap(),
        "fetch",
        "[[Alpha Note#Details]]",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("## Details\n"), "{stdout}");
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callout_is_not_a_heading_in_the_outline() {
    let mcp = start().await;
    let outline = mcp
        .call(
            "mark_fetch",
            json!({ "url": "/Beta.md", "mode": "outline" }),
        )
        .await;
    assert_eq!(outline.field("mode"), Some("outline"), "{}", outline.text);
    assert!(
        outline.body().starts_with("- Beta (#beta, "),
        "{}",
        outline.text
    );
    assert!(!outline.text.contains("allout"), "{}", outline.text);
    let asked = mcp.fetch("/Beta.md#A callout title").await;
    assert!(asked.is_error, "{}", asked.text);
    mcp.stop().await;
}

/// The urls of the rows `mark_lookup` gives for `args` (with `read: 0`, so
/// only rows follow the header), in rank order.
async fn lookup_urls(mcp: &Mcp, mut args: serde_json::Value) -> Vec<String> {
    args["read"] = json!(0);
    let r = mcp.call("mark_lookup", args).await;
    assert!(!r.is_error, "{}", r.text);
    r.rows()
        .into_iter()
        .filter_map(|l| l.split(" · ").next())
        .map(str::to_string)
        .collect()
}

/// What tags and aliases do, the same for `--root` and for a Mark server's
/// documents: tags count for `filter tag=` (a parent takes its nested tags)
/// and for search, aliases are searched as names, and the card shows both.
async fn check_tags_and_aliases(mcp: &Mcp) {
    let tagged =
        |tag: &str| lookup_urls(mcp, json!({ "query": "*", "filter": format!("tag={tag}") }));
    // `project` takes the frontmatter `project/alpha` and Home's inline `#project/alpha`.
    assert_eq!(
        tagged("project").await,
        ["/Home.md", "/notes/Alpha%20Note.md"]
    );
    assert_eq!(
        tagged("#Project/Alpha").await,
        ["/Home.md", "/notes/Alpha%20Note.md"]
    );
    assert_eq!(tagged("reading").await, ["/Home.md"], "an inline tag");
    assert_eq!(tagged("gamma").await, ["/Gamma.md"], "a nested inline tag");
    for not_tags in ["not-a-tag", "1984", "escaped", "alpha"] {
        assert!(tagged(not_tags).await.is_empty(), "{not_tags}");
    }
    for (query, note) in [
        ("lodestar", "/Home.md"),
        ("keystone", "/notes/Alpha%20Note.md"),
        // An inline tag was always a word of its section; now it is the note's own.
        ("reading", "/Home.md"),
    ] {
        let urls = lookup_urls(mcp, json!({ "query": query })).await;
        assert_eq!(
            urls.first().map(String::as_str),
            Some(note),
            "{query}: {urls:?}"
        );
    }
    for (note, aliases, tags) in [
        (
            "/Home.md",
            Some("Start page, Front, Lodestar"),
            "vault, start, project/alpha, reading",
        ),
        (
            "/notes/Alpha Note.md",
            Some("First note, Keystone"),
            "notes, project/alpha, inline-tag",
        ),
        ("/Gamma.md", None, "gamma/part"),
    ] {
        let card = explore(mcp, note).await;
        assert_eq!(card.field("aliases"), aliases, "{}", card.text);
        assert_eq!(card.field("tags"), Some(tags), "{}", card.text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_and_aliases_count_for_filter_search_and_the_card() {
    let mcp = start().await;
    check_tags_and_aliases(&mcp).await;
    mcp.stop().await;
    // The CLI verbs are the same functions.
    let root = vault();
    let root = root.to_str().unwrap();
    let out = support::run_once([
        "--root",
        root,
        "lookup",
        "*",
        "--filter",
        "tag=project",
        "--read",
        "0",
    ]);
    let rows = String::from_utf8(out.stdout).unwrap();
    let urls: Vec<&str> = rows.lines().filter(|l| l.starts_with('/')).collect();
    assert_eq!(urls.len(), 2, "{rows}");
    assert!(urls[0].starts_with("/Home.md · ") && urls[1].starts_with("/notes/Alpha%20Note.md · "));
    let out = support::run_once(["--root", root, "explore", "/Home.md"]);
    let card = String::from_utf8(out.stdout).unwrap();
    assert!(
        card.contains("\naliases: Start page, Front, Lodestar\n"),
        "{card}"
    );
}

/// A copy of the vault served by a real `mark-server --flat`, and a
/// `mark-mcp` reading it (keep the folder and the server alive).
async fn over_a_mark_server() -> (tempfile::TempDir, mark_testkit::MarkServerProcess, Mcp) {
    let dir = tempfile::tempdir().unwrap();
    support::copy_dir(&vault(), dir.path());
    let server = mark_testkit::MarkServerProcess::start(dir.path(), &["--flat"]).unwrap();
    let mcp = Mcp::start(&server.reader_args(&[])).await;
    (dir, server, mcp)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_markdown_rules_hold_for_documents_from_a_mark_server() {
    let (_dir, _server, mcp) = over_a_mark_server().await;
    // Wiki links by name on the card: [[Beta]] in notes/ is the root's Beta,
    // [[Index]] the note's own folder's.
    let card = explore(&mcp, "/notes/Alpha%20Note.md").await;
    assert_eq!(card.status(), "ok", "{}", card.text);
    let all = explore_page(&mcp, "/notes/Alpha%20Note.md", "links.0").await;
    let links = section(&all, "## Outbound links");
    for line in ["- [Beta](/Beta.md)", "- [Index](/notes/Index.md)"] {
        assert!(links.contains(&line), "{line} in {}", all.text);
    }
    // A block, a nested heading, the wiki form, a callout that is no heading.
    let block = mcp.fetch("/Beta.md#^beta-block").await;
    assert_eq!(block.field("mode"), Some("block"), "{}", block.text);
    assert_eq!(
        block.body().trim_end(),
        "A paragraph ending in a block id. ^beta-block"
    );
    let nested = mcp.fetch("/Gamma.md#Part two#Summary").await;
    assert_eq!(nested.body(), "### Summary\n\nThe second part in short.\n");
    let wiki = mcp.fetch("[[Alpha Note#Details#Sub part]]").await;
    assert!(wiki.body().starts_with("### Sub part\n"), "{}", wiki.text);
    let outline = mcp
        .call(
            "mark_fetch",
            json!({ "url": "/Beta.md", "mode": "outline" }),
        )
        .await;
    assert!(!outline.text.contains("allout"), "{}", outline.text);
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_and_aliases_of_a_mark_server_s_documents_work_the_same() {
    let (_dir, _server, mcp) = over_a_mark_server().await;
    check_tags_and_aliases(&mcp).await;
    mcp.stop().await;
}

/// A note created, edited and deleted under a running `mark-mcp --root` is
/// found, found by its new text, and gone in `mark_lookup` within `--fresh-for`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookup_follows_notes_created_edited_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    support::copy_dir(&vault(), dir.path());
    let mcp = Mcp::start(&["--root", dir.path().to_str().unwrap(), "--fresh-for", "1s"]).await;
    let find = |query: &str| lookup_urls(&mcp, json!({ "query": query, "match": "body" }));
    let settle = || tokio::time::sleep(std::time::Duration::from_millis(1100));
    assert!(find("heron").await.is_empty(), "the index is built first");

    let note = dir.path().join("notes/Bird Log.md");
    std::fs::write(&note, "# Bird log\n\nA heron by the weir.\n").unwrap();
    settle().await;
    assert_eq!(find("heron").await, ["/notes/Bird%20Log.md#bird-log"]);

    std::fs::write(&note, "# Bird log\n\nA kingfisher by the weir.\n").unwrap();
    settle().await;
    assert_eq!(find("kingfisher").await, ["/notes/Bird%20Log.md#bird-log"]);
    assert!(find("heron").await.is_empty(), "the old text is gone");

    std::fs::remove_file(&note).unwrap();
    settle().await;
    assert!(
        find("kingfisher").await.is_empty(),
        "a deleted note is gone"
    );
    mcp.stop().await;
}

/// A resource read and the `open` verb take `#^block-id` as `mark_fetch`
/// does (one fragment lookup for every reader), and miss it the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_and_open_read_a_block_by_its_id() {
    let mcp = start().await;
    let block = mcp.read("mark://local/Beta.md#^beta-block").await.unwrap();
    assert_eq!(block, "A paragraph ending in a block id. ^beta-block");
    let miss = mcp.read("mark://local/Beta.md#^beta").await.unwrap_err();
    assert!(
        miss.contains("block ^beta not found in /Beta.md; nearest: ^beta-item, ^beta-block"),
        "{miss}"
    );
    mcp.stop().await;
    let open = |target: String| {
        std::process::Command::new(support::bin())
            .env("XDG_CACHE_HOME", support::cache_home())
            .args(["open", &target])
            .output()
            .unwrap()
    };
    let file = vault().join("Beta.md").display().to_string();
    let out = open(format!("{file}#^beta-item"));
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        "- a list item with its own id ^beta-item"
    );
    let out = open(format!("{file}#^nope"));
    assert!(!out.status.success());
}
