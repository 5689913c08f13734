//! Passage units: the smallest blocks a reader quotes from a section, so a
//! search can hand over the paragraph that answers rather than the whole
//! section around it.
//!
//! A unit is a paragraph, a list item's own text (its nested lists are
//! units of their own), a table row (with its table's header to show it
//! by), a code block, a block quote, an HTML block (the Node.js docs keep
//! their change history in comments) or a footnote, as an exact range of
//! the source. Headings and thematic breaks are not units. This module
//! cuts; it does not rank (a search ranks the units it is given).

use std::ops::Range;

use pulldown_cmark::{Event, Parser, Tag, TagEnd};

use crate::document::{Document, Heading, parser_options};

/// What kind of block a [`PassageUnit`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitKind {
    /// A paragraph outside lists and quotes.
    Paragraph,
    /// A list item's own text, up to its first nested list.
    ListItem,
    /// One body row of a table.
    TableRow,
    /// A fenced or indented code block.
    Code,
    /// A whole block quote.
    Quote,
    /// An HTML block (a comment included).
    Html,
    /// A footnote definition.
    Footnote,
}

/// One quotable block of a section (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassageUnit {
    /// The block's source, trailing white space excluded.
    pub range: Range<usize>,
    /// What it is.
    pub kind: UnitKind,
    /// For a table row: the table's header row and delimiter line, which a
    /// row is shown under.
    pub table_header: Option<Range<usize>>,
}

impl<S: AsRef<str>> Document<S> {
    /// A heading's own text: from the end of its line to the next heading's
    /// line (of any level), subsections excluded; the document's end for the
    /// last heading. What a search matches a section's row against.
    pub fn own_text_range(&self, heading: &Heading) -> Range<usize> {
        let end = self
            .headings()
            .iter()
            .find(|h| h.line.start > heading.line.start)
            .map_or(self.body_range().end, |next| next.line.start);
        heading.line.end.min(end)..end
    }

    /// The passage units of `range` (a section's own text, the preamble),
    /// in source order; empty when `range` does not fit the source.
    pub fn passage_units(&self, range: Range<usize>) -> Vec<PassageUnit> {
        match self.source().get(range.clone()) {
            Some(text) => units_of(text)
                .into_iter()
                .map(|u| PassageUnit {
                    range: shift(&u.range, range.start),
                    kind: u.kind,
                    table_header: u.table_header.map(|h| shift(&h, range.start)),
                })
                .collect(),
            None => Vec::new(),
        }
    }
}

fn shift(r: &Range<usize>, by: usize) -> Range<usize> {
    r.start + by..r.end + by
}

/// An item whose own text is still being read: it ends at its first
/// nested list or at its own end.
struct OpenItem {
    start: usize,
    own_end: Option<usize>,
}

/// The units of `text`, parsed as a markdown document of its own.
fn units_of(text: &str) -> Vec<PassageUnit> {
    let mut units = Vec::new();
    let mut items: Vec<OpenItem> = Vec::new();
    // Inside a block that is one unit whole (a quote, a footnote, a code or
    // HTML block): the depth of such blocks, so inner blocks are not units.
    let mut whole_depth = 0usize;
    let mut header: Option<Range<usize>> = None;
    let mut in_head = false;
    let trimmed = |r: Range<usize>| {
        let end = r.start + text[r.clone()].trim_end().len();
        r.start..end
    };
    let push = |units: &mut Vec<PassageUnit>, r: Range<usize>, kind, table_header| {
        let r = trimmed(r);
        if !r.is_empty() {
            units.push(PassageUnit {
                range: r,
                kind,
                table_header,
            });
        }
    };
    for (event, range) in Parser::new_ext(text, parser_options()).into_offset_iter() {
        match event {
            Event::Start(tag) => {
                let whole = match tag {
                    Tag::BlockQuote(_) => Some(UnitKind::Quote),
                    Tag::CodeBlock(_) => Some(UnitKind::Code),
                    Tag::HtmlBlock => Some(UnitKind::Html),
                    Tag::FootnoteDefinition(_) => Some(UnitKind::Footnote),
                    _ => None,
                };
                let top = whole_depth == 0 && items.is_empty();
                if let Some(kind) = whole {
                    if top {
                        push(&mut units, range, kind, None);
                    }
                    whole_depth += 1;
                    continue;
                }
                if whole_depth > 0 {
                    continue;
                }
                match tag {
                    Tag::Paragraph if top => push(&mut units, range, UnitKind::Paragraph, None),
                    Tag::Item => items.push(OpenItem {
                        start: range.start,
                        own_end: None,
                    }),
                    Tag::List(_) => {
                        if let Some(item) = items.last_mut() {
                            item.own_end.get_or_insert(range.start);
                        }
                    }
                    Tag::Table(_) if items.is_empty() => header = Some(range.start..range.start),
                    Tag::TableHead => in_head = true,
                    Tag::TableRow if items.is_empty() && !in_head => {
                        // The header row and the delimiter line: all before the first row.
                        if let Some(h) = header.as_mut().filter(|h| h.start == h.end) {
                            h.end = h.start + text[h.start..range.start].trim_end().len();
                        }
                        let table_header = header.clone();
                        push(&mut units, range, UnitKind::TableRow, table_header);
                    }
                    _ => {}
                }
            }
            Event::End(end) => match end {
                TagEnd::BlockQuote(_)
                | TagEnd::CodeBlock
                | TagEnd::HtmlBlock
                | TagEnd::FootnoteDefinition => whole_depth = whole_depth.saturating_sub(1),
                _ if whole_depth > 0 => {}
                TagEnd::Item => {
                    if let Some(item) = items.pop() {
                        let end = item.own_end.unwrap_or(range.end);
                        push(&mut units, item.start..end, UnitKind::ListItem, None);
                    }
                }
                TagEnd::TableHead => in_head = false,
                TagEnd::Table => header = None,
                _ => {}
            },
            _ => {}
        }
    }
    // Items end after their nested lists: put the units in source order.
    units.sort_by_key(|u| u.range.start);
    units
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(text: &str) -> Vec<(UnitKind, &str)> {
        let doc = Document::parse(text);
        doc.passage_units(0..text.len())
            .into_iter()
            .map(|u| (u.kind, &text[u.range]))
            .collect()
    }

    #[test]
    fn paragraphs_items_and_code_are_units_in_source_order() {
        let text = "First para\nstill.\n\n* `options` {Object}\n  * `maxBuffer` Largest.\n    **Default:** `1024`.\n  * `cwd` Dir.\n\n```js\nx();\n```\n\n> Stability: 2\n> Stable\n\n<!-- YAML\nchanges:\n  - version: v18.0.0\n-->\n";
        assert_eq!(
            units(text),
            vec![
                (UnitKind::Paragraph, "First para\nstill."),
                (UnitKind::ListItem, "* `options` {Object}"),
                (
                    UnitKind::ListItem,
                    "* `maxBuffer` Largest.\n    **Default:** `1024`."
                ),
                (UnitKind::ListItem, "* `cwd` Dir."),
                (UnitKind::Code, "```js\nx();\n```"),
                (UnitKind::Quote, "> Stability: 2\n> Stable"),
                (
                    UnitKind::Html,
                    "<!-- YAML\nchanges:\n  - version: v18.0.0\n-->"
                ),
            ]
        );
    }

    #[test]
    fn a_table_row_carries_its_header() {
        let text = "| Flag | Meaning |\n|---|---|\n| `r` | read |\n| `w` | write |\n";
        let doc = Document::parse(text);
        let found = doc.passage_units(0..text.len());
        assert_eq!(found.len(), 2);
        assert_eq!(&text[found[1].range.clone()], "| `w` | write |");
        let header = found[1].table_header.clone().expect("a header");
        assert_eq!(&text[header], "| Flag | Meaning |\n|---|---|");
    }

    #[test]
    fn own_text_stops_at_the_next_heading_of_any_level() {
        let text = "# A\nIntro.\n## B\nBody.\n# C\nEnd.\n";
        let doc = Document::parse(text);
        let own = doc.own_text_range(&doc.headings()[0]);
        assert_eq!(&text[own.clone()], "\nIntro.\n");
        assert_eq!(
            units(text)
                .iter()
                .filter(|(_, t)| t.starts_with("Intro"))
                .count(),
            1
        );
        let units = doc.passage_units(own);
        assert_eq!(units.len(), 1);
    }

    #[test]
    fn a_range_outside_the_source_has_no_units() {
        let doc = Document::parse("text");
        assert!(doc.passage_units(2..10).is_empty());
    }
}
