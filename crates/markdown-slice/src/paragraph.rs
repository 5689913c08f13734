//! The opening paragraph, cut to a bound.

use unicode_segmentation::UnicodeSegmentation;

use crate::document::Document;

/// The default bound of [`Document::opening_paragraph`], in bytes.
pub const OPENING_PARAGRAPH_BYTES: usize = 400;

impl<S: AsRef<str>> Document<S> {
    /// The first top-level paragraph of the body (block quotes, lists and HTML blocks are
    /// skipped, so a leading H1 or a `> Stability` note is passed over), as written in the
    /// source, at most `max_bytes` long (see [`OPENING_PARAGRAPH_BYTES`]); `""` when the
    /// document has no such paragraph.
    ///
    /// A longer paragraph is cut at the last sentence end that fits when that keeps at
    /// least half the bound, else at the last word boundary, else at the last grapheme
    /// boundary: never inside a character or a grapheme cluster. Trailing white space is
    /// dropped. Compare with [`Document::first_paragraph_range`] to tell if it was cut.
    pub fn opening_paragraph(&self, max_bytes: usize) -> &str {
        match self.first_paragraph_range() {
            Some(range) => cut(&self.source()[range], max_bytes),
            None => "",
        }
    }
}

fn cut(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let last_end_within = |bounds: &mut dyn Iterator<Item = (usize, &str)>| {
        bounds
            .map(|(start, piece)| start + piece.len())
            .take_while(|&end| end <= max_bytes)
            .last()
            .unwrap_or(0)
    };
    let sentence_end = last_end_within(&mut text.split_sentence_bound_indices());
    let end = if sentence_end > 0 && sentence_end * 2 >= max_bytes {
        sentence_end
    } else {
        let word_end = last_end_within(&mut text.split_word_bound_indices());
        if word_end > 0 {
            word_end
        } else {
            last_end_within(&mut text.grapheme_indices(true))
        }
    };
    text[..end].trim_end()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opening_paragraph_after_h1_and_notes() {
        let doc = Document::parse(
            "# File system\n\n<!--introduced_in=v0.10.0-->\n\n> Stability: 2 - Stable\n\nThe `node:fs` module enables interacting with the file system.\n\nNext.\n",
        );
        assert_eq!(
            doc.opening_paragraph(OPENING_PARAGRAPH_BYTES),
            "The `node:fs` module enables interacting with the file system."
        );
    }

    #[test]
    fn empty_without_paragraph() {
        assert_eq!(
            Document::parse("# Only\n## Headings\n").opening_paragraph(400),
            ""
        );
        assert_eq!(Document::parse("").opening_paragraph(400), "");
        assert_eq!(Document::parse("- a list\n").opening_paragraph(400), "");
    }

    #[test]
    fn cut_at_sentence_then_word_then_grapheme() {
        let text = "First sentence here. Second sentence is longer than that.";
        assert_eq!(cut(text, 30), "First sentence here.");
        // Keeping only the first sentence would lose more than half: cut at a word.
        assert_eq!(
            cut("Hi. A much longer second sentence here", 30),
            "Hi. A much longer second"
        );
        assert_eq!(cut("Supercalifragilistic", 5), "Super");
        // Never inside a grapheme cluster or a character.
        assert_eq!(cut("e\u{301}e\u{301}e\u{301}", 4), "e\u{301}");
        assert_eq!(cut("日本語", 4), "日");
        assert_eq!(cut("日本語", 2), "");
        assert_eq!(cut("short", 400), "short");
    }

    #[test]
    fn bounded_for_every_limit() {
        let text = "Ünïcödé wörds, and sentences! Ja. 日本語の文。 Emoji 👍🏽 here.";
        for max in 0..text.len() + 2 {
            let got = cut(text, max);
            assert!(got.len() <= max, "{max}: {got:?}");
            assert!(text.starts_with(got));
        }
    }
}
