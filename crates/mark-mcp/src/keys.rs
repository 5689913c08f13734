//! One key per document, whatever spelling an agent writes.
//!
//! `/notes/Alpha Note.md`, `/notes/Alpha%20Note.md` and a decomposed (NFD)
//! `/re\u{301}sume\u{301}.md` each name one document; [`document_key`] gives
//! each its one request path, the key of the session cache and the delivery
//! log and the path every request carries. The link graph keeps the same
//! paths percent-decoded ([`graph_key`]), as markdown-slice resolves links;
//! [`wire_path`] turns a graph path back into the key, so the two forms map
//! one to one.

use std::borrow::Cow;

use percent_encoding::{percent_decode_str, utf8_percent_encode};

use crate::list::NAME;

/// The key of the document (or folder) `path` names: each segment
/// percent-decoded once, put in NFC ([`markdown_slice::unicode_form`]), and
/// encoded again the way `mark_list` writes names (space, `#`, `%`, `?`,
/// controls and non-ASCII bytes escaped). A trailing `/` (a folder) and a `/vN` version
/// suffix are kept as written.
///
/// Refused, with a sentence saying what to write instead: an escape that
/// decodes to a `/` or `\` inside one name (no file is named so; the
/// engine would answer `not-found` while the graph found `/a/b.md`), and
/// bytes that are not UTF-8 once decoded, and control characters (the
/// protocol's request line cannot carry them).
pub fn document_key(path: &str) -> Result<String, String> {
    let mut key = String::with_capacity(path.len() + 8);
    for (i, raw) in path.split('/').enumerate() {
        if i > 0 {
            key.push('/');
        }
        let decoded = percent_decode_str(raw)
            .decode_utf8()
            .map_err(|_| format!("`{raw}` is not UTF-8 once its %-escapes are decoded"))?;
        if decoded.chars().any(char::is_control) {
            return Err("a name in it holds a control character; no document is named so".into());
        }
        if decoded.contains(['/', '\\']) {
            return Err(format!(
                "`{raw}` encodes a `/` or `\\` inside one name; write the path's own `/` instead"
            ));
        }
        let name = markdown_slice::unicode_form(&decoded);
        key.extend(utf8_percent_encode(&name, NAME));
    }
    Ok(key)
}

/// A key as the graph holds it: percent-decoded (the graph holds the
/// decoded paths markdown-slice resolves links to).
pub fn graph_key(key: &str) -> Cow<'_, str> {
    percent_decode_str(key)
        .decode_utf8()
        .unwrap_or(Cow::Borrowed(key))
}

/// A graph path as its key and request path: each segment percent-encoded
/// the way `mark_list` writes names, so spaces and `#` survive the trip.
pub fn wire_path(path: &str) -> String {
    path.split('/')
        .map(|seg| utf8_percent_encode(seg, NAME).to_string())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_a_document_has_one_key() {
        for (spellings, key) in [
            (
                &["/notes/Alpha Note.md", "/notes/Alpha%20Note.md"][..],
                "/notes/Alpha%20Note.md",
            ),
            (
                &[
                    "/résumé.md",
                    "/re\u{301}sume\u{301}.md",
                    "/r%C3%A9sum%C3%A9.md",
                ],
                "/r%C3%A9sum%C3%A9.md",
            ),
            (&["/hash%23name.md"], "/hash%23name.md"),
            (&["/q%3Fname.md", "/q?name.md"], "/q%3Fname.md"),
            (&["/pct%2520name.md"], "/pct%2520name.md"),
            (&["/100%.md", "/100%25.md"], "/100%25.md"),
            (&["/dir/", "/dir/"], "/dir/"),
            (&["/doc.md/v2"], "/doc.md/v2"),
        ] {
            for spelling in spellings {
                assert_eq!(document_key(spelling).as_deref(), Ok(key), "{spelling}");
            }
            // The graph's form and back give the key again.
            assert_eq!(wire_path(&graph_key(key)), key);
        }
    }

    #[test]
    fn an_escaped_separator_is_refused_with_what_to_write() {
        for bad in ["/a%2Fb.md", "/a%2fb.md", "/a%5Cb.md"] {
            let e = document_key(bad).unwrap_err();
            assert!(e.contains("write the path's own `/`"), "{e}");
        }
        assert!(document_key("/bad%FF.md").is_err());
        assert!(document_key("/a\u{7}.md").is_err());
        assert!(document_key("/a%00.md").is_err());
    }
}
