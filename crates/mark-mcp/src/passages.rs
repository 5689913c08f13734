//! `mark_lookup`'s passages: the paragraphs, list items, table rows and
//! code blocks of the top rows' sections that best match the query, best
//! first, within a token budget (DESIGN.md wave-3 rule 2), so the first
//! call hands over the answer rather than whole sections around it.
//!
//! The documents are loaded as `mark_fetch` loads them (the cache within
//! `--fresh-for`, else revalidated), so a passage is always text of the
//! version the source has now, and the session records exactly the
//! passages the result carries, at that version. Which blocks match is
//! mark-store's [`mark_store::passages::choose`], the same for every
//! source: a folder, mark-server, or a server without LOOKUP.
//!
//! A passage is not sent again (wave-3 rule 3) when it, its section or the
//! whole document was sent at the version the document has now; such rows
//! are left out of the choice and counted in the opening line. The budget
//! is a cap inside what the result builder has left: a group of passages
//! that does not fit is named with its size, not recorded.

use crate::dedup::{Delivery, Page, Slice};
use crate::envelope::one_line;
use crate::lookup::trail;
use crate::outbox::SessionDelivery;
use crate::result::{ResultBuilder, SEPARATOR, escape_framing};
use crate::session::{CachedDoc, Freshness, Loaded, Session};
use mark_proto::lookup::LookupRow;
use mark_store::passages::{Candidate, choose};
use markdown_slice::{Document, PassageUnit, estimate_tokens};
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

/// The passage budget when a call gives none, in estimated tokens.
pub const DEFAULT_BUDGET: u32 = 1000;
/// The largest budget a call may give.
pub const MAX_BUDGET: u32 = 4000;
/// The top rows whose sections passages come from.
pub const PASSAGE_ROWS: usize = 5;
/// The most bytes of a passage label's title.
const TITLE_BYTES: usize = 160;

/// A passage's key in the delivery log: its byte range in the document at
/// the version it was read (the identity pins the version).
fn passage_slice(range: &Range<usize>) -> Slice {
    Slice::Passage(format!("{}-{}", range.start, range.end))
}

/// One stretch of a row's section that passages may come from: the
/// section's own text or one subsection's, with the anchor a reader
/// fetches it by and the headings between the row's and its own.
struct Segment {
    /// Its heading's anchor (the row's for its own text; `None` for a
    /// preamble row).
    anchor: Option<String>,
    /// The headings below the row's down to its own, ` › `-joined.
    below: String,
    range: Range<usize>,
    /// What `mark_fetch` of its anchor sends: the heading's section,
    /// subsections included (the whole document for a row without one).
    bytes: usize,
}

/// The segments of a row's section in `doc`: its own text, then each of
/// its subsections' own text, in source order; for a row without an
/// anchor, the preamble (or, when the preamble has nothing to read, the
/// first section's own text).
fn segments(doc: &Document<Arc<str>>, anchor: Option<&str>) -> Vec<Segment> {
    let headings = doc.headings();
    let Some(a) = anchor else {
        let preamble = doc.preamble_range();
        let range = if doc.passage_units(preamble.clone()).is_empty() {
            match headings.iter().find(|h| !h.nested) {
                Some(h) => doc.own_text_range(h),
                None => return Vec::new(),
            }
        } else {
            preamble
        };
        return vec![Segment {
            anchor: None,
            below: String::new(),
            bytes: doc.source().len(),
            range,
        }];
    };
    let Some(top) = headings.iter().position(|h| h.anchor.as_deref() == Some(a)) else {
        return Vec::new();
    };
    let section = headings[top].section.clone();
    headings
        .iter()
        .enumerate()
        .skip(top)
        .take_while(|(_, h)| h.line.start < section.end)
        .filter(|(i, h)| *i == top || !h.nested)
        .map(|(i, h)| {
            let mut below = Vec::new();
            let mut at = Some(i);
            while let Some(j) = at.filter(|&j| j != top) {
                below.push(headings[j].text.as_str());
                at = headings[j].parent;
            }
            below.reverse();
            Segment {
                anchor: h.anchor.clone().or_else(|| Some(a.to_string())),
                below: below.join(" › "),
                range: doc.own_text_range(h),
                bytes: h.section.len(),
            }
        })
        .collect()
}

/// A segment passages may come from, with what it is read with.
struct Source<'r> {
    /// Its row's rank among the rows given (0 = the top).
    rank: usize,
    row: &'r LookupRow,
    doc: Arc<CachedDoc>,
    segment: Segment,
    /// The row's title and the headings below it down to the segment's.
    heading: String,
    units: Vec<PassageUnit>,
}

/// What passages added to a result.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PassagesAdded {
    /// Passages the result carries.
    pub sent: usize,
}

/// Adds to `b` the passages of `query` from `rows` (the top
/// [`PASSAGE_ROWS`] of them), within `budget` estimated tokens; `force`
/// re-sends what the session already holds.
pub async fn passages_into(
    b: &mut ResultBuilder,
    session: &Session,
    query: &str,
    rows: &[LookupRow],
    budget: usize,
    force: bool,
    now: Instant,
) -> PassagesAdded {
    let rows = &rows[..rows.len().min(PASSAGE_ROWS)];
    if budget == 0 || rows.is_empty() {
        return PassagesAdded::default();
    }
    let freshness = if force {
        Freshness::Revalidate
    } else {
        Freshness::CacheOk
    };
    let mut paths: Vec<&str> = rows.iter().map(|r| r.path.as_str()).collect();
    paths.sort_unstable();
    paths.dedup();
    let loaded =
        futures::future::join_all(paths.iter().map(|p| session.load_with(p, now, freshness))).await;
    let docs: Vec<(&str, Arc<CachedDoc>)> = paths
        .into_iter()
        .zip(loaded)
        .filter_map(|(p, l)| match l {
            Loaded::Doc(d) => Some((p, d)),
            Loaded::Answer(_) => None,
        })
        .collect();
    // Each segment of each row's section, with its document and its units;
    // a segment two rows share counts for the higher.
    let mut sources: Vec<Source> = Vec::new();
    for (rank, row) in rows.iter().enumerate() {
        let Some((_, doc)) = docs.iter().find(|(p, _)| *p == row.path) else {
            continue;
        };
        for segment in segments(&doc.doc, row.anchor.as_deref()) {
            if sources
                .iter()
                .any(|s| s.row.path == row.path && s.segment.range == segment.range)
            {
                continue;
            }
            let units = doc.doc.passage_units(segment.range.clone());
            if units.is_empty() {
                continue;
            }
            let title = trail(&row.title);
            let heading = match segment.below.as_str() {
                "" => title.to_string(),
                below => format!("{title} › {below}"),
            };
            sources.push(Source {
                rank,
                row,
                doc: Arc::clone(doc),
                segment,
                heading,
                units,
            });
        }
    }
    let candidates: Vec<Candidate<'_>> = sources
        .iter()
        .map(|s| Candidate {
            rank: s.rank,
            source: s.doc.doc.source(),
            heading: &s.heading,
            units: &s.units,
        })
        .collect();
    // The choice is made over everything, then what the session holds is
    // left out: the same lookup again chooses the same passages, and finds
    // them held, rather than reaching for the next best.
    let mut chosen = choose(query, &candidates, budget);
    let mut held = 0;
    {
        let log = session.log();
        for group in &mut chosen {
            let Source {
                row, doc, segment, ..
            } = &sources[group.candidate];
            let holds = |slice: &Slice| !force && log.holds(&row.path, slice, &doc.identity, now);
            let whole = row.anchor.clone().map_or(Slice::Body, Slice::Section);
            let own = segment.anchor.clone().map_or(Slice::Body, Slice::Section);
            let before = group.units.len();
            if holds(&whole) || holds(&own) {
                group.units.clear();
            } else {
                let units = &candidates[group.candidate].units;
                group
                    .units
                    .retain(|&u| !holds(&passage_slice(&units[u].range)));
            }
            held += before - group.units.len();
        }
    }
    chosen.retain(|g| !g.units.is_empty());
    let spent: usize = chosen
        .iter()
        .flat_map(|g| {
            let c = &candidates[g.candidate];
            g.units
                .iter()
                .map(move |&u| estimate_tokens(&c.unit_text(&c.units[u])))
        })
        .sum();
    let mut added = PassagesAdded::default();
    let held_note = match held {
        0 => String::new(),
        1 => " (1 more was read earlier)".to_string(),
        n => format!(" ({n} more were read earlier)"),
    };
    if chosen.is_empty() {
        if held > 0 {
            let _small_framing = b.push_framing(
                &format!("\n{SEPARATOR}passages: the best ones were read earlier{held_note} ===\n"),
                Vec::new(),
            );
        }
        return added;
    }
    let opening = format!(
        "\n{SEPARATOR}passages matching the query, ~{spent} of {budget} tokens{held_note}; a whole section is mark_fetch url#anchor ===\n",
    );
    if b.push_framing(&opening, Vec::new()).is_err() {
        return added;
    }
    for group in &chosen {
        let candidate = &candidates[group.candidate];
        let Source {
            row, doc, segment, ..
        } = &sources[group.candidate];
        let target = match &segment.anchor {
            Some(a) => format!("{}#{a}", row.path),
            None => row.path.clone(),
        };
        let label = format!(
            "{SEPARATOR}passage {target} · {}{} ===\n",
            one_line(candidate.heading, TITLE_BYTES),
            format_args!(" (section {} bytes)", segment.bytes)
        );
        let mut text = String::new();
        let mut deliveries: Vec<SessionDelivery> = Vec::new();
        let mut last_end: Option<usize> = None;
        for &u in &group.units {
            let unit = &candidate.units[u];
            if let Some(end) = last_end {
                let between = doc.doc.source().get(end..unit.range.start).unwrap_or("");
                text.push_str(if between.trim().is_empty() {
                    "\n\n"
                } else {
                    "\n…\n"
                });
            }
            text.push_str(&candidate.unit_text(unit));
            last_end = Some(unit.range.end);
            deliveries.push(Delivery::Doc {
                path: row.path.clone(),
                part: Some((passage_slice(&unit.range), Page::WHOLE)),
                identity: doc.identity.clone(),
                snapshot: Arc::clone(&doc.hashes),
                at: now,
            });
        }
        text.push('\n');
        let count = deliveries.len();
        let block = format!("{label}{}", escape_framing(&text));
        if b.push_framing(&block, deliveries).is_ok() {
            added.sent += count;
        } else {
            let _named_only_below_a_tiny_bound = b.push_framing(
                &format!(
                    "{SEPARATOR}not shown, over the result bound: {} passages of {} (~{} tokens); mark_fetch it ===\n",
                    count,
                    target,
                    estimate_tokens(&text)
                ),
                Vec::new(),
            );
        }
    }
    added
}
