//! Anchor lookup with a helpful miss.

use crate::document::{Document, Heading};
use crate::slug::slugify;

/// How many nearest anchors a miss lists at most.
const MAX_NEAREST: usize = 8;

/// No heading matched; the nearest anchors, best first, for the caller's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("section #{query} not found; nearest: {}", nearest_list(.nearest))]
pub struct AnchorMiss {
    /// What was asked for, without a leading `#`.
    pub query: String,
    /// Up to 8 anchors of the document, most similar first (empty when it has none).
    pub nearest: Vec<String>,
}

fn nearest_list(nearest: &[String]) -> String {
    if nearest.is_empty() {
        "(the document has no headings)".to_string()
    } else {
        nearest.join(", ")
    }
}

impl<S: AsRef<str>> Document<S> {
    /// Finds a heading by anchor: the exact anchor; then case-insensitively, with or without
    /// a leading `#` (percent-encoding decoded); then the input slugged as heading text, so
    /// the raw heading text works too.
    pub fn find_anchor(&self, query: &str) -> Result<&Heading, AnchorMiss> {
        let anchored = || self.headings().iter().filter(|h| h.anchor.is_some());
        let is = |h: &&Heading, wanted: &str| h.anchor.as_deref() == Some(wanted);
        if let Some(h) = anchored().find(|h| is(h, query)) {
            return Ok(h);
        }
        let bare = query.trim();
        let bare = bare.strip_prefix('#').unwrap_or(bare);
        let decoded = percent_encoding::percent_decode_str(bare)
            .decode_utf8()
            .map_or_else(|_| bare.to_string(), |d| d.into_owned());
        let lower = decoded.to_lowercase();
        if let Some(h) = anchored().find(|h| is(h, &lower)) {
            return Ok(h);
        }
        let slug = slugify(decoded.trim());
        if let Some(h) = anchored().find(|h| is(h, &slug)) {
            return Ok(h);
        }
        Err(AnchorMiss {
            query: bare.to_string(),
            nearest: nearest(anchored().filter_map(|h| h.anchor.as_deref()), &slug),
        })
    }
}

/// The anchors most similar to `wanted`: containment first, then shared character bigrams
/// (Dice coefficient); ties keep document order.
fn nearest<'a>(anchors: impl Iterator<Item = &'a str>, wanted: &str) -> Vec<String> {
    let wanted_bigrams = bigrams(wanted);
    let mut scored: Vec<(f64, usize, &str)> = anchors
        .enumerate()
        .map(|(i, anchor)| (similarity(anchor, wanted, &wanted_bigrams), i, anchor))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(MAX_NEAREST)
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
