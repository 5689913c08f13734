//! Parse a markdown document once into what an agent needs to navigate it: the heading tree
//! with GitHub-style anchors, byte-exact sections, a bounded outline, the opening paragraph,
//! links (with a resolver for their destinations), the YAML frontmatter, tags and aliases
//! (Obsidian's rules) and per-section content hashes.
//!
//! Everything is a byte range into the source the [`Document`] holds (`&str`, `String`,
//! `Arc<str>`, …): no part of the body is copied. Parsing is one pass over
//! [pulldown-cmark](https://docs.rs/pulldown-cmark)'s events with GitHub's options (see
//! [`parser_options`]), so headings are found exactly where CommonMark puts them: never in
//! code blocks, HTML blocks or the frontmatter, and at any block depth (block quotes, list
//! items); only the top-level ones cut the document into sections.
//!
//! It is not a renderer, not a full CommonMark AST, and knows nothing of any protocol.
//!
//! ```
//! use markdown_slice::{Document, OutlineOptions, Target, diff_sections};
//!
//! let text = concat!(
//!     "---\ntitle: Guide\ntags: [intro, setup]\n---\n",
//!     "# Intro\nHello. See [setup](#setup) and [the API](../api.md#fs).\n",
//!     "## Setup\nRun it.\n",
//! );
//! let doc = Document::parse(text);
//! assert_eq!(doc.title(), Some("Guide"));
//! assert_eq!(doc.frontmatter().map(|f| f.tags.len()), Some(2));
//!
//! // Sections are exact substrings of the source, found by anchor or by heading text.
//! let setup = doc.find_anchor("#setup")?;
//! assert_eq!(doc.section_text(setup), "## Setup\nRun it.\n");
//! assert_eq!(doc.find_anchor("Setup")?.anchor.as_deref(), Some("setup"));
//! let miss = doc.find_anchor("#install").unwrap_err();
//! assert_eq!(miss.to_string(), "section #install not found; nearest: intro, setup");
//!
//! // A bounded outline with each section's estimated size.
//! assert_eq!(
//!     doc.outline(&OutlineOptions::default()).to_string(),
//!     "- Intro (#intro, ~22 tok)\n  - Setup (#setup, ~5 tok)\n"
//! );
//! assert_eq!(doc.opening_paragraph(400), "Hello. See [setup](#setup) and [the API](../api.md#fs).");
//!
//! // Links, resolved against the document's path, with the section that holds them.
//! let api = &doc.links()[1];
//! assert_eq!(
//!     api.resolve("/guide/start.md"),
//!     Target::Internal { path: "/api.md".into(), fragment: Some("fs".into()) }
//! );
//! assert_eq!(doc.section_anchor_at(api.range.start), Some("intro"));
//!
//! // What changed between two versions, per section.
//! let newer = Document::parse(text.replace("Run it.", "Run it twice."));
//! let diff = diff_sections(&doc.section_hashes(), &newer.section_hashes());
//! assert_eq!(diff.changed, ["setup"]);
//! # Ok::<(), markdown_slice::AnchorMiss>(())
//! ```

// The README's examples run as doc tests, so the crates.io page stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod blocks;
mod document;
mod find;
mod frontmatter;
mod hashes;
mod links;
mod outline;
mod paragraph;
mod passages;
mod slug;
mod tags;
mod tokens;

pub use blocks::{Block, BlockMiss, Part, PartMiss};
pub use document::{Document, Heading, parser_options};
pub use find::{AnchorMiss, nearest_names};
pub use frontmatter::Frontmatter;
pub use hashes::{SectionDiff, SectionHashes, diff_sections};
pub use links::{Link, LinkKind, Target, resolve, unicode_form};
pub use outline::{Outline, OutlineEntry, OutlineOptions};
pub use paragraph::OPENING_PARAGRAPH_BYTES;
pub use passages::{PassageUnit, UnitKind};
pub use slug::slugify;
pub use tags::tag_matches;
pub use tokens::{bytes_to_tokens, estimate_tokens};
