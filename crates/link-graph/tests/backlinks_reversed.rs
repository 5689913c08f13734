//! Property: over any vault, the backlink index is the outbound links reversed, links by
//! note name included, after every note is indexed, and again after some are removed; and a
//! graph rebuilt from another's saved edges answers as that one does.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use link_graph::{Edge, LinkGraph, LinkTarget, NoteName};
use proptest::prelude::*;

const FOLDERS: &[&str] = &["", "notes/", "archive/", "archive/2020/"];
const NAMES: &[&str] = &["Alpha", "Beta", "Plan", "Index", "Ärger", "Missing"];

fn path(folder: usize, name: usize) -> String {
    format!("/{}{}.md", FOLDERS[folder], NAMES[name])
}

/// One link: by path to a note, by name (bare, or with a folder part, maybe embedded), or a
/// markdown link written as a vault path (its path first, then its name), in one of two
/// sections.
fn edge() -> impl Strategy<Value = Edge> {
    (
        0..FOLDERS.len(),
        0..NAMES.len(),
        0..4u8,
        0..2u8,
        any::<bool>(),
    )
        .prop_map(|(f, n, how, sec, embed)| {
            let section = (sec == 1).then(|| "part".to_owned());
            let name = match how {
                0 => None,
                1 => Some(NAMES[n].to_owned()),
                _ => Some(format!("{}{}", FOLDERS[f], NAMES[n].to_lowercase())),
            };
            Edge {
                section,
                text: "t".to_owned(),
                target: LinkTarget::Document {
                    path: path(f, n),
                    fragment: None,
                },
                note: name.map(|name| NoteName {
                    name,
                    path_first: how == 3,
                    embed,
                }),
            }
        })
}

fn vault() -> impl Strategy<Value = Vec<(String, Vec<Edge>)>> {
    // Each (folder, name) is a note or not; "Missing" never is.
    proptest::collection::btree_set((0..FOLDERS.len(), 0..NAMES.len() - 1), 1..12).prop_flat_map(
        |notes| {
            let paths: Vec<String> = notes.into_iter().map(|(f, n)| path(f, n)).collect();
            let edges =
                proptest::collection::vec(proptest::collection::vec(edge(), 0..6), paths.len());
            (Just(paths), edges).prop_map(|(paths, edges)| paths.into_iter().zip(edges).collect())
        },
    )
}

/// (target, source, section) of each link into a note.
type Links = BTreeSet<(String, String, Option<String>)>;

/// Every (target, source, section) the outbound links give, and the backlinks give.
fn both_ways(graph: &LinkGraph, notes: &[&str]) -> (Links, Links) {
    let mut outbound = BTreeSet::new();
    let mut backlinks = BTreeSet::new();
    for source in notes {
        for link in graph.outbound(source).unwrap_or_default() {
            if let LinkTarget::Document { path, .. } = link.target
                && notes.contains(&path.as_str())
            {
                outbound.insert((path, source.to_string(), link.section));
            }
        }
    }
    for target in notes {
        for b in graph.backlinks(target) {
            backlinks.insert((target.to_string(), b.source, b.section));
        }
    }
    (outbound, backlinks)
}

proptest! {
    #[test]
    fn backlinks_are_the_outbound_links_reversed(vault in vault(), removed in 0..4usize) {
        let mut graph = LinkGraph::new();
        for (path, edges) in &vault {
            graph.update(path, "e", None, edges.clone()).unwrap();
        }
        let notes: Vec<&str> = vault.iter().map(|(p, _)| p.as_str()).collect();
        let (outbound, backlinks) = both_ways(&graph, &notes);
        prop_assert_eq!(&outbound, &backlinks);

        // A graph rebuilt from what the first saves (a session's kept graph) answers the same.
        let mut rebuilt = LinkGraph::new();
        for (path, etag, title) in graph.indexed_documents() {
            let edges = graph.saved_edges(path).unwrap();
            rebuilt.update(path, etag, title, edges).unwrap();
        }
        for path in &notes {
            prop_assert_eq!(rebuilt.outbound(path), graph.outbound(path));
            prop_assert_eq!(rebuilt.saved_edges(path), graph.saved_edges(path));
        }
        prop_assert_eq!(both_ways(&rebuilt, &notes), (outbound, backlinks));

        // Notes go: links by name resolve again over what is left.
        let gone: Vec<&str> = notes.iter().copied().take(removed).collect();
        for path in &gone {
            graph.remove(path);
        }
        let left: Vec<&str> = notes.iter().copied().filter(|p| !gone.contains(p)).collect();
        let (outbound, backlinks) = both_ways(&graph, &left);
        prop_assert_eq!(outbound, backlinks);
    }
}
