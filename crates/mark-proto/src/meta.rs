//! The metadata block: a flat map of string keys to string values, kept in
//! the order received, read and written with YAML's scalar quoting but never
//! YAML's type coercion.

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

/// Parses the lines between the `---` delimiters. Blank lines and `#`
/// comment lines are skipped; every other line is `key: value`.
pub(crate) fn parse_block(text: &str) -> Result<Metadata, WireError> {
    let mut meta = Metadata::new();
    for raw in text.split('\n') {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let (key, value) = line
            .split_once(':')
            .ok_or_else(|| WireError::BadMetadataLine(truncate(line)))?;
        let key = key.trim();
        if key.is_empty() {
            return Err(WireError::BadMetadataLine(truncate(line)));
        }
        meta.insert(unquote(key)?, unquote(value.trim())?);
    }
    Ok(meta)
}

/// Writes entries as `key: value` lines, quoting what YAML would coerce or
/// misread.
pub(crate) fn write_block(meta: &Metadata) -> Result<String, WireError> {
    let mut out = String::new();
    for (k, v) in meta.iter() {
        if k.is_empty() || k.contains([':', '\n', '\r']) || k.trim() != k {
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
        let inner = &v[1..v.len() - 1];
        let mut out = String::with_capacity(inner.len());
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('0') => out.push('\0'),
                Some('"') => out.push('"'),
                Some('\\') => out.push('\\'),
                Some('/') => out.push('/'),
                Some('x') => out.push(hex_char(&mut chars, 2)?),
                Some('u') => out.push(hex_char(&mut chars, 4)?),
                Some('U') => out.push(hex_char(&mut chars, 8)?),
                _ => return Err(WireError::BadQuoting(truncate(v))),
            }
        }
        return Ok(out);
    }
    Ok(v.to_string())
}

fn hex_char(chars: &mut std::str::Chars<'_>, n: usize) -> Result<char, WireError> {
    let digits: String = chars.by_ref().take(n).collect();
    u32::from_str_radix(&digits, 16)
        .ok()
        .and_then(char::from_u32)
        .ok_or_else(|| WireError::BadQuoting(digits))
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
            c if (c as u32) < 32 || c as u32 == 127 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn needs_quotes(v: &str) -> bool {
    if v.is_empty() || v.trim() != v {
        return true;
    }
    let lower = v.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n" | "null" | "~" | ".nan" | ".inf" | "-.inf" | "+.inf"
    ) {
        return true;
    }
    // Numbers (ints, floats, hex, octal) and dates/times start with a digit
    // or a sign followed by a digit.
    let first = v.as_bytes()[0];
    if first.is_ascii_digit() || ((first == b'-' || first == b'+' || first == b'.') && v.len() > 1 && v.as_bytes()[1].is_ascii_digit()) {
        return true;
    }
    if "!&*-?{}[],#|>@`\"'%:".contains(first as char) {
        return true;
    }
    v.contains(": ") || v.contains(" #") || v.ends_with(':') || v.chars().any(|c| c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_quoting_style() {
        let m = parse_block("version: \"3\"\nstatus: ok\ntitle: 'It''s'\nmodified: \"2026-02-17T10:00:00Z\"\n").unwrap();
        assert_eq!(m.get("version"), Some("3"));
        assert_eq!(m.get("status"), Some("ok"));
        assert_eq!(m.get("title"), Some("It's"));
        assert_eq!(m.get("modified"), Some("2026-02-17T10:00:00Z"));
    }

    #[test]
    fn quotes_what_yaml_would_coerce() {
        for (v, q) in [("3", "\"3\""), ("true", "\"true\""), ("2026-02-17T10:00:00Z", "\"2026-02-17T10:00:00Z\""), ("ok", "ok"), ("", "\"\"")] {
            assert_eq!(quote(v), q);
            assert_eq!(unquote(&quote(v)).unwrap(), v);
        }
    }

    #[test]
    fn keeps_order_and_replaces_in_place() {
        let mut m = Metadata::new();
        m.insert("b", "1");
        m.insert("a", "2");
        m.insert("b", "3");
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![("b", "3"), ("a", "2")]);
    }
}
