//! Small markdown helpers shared by the body modules: line splitting,
//! backslash escapes and the percent-encoding of names in links.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC};

use crate::error::WireError;

/// What a name in a link escapes: everything but letters, digits and
/// `-_.~` (what Go's `url.PathEscape` leaves alone, minus `$&+:=@`).
pub(crate) const LINK_NAME: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// The body as UTF-8 text, or a `BadBody` error naming `what`.
pub(crate) fn body_text<'a>(what: &'static str, body: &'a [u8]) -> Result<&'a str, WireError> {
    std::str::from_utf8(body).map_err(|_| bad_body(what, "it is not valid UTF-8".to_string()))
}

/// The lines of a body without their `\r`, numbered from 1.
pub(crate) fn numbered_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().map(|(i, l)| (i + 1, l))
}

/// Parses a body of one item per line. Every line that opens a markdown
/// link list item (`- [`) is an item and must satisfy `parse_line` (`None`
/// is an error naming the line and the `shape` it should have); the other
/// lines (blank lines, the reference server's `# Index of …` heading, its
/// `*...truncated…*` note) carry nothing and are skipped.
pub(crate) fn parse_item_lines<T>(
    what: &'static str,
    body: &[u8],
    shape: &str,
    parse_line: impl Fn(&str) -> Option<Result<T, WireError>>,
) -> Result<Vec<T>, WireError> {
    let text = body_text(what, body)?;
    let mut items = Vec::new();
    for (n, line) in numbered_lines(text) {
        let trimmed = line.trim();
        if !trimmed.starts_with("- [") {
            continue;
        }
        let item = parse_line(trimmed).ok_or_else(|| {
            bad_body(
                what,
                format!("line {n} is not `{shape}`: `{}`", excerpt(line)),
            )
        })?;
        items.push(item?);
    }
    Ok(items)
}

pub(crate) fn bad_body(what: &'static str, why: String) -> WireError {
    WireError::BadBody { what, why }
}

/// Cuts a line to a length fit for an error message.
pub(crate) fn excerpt(line: &str) -> String {
    let cut: String = line.chars().take(80).collect();
    if cut.len() < line.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// What the reference server backslash-escapes in link texts, headings and
/// table cells (besides `\` itself).
pub(crate) const SPECIALS: &[char] = &['[', ']', '(', ')', '*', '_', '`', '~', '#', '|'];

/// Backslash-escapes `\` and every character of `specials`; line breaks
/// and other control characters become spaces (a cell or a link text is one
/// line).
pub(crate) fn escape(text: &str, specials: &[char]) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\\' || specials.contains(&c) {
            out.push('\\');
            out.push(c);
        } else if c.is_control() {
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// Undoes CommonMark backslash escapes: `\` before ASCII punctuation stands
/// for that character; any other backslash is itself.
pub(crate) fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && next.is_ascii_punctuation()
        {
            out.push(next);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

/// Splits `text` at its last `sep` not escaped by a backslash.
pub(crate) fn rsplit_unescaped(text: &str, sep: char) -> Option<(&str, &str)> {
    let last = *split_unescaped(text, sep).last()?;
    let cut = text.len().checked_sub(last.len() + sep.len_utf8())?;
    (cut < text.len() && text[cut..].starts_with(sep)).then(|| (&text[..cut], last))
}

/// Splits `text` at every `sep` not escaped by a backslash; the pieces keep
/// their escapes.
pub(crate) fn split_unescaped(text: &str, sep: char) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            pieces.push(&text[start..i]);
            start = i + c.len_utf8();
        }
    }
    pieces.push(&text[start..]);
    pieces
}

/// A light RFC 3339 check: `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`.
pub(crate) fn is_rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| {
        b.get(r.clone())
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
    };
    let num = |r: std::ops::Range<usize>| {
        s.get(r)
            .and_then(|d| d.parse::<u32>().ok())
            .unwrap_or(u32::MAX)
    };
    if b.len() < 20
        || !digits(0..4)
        || !digits(5..7)
        || !digits(8..10)
        || !digits(11..13)
        || !digits(14..16)
        || !digits(17..19)
    {
        return false;
    }
    if b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return false;
    }
    if !(1..=12).contains(&num(5..7))
        || !(1..=31).contains(&num(8..10))
        || num(11..13) > 23
        || num(14..16) > 59
        || num(17..19) > 60
    {
        return false;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        rest = &frac[n..];
    }
    match rest.as_bytes() {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => {
            let two = |hi: u8, lo: u8| (hi - b'0') * 10 + (lo - b'0');
            [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit())
                && two(*h1, *h2) <= 23
                && two(*m1, *m2) <= 59
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_and_unescape_round_trip() {
        let text = r"a|b\c*d_e`f[g]h";
        let escaped = escape(text, &['|', '*', '_', '`', '[', ']']);
        assert_eq!(escaped, r"a\|b\\c\*d\_e\`f\[g\]h");
        assert_eq!(unescape(&escaped), text);
        assert_eq!(unescape(r"\q \"), r"\q \");
        assert_eq!(escape("a\nb\tc", &[]), "a b c");
    }

    #[test]
    fn splits_at_unescaped_separators() {
        assert_eq!(
            split_unescaped(r"a|b\|c|\\|d", '|'),
            vec!["a", r"b\|c", r"\\", "d"]
        );
        assert_eq!(split_unescaped("", '|'), vec![""]);
        assert_eq!(
            rsplit_unescaped(r"/c\#.md#a#b", '#'),
            Some((r"/c\#.md#a", "b"))
        );
        assert_eq!(rsplit_unescaped(r"/c\#.md", '#'), None);
        assert_eq!(rsplit_unescaped("#", '#'), Some(("", "")));
    }

    #[test]
    fn rfc3339_shapes() {
        for ok in [
            "2026-02-17T10:00:00Z",
            "2026-02-17t10:00:00.123z",
            "2026-02-17T10:00:00+01:00",
            "1999-12-31T23:59:60-23:59",
        ] {
            assert!(is_rfc3339(ok), "{ok}");
        }
        for bad in [
            "",
            "2026-02-17",
            "2026-02-17 10:00:00Z",
            "2026-13-17T10:00:00Z",
            "2026-02-00T10:00:00Z",
            "2026-02-17T24:00:00Z",
            "2026-02-17T10:00:00",
            "2026-02-17T10:00:00.Z",
            "2026-02-17T10:00:00+1:00",
            "2026-02-17T10:00:00+24:00",
            "2026-02-17T10:00:00+01:60",
            "2026-02-17T10:00:00Zjunk",
            "２026-02-17T10:00:00Z",
        ] {
            assert!(!is_rfc3339(bad), "{bad}");
        }
    }
}
