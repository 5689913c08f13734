//! Edges of a parsed document, via markdown-slice: which links become graph edges.

use markdown_slice::{Document, Link, LinkKind, Target, resolve};

use crate::error::GraphError;
use crate::graph::{Edge, LinkGraph, LinkTarget, NoteName, UpdateOutcome};
use crate::names::link_name;
use crate::paths::check_canonical;

/// The edges of `doc`, found at canonical path `path`, in document order: every link that
/// is not an image, its destination resolved against `path` (`../`, `./`, `%20`, wiki
/// pages), with the anchor of the innermost anchored section holding it.
///
/// A wiki link (`[[Name]]`, `[[Folder/Name#Heading|text]]`) and its embed (`![[Name]]`)
/// name a note, found by the vault rule ([`NoteName`]); an embed or wiki link of an
/// attachment (`![[diagram.png]]`) is no document link. A markdown link written as a vault
/// path (`Three%20laws%20of%20motion`, `Folder/Note.md`: not starting with `./`, `../`
/// or `/`) names a note too, its relative path tried first.
///
/// Links that cannot name a document are left out: those resolving to a directory
/// (`./guides/`) or to a path the graph refuses (a control character after
/// percent-decoding). Self-links stay here; [`LinkGraph::update`] drops them.
pub fn document_edges<'d, S: AsRef<str>>(
    path: &'d str,
    doc: &'d Document<S>,
) -> impl Iterator<Item = Edge> + 'd {
    doc.links().iter().filter_map(move |link| {
        let wiki = link.kind == LinkKind::Wiki;
        if link.is_image && !wiki {
            return None;
        }
        let target = match link.resolve(path) {
            Target::Internal { path, fragment } => {
                check_canonical(&path).ok()?;
                LinkTarget::Document { path, fragment }
            }
            Target::External(url) => LinkTarget::External(url),
        };
        let note = match &target {
            LinkTarget::Document { .. } => note_name(link),
            _ => None,
        };
        // An attachment, embedded or linked the wiki way, is not a document.
        if wiki && note.is_none() && !link.dest.starts_with('#') {
            return None;
        }
        Some(Edge {
            section: doc.section_anchor_at(link.range.start).map(str::to_owned),
            text: link.text.clone(),
            target,
            note,
        })
    })
}

/// The note a link names, if it names one by name or vault path (see [`document_edges`]).
fn note_name(link: &Link) -> Option<NoteName> {
    let written = link.dest.split('#').next().unwrap_or("");
    let wiki = link.kind == LinkKind::Wiki;
    let name = if wiki {
        markdown_slice::unicode_form(written.trim()).into_owned()
    } else {
        let written = written.split('?').next().unwrap_or("");
        if written.starts_with(['.', '/']) || written.is_empty() {
            return None;
        }
        match resolve("/", written) {
            Target::Internal { path, .. } => path.trim_start_matches('/').to_owned(),
            Target::External(_) => return None,
        }
    };
    link_name(&name)?;
    Some(NoteName {
        name,
        path_first: !wiki,
        embed: link.is_image,
    })
}
impl LinkGraph {
    /// Indexes a parsed document: [`document_edges`] and the document's title, handed to
    /// [`LinkGraph::update`] (a no-op when `etag` is the one indexed).
    pub fn index_document<S: AsRef<str>>(
        &mut self,
        path: &str,
        etag: &str,
        doc: &Document<S>,
    ) -> Result<UpdateOutcome, GraphError> {
        self.update(path, etag, doc.title(), document_edges(path, doc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Backlink;

    fn index(graph: &mut LinkGraph, path: &str, text: &str) {
        graph
            .index_document(path, "e1", &Document::parse(text))
            .unwrap();
    }

    fn edges(path: &str, text: &str) -> Vec<(Option<String>, String, LinkTarget)> {
        let doc = Document::parse(text);
        document_edges(path, &doc)
            .map(|e| (e.section, e.text, e.target))
            .collect()
    }

    fn document(path: &str, fragment: Option<&str>) -> LinkTarget {
        LinkTarget::Document {
            path: path.to_owned(),
            fragment: fragment.map(str::to_owned),
        }
    }

    fn s(text: &str) -> String {
        text.to_owned()
    }

    #[test]
    fn relative_destinations_resolve_against_nested_folders() {
        let text = "\
Intro links [up](../top.md), [same folder](./peer.md) and [deeper](sub/deep.md#part).

# Reference

See [spaced](My%20Notes.md) and [absolute](/root.md) and [[Wiki Page]].
";
        assert_eq!(
            edges("/guides/intro/start.md", text),
            vec![
                (None, s("up"), document("/guides/top.md", None)),
                (
                    None,
                    s("same folder"),
                    document("/guides/intro/peer.md", None)
                ),
                (
                    None,
                    s("deeper"),
                    document("/guides/intro/sub/deep.md", Some("part"))
                ),
                (
                    Some(s("reference")),
                    s("spaced"),
                    document("/guides/intro/My Notes.md", None)
                ),
                (
                    Some(s("reference")),
                    s("absolute"),
                    document("/root.md", None)
                ),
                (
                    Some(s("reference")),
                    s("Wiki Page"),
                    document("/guides/intro/Wiki Page.md", None)
                ),
            ]
        );
    }

    #[test]
    fn anchors_are_kept_and_sections_are_the_innermost_anchored_one() {
        let text = "\
# Errors

## `ERR_X`

Thrown by [`fs.open()`][] when [the flag][flags] is bad.

### Details

Another [link](other.md#deep-anchor).

[`fs.open()`]: fs.md#fsopenpath-flags-mode-callback
[flags]: fs.md#file-system-flags
";
        assert_eq!(
            edges("/errors.md", text),
            vec![
                (
                    Some(s("err_x")),
                    s("fs.open()"),
                    document("/fs.md", Some("fsopenpath-flags-mode-callback"))
                ),
                (
                    Some(s("err_x")),
                    s("the flag"),
                    document("/fs.md", Some("file-system-flags"))
                ),
                (
                    Some(s("details")),
                    s("link"),
                    document("/other.md", Some("deep-anchor"))
                ),
            ]
        );
    }

    #[test]
    fn images_directories_and_unrepresentable_paths_are_not_edges() {
        let text = "![diagram](img/arch.png) [folder](guides/) [bad](x%0Ay.md) [ok](y.md) <https://nodejs.org/>";
        assert_eq!(
            edges("/a.md", text),
            vec![
                (None, s("ok"), document("/y.md", None)),
                (
                    None,
                    s("https://nodejs.org/"),
                    LinkTarget::External(s("https://nodejs.org/"))
                ),
            ]
        );
    }

    #[test]
    fn self_links_and_duplicates_do_not_reach_the_backlinks() {
        let mut graph = LinkGraph::new();
        index(
            &mut graph,
            "/dir/a.md",
            "# A\n\n[top](#a) [me](a.md) [me again](../dir/a.md#a) [b](b.md) [b twice](b.md)\n\n## More\n\n[b](./b.md#x)\n",
        );
        assert!(graph.backlinks("/dir/a.md").is_empty());
        let backlinks: Vec<(Option<String>, String, Option<String>)> = graph
            .backlinks("/dir/b.md")
            .into_iter()
            .map(|b: Backlink| (b.section, b.text, b.fragment))
            .collect();
        assert_eq!(
            backlinks,
            vec![
                (Some(s("a")), s("b"), None),
                (Some(s("more")), s("b"), Some(s("x")))
            ]
        );
        assert_eq!(graph.outbound("/dir/a.md").map(|o| o.len()), Some(2));
        assert_eq!(graph.title("/dir/a.md"), Some("A"));
    }

    #[test]
    fn a_new_version_replaces_the_links_of_the_old_one() {
        let mut graph = LinkGraph::new();
        index(&mut graph, "/a.md", "[b](b.md)");
        let changed = graph
            .index_document("/a.md", "e2", &Document::parse("[c](c.md)"))
            .unwrap();
        assert_eq!(changed, UpdateOutcome::Replaced);
        assert!(graph.backlinks("/b.md").is_empty());
        assert_eq!(graph.backlinks("/c.md").len(), 1);
        let same = graph
            .index_document("/a.md", "e2", &Document::parse("[d](d.md)"))
            .unwrap();
        assert_eq!(same, UpdateOutcome::Unchanged);
        assert!(graph.backlinks("/d.md").is_empty());
    }
}
