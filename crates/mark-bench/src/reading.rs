//! Reading mark-mcp's result text the way a scripted agent would: the
//! `key: value` envelope, LOOKUP table rows, outline lines and the sections
//! of an explore card.

/// A `key: value` line of the envelope (the lines before the first blank line).
pub fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let head = text.split("\n\n").next().unwrap_or("");
    head.lines()
        .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix(": ")))
}

/// The text after the envelope's blank line.
pub fn body(text: &str) -> &str {
    text.split_once("\n\n").map_or("", |(_, b)| b)
}

/// One row of a `mark_lookup` result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupHit {
    /// `/path.md` or `/path.md#anchor`.
    pub url: String,
    /// The heading trail (`Doc › Heading`).
    pub title: String,
    /// Whether the agent has its text: the row says `read below` (the
    /// lookup appended it) or `read earlier` (the session sent it).
    pub held: bool,
}

impl LookupHit {
    /// The document's path, without the anchor.
    pub fn path(&self) -> &str {
        self.url.split('#').next().unwrap_or(&self.url)
    }
}

/// The part of a `mark_lookup` result that holds its rows: the body up to
/// the first block appended after them (passages, a section `read`: their
/// text may hold lines that look like rows, a `// …` code line).
pub fn lookup_rows_part(text: &str) -> &str {
    let body = body(text);
    body.split_once("\n=== ").map_or(body, |(rows, _)| rows)
}

/// The rows of a `mark_lookup` result (`url · Doc › Heading · snippet`),
/// in rank order.
pub fn lookup_hits(text: &str) -> Vec<LookupHit> {
    lookup_rows_part(text)
        .lines()
        .filter(|l| l.starts_with('/'))
        .filter_map(|l| {
            let (url, rest) = l.split_once(" · ")?;
            let title = rest.split(" · ").next().unwrap_or(rest);
            Some(LookupHit {
                url: url.to_string(),
                title: title.to_string(),
                held: l.ends_with(" · read below") || l.ends_with(" · read earlier"),
            })
        })
        .collect()
}

/// One entry of an outline: `- text (#anchor, ~N tok)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutlineItem {
    /// The heading text.
    pub text: String,
    /// The anchor, without `#`.
    pub anchor: String,
    /// The estimated tokens of its section.
    pub tokens: usize,
}

/// Every outline line in `text` (nesting ignored), in order.
pub fn outline_items(text: &str) -> Vec<OutlineItem> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start().strip_prefix("- ")?.trim_end();
            let inner = l.strip_suffix(" tok)")?;
            let (head, tokens) = inner.rsplit_once(", ~")?;
            let (text, anchor) = head.rsplit_once(" (#")?;
            Some(OutlineItem {
                text: text.to_string(),
                anchor: anchor.to_string(),
                tokens: tokens.parse().ok()?,
            })
        })
        .collect()
}

/// The heading names of a card outline given as a compact run
/// (`- Backfill · Burn rate · …`, lines without anchors): a name works as
/// an anchor.
pub fn outline_names(section: &str) -> Vec<String> {
    section
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .filter(|l| !l.trim_end().ends_with(" tok)"))
        .flat_map(|l| l.split(" · "))
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect()
}

/// The lines of the card section `## {name}` (up to the next `## `), or ""
/// when the card has no such section. `name` matches a heading's start, so
/// `Backlinks` finds `## Backlinks (12, complete)`.
pub fn card_section<'a>(card: &'a str, name: &str) -> &'a str {
    let mut start = None;
    let mut offset = 0;
    for line in card.split_inclusive('\n') {
        let is_h2 = line.starts_with("## ");
        if let Some(s) = start
            && is_h2
        {
            return &card[s..offset];
        }
        if is_h2 && line[3..].starts_with(name) {
            start = Some(offset + line.len());
        }
        offset += line.len();
    }
    start.map_or("", |s| &card[s..])
}

/// The cursor of a card section's `+N more…: cursor "X"` line, if it was
/// cut short.
pub fn more_cursor(section: &str) -> Option<&str> {
    section
        .lines()
        .filter(|l| l.starts_with('+'))
        .find_map(|l| l.split_once("cursor \"")?.1.split('"').next())
}

/// A link listed on a card: `- [text](/path#anchor)` or `- text → /path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardLink {
    /// The link text (or the whole line when it has none).
    pub text: String,
    /// The `/path` target, with `#anchor` when it has one.
    pub url: String,
}

/// The internal `/path` targets named on the lines of a card section, with
/// the line's text: the first `/…` word that ends a markdown link
/// destination or stands alone.
pub fn card_links(section: &str) -> Vec<CardLink> {
    section
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let item = line.strip_prefix("- ")?;
            if let Some((text, rest)) = item.strip_prefix('[').and_then(|r| r.split_once("](")) {
                let dest = rest.split(')').next()?;
                return dest.starts_with('/').then(|| CardLink {
                    text: text.to_string(),
                    url: dest.to_string(),
                });
            }
            let url = item
                .split(|c: char| {
                    c.is_whitespace() || c == '(' || c == ')' || c == ',' || c == '`' || c == ':'
                })
                .find(|w| w.starts_with('/') && w.len() > 1)?;
            Some(CardLink {
                text: item.to_string(),
                url: url.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOOKUP: &str = "status: ok\nmatches: 2 of 7\n\n/shared/glossary.md#station_id · Glossary › station_id (0.90) [glossary] · The id · of a station\n/a.md · A | B (0.50)\n";

    #[test]
    fn envelope_and_lookup_rows() {
        assert_eq!(field(LOOKUP, "matches"), Some("2 of 7"));
        assert_eq!(field(LOOKUP, "absent"), None);
        let hits = lookup_hits(LOOKUP);
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].url, "/shared/glossary.md#station_id");
        assert_eq!(hits[0].path(), "/shared/glossary.md");
        assert_eq!(hits[0].title, "Glossary › station_id (0.90) [glossary]");
        assert_eq!(hits[1].title, "A | B (0.50)");
        let with_read = format!(
            "{LOOKUP}\n=== read /a.md ===\nstatus: ok\n\n/etc/hosts · a path in the text\n"
        );
        assert_eq!(
            lookup_hits(&with_read),
            hits,
            "a read section's lines are not rows"
        );
    }

    #[test]
    fn outline_lines_parse() {
        let text = "status: ok\nmode: outline\n\n- Tidewatch roadmap (#tidewatch-roadmap, ~8607 tok)\n  - Phase 8 — Backpressure (and replay) (#phase-8--backpressure-and-replay, ~1043 tok)\n    +6 subsections\n";
        let items = outline_items(text);
        assert_eq!(items.len(), 2);
        assert_eq!(items[1].text, "Phase 8 — Backpressure (and replay)");
        assert_eq!(items[1].anchor, "phase-8--backpressure-and-replay");
        assert_eq!(items[1].tokens, 1043);
    }

    #[test]
    fn card_sections_and_links() {
        let card = "status: ok\n\n## Outline\n- A (#a, ~3 tok)\n## Outbound links (2)\n- [Phase 8](/r.md#phase-8)\n- ADR 2 → /adr/2.md (internal)\n- [site](https://x.org)\n## Backlinks (1, complete)\n- /index.md#projects: Index\n";
        assert_eq!(outline_items(card_section(card, "Outline")).len(), 1);
        let out = card_links(card_section(card, "Outbound links"));
        assert_eq!(
            out,
            vec![
                CardLink {
                    text: "Phase 8".into(),
                    url: "/r.md#phase-8".into()
                },
                CardLink {
                    text: "ADR 2 → /adr/2.md (internal)".into(),
                    url: "/adr/2.md".into()
                },
            ]
        );
        assert_eq!(
            card_links(card_section(card, "Backlinks"))[0].url,
            "/index.md#projects"
        );
        assert_eq!(card_section(card, "Siblings"), "");
        assert_eq!(
            more_cursor("- [a](/a.md)\n+8 more: cursor \"links.4\"\n"),
            Some("links.4")
        );
        assert_eq!(
            more_cursor("- A (#a, ~3 tok)\n+40 more headings: cursor \"outline.0\" lists all 49\n"),
            Some("outline.0")
        );
        assert_eq!(more_cursor("- [a](/a.md)\n"), None);
    }
}
