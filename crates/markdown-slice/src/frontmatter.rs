//! The leading YAML frontmatter block.

use std::collections::BTreeMap;
use std::ops::Range;

use yaml_serde::Value;

/// A YAML frontmatter block split off the start of a document.
///
/// The block opens with a `---` line as the very first line (after an optional byte-order
/// mark), followed right away by a YAML mapping line (`key:` or `key: value`), and closes
/// with a `---` or `...` line. A blank line, a heading or any other text after the opening
/// `---` makes it a thematic break, part of the body. A block that opens like this is split
/// off even when its YAML is invalid (then [`Frontmatter::yaml_error`] says why and no
/// fields are set), so it is never taken for a setext heading.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Frontmatter {
    /// `title:` as a string, if present and a scalar.
    pub title: Option<String>,
    /// `tags:` as a YAML list or a comma-separated string, a leading `#` dropped; empty
    /// when absent.
    pub tags: Vec<String>,
    /// `aliases:` and `alias:` (Obsidian's older key), each a YAML list or a
    /// comma-separated string: other names of the note; empty when absent.
    pub aliases: Vec<String>,
    /// Every other top-level key, with its value rendered as a string (scalars as written,
    /// lists of scalars joined with `, `, anything else as compact YAML).
    pub extra: BTreeMap<String, String>,
    /// The byte range of the whole block in the source, delimiter lines included.
    pub range: Range<usize>,
    /// Why the YAML could not be read as a mapping, when it could not.
    pub yaml_error: Option<String>,
}

/// Splits a leading frontmatter block off `source`. Returns it and the byte offset where
/// the markdown body begins: after the block, else after a byte-order mark (which would
/// otherwise hide a first-line heading from the parser), else 0.
pub(crate) fn split(source: &str) -> (Option<Frontmatter>, usize) {
    let start = if source.starts_with('\u{FEFF}') {
        '\u{FEFF}'.len_utf8()
    } else {
        0
    };
    let mut lines = Lines { source, pos: start };
    let Some(first) = lines.next() else {
        return (None, start);
    };
    if first.text.trim_end_matches([' ', '\t']) != "---" {
        return (None, start);
    }
    let yaml_start = first.end;
    // A rule at the top of a document (`---`, a blank line, `# Title`) is not frontmatter.
    if !lines.next().is_some_and(|line| is_mapping_line(line.text)) {
        return (None, start);
    }
    for line in lines {
        let trimmed = line.text.trim_end_matches([' ', '\t']);
        if trimmed == "---" || trimmed == "..." {
            let yaml = &source[yaml_start..line.start];
            let mut frontmatter = read_yaml(yaml);
            frontmatter.range = 0..line.end;
            return (Some(frontmatter), line.end);
        }
    }
    (None, start)
}

/// Whether `line` opens a YAML mapping entry: a key at the line's start (plain or
/// quoted, not a comment, list item or markdown heading) followed by `:` and then white
/// space or the line's end.
fn is_mapping_line(line: &str) -> bool {
    let Some(first) = line.chars().next() else {
        return false;
    };
    if first.is_whitespace() || matches!(first, '#' | '-' | ':' | '>' | '|' | '[' | '{') {
        return false;
    }
    line.match_indices(':').any(|(i, _)| {
        i > 0
            && line[i + 1..]
                .chars()
                .next()
                .is_none_or(|c| c == ' ' || c == '\t')
    })
}

/// One line of the source: its text without the line break, and where it starts and ends
/// (the end includes the line break).
struct Line<'a> {
    text: &'a str,
    start: usize,
    end: usize,
}

struct Lines<'a> {
    source: &'a str,
    pos: usize,
}

impl<'a> Iterator for Lines<'a> {
    type Item = Line<'a>;

    fn next(&mut self) -> Option<Line<'a>> {
        let rest = self.source.get(self.pos..)?;
        if rest.is_empty() {
            return None;
        }
        let start = self.pos;
        // CommonMark line endings: `\n`, `\r\n` and a lone `\r`.
        let (text, len) = match rest.find(['\n', '\r']) {
            Some(i) if rest[i..].starts_with("\r\n") => (&rest[..i], i + 2),
            Some(i) => (&rest[..i], i + 1),
            None => (rest, rest.len()),
        };
        self.pos += len;
        Some(Line {
            text,
            start,
            end: self.pos,
        })
    }
}

fn read_yaml(yaml: &str) -> Frontmatter {
    let mut frontmatter = Frontmatter::default();
    if yaml.trim().is_empty() {
        return frontmatter;
    }
    let mapping = match yaml_serde::from_str::<Value>(yaml) {
        Ok(Value::Mapping(mapping)) => mapping,
        Ok(_) => {
            frontmatter.yaml_error = Some("frontmatter is not a YAML mapping".to_string());
            return frontmatter;
        }
        Err(err) => {
            frontmatter.yaml_error = Some(err.to_string());
            return frontmatter;
        }
    };
    for (key, value) in mapping {
        let Some(key) = scalar(&key) else { continue };
        match key.as_str() {
            "title" => frontmatter.title = scalar(&value),
            "tags" => {
                frontmatter.tags = string_list(&value)
                    .into_iter()
                    .map(|t| t.trim_start_matches('#').to_string())
                    .filter(|t| !t.is_empty())
                    .collect();
            }
            "aliases" | "alias" => frontmatter.aliases.extend(string_list(&value)),
            _ => {
                frontmatter.extra.insert(key, render(&value));
            }
        }
    }
    frontmatter
}

/// A scalar value as a string; `None` for null, lists and mappings.
fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Tagged(tagged) => scalar(&tagged.value),
        Value::Null | Value::Sequence(_) | Value::Mapping(_) => None,
    }
}

/// A YAML list of scalars, or a comma-separated string, as trimmed non-empty strings.
fn string_list(value: &Value) -> Vec<String> {
    match value {
        Value::Sequence(items) => items
            .iter()
            .filter_map(scalar)
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect(),
        other => scalar(other)
            .map(|s| {
                s.split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn render(value: &Value) -> String {
    if let Some(s) = scalar(value) {
        return s;
    }
    match value {
        Value::Null => String::new(),
        Value::Sequence(items) if items.iter().all(|i| scalar(i).is_some()) => items
            .iter()
            .filter_map(scalar)
            .collect::<Vec<_>>()
            .join(", "),
        other => yaml_serde::to_string(other)
            .map(|s| s.trim_end().to_string())
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_title_tags_and_extra() {
        let src = "---\ntitle: Hello\ntags: [a, b]\nauthor: Ann\ndraft: true\n---\n# Body\n";
        let (fm, body) = split(src);
        let fm = fm.unwrap();
        assert_eq!(fm.title.as_deref(), Some("Hello"));
        assert_eq!(fm.tags, ["a", "b"]);
        assert_eq!(fm.extra["author"], "Ann");
        assert_eq!(fm.extra["draft"], "true");
        assert_eq!(&src[body..], "# Body\n");
        assert_eq!(fm.range, 0..body);
        assert_eq!(fm.yaml_error, None);
    }

    #[test]
    fn aliases_and_alias_as_list_or_string_and_tags_without_hash() {
        let src = "---\naliases: [Start page, Front]\nalias: Home base\ntags: '#a, b'\n---\n";
        let fm = split(src).0.unwrap();
        assert_eq!(fm.aliases, ["Start page", "Front", "Home base"]);
        assert_eq!(fm.tags, ["a", "b"]);
        assert!(fm.extra.is_empty(), "{:?}", fm.extra);
    }

    #[test]
    fn tags_as_comma_string_and_dots_closer_and_crlf() {
        let src = "---\r\ntags: x, y ,, z\r\nlist: [1, 2]\r\nmap: {k: v}\r\n...\r\nrest";
        let (fm, body) = split(src);
        let fm = fm.unwrap();
        assert_eq!(fm.tags, ["x", "y", "z"]);
        assert_eq!(fm.extra["list"], "1, 2");
        assert_eq!(fm.extra["map"], "k: v");
        assert_eq!(&src[body..], "rest");
        let (fm, body) = split("---\rtitle: cr\r---\rrest");
        assert_eq!(fm.unwrap().title.as_deref(), Some("cr"));
        assert_eq!(body, "---\rtitle: cr\r---\r".len());
    }

    #[test]
    fn bad_yaml_is_still_split_off_without_fields() {
        let src = "---\ntitle: [unclosed\n---\ntext\n";
        let (fm, body) = split(src);
        let fm = fm.unwrap();
        assert_eq!(fm.title, None);
        assert!(fm.yaml_error.is_some());
        assert_eq!(&src[body..], "text\n");
    }

    #[test]
    fn not_frontmatter_without_closer_or_when_not_first() {
        assert_eq!(split("---\ntitle: x\n").1, 0);
        assert_eq!(split("\u{FEFF}# x\n").1, 3);
        assert!(split("\n---\ntitle: x\n---\n").0.is_none());
        assert!(split("--- \nx: 1\n---").0.is_some());
        assert!(split("----\nx: 1\n----\n").0.is_none());
        assert!(split("").0.is_none());
    }

    #[test]
    fn byte_order_mark_before_the_block() {
        let src = "\u{FEFF}---\ntitle: B\n---\nbody";
        let (fm, body) = split(src);
        assert_eq!(fm.unwrap().title.as_deref(), Some("B"));
        assert_eq!(&src[body..], "body");
    }

    #[test]
    fn a_rule_followed_by_anything_but_a_mapping_line_is_body() {
        for src in [
            "---\n\n# Title Under Rule\nIntro text.\n---\n## Later\n",
            "---\n# Title\n---\n",
            "---\n---\n",
            "---\njust text\n---\n",
            "---\n- item\n---\n",
            "---\n  indented: 1\n---\n",
            "---\nhttp://x.org\n---\n",
        ] {
            assert_eq!(split(src), (None, 0), "{src:?}");
        }
    }

    #[test]
    fn mapping_lines() {
        for line in [
            "title:",
            "title: x",
            "\"quoted key\": 1",
            "a b: c",
            "k:\tv",
            "url: http://x",
        ] {
            assert!(is_mapping_line(line), "{line:?}");
        }
        for line in [
            "", " x: 1", "# x: 1", "- x: 1", "http://x", "text", ":x", "a:b",
        ] {
            assert!(!is_mapping_line(line), "{line:?}");
        }
    }
}
