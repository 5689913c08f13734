//! Request paths: percent-decoded exactly once, split into checked segments,
//! and mapped into the store root only after containment is proven.
//!
//! Every way out of the root answers `not-found`: `..` and `.` segments (also
//! percent-encoded), encoded separators (`%2f`, `%5c`), backslashes, NUL and
//! control characters, empty segments (`//etc`), and symlinks whose target
//! leaves the root (checked by canonicalizing).

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use std::path::{Path, PathBuf};

/// Characters left as they are in an encoded path segment (RFC 3986
/// unreserved); everything else is percent-encoded.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes one path segment for a link or a URL.
pub(crate) fn encode_segment(segment: &str) -> String {
    utf8_percent_encode(segment, SEGMENT).to_string()
}

/// A decoded, checked request path: `/a/b.md` is `["a", "b.md"]`; `/a/` is
/// `["a"]` with `dir_form`; `/` is no segments with `dir_form`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct SafePath {
    segments: Vec<String>,
    dir_form: bool,
}

impl SafePath {
    /// The root, `/`.
    pub(crate) fn root() -> SafePath {
        SafePath {
            segments: Vec::new(),
            dir_form: true,
        }
    }

    /// Decodes and checks a raw request path; `None` means `not-found`.
    pub(crate) fn parse(raw: &str) -> Option<SafePath> {
        let rest = raw.strip_prefix('/')?;
        if raw.contains('\\') {
            return None;
        }
        if rest.is_empty() {
            return Some(SafePath::root());
        }
        let (rest, dir_form) = match rest.strip_suffix('/') {
            Some(r) => (r, true),
            None => (rest, false),
        };
        let mut segments = Vec::new();
        for raw_segment in rest.split('/') {
            let segment = percent_decode_str(raw_segment).decode_utf8().ok()?;
            if !segment_is_safe(&segment) {
                return None;
            }
            segments.push(segment.into_owned());
        }
        Some(SafePath { segments, dir_form })
    }

    /// A path from already-decoded segments (from a directory walk).
    pub(crate) fn from_segments(segments: Vec<String>, dir_form: bool) -> Option<SafePath> {
        segments
            .iter()
            .all(|s| segment_is_safe(s))
            .then_some(SafePath { segments, dir_form })
    }

    /// The decoded segments.
    pub(crate) fn segments(&self) -> &[String] {
        &self.segments
    }

    /// Whether the request named a directory (`/dir/` or `/`).
    pub(crate) fn is_dir_form(&self) -> bool {
        self.dir_form
    }

    /// The last segment, if any.
    pub(crate) fn name(&self) -> Option<&str> {
        self.segments.last().map(String::as_str)
    }

    /// The parent path in directory form.
    pub(crate) fn parent(&self) -> SafePath {
        let mut segments = self.segments.clone();
        segments.pop();
        SafePath {
            segments,
            dir_form: true,
        }
    }

    /// This path with one more segment.
    pub(crate) fn child(&self, name: &str, dir_form: bool) -> SafePath {
        let mut segments = self.segments.clone();
        segments.push(name.to_string());
        SafePath { segments, dir_form }
    }

    /// The same path in document form (no trailing slash).
    pub(crate) fn as_document(&self) -> SafePath {
        SafePath {
            segments: self.segments.clone(),
            dir_form: false,
        }
    }

    /// Decoded text without a trailing slash: `/a/b.md`, `/` for the root.
    /// Used for auth globs and for sorting.
    pub(crate) fn decoded(&self) -> String {
        if self.segments.is_empty() {
            return "/".to_string();
        }
        let mut out = String::new();
        for s in &self.segments {
            out.push('/');
            out.push_str(s);
        }
        out
    }

    /// The percent-encoded path as it goes in links: `/my%20dir/doc.md`,
    /// with a trailing slash in directory form.
    pub(crate) fn encoded(&self) -> String {
        let mut out = String::new();
        for s in &self.segments {
            out.push('/');
            out.push_str(&encode_segment(s));
        }
        if self.dir_form || self.segments.is_empty() {
            out.push('/');
        }
        out
    }

    /// [`SafePath::under`], each name spelled as on disk: a name not there as
    /// written is looked up by its Unicode form (NFC), so `/résumé.md` finds
    /// the file a Mac named in NFD (`re\u{301}sume\u{301}.md`). Costs one
    /// `lstat` per segment, and a folder read only when a name is missing.
    pub(crate) fn on_disk(&self, root: &Path) -> PathBuf {
        let mut p = root.to_path_buf();
        for s in &self.segments {
            let exact = p.join(s);
            if std::fs::symlink_metadata(&exact).is_ok() {
                p = exact;
                continue;
            }
            let wanted = markdown_slice::unicode_form(s);
            let found = std::fs::read_dir(&p).ok().and_then(|entries| {
                entries.flatten().find_map(|e| {
                    let name = e.file_name();
                    let same = name
                        .to_str()
                        .is_some_and(|n| markdown_slice::unicode_form(n) == wanted);
                    same.then(|| e.path())
                })
            });
            p = found.unwrap_or(exact);
        }
        p
    }

    /// Whether `self` lies at or under `scope` (segment-wise prefix).
    pub(crate) fn starts_with(&self, scope: &SafePath) -> bool {
        self.segments.starts_with(&scope.segments)
    }

    /// The file-system path under `root` (not yet checked for containment).
    pub(crate) fn under(&self, root: &Path) -> PathBuf {
        let mut p = root.to_path_buf();
        for s in &self.segments {
            p.push(s);
        }
        p
    }
}

/// A segment is safe when it is a plain file name: not empty, not `.` or
/// `..`, no separator of any platform, no NUL or control character.
fn segment_is_safe(segment: &str) -> bool {
    !segment.is_empty()
        && segment != "."
        && segment != ".."
        && !segment.contains(['/', '\\'])
        && !segment.chars().any(char::is_control)
}

/// Whether `path` exists and its canonical form (symlinks resolved) lies
/// inside `root`, which must already be canonical.
pub(crate) fn is_contained(root: &Path, path: &Path) -> bool {
    match path.canonicalize() {
        Ok(canonical) => canonical.starts_with(root),
        Err(_) => false,
    }
}

/// Whether `path` may be served from a flat root: it is contained (see
/// [`is_contained`]) and its canonical form has no hidden segment below
/// `root`, so a symlink `notes.md -> .secret.md` is not a way in.
pub(crate) fn is_servable(root: &Path, path: &Path) -> bool {
    servable_canonical(root, path).is_some()
}

/// The canonical form of `path` when it [`is_servable`].
pub(crate) fn servable_canonical(root: &Path, path: &Path) -> Option<PathBuf> {
    let canonical = path.canonicalize().ok()?;
    let below = canonical.strip_prefix(root).ok()?;
    below
        .components()
        .all(|c| !c.as_os_str().to_string_lossy().starts_with('.'))
        .then_some(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_found_in_any_unicode_form() {
        let root = tempfile::tempdir().unwrap();
        let nfd = "re\u{301}sume\u{301}";
        std::fs::create_dir(root.path().join(nfd)).unwrap();
        std::fs::write(root.path().join(nfd).join("caf\u{e9}.md"), "x").unwrap();
        let p = SafePath::parse("/r%C3%A9sum%C3%A9/cafe%CC%81.md").unwrap();
        assert_eq!(
            p.on_disk(root.path()),
            root.path().join(nfd).join("caf\u{e9}.md")
        );
        let missing = SafePath::parse("/r%C3%A9sum%C3%A9/new.md").unwrap();
        assert_eq!(
            missing.on_disk(root.path()),
            root.path().join(nfd).join("new.md")
        );
    }

    #[test]
    fn decodes_each_segment_once() {
        let p = SafePath::parse("/my%20dir/doc%25202.md").unwrap();
        assert_eq!(p.segments(), ["my dir", "doc%202.md"]);
        assert_eq!(p.decoded(), "/my dir/doc%202.md");
        assert_eq!(p.encoded(), "/my%20dir/doc%25202.md");
        assert!(!p.is_dir_form());
    }

    #[test]
    fn directory_forms() {
        assert_eq!(SafePath::parse("/").unwrap(), SafePath::root());
        let d = SafePath::parse("/a/b/").unwrap();
        assert!(d.is_dir_form());
        assert_eq!(d.encoded(), "/a/b/");
        assert_eq!(d.decoded(), "/a/b");
        assert_eq!(
            SafePath::parse("/a/b.md").unwrap().parent(),
            SafePath::parse("/a/").unwrap()
        );
    }

    #[test]
    fn rejects_every_traversal_form() {
        for raw in [
            "/../etc/passwd",
            "/a/../../b",
            "/a/./b",
            "/%2e%2e/etc/passwd",
            "/%2E%2E/x",
            "/a%2f..%2f..%2fetc",
            "/a%2fb",
            "/a%5cb",
            "/a\\b",
            "/..\\x",
            "/a%00.md",
            "/a%0a.md",
            "//etc/passwd",
            "/a//b",
            "etc/passwd",
            "",
            "/%ff.md",
        ] {
            assert_eq!(SafePath::parse(raw), None, "{raw} must be refused");
        }
    }

    #[test]
    fn double_encoding_stays_a_literal_name() {
        let p = SafePath::parse("/%252e%252e/x").unwrap();
        assert_eq!(p.segments(), ["%2e%2e", "x"]);
    }

    #[test]
    fn prefix_is_segment_wise() {
        let a = SafePath::parse("/docs/a.md").unwrap();
        assert!(a.starts_with(&SafePath::parse("/docs/").unwrap()));
        assert!(a.starts_with(&SafePath::root()));
        assert!(!a.starts_with(&SafePath::parse("/doc").unwrap()));
    }

    proptest::proptest! {
        #[test]
        fn accepted_paths_never_climb(raw in "/[a-z.%25/\\\\2eEfFcC0-9]{0,24}") {
            if let Some(p) = SafePath::parse(&raw) {
                let root = Path::new("/root");
                let fs = p.under(root);
                proptest::prop_assert!(fs.starts_with(root));
                proptest::prop_assert!(fs.components().all(|c| matches!(c, std::path::Component::RootDir | std::path::Component::Normal(_))));
                // Encoding and parsing again gives the same path.
                proptest::prop_assert_eq!(SafePath::parse(&p.encoded()), Some(p));
            }
        }
    }

    #[test]
    fn containment_follows_symlinks() {
        let outside = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let root_c = root.path().canonicalize().unwrap();
        std::fs::write(root.path().join("in.md"), "x").unwrap();
        assert!(is_contained(&root_c, &root.path().join("in.md")));
        assert!(!is_contained(&root_c, &root.path().join("missing.md")));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outside.path(), root.path().join("out")).unwrap();
            assert!(!is_contained(&root_c, &root.path().join("out")));
        }
    }

    #[test]
    fn a_symlink_to_a_hidden_file_is_not_servable() {
        let root = tempfile::tempdir().unwrap();
        let root_c = root.path().canonicalize().unwrap();
        std::fs::write(root.path().join("in.md"), "x").unwrap();
        std::fs::create_dir(root.path().join(".git")).unwrap();
        std::fs::write(root.path().join(".secret.md"), "s").unwrap();
        std::fs::write(root.path().join(".git/c.md"), "s").unwrap();
        assert!(is_servable(&root_c, &root.path().join("in.md")));
        #[cfg(unix)]
        {
            use std::os::unix::fs::symlink;
            symlink(root.path().join(".secret.md"), root.path().join("a.md")).unwrap();
            symlink(root.path().join(".git/c.md"), root.path().join("b.md")).unwrap();
            assert!(is_contained(&root_c, &root.path().join("a.md")));
            assert!(!is_servable(&root_c, &root.path().join("a.md")));
            assert!(!is_servable(&root_c, &root.path().join("b.md")));
        }
    }
}
