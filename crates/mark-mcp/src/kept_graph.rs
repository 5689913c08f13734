//! The link graph kept between sessions: one file per source in the cache
//! folder (`--index-dir`, beside the kept search index), named by
//! [`GRAPH_FORMAT`] and a hash of the source (a folder's canonical root, a
//! server's origin) and of who reads it (a token's identity, never the
//! token), private to the user.
//!
//! A session loads it before its first crawl, so that crawl revalidates
//! what the last session saw by conditional FETCHes (an unchanged document
//! answers `not-modified` and is not parsed again; a changed one is; one no
//! listing names leaves) instead of building the graph anew; "graph
//! complete" still waits for that crawl. A crawl that ends complete writes
//! the file again: a temporary file renamed over the old one, so a process
//! killed while writing leaves the old file or the new. A file that is
//! unreadable, half-written or of another format is ignored with one line
//! on stderr, and the crawl builds the graph as if none were kept.

use crate::cache::Stamp;
use link_graph::{Edge, LinkGraph, LinkTarget, NoteName};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The layout of the kept file; another number is never read (a newer
/// mark-mcp keeps its own file beside an older one's).
pub const GRAPH_FORMAT: u32 = 1;

/// One source's kept graph file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptGraph {
    file: PathBuf,
    /// The source it belongs to, written in the file and checked on load.
    source: String,
}

/// The file's content.
#[derive(Serialize, Deserialize)]
struct Saved {
    format: u32,
    source: String,
    docs: Vec<SavedDoc>,
}

/// One indexed document: path, etag, title and its edges.
#[derive(Serialize, Deserialize)]
struct SavedDoc(String, String, Option<String>, Vec<SavedEdge>);

/// One edge, compact: section, text, path (of a document) or URL (of an
/// external link; `None` for a link found by note name only), fragment,
/// note name, and flags ([`EXTERNAL`], [`PATH_FIRST`], [`EMBED`]).
#[derive(Serialize, Deserialize)]
struct SavedEdge(
    Option<String>,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    u8,
);

const EXTERNAL: u8 = 1;
const PATH_FIRST: u8 = 2;
const EMBED: u8 = 4;

/// One document as a loaded file gives it back: path, etag, title, edges.
pub type LoadedDoc = (String, String, Option<String>, Vec<Edge>);

impl SavedEdge {
    fn of(edge: Edge) -> Option<SavedEdge> {
        let (place, fragment, mut flags) = match edge.target {
            LinkTarget::External(url) => (Some(url), None, EXTERNAL),
            // A link found by name only keeps no path (the graph never reads it).
            LinkTarget::Document { fragment, .. }
                if edge.note.as_ref().is_some_and(|n| !n.path_first) =>
            {
                (None, fragment, 0)
            }
            LinkTarget::Document { path, fragment } => (Some(path), fragment, 0),
            LinkTarget::Unresolved { .. } => return None,
        };
        let name = edge.note.map(|n| {
            flags |= if n.path_first { PATH_FIRST } else { 0 } | if n.embed { EMBED } else { 0 };
            n.name
        });
        Some(SavedEdge(
            edge.section,
            edge.text,
            place,
            fragment,
            name,
            flags,
        ))
    }

    fn into_edge(self) -> Edge {
        let SavedEdge(section, text, place, fragment, name, flags) = self;
        let target = if flags & EXTERNAL != 0 {
            LinkTarget::External(place.unwrap_or_default())
        } else {
            LinkTarget::Document {
                path: place.unwrap_or_else(|| "/".to_owned()),
                fragment,
            }
        };
        Edge {
            section,
            text,
            target,
            note: name.map(|name| NoteName {
                name,
                path_first: flags & PATH_FIRST != 0,
                embed: flags & EMBED != 0,
            }),
        }
    }
}

impl KeptGraph {
    /// The kept graph of `source` (a folder's canonical root, a server's
    /// origin) read with `reader` (a token; `None`: no token) in the cache
    /// folder `cache`.
    pub fn new(cache: &Path, source: &str, reader: Option<&str>) -> KeptGraph {
        let mut key = Sha256::new();
        key.update(source.as_bytes());
        key.update([0]);
        if let Some(reader) = reader {
            key.update(Sha256::digest(reader.as_bytes()));
        }
        let key = hex::encode(key.finalize());
        KeptGraph {
            file: cache.join(format!("graph-v{GRAPH_FORMAT}-{}.json", &key[..20])),
            source: source.to_owned(),
        }
    }

    /// Where the file is (whether or not it exists).
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The documents kept: none when there is no file; none, and one line
    /// on stderr, when it cannot be read or is not a graph of this format
    /// for this source.
    pub fn load(&self) -> Vec<LoadedDoc> {
        let bytes = match std::fs::read(&self.file) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Vec::new(),
            Err(e) => return self.ignored(&e.to_string()),
        };
        let saved: Saved = match serde_json::from_slice(&bytes) {
            Ok(s) => s,
            Err(e) => return self.ignored(&format!("not a kept graph ({e})")),
        };
        if saved.format != GRAPH_FORMAT || saved.source != self.source {
            return self.ignored("another format or source");
        }
        saved
            .docs
            .into_iter()
            .map(|SavedDoc(path, etag, title, edges)| {
                let edges = edges.into_iter().map(SavedEdge::into_edge).collect();
                (path, etag, title, edges)
            })
            .collect()
    }

    fn ignored(&self, why: &str) -> Vec<LoadedDoc> {
        eprintln!(
            "mark-mcp: the kept link graph {} was not used ({why}); the crawl builds it again.",
            self.file.display()
        );
        Vec::new()
    }

    /// Puts `docs` (from [`Self::load`]) into `graph`, each with `stamp`
    /// in `stamps`, but for a document the session took in itself already
    /// (its answer is newer). A document the graph refuses (its byte
    /// bound) is left out.
    pub fn restore(
        docs: Vec<LoadedDoc>,
        graph: &mut LinkGraph,
        stamps: &mut HashMap<String, Stamp>,
        stamp: Stamp,
    ) {
        for (path, etag, title, edges) in docs {
            if stamps.contains_key(&path) {
                continue;
            }
            match graph.update(&path, &etag, title.as_deref(), edges) {
                Ok(_) => {
                    stamps.insert(path, stamp);
                }
                Err(e) => tracing::debug!(path, error = %e, "kept document not restored"),
            }
        }
    }

    /// The file's bytes for `graph` (every indexed document).
    pub fn encode(&self, graph: &LinkGraph) -> Vec<u8> {
        let docs = graph
            .indexed_documents()
            .map(|(path, etag, title)| {
                let edges = graph.saved_edges(path).unwrap_or_default();
                SavedDoc(
                    path.to_owned(),
                    etag.to_owned(),
                    title.map(str::to_owned),
                    edges.into_iter().filter_map(SavedEdge::of).collect(),
                )
            })
            .collect();
        let saved = Saved {
            format: GRAPH_FORMAT,
            source: self.source.clone(),
            docs,
        };
        serde_json::to_vec(&saved).unwrap_or_default()
    }

    /// Writes `bytes` (from [`Self::encode`]) as the kept file: the cache
    /// folder made private to the user if missing, a temporary file renamed
    /// over the old one.
    pub fn write(&self, bytes: &[u8]) -> io::Result<()> {
        let folder = self.file.parent().unwrap_or(Path::new("."));
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(folder)?;
        let mut temp = tempfile::NamedTempFile::new_in(folder)?;
        temp.write_all(bytes)?;
        temp.as_file().sync_all()?;
        temp.persist(&self.file).map_err(|e| e.error)?;
        Ok(())
    }

    /// Removes the kept file; whether there was one.
    pub fn clear(&self) -> io::Result<bool> {
        match std::fs::remove_file(&self.file) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph() -> LinkGraph {
        let mut graph = LinkGraph::new();
        let doc = markdown_slice::Document::parse(
            "# A\n\n[[B#Part]], ![[C]], [x](/d.md#y), [w](https://example.org) and [v](e).\n",
        );
        graph.index_document("/a.md", "etag-a", &doc).unwrap();
        graph
    }

    #[test]
    fn a_kept_graph_loads_as_it_was_saved() {
        let dir = tempfile::tempdir().unwrap();
        let kept = KeptGraph::new(dir.path(), "/vault", None);
        let graph = graph();
        kept.write(&kept.encode(&graph)).unwrap();
        let loaded = kept.load();
        assert_eq!(loaded.len(), 1);
        let (path, etag, title, edges) = &loaded[0];
        assert_eq!((path.as_str(), etag.as_str()), ("/a.md", "etag-a"));
        assert_eq!(title.as_deref(), Some("A"));
        assert_eq!(Some(edges.clone()), graph.saved_edges("/a.md"));
    }

    #[test]
    fn a_broken_or_foreign_file_loads_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let kept = KeptGraph::new(dir.path(), "/vault", None);
        assert!(kept.load().is_empty(), "no file");
        let bytes = kept.encode(&graph());
        kept.write(&bytes[..bytes.len() / 2]).unwrap();
        assert!(kept.load().is_empty(), "half written");
        let other = KeptGraph::new(dir.path(), "/other", None);
        std::fs::write(other.file(), &bytes).unwrap();
        assert!(other.load().is_empty(), "another source's");
        let text = String::from_utf8(bytes).unwrap();
        std::fs::write(
            kept.file(),
            text.replacen("\"format\":1", "\"format\":99", 1),
        )
        .unwrap();
        assert!(kept.load().is_empty(), "another format");
    }

    #[test]
    fn sources_and_readers_keep_apart() {
        let cache = Path::new("/cache");
        let file = |source, reader| KeptGraph::new(cache, source, reader).file;
        assert_ne!(file("/a", None), file("/b", None));
        assert_ne!(file("/a", None), file("/a", Some("token")));
        assert_ne!(file("/a", Some("one")), file("/a", Some("two")));
        assert!(
            !file("/a", Some("token"))
                .to_string_lossy()
                .contains("token")
        );
    }
}
