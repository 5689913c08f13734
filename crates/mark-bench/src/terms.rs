//! The scripted agent's only "judgement": words of the question, search
//! queries made from them, and term overlap to rank headings, links and
//! files. It never looks at a question's expected section or facts.

use std::collections::BTreeSet;

/// Question words that carry no topic.
const STOPWORDS: &[&str] = &[
    "a", "about", "an", "and", "any", "anyone", "are", "as", "at", "be", "by", "can", "did", "do",
    "does", "for", "from", "has", "have", "how", "in", "is", "it", "its", "mean", "now", "of",
    "on", "one", "or", "right", "so", "that", "the", "this", "to", "was", "we", "were", "what",
    "when", "where", "which", "who", "why", "with", "working",
];

/// Lower-cased words of `text`: runs of letters, digits and `_` (Unicode
/// letters included), at least 2 characters, stop words dropped, in order
/// of first appearance, without repeats.
pub fn terms(text: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 2 && !STOPWORDS.contains(&w.as_str()))
        .filter(|w| seen.insert(w.clone()))
        .collect()
}

/// Words of the question that name something: capitalised after the first
/// word, or holding a digit, `_` or a non-ASCII letter (dates, identifiers,
/// foreign terms), or quoted.
pub fn key_terms(question: &str) -> Vec<String> {
    let quoted = quoted_words(question);
    let mut keys = Vec::new();
    for (i, word) in question
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '\''))
        .filter(|w| !w.is_empty())
        .enumerate()
    {
        let word = word.trim_matches(['\'', '-']);
        let word = word.strip_suffix("'s").unwrap_or(word);
        let named = (i > 0 && word.chars().next().is_some_and(char::is_uppercase))
            || word
                .chars()
                .any(|c| c.is_ascii_digit() || c == '_' || !c.is_ascii())
            || quoted.contains(&word);
        if named {
            for t in terms(word) {
                if !keys.contains(&t) {
                    keys.push(t);
                }
            }
        }
    }
    keys
}

/// Words inside single quotes: a quote opens after white space (or at the
/// start) and closes before white space, punctuation or the end, so an
/// apostrophe (`Tidewatch's`) opens nothing.
fn quoted_words(text: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut open: Option<usize> = None;
    let mut prev: Option<char> = None;
    for (i, c) in text.char_indices() {
        if c == '\'' {
            let next = text[i + 1..].chars().next();
            match open {
                None if prev.is_none_or(char::is_whitespace) => open = Some(i + 1),
                Some(start) if next.is_none_or(|n| !n.is_alphanumeric()) => {
                    words.extend(text[start..i].split_whitespace());
                    open = None;
                }
                _ => {}
            }
        }
        prev = Some(c);
    }
    words
}

/// Search queries to try in order when a search matches only documents
/// holding every word (as LOOKUP does): a date the question names, alone
/// (dated notes are found by their date, and the question's other words —
/// "changed", "happened" — are rarely in them); all topic words; then the
/// naming words; then the last two topic words (English questions tend to
/// end on their subject: "… during quiet hours?"); then the longest naming
/// word. Each differs from every one before.
pub fn query_ladder(question: &str) -> Vec<String> {
    let all = terms(question);
    let keys = key_terms(question);
    let tail = all[all.len().saturating_sub(2)..].to_vec();
    let longest = keys
        .iter()
        .max_by_key(|k| k.chars().count())
        .map(|k| vec![k.clone()])
        .unwrap_or_default();
    let mut ladder: Vec<String> = Vec::new();
    for words in [date_terms(question), all, keys, tail, longest] {
        let q = words.join(" ");
        if !q.is_empty() && !ladder.contains(&q) {
            ladder.push(q);
        }
    }
    ladder
}

/// The terms of the first ISO date (`YYYY-MM-DD`) in `question`, if any.
fn date_terms(question: &str) -> Vec<String> {
    let is_date = |w: &str| {
        let parts: Vec<&str> = w.split('-').collect();
        parts.len() == 3
            && [4, 2, 2]
                .iter()
                .zip(&parts)
                .all(|(n, p)| p.len() == *n && p.chars().all(|c| c.is_ascii_digit()))
    };
    question
        .split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .find(|w| is_date(w))
        .map(terms)
        .unwrap_or_default()
}

/// How many of the question's terms occur among the words of `text`.
pub fn overlap(question_terms: &[String], text: &str) -> usize {
    let words = terms(text);
    question_terms.iter().filter(|t| words.contains(t)).count()
}

/// Items ranked by overlap with the question, best first; ties keep their
/// order. Items with no overlap are dropped.
pub fn rank_by_overlap<T>(
    question_terms: &[String],
    items: Vec<T>,
    text_of: impl Fn(&T) -> String,
) -> Vec<T> {
    let mut scored: Vec<(usize, usize, T)> = items
        .into_iter()
        .enumerate()
        .map(|(i, item)| (overlap(question_terms, &text_of(&item)), i, item))
        .filter(|(score, _, _)| *score > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().map(|(_, _, item)| item).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_terms_drop_stopwords_and_possessives() {
        assert_eq!(
            terms("Who decided to use NATS JetStream as Tidewatch's ingest buffer, and when?"),
            [
                "decided",
                "use",
                "nats",
                "jetstream",
                "tidewatch",
                "ingest",
                "buffer"
            ]
        );
        assert_eq!(terms("What is an Überlaufalarm?"), ["überlaufalarm"]);
    }

    #[test]
    fn key_terms_name_things() {
        assert_eq!(
            key_terms("Who decided to use NATS JetStream as Tidewatch's ingest buffer, and when?"),
            ["nats", "jetstream", "tidewatch"]
        );
        assert_eq!(
            key_terms("What changed on 2026-03-14?"),
            ["2026", "03", "14"]
        );
        assert_eq!(
            key_terms("What does 'surge residual' mean?"),
            ["surge", "residual"]
        );
        assert_eq!(
            key_terms("What is a station_id and can one be reused?"),
            ["station_id"]
        );
    }

    #[test]
    fn the_ladder_narrows_without_repeats() {
        assert_eq!(query_ladder("What is Tidewatch?"), ["tidewatch"]);
        assert_eq!(
            query_ladder("Who decided the dedup key for Tidewatch readings?"),
            [
                "decided dedup key tidewatch readings",
                "tidewatch",
                "tidewatch readings"
            ]
        );
        assert_eq!(
            query_ladder("Who decided that non-flood pages wait during quiet hours?"),
            [
                "decided non flood pages wait during quiet hours",
                "quiet hours"
            ]
        );
    }

    #[test]
    fn a_named_date_is_searched_alone_first() {
        assert_eq!(
            query_ladder("What changed on 2026-03-14?"),
            ["2026 03 14", "changed 2026 03 14", "03 14", "2026"]
        );
        assert_eq!(
            date_terms("Phase 8 since 2026-9-15 or 12-03-2026"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn ranking_keeps_ties_in_order_and_drops_misses() {
        let q = terms("Who decided the dedup key?");
        let ranked = rank_by_overlap(&q, vec!["Status", "Dedup", "The dedup key", "Key"], |s| {
            s.to_string()
        });
        assert_eq!(ranked, ["The dedup key", "Dedup", "Key"]);
    }
}
