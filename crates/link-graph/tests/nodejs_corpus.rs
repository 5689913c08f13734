//! The graph over the Node.js API reference (64 real documents): every file indexed, and the
//! backlinks of hub documents checked against an independent scan of the corpus.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::fs;

use link_graph::{LinkGraph, UpdateOutcome};
use markdown_slice::Document;
use pulldown_cmark::{Event, Options, Parser, Tag};

/// (file name, text) of every `.md` file, sorted by name.
fn corpus() -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = fs::read_dir(common::nodejs_api_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| {
            let name = p.file_name().unwrap().to_str().unwrap().to_owned();
            (name, fs::read_to_string(&p).unwrap())
        })
        .collect();
    files.sort();
    assert_eq!(files.len(), 64, "the corpus README says 64 files");
    files
}

fn build(files: &[(String, String)]) -> LinkGraph {
    let mut graph = LinkGraph::new();
    for (name, _) in files {
        graph.note_discovered(&format!("/{name}")).unwrap();
    }
    index_all(&mut graph, files, UpdateOutcome::Added);
    graph.mark_complete();
    graph
}

/// Indexes every file (etag: its length, stable across runs), expecting `outcome` for each.
fn index_all(graph: &mut LinkGraph, files: &[(String, String)], outcome: UpdateOutcome) {
    for (name, text) in files {
        let got = graph
            .index_document(
                &format!("/{name}"),
                &text.len().to_string(),
                &Document::parse(text.as_str()),
            )
            .unwrap();
        assert_eq!(got, outcome, "{name}");
    }
}

/// Whether a link destination, written in a file at the corpus root, names `target`:
/// resolution done by hand, not by markdown-slice (all files sit in one folder, so only
/// `./`, a leading `/` and the fragment need handling).
fn names(dest: &str, target: &str) -> bool {
    if dest.contains("://") || dest.starts_with("mailto:") {
        return false;
    }
    let path = dest.split(['#', '?']).next().unwrap_or("");
    let path = path.trim_start_matches("./").trim_start_matches('/');
    path == target
}

/// Files holding a link (not an image) to `target`, found from pulldown-cmark's own events
/// (which resolve reference definitions), with plain CommonMark options.
fn scan_with_pulldown(files: &[(String, String)], target: &str) -> BTreeSet<String> {
    files
        .iter()
        .filter(|(name, _)| name != target)
        .filter(|(_, text)| {
            Parser::new_ext(text, Options::empty()).any(|event| {
                matches!(event, Event::Start(Tag::Link { dest_url, .. }) if names(&dest_url, target))
            })
        })
        .map(|(name, _)| format!("/{name}"))
        .collect()
}

/// Files whose raw text holds `](target` or `]: target` (optionally `./`): no parser at all.
fn scan_raw_text(files: &[(String, String)], target: &str) -> BTreeSet<String> {
    let needles = [
        format!("]({target}"),
        format!("](./{target}"),
        format!("]: {target}"),
        format!("]: ./{target}"),
    ];
    files
        .iter()
        .filter(|(name, _)| name != target)
        .filter(|(_, text)| needles.iter().any(|n| text.contains(n.as_str())))
        .map(|(name, _)| format!("/{name}"))
        .collect()
}

fn backlink_sources(graph: &LinkGraph, path: &str) -> BTreeSet<String> {
    graph
        .backlinks(path)
        .into_iter()
        .map(|b| b.source)
        .collect()
}

#[test]
fn backlinks_of_hub_documents_match_an_independent_scan() {
    let files = corpus();
    let graph = build(&files);
    for target in ["errors.md", "stream.md", "buffer.md"] {
        let path = format!("/{target}");
        let from_graph = backlink_sources(&graph, &path);
        let from_pulldown = scan_with_pulldown(&files, target);
        let from_raw_text = scan_raw_text(&files, target);
        assert_eq!(
            from_graph, from_pulldown,
            "{target}: graph vs pulldown-cmark events"
        );
        assert_eq!(from_graph, from_raw_text, "{target}: graph vs raw text");
        println!(
            "{target}: {} linking documents, {} backlinks (source, section)",
            from_graph.len(),
            graph.backlinks(&path).len()
        );
        assert!(
            from_graph.len() >= 10,
            "{target} is a hub: {} sources",
            from_graph.len()
        );
    }
}

#[test]
fn every_backlink_names_a_section_and_text_of_its_source() {
    let files = corpus();
    let graph = build(&files);
    let backlinks = graph.backlinks("/errors.md");
    for link in &backlinks {
        assert!(graph.is_indexed(&link.source));
        assert_eq!(link.source_title.as_deref(), graph.title(&link.source));
        assert!(!link.text.is_empty(), "{link:?}");
        let (_, source_text) = files
            .iter()
            .find(|(n, _)| format!("/{n}") == link.source)
            .unwrap();
        if let Some(section) = &link.section {
            let doc = Document::parse(source_text.as_str());
            assert!(
                doc.find_anchor(section).is_ok(),
                "{}: no section #{section}",
                link.source
            );
        }
    }
    // One per (source, section): no pair twice.
    let pairs: BTreeSet<(&str, Option<&str>)> = backlinks
        .iter()
        .map(|b| (b.source.as_str(), b.section.as_deref()))
        .collect();
    assert_eq!(pairs.len(), backlinks.len());
}

#[test]
fn the_whole_corpus_is_indexed_and_the_graph_says_complete() {
    let files = corpus();
    let mut graph = build(&files);
    let coverage = graph.coverage();
    assert_eq!(
        (coverage.indexed, coverage.known, coverage.complete),
        (64, Some(64), true)
    );
    let count = graph.backlinks("/errors.md").len();
    assert_eq!(
        coverage.backlinks_note(count),
        format!("({count}; graph complete)")
    );
    // Indexing again with the same etags changes nothing.
    index_all(&mut graph, &files, UpdateOutcome::Unchanged);
    let edges: usize = files
        .iter()
        .map(|(name, _)| graph.outbound(&format!("/{name}")).unwrap().len())
        .sum();
    println!(
        "nodejs-api: {edges} stored edges, approx {} bytes",
        graph.approx_bytes()
    );
    assert!(
        edges > 900,
        "about 900 cross-document links plus external ones: {edges}"
    );
}
