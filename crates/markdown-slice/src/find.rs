//! Anchor lookup with a helpful miss.

use std::collections::HashMap;
use std::ops::Range;

use crate::document::{Document, Heading};
use crate::slug::slugify;

/// How many nearest anchors a miss lists at most.
const MAX_NEAREST: usize = 8;

/// Lookups one heading path (`Heading#Sub`) may try, so a query full of `#` stays cheap.
const PATH_LOOKUPS: usize = 64;

/// No heading matched; the nearest anchors, best first, for the caller's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("section #{query} not found; nearest: {}", nearest_list(.nearest, "", "(the document has no headings)"))]
pub struct AnchorMiss {
    /// What was asked for, without a leading `#`.
    pub query: String,
    /// Up to 8 anchors of the document, most similar first (empty when it has none).
    pub nearest: Vec<String>,
}

/// `a, b, c`, each name after `prefix` (`^` for block ids), or `none` when there are none.
pub(crate) fn nearest_list(nearest: &[String], prefix: &str, none: &str) -> String {
    if nearest.is_empty() {
        return none.to_string();
    }
    let names: Vec<String> = nearest.iter().map(|n| format!("{prefix}{n}")).collect();
    names.join(", ")
}

/// Where each heading is found by anchor and by text; built once per parse.
#[derive(Debug, Clone, Default)]
pub(crate) struct HeadingIndex {
    by_anchor: HashMap<String, usize>,
    /// The first heading with this exact text.
    by_text: HashMap<String, usize>,
    /// The first heading with this text, lower-cased.
    by_lower_text: HashMap<String, usize>,
}

impl HeadingIndex {
    pub(crate) fn new(headings: &[Heading]) -> Self {
        let mut index = HeadingIndex {
            by_anchor: HashMap::with_capacity(headings.len()),
            by_text: HashMap::with_capacity(headings.len()),
            by_lower_text: HashMap::with_capacity(headings.len()),
        };
        for (i, h) in headings.iter().enumerate() {
            if let Some(anchor) = &h.anchor {
                index.by_anchor.insert(anchor.clone(), i);
            }
            if !h.text.is_empty() {
                index.by_text.entry(h.text.clone()).or_insert(i);
                index
                    .by_lower_text
                    .entry(h.text.to_lowercase())
                    .or_insert(i);
            }
        }
        index
    }

    /// The lookup order of [`Document::find_anchor`].
    fn find(&self, query: &str) -> Option<usize> {
        if let Some(&i) = self.by_anchor.get(query) {
            return Some(i);
        }
        let trimmed = query.trim();
        let (_, decoded) = bare_and_decoded(query);
        let decoded = decoded.trim();
        // `Setup 1` is heading text, `setup-1` an anchor: text is matched only when the
        // input could not be an anchor as written (a space, capitals, punctuation, emoji).
        let as_text = slugify(decoded) != decoded;
        let text_match = |map: &HashMap<String, usize>, texts: [&str; 2]| {
            texts.into_iter().find_map(|t| map.get(t).copied())
        };
        if as_text && let Some(i) = text_match(&self.by_text, [trimmed, decoded]) {
            return Some(i);
        }
        let lower = decoded.to_lowercase();
        if let Some(&i) = self.by_anchor.get(&lower) {
            return Some(i);
        }
        if as_text && let Some(&i) = self.by_lower_text.get(&lower) {
            return Some(i);
        }
        self.by_anchor.get(&slugify(decoded)).copied()
    }
}

impl HeadingIndex {
    /// One step of a heading path: [`Self::find`], else the heading text ignoring case
    /// whatever the input looks like (`status` is the one `Status` inside its parent).
    fn find_step(&self, step: &str) -> Option<usize> {
        self.find(step).or_else(|| {
            let (_, decoded) = bare_and_decoded(step);
            self.by_lower_text
                .get(&decoded.trim().to_lowercase())
                .copied()
        })
    }
}

impl<S: AsRef<str>> Document<S> {
    /// Finds a heading by anchor or by its text, in this order:
    ///
    /// 1. the exact anchor (`setup-1`);
    /// 2. for input that cannot be an anchor as written (it holds a space, capitals,
    ///    punctuation or emoji: `Setup 1`, `🚀`), the first heading with exactly that text,
    ///    so raw heading text never lands on a de-duplicated namesake, and headings without
    ///    an anchor of their own are reachable;
    /// 3. the anchor case-insensitively (`#SETUP-1`);
    /// 4. for the same input as in 2, the heading text case-insensitively (`setup 1`);
    /// 5. the input slugged as heading text (`install steps?` → `install-steps`);
    /// 6. a heading path (`Phase 2#Status`): each step by this order among the headings
    ///    inside the section of the step before, so two `Status` headings are told apart.
    ///
    /// A leading `#` and surrounding white space are ignored from step 2 on, and
    /// percent-encoding is decoded (`#%C3%BCber-uns`).
    pub fn find_anchor(&self, query: &str) -> Result<&Heading, AnchorMiss> {
        let headings = self.headings();
        let index = self.heading_index();
        if let Some(i) = index.find(query) {
            return Ok(&headings[i]);
        }
        let (bare, _) = bare_and_decoded(query);
        let mut lookups = PATH_LOOKUPS;
        if let Some(i) = find_path(headings, 0..headings.len(), index, bare, &mut lookups) {
            return Ok(&headings[i]);
        }
        // The nearest anchors where the path stopped: under the last heading it found.
        let (scope, rest) = path_reached(headings, index, bare);
        let (_, decoded) = bare_and_decoded(rest);
        Err(AnchorMiss {
            query: bare.to_string(),
            nearest: nearest(
                headings[scope].iter().filter_map(|h| h.anchor.as_deref()),
                &slugify(decoded.trim()),
            ),
        })
    }

    /// The fragment that fetches `heading`: its anchor, else its text when that finds it
    /// (`🚀`); `None` for an anchorless namesake of an earlier heading.
    pub fn fragment_of<'a>(&self, heading: &'a Heading) -> Option<&'a str> {
        heading
            .anchor
            .as_deref()
            .or_else(|| self.found_by_text(heading).then_some(heading.text.as_str()))
    }

    /// Whether [`find_anchor`](Document::find_anchor) given `heading`'s text finds this
    /// very heading (not a namesake earlier in the document).
    pub fn found_by_text(&self, heading: &Heading) -> bool {
        !heading.text.is_empty()
            && self
                .heading_index()
                .find(&heading.text)
                .is_some_and(|i| &self.headings()[i] == heading)
    }
}

/// The heading a path `Heading#Sub#Deeper` names among `headings[scope]` (`index` is theirs),
/// as Obsidian's nested heading links do: the whole path as one heading first (a heading's
/// text may hold `#`), else a first step found by [`HeadingIndex::find_step`] and the rest among
/// the headings inside that step's section, at any depth. Shorter first steps are tried
/// first; `lookups` bounds the work.
fn find_path(
    headings: &[Heading],
    scope: Range<usize>,
    index: &HeadingIndex,
    path: &str,
    lookups: &mut usize,
) -> Option<usize> {
    for (at, _) in path.match_indices('#') {
        if *lookups == 0 {
            return None;
        }
        *lookups -= 1;
        let Some(step) = index.find_step(&path[..at]).map(|i| scope.start + i) else {
            continue;
        };
        let inside = subtree(headings, step);
        let inner = HeadingIndex::new(&headings[inside.clone()]);
        let rest = &path[at + 1..];
        if let Some(i) = inner.find_step(rest) {
            return Some(inside.start + i);
        }
        if let Some(i) = find_path(headings, inside, &inner, rest, lookups) {
            return Some(i);
        }
    }
    None
}

/// How far a path gets taking the first step that matches each time: the headings under
/// the last one found (all of them when none is), and the rest of the path.
fn path_reached<'p>(
    headings: &[Heading],
    index: &HeadingIndex,
    path: &'p str,
) -> (Range<usize>, &'p str) {
    let (mut scope, mut rest) = (0..headings.len(), path);
    let mut inner: Option<HeadingIndex> = None;
    'steps: loop {
        for (at, _) in rest.match_indices('#') {
            let found = inner.as_ref().unwrap_or(index).find_step(&rest[..at]);
            if let Some(i) = found.map(|i| scope.start + i) {
                scope = subtree(headings, i);
                rest = &rest[at + 1..];
                inner = Some(HeadingIndex::new(&headings[scope.clone()]));
                continue 'steps;
            }
        }
        return (scope, rest);
    }
}

/// The headings inside the section of `headings[i]`.
fn subtree(headings: &[Heading], i: usize) -> Range<usize> {
    let end = headings[i].section.end;
    let after = &headings[i + 1..];
    i + 1..i + 1 + after.partition_point(|h| h.line.start < end)
}

/// The query without surrounding white space and a leading `#`, and that percent-decoded.
fn bare_and_decoded(query: &str) -> (&str, String) {
    let bare = query.trim();
    let bare = bare.strip_prefix('#').unwrap_or(bare);
    let decoded = percent_encoding::percent_decode_str(bare)
        .decode_utf8()
        .map_or_else(|_| bare.to_string(), |d| d.into_owned());
    (bare, decoded)
}

/// The up to 8 anchors most similar to `wanted` (see [`nearest_names`]).
pub(crate) fn nearest<'a>(anchors: impl Iterator<Item = &'a str>, wanted: &str) -> Vec<String> {
    nearest_names(anchors, wanted, MAX_NEAREST)
}

/// The `max` names most similar to `wanted`, as a miss lists them: containment first, then
/// shared character bigrams (Dice coefficient); ties keep the order given.
///
/// ```
/// let near = markdown_slice::nearest_names(["setup", "install", "usage"], "instal", 2);
/// assert_eq!(near, ["install", "setup"]);
/// ```
pub fn nearest_names<'a>(
    names: impl IntoIterator<Item = &'a str>,
    wanted: &str,
    max: usize,
) -> Vec<String> {
    let wanted_bigrams = bigrams(wanted);
    let mut scored: Vec<(f64, usize, &str)> = names
        .into_iter()
        .enumerate()
        .map(|(i, anchor)| (similarity(anchor, wanted, &wanted_bigrams), i, anchor))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(max)
        .map(|(_, _, anchor)| anchor.to_string())
        .collect()
}

fn similarity(anchor: &str, wanted: &str, wanted_bigrams: &[(char, char)]) -> f64 {
    let containment = if !wanted.is_empty() && (anchor.contains(wanted) || wanted.contains(anchor))
    {
        1.0
    } else {
        0.0
    };
    let anchor_bigrams = bigrams(anchor);
    let total = anchor_bigrams.len() + wanted_bigrams.len();
    let dice = if total == 0 {
        0.0
    } else {
        let shared = anchor_bigrams
            .iter()
            .filter(|b| wanted_bigrams.binary_search(b).is_ok())
            .count();
        2.0 * shared as f64 / total as f64
    };
    containment + dice
}

/// Distinct character pairs, sorted.
fn bigrams(text: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = text.chars().collect();
    let mut pairs: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

#[cfg(test)]
mod tests {
    use crate::Document;

    const DOC: &str = "# File system\n\n## Promise example\n\n## `fs.readFile(path[, options], callback)`\n\n## Über uns\n\n## Notes\n\n## Notes\n";

    #[test]
    fn exact_then_case_insensitive_then_reslugged() {
        let doc = Document::parse(DOC);
        let anchor = |q: &str| doc.find_anchor(q).map(|h| h.anchor.clone().unwrap());
        assert_eq!(anchor("promise-example").unwrap(), "promise-example");
        assert_eq!(anchor("#promise-example").unwrap(), "promise-example");
        assert_eq!(anchor("#Promise-Example").unwrap(), "promise-example");
        assert_eq!(anchor("Promise example").unwrap(), "promise-example");
        assert_eq!(
            anchor("fs.readFile(path[, options], callback)").unwrap(),
            "fsreadfilepath-options-callback"
        );
        assert_eq!(anchor("#%C3%BCber-uns").unwrap(), "über-uns");
        assert_eq!(anchor("ÜBER UNS").unwrap(), "über-uns");
        assert_eq!(anchor("notes-1").unwrap(), "notes-1");
        assert_eq!(anchor("Notes").unwrap(), "notes");
    }

    #[test]
    fn miss_lists_nearest_anchors_best_first() {
        let doc = Document::parse(DOC);
        let miss = doc.find_anchor("#readfile").unwrap_err();
        assert_eq!(miss.query, "readfile");
        assert_eq!(miss.nearest[0], "fsreadfilepath-options-callback");
        assert!(miss.nearest.len() <= 8);
        assert_eq!(miss.nearest.len(), 6);
        let message = miss.to_string();
        assert!(
            message.starts_with("section #readfile not found; nearest: fsreadfile"),
            "{message}"
        );
    }

    #[test]
    fn miss_lists_at_most_eight() {
        let text: String = (0..20).map(|i| format!("## Part {i}\n")).collect();
        let doc = Document::parse(text);
        let miss = doc.find_anchor("part-99").unwrap_err();
        assert_eq!(miss.nearest.len(), 8);
        assert!(miss.nearest.iter().all(|a| a.starts_with("part-")));
    }

    #[test]
    fn miss_in_a_document_without_headings() {
        let doc = Document::parse("just text");
        let miss = doc.find_anchor("x").unwrap_err();
        assert!(miss.nearest.is_empty());
        assert_eq!(
            miss.to_string(),
            "section #x not found; nearest: (the document has no headings)"
        );
    }
}
