//! Parse a markdown document once into what an agent needs to navigate it: the heading tree
//! with GitHub-style anchors, byte-exact sections, a bounded outline, the opening paragraph,
//! links (with a resolver for their destinations), the YAML frontmatter and per-section
//! content hashes.
//!
//! Everything is a byte range into the source the [`Document`] holds (`&str`, `String`,
//! `Arc<str>`, …): no part of the body is copied. Parsing is one pass over
//! [pulldown-cmark](https://docs.rs/pulldown-cmark)'s events with GitHub's options (see
//! [`parser_options`]), so headings are found exactly where CommonMark puts them: never in
//! code blocks, HTML blocks or the frontmatter, and at any block depth (block quotes, list
//! items).
//!
//! It is not a renderer, not a full CommonMark AST, and knows nothing of any protocol.
//!
//! ```
//! use markdown_slice::Document;
//!
//! let doc = Document::parse("---\ntitle: Guide\n---\n# Intro\nHello.\n## Setup\nRun it.\n");
//! assert_eq!(doc.title(), Some("Guide"));
//! let setup = doc.find_anchor("#setup")?;
//! assert_eq!(doc.section_text(setup), "## Setup\nRun it.\n");
//! assert_eq!(doc.headings()[0].anchor.as_deref(), Some("intro"));
//! # Ok::<(), markdown_slice::AnchorMiss>(())
//! ```

mod document;
mod find;
mod frontmatter;
mod hashes;
mod links;
mod outline;
mod paragraph;
mod slug;
mod tokens;

pub use document::{Document, Heading, parser_options};
pub use find::AnchorMiss;
pub use frontmatter::Frontmatter;
pub use hashes::{SectionDiff, SectionHashes, diff_sections};
pub use links::{Link, LinkKind, Target, resolve};
pub use outline::{Outline, OutlineEntry, OutlineOptions};
pub use paragraph::OPENING_PARAGRAPH_BYTES;
pub use slug::slugify;
pub use tokens::estimate_tokens;
