//! The metadata block: a flat map of string keys to string values, kept in
//! the order received, read and written with YAML's scalar quoting but never
//! YAML's type coercion.
//!
//! Reading accepts what a YAML map serializer writes for a flat string map:
//! plain, `'single'` and `"double"` quoted scalars, values folded over
//! indented continuation lines, literal (`|`, `|-`, `|+`) and folded (`>`)
//! block scalars, blank lines and `#` comments. Writing always produces one
//! line per entry, double-quoting what YAML would coerce or misread.

use crate::error::WireError;

/// An ordered string map. Small (a handful of keys), so a vector is the
/// right structure: lookups are linear and order is preserved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    entries: Vec<(String, String)>,
}

impl Metadata {
    /// An empty map.
    pub fn new() -> Metadata {
        Metadata::default()
    }

    /// Sets `key` to `value`, replacing an earlier value in place.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) {
        let key = key.into();
        let value = value.into();
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((key, value)),
        }
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let i = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(i).1)
    }

    /// Entries in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Metadata {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Metadata {
        let mut m = Metadata::new();
        for (k, v) in iter {
            m.insert(k, v);
        }
        m
    }
}

/// Whether `key` can be written as a plain YAML key and read back as itself:
/// non-empty, ASCII letters, digits, `-`, `_` and `.`, starting with a
/// letter or digit.
pub fn is_valid_key(key: &str) -> bool {
    let mut bytes = key.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphanumeric())
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Parses the lines between the `---` delimiters.
pub(crate) fn parse_block(text: &str) -> Result<Metadata, WireError> {
    let mut meta = Metadata::new();
    let mut lines: Vec<&str> = text
        .split('\n')
        .map(|raw| raw.strip_suffix('\r').unwrap_or(raw))
        .collect();
    if text.ends_with('\n') {
        // `split` yields an empty piece after the final newline; it is no line.
        lines.pop();
    }
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            // An indented line here belongs to no entry: the map is flat.
            return Err(WireError::BadMetadataLine(truncate(line)));
        }
        let (key, value) =
            split_entry(line).ok_or_else(|| WireError::BadMetadataLine(truncate(line)))?;
        let key = unquote(key)?;
        // Indented lines after an entry continue its value (YAML folding).
        let start = i;
        while i < lines.len() && (lines[i].starts_with([' ', '\t']) || lines[i].trim().is_empty()) {
            i += 1;
        }
        // Trailing blank lines are not part of the value.
        let mut end = i;
        while end > start && lines[end - 1].trim().is_empty() {
            end -= 1;
        }
        let continuation = &lines[start..end];
        let value = value.trim();
        let value = match block_indicator(value) {
            Some(style) => block_scalar(style, continuation, &lines[end..i]),
            None if continuation.is_empty() => unquote(strip_comment(value))?,
            None => {
                let folded = fold_lines(std::iter::once(value).chain(continuation.iter().copied()));
                unquote(strip_comment(&folded))?
            }
        };
        meta.insert(key, value);
    }
    Ok(meta)
}

/// Splits `key: value` at the first `:` outside quotes that YAML reads as a
/// mapping indicator (followed by a space, a tab or the end of the line).
fn split_entry(line: &str) -> Option<(&str, &str)> {
    let bytes = line.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == b'\\' && q == b'"' => i += 1,
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if i == 0 && (b == b'"' || b == b'\'') => quote = Some(b),
            None if b == b':' && matches!(bytes.get(i + 1), None | Some(b' ') | Some(b'\t')) => {
                let key = line[..i].trim();
                return (!key.is_empty()).then(|| (key, &line[i + 1..]));
            }
            None => {}
        }
        i += 1;
    }
    None
}

/// The chomping of a block scalar: `|`/`>` clip, `-` strip, `+` keep.
#[derive(Clone, Copy)]
struct BlockStyle {
    folded: bool,
    chomp: Chomp,
}

#[derive(Clone, Copy, PartialEq)]
enum Chomp {
    Clip,
    Strip,
    Keep,
}

fn block_indicator(value: &str) -> Option<BlockStyle> {
    let value = strip_comment(value).trim_end();
    let (folded, rest) = match value.as_bytes().first()? {
        b'|' => (false, &value[1..]),
        b'>' => (true, &value[1..]),
        _ => return None,
    };
    // An explicit indentation digit may stand before or after the chomp sign.
    let rest: String = rest.chars().filter(|c| !c.is_ascii_digit()).collect();
    let chomp = match rest.as_str() {
        "" => Chomp::Clip,
        "-" => Chomp::Strip,
        "+" => Chomp::Keep,
        _ => return None,
    };
    Some(BlockStyle { folded, chomp })
}

/// Builds a block scalar from its indented lines; `trailing_blank` are the
/// blank lines after the last content line (kept only by `+`).
fn block_scalar(style: BlockStyle, lines: &[&str], trailing_blank: &[&str]) -> String {
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches([' ', '\t']).len())
        .min()
        .unwrap_or(0);
    let content: Vec<&str> = lines
        .iter()
        .map(|l| l.get(indent..).unwrap_or(""))
        .collect();
    let mut out = if style.folded {
        fold_lines(content.iter().copied())
    } else {
        content.join("\n")
    };
    if content.is_empty() {
        return out;
    }
    match style.chomp {
        Chomp::Strip => {}
        Chomp::Clip => out.push('\n'),
        Chomp::Keep => {
            out.push('\n');
            for _ in trailing_blank {
                out.push('\n');
            }
        }
    }
    out
}

/// YAML line folding: a single line break between two lines becomes a
/// space, each blank line in between becomes one `\n`.
fn fold_lines<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    let mut out = String::new();
    let mut blank_run = 0;
    let mut first = true;
    for line in lines {
        let line = line.trim();
        if line.is_empty() {
            blank_run += 1;
            continue;
        }
        if !first {
            if blank_run == 0 {
                out.push(' ');
            }
            for _ in 0..blank_run {
                out.push('\n');
            }
        }
        out.push_str(line);
        blank_run = 0;
        first = false;
    }
    out
}

/// Cuts a YAML comment (` #` outside quotes) off a plain scalar.
fn strip_comment(value: &str) -> &str {
    if value.starts_with(['"', '\'']) {
        return strip_comment_after_quoted(value);
    }
    match value.find(" #").or_else(|| value.find("\t#")) {
        Some(i) => value[..i].trim_end(),
        None => value,
    }
}

/// For a quoted scalar, drops a comment after the closing quote.
fn strip_comment_after_quoted(value: &str) -> &str {
    let bytes = value.as_bytes();
    let q = bytes[0];
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if q == b'"' => i += 2,
            b if b == q && q == b'\'' && bytes.get(i + 1) == Some(&b'\'') => i += 2,
            b if b == q => {
                let rest = value[i + 1..].trim_start();
                return if rest.starts_with('#') {
                    &value[..=i]
                } else {
                    value
                };
            }
            _ => i += 1,
        }
    }
    value
}

/// Writes entries as `key: value` lines, quoting what YAML would coerce or
/// misread.
pub(crate) fn write_block(meta: &Metadata) -> Result<String, WireError> {
    let mut out = String::new();
    for (k, v) in meta.iter() {
        if !is_valid_key(k) {
            return Err(WireError::BadMetadataKey(truncate(k)));
        }
        out.push_str(k);
        out.push_str(": ");
        out.push_str(&quote(v));
        out.push('\n');
    }
    Ok(out)
}

fn truncate(s: &str) -> String {
    s.chars().take(80).collect()
}

/// Undoes YAML scalar quoting: plain, `'single'` (with `''`) or `"double"`
/// (with backslash escapes). A plain value stays exactly as written.
fn unquote(v: &str) -> Result<String, WireError> {
    if v.len() >= 2 && v.starts_with('\'') && v.ends_with('\'') {
        return Ok(v[1..v.len() - 1].replace("''", "'"));
    }
    if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
        return unescape_double(&v[1..v.len() - 1])
            .ok_or_else(|| WireError::BadQuoting(truncate(v)));
    }
    if v.starts_with(['"', '\'']) {
        return Err(WireError::BadQuoting(truncate(v)));
    }
    Ok(v.to_string())
}

/// The escapes of a YAML double-quoted scalar.
fn unescape_double(inner: &str) -> Option<String> {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '"' {
            // An unescaped quote inside means the value was not one scalar.
            return None;
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let unescaped = match chars.next()? {
            'n' => '\n',
            't' | '\t' => '\t',
            'r' => '\r',
            '0' => '\0',
            'a' => '\x07',
            'b' => '\x08',
            'e' => '\x1b',
            'f' => '\x0c',
            'v' => '\x0b',
            ' ' => ' ',
            '"' => '"',
            '\\' => '\\',
            '/' => '/',
            'N' => '\u{85}',
            '_' => '\u{a0}',
            'L' => '\u{2028}',
            'P' => '\u{2029}',
            'x' => hex_char(&mut chars, 2)?,
            'u' => hex_char(&mut chars, 4)?,
            'U' => hex_char(&mut chars, 8)?,
            _ => return None,
        };
        out.push(unescaped);
    }
    Some(out)
}

fn hex_char(chars: &mut std::str::Chars<'_>, n: usize) -> Option<char> {
    let digits: String = chars.by_ref().take(n).collect();
    if digits.len() != n || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(&digits, 16)
        .ok()
        .and_then(char::from_u32)
}

/// Quotes a value the way the reference server does: double quotes for
/// anything YAML would read as another type or misparse; plain otherwise.
fn quote(v: &str) -> String {
    if !needs_quotes(v) {
        return v.to_string();
    }
    let mut out = String::with_capacity(v.len() + 2);
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if needs_escape(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Characters YAML does not allow raw inside a quoted scalar.
fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}')
}

fn needs_quotes(v: &str) -> bool {
    if v.is_empty() || v.trim() != v {
        return true;
    }
    let lower = v.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "true"
            | "false"
            | "yes"
            | "no"
            | "on"
            | "off"
            | "y"
            | "n"
            | "null"
            | "~"
            | ".nan"
            | ".inf"
            | "-.inf"
            | "+.inf"
    ) {
        return true;
    }
    // Numbers (ints, floats, hex, octal) and dates/times start with a digit
    // or a sign or dot followed by a digit.
    let bytes = v.as_bytes();
    let first = bytes[0];
    if first.is_ascii_digit()
        || (matches!(first, b'-' | b'+' | b'.') && bytes.get(1).is_some_and(u8::is_ascii_digit))
    {
        return true;
    }
    if "!&*-?{}[],#|>@`\"'%:".contains(first as char) {
        return true;
    }
    v.contains(": ")
        || v.contains(" #")
        || v.contains("\t#")
        || v.ends_with(':')
        || v.chars().any(needs_escape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_quoting_style() {
        let m = parse_block(
            "version: \"3\"\nstatus: ok\ntitle: 'It''s'\nmodified: \"2026-02-17T10:00:00Z\"\n",
        )
        .unwrap();
        assert_eq!(m.get("version"), Some("3"));
        assert_eq!(m.get("status"), Some("ok"));
        assert_eq!(m.get("title"), Some("It's"));
        assert_eq!(m.get("modified"), Some("2026-02-17T10:00:00Z"));
    }

    #[test]
    fn never_coerces_plain_scalars() {
        let m = parse_block("a: 007\nb: yes\nc: 1e3\nd: 2026-01-01\ne: ~\n").unwrap();
        assert_eq!(
            m.iter().collect::<Vec<_>>(),
            vec![
                ("a", "007"),
                ("b", "yes"),
                ("c", "1e3"),
                ("d", "2026-01-01"),
                ("e", "~")
            ]
        );
    }

    #[test]
    fn quotes_what_yaml_would_coerce() {
        for (v, q) in [
            ("3", "\"3\""),
            ("true", "\"true\""),
            ("No", "\"No\""),
            ("-1.5", "\"-1.5\""),
            (".5", "\".5\""),
            ("2026-02-17T10:00:00Z", "\"2026-02-17T10:00:00Z\""),
            ("ok", "ok"),
            ("sha256-abc", "sha256-abc"),
            ("", "\"\""),
            (" padded", "\" padded\""),
            ("a: b", "\"a: b\""),
            ("a #b", "\"a #b\""),
            ("line\nbreak", "\"line\\nbreak\""),
            ("bell\u{7}", "\"bell\\u0007\""),
        ] {
            assert_eq!(quote(v), q, "quoting {v:?}");
            assert_eq!(unquote(&quote(v)).unwrap(), v);
        }
    }

    #[test]
    fn reads_every_double_quote_escape() {
        let m =
            parse_block(r#"k: "\n\t\r\0\a\b\e\f\v\ \"\\\/\N\_\L\P\x41\u00e9\U0001F600""#).unwrap();
        assert_eq!(
            m.get("k"),
            Some("\n\t\r\0\x07\x08\x1b\x0c\x0b \"\\/\u{85}\u{a0}\u{2028}\u{2029}Aé😀")
        );
    }

    #[test]
    fn rejects_bad_escapes_and_unbalanced_quotes() {
        for bad in [
            r#"k: "\q""#,
            r#"k: "\x4""#,
            r#"k: "\x+1""#,
            r#"k: "\uD800""#,
            "k: \"open",
            "k: 'open",
            r#"k: "a"b""#,
        ] {
            assert!(
                matches!(parse_block(bad), Err(WireError::BadQuoting(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn skips_comments_and_blank_lines() {
        let m =
            parse_block("# header\n\nstatus: ok # trailing\nnote: \"x\" # c\nurl: a#b\n").unwrap();
        assert_eq!(m.get("status"), Some("ok"));
        assert_eq!(m.get("note"), Some("x"));
        assert_eq!(m.get("url"), Some("a#b"));
    }

    #[test]
    fn splits_at_the_mapping_colon_only() {
        let m = parse_block("modified: 2026-02-17T10:00:00Z\n\"a: b\": c\nurl: mark://h:1/x\n")
            .unwrap();
        assert_eq!(m.get("modified"), Some("2026-02-17T10:00:00Z"));
        assert_eq!(m.get("a: b"), Some("c"));
        assert_eq!(m.get("url"), Some("mark://h:1/x"));
        assert!(matches!(
            parse_block("no colon here"),
            Err(WireError::BadMetadataLine(_))
        ));
        assert!(matches!(
            parse_block("key:value"),
            Err(WireError::BadMetadataLine(_))
        ));
        assert!(matches!(
            parse_block(": v"),
            Err(WireError::BadMetadataLine(_))
        ));
    }

    #[test]
    fn reads_literal_and_folded_block_scalars() {
        let m = parse_block(
            "a: |-\n  one\n  two\nb: |\n  x\n\n  y\nc: >\n  folded\n  text\n\n  para\nd: ok\n",
        )
        .unwrap();
        assert_eq!(m.get("a"), Some("one\ntwo"));
        assert_eq!(m.get("b"), Some("x\n\ny\n"));
        assert_eq!(m.get("c"), Some("folded text\npara\n"));
        assert_eq!(m.get("d"), Some("ok"));
        let kept = parse_block("k: |+\n  x\n\n").unwrap();
        assert_eq!(kept.get("k"), Some("x\n\n"));
    }

    #[test]
    fn folds_multi_line_flow_scalars() {
        let m = parse_block("msg: \"a long\n  message\"\nplain: first\n  second\n").unwrap();
        assert_eq!(m.get("msg"), Some("a long message"));
        assert_eq!(m.get("plain"), Some("first second"));
    }

    #[test]
    fn rejects_stray_indented_lines() {
        assert!(matches!(
            parse_block("  indented: x\n"),
            Err(WireError::BadMetadataLine(_))
        ));
    }

    #[test]
    fn accepts_crlf_lines() {
        let m = parse_block("status: ok\r\nversion: \"2\"\r\n").unwrap();
        assert_eq!(m.get("version"), Some("2"));
    }

    #[test]
    fn writes_only_plain_keys() {
        for bad in ["", "a:b", "#a", "-a", "a b", "\"a\"", "a\n"] {
            let m: Metadata = [(bad, "v")].into_iter().collect();
            assert!(
                matches!(write_block(&m), Err(WireError::BadMetadataKey(_))),
                "{bad:?}"
            );
        }
        let m: Metadata = [("if-none-match", "abc"), ("page_size", "2"), ("x.y", "z")]
            .into_iter()
            .collect();
        assert_eq!(
            write_block(&m).unwrap(),
            "if-none-match: abc\npage_size: \"2\"\nx.y: z\n"
        );
    }

    #[test]
    fn keeps_order_and_replaces_in_place() {
        let mut m = Metadata::new();
        m.insert("b", "1");
        m.insert("a", "2");
        m.insert("b", "3");
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![("b", "3"), ("a", "2")]);
        assert_eq!(m.remove("b"), Some("3".to_string()));
        assert_eq!(m.len(), 1);
        assert!(m.remove("b").is_none());
    }
}
