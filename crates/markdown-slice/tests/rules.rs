//! The slicing rules of issue #14 (outline bound, anchor lookup order, nested headings,
//! frontmatter, emoji headings), each on the smallest document that shows it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use markdown_slice::{Document, OutlineEntry, OutlineOptions};

/// The anchors (or by-name fragments) the outline offers, each checked to fetch the heading
/// it stands for.
fn fetchable_fragments<S: AsRef<str>>(doc: &Document<S>, options: &OutlineOptions) -> Vec<String> {
    let outline = doc.outline(options);
    outline
        .entries
        .iter()
        .filter_map(|e| {
            let OutlineEntry::Heading { index, .. } = e else {
                return None;
            };
            let fragment = e.fragment()?;
            let found = doc.find_anchor(fragment).unwrap();
            assert_eq!(found, &doc.headings()[*index], "#{fragment}");
            Some(fragment.to_string())
        })
        .collect()
}

fn found_text<'a, S: AsRef<str>>(doc: &'a Document<S>, query: &str) -> &'a str {
    doc.find_anchor(query).unwrap().text.as_str()
}

#[test]
fn a_lone_title_does_not_hide_the_first_level() {
    let mut text = String::from("# Big\n\nIntro.\n\n");
    for i in 1..=60 {
        text.push_str(&format!("## Sec {i}\n\n{}\n\n", "Body text. ".repeat(35)));
    }
    let doc = Document::parse(text);
    let options = OutlineOptions::default();
    let outline = doc.outline(&options);
    let rendered = outline.to_string();
    assert!(outline.entries.len() <= options.max_lines, "{rendered}");
    assert!(rendered.len() <= options.max_bytes, "{rendered}");
    let fragments = fetchable_fragments(&doc, &options);
    // The title, `Sec 1` and `Sec 2`, the line that names what did not fit (under the
    // title), and the newest sections to `Sec 60`.
    assert!(fragments.len() > 50, "{rendered}");
    assert_eq!(fragments[..3], ["big", "sec-1", "sec-2"]);
    assert_eq!(fragments.last().map(String::as_str), Some("sec-60"));
    let shown = fragments.len() - 1;
    let first_newest = 60 - (shown - 2) + 1;
    assert!(
        rendered.contains(&format!(
            "\n  +{} more sections: #sec-3 … #sec-{}\n  - Sec {first_newest} (",
            60 - shown,
            first_newest - 1
        )),
        "{rendered}"
    );
    assert_eq!(outline.omitted, 60 - shown);
}

#[test]
fn a_level_that_does_not_fit_shows_as_many_entries_as_fit() {
    // 40 chapters of 5 subsections: all chapters with their `+5 subsections` lines take 81
    // lines, over the 60 allowed; the first chapters come with theirs, the rest as `+N more`.
    let mut text = String::from("# Manual\n\n");
    for chapter in 1..=40 {
        text.push_str(&format!("## Chapter {chapter}\n\ntext\n\n"));
        for part in 1..=5 {
            text.push_str(&format!("### Part {chapter}.{part}\n\ntext\n\n"));
        }
    }
    let doc = Document::parse(text);
    let options = OutlineOptions::default();
    let outline = doc.outline(&options);
    let rendered = outline.to_string();
    assert!(
        outline.entries.len() <= 60 && rendered.len() <= 2048,
        "{rendered}"
    );
    assert!(rendered.starts_with("- Manual (#manual, ~"), "{rendered}");
    assert!(
        rendered.contains("\n  - Chapter 1 (#chapter-1, ~")
            && rendered.contains("\n    +5 subsections\n"),
        "{rendered}"
    );
    assert!(
        fetchable_fragments(&doc, &options).len() >= 10,
        "{rendered}"
    );
    let shown = outline
        .entries
        .iter()
        .filter(|e| matches!(e, OutlineEntry::Heading { .. }))
        .count();
    assert_eq!(shown + outline.omitted, doc.headings().len());
}

#[test]
fn raw_heading_text_is_matched_before_it_is_reslugged() {
    let doc = Document::parse("## Setup\n\none\n\n## Setup\n\ntwo\n\n## Setup 1\n\nthree\n");
    let anchors: Vec<_> = doc.headings().iter().map(|h| h.anchor.as_deref()).collect();
    assert_eq!(anchors, [Some("setup"), Some("setup-1"), Some("setup-1-1")]);
    let found = |q: &str| doc.find_anchor(q).unwrap().anchor.clone().unwrap();
    // Written as anchors: the anchor itself.
    assert_eq!(found("setup"), "setup");
    assert_eq!(found("#setup-1"), "setup-1");
    assert_eq!(found("setup-1-1"), "setup-1-1");
    // Heading text (a space or capitals): the heading with that text, first one first.
    assert_eq!(found("Setup 1"), "setup-1-1");
    assert_eq!(found("#Setup 1"), "setup-1-1");
    assert_eq!(found("Setup"), "setup");
    assert_eq!(found("#Setup%201"), "setup-1-1");
    // Case-insensitive anchor, then case-insensitive text, then the text re-slugged.
    assert_eq!(found("#SETUP-1"), "setup-1");
    assert_eq!(found("setup 1"), "setup-1-1");
    assert_eq!(found("SETUP 1"), "setup-1-1");
    let doc = Document::parse("## Install steps\n\ntext\n");
    assert_eq!(found_text(&doc, "install steps?"), "Install steps");
}

#[test]
fn a_heading_in_a_blockquote_or_list_item_cuts_nothing() {
    let text = "## Install\n\nFirst steps.\n\n> ## Warning\n> Mind the gap.\n\nMore install steps.\n\n- ### In a list\n  item text\n- next item\n\nLast install step.\n\n## Use\n\nuse it\n";
    let doc = Document::parse(text);
    let install = doc.find_anchor("#install").unwrap();
    assert_eq!(
        doc.section_text(install),
        &text[..text.find("## Use").unwrap()]
    );
    // Nested headings are still found by anchor and by text, as their own small range.
    let warning = doc.find_anchor("Warning").unwrap();
    assert_eq!(doc.section_text(warning), "> ## Warning\n> Mind the gap.\n");
    let listed = doc.find_anchor("#in-a-list").unwrap();
    assert_eq!(doc.section_text(listed), "- ### In a list\n  item text\n");
    assert_eq!(
        doc.section_anchor_at(text.find("More install").unwrap()),
        Some("install")
    );
    assert_eq!(
        doc.section_anchor_at(text.find("Mind the gap").unwrap()),
        Some("warning")
    );
    // The outline is the document's sections: the nested headings are not among them.
    assert_eq!(
        doc.outline(&OutlineOptions::default()).to_string(),
        format!(
            "- Install (#install, ~{})\n- Use (#use, ~5 tok)\n",
            format_args!(
                "{} tok",
                markdown_slice::estimate_tokens(doc.section_text(install))
            )
        )
    );
}

#[test]
fn a_rule_at_the_top_is_body_not_frontmatter() {
    let text = "---\n\n# Title Under Rule\n\nIntro text.\n\n---\n\n## Later\n";
    let doc = Document::parse(text);
    assert!(doc.frontmatter().is_none());
    assert_eq!(doc.body(), text);
    assert!(doc.find_anchor("#title-under-rule").is_ok());
    let outline = doc.outline(&OutlineOptions::default()).to_string();
    assert!(
        outline.starts_with("- Title Under Rule (#title-under-rule"),
        "{outline}"
    );
    assert_eq!(doc.title(), Some("Title Under Rule"));
    // A heading right after the rule: also body.
    let doc = Document::parse("---\n# Title\n---\n");
    assert!(doc.frontmatter().is_none());
    assert!(doc.find_anchor("#title").is_ok());
    // A mapping line after it: frontmatter, kept with a note when its YAML is broken.
    let doc = Document::parse("---\ntitle: [unclosed\n---\ntext\n");
    let frontmatter = doc.frontmatter().unwrap();
    assert!(frontmatter.yaml_error.is_some());
    assert_eq!(doc.body(), "text\n");
}

#[test]
fn emoji_and_punctuation_headings_are_reached_by_their_text() {
    let text = "# Guide\n\nintro\n\n## 🚀\n\nlaunch\n\n## !!!\n\nloud\n\n## 🚀\n\nagain\n";
    let doc = Document::parse(text);
    let rocket = doc.find_anchor("🚀").unwrap();
    assert_eq!(doc.section_text(rocket), "## 🚀\n\nlaunch\n\n");
    assert_eq!(doc.find_anchor("#🚀").unwrap(), rocket);
    assert_eq!(doc.find_anchor("#%F0%9F%9A%80").unwrap(), rocket);
    let loud = doc.find_anchor("#!!!").unwrap();
    assert_eq!(doc.section_text(loud), "## !!!\n\nloud\n\n");
    // The outline says how to reach them; the second 🚀 has no name of its own.
    let outline = doc.outline(&OutlineOptions::default()).to_string();
    assert!(outline.contains("\n  - 🚀 (#🚀, ~"), "{outline}");
    assert!(outline.contains("\n  - !!! (#!!!, ~"), "{outline}");
    assert!(outline.ends_with("\n  - 🚀 (~5 tok)\n"), "{outline}");
    fetchable_fragments(&doc, &OutlineOptions::default());
}

#[test]
fn a_callout_is_not_a_heading() {
    let doc = Document::parse(
        "# Note\n\n> [!note] A callout title\n> Callouts are not headings.\n\n> [!warning]- Folded\n> body\n",
    );
    let texts: Vec<&str> = doc.headings().iter().map(|h| h.text.as_str()).collect();
    assert_eq!(texts, ["Note"]);
    let outline = doc.outline(&OutlineOptions::default());
    assert_eq!(outline.entries.len(), 1, "{outline}");
    assert!(doc.find_anchor("A callout title").is_err());
}

#[test]
fn a_heading_path_finds_the_sub_under_that_heading() {
    let text = "# Roadmap\n## Phase 1\n### Status\nDone.\n## Phase 2\n### Notes\n#### Status\nOpen.\n### Status\nLate.\n";
    let doc = Document::parse(text);
    let anchor = |q: &str| doc.find_anchor(q).map(|h| h.anchor.clone().unwrap());
    // Alone, the first `Status`; under a heading, the first one inside that heading's
    // section, at any depth; each step by the usual lookup order.
    assert_eq!(anchor("Status").unwrap(), "status");
    assert_eq!(anchor("Phase 2#Status").unwrap(), "status-1");
    assert_eq!(anchor("#phase-2#notes#status").unwrap(), "status-1");
    assert_eq!(anchor("Roadmap#Phase 1#Status").unwrap(), "status");
    assert_eq!(anchor("phase 2#Notes").unwrap(), "notes");
    assert_eq!(anchor("Phase%202#Status").unwrap(), "status-1");
    // A step that names nothing under its parent says so, with the anchors there.
    let miss = doc.find_anchor("Phase 1#Notes").unwrap_err();
    assert_eq!(miss.query, "Phase 1#Notes");
    assert_eq!(miss.nearest, ["status"]);
    // A heading whose own text holds `#` is found first as itself.
    let sharp = Document::parse("# C# notes\n## Sub\n");
    assert_eq!(sharp.find_anchor("C# notes").unwrap().text, "C# notes");
    assert_eq!(sharp.find_anchor("C# notes#Sub").unwrap().text, "Sub");
}
