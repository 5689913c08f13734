//! Block ids: a `^block-id` closing a paragraph or a list item, the way Obsidian links a
//! block (`[[Note#^block-id]]`).
//!
//! The rule (Obsidian's): the id is Latin letters, digits and `-`, after white space at the
//! very end of a paragraph's text (`A thought. ^idea`, or on the paragraph's last line). It
//! names that paragraph, or, when the paragraph is a list item's text, the whole item (its
//! nested items included). An id alone in a paragraph of its own names the block just
//! before it (a list, a quote, a table: `> quote`, blank line, `^quote-id`). Never in code,
//! a heading, inline code, link text or emphasis: only literal text counts.

use std::ops::Range;

use pulldown_cmark::{Event, Tag};

use crate::document::{Document, Heading};
use crate::find::{AnchorMiss, nearest, nearest_list};

/// A block of the document that carries an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The id, without `^` (`beta-block`).
    pub id: String,
    /// The block's source: the paragraph, the whole list item, or the block a lone id
    /// follows; the `^id` included, trailing white space excluded.
    pub range: Range<usize>,
}

/// No block has the id; the nearest ids, best first, for the caller's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("block ^{query} not found; nearest: {}", nearest_list(.nearest, "^", "(the document has no block ids)"))]
pub struct BlockMiss {
    /// What was asked for, without `#` or `^`.
    pub query: String,
    /// Up to 8 ids of the document, most similar first (empty when it has none).
    pub nearest: Vec<String>,
}

impl<S: AsRef<str>> Document<S> {
    /// Finds the block `id` names (`beta-block`, `^beta-block` or `#^beta-block`): the first
    /// with exactly that id, else the first whose id matches ignoring ASCII case.
    pub fn find_block(&self, id: &str) -> Result<&Block, BlockMiss> {
        let query = id.trim().trim_start_matches('#').trim_start_matches('^');
        let blocks = self.blocks();
        blocks
            .iter()
            .find(|b| b.id == query)
            .or_else(|| blocks.iter().find(|b| b.id.eq_ignore_ascii_case(query)))
            .ok_or_else(|| BlockMiss {
                query: query.to_string(),
                nearest: nearest(blocks.iter().map(|b| b.id.as_str()), query),
            })
    }

    /// The exact source text of a block.
    ///
    /// `block` should come from this document; one whose range does not fit yields `""`.
    pub fn block_text(&self, block: &Block) -> &str {
        self.source().get(block.range.clone()).unwrap_or("")
    }

    /// What a url's `#fragment` names: the block for `^id`, else the section
    /// [`find_anchor`](Document::find_anchor) finds. The one lookup every
    /// reader of a fragment uses.
    pub fn find_part(&self, fragment: &str) -> Result<Part<'_>, PartMiss> {
        if fragment.trim().trim_start_matches('#').starts_with('^') {
            self.find_block(fragment)
                .map(Part::Block)
                .map_err(PartMiss::Block)
        } else {
            self.find_anchor(fragment)
                .map(Part::Section)
                .map_err(PartMiss::Section)
        }
    }
}

/// A part a fragment names: a heading's section or a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part<'d> {
    /// A heading (`#anchor`, its text, a heading path): its whole section.
    Section(&'d Heading),
    /// A block (`#^id`).
    Block(&'d Block),
}

impl Part<'_> {
    /// Its source range.
    pub fn range(self) -> Range<usize> {
        match self {
            Part::Section(h) => h.section.clone(),
            Part::Block(b) => b.range.clone(),
        }
    }
}

/// A fragment that names no part, with the nearest names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartMiss {
    /// No heading matched.
    #[error(transparent)]
    Section(AnchorMiss),
    /// No block has the id.
    #[error(transparent)]
    Block(BlockMiss),
}

/// What an open tag is, for the block rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Paragraph,
    Item,
    /// Emphasis, links, images and the like: text inside them is not literal text.
    Inline,
    /// Found by its text, never by an id, and never the block a lone id names.
    Heading,
    /// Every other block: quotes, lists, code, headings, tables, the document itself.
    Other,
}

/// One tag open around the current event.
#[derive(Debug)]
struct Open {
    kind: Kind,
    range: Range<usize>,
    /// The last inline event directly in this block, when it was literal text.
    tail: Option<Range<usize>>,
    /// The last block that closed inside this one.
    previous: Option<Range<usize>>,
}

/// Finds the blocks with ids during the document's one pass over the events.
#[derive(Debug)]
pub(crate) struct BlockScan<'s> {
    source: &'s str,
    /// The document itself at the bottom, so every block has a parent.
    open: Vec<Open>,
    blocks: Vec<Block>,
}

impl<'s> BlockScan<'s> {
    pub(crate) fn new(source: &'s str) -> Self {
        BlockScan {
            source,
            open: vec![Open {
                kind: Kind::Other,
                range: 0..source.len(),
                tail: None,
                previous: None,
            }],
            blocks: Vec::new(),
        }
    }

    /// Takes the next event of the pass (`range` in source offsets).
    pub(crate) fn event(&mut self, event: &Event<'_>, range: &Range<usize>) {
        match event {
            Event::Start(tag) => self.start(tag, range),
            Event::End(_) => self.end(),
            Event::Text(_) => self.set_tail(Some(range.clone())),
            _ => self.set_tail(None),
        }
    }

    /// The blocks found, in document order.
    pub(crate) fn finish(mut self) -> Vec<Block> {
        self.blocks.sort_by_key(|b| b.range.start);
        self.blocks
    }

    fn set_tail(&mut self, tail: Option<Range<usize>>) {
        if let Some(block) = self.open.iter_mut().rev().find(|o| o.kind != Kind::Inline) {
            block.tail = tail;
        }
    }

    fn start(&mut self, tag: &Tag<'_>, range: &Range<usize>) {
        let kind = match tag {
            Tag::Paragraph => Kind::Paragraph,
            Tag::Item => Kind::Item,
            Tag::Heading { .. } => Kind::Heading,
            Tag::Emphasis
            | Tag::Strong
            | Tag::Strikethrough
            | Tag::Superscript
            | Tag::Subscript
            | Tag::Link { .. }
            | Tag::Image { .. } => Kind::Inline,
            _ => Kind::Other,
        };
        if kind == Kind::Inline {
            self.set_tail(None);
        } else {
            // A tight list item's own text ends where its first inner block starts.
            let item = self.open.last_mut().filter(|o| o.kind == Kind::Item);
            if let Some((tail, whole)) = item.and_then(|i| Some((i.tail.take()?, i.range.clone())))
                && let Some((id, _)) = closing_id(self.source, whole.start, &tail)
            {
                self.push(id, whole);
            }
        }
        self.open.push(Open {
            kind,
            range: range.clone(),
            tail: None,
            previous: None,
        });
    }

    fn end(&mut self) {
        if self.open.len() < 2 {
            return;
        }
        let Some(closed) = self.open.pop() else {
            return;
        };
        if closed.kind == Kind::Inline {
            self.set_tail(None);
            return;
        }
        let Some(parent) = self.open.last() else {
            return;
        };
        let id = closed
            .tail
            .as_ref()
            .and_then(|tail| closing_id(self.source, closed.range.start, tail));
        let found = match (closed.kind, id) {
            // A lone id names the block before it, if there is one.
            (Kind::Paragraph, Some((id, true))) => parent.previous.clone().map(|b| (id, b)),
            // A list item's text names the whole item.
            (Kind::Paragraph, Some((id, false))) if parent.kind == Kind::Item => {
                Some((id, parent.range.clone()))
            }
            (Kind::Paragraph | Kind::Item, Some((id, _))) => Some((id, closed.range.clone())),
            _ => None,
        };
        if let Some((id, range)) = found {
            self.push(id, range);
        }
        if let Some(parent) = self.open.last_mut() {
            parent.previous = (closed.kind != Kind::Heading).then_some(closed.range);
        }
    }

    fn push(&mut self, id: String, range: Range<usize>) {
        let text = self.source.get(range.clone()).unwrap_or("");
        let end = range.start + text.trim_end().len();
        self.blocks.push(Block {
            id,
            range: range.start..end,
        });
    }
}

/// The id a block's last text `tail` closes with, and whether it stands alone (nothing
/// before it since the block's `start`).
fn closing_id(source: &str, start: usize, tail: &Range<usize>) -> Option<(String, bool)> {
    let text = source.get(tail.clone())?.trim_end();
    let caret = text.rfind('^')?;
    let id = &text[caret + 1..];
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return None;
    }
    let before = source.get(start..tail.start + caret)?;
    if before.trim().is_empty() {
        return Some((id.to_string(), true));
    }
    before
        .ends_with(char::is_whitespace)
        .then(|| (id.to_string(), false))
}

#[cfg(test)]
mod tests {
    use crate::Document;

    fn blocks(text: &str) -> Vec<(String, String)> {
        let doc = Document::parse(text);
        doc.blocks()
            .iter()
            .map(|b| (b.id.clone(), doc.block_text(b).to_string()))
            .collect()
    }

    fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
        expected
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn an_id_closing_a_paragraph_names_the_paragraph() {
        let text = "# T\n\nFirst line\nA thought. ^idea\n\nAnother, id on its own line.\n^next-1\n\nNo id here.\n";
        assert_eq!(
            blocks(text),
            pairs(&[
                ("idea", "First line\nA thought. ^idea"),
                ("next-1", "Another, id on its own line.\n^next-1"),
            ])
        );
    }

    #[test]
    fn an_id_closing_a_list_item_names_the_whole_item() {
        let text = "- one ^first\n- two\n  - nested\n- three ^third\n  - child of three\n\n1. loose\n\n   item ^loose\n";
        assert_eq!(
            blocks(text),
            pairs(&[
                ("first", "- one ^first"),
                ("third", "- three ^third\n  - child of three"),
                ("loose", "1. loose\n\n   item ^loose"),
            ])
        );
    }

    #[test]
    fn a_lone_id_names_the_block_before_it() {
        let text = "> A quote\n> on two lines\n\n^quote-id\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n^table-id\n";
        let found = blocks(text);
        assert_eq!(
            found[0],
            ("quote-id".into(), "> A quote\n> on two lines".into())
        );
        assert_eq!(found[1].0, "table-id");
        assert!(found[1].1.starts_with("| a | b |") && found[1].1.ends_with("| 1 | 2 |"));
        assert_eq!(found.len(), 2);
        assert_eq!(blocks("^nothing-before\n"), pairs(&[]));
    }

    #[test]
    fn never_in_code_headings_or_markup_and_only_at_the_end() {
        let text = "## Heading ^not\n\n^not-after-a-heading\n\n```\ncode ^not\n```\n\n    indented ^not\n\n`code ^not`\n\n*emphasis ^not*\n\n[link ^not](x.md)\n\nmiddle ^not of text\n\nno space^not\n\nescaped \\^not\n\nbad chars ^no_pe\n\n> quoted ^yes\n";
        assert_eq!(blocks(text), pairs(&[("yes", "quoted ^yes")]));
    }

    #[test]
    fn find_block_by_id_any_case_and_a_miss_lists_the_nearest() {
        let doc = Document::parse("One. ^alpha-block\n\nTwo. ^beta-block\n");
        for query in ["beta-block", "^beta-block", "#^beta-block", "^BETA-block"] {
            assert_eq!(doc.find_block(query).unwrap().id, "beta-block", "{query}");
        }
        let miss = doc.find_block("^beta").unwrap_err();
        assert_eq!(miss.nearest[0], "beta-block");
        assert_eq!(
            miss.to_string(),
            "block ^beta not found; nearest: ^beta-block, ^alpha-block"
        );
        let none = Document::parse("text").find_block("x").unwrap_err();
        assert_eq!(
            none.to_string(),
            "block ^x not found; nearest: (the document has no block ids)"
        );
    }
}
