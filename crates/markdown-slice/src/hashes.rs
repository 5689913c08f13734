//! Per-section content hashes and what changed between two versions.

use crate::document::Document;
use std::collections::HashMap;

/// A blake3 hash of each section's own text, keyed by anchor, plus the preamble's.
///
/// A section's own text runs from its heading line to the next anchored heading of any
/// level, so a change deep in a subsection marks only that subsection as changed. The text
/// of a heading without an anchor counts towards the section before it. The preamble hash
/// covers everything before the first anchored heading, frontmatter included.
///
/// Owned, cheap to clone and store: 32 bytes and the anchor per section.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct SectionHashes {
    /// Hash of the text before the first anchored heading.
    pub preamble: [u8; 32],
    /// `(anchor, hash)` in document order; anchors are unique.
    pub sections: Vec<(String, [u8; 32])>,
}

impl SectionHashes {
    /// The hash of the section with this anchor (a linear search: for many
    /// lookups build [`SectionHashes::by_anchor`] once).
    pub fn get(&self, anchor: &str) -> Option<&[u8; 32]> {
        self.sections
            .iter()
            .find(|(a, _)| a == anchor)
            .map(|(_, h)| h)
    }

    /// The hashes keyed by anchor, for lookups in constant time.
    pub fn by_anchor(&self) -> HashMap<&str, &[u8; 32]> {
        self.sections.iter().map(|(a, h)| (a.as_str(), h)).collect()
    }
}

/// Which sections differ between two versions of a document.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SectionDiff {
    /// Anchors in both versions whose own text changed, in the new document's order.
    pub changed: Vec<String>,
    /// Anchors only in the new version, in its order.
    pub added: Vec<String>,
    /// Anchors only in the old version, in its order.
    pub removed: Vec<String>,
    /// Whether the text before the first anchored heading (frontmatter included) changed.
    pub preamble_changed: bool,
}

impl SectionDiff {
    /// `true` when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty()
            && self.added.is_empty()
            && self.removed.is_empty()
            && !self.preamble_changed
    }
}

impl<S: AsRef<str>> Document<S> {
    /// The per-section hashes of this document (see [`SectionHashes`]).
    pub fn section_hashes(&self) -> SectionHashes {
        let source = self.source();
        let anchored: Vec<(&str, usize)> = self
            .headings()
            .iter()
            .filter_map(|h| h.anchor.as_deref().map(|a| (a, h.line.start)))
            .collect();
        let first = anchored.first().map_or(source.len(), |&(_, start)| start);
        let hash = |text: &str| *blake3::hash(text.as_bytes()).as_bytes();
        let sections = anchored
            .iter()
            .enumerate()
            .map(|(i, &(anchor, start))| {
                let end = anchored.get(i + 1).map_or(source.len(), |&(_, next)| next);
                (anchor.to_string(), hash(&source[start..end]))
            })
            .collect();
        SectionHashes {
            preamble: hash(&source[..first]),
            sections,
        }
    }
}

/// What changed from `old` to `new`, in time linear in their sections.
pub fn diff_sections(old: &SectionHashes, new: &SectionHashes) -> SectionDiff {
    let mut diff = SectionDiff {
        preamble_changed: old.preamble != new.preamble,
        ..Default::default()
    };
    let (old_map, new_map) = (old.by_anchor(), new.by_anchor());
    for (anchor, hash) in &new.sections {
        match old_map.get(anchor.as_str()).copied() {
            Some(old_hash) if old_hash != hash => diff.changed.push(anchor.clone()),
            Some(_) => {}
            None => diff.added.push(anchor.clone()),
        }
    }
    diff.removed = old
        .sections
        .iter()
        .filter(|(anchor, _)| !new_map.contains_key(anchor.as_str()))
        .map(|(anchor, _)| anchor.clone())
        .collect();
    diff
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(text: &str) -> SectionHashes {
        Document::parse(text).section_hashes()
    }

    #[test]
    fn unchanged_document_has_an_empty_diff() {
        let text = "---\ntitle: x\n---\nintro\n# A\na\n## B\nb\n";
        let diff = diff_sections(&hashes(text), &hashes(text));
        assert!(diff.is_empty(), "{diff:?}");
    }

    #[test]
    fn changed_added_removed_and_preamble() {
        let old = hashes("intro\n# A\na\n## B\nb\n## C\nc\n");
        let new = hashes("intro!\n# A\na\n## B\nb2\n## D\nd\n");
        let diff = diff_sections(&old, &new);
        assert_eq!(diff.changed, ["b"]);
        assert_eq!(diff.added, ["d"]);
        assert_eq!(diff.removed, ["c"]);
        assert!(diff.preamble_changed);
    }

    #[test]
    fn a_subsection_change_does_not_mark_its_parent() {
        let old = hashes("# A\na\n## B\nb\n");
        let new = hashes("# A\na\n## B\nchanged\n");
        assert_eq!(diff_sections(&old, &new).changed, ["b"]);
    }

    #[test]
    fn frontmatter_change_is_a_preamble_change_and_anchorless_text_goes_to_previous() {
        let diff = diff_sections(
            &hashes("---\ntags: a\n---\n# A\n"),
            &hashes("---\ntags: b\n---\n# A\n"),
        );
        assert!(diff.preamble_changed && diff.changed.is_empty());
        let diff = diff_sections(&hashes("# A\n## ?\nx\n"), &hashes("# A\n## ?\ny\n"));
        assert_eq!(diff.changed, ["a"]);
    }

    #[test]
    fn hashes_are_owned_send_and_keyed_by_unique_anchor() {
        fn assert_owned<T: Send + Sync + Clone + 'static>(_: &T) {}
        let h = hashes("# N\n# N\n");
        assert_owned(&h);
        let anchors: Vec<_> = h.sections.iter().map(|(a, _)| a.as_str()).collect();
        assert_eq!(anchors, ["n", "n-1"]);
        assert_ne!(h.get("n"), None);
        assert_eq!(h.get("zzz"), None);
    }
}
