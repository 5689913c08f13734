//! VERSIONS bodies: one line per version, newest first:
//! `- [vN](/path/vN) - <RFC 3339>`. The reference server opens the body
//! with a `# Version History: /path` heading and escapes the whole path in
//! the link (`%2Fpath/vN`); both are read.
//!
//! ```
//! use mark_proto::versions::{self, VersionEntry};
//! let entries = vec![VersionEntry::new("/doc.md", 2, "2026-02-17T10:00:00Z")];
//! let body = versions::write(&entries).unwrap();
//! assert_eq!(body, "- [v2](/doc.md/v2) - 2026-02-17T10:00:00Z\n");
//! assert_eq!(versions::parse(body.as_bytes()).unwrap(), entries);
//! ```

use percent_encoding::percent_decode_str;

use crate::error::WireError;
use crate::markdown::{bad_body, excerpt, is_rfc3339, parse_item_lines};
use crate::message::check_path;

const WHAT: &str = "VERSIONS";

/// One version of a document.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VersionEntry {
    /// The document's path, without the `/vN` suffix.
    pub path: String,
    /// The version number (from 1).
    pub version: u64,
    /// When the version was written, RFC 3339.
    pub modified: String,
}

impl VersionEntry {
    /// An entry for `path` version `version` written at `modified`.
    pub fn new(path: impl Into<String>, version: u64, modified: impl Into<String>) -> VersionEntry {
        VersionEntry {
            path: path.into(),
            version,
            modified: modified.into(),
        }
    }

    /// The path that fetches this version: `/path/vN`.
    pub fn link(&self) -> String {
        format!("{}/v{}", self.path, self.version)
    }
}

/// Writes a VERSIONS body in the order given (the protocol lists newest
/// first). Each entry needs a valid request path, a version from 1 and an
/// RFC 3339 time.
pub fn write(entries: &[VersionEntry]) -> Result<String, WireError> {
    let mut out = String::new();
    for entry in entries {
        check_path(&entry.path)?;
        if entry.version == 0 {
            return Err(bad_body(
                WHAT,
                format!("{} has version 0; versions start at 1", entry.path),
            ));
        }
        if !is_rfc3339(&entry.modified) {
            return Err(bad_body(
                WHAT,
                format!("`{}` is not an RFC 3339 time", excerpt(&entry.modified)),
            ));
        }
        out.push_str(&format!(
            "- [v{}]({}) - {}\n",
            entry.version,
            entry.link(),
            entry.modified
        ));
    }
    Ok(out)
}

/// Parses a VERSIONS body: every `- [` line must be a version line; other
/// lines (blank, headings) are skipped.
pub fn parse(body: &[u8]) -> Result<Vec<VersionEntry>, WireError> {
    parse_item_lines(WHAT, body, "- [vN](/path/vN) - <RFC 3339 time>", |line| {
        parse_line(line).map(Ok)
    })
}

fn parse_line(line: &str) -> Option<VersionEntry> {
    let rest = line.strip_prefix("- [v")?;
    let (number, rest) = rest.split_once("](")?;
    let (link, modified) = rest.rsplit_once(") - ")?;
    if number.is_empty() || number.starts_with('0') || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let version: u64 = number.parse().ok()?;
    let path = link_path(link.strip_suffix(&format!("/v{number}"))?)?;
    let modified = modified.trim();
    if !is_rfc3339(modified) {
        return None;
    }
    Some(VersionEntry::new(path, version, modified))
}

/// The document path of a link: a request path as written (`/a.md`), or the
/// whole path percent-escaped as the reference server writes it
/// (`%2Fdocs%2Fa.md`), decoded.
fn link_path(link: &str) -> Option<String> {
    if link.starts_with('/') {
        return check_path(link).is_ok().then(|| link.to_string());
    }
    let decoded = percent_decode_str(link).decode_utf8().ok()?;
    (decoded.starts_with('/') && !decoded.contains(|c: char| c.is_control()))
        .then(|| decoded.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_newest_first_as_given() {
        let body = b"- [v3](/notes/a.md/v3) - 2026-02-17T10:00:00Z\n- [v2](/notes/a.md/v2) - 2026-02-16T09:00:00Z\n- [v1](/notes/a.md/v1) - 2026-02-15T08:00:00+01:00\n";
        let got = parse(body).unwrap();
        assert_eq!(
            got.iter().map(|e| e.version).collect::<Vec<_>>(),
            vec![3, 2, 1]
        );
        assert!(got.iter().all(|e| e.path == "/notes/a.md"));
        assert_eq!(got[2].modified, "2026-02-15T08:00:00+01:00");
        assert_eq!(write(&got).unwrap().as_bytes(), body);
    }

    #[test]
    fn reads_the_reference_server_layout() {
        // Heading, and the whole path escaped in the link.
        let body = b"\n# Version History: /notes/a b.md\n\n- [v2](%2Fnotes%2Fa%20b.md/v2) - 2026-01-02T00:00:00Z\n- [v1](%2Fnotes%2Fa%20b.md/v1) - 2026-01-01T00:00:00Z\n";
        assert_eq!(
            parse(body).unwrap(),
            vec![
                VersionEntry::new("/notes/a b.md", 2, "2026-01-02T00:00:00Z"),
                VersionEntry::new("/notes/a b.md", 1, "2026-01-01T00:00:00Z"),
            ]
        );
    }

    #[test]
    fn tolerates_blank_lines_and_headings() {
        let body = b"\n# History\n\n- [v1](/a.md/v1) - 2026-02-15T08:00:00Z\r\n\n";
        assert_eq!(
            parse(body).unwrap(),
            vec![VersionEntry::new("/a.md", 1, "2026-02-15T08:00:00Z")]
        );
    }

    #[test]
    fn link_must_match_the_version() {
        for bad in [
            &b"- [v2](/a.md/v3) - 2026-02-15T08:00:00Z\n"[..],
            b"- [v0](/a.md/v0) - 2026-02-15T08:00:00Z\n",
            b"- [v01](/a.md/v01) - 2026-02-15T08:00:00Z\n",
            b"- [v1](/v1) - 2026-02-15T08:00:00Z\n",
            b"- [v1](a.md/v1) - 2026-02-15T08:00:00Z\n",
            b"- [v1](/a.md/v1) - yesterday\n",
            b"- [v1](/a.md/v1)\n",
            b"- [v99999999999999999999](/a.md/v99999999999999999999) - 2026-02-15T08:00:00Z\n",
            b"- [v1](%2Fa.md%0A/v1) - 2026-02-15T08:00:00Z\n",
            b"- [v1](%FF/v1) - 2026-02-15T08:00:00Z\n",
        ] {
            assert!(
                matches!(parse(bad), Err(WireError::BadBody { .. })),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn names_the_bad_line() {
        let err = parse(b"- [v1](/a.md/v1) - 2026-02-15T08:00:00Z\n- [v0] oops\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "malformed VERSIONS body: line 2 is not `- [vN](/path/vN) - <RFC 3339 time>`: `- [v0] oops`"
        );
    }

    #[test]
    fn write_checks_its_input() {
        assert!(matches!(
            write(&[VersionEntry::new("a.md", 1, "2026-02-15T08:00:00Z")]),
            Err(WireError::BadPath(_))
        ));
        assert!(matches!(
            write(&[VersionEntry::new("/a.md", 0, "2026-02-15T08:00:00Z")]),
            Err(WireError::BadBody { .. })
        ));
        assert!(matches!(
            write(&[VersionEntry::new("/a.md", 1, "now")]),
            Err(WireError::BadBody { .. })
        ));
        assert_eq!(write(&[]).unwrap(), "");
    }
}
