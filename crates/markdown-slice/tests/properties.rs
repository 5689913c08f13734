//! Property tests: invariants of `Document` on any input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;

use markdown_slice::{Document, OutlineEntry, OutlineOptions, diff_sections, slugify};
use proptest::prelude::*;

/// Pieces of markdown that exercise the block and inline rules; concatenated at random.
const FRAGMENTS: &[&str] = &[
    "# ",
    "## ",
    "### ",
    "###### ",
    "####### ",
    "#",
    " ",
    "  ",
    "    ",
    "\t",
    "\n",
    "\n\n",
    "\r\n",
    "\r",
    "---\n",
    "---",
    "...\n",
    "===\n",
    "-\n",
    "```\n",
    "~~~\n",
    "```rust\n",
    "> ",
    ">",
    "- ",
    "* ",
    "1. ",
    "+ ",
    "text",
    "Title",
    "Notes",
    "Notes-1",
    "Über uns",
    "日本語",
    "e\u{301}",
    "👍🏽",
    "\u{FEFF}",
    "\u{0}",
    "`code`",
    "``",
    "`",
    "*",
    "_",
    "**b**",
    "~~s~~",
    "\\",
    "&amp;",
    "&#35;",
    "[a](b.md#c)",
    "[x][r]",
    "[r]: y.md#z\n",
    "[r]",
    "[[Page]]",
    "[[Page|shown]]",
    "[[Page#Part]]",
    "[[",
    "]]",
    "[",
    "]",
    "(",
    ")",
    "![i](p.png)",
    "<https://e.com/#f>",
    "<a@b.org>",
    "<div>\n",
    "</div>\n",
    "<!-- c -->\n",
    "<!--",
    "-->",
    "title: x\n",
    "tags: [a, b]\n",
    "key: [unclosed\n",
    "{#id}",
    "|a|b|\n|-|-|\n",
    "[^1]",
    "[^1]: note\n",
    "%20",
    "../",
    "#anchor",
    " ^blk-1",
    "^id",
    " #tag",
    "#tag/sub",
    "#1984",
    "a#b",
];

fn markdownish() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..80).prop_map(|parts| parts.concat())
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => markdownish(),
        1 => any::<String>(),
        1 => prop::collection::vec(any::<u8>(), 0..400)
            .prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
        1 => (1usize..200).prop_map(|n| format!("{}x", "> - ".repeat(n))),
        1 => (1usize..50).prop_map(|n| "```\n# not\n".repeat(n)),
        1 => markdownish().prop_map(|text| format!("\u{FEFF}{text}")),
    ]
}

fn check(text: &str) {
    let doc = Document::parse(text);
    let source = doc.source();
    let body = doc.body_range();
    assert!(source.is_char_boundary(body.start) && body.end == source.len());
    if let Some(frontmatter) = doc.frontmatter() {
        assert_eq!(frontmatter.range.end, body.start);
    }
    let headings = doc.headings();
    let mut anchors = HashSet::new();
    for (i, h) in headings.iter().enumerate() {
        assert!((1..=6).contains(&h.level));
        for range in [&h.line, &h.section] {
            assert!(
                range.start <= range.end && range.end <= source.len(),
                "{h:?}"
            );
            assert!(source.is_char_boundary(range.start) && source.is_char_boundary(range.end));
        }
        assert!(h.section.start >= body.start);
        assert_eq!(h.line.start, h.section.start);
        assert!(h.line.end <= h.section.end);
        let section = doc.section_text(h);
        assert_eq!(section, &source[h.section.clone()]);
        assert!(section.starts_with(&source[h.line.clone()]));
        // Sections nest: a later one is inside or after an earlier one. Among top-level
        // headings, inside means of a deeper level; a nested heading is always inside the
        // top-level section around it and never holds a top-level heading.
        for earlier in &headings[..i] {
            let inside =
                earlier.section.start <= h.section.start && h.section.end <= earlier.section.end;
            let after = earlier.section.end <= h.section.start;
            assert!(inside || after, "{earlier:?} vs {h:?}");
            if !earlier.nested && !h.nested {
                assert_eq!(
                    inside,
                    earlier.level < h.level && earlier.section.end > h.section.start
                );
            }
            if earlier.nested && !h.nested {
                assert!(after, "{earlier:?} holds top-level {h:?}");
            }
        }
        // The parent is the innermost section holding the heading's line.
        let mut holders = headings[..i]
            .iter()
            .enumerate()
            .filter(|(_, e)| e.section.start <= h.line.start && h.line.start < e.section.end);
        assert_eq!(h.parent, holders.next_back().map(|(p, _)| p), "{h:?}");
        if let Some(p) = h.parent {
            let parent = &headings[p];
            assert!(parent.section.start <= h.section.start && h.section.end <= parent.section.end);
            if !h.nested {
                assert!(!parent.nested && parent.level < h.level);
            }
        }
        if let Some(anchor) = &h.anchor {
            assert!(anchors.insert(anchor.clone()), "duplicate anchor {anchor}");
            let base = slugify(&h.text);
            assert!(anchor == &base || anchor.starts_with(&format!("{base}-")));
            assert_eq!(doc.find_anchor(anchor).unwrap().section, h.section);
        } else {
            assert!(slugify(&h.text).is_empty());
        }
    }
    // The preamble and the top-level sections re-assemble the body byte for byte.
    let mut assembled = doc.preamble().to_string();
    for h in headings.iter().filter(|h| h.parent.is_none() && !h.nested) {
        assembled.push_str(doc.section_text(h));
    }
    assert_eq!(assembled, &source[body.clone()]);

    for link in doc.links() {
        assert!(body.start <= link.range.start && link.range.end <= body.end);
        assert!(source.get(link.range.clone()).is_some());
        let _ = link.resolve("/dir/doc.md");
        let holder = doc.section_anchor_at(link.range.start);
        if let Some(anchor) = holder {
            let h = doc.find_anchor(anchor).unwrap();
            assert!(h.section.contains(&link.range.start));
        }
    }
    for block in doc.blocks() {
        let range = &block.range;
        assert!(body.start <= range.start && range.start < range.end && range.end <= body.end);
        assert!(source.is_char_boundary(range.start) && source.is_char_boundary(range.end));
        assert_eq!(doc.block_text(block), &source[range.clone()]);
        assert_eq!(doc.find_block(&block.id).unwrap().id, block.id);
    }
    for options in [
        OutlineOptions::default(),
        OutlineOptions {
            max_lines: 5,
            max_bytes: 200,
        },
    ] {
        let outline = doc.outline(&options);
        let rendered = outline.to_string();
        assert!(outline.entries.len() <= options.max_lines && rendered.len() <= options.max_bytes);
        let sections = headings.iter().filter(|h| !h.nested).count();
        let mut shown = 0;
        for entry in &outline.entries {
            let OutlineEntry::Heading { index, .. } = entry else {
                continue;
            };
            shown += 1;
            // Every name the outline offers fetches the heading it stands for.
            if let Some(fragment) = entry.fragment() {
                assert_eq!(doc.find_anchor(fragment).unwrap(), &headings[*index]);
            }
        }
        assert_eq!(shown + outline.omitted, sections);
    }
    for h in headings {
        let outline = doc.section_outline(h, &OutlineOptions::default());
        assert!(!outline.entries.is_empty());
    }
    for max in [0, 1, 7, 400] {
        let paragraph = doc.opening_paragraph(max);
        assert!(paragraph.len() <= max);
        let range = doc.first_paragraph_range();
        assert!(paragraph.is_empty() || source[range.unwrap()].starts_with(paragraph));
    }
    // Tags are names: never empty, never starting with `#`, each once.
    let mut seen = HashSet::new();
    for tag in doc.tags() {
        assert!(!tag.is_empty() && !tag.starts_with('#'), "{tag:?}");
        assert!(seen.insert(tag.to_lowercase()), "{tag:?} twice");
    }
    let _ = doc.find_anchor(text);
    let _ = doc.title();
    let hashes = doc.section_hashes();
    assert!(diff_sections(&hashes, &hashes).is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_on_any_input(text in any_text()) {
        check(&text);
    }

    #[test]
    fn invariants_hold_with_frontmatter_and_crlf(body in markdownish(), crlf in any::<bool>()) {
        let text = format!("---\ntitle: T\n---\n{body}");
        let text = if crlf { text.replace('\n', "\r\n") } else { text };
        check(&text);
        let doc = Document::parse(text.as_str());
        prop_assert!(doc.frontmatter().is_some());
    }

    #[test]
    fn appending_a_section_only_adds(body in markdownish()) {
        let old = Document::parse(body.as_str()).section_hashes();
        let new_text = format!("{body}\n\n# Zz appended zz\n");
        let new = Document::parse(new_text.as_str());
        let diff = diff_sections(&old, &new.section_hashes());
        prop_assert!(diff.removed.is_empty(), "{diff:?}");
    }
}

#[test]
fn nasty_inputs_do_not_panic() {
    for text in [
        "",
        "---",
        "---\n",
        "---\n---",
        "---\n...\n",
        "```",
        "~~~\n# a",
        "\t# a\n",
        "#\t\ta\n",
        "> # a\n>\n> b\n---\n",
        "- # a\n  b\n  ---\n",
        "a\r\n===\r\n",
        "\r\r\r# x\r",
        &"> ".repeat(2000),
        &"- ".repeat(2000),
        &"[".repeat(5000),
        &"[[".repeat(3000),
        &"*a".repeat(3000),
        &"`".repeat(3000),
        &"# \n".repeat(1000),
        // Found by the property tests: a heading ending inside a multi-byte character's
        // last byte, and a lone `\r` line ending between headings.
        "# 日本語",
        "```\n```\n# <div>\n## \r# ",
        // Found by the fuzzer: a heading on the first line after a byte-order mark.
        "\u{FEFF}[\n|\n-|55.\n|...\n-",
    ] {
        check(text);
    }
}
