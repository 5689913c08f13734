//! LIST bodies: one markdown list item per entry, `- [name/](name/)` for a
//! directory and `- [name](name)` for a file, the name percent-encoded in
//! the link.
//!
//! ```
//! use mark_proto::list::{self, ListEntry};
//! let entries = vec![ListEntry::dir("notes"), ListEntry::file("read me.md")];
//! let body = list::write(&entries);
//! assert_eq!(body, "\n- [notes/](notes/)\n- [read me.md](read%20me.md)\n");
//! assert_eq!(list::parse(body.as_bytes()).unwrap(), entries);
//! ```

use percent_encoding::{percent_decode_str, utf8_percent_encode};

use crate::error::WireError;
use crate::markdown::{LINK_NAME, SPECIALS, bad_body, escape, excerpt, parse_item_lines};

const WHAT: &str = "LIST";

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ListEntry {
    /// The entry's name (decoded, without a trailing `/`).
    pub name: String,
    /// Whether the entry is a directory.
    pub is_dir: bool,
}

impl ListEntry {
    /// A file entry.
    pub fn file(name: impl Into<String>) -> ListEntry {
        ListEntry {
            name: name.into(),
            is_dir: false,
        }
    }

    /// A directory entry.
    pub fn dir(name: impl Into<String>) -> ListEntry {
        ListEntry {
            name: name.into(),
            is_dir: true,
        }
    }
}

/// Writes a LIST body. Like the reference server it starts with a blank
/// line. The link text shows the name with markdown brackets escaped and
/// line breaks as spaces; the link carries the exact name.
pub fn write(entries: &[ListEntry]) -> String {
    let mut out = String::from("\n");
    for entry in entries {
        let slash = if entry.is_dir { "/" } else { "" };
        let text = escape(&entry.name, SPECIALS);
        let link = utf8_percent_encode(&entry.name, LINK_NAME);
        out.push_str(&format!("- [{text}{slash}]({link}{slash})\n"));
    }
    out
}

/// Parses a LIST body. Every `- [` line must be an entry; other lines (blank
/// lines, the reference server's `# Index of /dir/` heading and its
/// `*...truncated, too many entries*` note) are skipped. The name comes from
/// the link (decoded); a link with a directory part (`dir/name`) gives its
/// last segment.
pub fn parse(body: &[u8]) -> Result<Vec<ListEntry>, WireError> {
    parse_item_lines(WHAT, body, "- [name](link)", parse_entry)
}

/// `None` when the line is not shaped like an entry; `Some(Err)` when its
/// link does not decode.
fn parse_entry(line: &str) -> Option<Result<ListEntry, WireError>> {
    let item = line.strip_prefix("- [")?.strip_suffix(')')?;
    let (_text, link) = item.rsplit_once("](")?;
    let (link, is_dir) = match link.strip_suffix('/') {
        Some(l) => (l, true),
        None => (link, false),
    };
    let raw_name = link.rsplit('/').next().unwrap_or(link);
    if raw_name.is_empty() {
        return None;
    }
    Some(
        percent_decode_str(raw_name)
            .decode_utf8()
            .map(|name| ListEntry {
                name: name.into_owned(),
                is_dir,
            })
            .map_err(|_| {
                bad_body(
                    WHAT,
                    format!("the link `{}` does not decode to UTF-8", excerpt(link)),
                )
            }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_directories_then_files_as_given() {
        let body = write(&[
            ListEntry::dir("a b"),
            ListEntry::file("x[1].md"),
            ListEntry::file("é.md"),
        ]);
        assert_eq!(
            body,
            "\n- [a b/](a%20b/)\n- [x\\[1\\].md](x%5B1%5D.md)\n- [é.md](%C3%A9.md)\n"
        );
    }

    #[test]
    fn reads_the_reference_layout() {
        let body =
            b"\n- [guides/](guides/)\n- [index.md](index.md)\n- [my notes.md](my%20notes.md)\n";
        assert_eq!(
            parse(body).unwrap(),
            vec![
                ListEntry::dir("guides"),
                ListEntry::file("index.md"),
                ListEntry::file("my notes.md")
            ]
        );
    }

    #[test]
    fn reads_the_reference_server_page_with_heading_and_truncation_note() {
        let body = b"\n# Index of /notes/\n\n- [\\_draft\\_.md](_draft_.md)\n- [old \\(2019\\)/](old%20%282019%29/)\n\n*...truncated, too many entries*\n";
        assert_eq!(
            parse(body).unwrap(),
            vec![ListEntry::file("_draft_.md"), ListEntry::dir("old (2019)")]
        );
        // Our writer escapes the link text as the reference does.
        assert_eq!(
            write(&[ListEntry::dir("old (2019)")]),
            "\n- [old \\(2019\\)/](old%20%282019%29/)\n"
        );
    }

    #[test]
    fn tolerates_blank_lines_headings_and_crlf() {
        let body = b"\r\n\r\n# /dir/\r\n\r\n- [a.md](a.md)\r\n\r\n";
        assert_eq!(parse(body).unwrap(), vec![ListEntry::file("a.md")]);
        assert!(parse(b"").unwrap().is_empty());
        assert!(parse(b"\n").unwrap().is_empty());
    }

    #[test]
    fn takes_the_last_segment_of_a_path_link() {
        assert_eq!(
            parse(b"- [sub/](/dir/sub/)\n").unwrap(),
            vec![ListEntry::dir("sub")]
        );
        assert_eq!(
            parse(b"- [a%2Fb](a%2Fb)\n").unwrap(),
            vec![ListEntry::file("a/b")]
        );
    }

    #[test]
    fn names_the_bad_line() {
        let err = parse(b"\n- [a.md](a.md)\n- [broken\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "malformed LIST body: line 3 is not `- [name](link)`: `- [broken`"
        );
        for bad in [
            &b"- [a.md](a.md"[..],
            b"- [a.md]()\n",
            b"- [d/](/)\n",
            b"- [a.md] (a.md)\n",
        ] {
            assert!(
                matches!(parse(bad), Err(WireError::BadBody { .. })),
                "{bad:?}"
            );
        }
        assert!(matches!(
            parse(b"- [x](%FF)\n"),
            Err(WireError::BadBody { .. })
        ));
        assert!(matches!(
            parse(b"- [x](\xff)\n"),
            Err(WireError::BadBody { .. })
        ));
    }
}
