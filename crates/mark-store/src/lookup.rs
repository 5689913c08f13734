//! LOOKUP, the card catalog: parse the request, keep the index of the
//! documents current, match and rank them, and write the table.
//!
//! Matching (PROTOCOL.md): query words follow mark-proto's word rule,
//! lower-cased, at least 2 characters (`*` matches everything). By default
//! (all words) a document whose title or tags hold every word is one
//! bare-path row in catalog mode; otherwise each section whose text or
//! headings (its own and those above it) hold every word is a row, words
//! also being found in the document's title and tags as long as one is in
//! the section's text or headings. With `terms: any` a section needs one of
//! the words in its text or headings, and ranks higher the more and the
//! rarer the words it holds; catalog rows still need every word. Body mode
//! always works on sections and adds a snippet.
//!
//! A document's "title" here is its title and its aliases (frontmatter
//! `aliases`, `alias`); its tags are the frontmatter's and the inline
//! `#tags` of its body (markdown-slice's rule), and `filter: tag=x` also
//! takes tags nested under `x` (`x/y`).
//!
//! Ranking: tantivy's BM25 over weighted fields (see `text_index`),
//! scaled by `0.7 + 0.3 × importance` (frontmatter `importance` in 0..=1,
//! else 0.5); ties break by path, then anchor. A section that holds a word
//! itself (in its text or its own heading) ranks above every section
//! matched only through the headings above it or the document's title and
//! tags: otherwise a document's title word matches each of its sections,
//! and the emptiest ones (a `Notes` heading over dated subsections) would
//! outrank the sections that say something. Deterministic: no randomness,
//! sorted output.
//!
//! Every match is counted (`total`) and filtered (scope, filters, read
//! rights: once per document), but only the rows within the limit are
//! put in order (a selection, then a sort of those) and built.
//!
//! The index is kept current by the engine's writes and, for changes made
//! outside it, by a walk of the store's stamps at most once per re-check
//! interval; it is never walked per query. `/sha256-…` FETCHes read it too.
//! It lives in RAM, or past [`IndexStorage::ram_bytes`] of markdown
//! persisted in a cache folder (memory-mapped, shared by the processes
//! that serve one source, brought current by the same re-check at the
//! next start: see `persisted`).

mod catalog_file;
mod persisted;

pub use persisted::KeptIndex;

use crate::clock::parse_time_or_date;
use crate::paths::SafePath;
use crate::store::{Stamp, Store};
use crate::text_index::{DocumentEntry, LinkEntry, MAX_HELD_WORDS, SectionEntry, TextIndex};
use mark_proto::lookup::{LookupRow, LookupTable, query_words, word_spans};
use mark_proto::{Metadata, Response, Status};
use markdown_slice::{Document, Link, Target, slugify, tag_matches};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io;
use std::ops::Range;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};
use tantivy::DocAddress;

pub use mark_proto::lookup::MatchMode;

/// Rows returned when the request names no `limit`.
pub const DEFAULT_LIMIT: usize = 10;
/// Most rows one LOOKUP returns.
pub const MAX_LIMIT: usize = 1000;
/// Importance of a document whose frontmatter names none (or one outside 0..=1).
pub const DEFAULT_IMPORTANCE: f64 = 0.5;
/// How much the links to a section add to its any-word score: the sum of
/// the best [`LINK_SOURCES`] link contexts' scores times this. Measured on
/// the Brackwater and Node corpora (mark-bench ranking and orientation):
/// 1.5 over the two best links lets a hub's "Current phase: [Phase 10]"
/// lift that phase for "which phase is current", while every ranking
/// target still holds; more weight or more links let much-linked glossary
/// entries outrank the sections a query names.
pub const LINK_WEIGHT: f64 = 1.5;
/// Links counted per section (the best-scoring ones).
pub const LINK_SOURCES: usize = 2;
/// The format of a persisted index: its schema, its tokenizer, what
/// parsing keeps of a document (the catalog file) and its ranking. Every
/// change to one of them bumps it (DESIGN.md, wave-3 rule 6), ranking
/// changes included: an index of another format is never read, each
/// format keeps its own folder (two releases on one machine do not
/// rebuild each other's), and the rows of a persisted index stay exactly
/// a fresh build's.
pub const INDEX_FORMAT: u32 = 2;
/// Links of one document indexed (the first ones): a page that is a list of
/// 100,000 links says little about each.
const MAX_LINKS: usize = 1000;
/// Most links to other documents' sections around a link (see
/// [`section_links`]) for it to be indexed.
const MAX_NEARBY_LINKS: usize = 3;
/// Bytes of a link's paragraph indexed on each side of the link.
const LINK_CONTEXT: usize = 120;
/// Longest snippet, in bytes as written in the table (escapes included).
pub const MAX_SNIPPET: usize = 240;

/// Characters the table writer escapes with a backslash (each costs a byte).
const ESCAPED: [char; 9] = ['\\', '|', '`', '*', '_', '[', ']', '<', '>'];

/// What the query asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Terms {
    /// `*`: every document (catalog) or section (body).
    All,
    /// Whole words, lower-cased, each at least 2 characters, deduplicated,
    /// without English function words unless the query holds nothing else
    /// (see [`crate::function_words`]).
    Words(Vec<String>),
}

/// One `filter` clause; all clauses must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    /// `tag=x`: the document has tag `x` or one nested under it (`x/y`),
    /// frontmatter or inline, case-insensitively (markdown-slice's rule).
    Tag(String),
    /// `modified-after=T`: modified strictly after T (RFC 3339 or a date).
    ModifiedAfter(i64),
    /// `modified-before=T`: modified strictly before T.
    ModifiedBefore(i64),
}

/// A parsed LOOKUP request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupQuery {
    /// The terms.
    pub terms: Terms,
    /// The filters.
    pub filters: Vec<Filter>,
    /// Most rows to return (1 to [`MAX_LIMIT`]).
    pub limit: usize,
    /// Catalog or body matching.
    pub mode: MatchMode,
    /// `terms: any`: a row needs one of the words, not all.
    pub any: bool,
    /// `columns: bytes`: each row says the size of what its path fetches.
    pub bytes: bool,
    /// `columns: lacks`: each row names the query words it does not hold.
    pub lacks: bool,
}

impl LookupQuery {
    /// Reads `query`, `filter`, `limit`, `match` and `terms` from request metadata.
    /// The error is one sentence for a `bad-request` body.
    pub fn from_metadata(meta: &Metadata) -> Result<LookupQuery, String> {
        let raw = meta
            .get("query")
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .ok_or("LOOKUP needs a `query` (words, or `*` for everything).")?;
        let terms = if raw == "*" {
            Terms::All
        } else {
            let words = crate::function_words::content_words(raw);
            if words.is_empty() {
                return Err(format!(
                    "The query `{raw}` has no word of at least 2 characters."
                ));
            }
            Terms::Words(words)
        };
        let mut filters = Vec::new();
        for clause in entries(meta, "filter") {
            let (key, value) = clause
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| format!("Filter `{clause}` is not `key=value`."))?;
            let time = || {
                parse_time_or_date(value).ok_or_else(|| {
                    format!("Filter `{clause}` needs an RFC 3339 time or a YYYY-MM-DD date.")
                })
            };
            filters.push(match key {
                "tag" if !value.is_empty() => Filter::Tag(value.to_lowercase()),
                "tag" => return Err(format!("Filter `{clause}` names no tag; use tag=NAME.")),
                "modified-after" => Filter::ModifiedAfter(time()?),
                "modified-before" => Filter::ModifiedBefore(time()?),
                _ => {
                    return Err(format!(
                        "Unknown filter `{clause}`; use tag=, modified-after= or modified-before=."
                    ));
                }
            });
        }
        let limit = match meta.get("limit").map(str::trim) {
            None => DEFAULT_LIMIT,
            Some(v) => match v.parse::<usize>() {
                Ok(n) if n >= 1 => n.min(MAX_LIMIT),
                _ => {
                    return Err(format!(
                        "`limit: {v}` must be a whole number from 1 to {MAX_LIMIT}."
                    ));
                }
            },
        };
        let mode = match meta.get("match").map(str::trim) {
            None => MatchMode::Catalog,
            Some(m) => MatchMode::parse(m)
                .ok_or_else(|| format!("`match: {m}` must be catalog or body."))?,
        };
        let any = match meta.get("terms").map(str::trim) {
            None | Some("all") => false,
            Some("any") => true,
            Some(t) => return Err(format!("`terms: {t}` must be all or any.")),
        };
        let (mut bytes, mut lacks) = (false, false);
        for column in entries(meta, "columns") {
            match column {
                "bytes" => bytes = true,
                "lacks" => lacks = true,
                _ => {
                    return Err(format!(
                        "`columns: {column}` names no optional column; the ones there are: bytes, lacks."
                    ));
                }
            }
        }
        Ok(LookupQuery {
            terms,
            filters,
            limit,
            mode,
            any,
            bytes,
            lacks,
        })
    }
}

/// The comma-separated entries of metadata `key`, trimmed, blanks left out.
fn entries<'m>(meta: &'m Metadata, key: &str) -> impl Iterator<Item = &'m str> {
    meta.get(key)
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
}

/// What LOOKUP keeps of one section outside the text index.
#[derive(Debug)]
struct SectionInfo {
    ord: u64,
    anchor: Option<String>,
    /// Its own heading text; `None` for the preamble.
    heading: Option<String>,
    /// The headings above it as a row shows them (` › `-joined, the
    /// document's title left out): a row says which `Status` it is.
    above: String,
    /// What fetching it sends: its markdown, subsections included (the
    /// preamble's row fetches the whole document).
    bytes: u32,
}

/// What LOOKUP keeps of one document outside the text index (its words
/// and section texts live in the index only).
#[derive(Debug)]
struct IndexedDoc {
    stamp: Stamp,
    /// The path as rows show it (and as ties are broken by).
    encoded: String,
    title: String,
    tags: Vec<String>,
    importance: f64,
    /// Unix seconds; `None` when not known (a modified filter leaves it out).
    modified: Option<i64>,
    content_hash: String,
    /// The catalog row's key.
    ord: u64,
    /// Its markdown's length (what the index holds of it).
    bytes: u64,
    sections: Vec<SectionInfo>,
    /// The keys of its links to other documents' sections.
    links: Vec<u64>,
}

/// One section as read from markdown, before it goes into the index.
struct ParsedSection<'a> {
    anchor: Option<String>,
    heading: Option<String>,
    /// The headings above it, top down, space-separated.
    trail: String,
    /// The same as a row shows them (see [`SectionInfo::above`]).
    above: String,
    /// Its own text (heading line excluded, subsections excluded), each
    /// link as its text (see [`as_read`]).
    text: Cow<'a, str>,
    /// See [`SectionInfo::bytes`].
    bytes: usize,
}

/// Everything LOOKUP reads from one document's markdown. The one place
/// that parses (with `markdown-slice`).
struct Parsed<'a> {
    title: String,
    /// Frontmatter and inline tags (markdown-slice's rule).
    tags: Vec<String>,
    /// Other names of the note (frontmatter `aliases`, `alias`).
    aliases: Vec<String>,
    importance: f64,
    sections: Vec<ParsedSection<'a>>,
    links: Vec<ParsedLink>,
}

/// A link to a section of another document.
struct ParsedLink {
    /// The target document.
    target: SafePath,
    /// The target section's anchor (the fragment as a slug).
    anchor: String,
    /// Its document's title and the words around it (see
    /// [`section_links`]).
    context: String,
}

impl Parsed<'_> {
    /// What the index's title field holds, for the catalog row and every
    /// section: the title, the aliases (names of the note, searched as its
    /// title is) and the tags.
    fn catalog_text(&self) -> String {
        format!(
            "{} {} {}",
            self.title,
            self.aliases.join(" "),
            self.tags.join(" ")
        )
    }

    /// The names the document goes by, each as its query words: its title,
    /// its aliases, its tags (and a nested tag's last part), its file name
    /// without `.md` (not `index` or `README`), and its folder's name. A query word that is one of
    /// them says where the answer lives (`Lumen` for `lumen/index.md`).
    fn names(&self, path: &SafePath) -> Vec<Vec<String>> {
        let segments = path.segments();
        // `index.md` and `README.md` are named by their folder, not their file.
        let file = segments
            .last()
            .map(|f| f.strip_suffix(".md").unwrap_or(f))
            .filter(|f| !f.eq_ignore_ascii_case("index") && !f.eq_ignore_ascii_case("readme"));
        let folder = segments.len().checked_sub(2).map(|i| segments[i].as_str());
        let nested_tags = self
            .tags
            .iter()
            .filter_map(|t| t.rsplit_once('/').map(|(_, last)| last));
        let mut names: Vec<Vec<String>> = std::iter::once(self.title.as_str())
            .chain(self.aliases.iter().map(String::as_str))
            .chain(self.tags.iter().map(String::as_str))
            .chain(nested_tags)
            .chain(file)
            .chain(folder)
            .map(|name| query_words(name).searched)
            .filter(|words| !words.is_empty())
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

fn parse_document<'a>(path: &SafePath, source: &'a str) -> Parsed<'a> {
    let doc = Document::parse(source);
    let fm = doc.frontmatter();
    let title = doc
        .title()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map_or_else(|| path.name().unwrap_or("").to_string(), str::to_string);
    let tags: Vec<String> = doc.tags().into_iter().map(str::to_string).collect();
    let aliases = doc.aliases().to_vec();
    let importance = fm
        .and_then(|f| f.extra.get("importance"))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| (0.0..=1.0).contains(v))
        .unwrap_or(DEFAULT_IMPORTANCE);
    let unwritten = Unwritten::of(&doc);
    let links = section_links(path, source, unwritten, &title);
    let headings = doc.headings();
    let mut sections = Vec::with_capacity(headings.len() + 1);
    // A preamble of a comment alone (a licence header) has nothing to read.
    let preamble = as_read(source, &doc.preamble_range(), unwritten, None);
    if word_spans(&preamble).next().is_some() {
        sections.push(ParsedSection {
            anchor: None,
            heading: None,
            trail: String::new(),
            above: String::new(),
            text: preamble,
            bytes: source.len(),
        });
    }
    for (i, h) in headings.iter().enumerate() {
        let own_end = headings
            .get(i + 1)
            .map_or(doc.body_range().end, |next| next.line.start);
        let mut above = Vec::new();
        let mut parent = h.parent;
        while let Some(p) = parent.and_then(|p| headings.get(p)) {
            above.push(p.text.as_str());
            parent = p.parent;
        }
        above.reverse();
        let shown: Vec<&str> = above.iter().copied().filter(|a| *a != title).collect();
        sections.push(ParsedSection {
            anchor: h.anchor.clone(),
            heading: Some(h.text.clone()),
            trail: above.join(" "),
            above: shown.join(" › "),
            text: as_read(source, &(h.line.end.min(own_end)..own_end), unwritten, None),
            bytes: h.section.len(),
        });
    }
    Parsed {
        title,
        tags,
        aliases,
        importance,
        sections,
        links,
    }
}

/// The links of the document at `path` (titled `title`) to sections of
/// other documents (`#^block` and whole-document links left out), with
/// their contexts (the title, a table's header row, the words around the
/// link), at most [`MAX_LINKS`]. A link with more than [`MAX_NEARBY_LINKS`] such
/// links around it (itself included) is left out: a list of links says
/// little about each, and indexing every one of them would cost the index
/// one entry per link of a link-dense tree.
fn section_links(
    path: &SafePath,
    source: &str,
    unwritten: Unwritten<'_>,
    title: &str,
) -> Vec<ParsedLink> {
    let own = path.decoded();
    let mut found: Vec<(&Link, SafePath, String)> = Vec::new();
    for link in unwritten.links.iter().filter(|l| !l.is_image) {
        let Target::Internal {
            path: target,
            fragment: Some(fragment),
        } = link.resolve(&own)
        else {
            continue;
        };
        if target == own || fragment.starts_with('^') {
            continue;
        }
        let segments = target.split('/').skip(1).map(str::to_string).collect();
        if let Some(target) = SafePath::from_segments(segments, false) {
            found.push((link, target, slugify(&fragment)));
        }
    }
    let mut out = Vec::new();
    for (link, target, anchor) in &found {
        if out.len() == MAX_LINKS {
            break;
        }
        let (window, header) = context_window(source, link);
        // `found` is in source order.
        let first = found.partition_point(|(l, _, _)| l.range.start < window.start);
        let nearby = found[first..]
            .iter()
            .take_while(|(l, _, _)| l.range.start < window.end)
            .count();
        if nearby <= MAX_NEARBY_LINKS {
            // The title says what the paragraph is about ("Current phase:
            // [Phase 10]" on Lantern's page is Lantern's current phase).
            // The link's own text is left out: it mostly repeats the
            // target's heading, and a glossary entry that every note links
            // by its name would otherwise outrank the sections that are
            // about that name.
            let mut context = title.to_string();
            if let Some(h) = header {
                context.push(' ');
                context.push_str(&as_read(source, &h, unwritten, None));
            }
            context.push(' ');
            context.push_str(&as_read(source, &window, unwritten, Some(link)));
            out.push(ParsedLink {
                target: target.clone(),
                anchor: anchor.clone(),
                context,
            });
        }
    }
    out
}

/// The paragraph around `link`, at most [`LINK_CONTEXT`] bytes on each
/// side; in a table, its row (the rows around it are about other things;
/// the row's first cell often names what the link is of) and the table's
/// header row, which says what each column is (a `current phase` column),
/// each looked for within [`TABLE_REACH`] bytes. Only the bytes within
/// reach are searched, so a long list of links costs linear time.
fn context_window(source: &str, link: &Link) -> (Range<usize>, Option<Range<usize>>) {
    let (start, end) = (link.range.start, link.range.end);
    let row_floor = source.floor_char_boundary(start.saturating_sub(TABLE_REACH));
    let row_ceiling = source.floor_char_boundary(end + TABLE_REACH);
    // A row whose start or end is out of reach is read as a paragraph.
    let line_start = match source[row_floor..start].rfind('\n') {
        Some(i) => Some(row_floor + i + 1),
        None => (row_floor == 0).then_some(0),
    };
    let line_end = match source[end..row_ceiling].find('\n') {
        Some(i) => Some(end + i),
        None => (row_ceiling == source.len()).then_some(row_ceiling),
    };
    if let (Some(line_start), Some(line_end)) = (line_start, line_end)
        && table_row(&source[line_start..line_end])
    {
        return (line_start..line_end, table_header(source, line_start));
    }
    let reach = source.floor_char_boundary(start.saturating_sub(LINK_CONTEXT));
    let reach_end = source.floor_char_boundary(end + LINK_CONTEXT);
    let para_start = source[reach..start]
        .rfind("\n\n")
        .map_or(reach, |i| reach + i + 2);
    let para_end = source[end..reach_end]
        .find("\n\n")
        .map_or(reach_end, |i| end + i);
    (para_start..para_end, None)
}

/// How far above a table row its header row is looked for.
const TABLE_REACH: usize = 4096;

fn table_row(line: &str) -> bool {
    line.trim_start().starts_with('|')
}

/// The first row of the table whose row starts at `row_start`, unless the
/// table starts more than [`TABLE_REACH`] bytes above it.
fn table_header(source: &str, row_start: usize) -> Option<Range<usize>> {
    let floor = source.floor_char_boundary(row_start.saturating_sub(TABLE_REACH));
    let mut start = row_start;
    while start > floor {
        let prev_start = source[..start - 1].rfind('\n').map_or(0, |i| i + 1);
        if prev_start < floor || !table_row(&source[prev_start..start - 1]) {
            break;
        }
        start = prev_start;
    }
    if start == row_start || (start == floor && floor > 0) {
        return None;
    }
    let end = source[start..]
        .find('\n')
        .map_or(source.len(), |i| start + i);
    Some(start..end)
}

/// What a reader does not read as written: links (read as their text)
/// and HTML comments (never shown), each in source order.
#[derive(Clone, Copy)]
struct Unwritten<'d> {
    links: &'d [Link],
    comments: &'d [Range<usize>],
}

impl<'d> Unwritten<'d> {
    fn of(doc: &'d Document<&str>) -> Unwritten<'d> {
        Unwritten {
            links: doc.links(),
            comments: doc.comments(),
        }
    }
}

/// `source[range]` as a reader reads it: each link inside it as its text
/// (a destination's words are not what the text says; `skip`, a link
/// left out), each comment as a space; borrowed when neither is inside.
fn as_read<'a>(
    source: &'a str,
    range: &Range<usize>,
    unwritten: Unwritten<'_>,
    skip: Option<&Link>,
) -> Cow<'a, str> {
    let (start, end) = (range.start, range.end);
    let within = |r: &Range<usize>| r.start >= start && r.end <= end;
    let first = unwritten.links.partition_point(|l| l.range.start < start);
    let links = unwritten.links[first..]
        .iter()
        .take_while(|l| l.range.start < end)
        .filter(|l| within(&l.range))
        .map(|l| match skip {
            Some(s) if s.range == l.range => (&l.range, " "),
            _ => (&l.range, l.text.as_str()),
        });
    let first = unwritten.comments.partition_point(|c| c.start < start);
    let comments = unwritten.comments[first..]
        .iter()
        .take_while(|c| c.start < end)
        .filter(|c| within(c))
        .map(|c| (c, " "));
    let mut replaced: Vec<(&Range<usize>, &str)> = links.chain(comments).collect();
    if replaced.is_empty() {
        return Cow::Borrowed(&source[range.clone()]);
    }
    replaced.sort_by_key(|(r, _)| r.start);
    let mut out = String::new();
    let mut at = start;
    for (r, text) in replaced {
        if r.start >= at {
            out.push_str(&source[at..r.start]);
            out.push_str(text);
            at = r.end;
        }
    }
    out.push_str(&source[at..end]);
    Cow::Owned(out)
}

/// Where an index key points: a document's catalog row or one of its
/// sections. No path: a tree's million section rows would each hold a
/// copy (the document's is in [`Catalog::paths`], by `doc`).
#[derive(Debug, Clone, Copy)]
struct RowKey {
    /// The key of its document's catalog row (its own, for a catalog row).
    doc: u64,
    section: Option<usize>,
}

/// Where LOOKUP's index lives: in RAM while the store holds at most
/// `ram_bytes` of markdown (it builds in a blink), else persisted under
/// `folder` in a folder per source (its canonical root, its store mode,
/// [`INDEX_FORMAT`]), memory-mapped, kept between processes and shared by
/// them: the next process reads only what changed. A folder that cannot
/// be written leaves the index in RAM (one line on stderr).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexStorage {
    /// The cache folder holding one folder per source.
    pub folder: PathBuf,
    /// Markdown bytes whose index stays in RAM (0: always persisted).
    pub ram_bytes: u64,
}

impl IndexStorage {
    /// Markdown whose index stays in RAM by default: 1 MiB, which builds
    /// in well under a second (the bundled notes, 420 KB, stay in RAM; see
    /// the README's figures).
    pub const DEFAULT_RAM_BYTES: u64 = 1024 * 1024;

    /// The cache folder both binaries share unless told otherwise:
    /// `$XDG_CACHE_HOME/mark`, else `$HOME/.cache/mark`.
    pub fn default_folder() -> Option<PathBuf> {
        let absolute = |var: &str| {
            std::env::var_os(var)
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        absolute("XDG_CACHE_HOME")
            .or_else(|| absolute("HOME").map(|home| home.join(".cache")))
            .map(|cache| cache.join("mark"))
    }

    /// Reads an `--index-dir` value as it is, `''` included (which keeps
    /// nothing: see [`IndexStorage::in_folder_or_cache`]).
    pub fn parse_folder(value: &str) -> Result<PathBuf, std::convert::Infallible> {
        Ok(PathBuf::from(value))
    }

    /// The storage under `folder`, else under [`IndexStorage::default_folder`];
    /// `None` (always in RAM, nothing persisted) for an empty `folder`
    /// (`--index-dir ''`) or when no cache folder is known.
    pub fn in_folder_or_cache(folder: Option<PathBuf>, ram_bytes: u64) -> Option<IndexStorage> {
        let folder = match folder {
            Some(f) if f.as_os_str().is_empty() => return None,
            Some(f) => f,
            None => Self::default_folder()?,
        };
        Some(IndexStorage { folder, ram_bytes })
    }
}

/// Seconds between two re-checks of the folder for changes made outside
/// the engine, unless set with `Catalog::set_recheck`.
pub const DEFAULT_RECHECK: Duration = Duration::from_secs(5);

/// The index: the text index plus what rows need (titles, tags, anchors),
/// kept current by the engine's own writes ([`Catalog::document_changed`])
/// and by a re-check of the store's stamps at most once per `recheck`, for
/// changes made outside the engine (a flat folder's files, another
/// process). A LOOKUP never walks the store otherwise.
#[derive(Debug)]
pub(crate) struct Catalog {
    docs: BTreeMap<SafePath, IndexedDoc>,
    rows: HashMap<u64, RowKey>,
    /// Each document's path, by its catalog row's key.
    paths: HashMap<u64, SafePath>,
    /// Built on first use, so opening an engine stays cheap.
    index: Option<TextIndex>,
    next_ord: u64,
    checked_at: Option<SystemTime>,
    recheck: Duration,
    storage: Option<IndexStorage>,
    /// Markdown bytes of the indexed documents.
    indexed_bytes: u64,
    /// What each indexed link points at, by its key.
    links: HashMap<u64, LinkKey>,
    /// A persisted index's state; `None` in RAM.
    persisted: Option<persisted::Persisted>,
}

/// Where an indexed link is and what it points at.
#[derive(Debug)]
struct LinkKey {
    /// The catalog row key of the document holding it (see [`Catalog::paths`]).
    source: u64,
    target: SafePath,
    anchor: String,
}

impl Default for Catalog {
    fn default() -> Catalog {
        Catalog {
            docs: BTreeMap::new(),
            rows: HashMap::new(),
            paths: HashMap::new(),
            index: None,
            next_ord: 0,
            checked_at: None,
            recheck: DEFAULT_RECHECK,
            storage: None,
            indexed_bytes: 0,
            links: HashMap::new(),
            persisted: None,
        }
    }
}

/// Keeps the best `n` of `ranked`, in rank order, and returns the others,
/// unordered.
fn best_first<'a>(ranked: &mut Vec<Ranked<'a>>, n: usize) -> Vec<Ranked<'a>> {
    if n < ranked.len() {
        if let Some(last) = n.checked_sub(1) {
            ranked.select_nth_unstable_by(last, Ranked::order);
        }
        let rest = ranked.split_off(n);
        ranked.sort_by(Ranked::order);
        return rest;
    }
    ranked.sort_by(Ranked::order);
    Vec::new()
}

/// Rows of one LOOKUP, ready to write.
#[derive(Debug)]
pub(crate) struct LookupResult {
    rows: Vec<LookupRow>,
    /// Rows found before the limit.
    total: usize,
}

impl LookupResult {
    /// `ok` with `matches: N`, `total: N` (and `match: body`, `terms: any`,
    /// the `columns` asked) and the table.
    pub(crate) fn into_response(self, query: &LookupQuery) -> Response {
        let mut resp = Response::new(Status::Ok)
            .with_meta("matches", self.rows.len().to_string())
            .with_meta("total", self.total.to_string());
        if query.mode == MatchMode::Body {
            resp = resp.with_meta("match", MatchMode::Body.as_str());
        }
        if query.any {
            resp = resp.with_meta("terms", "any");
        }
        let columns: Vec<&str> = [(query.bytes, "bytes"), (query.lacks, "lacks")]
            .into_iter()
            .filter_map(|(asked, name)| asked.then_some(name))
            .collect();
        if !columns.is_empty() {
            resp = resp.with_meta("columns", columns.join(", "));
        }
        resp.with_body(mark_proto::lookup::write(&LookupTable {
            mode: query.mode,
            rows: self.rows,
            bytes_column: query.bytes,
            lacks_column: query.lacks,
        }))
    }
}

/// A snippet of `text` around the first query word, one line, at most
/// [`MAX_SNIPPET`] bytes once escaped.
fn snippet(text: &str, terms: &Terms) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let hit = match terms {
        Terms::All => 0,
        Terms::Words(words) => word_spans(&flat)
            .find(|(_, w)| words.contains(&w.to_lowercase()))
            .map_or(0, |(i, _)| i),
    };
    // Start a little before the hit, at a word boundary, for context.
    let mut start = flat.ceil_char_boundary(hit.saturating_sub(60));
    if start > 0 {
        start = flat[start..hit].find(' ').map_or(hit, |i| start + i + 1);
    }
    let lead = if start > 0 { "… " } else { "" };
    let mut out = String::from(lead);
    let mut cost = lead.len();
    let rest = &flat[start..];
    for (i, c) in rest.char_indices() {
        let c_cost = c.len_utf8() + usize::from(ESCAPED.contains(&c));
        // Leave room for a closing ellipsis when the text goes on.
        let room = if rest.len() - i > c.len_utf8() {
            MAX_SNIPPET - " …".len()
        } else {
            MAX_SNIPPET
        };
        if cost + c_cost > room {
            out.push_str(" …");
            return out;
        }
        out.push(c);
        cost += c_cost;
    }
    out
}

impl Catalog {
    /// Sets how often changes made outside the engine are looked for.
    pub(crate) fn set_recheck(&mut self, every: Duration) {
        self.recheck = every;
    }

    /// Sets where the index lives (see [`IndexStorage`]); `None`: in RAM.
    pub(crate) fn set_storage(&mut self, storage: Option<IndexStorage>) {
        self.storage = storage;
    }

    fn index(&mut self) -> io::Result<&mut TextIndex> {
        if self.index.is_none() {
            self.index = Some(TextIndex::new()?);
        }
        self.index
            .as_mut()
            .ok_or_else(|| io::Error::other("search index missing"))
    }

    /// Walks the store's stamps when the last walk is older than `recheck`
    /// (or never happened, or the clock went back), re-reading what changed
    /// and forgetting what is gone; then commits what changed. The first
    /// walk of a persisted index is its start-up check: only what changed
    /// since the last process's commit is read.
    fn recheck_if_due(&mut self, store: &Store, now: SystemTime) -> io::Result<()> {
        let due = self.checked_at.is_none_or(|at| {
            now.duration_since(at)
                .map_or(true, |elapsed| elapsed >= self.recheck)
        });
        if due {
            let found = store.walk(&SafePath::root())?;
            loop {
                self.choose_place(store, &found);
                let live: BTreeSet<&SafePath> = found.iter().map(|(p, _)| p).collect();
                let gone: Vec<SafePath> = self
                    .docs
                    .keys()
                    .filter(|p| !live.contains(p))
                    .cloned()
                    .collect();
                let changed: Vec<&(SafePath, Stamp)> = found
                    .iter()
                    .filter(|(path, stamp)| self.docs.get(path).is_none_or(|d| d.stamp != *stamp))
                    .collect();
                if gone.is_empty() && changed.is_empty() {
                    break;
                }
                if !self.begin_update()? {
                    // Another process's commit was read, or the index fell
                    // back to RAM: what changed is asked again.
                    continue;
                }
                for path in gone {
                    self.forget(&path)?;
                }
                for (path, stamp) in changed {
                    self.reindex(store, path, *stamp)?;
                }
                if !self.outgrew_ram() {
                    break;
                }
            }
            self.checked_at = Some(now);
        }
        if let Err(e) = self.save(now) {
            self.fall_back_to_ram(&e.to_string());
            return self.recheck_if_due(store, now);
        }
        Ok(())
    }

    /// Brings one document up to date after the engine wrote it (a
    /// persisted index commits it at once, so its writer lock is held
    /// only for this update).
    pub(crate) fn document_changed(
        &mut self,
        store: &Store,
        doc: &SafePath,
        now: SystemTime,
    ) -> io::Result<()> {
        if self.checked_at.is_none() {
            // Nothing indexed yet: the first LOOKUP reads everything anyway.
            return Ok(());
        }
        if !self.begin_update()? {
            // The next LOOKUP reads what changed into the index in place.
            self.checked_at = None;
            return Ok(());
        }
        match store.walk(doc)?.into_iter().find(|(p, _)| p == doc) {
            Some((path, stamp)) => self.reindex(store, &path, stamp)?,
            None => self.forget(doc)?,
        }
        if self.outgrew_ram() {
            // The next LOOKUP reads everything into the persisted index.
            self.checked_at = None;
        }
        if let Err(e) = self.save(now) {
            self.fall_back_to_ram(&e.to_string());
        }
        Ok(())
    }

    fn forget(&mut self, path: &SafePath) -> io::Result<()> {
        if let Some(old) = self.docs.remove(path) {
            self.indexed_bytes -= old.bytes;
            self.rows.remove(&old.ord);
            self.paths.remove(&old.ord);
            for s in &old.sections {
                self.rows.remove(&s.ord);
            }
            for l in &old.links {
                self.links.remove(l);
            }
            self.index()?.remove(&path.encoded())?;
        }
        Ok(())
    }

    /// A key no row or link has had.
    fn next_key(&mut self) -> u64 {
        self.next_ord += 1;
        self.next_ord - 1
    }

    /// A new key for the catalog row of `path` (`section: None`) or for
    /// its section `(catalog row's key, index)`.
    fn take_ord(&mut self, path: &SafePath, section: Option<(u64, usize)>) -> u64 {
        let ord = self.next_key();
        let (doc, section) = section.map_or((ord, None), |(doc, i)| (doc, Some(i)));
        if section.is_none() {
            self.paths.insert(ord, path.clone());
        }
        self.rows.insert(ord, RowKey { doc, section });
        ord
    }

    /// Re-reads one document into the index (an archived or damaged one
    /// is kept out of results; VERSIONS reports damage).
    /// A stamp that moved over the same bytes (a touch, a copy, a
    /// version republished unchanged) only moves the stamp and the time.
    fn reindex(&mut self, store: &Store, path: &SafePath, stamp: Stamp) -> io::Result<()> {
        let snap = match store.current(path) {
            Ok(Some(snap)) => snap,
            Ok(None) => return self.forget(path),
            Err(e) => {
                tracing::warn!(document = %path.decoded(), error = %e, "cannot index a document");
                return self.forget(path);
            }
        };
        let content_hash = snap.content_hash();
        if let Some(held) = self.docs.get_mut(path)
            && held.content_hash == content_hash
            && held.stamp.archived == stamp.archived
        {
            held.stamp = stamp;
            held.modified = Some(snap.modified);
            return Ok(());
        }
        let source = String::from_utf8_lossy(snap.body());
        self.insert(path, stamp, &source, Some(snap.modified), content_hash)
    }

    /// Indexes one document's served body, replacing what was held for it.
    fn insert(
        &mut self,
        path: &SafePath,
        stamp: Stamp,
        source: &str,
        modified: Option<i64>,
        content_hash: String,
    ) -> io::Result<()> {
        self.forget(path)?;
        let bytes = if stamp.archived {
            0
        } else {
            source.len() as u64
        };
        self.indexed_bytes += bytes;
        let parsed = parse_document(path, source);
        let encoded = path.encoded();
        let meta_text = parsed.catalog_text();
        let names = parsed.names(path);
        let doc_ord = self.take_ord(path, None);
        let mut sections = Vec::with_capacity(parsed.sections.len());
        let indexed = !stamp.archived;
        for (i, s) in parsed.sections.into_iter().enumerate() {
            let ord = self.take_ord(path, Some((doc_ord, i)));
            if indexed {
                self.index()?.add_section(&SectionEntry {
                    ord,
                    path: &encoded,
                    title: &meta_text,
                    names: &names,
                    heading: s.heading.as_deref().unwrap_or(""),
                    trail: &s.trail,
                    text: &s.text,
                })?;
            }
            sections.push(SectionInfo {
                ord,
                anchor: s.anchor,
                heading: s.heading,
                above: s.above,
                bytes: u32::try_from(s.bytes).unwrap_or(u32::MAX),
            });
        }
        let mut links = Vec::new();
        if indexed {
            for l in parsed.links {
                let ord = self.next_key();
                self.index()?.add_link(&LinkEntry {
                    ord,
                    path: &encoded,
                    context: &l.context,
                })?;
                self.links.insert(
                    ord,
                    LinkKey {
                        source: doc_ord,
                        target: l.target,
                        anchor: l.anchor,
                    },
                );
                links.push(ord);
            }
        }
        if indexed {
            let headings: Vec<&str> = sections
                .iter()
                .filter_map(|s| s.heading.as_deref())
                .collect();
            self.index()?.add_document(&DocumentEntry {
                ord: doc_ord,
                path: &encoded,
                title: &meta_text,
                headings: &headings.join(" "),
            })?;
        }
        self.docs.insert(
            path.clone(),
            IndexedDoc {
                stamp,
                encoded,
                title: parsed.title,
                tags: parsed.tags,
                importance: parsed.importance,
                modified,
                content_hash,
                ord: doc_ord,
                bytes,
                sections,
                links,
            },
        );
        Ok(())
    }

    /// Documents (not archived) whose served body has `content_hash`, by path.
    pub(crate) fn find_by_content_hash(
        &mut self,
        store: &Store,
        content_hash: &str,
        now: SystemTime,
    ) -> io::Result<Vec<SafePath>> {
        self.recheck_if_due(store, now)?;
        Ok(self
            .docs
            .iter()
            .filter(|(_, d)| !d.stamp.archived && d.content_hash == content_hash)
            .map(|(p, _)| p.clone())
            .collect())
    }

    /// Runs `query` over the documents in `scope` that `readable` allows.
    pub(crate) fn search(
        &mut self,
        store: &Store,
        scope: &SafePath,
        query: &LookupQuery,
        readable: &dyn Fn(&SafePath) -> bool,
        now: SystemTime,
    ) -> io::Result<LookupResult> {
        self.recheck_if_due(store, now)?;
        self.search_indexed(scope, query, readable)
    }

    /// For an any-word query, what the links to each section add to its
    /// score (by the section's key): see [`LINK_WEIGHT`]. Only links whose
    /// context holds a query word count, and only from documents the
    /// caller may read (a link's context is that document's text).
    fn link_scores(
        &self,
        index: &TextIndex,
        searcher: &tantivy::Searcher,
        query: &LookupQuery,
        readable: &dyn Fn(&SafePath) -> bool,
    ) -> io::Result<HashMap<u64, f64>> {
        let (Terms::Words(words), true) = (&query.terms, query.any) else {
            return Ok(HashMap::new());
        };
        // By the source document's key.
        let mut readable_source: HashMap<u64, bool> = HashMap::new();
        let mut per: HashMap<u64, Vec<f64>> = HashMap::new();
        for h in index.links(searcher, words)? {
            let Some(link) = self.links.get(&h.ord) else {
                continue;
            };
            let Some(section) = self.docs.get(&link.target).and_then(|d| {
                d.sections
                    .iter()
                    .find(|s| s.anchor.as_deref() == Some(link.anchor.as_str()))
            }) else {
                continue;
            };
            if *readable_source
                .entry(link.source)
                .or_insert_with(|| self.paths.get(&link.source).is_some_and(readable))
            {
                per.entry(section.ord).or_default().push(f64::from(h.score));
            }
        }
        Ok(per
            .into_iter()
            .map(|(ord, mut found)| {
                found.sort_by(|a, b| b.total_cmp(a));
                let best: f64 = found.iter().take(LINK_SOURCES).sum();
                (ord, LINK_WEIGHT * best)
            })
            .collect())
    }

    /// Runs `query` over what the index holds now.
    fn search_indexed(
        &mut self,
        scope: &SafePath,
        query: &LookupQuery,
        readable: &dyn Fn(&SafePath) -> bool,
    ) -> io::Result<LookupResult> {
        let searcher = self.index()?.searcher()?;
        let index = self
            .index
            .as_ref()
            .ok_or_else(|| io::Error::other("search index missing"))?;
        let mut admission = Admission {
            docs: &self.docs,
            paths: &self.paths,
            verdicts: HashMap::new(),
            scope,
            query,
            readable,
        };
        let link_scores = self.link_scores(index, &searcher, query, readable)?;
        let mut ranked: Vec<Ranked<'_>> = Vec::new();
        let mut with_doc_row: HashSet<u64> = HashSet::new();
        if query.mode == MatchMode::Catalog {
            let hits: Vec<(u64, f64)> = match &query.terms {
                Terms::All => self.docs.values().map(|d| (d.ord, 1.0)).collect(),
                Terms::Words(words) => index
                    .documents(&searcher, words)?
                    .into_iter()
                    .map(|h| (h.ord, f64::from(h.score)))
                    .collect(),
            };
            for (ord, score) in hits {
                let Some(key) = self.rows.get(&ord) else {
                    continue;
                };
                if let Some(doc) = admission.doc(key) {
                    with_doc_row.insert(key.doc);
                    ranked.push(Ranked::new(true, score, ord, None, doc, None, u64::MAX));
                }
            }
        }
        if !(query.mode == MatchMode::Catalog && query.terms == Terms::All) {
            let all = query.terms == Terms::All;
            let hits = match &query.terms {
                Terms::All => index.all_sections(&searcher)?,
                Terms::Words(words) => index.sections(&searcher, words, query.any)?,
            };
            for h in hits {
                let Some(key) = self.rows.get(&h.ord) else {
                    continue;
                };
                if with_doc_row.contains(&key.doc) {
                    continue;
                }
                let Some(doc) = admission.doc(key) else {
                    continue;
                };
                let score = if all {
                    1.0
                } else {
                    f64::from(h.score) + link_scores.get(&h.ord).copied().unwrap_or(0.0)
                };
                let section = key.section.and_then(|i| doc.sections.get(i));
                ranked.push(Ranked::new(
                    all || h.itself,
                    score,
                    h.ord,
                    Some(h.address),
                    doc,
                    section,
                    if query.any { h.held } else { u64::MAX },
                ));
            }
        }
        // Every row found counts; only the rows within the limit are
        // ordered and built (a query matching every section of a large
        // tree stays cheap).
        let total = ranked.len();
        if let (Terms::Words(words), true) = (&query.terms, query.any) {
            // Coordination: every row is ranked again by which of the
            // query's words it holds, each word weighted by how rare it is
            // (its IDF): score × ((held weight + mean weight) / (all weights
            // + mean weight))², so a row holding the rare word that matters
            // beats one holding common ones, and a section a link lifts for
            // words it does not hold stays below one that holds them all
            // (`estuary current phase`: Estuary's "Now" section, not
            // Tidewatch's Phase 8 that its hub calls current). Every row,
            // not only BM25's best: a short section holding every word
            // ranked 47th for `watch fs events saves` behind sections whose
            // headings hold one word, when only BM25's best 40 were ranked
            // again. Squared, with the heading's boost 2 (was 3) beside it:
            // mark-bench ranking, Node questions top-5 23 → 26 of 30, MRR
            // 0.60 → 0.66; bundled 25 → 28, 0.56 → 0.61; every name and
            // heading target still met.
            let weights = index.word_weights(&searcher, words)?;
            let all: f64 = weights.iter().sum();
            let mean = all / weights.len().max(1) as f64;
            for r in &mut ranked {
                let got: f64 = weights
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| r.holds(*i))
                    .map(|(_, w)| w)
                    .sum();
                r.score *= ((got + mean) / (all + mean)).powi(2);
            }
        }
        best_first(&mut ranked, query.limit);
        let mut shown = Vec::with_capacity(ranked.len());
        for r in ranked {
            let doc = r.doc;
            let mut row = LookupRow::document(
                doc.encoded.clone(),
                doc.importance,
                doc.title.clone(),
                doc.tags.clone(),
            );
            if query.bytes {
                row.bytes = Some(r.section.map_or(doc.bytes, |s| u64::from(s.bytes)));
            }
            if let Some(s) = r.section {
                row.anchor = s.anchor.clone();
                if let Some(h) = &s.heading {
                    row.title = if s.above.is_empty() {
                        format!("{} › {h}", doc.title)
                    } else {
                        format!("{} › {} › {h}", doc.title, s.above)
                    };
                }
            }
            if query.mode == MatchMode::Body {
                let text = r
                    .address
                    .map(|a| index.section_text(&searcher, a))
                    .unwrap_or_default();
                row.snippet = Some(snippet(&text, &query.terms));
            }
            if let (true, Terms::Words(words)) = (query.lacks, &query.terms) {
                row.lacks = words
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !r.holds(*i))
                    .map(|(_, w)| w.clone())
                    .collect();
            }
            shown.push(row);
        }
        Ok(LookupResult { total, rows: shown })
    }
}

/// LOOKUP over documents handed to it rather than read from a store: the
/// same parsing, index and ranking as the engine's, for a client that
/// searches what it fetched itself (mark-mcp over a server without LOOKUP).
/// It holds what was inserted until it is removed, nothing else.
///
/// ```
/// use mark_proto::{Request, Status, Verb};
/// let mut index = mark_store::lookup::DocumentIndex::new();
/// index.insert("/pier.md", b"# Pier\n\nPier deploys.\n", None).unwrap();
/// let found = index.lookup(&Request::new(Verb::Lookup, "/").with_meta("query", "deploys"));
/// assert_eq!((found.status, found.meta("matches")), (Status::Ok, Some("1")));
/// ```
#[derive(Debug, Default)]
pub struct DocumentIndex {
    catalog: Catalog,
}

impl DocumentIndex {
    /// An empty index (the tantivy index is built at the first insert).
    pub fn new() -> DocumentIndex {
        DocumentIndex::default()
    }

    /// Indexes the document at `path` (a request path, `/notes/a%20b.md`)
    /// with its body as served and its `modified` metadata (RFC 3339 or a
    /// date; `None`: unknown, so a `modified-…` filter leaves it out),
    /// replacing what was held for it. A body that is not UTF-8 is read
    /// lossily, as the engine reads one.
    pub fn insert(&mut self, path: &str, body: &[u8], modified: Option<&str>) -> io::Result<()> {
        let path = SafePath::parse(path)
            .filter(|p| !p.is_dir_form())
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("`{path}` is not a document path"),
                )
            })?;
        let stamp = Stamp {
            version: 1,
            archived: false,
            len: body.len() as u64,
            mtime_ns: 0,
        };
        let hash = format!("sha256-{}", crate::versioned::sha256_hex(body));
        let modified = modified.and_then(parse_time_or_date);
        self.catalog
            .insert(&path, stamp, &String::from_utf8_lossy(body), modified, hash)
    }

    /// Forgets the document at `path`.
    pub fn remove(&mut self, path: &str) -> io::Result<()> {
        match SafePath::parse(path) {
            Some(path) => self.catalog.forget(&path),
            None => Ok(()),
        }
    }

    /// Whether the document at `path` is held.
    pub fn contains(&self, path: &str) -> bool {
        SafePath::parse(path).is_some_and(|p| self.catalog.docs.contains_key(&p))
    }

    /// Documents held.
    pub fn len(&self) -> usize {
        self.catalog.docs.len()
    }

    /// Whether no document is held.
    pub fn is_empty(&self) -> bool {
        self.catalog.docs.is_empty()
    }

    /// Answers a LOOKUP request (scope = its path) as the engine would:
    /// `ok` with the table, or `bad-request` naming what is wrong.
    pub fn lookup(&mut self, request: &mark_proto::Request) -> Response {
        let Some(scope) = SafePath::parse(&request.path) else {
            return crate::engine::not_found(&request.path);
        };
        let query = match LookupQuery::from_metadata(&request.metadata) {
            Ok(q) => q,
            Err(why) => return crate::engine::bad_request(&why),
        };
        match self
            .catalog
            .search_indexed(&scope, &query, &|_: &SafePath| true)
        {
            Ok(found) => found.into_response(&query),
            Err(e) => crate::engine::server_error(&e),
        }
    }
}

/// Whether a document's rows may be shown (scope, filters, read rights,
/// not archived), decided once per document of a LOOKUP.
struct Admission<'a> {
    docs: &'a BTreeMap<SafePath, IndexedDoc>,
    paths: &'a HashMap<u64, SafePath>,
    /// By the document's catalog key.
    verdicts: HashMap<u64, Option<&'a IndexedDoc>>,
    scope: &'a SafePath,
    query: &'a LookupQuery,
    readable: &'a dyn Fn(&SafePath) -> bool,
}

impl<'a> Admission<'a> {
    fn doc(&mut self, key: &RowKey) -> Option<&'a IndexedDoc> {
        let Admission {
            docs,
            paths,
            scope,
            query,
            readable,
            ..
        } = *self;
        *self.verdicts.entry(key.doc).or_insert_with(|| {
            let path = paths.get(&key.doc)?;
            docs.get(path).filter(|d| {
                path.starts_with(scope)
                    && !d.stamp.archived
                    && passes(d, &query.filters)
                    && readable(path)
            })
        })
    }
}

/// A row found, before the limit.
struct Ranked<'a> {
    /// Holds a word itself (see the module doc).
    itself: bool,
    /// The index's score scaled by the document's importance.
    score: f64,
    ord: u64,
    /// Where its text is (body mode snippets).
    address: Option<DocAddress>,
    doc: &'a IndexedDoc,
    section: Option<&'a SectionInfo>,
    /// Which query words it holds ([`TextIndex`]'s `Hit::held`; a catalog
    /// row, and any row of an all-words query, holds them all).
    held: u64,
}

impl<'a> Ranked<'a> {
    fn new(
        itself: bool,
        score: f64,
        ord: u64,
        address: Option<DocAddress>,
        doc: &'a IndexedDoc,
        section: Option<&'a SectionInfo>,
        held: u64,
    ) -> Ranked<'a> {
        Ranked {
            itself,
            score: score * (0.7 + 0.3 * doc.importance),
            ord,
            address,
            doc,
            section,
            held,
        }
    }

    /// Whether it holds query word `i`. A word past the
    /// [`MAX_HELD_WORDS`] the index tells apart counts as held: it is
    /// neither listed as lacking nor weighed against the row.
    fn holds(&self, i: usize) -> bool {
        i >= MAX_HELD_WORDS || self.held >> i & 1 == 1
    }

    fn anchor(&self) -> Option<&str> {
        self.section.and_then(|s| s.anchor.as_deref())
    }

    /// Rank order: the "holds itself" tier, score, then path and anchor
    /// (the key last, so the order is total).
    fn order(a: &Ranked<'_>, b: &Ranked<'_>) -> Ordering {
        b.itself
            .cmp(&a.itself)
            .then_with(|| b.score.total_cmp(&a.score))
            .then_with(|| a.doc.encoded.cmp(&b.doc.encoded))
            .then_with(|| a.anchor().cmp(&b.anchor()))
            .then_with(|| a.ord.cmp(&b.ord))
    }
}

fn passes(doc: &IndexedDoc, filters: &[Filter]) -> bool {
    filters.iter().all(|f| match f {
        Filter::Tag(tag) => doc.tags.iter().any(|t| tag_matches(t, tag)),
        Filter::ModifiedAfter(t) => doc.modified.is_some_and(|m| m > *t),
        Filter::ModifiedBefore(t) => doc.modified.is_some_and(|m| m < *t),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(pairs: &[(&str, &str)]) -> Metadata {
        pairs.iter().copied().collect()
    }

    #[test]
    fn query_terms_are_lowercased_deduplicated_and_at_least_two_chars() {
        let q = LookupQuery::from_metadata(&meta(&[("query", "Rust  rust a QUIC-notes")])).unwrap();
        assert_eq!(
            q.terms,
            Terms::Words(vec!["rust".into(), "quic".into(), "notes".into()])
        );
        assert_eq!(
            (q.limit, q.mode, q.filters.len()),
            (DEFAULT_LIMIT, MatchMode::Catalog, 0)
        );
        assert_eq!(
            LookupQuery::from_metadata(&meta(&[("query", " * ")]))
                .unwrap()
                .terms,
            Terms::All
        );
        assert!(LookupQuery::from_metadata(&meta(&[("query", "a b c")])).is_err());
        assert!(LookupQuery::from_metadata(&meta(&[])).is_err());
    }

    /// #14.11: an empty `tag=` is named as such, not as an unknown filter
    /// whose fix is the same `tag=`.
    #[test]
    fn an_empty_tag_filter_says_it_names_no_tag() {
        let err = LookupQuery::from_metadata(&meta(&[("query", "harbour"), ("filter", "tag=")]))
            .unwrap_err();
        assert_eq!(err, "Filter `tag=` names no tag; use tag=NAME.");
    }

    #[test]
    fn filters_limit_and_match_parse() {
        let q = LookupQuery::from_metadata(&meta(&[
            ("query", "*"),
            (
                "filter",
                "tag=Rust, modified-after=2026-01-01, modified-before=2026-02-17T10:00:00Z",
            ),
            ("limit", "5000"),
            ("match", "body"),
        ]))
        .unwrap();
        assert_eq!(
            q.filters,
            [
                Filter::Tag("rust".into()),
                Filter::ModifiedAfter(1_767_225_600),
                Filter::ModifiedBefore(1_771_322_400)
            ]
        );
        assert_eq!((q.limit, q.mode), (MAX_LIMIT, MatchMode::Body));
        for bad in [
            ("filter", "tag="),
            ("filter", "size=3"),
            ("limit", "-1"),
            ("match", "all"),
        ] {
            assert!(
                LookupQuery::from_metadata(&meta(&[("query", "*"), bad])).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn snippets_start_near_the_hit_and_fit_the_bound() {
        let text = format!("{} needle {}", "lead ".repeat(50), "tail ".repeat(100));
        let s = snippet(&text, &Terms::Words(vec!["needle".into()]));
        assert!(s.starts_with("… ") && s.ends_with(" …"), "{s}");
        assert!(s.contains("needle") && s.len() <= MAX_SNIPPET);
        let specials = "|".repeat(500);
        let s = snippet(&specials, &Terms::All);
        assert!(
            s.len() + s.matches('|').count() <= MAX_SNIPPET,
            "escaped length counts"
        );
        assert_eq!(snippet("short\n\ntext", &Terms::All), "short text");
        let multibyte = "é".repeat(300);
        assert!(snippet(&multibyte, &Terms::All).len() <= MAX_SNIPPET);
    }

    #[test]
    fn parsing_splits_sections_with_trails_and_reads_frontmatter() {
        let text = "---\ntitle: T\ntags: [a, b]\nimportance: 0.25\n---\nIntro words.\n\n# Top\n\nTop text.\n\n## Sub\n\nSub text.\n";
        let path = SafePath::parse("/d.md").unwrap();
        let d = parse_document(&path, text);
        assert_eq!(
            (d.title.as_str(), d.tags.clone(), d.importance),
            ("T", vec!["a".to_string(), "b".to_string()], 0.25)
        );
        let anchors: Vec<Option<&str>> = d.sections.iter().map(|s| s.anchor.as_deref()).collect();
        assert_eq!(anchors, [None, Some("top"), Some("sub")]);
        let sub = &d.sections[2];
        assert_eq!(
            (sub.heading.as_deref(), sub.trail.as_str()),
            (Some("Sub"), "Top")
        );
        assert_eq!(sub.text.trim(), "Sub text.", "own text only");
        let untitled = parse_document(&SafePath::parse("/x/n.md").unwrap(), "no headings");
        assert_eq!(untitled.title, "n.md");
    }

    #[test]
    fn links_to_sections_of_other_documents_keep_the_words_around_them() {
        let text = "Intro.\n\nCurrent phase: [Phase 2 — Build](roadmap.md#phase-2--build), since May; \
                    see [the glossary](../g.md#Some%20Term).\n\n\
                    Apart: [self](#x), [whole](roadmap.md), [block](roadmap.md#^b1), ![img](i.md#a).\n";
        let d = parse_document(&SafePath::parse("/p/index.md").unwrap(), text);
        let links: Vec<(String, &str, &str)> = d
            .links
            .iter()
            .map(|l| (l.target.decoded(), l.anchor.as_str(), l.context.as_str()))
            .collect();
        assert_eq!(links.len(), 2, "{links:?}");
        assert_eq!(
            (links[0].0.as_str(), links[0].1),
            ("/p/roadmap.md", "phase-2--build")
        );
        let context = links[0].2;
        assert!(
            context.contains("Current phase:") && context.contains("the glossary"),
            "{context}"
        );
        assert!(
            !context.contains("Build") && !context.contains("Apart"),
            "{context}"
        );
        assert_eq!((links[1].0.as_str(), links[1].1), ("/g.md", "some-term"));
        assert!(
            context.starts_with("index.md "),
            "the document's title frames its links: {context}"
        );
        let table = "# Projects\n\n| project | current phase |\n|---|---|\n\
                     | Tidewatch | [Phase 8](t.md#phase-8) |\n| Lantern | [Phase 10](l.md#phase-10) |\n";
        let d = parse_document(&SafePath::parse("/index.md").unwrap(), table);
        let contexts: Vec<&str> = d.links.iter().map(|l| l.context.as_str()).collect();
        assert_eq!(contexts.len(), 2, "{contexts:?}");
        assert!(
            contexts[0].contains("current phase")
                && contexts[0].contains("Tidewatch")
                && !contexts[0].contains("Lantern"),
            "a table row's link has its row and the header row: {}",
            contexts[0]
        );
        assert!(
            contexts[1].contains("current phase") && !contexts[1].contains("Tidewatch"),
            "{}",
            contexts[1]
        );
        // A row's first cell far from its link is still the row's; a row
        // starting beyond the table reach is read as a paragraph (its window
        // starts inside the row, here right after a two-byte character).
        let row = |before: usize| {
            let text = format!(
                "| h | i |\n|---|---|\n| Driftwood {}|{}[x](t.md#a) |\n",
                "é".repeat(50),
                "a".repeat(before)
            );
            let d = parse_document(&SafePath::parse("/long.md").unwrap(), &text);
            assert_eq!(d.links.len(), 1);
            d.links[0].context.clone()
        };
        let near = row(LINK_CONTEXT - 1);
        assert!(
            near.contains("| h |") && near.contains("Driftwood"),
            "{near}"
        );
        let far = row(TABLE_REACH - 1);
        assert!(
            !far.contains("| h |") && !far.contains("Driftwood"),
            "{far}"
        );
        let list = "[a](x.md#a), [b](x.md#b), [c](x.md#c) and [d](x.md#d).\n\n[e](x.md#e)\n";
        let d = parse_document(&SafePath::parse("/p/list.md").unwrap(), list);
        let anchors: Vec<&str> = d.links.iter().map(|l| l.anchor.as_str()).collect();
        assert_eq!(
            anchors,
            ["e"],
            "four links in one paragraph say little about each"
        );
    }

    const ROADMAP: &str = "# Roadmap\n\n## Phase 1 — A\n\nWindow one.\n\n\
                           ## Phase 2 — B\n\nWindow two.\n\n## Phase 3 — C\n\nWindow three.\n";
    const HUB: &str = "# Hub\n\nThe running one: [B](roadmap.md#phase-2--b).\n";

    /// A catalog holding `docs` (path, markdown), each at version 1.
    fn catalog_of<'t>(docs: impl IntoIterator<Item = (String, &'t str)>) -> Catalog {
        let mut catalog = Catalog::default();
        let stamp = Stamp {
            version: 1,
            archived: false,
            len: 0,
            mtime_ns: 0,
        };
        for (path, text) in docs {
            let path = SafePath::parse(&path).unwrap();
            catalog
                .insert(&path, stamp, text, None, String::new())
                .unwrap();
        }
        catalog
    }

    /// [`catalog_of`] `docs` among `notes` unrelated notes, so that a word
    /// is as rare as in a real corpus.
    fn catalog_among_notes<'t>(
        docs: impl IntoIterator<Item = (String, &'t str)>,
        notes: usize,
    ) -> Catalog {
        let all: Vec<(String, String)> = docs
            .into_iter()
            .map(|(p, t)| (p, t.to_string()))
            .chain((0..notes).map(|i| {
                (
                    format!("/note-{i}.md"),
                    format!("# Note {i}\n\nSomething else.\n"),
                )
            }))
            .collect();
        catalog_of(all.iter().map(|(p, t)| (p.clone(), t.as_str())))
    }

    /// The rows of an any-word body LOOKUP of `query`, everything readable.
    fn any_word_rows(catalog: &mut Catalog, query: &str) -> Vec<LookupRow> {
        let query = LookupQuery::from_metadata(&meta(&[
            ("query", query),
            ("match", "body"),
            ("terms", "any"),
        ]))
        .unwrap();
        catalog
            .search_indexed(&SafePath::root(), &query, &|_| true)
            .unwrap()
            .rows
    }

    #[test]
    fn a_word_that_names_a_document_picks_it() {
        // Lumen is mentioned more often elsewhere than in its own document,
        // whose folder, file and title are its name.
        let mentions = "# Roadmap\n\n## Next\n\nThe project Lumen, Lumen again, Lumen and Lumen: the project of projects.\n";
        // Like every project hub, it carries the tag `project`.
        let index = "---\ntags: [project]\n---\n# Lumen\n\nA lantern for the reading room.\n";
        let mut catalog = catalog_among_notes(
            [
                ("/plans/roadmap.md".to_string(), mentions),
                ("/lumen/index.md".to_string(), index),
            ],
            20,
        );
        for query in ["What is project Lumen?", "lumen"] {
            let rows = any_word_rows(&mut catalog, query);
            assert_eq!(rows[0].path, "/lumen/index.md", "{query}: {rows:?}");
        }
        let parsed = parse_document(&SafePath::parse("/lumen/index.md").unwrap(), index);
        let names = parsed.names(&SafePath::parse("/lumen/index.md").unwrap());
        assert_eq!(
            names,
            [vec!["lumen".to_string()], vec!["project".to_string()]]
        );
    }

    /// The roadmap's rows for `terms` (`any` or `all`), in rank order, with
    /// the hub readable or not.
    fn roadmap_rows(terms: &str, hub_readable: bool) -> Vec<String> {
        let mut catalog = catalog_of([
            ("/roadmap.md".to_string(), ROADMAP),
            ("/hub.md".to_string(), HUB),
        ]);
        let query = LookupQuery::from_metadata(&meta(&[
            ("query", "phase running"),
            ("match", "body"),
            ("terms", terms),
        ]))
        .unwrap();
        let hub = SafePath::parse("/hub.md").unwrap();
        let readable = |p: &SafePath| hub_readable || *p != hub;
        let found = catalog
            .search_indexed(&SafePath::root(), &query, &readable)
            .unwrap();
        found
            .rows
            .iter()
            .filter_map(|r| r.anchor.clone())
            .filter(|a| a.starts_with("phase"))
            .collect()
    }

    #[test]
    fn a_link_s_words_lift_the_section_it_points_at_in_any_word_mode_only() {
        assert_eq!(
            roadmap_rows("any", true),
            ["phase-2--b", "phase-1--a", "phase-3--c"],
            "the hub calls Phase 2 the running one"
        );
        assert_eq!(
            roadmap_rows("any", false),
            ["phase-1--a", "phase-2--b", "phase-3--c"],
            "a link in a document the caller may not read does not count"
        );
        assert_eq!(
            roadmap_rows("all", true),
            Vec::<String>::new(),
            "all words: no roadmap section holds `running`"
        );
    }

    /// #13: a section holding every query word ranks above one that a
    /// link lifts for words it does not hold (the coordination).
    #[test]
    fn a_section_holding_every_word_outranks_one_a_link_lifts() {
        let tide_hub = "# Tidewatch\n\n## Current phase\n\nCurrent phase: [Phase 8 — Replay](roadmap.md#phase-8--replay).\n";
        let index = "# Projects\n\n| project | current phase |\n|---|---|\n| Tidewatch | [Phase 8](tide/roadmap.md#phase-8--replay) |\n";
        let tide_roadmap = "---\nimportance: 1.0\n---\n# Tidewatch roadmap\n\n## Phase 8 — Replay\n\nCatch up after outages, phase by phase.\n";
        let estuary = "---\nimportance: 0.2\n---\n# Estuary\n\n## Now\n\nThe current phase of the work is Phase 6, the ensemble bands on the map, since June; the next one is the multilingual map.\n";
        let mut catalog = catalog_among_notes(
            [
                ("/tide/index.md".to_string(), tide_hub),
                ("/index.md".to_string(), index),
                ("/tide/roadmap.md".to_string(), tide_roadmap),
                ("/estuary.md".to_string(), estuary),
            ],
            20,
        );
        let found = any_word_rows(&mut catalog, "estuary current phase");
        let rows: Vec<String> = found.iter().map(|r| r.target()).collect();
        let at = |target: &str| rows.iter().position(|r| r == target).unwrap();
        assert!(
            at("/estuary.md#now") < at("/tide/roadmap.md#phase-8--replay"),
            "{rows:?}"
        );
    }

    /// HTML comments are not read: their words find nothing and no snippet
    /// shows them (the Node.js docs' `<!-- YAML added: v10.10.0 -->`).
    #[test]
    fn comments_are_neither_searched_nor_shown() {
        let doc = "<!-- licence: harbourmaster -->\n# Dirent\n\n<!-- YAML\nadded: v10.10.0\n-->\n\n\
                   Returns `true` for a block device. <!-- todo: quokka --> Done.\n";
        let mut catalog = catalog_of([("/fs.md".to_string(), doc)]);
        let mut rows = |query: &str| any_word_rows(&mut catalog, query);
        for hidden in ["harbourmaster", "yaml added", "quokka"] {
            assert!(rows(hidden).is_empty(), "{hidden}");
        }
        let found = rows("block device");
        assert_eq!(found.len(), 1, "no preamble row: {found:?}");
        assert_eq!(
            found[0].snippet.as_deref(),
            Some("Returns `true` for a block device. Done.")
        );
    }

    #[test]
    fn the_section_a_query_names_outranks_a_more_important_mention() {
        let roadmap = "---\nimportance: 1.0\n---\n# Driftwood roadmap\n\nDriftwood phases, \
                       appended in order. The Driftwood hub names the running one.\n";
        let hub = "---\nimportance: 0.2\n---\n# Driftwood\n\nThe archive project.\n";
        let mut catalog = catalog_among_notes(
            [
                ("/roadmap.md".to_string(), roadmap),
                ("/hub.md".to_string(), hub),
            ],
            30,
        );
        let mut rows = |query: &str| -> Vec<String> {
            any_word_rows(&mut catalog, query)
                .iter()
                .map(|r| r.path.clone())
                .collect()
        };
        assert_eq!(rows("driftwood"), ["/hub.md", "/roadmap.md"]);
        assert_eq!(
            rows("driftwood roadmap"),
            ["/roadmap.md", "/hub.md"],
            "a heading with more words than the query is not named by it"
        );
    }

    #[test]
    fn a_word_past_those_the_index_tells_apart_is_never_listed_as_lacking() {
        let mut catalog = catalog_of([("/a.md".to_string(), "# A\n\nPier deploys.\n")]);
        let filler: Vec<String> = (0..MAX_HELD_WORDS).map(|i| format!("zz{i}")).collect();
        let query = LookupQuery::from_metadata(&meta(&[
            ("query", &format!("{} pier", filler.join(" "))),
            ("match", "body"),
            ("terms", "any"),
            ("columns", "lacks"),
        ]))
        .unwrap();
        let rows = catalog
            .search_indexed(&SafePath::root(), &query, &|_| true)
            .unwrap()
            .rows;
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].lacks, filler, "the 65th word, `pier`, is held");
    }

    #[test]
    fn terms_any_or_all() {
        let q = |t: &str| LookupQuery::from_metadata(&meta(&[("query", "xx"), ("terms", t)]));
        assert!(q("any").unwrap().any);
        assert!(!q("all").unwrap().any);
        assert!(q("some").is_err());
    }
}
