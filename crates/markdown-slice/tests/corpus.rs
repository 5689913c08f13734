//! The Node.js API reference (64 files, 3.2 MB of real markdown): every cross-document and
//! same-document anchor link must land on one of our anchors, and comrak's anchorizer must
//! agree with ours. Reads `../shared/corpora/nodejs-api` relative to the workspace root (or
//! `$MARK_CORPORA/nodejs-api`) in place; fails loudly when it is missing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use markdown_slice::{Document, Target};

#[path = "common/corpus.rs"]
mod corpus;

/// Every `.md` file of the corpus, keyed by its site path (`/fs.md`).
fn load() -> BTreeMap<String, Document<String>> {
    let docs: BTreeMap<_, _> = corpus::node_corpus_files()
        .into_iter()
        .map(|(name, text)| (format!("/{name}"), Document::parse(text)))
        .collect();
    assert!(
        docs.len() >= 60,
        "expected the 64 files of the Node.js corpus, found {}",
        docs.len()
    );
    docs
}

fn has_anchor(doc: &Document<String>, anchor: &str) -> bool {
    doc.headings()
        .iter()
        .any(|h| h.anchor.as_deref() == Some(anchor))
}

#[test]
fn anchor_links_land_on_our_anchors() {
    let docs = load();
    let (mut cross_hits, mut same_hits) = (0usize, 0usize);
    let (mut cross_misses, mut same_misses) = (Vec::new(), Vec::new());
    for (path, doc) in &docs {
        for link in doc.links().iter().filter(|l| !l.is_image) {
            let Target::Internal {
                path: target,
                fragment: Some(fragment),
            } = link.resolve(path)
            else {
                continue;
            };
            let Some(target_doc) = docs.get(&target) else {
                continue;
            };
            let same = &target == path;
            let hit = has_anchor(target_doc, &fragment);
            let line = format!("{path}: {} -> {target}#{fragment}", link.dest);
            match (same, hit) {
                (false, true) => cross_hits += 1,
                (true, true) => same_hits += 1,
                (false, false) => cross_misses.push(line),
                (true, false) => same_misses.push(line),
            }
        }
    }
    // The misses in this corpus (Node 18 docs: 1 cross-document, 9 same-document) are
    // links written for Node's own HTML generator, not for GitHub's anchors:
    // - `#processexitcode_1`, `#event-error_1`, `#workerthreadid_1`, `#event-message_1`:
    //   Node de-duplicates repeated headings with `_1`, GitHub (and we) with `-1`;
    // - `#DEP0111`: upper case; GitHub anchors are lower case and fragments match exactly
    //   (`Document::find_anchor` would still find it, case-insensitively).
    println!(
        "cross-document: {cross_hits} hits, {} misses",
        cross_misses.len()
    );
    for miss in &cross_misses {
        println!("  miss {miss}");
    }
    println!(
        "same-document: {same_hits} hits, {} misses",
        same_misses.len()
    );
    for miss in &same_misses {
        println!("  miss {miss}");
    }
    let cross_total = cross_hits + cross_misses.len();
    let same_total = same_hits + same_misses.len();
    assert!(
        cross_total >= 800,
        "expected about 850 cross-document anchor links, found {cross_total}"
    );
    assert!(
        cross_hits * 100 >= cross_total * 99,
        "{cross_hits} of {cross_total} cross-document links hit"
    );
    assert!(
        same_total >= 100,
        "expected many same-document anchor links, found {same_total}"
    );
    assert!(
        same_hits * 100 >= same_total * 99,
        "{same_hits} of {same_total} same-document links hit"
    );
}

#[test]
fn comrak_anchorizer_agrees_with_ours() {
    let docs = load();
    let (mut agree, mut total) = (0usize, 0usize);
    let mut disagreements = Vec::new();
    for (path, doc) in &docs {
        let mut comrak = comrak::Anchorizer::new();
        for heading in doc.headings() {
            let theirs = comrak.anchorize(&heading.text);
            let ours = heading.anchor.clone().unwrap_or_default();
            total += 1;
            if theirs == ours {
                agree += 1;
            } else {
                disagreements.push(format!(
                    "{path}: {:?}: ours {ours:?}, comrak {theirs:?}",
                    heading.text
                ));
            }
        }
    }
    println!("comrak agrees on {agree} of {total} headings");
    for line in &disagreements {
        println!("  {line}");
    }
    assert!(
        total >= 3500,
        "expected about 4,000 headings, found {total}"
    );
    assert!(
        agree * 1000 >= total * 999,
        "comrak agrees on only {agree} of {total}"
    );
}

#[test]
fn sections_and_outlines_of_the_largest_file() {
    let docs = load();
    let fs = &docs["/fs.md"];
    assert_eq!(fs.title(), Some("File system"));
    let section = fs.find_anchor("fsreadfilepath-options-callback").unwrap();
    let text = fs.section_text(section);
    assert!(
        text.starts_with("### `fs.readFile(path[, options], callback)`"),
        "{text}"
    );
    // About 1,000 tokens for this section, about 69,000 for the file (corpus README).
    let tokens = markdown_slice::estimate_tokens(text);
    assert!((500..2000).contains(&tokens), "{tokens}");
    let whole = markdown_slice::estimate_tokens(fs.source());
    assert!((62_000..76_000).contains(&whole), "{whole}");
    let outline = fs
        .outline(&markdown_slice::OutlineOptions::default())
        .to_string();
    assert!(
        outline.len() <= 2048 && outline.lines().count() <= 60,
        "{outline}"
    );
    assert!(
        outline.starts_with("- File system (#file-system, ~"),
        "{outline}"
    );
    assert!(
        fs.opening_paragraph(400)
            .starts_with("The `node:fs` module enables"),
        "{}",
        fs.opening_paragraph(400)
    );
}

/// How many headings an outline names by a fragment that fetches exactly that heading;
/// panics on a fragment that fetches another.
fn fetchable_in(doc: &Document<String>, outline: &markdown_slice::Outline) -> usize {
    outline
        .entries
        .iter()
        .filter(|entry| match entry {
            markdown_slice::OutlineEntry::Heading { index, .. } => {
                entry.fragment().is_some_and(|fragment| {
                    assert_eq!(doc.find_anchor(fragment).unwrap(), &doc.headings()[*index]);
                    true
                })
            }
            _ => false,
        })
        .count()
}

#[test]
fn every_outline_names_at_least_ten_fetchable_anchors_within_its_bound() {
    let options = markdown_slice::OutlineOptions::default();
    for (path, doc) in &load() {
        let sections = doc.headings().iter().filter(|h| !h.nested).count();
        let outline = doc.outline(&options);
        let rendered = outline.to_string();
        assert!(
            outline.entries.len() <= options.max_lines && rendered.len() <= options.max_bytes,
            "{path}: {} lines, {} bytes",
            outline.entries.len(),
            rendered.len()
        );
        let named = fetchable_in(doc, &outline);
        assert!(
            named >= sections.min(10),
            "{path}: {named} of {sections}\n{rendered}"
        );
        // Every section's own outline, too (what `fetch url#big-section` shows).
        for heading in doc.headings() {
            let outline = doc.section_outline(heading, &options);
            let rendered = outline.to_string();
            assert!(
                rendered.len() <= options.max_bytes,
                "{path}#{:?}",
                heading.anchor
            );
            let below = doc.section_outline(
                heading,
                &markdown_slice::OutlineOptions {
                    max_lines: usize::MAX,
                    max_bytes: usize::MAX,
                },
            );
            let named = fetchable_in(doc, &outline);
            assert!(
                named >= below.entries.len().min(10),
                "{path}#{:?}: {named}\n{rendered}",
                heading.anchor
            );
        }
    }
}

#[test]
fn the_preamble_and_top_level_sections_reassemble_every_file() {
    for (path, doc) in &load() {
        let mut assembled = doc.preamble().to_string();
        for h in doc
            .headings()
            .iter()
            .filter(|h| h.parent.is_none() && !h.nested)
        {
            assembled.push_str(doc.section_text(h));
        }
        assert!(assembled == doc.body(), "{path}");
    }
}
