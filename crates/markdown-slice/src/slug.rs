//! GitHub-compatible heading anchors.

use std::collections::HashMap;

/// Connector punctuation (Unicode category Pc) other than `_`, which GitHub keeps in anchors.
const CONNECTOR_PUNCTUATION: [char; 10] = [
    '_', '\u{203F}', '\u{2040}', '\u{2054}', '\u{FE33}', '\u{FE34}', '\u{FE4D}', '\u{FE4E}',
    '\u{FE4F}', '\u{FF3F}',
];

/// The GitHub anchor of a heading's plain text, without the de-duplication suffix.
///
/// Lower-cased; Unicode letters (alphabetic, which includes most combining vowel signs),
/// numbers, `_` (and the other connector punctuation) and `-` are kept; each white-space
/// character becomes `-`; everything else is dropped.
///
/// ```
/// use markdown_slice::slugify;
/// assert_eq!(slugify("W1 — outline mode"), "w1--outline-mode");
/// assert_eq!(slugify("What's next?"), "whats-next");
/// assert_eq!(slugify("Über uns"), "über-uns");
/// ```
pub fn slugify(text: &str) -> String {
    let mut slug = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            // Fast path for the common case; same rules as below.
            match c {
                'a'..='z' | '0'..='9' | '_' | '-' => slug.push(c),
                'A'..='Z' => slug.push(c.to_ascii_lowercase()),
                ' ' | '\t' | '\n' | '\x0B' | '\x0C' | '\r' => slug.push('-'),
                _ => {}
            }
        } else if c.is_whitespace() {
            slug.push('-');
        } else if c == '-' || c.is_alphanumeric() || CONNECTOR_PUNCTUATION.contains(&c) {
            // `to_lowercase` may yield several chars (e.g. 'İ'); all of them are kept.
            slug.extend(c.to_lowercase());
        }
    }
    slug
}

/// Hands out unique anchors the way GitHub does: a repeated slug gets `-1`, `-2`, …,
/// and generated names count as taken (`Notes`, `Notes`, `Notes-1` → `notes`,
/// `notes-1`, `notes-1-1`).
#[derive(Debug, Default)]
pub(crate) struct Slugger {
    /// For each slug handed out: how many times its base was asked for again.
    occurrences: HashMap<String, usize>,
}

impl Slugger {
    /// A slugger with room for `headings` anchors, so the map never grows mid-document.
    pub(crate) fn with_capacity(headings: usize) -> Self {
        Slugger {
            occurrences: HashMap::with_capacity(headings),
        }
    }

    /// The unique anchor for a heading text, or `None` when the slug is empty.
    pub(crate) fn anchor(&mut self, text: &str) -> Option<String> {
        let base = slugify(text);
        if base.is_empty() {
            return None;
        }
        if !self.occurrences.contains_key(&base) {
            self.occurrences.insert(base.clone(), 0);
            return Some(base);
        }
        let mut candidate = base.clone();
        while self.occurrences.contains_key(&candidate) {
            let count = self.occurrences.entry(base.clone()).or_insert(0);
            *count += 1;
            candidate = format!("{base}-{count}");
        }
        self.occurrences.insert(candidate.clone(), 0);
        Some(candidate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_rules_from_the_issue() {
        assert_eq!(slugify("W1 — outline mode"), "w1--outline-mode");
        assert_eq!(slugify("What's next?"), "whats-next");
        assert_eq!(slugify("Über uns"), "über-uns");
        assert_eq!(
            slugify("fs.readFile(path[, options], callback)"),
            "fsreadfilepath-options-callback"
        );
        assert_eq!(slugify("The mark_fetch tool"), "the-mark_fetch-tool");
    }

    #[test]
    fn ascii_fast_path_follows_the_general_rule() {
        for c in (0u8..128).map(char::from) {
            let expected = if c.is_whitespace() {
                "-".to_string()
            } else if c == '-' || c == '_' || c.is_alphanumeric() {
                c.to_lowercase().collect()
            } else {
                String::new()
            };
            assert_eq!(slugify(&c.to_string()), expected, "{c:?}");
        }
    }

    #[test]
    fn every_whitespace_char_becomes_a_dash() {
        assert_eq!(slugify("a\tb  c"), "a-b--c");
        assert_eq!(slugify(" lead"), "-lead");
    }

    #[test]
    fn unicode_letters_and_digits_are_kept_and_lowercased() {
        assert_eq!(slugify("日本語 ドキュメント"), "日本語-ドキュメント");
        assert_eq!(slugify("ΑΒΓ 123 ٣"), "αβγ-123-٣");
        assert_eq!(slugify("emoji 🎉 party"), "emoji--party");
        assert_eq!(slugify("a‿b"), "a‿b");
    }

    #[test]
    fn duplicates_get_suffixes_and_generated_names_count_as_taken() {
        let mut slugger = Slugger::default();
        let got: Vec<_> = ["Notes", "Notes", "Notes-1", "Notes", "?!"]
            .iter()
            .map(|t| slugger.anchor(t))
            .collect();
        assert_eq!(
            got,
            [
                Some("notes".to_string()),
                Some("notes-1".to_string()),
                Some("notes-1-1".to_string()),
                Some("notes-2".to_string()),
                None
            ]
        );
    }
}
