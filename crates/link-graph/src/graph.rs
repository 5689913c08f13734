//! The graph: documents, their outbound edges, and the backlink index derived from them.

use std::collections::{HashMap, HashSet};
use std::mem::size_of;

use crate::coverage::Coverage;
use crate::error::GraphError;
use crate::names::{NoteNames, link_name, name_stem, note_stem, pick};
use crate::paths::{PATH_OVERHEAD_BYTES, PathId, PathTable, check_canonical};
use crate::text::{MAX_LINK_TEXT_BYTES, MAX_TITLE_BYTES, one_line};

/// Where a link points.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LinkTarget {
    /// A document of the same source, by canonical path, with the anchor the link names.
    Document {
        /// Canonical path, e.g. `/dir/doc.md`.
        path: String,
        /// The anchor after `#`, if any (never empty).
        fragment: Option<String>,
    },
    /// Anything else (`https:`, `mailto:`, another host): kept as outbound only.
    External(String),
    /// A note name no known document has (see [`Edge::note`]); only [`LinkGraph::outbound`]
    /// reports it.
    Unresolved {
        /// The name as written, without `.md` (`Missing Note`, `Folder/Name`).
        name: String,
        /// The anchor after `#`, if any.
        fragment: Option<String>,
    },
}

/// How a link names a note, for the vault rule (see [`LinkGraph::update`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteName {
    /// The note name or vault path as written, without the fragment (`notes/Alpha Note`).
    pub name: String,
    /// A markdown link: its [`Edge::target`] path wins when it is a known document, and
    /// stays its target when no note has the name. A wiki link (`false`) is found by
    /// name only.
    pub path_first: bool,
    /// An embed (`![[Note]]`).
    pub embed: bool,
}

/// One link of a document, as the caller hands it to [`LinkGraph::update`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// Anchor of the innermost section holding the link; `None` for the preamble
    /// or a heading without an anchor.
    pub section: Option<String>,
    /// The link text as plain text; stored on one line and cut to
    /// [`MAX_LINK_TEXT_BYTES`](crate::MAX_LINK_TEXT_BYTES).
    pub text: String,
    /// Where it points.
    pub target: LinkTarget,
    /// The note it names, for a wiki link or a markdown link written as a vault path.
    pub note: Option<NoteName>,
}

/// A link into a document, as [`LinkGraph::backlinks`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backlink {
    /// Canonical path of the linking document.
    pub source: String,
    /// Its title, if it has one.
    pub source_title: Option<String>,
    /// Anchor of the section holding the link (`None`: the preamble or an anchorless heading).
    pub section: Option<String>,
    /// The link text of the first link from that section.
    pub text: String,
    /// The anchor in the target document that first link names, if any.
    pub fragment: Option<String>,
}

/// A link out of a document, as [`LinkGraph::outbound`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundLink {
    /// Anchor of the section holding the link.
    pub section: Option<String>,
    /// The stored (one-line, bounded) link text.
    pub text: String,
    /// Where it points, resolved now (a note name by the vault rule).
    pub target: LinkTarget,
    /// An embed (`![[Note]]`).
    pub embed: bool,
}

/// What [`LinkGraph::update`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateOutcome {
    /// The document was not indexed before.
    Added,
    /// Its etag changed: its outbound edges were replaced.
    Replaced,
    /// Same etag as indexed: nothing was done.
    Unchanged,
}

/// A byte range in a document's string arena. `len == 0` stands for "absent": anchors,
/// fragments and URLs are never empty when present.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: u32,
    len: u32,
}

impl Span {
    const ABSENT: Span = Span { start: 0, len: 0 };
}

/// An edge as stored: 36 bytes, strings in the owning document's arena.
#[derive(Debug, Clone, Copy)]
struct StoredEdge {
    /// `PathId` of the target document, or `PathId::RESERVED` for an external link or one
    /// found by name only.
    target: u32,
    /// Index into the document's section list, or `NO_SECTION`.
    section: u32,
    text: Span,
    /// The fragment for a document link, the URL for an external one.
    detail: Span,
    /// The note name ([`NoteName::name`]) when `how` is not `BY_PATH`.
    name: Span,
    /// `BY_PATH`, `PATH_THEN_NAME` or `BY_NAME`, plus `EMBED`.
    how: u8,
}

const NO_SECTION: u32 = u32::MAX;

/// How a stored edge finds its target.
const BY_PATH: u8 = 0;
const PATH_THEN_NAME: u8 = 1;
const BY_NAME: u8 = 2;
const HOW: u8 = 3;
const EMBED: u8 = 4;

/// Names already resolved during one read of the graph, by (linking folder, lower-case
/// name): the vault rule reads nothing else of the linking note.
type Picks = HashMap<(String, String), Option<PathId>>;

/// What a stored edge points at now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resolved {
    Doc(PathId),
    External,
    Unresolved,
}

/// One indexed document: everything it links to, its strings packed in one allocation.
#[derive(Debug)]
struct DocEntry {
    etag: Box<str>,
    title: Option<Box<str>>,
    /// Link texts, section anchors, fragments and URLs, concatenated.
    arena: Box<str>,
    /// Distinct section anchors holding links, in document order.
    sections: Box<[Span]>,
    /// In document order, deduplicated per (section, target, fragment).
    edges: Box<[StoredEdge]>,
}

impl DocEntry {
    fn str(&self, span: Span) -> &str {
        let start = span.start as usize;
        self.arena
            .get(start..start + span.len as usize)
            .unwrap_or("")
    }

    fn opt_str(&self, span: Span) -> Option<String> {
        (span.len > 0).then(|| self.str(span).to_owned())
    }

    fn section(&self, edge: &StoredEdge) -> Option<String> {
        self.sections
            .get(edge.section as usize)
            .map(|&span| self.str(span).to_owned())
    }

    /// The stems of the note names its links hold (the `named_links` keys).
    fn name_stems(&self) -> HashSet<String> {
        self.edges
            .iter()
            .filter(|e| e.how & HOW != BY_PATH)
            .map(|e| name_stem(self.str(e.name)))
            .collect()
    }

    /// The distinct documents this one links to by path.
    fn targets(&self) -> HashSet<PathId> {
        self.edges
            .iter()
            .filter_map(|e| PathId::from_raw(e.target))
            .collect()
    }

    /// What the entry costs the graph's byte bound: its own heap bytes and its place in
    /// each target's backlink list.
    fn bound_bytes(&self, targets: usize) -> usize {
        self.heap_bytes() + targets * size_of::<PathId>()
    }

    fn heap_bytes(&self) -> usize {
        self.etag.len()
            + self.title.as_ref().map_or(0, |t| t.len())
            + self.arena.len()
            + self.sections.len() * size_of::<Span>()
            + self.edges.len() * size_of::<StoredEdge>()
    }
}

/// Packs a document's edges into a [`DocEntry`].
struct EntryBuilder {
    arena: String,
    sections: Vec<Span>,
    edges: Vec<StoredEdge>,
    section_index: HashMap<String, u32>,
    seen: HashSet<(u32, u32, String, String)>,
}

impl EntryBuilder {
    fn new() -> EntryBuilder {
        EntryBuilder {
            arena: String::new(),
            sections: Vec::new(),
            edges: Vec::new(),
            section_index: HashMap::new(),
            seen: HashSet::new(),
        }
    }

    fn push_str(&mut self, text: &str) -> Result<Span, GraphError> {
        if text.is_empty() {
            return Ok(Span::ABSENT);
        }
        let full = GraphError::Full {
            what: "a document's link strings",
        };
        let start = u32::try_from(self.arena.len()).map_err(|_| full.clone())?;
        let len = u32::try_from(text.len()).map_err(|_| full.clone())?;
        start.checked_add(len).ok_or(full)?;
        self.arena.push_str(text);
        Ok(Span { start, len })
    }

    /// Index of the section's anchor, each anchor stored once.
    fn section(&mut self, anchor: Option<&str>) -> Result<u32, GraphError> {
        let Some(anchor) = anchor.filter(|a| !a.is_empty()) else {
            return Ok(NO_SECTION);
        };
        if let Some(&index) = self.section_index.get(anchor) {
            return Ok(index);
        }
        let span = self.push_str(anchor)?;
        let index = u32::try_from(self.sections.len())
            .ok()
            .filter(|&i| i != NO_SECTION)
            .ok_or(GraphError::Full {
                what: "a document's sections",
            })?;
        self.sections.push(span);
        self.section_index.insert(anchor.to_owned(), index);
        Ok(index)
    }

    /// Adds one edge unless it repeats an earlier (section, target, fragment, name).
    fn push(
        &mut self,
        section: Option<&str>,
        text: &str,
        target: u32,
        detail: &str,
        (name, how): (&str, u8),
    ) -> Result<(), GraphError> {
        let section = self.section(section)?;
        if !self
            .seen
            .insert((section, target, detail.to_owned(), name.to_owned()))
        {
            return Ok(());
        }
        let text = self.push_str(&one_line(text, MAX_LINK_TEXT_BYTES))?;
        let detail = self.push_str(detail)?;
        let name = self.push_str(name)?;
        self.edges.push(StoredEdge {
            target,
            section,
            text,
            detail,
            name,
            how,
        });
        Ok(())
    }

    fn finish(self, etag: &str, title: Option<&str>) -> DocEntry {
        DocEntry {
            etag: etag.into(),
            title: title
                .map(|t| one_line(t, MAX_TITLE_BYTES))
                .filter(|t| !t.is_empty())
                .map(String::into_boxed_str),
            arena: self.arena.into_boxed_str(),
            sections: self.sections.into_boxed_slice(),
            edges: self.edges.into_boxed_slice(),
        }
    }
}

/// The per-id slots a live path takes beside the path table: its document, its backlink
/// list and its discovery flag.
const SLOT_BYTES: usize =
    size_of::<Option<DocEntry>>() + size_of::<Vec<PathId>>() + size_of::<bool>();

/// What one live path costs the graph's byte bound.
fn path_bytes(path: &str) -> usize {
    path.len() + PATH_OVERHEAD_BYTES + SLOT_BYTES
}

/// The link graph of one session: see the crate documentation.
#[derive(Debug, Default)]
pub struct LinkGraph {
    paths: PathTable,
    /// By `PathId`: the indexed document, if any.
    docs: Vec<Option<DocEntry>>,
    /// By target `PathId`: the documents linking to it, sorted, each once.
    incoming: Vec<Vec<PathId>>,
    /// By `PathId`: listed by the crawler (whether or not indexed since).
    discovered: Vec<bool>,
    crawl_finished: bool,
    /// Known documents (indexed or discovered) by note name, for links by name.
    names: NoteNames,
    /// By lower-case note stem: the documents with a link by that name, sorted, each once.
    named_links: HashMap<String, Vec<PathId>>,
    /// Bytes the live paths and entries hold, as the byte bound counts them.
    held_bytes: usize,
    /// The byte bound, if any (see [`LinkGraph::with_byte_bound`]).
    byte_bound: Option<usize>,
    /// Whether the bound has refused a document in this graph's life.
    bound_reached: bool,
}

impl LinkGraph {
    /// An empty graph without a byte bound (the crawl's limits bound it).
    pub fn new() -> LinkGraph {
        LinkGraph::default()
    }

    /// An empty graph that holds at most about `bytes` of paths and links: a document whose
    /// links would take it past that is not indexed ([`GraphError::OverBound`]), and
    /// [`Coverage::bound_reached`] says so from then on.
    ///
    /// Paths nothing refers to any more (targets of links since replaced or removed) are
    /// forgotten, so the bound counts what the graph holds now, not what a session once saw.
    pub fn with_byte_bound(bytes: usize) -> LinkGraph {
        LinkGraph {
            byte_bound: Some(bytes),
            ..LinkGraph::default()
        }
    }

    fn intern(&mut self, path: &str) -> Result<PathId, GraphError> {
        check_canonical(path)?;
        let live = self.paths.live();
        let id = self.paths.intern(path)?;
        if self.paths.live() > live {
            self.held_bytes += path_bytes(path);
        }
        let len = self.paths.len();
        if self.docs.len() < len {
            self.docs.resize_with(len, || None);
            self.incoming.resize_with(len, Vec::new);
            self.discovered.resize(len, false);
        }
        Ok(id)
    }

    /// Forgets each of `ids` that nothing refers to any more: not indexed, not discovered,
    /// linked from nowhere.
    fn release_unused(&mut self, ids: impl IntoIterator<Item = PathId>) {
        for id in ids {
            let i = id.index();
            if self.docs[i].is_none() && !self.discovered[i] && self.incoming[i].is_empty() {
                let bytes = path_bytes(self.paths.path(id));
                if self.paths.release(id) {
                    self.held_bytes -= bytes;
                    self.incoming[i] = Vec::new();
                }
            }
        }
    }

    fn entry(&self, path: &str) -> Option<&DocEntry> {
        let id = self.paths.get(path)?;
        self.docs.get(id.index())?.as_ref()
    }

    /// Indexes `path` with these outbound `edges`, or replaces its edges if `etag` changed.
    ///
    /// Same etag as indexed: returns [`UpdateOutcome::Unchanged`] at once (the edges are not
    /// even looked at). Links from a document to itself are dropped (they are navigation
    /// within the page); repeats of a (section, target, fragment) keep the first text.
    /// Every path, the source's and each document target's, must be canonical
    /// (see [`check_canonical`](crate::check_canonical)); otherwise the error comes back and
    /// the document keeps the edges it had.
    pub fn update(
        &mut self,
        path: &str,
        etag: &str,
        title: Option<&str>,
        edges: impl IntoIterator<Item = Edge>,
    ) -> Result<UpdateOutcome, GraphError> {
        let source = self.intern(path)?;
        let outcome = match &self.docs[source.index()] {
            Some(old) if *old.etag == *etag => return Ok(UpdateOutcome::Unchanged),
            Some(_) => UpdateOutcome::Replaced,
            None => UpdateOutcome::Added,
        };
        let mut builder = EntryBuilder::new();
        for edge in edges {
            let section = edge.section.as_deref();
            let note = edge
                .note
                .as_ref()
                .and_then(|n| Some((link_name(&n.name)?, n)));
            let how = |n: &NoteName, base: u8| base | if n.embed { EMBED } else { 0 };
            match (&edge.target, note) {
                // Found by name only: nothing to intern until it resolves.
                (LinkTarget::Document { fragment, .. }, Some((name, n))) if !n.path_first => {
                    let fragment = fragment.as_deref().unwrap_or("");
                    let by = (name.as_str(), how(n, BY_NAME));
                    builder.push(section, &edge.text, PathId::RESERVED, fragment, by)?;
                }
                (LinkTarget::Document { path, fragment }, note) => {
                    let target = self.intern(path)?;
                    if target != source {
                        let fragment = fragment.as_deref().unwrap_or("");
                        let by = match &note {
                            Some((name, n)) => (name.as_str(), how(n, PATH_THEN_NAME)),
                            None => ("", BY_PATH),
                        };
                        builder.push(section, &edge.text, target.raw(), fragment, by)?;
                    }
                }
                (LinkTarget::External(url), _) if !url.is_empty() => {
                    let by = ("", BY_PATH);
                    builder.push(section, &edge.text, PathId::RESERVED, url, by)?;
                }
                (LinkTarget::External(_) | LinkTarget::Unresolved { .. }, _) => {}
            }
        }
        let entry = builder.finish(etag, title);
        let targets = entry.targets();
        let old_targets = self.unlink(source);
        let cost = entry.bound_bytes(targets.len());
        if let Some(bound) = self
            .byte_bound
            .filter(|&bound| self.held_bytes + cost > bound)
        {
            // Stale links are worse than none: the replaced entry is gone either way.
            self.bound_reached = true;
            self.refresh_name(source);
            self.release_unused(old_targets.into_iter().chain(targets).chain([source]));
            return Err(GraphError::OverBound { bound });
        }
        for stem in entry.name_stems() {
            let sources = self.named_links.entry(stem).or_default();
            if let Err(at) = sources.binary_search(&source) {
                sources.insert(at, source);
            }
        }
        for &target in &targets {
            let sources = &mut self.incoming[target.index()];
            if let Err(at) = sources.binary_search(&source) {
                sources.insert(at, source);
            }
        }
        self.held_bytes += cost;
        self.docs[source.index()] = Some(entry);
        self.refresh_name(source);
        self.release_unused(old_targets);
        Ok(outcome)
    }

    /// Keeps `id` in the note-name index while it is a known document, out of it otherwise.
    fn refresh_name(&mut self, id: PathId) {
        let path = self.paths.path(id).to_owned();
        if self.is_known(id) {
            self.names.insert(&path, id);
        } else {
            self.names.remove(&path, id);
        }
    }

    /// Takes `source`'s entry out of the backlink index (and out of the graph); returns the
    /// documents it linked to, for [`Self::release_unused`] once the caller is done.
    fn unlink(&mut self, source: PathId) -> HashSet<PathId> {
        let Some(old) = self.docs[source.index()].take() else {
            return HashSet::new();
        };
        let targets = old.targets();
        for target in &targets {
            let sources = &mut self.incoming[target.index()];
            if let Ok(at) = sources.binary_search(&source) {
                sources.remove(at);
            }
        }
        for stem in old.name_stems() {
            if let Some(sources) = self.named_links.get_mut(&stem) {
                if let Ok(at) = sources.binary_search(&source) {
                    sources.remove(at);
                }
                if sources.is_empty() {
                    self.named_links.remove(&stem);
                }
            }
        }
        self.held_bytes -= old.bound_bytes(targets.len());
        targets
    }

    /// Forgets a document that no longer exists (a FETCH answered `not-found` or
    /// `archived`): its edges and its discovery go. Links *to* it stay, from documents that
    /// still hold them. Returns whether it was indexed or discovered.
    pub fn remove(&mut self, path: &str) -> bool {
        let Some(id) = self.paths.get(path) else {
            return false;
        };
        let was_discovered = std::mem::take(&mut self.discovered[id.index()]);
        let was_indexed = self.docs[id.index()].is_some();
        let old_targets = self.unlink(id);
        self.refresh_name(id);
        self.release_unused(old_targets.into_iter().chain([id]));
        was_indexed || was_discovered
    }

    /// The etag `path` was indexed with: compare before parsing to skip unchanged documents,
    /// and send it as `if-none-match`.
    pub fn etag(&self, path: &str) -> Option<&str> {
        self.entry(path).map(|d| &*d.etag)
    }

    /// The title `path` was indexed with (`None` if untitled or not indexed).
    pub fn title(&self, path: &str) -> Option<&str> {
        self.entry(path)?.title.as_deref()
    }

    /// Whether `path` is indexed.
    pub fn is_indexed(&self, path: &str) -> bool {
        self.entry(path).is_some()
    }

    /// Every indexed document: its path, the etag and the title it was indexed with, in no
    /// particular order (with [`Self::saved_edges`], what a later graph is rebuilt from).
    pub fn indexed_documents(&self) -> impl Iterator<Item = (&str, &str, Option<&str>)> {
        self.docs.iter().enumerate().filter_map(|(i, doc)| {
            let doc = doc.as_ref()?;
            let id = PathId::from_raw(u32::try_from(i).ok()?)?;
            Some((self.paths.path(id), &*doc.etag, doc.title.as_deref()))
        })
    }

    /// The edges of `path` as [`Self::update`] takes them, giving the graph it holds now:
    /// the stored links (a link by note name as a name, not as what it resolves to now).
    /// `None` if `path` is not indexed.
    pub fn saved_edges(&self, path: &str) -> Option<Vec<Edge>> {
        let doc = self.entry(path)?;
        let edges = doc.edges.iter().map(|edge| {
            let target = PathId::from_raw(edge.target);
            let note = (edge.how & HOW != BY_PATH).then(|| NoteName {
                // `.md` again, so `link_name` gives back the stored name whatever dots it has.
                name: format!("{}.md", doc.str(edge.name)),
                path_first: edge.how & HOW == PATH_THEN_NAME,
                embed: edge.how & EMBED != 0,
            });
            let target = match (target, &note) {
                (Some(id), _) => LinkTarget::Document {
                    path: self.paths.path(id).to_owned(),
                    fragment: doc.opt_str(edge.detail),
                },
                // Found by name only: the path is not read.
                (None, Some(_)) => LinkTarget::Document {
                    path: "/".to_owned(),
                    fragment: doc.opt_str(edge.detail),
                },
                (None, None) => LinkTarget::External(doc.str(edge.detail).to_owned()),
            };
            Edge {
                section: doc.section(edge),
                text: doc.str(edge.text).to_owned(),
                target,
                note,
            }
        });
        Some(edges.collect())
    }

    /// The links into `path` from other indexed documents: one per (source, section), the
    /// first link of that section. Ordered by source path, then by the sections' order in
    /// the source document. Empty if nothing links there *yet*: read [`Self::coverage`]
    /// before calling that "no backlinks".
    pub fn backlinks(&self, path: &str) -> Vec<Backlink> {
        let Some(target) = self.paths.get(path) else {
            return Vec::new();
        };
        // Links by path to it, and links by a name it may answer to.
        let by_name = note_stem(path)
            .and_then(|stem| self.named_links.get(&stem))
            .map_or(&[][..], Vec::as_slice);
        let mut ids: Vec<PathId> = self.incoming[target.index()]
            .iter()
            .chain(by_name)
            .copied()
            .filter(|&s| s != target)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let mut sources: Vec<(&str, &DocEntry)> = ids
            .into_iter()
            .filter_map(|s| Some((self.paths.path(s), self.docs[s.index()].as_ref()?)))
            .collect();
        sources.sort_unstable_by_key(|&(p, _)| p);
        // Only an edge by this path or by a name with this stem can point here; a name is
        // resolved once per linking folder (the rule reads only the source's folder), so a
        // name a thousand notes share costs a pick per folder, not per link.
        let stem = note_stem(path).unwrap_or_default();
        let mut picks = Picks::default();
        let mut found = Vec::new();
        for (source, doc) in sources {
            let mut sections_seen = HashSet::new();
            let into = |e: &&StoredEdge| {
                (e.target == target.raw()
                    || (e.how & HOW != BY_PATH && name_stem(doc.str(e.name)) == stem))
                    && self.resolve_in(source, doc, e, &mut picks) == Resolved::Doc(target)
            };
            for edge in doc.edges.iter().filter(into) {
                if sections_seen.insert(edge.section) {
                    found.push(Backlink {
                        source: source.to_owned(),
                        source_title: doc.title.as_deref().map(str::to_owned),
                        section: doc.section(edge),
                        text: doc.str(edge.text).to_owned(),
                        fragment: doc.opt_str(edge.detail),
                    });
                }
            }
        }
        found
    }

    /// The links out of `path`, in document order (internal and external, deduplicated per
    /// section, self-links dropped); `None` if `path` is not indexed.
    pub fn outbound(&self, path: &str) -> Option<Vec<OutboundLink>> {
        let doc = self.entry(path)?;
        let links = doc
            .edges
            .iter()
            .filter_map(|edge| {
                let target = match self.resolve(path, doc, edge) {
                    Resolved::Doc(id) if self.paths.path(id) == path => return None,
                    Resolved::Doc(id) => LinkTarget::Document {
                        path: self.paths.path(id).to_owned(),
                        fragment: doc.opt_str(edge.detail),
                    },
                    Resolved::External => LinkTarget::External(doc.str(edge.detail).to_owned()),
                    Resolved::Unresolved => LinkTarget::Unresolved {
                        name: doc.str(edge.name).to_owned(),
                        fragment: doc.opt_str(edge.detail),
                    },
                };
                Some(OutboundLink {
                    section: doc.section(edge),
                    text: doc.str(edge.text).to_owned(),
                    target,
                    embed: edge.how & EMBED != 0,
                })
            })
            .collect();
        Some(links)
    }

    /// Where `edge` of `doc` (indexed at `source`) points now: by path, or by the vault
    /// rule over the documents known at this moment (see the crate documentation).
    fn resolve(&self, source: &str, doc: &DocEntry, edge: &StoredEdge) -> Resolved {
        self.resolve_in(source, doc, edge, &mut Picks::default())
    }

    /// [`Self::resolve`], reusing the names `picks` already resolved for a folder.
    fn resolve_in(
        &self,
        source: &str,
        doc: &DocEntry,
        edge: &StoredEdge,
        picks: &mut Picks,
    ) -> Resolved {
        let by_path = PathId::from_raw(edge.target);
        match (edge.how & HOW, by_path) {
            (BY_PATH, Some(id)) => return Resolved::Doc(id),
            (BY_PATH, None) => return Resolved::External,
            (PATH_THEN_NAME, Some(id)) if self.is_known(id) => return Resolved::Doc(id),
            _ => {}
        }
        let name = doc.str(edge.name);
        let folder = &source[..source.rfind('/').map_or(0, |i| i + 1)];
        let key = (folder.to_owned(), name.to_lowercase());
        let picked = *picks.entry(key).or_insert_with(|| {
            let candidates = self
                .names
                .with_stem(&name_stem(name))
                .iter()
                .map(|&id| (id, self.paths.path(id)));
            pick(name, source, candidates)
        });
        match (picked, by_path) {
            (Some(id), _) | (None, Some(id)) => Resolved::Doc(id),
            (None, None) => Resolved::Unresolved,
        }
    }

    /// Where a link `edge` of the document at `source` points now, resolved the way an
    /// indexed link is (a note name by the vault rule over the documents known now), for a
    /// caller that shows links of a document the graph may not hold.
    pub fn resolve_edge(&self, source: &str, edge: &Edge) -> LinkTarget {
        let note = edge
            .note
            .as_ref()
            .and_then(|n| Some((link_name(&n.name)?, n)));
        let (LinkTarget::Document { path, fragment }, Some((name, n))) = (&edge.target, note)
        else {
            return edge.target.clone();
        };
        let by_path = self.paths.get(path).filter(|&id| self.is_known(id));
        if n.path_first
            && let Some(_) = by_path
        {
            return edge.target.clone();
        }
        let candidates = self
            .names
            .with_stem(&name_stem(&name))
            .iter()
            .map(|&id| (id, self.paths.path(id)));
        match pick(&name, source, candidates) {
            Some(id) => LinkTarget::Document {
                path: self.paths.path(id).to_owned(),
                fragment: fragment.clone(),
            },
            None if n.path_first => edge.target.clone(),
            None => LinkTarget::Unresolved {
                name,
                fragment: fragment.clone(),
            },
        }
    }

    /// The known notes whose names are most like the note name `name` (compared as the
    /// vault rule compares them: the last segment, any case, without `.md`), at most `max`,
    /// most similar first: what to offer when a name resolves to nothing.
    pub fn nearest_notes(&self, name: &str, max: usize) -> Vec<String> {
        let wanted = link_name(name).map_or_else(String::new, |n| name_stem(&n));
        let mut stems: Vec<&str> = self.names.stems().collect();
        stems.sort_unstable();
        markdown_slice::nearest_names(stems, &wanted, max)
            .iter()
            .flat_map(|stem| {
                let mut paths: Vec<&str> = self
                    .names
                    .with_stem(stem)
                    .iter()
                    .map(|&id| self.paths.path(id))
                    .collect();
                paths.sort_unstable();
                paths
            })
            .take(max)
            .map(str::to_owned)
            .collect()
    }

    /// Records that the crawler listed `path` (a document that exists, indexed or not yet).
    /// Returns whether it was new to the graph's count of known documents.
    pub fn note_discovered(&mut self, path: &str) -> Result<bool, GraphError> {
        let id = self.intern(path)?;
        let known_before = self.is_known(id);
        self.discovered[id.index()] = true;
        if !known_before {
            self.names.insert(path, id);
        }
        Ok(!known_before)
    }

    /// Records that the crawler finished without hitting a bound or an error. The graph
    /// counts as complete while every discovered document is also indexed.
    pub fn mark_complete(&mut self) {
        self.crawl_finished = true;
    }

    fn is_known(&self, id: PathId) -> bool {
        self.discovered[id.index()] || self.docs[id.index()].is_some()
    }

    /// How much of the source the graph has seen.
    pub fn coverage(&self) -> Coverage {
        let indexed = self.docs.iter().filter(|d| d.is_some()).count();
        let any_discovered = self.discovered.iter().any(|&d| d);
        let known = (0..self.docs.len())
            .filter(|&i| self.discovered[i] || self.docs[i].is_some())
            .count();
        let bound_reached = self.byte_bound.filter(|_| self.bound_reached);
        Coverage {
            indexed,
            known: any_discovered.then_some(known),
            complete: self.crawl_finished && known == indexed && bound_reached.is_none(),
            bound_reached,
        }
    }

    /// Bytes the graph's paths and links hold, as its byte bound counts them (live entries
    /// only; [`Self::approx_bytes`] counts allocated capacity).
    pub fn held_bytes(&self) -> usize {
        self.held_bytes
    }

    /// Estimated heap bytes held by the graph (capacity-based, without the allocator's own
    /// per-allocation overhead).
    pub fn approx_bytes(&self) -> usize {
        let docs = self.docs.capacity() * size_of::<Option<DocEntry>>()
            + self
                .docs
                .iter()
                .flatten()
                .map(DocEntry::heap_bytes)
                .sum::<usize>();
        let incoming = self.incoming.capacity() * size_of::<Vec<PathId>>()
            + self
                .incoming
                .iter()
                .map(|s| s.capacity() * size_of::<PathId>())
                .sum::<usize>();
        let named_links: usize = self
            .named_links
            .iter()
            .map(|(k, v)| k.len() + v.capacity() * size_of::<PathId>() + 48)
            .sum();
        self.paths.approx_bytes()
            + docs
            + incoming
            + self.discovered.capacity()
            + self.names.approx_bytes()
            + named_links
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc_link(section: Option<&str>, text: &str, path: &str, fragment: Option<&str>) -> Edge {
        Edge {
            section: section.map(str::to_owned),
            text: text.to_owned(),
            target: LinkTarget::Document {
                path: path.to_owned(),
                fragment: fragment.map(str::to_owned),
            },
            note: None,
        }
    }

    fn external(section: Option<&str>, text: &str, url: &str) -> Edge {
        Edge {
            section: section.map(str::to_owned),
            text: text.to_owned(),
            target: LinkTarget::External(url.to_owned()),
            note: None,
        }
    }

    /// (source, section, text, fragment) of each backlink, for compact assertions.
    fn summary(
        graph: &LinkGraph,
        path: &str,
    ) -> Vec<(String, Option<String>, String, Option<String>)> {
        graph
            .backlinks(path)
            .into_iter()
            .map(|b| (b.source, b.section, b.text, b.fragment))
            .collect()
    }

    fn s(text: &str) -> String {
        text.to_owned()
    }

    /// A graph holding one document, `/a.md` (etag `e`), with these edges.
    fn graph_of_a(title: Option<&str>, edges: Vec<Edge>) -> LinkGraph {
        let mut graph = LinkGraph::new();
        graph.update("/a.md", "e", title, edges).unwrap();
        graph
    }

    #[test]
    fn nearest_notes_are_the_known_names_most_like_a_missing_one() {
        let mut graph = LinkGraph::new();
        for path in [
            "/notes/Alpha Note.md",
            "/Beta.md",
            "/archive/Alpha.md",
            "/img.png",
        ] {
            graph.note_discovered(path).unwrap();
        }
        assert_eq!(
            graph.nearest_notes("Alpah Note", 2),
            ["/notes/Alpha Note.md", "/archive/Alpha.md"]
        );
        assert_eq!(graph.nearest_notes("folder/BETA.md", 1), ["/Beta.md"]);
        assert_eq!(graph.nearest_notes("x", 0), Vec::<String>::new());
    }

    #[test]
    fn outbound_keeps_document_order_sections_fragments_and_externals() {
        let mut graph = LinkGraph::new();
        let outcome = graph
            .update(
                "/guide/intro.md",
                "e1",
                Some("Intro"),
                [
                    doc_link(None, "API", "/api.md", None),
                    external(Some("see-also"), "Node", "https://nodejs.org/"),
                    doc_link(Some("see-also"), "errors", "/errors.md", Some("err_x")),
                ],
            )
            .unwrap();
        assert_eq!(outcome, UpdateOutcome::Added);
        let out = graph.outbound("/guide/intro.md").unwrap();
        assert_eq!(
            out,
            vec![
                OutboundLink {
                    section: None,
                    text: s("API"),
                    target: LinkTarget::Document {
                        path: s("/api.md"),
                        fragment: None
                    },
                    embed: false,
                },
                OutboundLink {
                    section: Some(s("see-also")),
                    text: s("Node"),
                    target: LinkTarget::External(s("https://nodejs.org/")),
                    embed: false,
                },
                OutboundLink {
                    section: Some(s("see-also")),
                    text: s("errors"),
                    target: LinkTarget::Document {
                        path: s("/errors.md"),
                        fragment: Some(s("err_x"))
                    },
                    embed: false,
                },
            ]
        );
        assert_eq!(
            graph.outbound("/api.md"),
            None,
            "a link target is not an indexed document"
        );
        assert_eq!(graph.title("/guide/intro.md"), Some("Intro"));
        assert_eq!(graph.etag("/guide/intro.md"), Some("e1"));
        assert!(graph.is_indexed("/guide/intro.md") && !graph.is_indexed("/api.md"));
    }

    #[test]
    fn external_links_are_outbound_only() {
        let graph = graph_of_a(None, vec![external(None, "x", "https://example.com/b.md")]);
        assert!(graph.backlinks("https://example.com/b.md").is_empty());
        assert!(graph.backlinks("/b.md").is_empty());
        assert_eq!(graph.outbound("/a.md").unwrap().len(), 1);
    }

    #[test]
    fn self_links_are_not_edges() {
        let graph = graph_of_a(
            None,
            vec![
                doc_link(Some("top"), "below", "/a.md", Some("below")),
                doc_link(Some("top"), "b", "/b.md", None),
            ],
        );
        assert!(graph.backlinks("/a.md").is_empty());
        assert_eq!(graph.outbound("/a.md").unwrap().len(), 1);
    }

    #[test]
    fn repeated_links_are_stored_once_per_section_target_and_fragment() {
        let graph = graph_of_a(
            Some("A"),
            vec![
                doc_link(Some("one"), "first", "/t.md", Some("x")),
                doc_link(Some("one"), "again", "/t.md", Some("x")),
                doc_link(Some("one"), "other anchor", "/t.md", Some("y")),
                doc_link(Some("two"), "later", "/t.md", Some("x")),
                doc_link(Some("one"), "back in one", "/t.md", Some("x")),
            ],
        );
        let texts: Vec<String> = graph
            .outbound("/a.md")
            .unwrap()
            .into_iter()
            .map(|l| l.text)
            .collect();
        assert_eq!(texts, ["first", "other anchor", "later"]);
        // Backlinks: one per (source, section), the first link of that section.
        assert_eq!(
            summary(&graph, "/t.md"),
            vec![
                (s("/a.md"), Some(s("one")), s("first"), Some(s("x"))),
                (s("/a.md"), Some(s("two")), s("later"), Some(s("x"))),
            ]
        );
        assert_eq!(
            graph.backlinks("/t.md")[0].source_title.as_deref(),
            Some("A")
        );
    }

    #[test]
    fn backlinks_are_ordered_by_source_path_then_section_order_in_the_source() {
        let mut graph = LinkGraph::new();
        // Indexed out of path order, sections out of alphabetical order.
        graph
            .update("/z.md", "e", None, [doc_link(None, "z", "/t.md", None)])
            .unwrap();
        graph
            .update(
                "/a.md",
                "e",
                None,
                [
                    doc_link(Some("zeta"), "first", "/t.md", None),
                    doc_link(None, "x", "/other.md", None),
                    doc_link(Some("alpha"), "second", "/t.md", None),
                ],
            )
            .unwrap();
        graph
            .update(
                "/dir/m.md",
                "e",
                None,
                [doc_link(Some("s"), "m", "/t.md", None)],
            )
            .unwrap();
        let got: Vec<(String, Option<String>)> = graph
            .backlinks("/t.md")
            .into_iter()
            .map(|b| (b.source, b.section))
            .collect();
        assert_eq!(
            got,
            vec![
                (s("/a.md"), Some(s("zeta"))),
                (s("/a.md"), Some(s("alpha"))),
                (s("/dir/m.md"), Some(s("s"))),
                (s("/z.md"), None),
            ]
        );
        assert_eq!(summary(&graph, "/other.md").len(), 1);
        assert!(graph.backlinks("/never-seen.md").is_empty());
    }

    #[test]
    fn a_changed_etag_replaces_the_edges_and_the_backlinks_follow() {
        let mut graph = LinkGraph::new();
        graph
            .update(
                "/a.md",
                "v1",
                Some("Old"),
                [doc_link(None, "to b", "/b.md", None)],
            )
            .unwrap();
        graph
            .update(
                "/c.md",
                "v1",
                None,
                [doc_link(None, "c to b", "/b.md", None)],
            )
            .unwrap();
        let outcome = graph
            .update(
                "/a.md",
                "v2",
                Some("New"),
                [doc_link(Some("s"), "to d", "/d.md", None)],
            )
            .unwrap();
        assert_eq!(outcome, UpdateOutcome::Replaced);
        assert_eq!(
            summary(&graph, "/b.md"),
            vec![(s("/c.md"), None, s("c to b"), None)]
        );
        assert_eq!(
            summary(&graph, "/d.md"),
            vec![(s("/a.md"), Some(s("s")), s("to d"), None)]
        );
        assert_eq!(graph.title("/a.md"), Some("New"));
        assert_eq!(graph.etag("/a.md"), Some("v2"));
    }

    #[test]
    fn the_same_etag_is_a_no_op() {
        let mut graph = LinkGraph::new();
        graph
            .update(
                "/a.md",
                "v1",
                Some("A"),
                [doc_link(None, "to b", "/b.md", None)],
            )
            .unwrap();
        let before = graph.approx_bytes();
        let outcome = graph
            .update(
                "/a.md",
                "v1",
                Some("Other"),
                [doc_link(None, "to c", "/c.md", None)],
            )
            .unwrap();
        assert_eq!(outcome, UpdateOutcome::Unchanged);
        assert_eq!(summary(&graph, "/b.md").len(), 1);
        assert!(graph.backlinks("/c.md").is_empty());
        assert_eq!(graph.title("/a.md"), Some("A"));
        assert_eq!(
            graph.approx_bytes(),
            before,
            "not even the target path was interned"
        );
    }

    #[test]
    fn removing_a_document_drops_its_edges_but_not_links_to_it() {
        let mut graph = LinkGraph::new();
        graph
            .update("/a.md", "v1", None, [doc_link(None, "to b", "/b.md", None)])
            .unwrap();
        graph
            .update("/b.md", "v1", None, [doc_link(None, "to a", "/a.md", None)])
            .unwrap();
        assert!(graph.remove("/a.md"));
        assert!(graph.backlinks("/b.md").is_empty());
        assert_eq!(summary(&graph, "/a.md").len(), 1);
        assert!(!graph.is_indexed("/a.md"));
        assert!(!graph.remove("/a.md"));
        assert!(!graph.remove("/unknown.md"));
    }

    #[test]
    fn bad_paths_are_refused_and_change_nothing() {
        let mut graph = LinkGraph::new();
        assert!(matches!(
            graph.update("relative.md", "e", None, []),
            Err(GraphError::NotCanonical { .. })
        ));
        graph
            .update("/a.md", "v1", None, [doc_link(None, "b", "/b.md", None)])
            .unwrap();
        let err = graph
            .update(
                "/a.md",
                "v2",
                None,
                [doc_link(None, "up", "/../x.md", None)],
            )
            .unwrap_err();
        assert!(err.to_string().contains("/../x.md"), "{err}");
        assert_eq!(graph.etag("/a.md"), Some("v1"));
        assert_eq!(summary(&graph, "/b.md").len(), 1);
        assert!(graph.note_discovered("no-slash.md").is_err());
    }

    #[test]
    fn link_texts_and_titles_are_stored_on_one_bounded_line() {
        let mut graph = LinkGraph::new();
        let long = "word ".repeat(200);
        graph
            .update(
                "/a.md",
                "e",
                Some(&long),
                [
                    doc_link(None, "two\n  lines", "/b.md", None),
                    doc_link(Some("s"), &long, "/b.md", None),
                ],
            )
            .unwrap();
        let links = graph.backlinks("/b.md");
        assert_eq!(links[0].text, "two lines");
        assert!(links[1].text.len() <= MAX_LINK_TEXT_BYTES && links[1].text.ends_with('…'));
        assert!(graph.title("/a.md").unwrap().len() <= MAX_TITLE_BYTES);
    }

    #[test]
    fn coverage_follows_discovery_indexing_and_completion() {
        let mut graph = LinkGraph::new();
        let empty = graph.coverage();
        assert_eq!(
            empty,
            Coverage {
                indexed: 0,
                known: None,
                complete: false,
                bound_reached: None
            }
        );

        graph.update("/a.md", "e", None, []).unwrap();
        assert_eq!(
            graph.coverage(),
            Coverage {
                indexed: 1,
                known: None,
                complete: false,
                bound_reached: None
            }
        );

        assert!(graph.note_discovered("/b.md").unwrap());
        assert!(
            !graph.note_discovered("/a.md").unwrap(),
            "already known by being indexed"
        );
        assert!(!graph.note_discovered("/b.md").unwrap());
        assert_eq!(
            graph.coverage(),
            Coverage {
                indexed: 1,
                known: Some(2),
                complete: false,
                bound_reached: None
            }
        );

        graph.mark_complete();
        assert!(!graph.coverage().complete, "/b.md is known but not indexed");
        graph.update("/b.md", "e", None, []).unwrap();
        assert_eq!(
            graph.coverage(),
            Coverage {
                indexed: 2,
                known: Some(2),
                complete: true,
                bound_reached: None
            }
        );

        graph.note_discovered("/c.md").unwrap();
        assert!(
            !graph.coverage().complete,
            "a new document appeared after the crawl"
        );
        assert!(graph.remove("/c.md"));
        assert!(graph.coverage().complete, "it was gone after all");
    }

    #[test]
    fn targets_no_longer_linked_are_forgotten() {
        let mut graph = LinkGraph::new();
        let links_to =
            |i: usize| (0..50).map(move |j| doc_link(None, "t", &format!("/t{i:03}-{j}.md"), None));
        graph.update("/a.md", "e000", None, links_to(0)).unwrap();
        let held = graph.held_bytes();
        for i in 1..200 {
            graph
                .update("/a.md", &format!("e{i:03}"), None, links_to(i))
                .unwrap();
        }
        assert_eq!(
            graph.held_bytes(),
            held,
            "the same shape holds the same bytes"
        );
        assert_eq!(graph.paths.live(), 51, "/a.md and its 50 current targets");
        assert_eq!(graph.paths.len(), 101, "released ids were reused");
        assert!(graph.backlinks("/t000-0.md").is_empty());
        assert_eq!(graph.backlinks("/t199-0.md").len(), 1);

        graph
            .update(
                "/b.md",
                "e",
                None,
                [doc_link(None, "t", "/t199-0.md", None)],
            )
            .unwrap();
        assert!(graph.remove("/a.md"));
        assert_eq!(
            graph.paths.live(),
            2,
            "/b.md and the target it still links to"
        );
        assert!(!graph.remove("/a.md"), "forgotten for good");
        assert!(graph.remove("/b.md"));
        assert_eq!((graph.paths.live(), graph.held_bytes()), (0, 0));
    }

    #[test]
    fn the_byte_bound_refuses_documents_and_coverage_says_so() {
        let bound = 20_000;
        let mut graph = LinkGraph::with_byte_bound(bound);
        let mut refused = 0;
        for i in 0..100 {
            let edges =
                (0..10).map(|j| doc_link(Some("s"), "some text", &format!("/d{j}.md"), None));
            match graph.update(&format!("/doc{i}.md"), "e", None, edges) {
                Ok(_) => {}
                Err(GraphError::OverBound { bound: b }) => {
                    assert_eq!(b, bound);
                    refused += 1;
                }
                Err(e) => panic!("{e}"),
            }
            assert!(
                graph.held_bytes() <= bound,
                "{} > {bound}",
                graph.held_bytes()
            );
            assert!(
                graph.approx_bytes() < 4 * bound,
                "allocations follow the bound too"
            );
        }
        assert!(refused > 0 && refused < 100, "{refused}");
        assert!(!graph.is_indexed("/doc99.md"));
        graph.mark_complete();
        let coverage = graph.coverage();
        assert_eq!(coverage.bound_reached, Some(bound));
        assert!(!coverage.complete, "refused links are missing links");
        assert!(
            coverage
                .to_string()
                .ends_with("(memory bound of 20000 bytes reached)"),
            "{coverage}"
        );

        // A replaced document that no longer fits loses its stale links too.
        let many = (0..1000).map(|j| doc_link(None, "t", &format!("/many{j}.md"), None));
        assert!(graph.update("/doc0.md", "e2", None, many).is_err());
        assert!(graph.outbound("/doc0.md").is_none());
        assert!(
            graph.paths.get("/many0.md").is_none(),
            "its targets were not kept"
        );
        assert!(LinkGraph::new().coverage().bound_reached.is_none());
    }

    #[test]
    fn the_graph_can_be_shared_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<LinkGraph>();
    }

    #[test]
    fn approx_bytes_grows_with_the_edges() {
        let mut graph = LinkGraph::new();
        let empty = graph.approx_bytes();
        let edges = (0..100).map(|i| {
            doc_link(
                Some("s"),
                "some link text",
                &format!("/t{i}.md"),
                Some("anchor"),
            )
        });
        graph.update("/a.md", "e", None, edges).unwrap();
        let full = graph.approx_bytes();
        // 100 edges of 36 bytes, their texts and fragments, and 100 interned paths.
        assert!(
            full - empty > 100 * (size_of::<StoredEdge>() + 14 + 6 + 7),
            "{empty} -> {full}"
        );
        assert_eq!(size_of::<StoredEdge>(), 36);
        assert_eq!(
            size_of::<Option<DocEntry>>(),
            80,
            "the per-path slot the README counts"
        );
    }
}
