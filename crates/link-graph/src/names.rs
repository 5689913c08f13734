//! Notes by name, the way an Obsidian vault links them: `[[Name]]`, `[[Folder/Name]]`.
//!
//! The rule, one for every link that names a note (wiki links, and markdown links whose
//! path does not name a known document): the name is matched case-insensitively, without
//! `.md`, against the end of every known document's path, whole segments only; of the
//! documents that match,
//!
//! 1. the exact path from the vault root (`[[Beta]]` → `/Beta.md`),
//! 2. else one in the linking note's own folder,
//! 3. else the shortest path (fewest bytes, then the first in byte order).
//!
//! No match: the link is unresolved (never pointed at a made-up path).

use std::collections::HashMap;

use crate::paths::PathId;

/// The lower-case name a note is found by: its path's last segment without `.md`
/// (`/notes/Alpha Note.md` → `alpha note`); `None` for a path that is not a note.
pub(crate) fn note_stem(path: &str) -> Option<String> {
    let name = path.rsplit('/').next()?;
    let stem = strip_md(name)?;
    (!stem.is_empty()).then(|| stem.to_lowercase())
}

/// `name` without a final `.md` (any case), or `None` when it has another extension.
fn strip_md(name: &str) -> Option<&str> {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".md") {
        return Some(&name[..name.len() - 3]);
    }
    match name.rfind('.') {
        // `v1.2 notes`: a dot followed by a space or a long word is no extension.
        Some(dot) if dot > 0 && is_extension(&name[dot + 1..]) => None,
        _ => Some(name),
    }
}

fn is_extension(ext: &str) -> bool {
    (1..=8).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_alphanumeric())
}

/// The form a link's note name is stored in: no leading `/`, no `.md`, case kept for
/// display; `None` when it names an attachment (`diagram.png`) or nothing.
pub(crate) fn link_name(written: &str) -> Option<String> {
    let written = written.trim().trim_start_matches('/');
    let last = written.rsplit('/').next()?;
    let stem = strip_md(last)?;
    let folder = &written[..written.len() - last.len()];
    (!stem.trim().is_empty()).then(|| format!("{folder}{stem}"))
}

/// The lower-case last segment of a stored link name: the key its candidates are found by.
pub(crate) fn name_stem(name: &str) -> String {
    name.rsplit('/').next().unwrap_or(name).to_lowercase()
}

/// Known documents by [`note_stem`], each id once.
#[derive(Debug, Default)]
pub(crate) struct NoteNames {
    by_stem: HashMap<Box<str>, Vec<PathId>>,
}

impl NoteNames {
    pub(crate) fn insert(&mut self, path: &str, id: PathId) {
        if let Some(stem) = note_stem(path) {
            let ids = self.by_stem.entry(stem.into_boxed_str()).or_default();
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }

    pub(crate) fn remove(&mut self, path: &str, id: PathId) {
        if let Some(stem) = note_stem(path)
            && let Some(ids) = self.by_stem.get_mut(stem.as_str())
        {
            ids.retain(|&i| i != id);
            if ids.is_empty() {
                self.by_stem.remove(stem.as_str());
            }
        }
    }

    /// Every stem a known document has, in no particular order.
    pub(crate) fn stems(&self) -> impl Iterator<Item = &str> {
        self.by_stem.keys().map(|k| &**k)
    }

    /// The documents whose stem is `stem`.
    pub(crate) fn with_stem(&self, stem: &str) -> &[PathId] {
        self.by_stem.get(stem).map_or(&[], Vec::as_slice)
    }

    /// Heap bytes, roughly: keys, id lists and the table's buckets.
    pub(crate) fn approx_bytes(&self) -> usize {
        self.by_stem
            .iter()
            .map(|(k, v)| k.len() + v.capacity() * 4 + 48)
            .sum()
    }
}

/// Picks the note `name` (as [`link_name`] gives it) names for a link in `source`,
/// among `candidates` (id and path of every known document with the name's stem), by the
/// module's rule.
pub(crate) fn pick<'a>(
    name: &str,
    source: &str,
    candidates: impl IntoIterator<Item = (PathId, &'a str)>,
) -> Option<PathId> {
    let exact = format!("/{}.md", name.to_lowercase());
    let suffix = exact.as_str();
    let folder = &source[..source.rfind('/').map_or(0, |i| i + 1)];
    let mut best: Option<(u8, usize, &str, PathId)> = None;
    for (id, path) in candidates {
        let Some(whole) = ends_with_lowered(path, suffix) else {
            continue;
        };
        let rank = if whole {
            0
        } else if path.rfind('/').is_some_and(|i| &path[..=i] == folder) {
            1
        } else {
            2
        };
        let key = (rank, path.len(), path, id);
        if best.is_none_or(|b| (key.0, key.1, key.2) < (b.0, b.1, b.2)) {
            best = Some(key);
        }
    }
    best.map(|b| b.3)
}

/// Whether `path` in lower case ends with `suffix` (lower case already): `Some(true)` when
/// it is all of it, `Some(false)` for a shorter ending, `None` for none. An ASCII path is
/// compared in place; another is lowered first.
fn ends_with_lowered(path: &str, suffix: &str) -> Option<bool> {
    if path.is_ascii() {
        let tail = path.len().checked_sub(suffix.len())?;
        let ends = path.as_bytes()[tail..].eq_ignore_ascii_case(suffix.as_bytes());
        return ends.then_some(tail == 0);
    }
    let lower = path.to_lowercase();
    lower.ends_with(suffix).then(|| lower == suffix)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve<'a>(name: &str, source: &str, paths: &[&'a str]) -> Option<&'a str> {
        let ids: Vec<(PathId, &str)> = paths
            .iter()
            .enumerate()
            .map(|(i, p)| (PathId::from_raw(i as u32).unwrap(), *p))
            .collect();
        let name = link_name(name)?;
        pick(&name, source, ids.iter().copied()).map(|id| paths[id.index()])
    }

    const VAULT: &[&str] = &[
        "/Beta.md",
        "/notes/Beta.md",
        "/notes/Alpha Note.md",
        "/Projects/Plan.md",
        "/archive/2020/Plan.md",
        "/archive/Index.md",
        "/notes/Index.md",
        "/deep/er/Index.md",
    ];

    #[test]
    fn the_exact_path_from_the_root_comes_first() {
        assert_eq!(
            resolve("Beta", "/notes/Alpha Note.md", VAULT),
            Some("/Beta.md")
        );
        assert_eq!(resolve("beta.MD", "/x.md", VAULT), Some("/Beta.md"));
        assert_eq!(
            resolve("archive/2020/Plan", "/x.md", VAULT),
            Some("/archive/2020/Plan.md")
        );
    }

    #[test]
    fn then_the_linking_note_s_own_folder() {
        assert_eq!(
            resolve("Index", "/notes/Alpha Note.md", VAULT),
            Some("/notes/Index.md")
        );
        assert_eq!(
            resolve("Plan", "/archive/2020/Log.md", VAULT),
            Some("/archive/2020/Plan.md")
        );
    }

    #[test]
    fn then_the_shortest_path_then_byte_order() {
        assert_eq!(
            resolve("Plan", "/Home.md", VAULT),
            Some("/Projects/Plan.md")
        );
        // `/notes/Index.md` is 15 bytes, `/archive/Index.md` and `/deep/er/Index.md` 17.
        assert_eq!(resolve("Index", "/Home.md", VAULT), Some("/notes/Index.md"));
        assert_eq!(
            resolve("x", "/Home.md", &["/b/x.md", "/a/x.md"]),
            Some("/a/x.md")
        );
    }

    #[test]
    fn a_folder_part_matches_whole_segments_at_the_end() {
        assert_eq!(
            resolve("2020/Plan", "/Home.md", VAULT),
            Some("/archive/2020/Plan.md")
        );
        assert_eq!(resolve("020/Plan", "/Home.md", VAULT), None);
        assert_eq!(
            resolve("Note", "/Home.md", VAULT),
            None,
            "not a suffix of a name"
        );
    }

    #[test]
    fn names_are_case_insensitive_and_attachments_are_not_notes() {
        assert_eq!(
            resolve("ALPHA note", "/Home.md", VAULT),
            Some("/notes/Alpha Note.md")
        );
        assert_eq!(link_name("diagram.png"), None);
        assert_eq!(link_name("Board.canvas"), None);
        assert_eq!(link_name("v1.2 notes").as_deref(), Some("v1.2 notes"));
        assert_eq!(link_name("/Folder/Name.md").as_deref(), Some("Folder/Name"));
        assert_eq!(link_name(""), None);
        assert_eq!(
            note_stem("/notes/Alpha Note.md").as_deref(),
            Some("alpha note")
        );
        assert_eq!(note_stem("/img.png"), None);
    }

    #[test]
    fn a_missing_note_is_unresolved() {
        assert_eq!(resolve("Missing Note", "/Home.md", VAULT), None);
    }
}
