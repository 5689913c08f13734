//! GitHub anchors end to end (heading text extraction plus slugs), with comrak's anchorizer
//! as a second opinion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use markdown_slice::{Document, slugify};
use proptest::prelude::*;

/// The rules from the issue, written as headings.
const CASES: &[(&str, &str)] = &[
    ("# W1 — outline mode", "w1--outline-mode"),
    ("# What's next?", "whats-next"),
    ("# Über uns", "über-uns"),
    (
        "### `fs.readFile(path[, options], callback)`",
        "fsreadfilepath-options-callback",
    ),
    ("## The mark_fetch tool", "the-mark_fetch-tool"),
    (
        "## The **bold** and [linked](x.md) *words*",
        "the-bold-and-linked-words",
    ),
    ("Setext *heading*\n===", "setext-heading"),
];

#[test]
fn issue_examples_agree_with_comrak() {
    for (markdown, expected) in CASES {
        let doc = Document::parse(*markdown);
        let heading = &doc.headings()[0];
        assert_eq!(heading.anchor.as_deref(), Some(*expected), "{markdown}");
        let mut comrak = comrak::Anchorizer::new();
        assert_eq!(comrak.anchorize(&heading.text), *expected, "{markdown}");
    }
}

#[test]
fn duplicates_agree_with_comrak() {
    let doc = Document::parse("# Notes\n# Notes\n# Notes-1\n# Notes\n");
    let mut comrak = comrak::Anchorizer::new();
    for heading in doc.headings() {
        assert_eq!(
            heading.anchor.clone().unwrap(),
            comrak.anchorize(&heading.text)
        );
    }
    let anchors: Vec<_> = doc
        .headings()
        .iter()
        .map(|h| h.anchor.clone().unwrap())
        .collect();
    assert_eq!(anchors, ["notes", "notes-1", "notes-1-1", "notes-2"]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Where the rules coincide (plain spaces as the only white space), comrak's slug and
    /// ours are the same.
    #[test]
    fn slugify_matches_comrak(text in "[a-zA-Z0-9 _.,:;!?'\"()\\[\\]{}<>/@#$%^&*+=~|-]{0,40}|[a-zäöüßéÉÜ日本語ДжΩ ·—]{0,20}") {
        let mut comrak = comrak::Anchorizer::new();
        prop_assert_eq!(slugify(&text), comrak.anchorize(&text));
    }
}
