//! The bounded heading outline.

use std::fmt::{self, Write as _};

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
    /// `- {text} (#{fragment}, ~{tokens} tok)`, or `- {text} (~{tokens} tok)` for a heading
    /// with no way to name it (an anchorless namesake of an earlier heading).
    Heading {
        /// Indentation steps: the heading's level minus the shallowest level outlined.
        depth: usize,
        /// Index in [`Document::headings`].
        index: usize,
        /// The heading's plain text.
        text: String,
        /// Its anchor, if it has one.
        anchor: Option<String>,
        /// Whether its text, given as the fragment, finds this heading (see
        /// [`Document::found_by_text`]); an anchorless heading (`## 🚀`) is named so.
        by_name: bool,
        /// [`estimate_tokens`] of its section, subsections included.
        tokens: usize,
    },
    /// `+{count} subsections`: the headings below the heading above, none of them shown.
    Collapsed {
        /// Indentation steps (one more than the heading they belong to).
        depth: usize,
        /// How many headings this line stands for.
        count: usize,
    },
    /// `+{count} more sections: #{first} … #{last}`: a run of a level that did not fit
    /// (and their subsections), between or after the entries of it that did. A long run
    /// is cut in the middle: its first entries and its last (an append-only document's
    /// newest) keep their lines.
    More {
        /// Indentation steps: those of the level that was cut.
        depth: usize,
        /// How many headings this line stands for.
        count: usize,
        /// The fragment of the run's first heading (none when it has no way to be named).
        first: Option<String>,
        /// The fragment of the run's last heading of the same level, when that is
        /// another heading than the first.
        last: Option<String>,
    },
}

impl OutlineEntry {
    /// For a heading line, the fragment that fetches it: its anchor, else its text when
    /// that finds it.
    pub fn fragment(&self) -> Option<&str> {
        match self {
            OutlineEntry::Heading {
                anchor: Some(anchor),
                ..
            } => Some(anchor),
            OutlineEntry::Heading {
                text,
                by_name: true,
                ..
            } => Some(text),
            _ => None,
        }
    }

    /// Indentation steps of the line.
    pub fn depth(&self) -> usize {
        match self {
            OutlineEntry::Heading { depth, .. }
            | OutlineEntry::Collapsed { depth, .. }
            | OutlineEntry::More { depth, .. } => *depth,
        }
    }
}

impl fmt::Display for OutlineEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        indent(f, self.depth())?;
        match self {
            OutlineEntry::Heading { text, tokens, .. } => match self.fragment() {
                Some(fragment) => write!(f, "- {text} (#{fragment}, ~{tokens} tok)"),
                None => write!(f, "- {text} (~{tokens} tok)"),
            },
            OutlineEntry::Collapsed { count, .. } => {
                let noun = if *count == 1 {
                    "subsection"
                } else {
                    "subsections"
                };
                write!(f, "+{count} {noun}")
            }
            OutlineEntry::More {
                count, first, last, ..
            } => {
                let noun = if *count == 1 { "section" } else { "sections" };
                write!(f, "+{count} more {noun}")?;
                match (first, last) {
                    (Some(first), Some(last)) => write!(f, ": #{first} … #{last}"),
                    (Some(one), None) | (None, Some(one)) => write!(f, ": #{one}"),
                    (None, None) => Ok(()),
                }
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
    /// The outline of the document's sections (its top-level headings; headings nested in
    /// block quotes or list items are not sections), bounded by `options`.
    ///
    /// When the whole tree does not fit, the deepest level collapses into `+N subsections`
    /// lines under its parents, then the next deepest, down to the deepest level that fits
    /// whole. Of the level below that, as many entries as fit are shown (each with its own
    /// `+N subsections`): its first one or two and its **last** ones, since documents that
    /// grow by appending (logs, status updates, roadmaps) put the newest at the end. A
    /// `+N more sections: #first … #last` line names the cut in the middle. So a lone
    /// title never hides the whole first level below it while there is room for some of
    /// it. The same holds for the shallowest level itself.
    pub fn outline(&self, options: &OutlineOptions) -> Outline {
        let members: Vec<usize> = (0..self.headings().len())
            .filter(|&i| !self.headings()[i].nested)
            .collect();
        self.outline_of(&members, options)
    }

    /// The outline of one section: the heading itself and its subsections (for a nested
    /// heading, the nested headings inside its section). A heading that is not from this
    /// document gives an empty outline.
    pub fn section_outline(&self, heading: &Heading, options: &OutlineOptions) -> Outline {
        let headings = self.headings();
        let Some(first) = headings.iter().position(|h| h == heading) else {
            return Outline::default();
        };
        let members: Vec<usize> = (first..headings.len())
            .take_while(|&i| headings[i].line.start < heading.section.end || i == first)
            .filter(|&i| headings[i].nested == heading.nested)
            .collect();
        self.outline_of(&members, options)
    }

    fn outline_of(&self, members: &[usize], options: &OutlineOptions) -> Outline {
        let headings = self.headings();
        let mut levels: Vec<u8> = members.iter().map(|&i| headings[i].level).collect();
        levels.sort_unstable();
        levels.dedup();
        if levels.is_empty() {
            return Outline::default();
        }
        let tree = Tree::new(self, members);
        let level_of = |local: usize| headings[members[local]].level;
        // The deepest level whose tree fits whole (everything below it collapsed).
        let whole = levels.iter().rposition(|&cutoff| {
            let shown: Vec<bool> = (0..members.len()).map(|l| level_of(l) <= cutoff).collect();
            fits(&tree.render(&shown).entries, options)
        });
        let partial_level = match whole {
            Some(i) if i + 1 == levels.len() => return tree.render(&vec![true; members.len()]),
            Some(i) => levels[i + 1],
            None => levels[0],
        };
        let candidates = (0..members.len())
            .filter(|&l| level_of(l) == partial_level)
            .count();
        let shown_with = |revealed: usize| -> Vec<bool> {
            let (head, tail) = head_and_tail(revealed);
            let mut seen = 0;
            (0..members.len())
                .map(|l| match level_of(l).cmp(&partial_level) {
                    std::cmp::Ordering::Less => true,
                    std::cmp::Ordering::Equal => {
                        seen += 1;
                        seen <= head || seen > candidates - tail
                    }
                    std::cmp::Ordering::Greater => false,
                })
                .collect()
        };
        // Binary search for the most entries of the partial level that fit: `fitting`
        // always fits, `too_many` never does (all of them is the next whole level, which
        // did not fit).
        let (mut fitting, mut too_many) = (0, candidates);
        let base = tree.render(&shown_with(0));
        if !fits(&base.entries, options) {
            return Outline {
                entries: Vec::new(),
                omitted: members.len(),
            };
        }
        while too_many - fitting > 1 {
            let mid = fitting + (too_many - fitting) / 2;
            if fits(&tree.render(&shown_with(mid)).entries, options) {
                fitting = mid;
            } else {
                too_many = mid;
            }
        }
        tree.render(&shown_with(fitting))
    }
}

/// Of `revealed` entries of a level that is cut, how many come from its start and how
/// many from its end: the first one (two once four or more fit), the rest from the end.
fn head_and_tail(revealed: usize) -> (usize, usize) {
    let head = if revealed >= 4 { 2 } else { revealed.min(1) };
    (head, revealed - head)
}

/// The headings one outline is drawn from (`members`, indices into the document's
/// headings, in order), with each one's nearest ancestor among them.
struct Tree<'a, S: AsRef<str>> {
    doc: &'a Document<S>,
    members: &'a [usize],
    /// Per member: the local index of its nearest ancestor among the members.
    parent: Vec<Option<usize>>,
    shallowest: u8,
}

impl<'a, S: AsRef<str>> Tree<'a, S> {
    fn new(doc: &'a Document<S>, members: &'a [usize]) -> Self {
        let headings = doc.headings();
        let mut local = vec![None; headings.len()];
        for (l, &i) in members.iter().enumerate() {
            local[i] = Some(l);
        }
        let parent = members
            .iter()
            .map(|&i| {
                let mut ancestor = headings[i].parent;
                while let Some(a) = ancestor {
                    if let Some(l) = local[a] {
                        return Some(l);
                    }
                    ancestor = headings[a].parent;
                }
                None
            })
            .collect();
        let shallowest = members
            .iter()
            .map(|&i| headings[i].level)
            .min()
            .unwrap_or(1);
        Tree {
            doc,
            members,
            parent,
            shallowest,
        }
    }

    fn depth(&self, local: usize) -> usize {
        usize::from(self.doc.headings()[self.members[local]].level - self.shallowest)
    }

    /// The outline with the `shown` members as lines; every run of hidden members with the
    /// same nearest shown ancestor becomes one line: `+N subsections` right under that
    /// ancestor when none of its members is shown, else `+N more sections`.
    fn render(&self, shown: &[bool]) -> Outline {
        let headings = self.doc.headings();
        let holder = |mut local: usize| -> Option<usize> {
            while let Some(p) = self.parent[local] {
                if shown[p] {
                    return Some(p);
                }
                local = p;
            }
            None
        };
        let any_shown = shown.iter().any(|&s| s);
        let mut outline = Outline::default();
        let flush = |outline: &mut Outline, run: &mut Option<Run>| {
            let Some(Run {
                holder,
                count,
                first,
                last,
            }) = run.take()
            else {
                return;
            };
            let depth = holder.map_or(0, |h| self.depth(h) + 1);
            let right_under_holder = match (holder, outline.entries.last()) {
                (Some(h), Some(OutlineEntry::Heading { index, .. })) => *index == self.members[h],
                (None, None) => any_shown,
                _ => false,
            };
            let fragment = |local: usize| self.doc.headings()[self.members[local]].anchor.clone();
            outline.entries.push(if right_under_holder {
                OutlineEntry::Collapsed { depth, count }
            } else {
                OutlineEntry::More {
                    depth,
                    count,
                    first: fragment(first),
                    last: (last != first).then(|| fragment(last)).flatten(),
                }
            });
            outline.omitted += count;
        };
        // The pending run of hidden headings with one holder.
        let mut run: Option<Run> = None;
        for (local, &i) in self.members.iter().enumerate() {
            if !shown[local] {
                let h = holder(local);
                match &mut run {
                    Some(r) if r.holder == h => {
                        r.count += 1;
                        match self.depth(local).cmp(&self.depth(r.first)) {
                            std::cmp::Ordering::Less => (r.first, r.last) = (local, local),
                            std::cmp::Ordering::Equal => r.last = local,
                            std::cmp::Ordering::Greater => {}
                        }
                    }
                    _ => {
                        flush(&mut outline, &mut run);
                        run = Some(Run {
                            holder: h,
                            count: 1,
                            first: local,
                            last: local,
                        });
                    }
                }
                continue;
            }
            flush(&mut outline, &mut run);
            let heading = &headings[i];
            outline.entries.push(OutlineEntry::Heading {
                depth: self.depth(local),
                index: i,
                text: heading.text.clone(),
                anchor: heading.anchor.clone(),
                by_name: self.doc.found_by_text(heading),
                tokens: estimate_tokens(self.doc.section_text(heading)),
            });
        }
        flush(&mut outline, &mut run);
        outline
    }
}

/// A run of hidden headings (members' local indices) that becomes one line.
struct Run {
    /// Their nearest shown ancestor.
    holder: Option<usize>,
    /// How many headings the run stands for.
    count: usize,
    /// Its first heading of the shallowest depth in it.
    first: usize,
    /// Its last heading of that depth.
    last: usize,
}

fn fits(entries: &[OutlineEntry], options: &OutlineOptions) -> bool {
    if entries.len() > options.max_lines {
        return false;
    }
    let mut buffer = String::new();
    for entry in entries {
        // Writing to a String cannot fail.
        let _ = writeln!(buffer, "{entry}");
        if buffer.len() > options.max_bytes {
            return false;
        }
    }
    true
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
        // Top and each chapter with its 40 collapsed subsections take 7 lines; of level 3,
        // the first detail fits (with its own collapsed fine print), the rest are counted.
        let shape: Vec<String> = text
            .lines()
            .map(|l| l.split(" (").next().unwrap_or(l).to_string())
            .collect();
        assert_eq!(
            shape,
            [
                "- Top",
                "  - One",
                "    - Detail",
                "      +3 subsections",
                "    +36 more sections: #detail-1 … #detail-9",
                "  - Two",
                "    +40 subsections",
                "  - Three",
                "    +40 subsections",
            ],
            "{text}"
        );
        assert_eq!(outline.omitted, 119);
        // Room for level 3 but not level 4: level 4 collapses under each level-3 heading.
        let outline = doc.outline(&OutlineOptions {
            max_lines: 70,
            max_bytes: 100_000,
        });
        // All of level 3 takes 64 lines; the lines left show level 4's first two headings
        // and its last ones (a detail shown whole loses its `+3 subsections` line), and
        // the cut after the first two is named.
        let text = outline.to_string();
        assert!(text.contains("\n      +3 subsections\n"), "{text}");
        assert!(outline.entries.len() <= 70, "{text}");
        let shown: Vec<&str> = outline
            .entries
            .iter()
            .filter_map(OutlineEntry::fragment)
            .filter(|f| f.starts_with("fine-print"))
            .collect();
        assert_eq!(
            shown,
            [
                "fine-print",
                "fine-print-1",
                "fine-print-84",
                "fine-print-85",
                "fine-print-86",
                "fine-print-87",
                "fine-print-88",
                "fine-print-89"
            ],
            "{text}"
        );
        assert!(
            text.contains("\n      +1 more section: #fine-print-2\n"),
            "{text}"
        );
        assert_eq!(outline.omitted, 90 - 8);
    }

    #[test]
    fn a_long_run_keeps_its_first_and_newest_entries_and_names_the_cut() {
        // A status log that grows by appending: the newest weeks are at the end.
        let mut sections: Vec<(u8, String)> = vec![(1, "Status".to_string())];
        sections.extend((1..=40).map(|w| (2, format!("Week {w:02}"))));
        let text: String = sections
            .iter()
            .map(|(l, t)| format!("{} {t}\n\nNews.\n\n", "#".repeat(usize::from(*l))))
            .collect();
        let doc = Document::parse(text);
        let outline = doc.outline(&OutlineOptions {
            max_lines: 10,
            max_bytes: 2048,
        });
        let text = outline.to_string();
        let lines: Vec<&str> = text
            .lines()
            .map(|l| l.split(" (").next().unwrap_or(l).trim())
            .collect();
        assert_eq!(
            lines,
            [
                "- Status",
                "- Week 01",
                "- Week 02",
                "+32 more sections: #week-03 … #week-34",
                "- Week 35",
                "- Week 36",
                "- Week 37",
                "- Week 38",
                "- Week 39",
                "- Week 40",
            ],
            "{text}"
        );
        assert_eq!(outline.omitted, 32);
        // A flat log (one level) is cut the same way.
        let flat: String = (1..=40)
            .map(|w| format!("## Week {w:02}\n\nNews.\n\n"))
            .collect();
        let text = Document::parse(flat)
            .outline(&OutlineOptions {
                max_lines: 6,
                max_bytes: 2048,
            })
            .to_string();
        assert!(text.starts_with("- Week 01 (#week-01"), "{text}");
        assert!(
            text.contains("\n+35 more sections: #week-03 … #week-37\n"),
            "{text}"
        );
        assert!(text.ends_with("- Week 40 (#week-40, ~6 tok)\n"), "{text}");
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
        assert!(
            text.contains(
                "\n+96 more sections: #chapter-with-a-longish-name-2 … #chapter-with-a-longish-name-97\n"
            ),
            "{text}"
        );
        assert!(
            text.ends_with("(#chapter-with-a-longish-name-99, ~13 tok)\n"),
            "{text}"
        );
    }

    #[test]
    fn orphans_deeper_than_the_cutoff_before_any_shown_heading() {
        let doc = doc_with(&[(3, "Early"), (1, "Top"), (2, "Sub"), (3, "X"), (3, "Y")]);
        let outline = doc.outline(&OutlineOptions {
            max_lines: 3,
            max_bytes: 2048,
        });
        assert_eq!(
            outline.entries[0],
            OutlineEntry::Collapsed { depth: 0, count: 1 }
        );
        assert_eq!(
            outline.entries[2],
            OutlineEntry::Collapsed { depth: 1, count: 3 }
        );
        assert_eq!(outline.omitted, 4);
        // Four lines: the first level-3 heading (the orphan) fits as a line of its own.
        let outline = doc.outline(&OutlineOptions {
            max_lines: 4,
            max_bytes: 2048,
        });
        let shown: Vec<_> = outline
            .entries
            .iter()
            .filter_map(OutlineEntry::fragment)
            .collect();
        assert_eq!(shown, ["early", "top", "sub"]);
        assert_eq!(
            outline.entries[3],
            OutlineEntry::Collapsed { depth: 2, count: 2 }
        );
        // One line: everything counted.
        let outline = doc.outline(&OutlineOptions {
            max_lines: 1,
            max_bytes: 2048,
        });
        assert_eq!(outline.to_string(), "+5 more sections: #top\n");
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
        // An anchorless heading is named by its text, unless a namesake comes first.
        let doc = Document::parse("# ?!\ntext\n# ?!\n");
        assert_eq!(
            doc.outline(&OutlineOptions::default()).to_string(),
            "- ?! (#?!, ~3 tok)\n- ?! (~2 tok)\n"
        );
        assert_eq!(
            Document::parse("").outline(&OutlineOptions::default()),
            Outline::default()
        );
    }
}
