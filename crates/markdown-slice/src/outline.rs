//! The bounded heading outline.

use std::fmt::{self, Write as _};
use std::ops::Range;

use crate::document::{Document, Heading};
use crate::tokens::estimate_tokens;

/// Bounds of an outline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutlineOptions {
    /// At most this many lines (default 60).
    pub max_lines: usize,
    /// At most this many bytes of rendered text, line breaks included (default 2048).
    pub max_bytes: usize,
}

impl Default for OutlineOptions {
    fn default() -> Self {
        OutlineOptions {
            max_lines: 60,
            max_bytes: 2048,
        }
    }
}

/// One line of an [`Outline`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutlineEntry {
    /// `- {text} (#{anchor}, ~{tokens} tok)`
    Heading {
        /// Indentation steps: the heading's level minus the shallowest level outlined.
        depth: usize,
        /// Index in [`Document::headings`].
        index: usize,
        /// The heading's plain text.
        text: String,
        /// Its anchor, if it has one.
        anchor: Option<String>,
        /// [`estimate_tokens`] of its section, subsections included.
        tokens: usize,
    },
    /// `+{count} subsections`: deeper headings collapsed under the heading above.
    Collapsed {
        /// Indentation steps (one more than the heading they belong to).
        depth: usize,
        /// How many headings this line stands for.
        count: usize,
    },
    /// `+{count} more sections`: what did not fit even at the shallowest level.
    More {
        /// How many headings this line stands for.
        count: usize,
    },
}

impl fmt::Display for OutlineEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutlineEntry::Heading {
                depth,
                text,
                anchor,
                tokens,
                ..
            } => {
                indent(f, *depth)?;
                match anchor {
                    Some(anchor) => write!(f, "- {text} (#{anchor}, ~{tokens} tok)"),
                    None => write!(f, "- {text} (~{tokens} tok)"),
                }
            }
            OutlineEntry::Collapsed { depth, count } => {
                indent(f, *depth)?;
                let noun = if *count == 1 {
                    "subsection"
                } else {
                    "subsections"
                };
                write!(f, "+{count} {noun}")
            }
            OutlineEntry::More { count } => {
                let noun = if *count == 1 { "section" } else { "sections" };
                write!(f, "+{count} more {noun}")
            }
        }
    }
}

fn indent(f: &mut fmt::Formatter<'_>, depth: usize) -> fmt::Result {
    for _ in 0..depth {
        f.write_str("  ")?;
    }
    Ok(())
}

/// A heading tree cut to fit its [`OutlineOptions`]: deepest levels collapse first.
/// `Display` writes one line per entry, each ending in `\n`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Outline {
    /// The lines, in document order.
    pub entries: Vec<OutlineEntry>,
    /// How many headings have no line of their own (counted in `Collapsed`/`More` lines).
    pub omitted: usize,
}

impl fmt::Display for Outline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for entry in &self.entries {
            writeln!(f, "{entry}")?;
        }
        Ok(())
    }
}

impl<S: AsRef<str>> Document<S> {
    /// The outline of the whole document, bounded by `options`.
    ///
    /// Levels are shown shallow first: when the whole tree does not fit, the deepest level
    /// present collapses into `+N subsections` lines under its parents, then the next
    /// deepest, and so on. When even the shallowest level does not fit, it is cut and a last
    /// `+N more sections` line counts the rest.
    pub fn outline(&self, options: &OutlineOptions) -> Outline {
        self.outline_of(0..self.headings().len(), options)
    }

    /// The outline of one section: the heading itself and its subsections. A heading that
    /// is not from this document gives an empty outline.
    pub fn section_outline(&self, heading: &Heading, options: &OutlineOptions) -> Outline {
        let headings = self.headings();
        let Some(first) = headings.iter().position(|h| h == heading) else {
            return Outline::default();
        };
        let end = headings[first + 1..]
            .iter()
            .position(|h| h.level <= heading.level)
            .map_or(headings.len(), |i| first + 1 + i);
        self.outline_of(first..end, options)
    }

    fn outline_of(&self, set: Range<usize>, options: &OutlineOptions) -> Outline {
        let headings = &self.headings()[set.clone()];
        let mut levels: Vec<u8> = headings.iter().map(|h| h.level).collect();
        levels.sort_unstable();
        levels.dedup();
        let Some(&shallowest) = levels.first() else {
            return Outline::default();
        };
        for &cutoff in levels.iter().rev() {
            let outline = self.collapsed_at(set.clone(), shallowest, cutoff);
            if fits(&outline.entries, options) {
                return outline;
            }
        }
        truncate(self.collapsed_at(set, shallowest, shallowest), options)
    }

    /// Every heading of `set` up to level `cutoff`, deeper ones counted under their nearest
    /// shown ancestor.
    fn collapsed_at(&self, set: Range<usize>, shallowest: u8, cutoff: u8) -> Outline {
        let headings = self.headings();
        let shown = |i: usize| headings[i].level <= cutoff;
        let mut hidden_under = vec![0usize; set.len()];
        let mut orphan = vec![false; set.len()];
        for i in set.clone() {
            if shown(i) {
                continue;
            }
            let mut ancestor = headings[i].parent.filter(|p| set.contains(p));
            while let Some(a) = ancestor.filter(|&a| !shown(a)) {
                ancestor = headings[a].parent.filter(|p| set.contains(p));
            }
            match ancestor {
                Some(a) => hidden_under[a - set.start] += 1,
                None => orphan[i - set.start] = true,
            }
        }
        let mut outline = Outline::default();
        // Hidden headings with no shown ancestor: one line where the next shown one starts.
        let mut pending_orphans = 0;
        for i in set.clone() {
            let local = i - set.start;
            if orphan[local] {
                pending_orphans += 1;
            }
            if !shown(i) {
                continue;
            }
            push_collapsed(&mut outline, 0, std::mem::take(&mut pending_orphans));
            let h = &headings[i];
            let depth = usize::from(h.level - shallowest);
            outline.entries.push(OutlineEntry::Heading {
                depth,
                index: i,
                text: h.text.clone(),
                anchor: h.anchor.clone(),
                tokens: estimate_tokens(self.section_text(h)),
            });
            push_collapsed(&mut outline, depth + 1, hidden_under[local]);
        }
        push_collapsed(&mut outline, 0, pending_orphans);
        outline
    }
}

fn push_collapsed(outline: &mut Outline, depth: usize, count: usize) {
    if count > 0 {
        outline
            .entries
            .push(OutlineEntry::Collapsed { depth, count });
        outline.omitted += count;
    }
}

fn rendered_len(entry: &OutlineEntry, buffer: &mut String) -> usize {
    buffer.clear();
    // Writing to a String cannot fail.
    let _ = writeln!(buffer, "{entry}");
    buffer.len()
}

fn fits(entries: &[OutlineEntry], options: &OutlineOptions) -> bool {
    let mut buffer = String::new();
    entries.len() <= options.max_lines
        && entries
            .iter()
            .map(|e| rendered_len(e, &mut buffer))
            .sum::<usize>()
            <= options.max_bytes
}

/// Keeps the longest prefix of `outline` that fits together with a `+N more sections` line.
fn truncate(outline: Outline, options: &OutlineOptions) -> Outline {
    let total_headings = outline.entries.iter().map(headings_in).sum::<usize>();
    let mut buffer = String::new();
    let mut kept: Vec<OutlineEntry> = Vec::new();
    let mut bytes = 0;
    let mut kept_headings = 0;
    for entry in outline.entries {
        let len = rendered_len(&entry, &mut buffer);
        let rest = total_headings - kept_headings - headings_in(&entry);
        let more = OutlineEntry::More { count: rest };
        let reserve_lines = usize::from(rest > 0);
        let reserve_bytes = if rest > 0 {
            rendered_len(&more, &mut buffer)
        } else {
            0
        };
        if kept.len() + 1 + reserve_lines > options.max_lines
            || bytes + len + reserve_bytes > options.max_bytes
        {
            break;
        }
        bytes += len;
        kept_headings += headings_in(&entry);
        kept.push(entry);
    }
    let rest = total_headings - kept_headings;
    let lines_of_their_own = kept
        .iter()
        .filter(|e| matches!(e, OutlineEntry::Heading { .. }))
        .count();
    let mut result = Outline {
        omitted: total_headings - lines_of_their_own,
        entries: kept,
    };
    let more = OutlineEntry::More { count: rest };
    if rest > 0
        && result.entries.len() < options.max_lines
        && bytes + rendered_len(&more, &mut buffer) <= options.max_bytes
    {
        result.entries.push(more);
    }
    result
}

/// How many headings one line stands for.
fn headings_in(entry: &OutlineEntry) -> usize {
    match entry {
        OutlineEntry::Heading { .. } => 1,
        OutlineEntry::Collapsed { count, .. } | OutlineEntry::More { count } => *count,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc_with(sections: &[(u8, &str)]) -> Document<String> {
        let text: String = sections
            .iter()
            .map(|(level, text)| {
                format!(
                    "{} {text}\n\nSome body text.\n\n",
                    "#".repeat(usize::from(*level))
                )
            })
            .collect();
        Document::parse(text)
    }

    #[test]
    fn full_tree_when_it_fits() {
        let doc = Document::parse("# Guide\nintro\n## Setup\nrun it\n### Linux\napt\n## Use\n");
        let outline = doc.outline(&OutlineOptions::default());
        assert_eq!(
            outline.to_string(),
            "- Guide (#guide, ~14 tok)\n  - Setup (#setup, ~9 tok)\n    - Linux (#linux, ~4 tok)\n  - Use (#use, ~2 tok)\n"
        );
        assert_eq!(outline.omitted, 0);
    }

    #[test]
    fn indent_is_relative_to_the_shallowest_level_present() {
        let doc = Document::parse("## A\n#### B\n## C\n");
        let text = doc.outline(&OutlineOptions::default()).to_string();
        assert_eq!(
            text,
            "- A (#a, ~4 tok)\n    - B (#b, ~2 tok)\n- C (#c, ~2 tok)\n"
        );
    }

    #[test]
    fn deepest_levels_collapse_first() {
        let mut sections = vec![(1, "Top")];
        for chapter in ["One", "Two", "Three"] {
            sections.push((2, chapter));
            for _ in 0..10 {
                sections.push((3, "Detail"));
                sections.extend([(4, "Fine print"); 3]);
            }
        }
        let doc = doc_with(&sections);
        let outline = doc.outline(&OutlineOptions {
            max_lines: 10,
            max_bytes: 2048,
        });
        let text = outline.to_string();
        // Top, then each chapter with its 20 collapsed subsections.
        assert_eq!(outline.entries.len(), 7, "{text}");
        assert!(text.contains("  - One (#one, ~"), "{text}");
        assert!(text.contains("\n    +40 subsections\n"), "{text}");
        assert_eq!(outline.omitted, 120);
        // Room for level 3 but not level 4: level 4 collapses under each level-3 heading.
        let outline = doc.outline(&OutlineOptions {
            max_lines: 70,
            max_bytes: 100_000,
        });
        assert!(outline.to_string().contains("\n      +3 subsections\n"));
        assert_eq!(outline.entries.len(), 64);
        assert_eq!(outline.omitted, 90);
    }

    #[test]
    fn shallowest_level_is_cut_with_a_more_line_and_bounds_always_hold() {
        let sections: Vec<(u8, &str)> = (0..100)
            .map(|_| (1, "Chapter with a longish name"))
            .collect();
        let doc = doc_with(&sections);
        for (max_lines, max_bytes) in [(60, 2048), (5, 2048), (60, 300), (1, 20), (0, 0), (2, 10)] {
            let options = OutlineOptions {
                max_lines,
                max_bytes,
            };
            let outline = doc.outline(&options);
            let text = outline.to_string();
            assert!(outline.entries.len() <= max_lines, "{text}");
            assert!(text.len() <= max_bytes, "{text}");
            let shown = outline
                .entries
                .iter()
                .filter(|e| matches!(e, OutlineEntry::Heading { .. }))
                .count();
            assert_eq!(shown + outline.omitted, 100);
        }
        let text = doc
            .outline(&OutlineOptions {
                max_lines: 5,
                max_bytes: 2048,
            })
            .to_string();
        assert!(text.ends_with("+96 more sections\n"), "{text}");
    }

    #[test]
    fn orphans_deeper_than_the_cutoff_before_any_shown_heading() {
        let doc = doc_with(&[(3, "Early"), (1, "Top"), (2, "Sub"), (3, "X"), (3, "Y")]);
        let outline = doc.outline(&OutlineOptions {
            max_lines: 4,
            max_bytes: 2048,
        });
        assert_eq!(
            outline.entries[0],
            OutlineEntry::Collapsed { depth: 0, count: 1 }
        );
        assert_eq!(
            outline.entries[3],
            OutlineEntry::Collapsed { depth: 2, count: 2 }
        );
        assert_eq!(outline.omitted, 3);
        // Two lines: the orphan line, then everything else as `+4 more sections`.
        let outline = doc.outline(&OutlineOptions {
            max_lines: 2,
            max_bytes: 2048,
        });
        assert_eq!(outline.to_string(), "+1 subsection\n+4 more sections\n");
        assert_eq!(outline.omitted, 5);
    }

    #[test]
    fn section_outline_is_the_subtree() {
        let doc = Document::parse("# A\n## B\n### C\n## D\n# E\n");
        let b = &doc.headings()[1];
        let outline = doc.section_outline(b, &OutlineOptions::default());
        assert_eq!(
            outline.to_string(),
            "- B (#b, ~3 tok)\n  - C (#c, ~2 tok)\n"
        );
        let stranger = Document::parse("# Z\n");
        assert!(
            doc.section_outline(&stranger.headings()[0], &OutlineOptions::default())
                .entries
                .is_empty()
        );
    }

    #[test]
    fn heading_without_anchor_and_empty_document() {
        let doc = Document::parse("# ?!\ntext\n");
        assert_eq!(
            doc.outline(&OutlineOptions::default()).to_string(),
            "- ?! (~3 tok)\n"
        );
        assert_eq!(
            Document::parse("").outline(&OutlineOptions::default()),
            Outline::default()
        );
    }
}
