//! The parsed document: one pass over pulldown-cmark events.

use std::ops::Range;

use pulldown_cmark::{Event, LinkType, Options, Parser, Tag, TagEnd};

use crate::blocks::{Block, BlockScan};
use crate::find::HeadingIndex;
use crate::frontmatter::{self, Frontmatter};
use crate::links::{Link, LinkKind};
use crate::slug::Slugger;
use crate::tags;

/// One heading of the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    /// 1 to 6.
    pub level: u8,
    /// Plain text: inline markup removed, code spans keep their text, line breaks become
    /// spaces.
    pub text: String,
    /// The unique GitHub-style anchor; `None` when the text has nothing to slug.
    pub anchor: Option<String>,
    /// The heading's lines: from the start of its first line (container markers such as
    /// `> ` or `- ` included) to the end of its last line, line break excluded.
    pub line: Range<usize>,
    /// The heading's section: from `line.start` to the `line.start` of the next heading of
    /// the same or a higher level (subsections included), or to the end of the source.
    /// Only top-level headings cut sections: a [`nested`](Heading::nested) heading's
    /// section ends at the next heading of the same or a higher level inside its block
    /// quote or list item, else at that container's end.
    pub section: Range<usize>,
    /// Index in [`Document::headings`] of the nearest enclosing heading: the innermost
    /// heading whose section holds this one's line (for a top-level heading, the last
    /// earlier top-level heading of a higher level).
    pub parent: Option<usize>,
    /// Whether the heading sits inside a block quote or list item rather than at the
    /// document's top block level. A nested heading is found by its anchor and text, but
    /// starts and ends no section of the document and is not in the outline.
    pub nested: bool,
}

/// A markdown document parsed once: frontmatter, headings with anchors and sections,
/// links and the opening paragraph, all as byte ranges into the source it holds.
///
/// `S` is anything that derefs to the text: `&str`, `String`, `Arc<str>`, …
#[derive(Debug, Clone)]
pub struct Document<S: AsRef<str>> {
    source: S,
    frontmatter: Option<Frontmatter>,
    body: Range<usize>,
    headings: Vec<Heading>,
    links: Vec<Link>,
    blocks: Vec<Block>,
    first_paragraph: Option<Range<usize>>,
    /// The inline `#tags` of the body, their `#` excluded, in order (repeats included).
    inline_tags: Vec<Range<usize>>,
    comments: Vec<Range<usize>>,
    index: HeadingIndex,
}

/// The pulldown-cmark options used for every parse (and by the benchmark's baseline).
///
/// GitHub's dialect: tables, strikethrough, task lists, footnotes (so `[^1]: x` is not a
/// link definition) and the GFM blockquote tags, plus `[[wiki links]]`. Heading attributes
/// stay off, so `# Title {#id}` keeps `{#id}` as text, as on GitHub. Smart punctuation stays
/// off (it would change heading text and so anchors). Metadata blocks stay off: the
/// frontmatter is split off before pulldown-cmark sees the body.
pub fn parser_options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_GFM
        | Options::ENABLE_WIKILINKS
}

/// A heading whose end event has not been seen yet.
struct OpenHeading {
    start: usize,
    end: usize,
    level: u8,
    text: String,
    /// The end of the innermost block quote or list item holding it; `None` at top level.
    container_end: Option<usize>,
}

impl<S: AsRef<str>> Document<S> {
    /// Parses `source`. Never fails: any text is a markdown document.
    pub fn parse(source: S) -> Self {
        let text = source.as_ref();
        let (frontmatter, body_start) = frontmatter::split(text);
        let body = body_start..text.len();
        let scan = scan(text, body.clone());
        Document {
            index: HeadingIndex::new(&scan.headings),
            frontmatter,
            body,
            headings: scan.headings,
            links: scan.links,
            blocks: scan.blocks,
            first_paragraph: scan.first_paragraph,
            inline_tags: scan.inline_tags,
            comments: scan.comments,
            source,
        }
    }

    /// The whole input.
    pub fn source(&self) -> &str {
        self.source.as_ref()
    }

    /// The value the document was parsed from.
    pub fn into_source(self) -> S {
        self.source
    }

    /// The frontmatter block, if the document starts with one.
    pub fn frontmatter(&self) -> Option<&Frontmatter> {
        self.frontmatter.as_ref()
    }

    /// The source range after the frontmatter (the whole source when there is none), a
    /// leading byte-order mark excluded.
    pub fn body_range(&self) -> Range<usize> {
        self.body.clone()
    }

    /// The source after the frontmatter.
    pub fn body(&self) -> &str {
        &self.source()[self.body.clone()]
    }

    /// The frontmatter title when it is set and not blank, else the first H1's text.
    pub fn title(&self) -> Option<&str> {
        self.frontmatter
            .as_ref()
            .and_then(|f| f.title.as_deref())
            .filter(|t| !t.trim().is_empty())
            .or_else(|| {
                self.headings
                    .iter()
                    .find(|h| h.level == 1)
                    .map(|h| h.text.as_str())
            })
    }

    /// The document's tags as Obsidian reads them: the frontmatter's `tags`, then the
    /// body's inline `#tag` and nested `#tag/sub` (never in code, a URL or a link), each
    /// once (tags are case-insensitive; the first spelling is kept), without the `#`.
    pub fn tags(&self) -> Vec<&str> {
        let front = self.frontmatter.iter().flat_map(|f| f.tags.iter());
        let inline = self.inline_tags.iter().map(|r| &self.source()[r.clone()]);
        tags::distinct(front.map(String::as_str).chain(inline))
    }

    /// The frontmatter's `aliases` and `alias`: other names of the note.
    pub fn aliases(&self) -> &[String] {
        self.frontmatter
            .as_ref()
            .map(|f| f.aliases.as_slice())
            .unwrap_or_default()
    }

    /// Every heading, in document order.
    pub fn headings(&self) -> &[Heading] {
        &self.headings
    }

    pub(crate) fn heading_index(&self) -> &HeadingIndex {
        &self.index
    }

    /// The exact source text of a heading's section, subsections included.
    ///
    /// `heading` should come from this document; a heading from elsewhere whose range
    /// does not fit this source yields `""`.
    pub fn section_text(&self, heading: &Heading) -> &str {
        self.source().get(heading.section.clone()).unwrap_or("")
    }

    /// The range from the start of the body to the first top-level heading's line (the
    /// whole body when there is none): with the top-level sections, it tiles the body.
    pub fn preamble_range(&self) -> Range<usize> {
        let end = self
            .headings
            .iter()
            .find(|h| !h.nested)
            .map_or(self.body.end, |h| h.line.start);
        self.body.start..end
    }

    /// The text before the first top-level heading (after the frontmatter).
    pub fn preamble(&self) -> &str {
        &self.source()[self.preamble_range()]
    }

    /// The innermost heading whose section holds byte `offset` (the end of the source
    /// counts as inside the last section); `None` in the preamble.
    pub fn section_at(&self, offset: usize) -> Option<&Heading> {
        self.sections_holding(offset).next()
    }

    /// The anchor of the innermost anchored section holding byte `offset` (the heading's
    /// own anchor, else its nearest anchored ancestor's); `None` in the preamble.
    pub fn section_anchor_at(&self, offset: usize) -> Option<&str> {
        self.sections_holding(offset)
            .find_map(|h| h.anchor.as_deref())
    }

    /// The headings whose sections hold `offset`, innermost first. Sections nest, so the
    /// innermost is the holder with the latest start; a nested heading's section may end
    /// before the next heading starts, hence the walk back rather than a lookup.
    fn sections_holding(&self, offset: usize) -> impl Iterator<Item = &Heading> {
        let after = self.headings.partition_point(|h| h.line.start <= offset);
        self.headings[..after].iter().rev().filter(move |h| {
            offset < h.section.end || (offset == self.body.end && h.section.end == offset)
        })
    }

    /// Every link and image, in document order (see [`Link`]).
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// Every block with a `^block-id`, in document order (see [`Block`]).
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The range of the first top-level paragraph, trailing white space excluded.
    pub fn first_paragraph_range(&self) -> Option<Range<usize>> {
        self.first_paragraph.clone()
    }

    /// The HTML comments (`<!-- … -->`, a block of its own or inline), in document
    /// order: text a rendered page never shows (the Node.js docs keep their change
    /// history in them).
    pub fn comments(&self) -> &[Range<usize>] {
        &self.comments
    }
}

/// What the single pass over the events collects.
struct Scan {
    headings: Vec<Heading>,
    links: Vec<Link>,
    blocks: Vec<Block>,
    first_paragraph: Option<Range<usize>>,
    inline_tags: Vec<Range<usize>>,
    comments: Vec<Range<usize>>,
}

fn scan(source: &str, body: Range<usize>) -> Scan {
    let base = body.start;
    let mut headings: Vec<Heading> = Vec::new();
    let mut links: Vec<Link> = Vec::new();
    let mut first_paragraph = None;
    let mut heading: Option<OpenHeading> = None;
    // Per heading: the end of the block quote or list item holding it (`None`: top level).
    let mut container_ends: Vec<Option<usize>> = Vec::new();
    // Links and images whose end event has not been seen yet (an image may sit in a link).
    let mut open_links: Vec<Link> = Vec::new();
    // One entry per tag open around the current event: the end of the innermost block
    // quote or list item among them. A paragraph or heading opened with none open is
    // top-level.
    let mut containers: Vec<Option<usize>> = Vec::new();
    let mut blocks = BlockScan::new(source);
    // Plain text outside code and links, where inline tags live; adjacent runs joined.
    let mut text_runs: Vec<Range<usize>> = Vec::new();
    let mut code_blocks = 0usize;
    let mut comments: Vec<Range<usize>> = Vec::new();

    let parser = Parser::new_ext(&source[body.clone()], parser_options());
    for (event, range) in parser.into_offset_iter() {
        let range = range.start + base..range.end + base;
        blocks.event(&event, &range);
        // Code spans hold no tags; only plain text does.
        let is_text = matches!(event, Event::Text(_));
        match event {
            Event::Start(tag) => {
                let container = match &tag {
                    Tag::BlockQuote(_) | Tag::Item | Tag::FootnoteDefinition(_) => Some(range.end),
                    _ => containers.last().copied().flatten(),
                };
                match tag {
                    Tag::Heading { level, .. } => {
                        heading = Some(OpenHeading {
                            start: range.start,
                            end: range.end,
                            level: level as u8,
                            text: String::new(),
                            container_end: containers.last().copied().flatten(),
                        });
                    }
                    Tag::Paragraph if containers.is_empty() && first_paragraph.is_none() => {
                        let text = &source[range.clone()];
                        let end = range.start + text.trim_end().len();
                        first_paragraph = Some(range.start..end);
                    }
                    Tag::Link {
                        link_type,
                        dest_url,
                        ..
                    } => {
                        open_links.push(Link::new(link_type, &dest_url, range.clone(), false));
                    }
                    Tag::Image {
                        link_type,
                        dest_url,
                        ..
                    } => {
                        open_links.push(Link::new(link_type, &dest_url, range.clone(), true));
                    }
                    Tag::CodeBlock(_) => code_blocks += 1,
                    // A comment block ends on the line holding `-->`; a block
                    // with anything else in it is shown, not a comment.
                    Tag::HtmlBlock => {
                        let html = source[range.clone()].trim();
                        if html.starts_with("<!--")
                            && html.find("-->").is_some_and(|end| end + 3 == html.len())
                        {
                            comments.push(range.clone());
                        }
                    }
                    _ => {}
                }
                containers.push(container);
            }
            Event::End(tag_end) => {
                containers.pop();
                match tag_end {
                    TagEnd::Heading(_) => {
                        if let Some(open) = heading.take() {
                            container_ends.push(open.container_end);
                            headings.push(finish_heading(source, base, open));
                        }
                    }
                    TagEnd::Link | TagEnd::Image => {
                        links.extend(open_links.pop());
                    }
                    TagEnd::CodeBlock => code_blocks = code_blocks.saturating_sub(1),
                    _ => {}
                }
            }
            Event::Text(text) | Event::Code(text) => {
                if is_text && code_blocks == 0 && open_links.is_empty() {
                    match text_runs.last_mut() {
                        Some(last) if last.end == range.start => last.end = range.end,
                        _ => text_runs.push(range.clone()),
                    }
                }
                // An image's alt text is not part of the heading's text on GitHub.
                let in_image = open_links.iter().any(|link| link.is_image);
                if let Some(open) = heading.as_mut().filter(|_| !in_image) {
                    open.text.push_str(&text);
                }
                for link in &mut open_links {
                    link.text.push_str(&text);
                }
            }
            Event::InlineHtml(html) if html.starts_with("<!--") && html.ends_with("-->") => {
                comments.push(range);
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some(open) = heading.as_mut() {
                    open.text.push(' ');
                }
                for link in &mut open_links {
                    link.text.push(' ');
                }
            }
            _ => {}
        }
    }
    // Links are pushed when they close; an image inside a link closes first.
    links.sort_by_key(|l| l.range.start);
    finish_sections(&mut headings, &container_ends, body.end);
    Scan {
        headings,
        links,
        blocks: blocks.finish(),
        first_paragraph,
        inline_tags: tags::inline_tags(source, &text_runs),
        comments,
    }
}

/// The heading's line and section ranges; a line never starts before the body (a
/// byte-order mark is not part of the first line).
fn finish_heading(source: &str, body_start: usize, open: OpenHeading) -> Heading {
    // CommonMark line endings: `\n`, `\r\n` and a lone `\r`.
    let is_line_ending = |b: &u8| matches!(b, b'\n' | b'\r');
    let bytes = source.as_bytes();
    let line_start = bytes[body_start..open.start]
        .iter()
        .rposition(is_line_ending)
        .map_or(body_start, |i| body_start + i + 1);
    let last = open.end.saturating_sub(1).max(open.start);
    // A byte search: `last` may be inside a multi-byte character.
    let line_end = match bytes[last..].iter().position(is_line_ending) {
        Some(i) => {
            let ending = last + i;
            if ending > line_start && bytes[ending] == b'\n' && bytes[ending - 1] == b'\r' {
                ending - 1
            } else {
                ending
            }
        }
        None => source.len(),
    };
    Heading {
        level: open.level,
        text: open.text.trim().to_string(),
        anchor: None,
        line: line_start..line_end.max(line_start),
        section: line_start..line_start,
        parent: None,
        nested: open.container_end.is_some(),
    }
}

/// Second pass over the (small) heading list: anchors, section ends and parents.
///
/// Top-level headings cut each other's sections. A nested heading's section ends at the
/// next heading of the same or a higher level before its container ends, else at the
/// container's end (`container_ends[i]`). Both stacks hold strictly rising levels; the
/// nested stack's container ends fall towards its top (a later container sits inside an
/// earlier one), so closing ended containers pops from the top.
fn finish_sections(headings: &mut [Heading], container_ends: &[Option<usize>], end: usize) {
    let mut slugger = Slugger::with_capacity(headings.len());
    let mut open: Vec<usize> = Vec::new();
    let mut open_nested: Vec<(usize, usize)> = Vec::new();
    for i in 0..headings.len() {
        headings[i].anchor = slugger.anchor(&headings[i].text);
        let level = headings[i].level;
        let start = headings[i].section.start;
        while let Some(&(top, container_end)) = open_nested.last() {
            if container_end > start && headings[top].level < level {
                break;
            }
            headings[top].section.end = container_end.min(start).max(headings[top].line.end);
            open_nested.pop();
        }
        match container_ends[i] {
            Some(container_end) => {
                headings[i].parent = open_nested
                    .last()
                    .map(|&(top, _)| top)
                    .or(open.last().copied());
                open_nested.push((i, container_end));
            }
            None => {
                while let Some(&top) = open.last() {
                    if headings[top].level < level {
                        break;
                    }
                    headings[top].section.end = start;
                    open.pop();
                }
                headings[i].parent = open.last().copied();
                open.push(i);
            }
        }
    }
    for (i, container_end) in open_nested {
        headings[i].section.end = container_end.max(headings[i].line.end);
    }
    for i in open {
        headings[i].section.end = end;
    }
}

impl Link {
    fn new(link_type: LinkType, dest: &str, range: Range<usize>, is_image: bool) -> Self {
        let kind = match link_type {
            LinkType::Inline => LinkKind::Inline,
            LinkType::Reference
            | LinkType::ReferenceUnknown
            | LinkType::Collapsed
            | LinkType::CollapsedUnknown
            | LinkType::Shortcut
            | LinkType::ShortcutUnknown => LinkKind::Reference,
            LinkType::Autolink => LinkKind::Autolink,
            LinkType::Email => LinkKind::Email,
            LinkType::WikiLink { .. } => LinkKind::Wiki,
        };
        let dest = if kind == LinkKind::Email && !dest.starts_with("mailto:") {
            format!("mailto:{dest}")
        } else {
            dest.to_string()
        };
        Link {
            text: String::new(),
            fragment: crate::links::fragment_of(&dest),
            dest,
            range,
            is_image,
            kind,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn summary<S: AsRef<str>>(doc: &Document<S>) -> Vec<(u8, String, Option<String>)> {
        doc.headings()
            .iter()
            .map(|h| (h.level, h.text.clone(), h.anchor.clone()))
            .collect()
    }

    fn texts<S: AsRef<str>>(doc: &Document<S>) -> Vec<&str> {
        doc.headings().iter().map(|h| h.text.as_str()).collect()
    }

    #[test]
    fn atx_and_setext_headings_with_lines_and_sections() {
        let src = "intro\n\n# One\n\ntext\n\nTwo\n---\n\n### Three ###\nbody\n\nFour\n====\nend\n";
        let doc = Document::parse(src);
        assert_eq!(
            summary(&doc),
            [
                (1, "One".into(), Some("one".into())),
                (2, "Two".into(), Some("two".into())),
                (3, "Three".into(), Some("three".into())),
                (1, "Four".into(), Some("four".into())),
            ]
        );
        let h = doc.headings();
        assert_eq!(&src[h[0].line.clone()], "# One");
        assert_eq!(&src[h[1].line.clone()], "Two\n---");
        assert_eq!(&src[h[2].line.clone()], "### Three ###");
        assert_eq!(
            doc.section_text(&h[0]),
            "# One\n\ntext\n\nTwo\n---\n\n### Three ###\nbody\n\n"
        );
        assert_eq!(
            doc.section_text(&h[1]),
            "Two\n---\n\n### Three ###\nbody\n\n"
        );
        assert_eq!(doc.section_text(&h[2]), "### Three ###\nbody\n\n");
        assert_eq!(doc.section_text(&h[3]), "Four\n====\nend\n");
        assert_eq!(doc.preamble(), "intro\n\n");
        assert_eq!(
            [h[0].parent, h[1].parent, h[2].parent, h[3].parent],
            [None, Some(0), Some(1), None]
        );
    }

    #[test]
    fn no_headings_in_code_html_or_frontmatter() {
        let src = "---\ntitle: T\n---\n```\n# not\n```\n~~~md\n## not\n~~~\n\n    # indented not\n\n<div>\n# not html\n</div>\n\n# Yes\n";
        let doc = Document::parse(src);
        assert_eq!(texts(&doc), ["Yes"]);
    }

    #[test]
    fn frontmatter_is_never_a_setext_heading() {
        let doc = Document::parse("---\ntitle: [bad\n---\ntext\n");
        assert!(doc.headings().is_empty());
        assert!(doc.frontmatter().is_some());
        assert_eq!(doc.body(), "text\n");
        // Without a frontmatter block, text over `---` is a setext heading.
        let doc = Document::parse("text\n---\n");
        assert_eq!(texts(&doc), ["text"]);
    }

    #[test]
    fn headings_inside_blockquotes_and_list_items() {
        let src = "# Top\n> ## Quoted\n> body\n\n- ### In list\n  item\n";
        let doc = Document::parse(src);
        assert_eq!(texts(&doc), ["Top", "Quoted", "In list"]);
        let h = doc.headings();
        assert_eq!(&src[h[1].line.clone()], "> ## Quoted");
        assert_eq!(&src[h[2].line.clone()], "- ### In list");
        // Nested headings cut nothing: each is its container's text from its line on.
        assert_eq!(doc.section_text(&h[0]), src);
        assert_eq!(doc.section_text(&h[1]), "> ## Quoted\n> body\n");
        assert_eq!(doc.section_text(&h[2]), "- ### In list\n  item\n");
        assert_eq!(
            h.iter().map(|h| (h.nested, h.parent)).collect::<Vec<_>>(),
            [(false, None), (true, Some(0)), (true, Some(0))]
        );
    }

    #[test]
    fn nested_headings_cut_each_other_inside_their_container() {
        let src = "## Top
> # A
> a
> ## B
> b
> # C
> c

after
";
        let doc = Document::parse(src);
        let h = doc.headings();
        assert_eq!(doc.section_text(&h[0]), src);
        assert_eq!(doc.section_text(&h[1]), "> # A\n> a\n> ## B\n> b\n");
        assert_eq!(doc.section_text(&h[2]), "> ## B\n> b\n");
        assert_eq!(doc.section_text(&h[3]), "> # C\n> c\n");
        // `# A` is of a higher level than `## Top` but still inside its section.
        assert_eq!(
            [h[1].parent, h[2].parent, h[3].parent],
            [Some(0), Some(1), Some(0)]
        );
        assert_eq!(
            doc.section_anchor_at(src.find("after").unwrap()),
            Some("top")
        );
    }

    #[test]
    fn plain_text_drops_markup_and_keeps_code_spans() {
        let src = "# **Bold** _it_ [link](x.md) `code()` ~~del~~ <span>html</span> &amp; \\*\n\n## `fs.readFile(path[, options], callback)`\n\n## Title {#custom-id}\n";
        let doc = Document::parse(src);
        assert_eq!(
            texts(&doc),
            [
                "Bold it link code() del html & *",
                "fs.readFile(path[, options], callback)",
                "Title {#custom-id}"
            ]
        );
        assert_eq!(
            doc.headings()[1].anchor.as_deref(),
            Some("fsreadfilepath-options-callback")
        );
        assert_eq!(doc.headings()[2].anchor.as_deref(), Some("title-custom-id"));
    }

    #[test]
    fn image_alt_text_is_not_heading_text() {
        let doc = Document::parse("# ![logo](x.png) Title\n");
        assert_eq!(doc.headings()[0].text, "Title");
        assert_eq!(doc.links()[0].text, "logo");
    }

    #[test]
    fn byte_order_mark_is_not_part_of_the_body() {
        let doc = Document::parse("\u{FEFF}# Title\n");
        assert_eq!(doc.body(), "# Title\n");
        assert_eq!(doc.headings()[0].text, "Title");
        assert_eq!(doc.section_text(&doc.headings()[0]), "# Title\n");
        assert_eq!(doc.preamble(), "");
    }

    #[test]
    fn anchors_dedup_and_empty_headings_have_none() {
        let doc = Document::parse("# Notes\n# Notes\n# Notes-1\n#\n# ???\n");
        let anchors: Vec<_> = doc.headings().iter().map(|h| h.anchor.as_deref()).collect();
        assert_eq!(
            anchors,
            [
                Some("notes"),
                Some("notes-1"),
                Some("notes-1-1"),
                None,
                None
            ]
        );
    }

    #[test]
    fn crlf_lines_exclude_the_carriage_return() {
        let src = "# A\r\ntext\r\n\r\nB\r\n-\r\n";
        let doc = Document::parse(src);
        assert_eq!(texts(&doc), ["A", "B"]);
        assert_eq!(doc.section_text(&doc.headings()[1]), "B\r\n-\r\n");
        assert_eq!(&src[doc.headings()[0].line.clone()], "# A");
        assert_eq!(&src[doc.headings()[1].line.clone()], "B\r\n-");
    }

    #[test]
    fn title_from_frontmatter_else_first_h1() {
        assert_eq!(
            Document::parse("---\ntitle: FM\n---\n# H\n").title(),
            Some("FM")
        );
        assert_eq!(
            Document::parse("---\ntitle: ' '\n---\n# H\n").title(),
            Some("H")
        );
        assert_eq!(Document::parse("## Sub\n# Main\n").title(), Some("Main"));
        assert_eq!(Document::parse("## Sub\n").title(), None);
    }

    #[test]
    fn section_at_and_section_anchor_at() {
        let src = "pre\n# A\na\n## \nempty\n# B\nb\n";
        let doc = Document::parse(src);
        assert_eq!(doc.section_anchor_at(0), None);
        assert_eq!(doc.section_anchor_at(src.find("a\n").unwrap()), Some("a"));
        // An anchorless heading's content belongs to its anchored parent.
        assert_eq!(doc.section_anchor_at(src.find("empty").unwrap()), Some("a"));
        assert_eq!(doc.section_anchor_at(src.len()), Some("b"));
        assert_eq!(
            doc.section_at(src.find("empty").unwrap()).map(|h| h.level),
            Some(2)
        );
    }

    #[test]
    fn works_with_str_string_and_arc_and_is_send_sync_clone() {
        fn assert_traits<T: Send + Sync + Clone>(_: &T) {}
        let text = "# A\n";
        let borrowed = Document::parse(text);
        let owned = Document::parse(text.to_string());
        let shared: Document<Arc<str>> = Document::parse(Arc::from(text));
        assert_traits(&borrowed);
        assert_traits(&owned);
        assert_traits(&shared);
        assert_eq!(shared.clone().headings(), owned.headings());
        assert_eq!(borrowed.into_source(), text);
    }

    #[test]
    fn first_paragraph_is_top_level() {
        let src = "# T\n\n> Stability: 2\n\n<!-- c -->\n\nThe module does things.\nSecond line.\n\nMore.\n";
        let doc = Document::parse(src);
        let range = doc.first_paragraph_range().unwrap();
        assert_eq!(&src[range], "The module does things.\nSecond line.");
    }

    #[test]
    fn html_comments_are_found_as_blocks_and_inline() {
        let src = "# T\n\n<!-- YAML\nadded: v10.10.0\n-->\n\nText <!-- note --> more.\n\n<div>shown</div>\n\n<!-- a --> then shown\n\n```\n<!-- code -->\n```\n";
        let doc = Document::parse(src);
        let comments: Vec<&str> = doc
            .comments()
            .iter()
            .map(|r| src[r.clone()].trim_end())
            .collect();
        assert_eq!(
            comments,
            ["<!-- YAML\nadded: v10.10.0\n-->", "<!-- note -->"]
        );
    }

    #[test]
    fn links_of_every_kind_with_text_dest_fragment_and_range() {
        let src = "# Links\n\
            See [the *fs* docs](fs.md#fs_readfile \"t\") and [errors][err], [Buffer][] or [stream].\n\
            Auto <https://nodejs.org/x#y>, mail <a@b.org>, ![logo](img/logo.png).\n\
            Wiki [[Page]], [[Other Page|shown text]], [[Page#Part]].\n\
            [![badge](b.svg)](https://ci)\n\
            `[not](a link)` and `[[not wiki]]`\n\n\
            ```\n[no](x.md)\n```\n\n\
            [err]: errors.md#err_invalid_arg_type\n\
            [Buffer]: buffer.md\n\
            [stream]: <stream.md#a%20b>\n";
        let doc = Document::parse(src);
        let got: Vec<_> = doc
            .links()
            .iter()
            .map(|l| {
                (
                    l.kind,
                    l.is_image,
                    l.text.as_str(),
                    l.dest.as_str(),
                    l.fragment.as_deref(),
                )
            })
            .collect();
        use LinkKind::*;
        assert_eq!(
            got,
            [
                (
                    Inline,
                    false,
                    "the fs docs",
                    "fs.md#fs_readfile",
                    Some("fs_readfile")
                ),
                (
                    Reference,
                    false,
                    "errors",
                    "errors.md#err_invalid_arg_type",
                    Some("err_invalid_arg_type")
                ),
                (Reference, false, "Buffer", "buffer.md", None),
                (Reference, false, "stream", "stream.md#a%20b", Some("a b")),
                (
                    Autolink,
                    false,
                    "https://nodejs.org/x#y",
                    "https://nodejs.org/x#y",
                    Some("y")
                ),
                (Email, false, "a@b.org", "mailto:a@b.org", None),
                (Inline, true, "logo", "img/logo.png", None),
                (Wiki, false, "Page", "Page", None),
                (Wiki, false, "shown text", "Other Page", None),
                (Wiki, false, "Page#Part", "Page#Part", Some("Part")),
                (Inline, false, "badge", "https://ci", None),
                (Inline, true, "badge", "b.svg", None),
            ]
        );
        for link in doc.links() {
            assert!(
                src[link.range.clone()].starts_with(['[', '<', '!']),
                "{link:?}"
            );
        }
        assert_eq!(
            &src[doc.links()[0].range.clone()],
            "[the *fs* docs](fs.md#fs_readfile \"t\")"
        );
        assert_eq!(&src[doc.links()[1].range.clone()], "[errors][err]");
        assert_eq!(
            &src[doc.links()[8].range.clone()],
            "[[Other Page|shown text]]"
        );
        assert!(
            doc.links()
                .iter()
                .all(|l| doc.section_anchor_at(l.range.start) == Some("links"))
        );
    }

    #[test]
    fn link_in_heading_counts_for_both() {
        let doc = Document::parse("## See [API](api.md)\n");
        assert_eq!(doc.headings()[0].text, "See API");
        assert_eq!(doc.links()[0].text, "API");
        assert_eq!(
            doc.links()[0].resolve("/docs/x.md"),
            crate::Target::Internal {
                path: "/docs/api.md".into(),
                fragment: None
            }
        );
    }

    #[test]
    fn undefined_reference_and_footnotes_are_not_links() {
        let doc = Document::parse("[missing] and note[^1].\n\n[^1]: footnote text\n");
        assert!(doc.links().is_empty(), "{:?}", doc.links());
    }
}
