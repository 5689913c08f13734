//! The workspace README shows the same "use markdown-slice alone" example
//! as this crate's README, whose examples run as doc tests (see `lib.rs`).
#![allow(clippy::unwrap_used)]

use std::path::Path;

/// The section from its heading to the next `## ` heading.
fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let start = text.find(heading).unwrap_or_else(|| panic!("no {heading}"));
    let rest = &text[start + heading.len()..];
    let end = rest
        .find("\n## ")
        .map_or(text.len(), |i| start + heading.len() + i);
    &text[start..end]
}

#[test]
fn the_workspace_readme_shows_the_doc_tested_example() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ours = std::fs::read_to_string(crate_dir.join("README.md")).unwrap();
    let Ok(top) = std::fs::read_to_string(crate_dir.join("../../README.md")) else {
        return; // a packaged crate has no workspace README beside it
    };
    let heading = "## Use markdown-slice alone";
    assert_eq!(section(&top, heading), section(&ours, heading));
}
