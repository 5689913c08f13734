//! Bounded text: link texts and titles are cut so one odd document cannot bloat the graph.

use std::borrow::Cow;

/// Link texts keep at most this many bytes (including the `…` that marks a cut).
pub const MAX_LINK_TEXT_BYTES: usize = 120;

/// Titles keep at most this many bytes (including the `…` that marks a cut).
pub const MAX_TITLE_BYTES: usize = 200;

const ELLIPSIS: &str = "…";

/// `text` cut to at most `max` bytes on a character boundary, ending in `…` when cut.
pub(crate) fn truncate(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let end = text.floor_char_boundary(max.saturating_sub(ELLIPSIS.len()));
    Cow::Owned(format!("{}{ELLIPSIS}", &text[..end]))
}

/// `text` on one line (white-space runs become one space, ends trimmed), then cut to `max` bytes.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let mut line = String::with_capacity(text.len().min(max));
    for word in text.split_whitespace() {
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
        if line.len() > max {
            break;
        }
    }
    truncate(&line, max).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept() {
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(one_line("  a\n b\t\tc ", 120), "a b c");
    }

    #[test]
    fn long_text_is_cut_on_a_char_boundary_with_an_ellipsis() {
        let text = "é".repeat(100); // 200 bytes
        let cut = truncate(&text, MAX_LINK_TEXT_BYTES);
        assert!(cut.len() <= MAX_LINK_TEXT_BYTES);
        assert!(cut.ends_with('…'));
        assert!(cut.trim_end_matches('…').chars().all(|c| c == 'é'));
        let line = one_line(&"word ".repeat(100), MAX_LINK_TEXT_BYTES);
        assert!(
            line.len() <= MAX_LINK_TEXT_BYTES && line.ends_with('…'),
            "{line}"
        );
    }
}
