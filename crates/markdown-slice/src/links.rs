//! Links and the resolution of their destinations.

use std::borrow::Cow;
use std::ops::Range;

use percent_encoding::percent_decode_str;
use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};

/// How a link was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkKind {
    /// `[text](dest)`
    Inline,
    /// `[text][ref]`, `[text][]` or `[text]`, with the definition resolved.
    Reference,
    /// `<https://example.com>`
    Autolink,
    /// `<someone@example.com>`; its [`Link::dest`] gets a `mailto:` prefix.
    Email,
    /// `[[Page]]`, `[[Page|text]]`, `[[Page#anchor]]` (never inside code).
    Wiki,
}

/// A link or image of the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Plain text of the link (an image's alt text; a wiki link's page name or the text
    /// after `|`).
    pub text: String,
    /// The destination as written (a reference link's definition resolved, markdown
    /// escapes removed), fragment included. A wiki link's destination is its page name.
    pub dest: String,
    /// The part after the first `#`, percent-decoded; `None` when there is no `#` or
    /// nothing after it.
    pub fragment: Option<String>,
    /// The byte range of the whole link in the source.
    pub range: Range<usize>,
    /// `true` for `![alt](src)`.
    pub is_image: bool,
    /// How it was written.
    pub kind: LinkKind,
}

impl Link {
    /// Resolves the destination against the path of the document holding the link (see
    /// [`resolve`]). A wiki link whose page name has no extension gets `.md`
    /// (`[[Page]]` in `/notes/a.md` → `/notes/Page.md`).
    pub fn resolve(&self, doc_path: &str) -> Target {
        let target = resolve(doc_path, &self.dest);
        match target {
            Target::Internal { path, fragment }
                if self.kind == LinkKind::Wiki && !path.ends_with('/') && !has_extension(&path) =>
            {
                Target::Internal {
                    path: format!("{path}.md"),
                    fragment,
                }
            }
            other => other,
        }
    }
}

fn has_extension(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rfind('.').is_some_and(|i| i > 0)
}

/// Where a link points.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// A document of the same site: an absolute, normalised, percent-decoded path, and the
    /// percent-decoded fragment.
    Internal {
        /// Starts with `/`; no `.`, `..` or empty segments.
        path: String,
        /// The anchor after `#`, if any.
        fragment: Option<String>,
    },
    /// Anything with a scheme (`https:`, `mailto:`, …) or starting with `//`, as written.
    External(String),
}

/// Resolves a link destination found in the document at `doc_path`.
///
/// - A destination with a URL scheme (two or more characters before `:`, so `C:` is not
///   one) or starting with `//` is external and returned as it is.
/// - `#x` alone and the empty destination point at `doc_path` itself.
/// - `/x.md` is site-absolute; anything else is relative to `doc_path`'s folder.
/// - The query (`?…`) is dropped; path and fragment are percent-decoded (left as written
///   when the decoded bytes are not UTF-8) and put in [`unicode_form`]; `.` and `..`
///   segments are removed. A `..` above
///   the root clamps at the root, as URL resolution does on the web (`/../x.md` → `/x.md`):
///   the store is the one that refuses paths outside itself.
///
/// ```
/// use markdown_slice::{resolve, Target};
/// assert_eq!(
///     resolve("/dir/doc.md", "../x.md#a"),
///     Target::Internal { path: "/x.md".into(), fragment: Some("a".into()) }
/// );
/// assert_eq!(resolve("/doc.md", "https://e.com/#a"), Target::External("https://e.com/#a".into()));
/// ```
pub fn resolve(doc_path: &str, destination: &str) -> Target {
    let destination = destination.trim();
    if is_external(destination) {
        return Target::External(destination.to_string());
    }
    let (before_fragment, fragment) = match destination.split_once('#') {
        Some((before, fragment)) => (before, Some(fragment)),
        None => (destination, None),
    };
    let path = before_fragment
        .split_once('?')
        .map_or(before_fragment, |(p, _)| p);
    let fragment = fragment
        .filter(|f| !f.is_empty())
        .map(|f| decode(f).into_owned());
    let path = if path.is_empty() {
        normalize(doc_path)
    } else {
        let path = decode(path);
        if path.starts_with('/') {
            normalize(&path)
        } else {
            let folder = doc_path.rfind('/').map_or("", |i| &doc_path[..i]);
            normalize(&format!("{folder}/{path}"))
        }
    };
    Target::Internal { path, fragment }
}

/// The percent-decoded part after the first `#` of a destination, if not empty.
pub(crate) fn fragment_of(destination: &str) -> Option<String> {
    destination
        .split_once('#')
        .map(|(_, f)| f)
        .filter(|f| !f.is_empty())
        .map(|f| decode(f).into_owned())
}

fn decode(text: &str) -> Cow<'_, str> {
    let decoded = percent_decode_str(text)
        .decode_utf8()
        .unwrap_or(Cow::Borrowed(text));
    match unicode_form(&decoded) {
        Cow::Borrowed(_) => decoded,
        Cow::Owned(nfc) => Cow::Owned(nfc),
    }
}

/// The one Unicode form of paths and anchors: NFC, as most systems write names (macOS
/// writes file names decomposed, NFD; `é` is then `e` + U+0301). Borrowed when the text
/// already is NFC, which a quick check tells for nearly all text.
///
/// ```
/// use markdown_slice::unicode_form;
/// assert_eq!(unicode_form("re\u{301}sume\u{301}.md"), "résumé.md");
/// ```
pub fn unicode_form(text: &str) -> Cow<'_, str> {
    if is_nfc_quick(text.chars()) == IsNormalized::Yes {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.nfc().collect())
    }
}

fn is_external(destination: &str) -> bool {
    if destination.starts_with("//") {
        return true;
    }
    let Some(colon) = destination.find(':') else {
        return false;
    };
    let scheme = &destination[..colon];
    scheme.len() >= 2
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// `/`-prefixed path without empty, `.` or `..` segments; a trailing `/` is kept.
fn normalize(path: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    let mut out = String::with_capacity(path.len() + 1);
    for segment in &segments {
        out.push('/');
        out.push_str(segment);
    }
    let names_folder = path.ends_with('/') || path.ends_with("/.") || path.ends_with("/..");
    if out.is_empty() || (names_folder && !segments.is_empty()) {
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn internal(path: &str, fragment: Option<&str>) -> Target {
        Target::Internal {
            path: path.to_string(),
            fragment: fragment.map(str::to_string),
        }
    }

    #[test]
    fn relative_paths() {
        assert_eq!(resolve("/dir/doc.md", "x.md"), internal("/dir/x.md", None));
        assert_eq!(
            resolve("/dir/doc.md", "./x.md"),
            internal("/dir/x.md", None)
        );
        assert_eq!(
            resolve("/dir/doc.md", "../x.md#a"),
            internal("/x.md", Some("a"))
        );
        assert_eq!(
            resolve("/a/b/c.md", "../../d/e/f.md"),
            internal("/d/e/f.md", None)
        );
        assert_eq!(
            resolve("/a/b/c.md", "sub/./deep/../g.md"),
            internal("/a/b/sub/g.md", None)
        );
        assert_eq!(resolve("doc.md", "x.md"), internal("/x.md", None));
        assert_eq!(resolve("/dir/doc.md", "sub/"), internal("/dir/sub/", None));
        assert_eq!(resolve("/dir/doc.md", ".."), internal("/", None));
    }

    #[test]
    fn percent_encoding_and_query() {
        assert_eq!(
            resolve("/d/doc.md", "my%20notes.md"),
            internal("/d/my notes.md", None)
        );
        assert_eq!(
            resolve("/doc.md", "x.md#%C3%BCber-uns"),
            internal("/x.md", Some("über-uns"))
        );
        assert_eq!(
            resolve("/doc.md", "x.md?raw=1#a"),
            internal("/x.md", Some("a"))
        );
        // Not UTF-8 once decoded: left as written.
        assert_eq!(
            resolve("/doc.md", "bad%FF.md"),
            internal("/bad%FF.md", None)
        );
        // Decomposed (NFD) names and anchors come out composed (NFC).
        assert_eq!(
            resolve("/doc.md", "re\u{301}sume\u{301}.md#caf%C3%A9"),
            internal("/résumé.md", Some("café"))
        );
        assert_eq!(
            resolve("/doc.md", "re%CC%81sume%CC%81.md#cafe\u{301}"),
            internal("/résumé.md", Some("café"))
        );
        // An encoded `..` is a `..` too, and still clamps.
        assert_eq!(
            resolve("/a/doc.md", "%2E%2E/%2E%2E/x.md"),
            internal("/x.md", None)
        );
    }

    #[test]
    fn fragment_only_and_empty_mean_this_document() {
        assert_eq!(
            resolve("/dir/doc.md", "#part"),
            internal("/dir/doc.md", Some("part"))
        );
        assert_eq!(resolve("/dir/doc.md", ""), internal("/dir/doc.md", None));
        assert_eq!(resolve("/dir/doc.md", "#"), internal("/dir/doc.md", None));
    }

    #[test]
    fn site_absolute_and_clamping_above_root() {
        assert_eq!(resolve("/dir/doc.md", "/x.md"), internal("/x.md", None));
        assert_eq!(
            resolve("/dir/doc.md", "/../../x.md"),
            internal("/x.md", None)
        );
        assert_eq!(
            resolve("/doc.md", "../../../etc/passwd"),
            internal("/etc/passwd", None)
        );
    }

    #[test]
    fn external_destinations_as_they_are() {
        for dest in [
            "https://nodejs.org/api/fs.html#x",
            "http://a",
            "mailto:someone@example.com",
            "//cdn.example.com/x.js",
            "ftp://x",
            "git+ssh://host/repo",
            "tel:+123",
        ] {
            assert_eq!(
                resolve("/doc.md", dest),
                Target::External(dest.to_string()),
                "{dest}"
            );
        }
        // A single letter before `:` is a drive letter or a name, not a scheme.
        assert_eq!(resolve("/d/doc.md", "c:x.md"), internal("/d/c:x.md", None));
        assert_eq!(resolve("/d/doc.md", "1a:x"), internal("/d/1a:x", None));
    }

    #[test]
    fn wiki_links_get_md_extension() {
        let link = |dest: &str| Link {
            text: String::new(),
            dest: dest.to_string(),
            fragment: fragment_of(dest),
            range: 0..0,
            is_image: false,
            kind: LinkKind::Wiki,
        };
        assert_eq!(
            link("Page").resolve("/notes/a.md"),
            internal("/notes/Page.md", None)
        );
        assert_eq!(
            link("Page#Sec").resolve("/a.md"),
            internal("/Page.md", Some("Sec"))
        );
        assert_eq!(link("img.png").resolve("/a.md"), internal("/img.png", None));
        assert_eq!(
            link("#local").resolve("/a.md"),
            internal("/a.md", Some("local"))
        );
    }
}
