//! LOOKUP, the card catalog: parse the request, keep an index of the
//! documents, match and rank them, and write the table.
//!
//! Matching (PROTOCOL.md): query terms are whole words, lower-cased, at
//! least 2 characters (`*` matches everything). In catalog mode a document
//! whose title or tags hold every term is one bare-path row; otherwise each
//! section whose text or heading trail (its headings from the top down)
//! holds every term is a row. Terms may also be found in the document's
//! title and tags, but at least one must be in the section's text or
//! trail. Body mode always works on sections and adds a snippet.
//!
//! Ranking: BM25 (k1 = 1.2, b = 0.75) over weighted term frequencies: text
//! ×1, headings ×2, title and tags ×3; documents and sections are scored
//! against the statistics of their own kind among the candidates (scope and
//! filters applied). The score is scaled by `0.7 + 0.3 × importance`
//! (frontmatter `importance` in 0..=1, else 0.5); ties break by path, then
//! anchor. A section that holds a term itself (in its text or its own
//! heading) ranks above every section matched only through the headings
//! above it or the document's title and tags: otherwise a document's title
//! word matches each of its sections, and the emptiest ones (a `Notes`
//! heading over dated subsections) would outrank the sections that say
//! something. Deterministic: no clock, no randomness, sorted iteration.
//!
//! The index is kept between requests and refreshed lazily: each LOOKUP
//! walks the scope (one directory read per folder, one `stat` per flat
//! file) and re-reads only documents whose stamp changed (a new version,
//! archived state, or a flat file's size or mtime).

use crate::clock::parse_time_or_date;
use crate::paths::SafePath;
use crate::store::{Stamp, Store};
use mark_proto::lookup::{LookupRow, LookupTable, query_words, word_spans};
use mark_proto::{Metadata, Response, Status};
use markdown_slice::Document;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::ops::Range;

pub use mark_proto::lookup::MatchMode;

/// Rows returned when the request names no `limit`.
pub const DEFAULT_LIMIT: usize = 10;
/// Most rows one LOOKUP returns.
pub const MAX_LIMIT: usize = 1000;
/// Importance of a document whose frontmatter names none (or one outside 0..=1).
pub const DEFAULT_IMPORTANCE: f64 = 0.5;
/// Longest snippet, in bytes as written in the table (escapes included).
pub const MAX_SNIPPET: usize = 240;

const K1: f64 = 1.2;
const B: f64 = 0.75;
const W_HEADING: f64 = 2.0;
const W_META: f64 = 3.0;
/// Characters the table writer escapes with a backslash (each costs a byte).
const ESCAPED: [char; 9] = ['\\', '|', '`', '*', '_', '[', ']', '<', '>'];

/// What the query asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Terms {
    /// `*`: every document (catalog) or section (body).
    All,
    /// Whole words, lower-cased, each at least 2 characters, deduplicated.
    Words(Vec<String>),
}

/// One `filter` clause; all clauses must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    /// `tag=x`: the document has tag `x` (case-insensitive).
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
}

/// Word counts of `text`, lower-cased; the second value is the word total.
fn count_words(text: &str, counts: &mut HashMap<String, u32>) -> u32 {
    let mut total = 0;
    for (_, w) in word_spans(text) {
        *counts.entry(w.to_lowercase()).or_default() += 1;
        total += 1;
    }
    total
}

impl LookupQuery {
    /// Reads `query`, `filter`, `limit` and `match` from request metadata.
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
            let words = query_words(raw).searched;
            if words.is_empty() {
                return Err(format!(
                    "The query `{raw}` has no word of at least 2 characters."
                ));
            }
            Terms::Words(words)
        };
        let mut filters = Vec::new();
        for clause in meta
            .get("filter")
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
        {
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
        Ok(LookupQuery {
            terms,
            filters,
            limit,
            mode,
        })
    }
}

/// One section (or the preamble) of an indexed document.
#[derive(Debug)]
struct Section {
    anchor: Option<String>,
    /// Its own heading text; `None` for the preamble.
    heading: Option<String>,
    /// Words of its own heading.
    own_heading: HashMap<String, u32>,
    /// Words of its own heading and of every heading above it.
    trail: HashMap<String, u32>,
    text: HashMap<String, u32>,
    len: u32,
    /// Its own text (heading line excluded, subsections excluded) in `body`.
    range: Range<usize>,
}

/// What LOOKUP keeps of one document.
#[derive(Debug)]
struct IndexedDoc {
    stamp: Stamp,
    title: String,
    tags: Vec<String>,
    importance: f64,
    modified: i64,
    content_hash: String,
    meta: HashMap<String, u32>,
    headings: HashMap<String, u32>,
    text: HashMap<String, u32>,
    len: u32,
    sections: Vec<Section>,
    body: String,
}

/// The analysis of one document: everything LOOKUP reads from markdown.
/// The one place that parses (with `markdown-slice`).
fn analyze(
    path: &SafePath,
    stamp: Stamp,
    bytes: &[u8],
    modified: i64,
    content_hash: String,
) -> IndexedDoc {
    let source = String::from_utf8_lossy(bytes).into_owned();
    let doc = Document::parse(source.as_str());
    let fm = doc.frontmatter();
    let title = doc
        .title()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map_or_else(|| path.name().unwrap_or("").to_string(), str::to_string);
    let tags: Vec<String> = fm
        .map(|f| {
            f.tags
                .iter()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let importance = fm
        .and_then(|f| f.extra.get("importance"))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| (0.0..=1.0).contains(v))
        .unwrap_or(DEFAULT_IMPORTANCE);
    let mut meta = HashMap::new();
    count_words(&title, &mut meta);
    for t in &tags {
        count_words(t, &mut meta);
    }
    let headings_list = doc.headings();
    let mut sections = Vec::with_capacity(headings_list.len() + 1);
    let preamble = doc.preamble_range();
    let mut text_counts = HashMap::new();
    let mut preamble_counts = HashMap::new();
    let preamble_len = count_words(&source[preamble.clone()], &mut preamble_counts);
    if preamble_len > 0 {
        sections.push(Section {
            anchor: None,
            heading: None,
            own_heading: HashMap::new(),
            trail: HashMap::new(),
            text: preamble_counts,
            len: preamble_len,
            range: preamble,
        });
    }
    let mut heading_counts = HashMap::new();
    for (i, h) in headings_list.iter().enumerate() {
        let own_end = headings_list
            .get(i + 1)
            .map_or(doc.body_range().end, |next| next.line.start);
        let range = h.line.end.min(own_end)..own_end;
        let mut own_heading = HashMap::new();
        count_words(&h.text, &mut own_heading);
        let mut trail = own_heading.clone();
        let mut trail_len = own_heading.values().sum::<u32>();
        let mut parent = h.parent;
        while let Some(p) = parent.and_then(|p| headings_list.get(p)) {
            trail_len += count_words(&p.text, &mut trail);
            parent = p.parent;
        }
        count_words(&h.text, &mut heading_counts);
        let mut text = HashMap::new();
        let text_len = count_words(source.get(range.clone()).unwrap_or(""), &mut text);
        sections.push(Section {
            anchor: h.anchor.clone(),
            heading: Some(h.text.clone()),
            own_heading,
            trail,
            text,
            len: text_len + trail_len,
            range,
        });
    }
    let mut len = 0;
    for s in &sections {
        for (w, n) in &s.text {
            *text_counts.entry(w.clone()).or_default() += n;
            len += n;
        }
    }
    len += heading_counts.values().sum::<u32>() + meta.values().sum::<u32>();
    IndexedDoc {
        stamp,
        title,
        tags,
        importance,
        modified,
        content_hash,
        meta,
        headings: heading_counts,
        text: text_counts,
        len,
        sections,
        body: source,
    }
}

/// The index: one entry per document, refreshed lazily by stamp.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    docs: BTreeMap<SafePath, IndexedDoc>,
}

/// Rows of one LOOKUP, ready to write.
#[derive(Debug)]
pub(crate) struct LookupResult {
    rows: Vec<LookupRow>,
}

impl LookupResult {
    /// `ok` with `matches: N` (and `match: body` in body mode) and the table.
    pub(crate) fn into_response(self, query: &LookupQuery) -> Response {
        let mut resp = Response::new(Status::Ok).with_meta("matches", self.rows.len().to_string());
        if query.mode == MatchMode::Body {
            resp = resp.with_meta("match", MatchMode::Body.as_str());
        }
        resp.with_body(mark_proto::lookup::write(&LookupTable {
            mode: query.mode,
            rows: self.rows,
        }))
    }
}

/// BM25 inputs shared by every row of one LOOKUP: one idf per term, from
/// section-level frequencies (sections are the finer unit, and one idf for
/// both kinds of row keeps document and section scores on one scale), and
/// the average lengths of documents and of sections.
struct Stats {
    idf: Vec<f64>,
    avg_doc_len: f64,
    avg_section_len: f64,
}

impl Stats {
    fn new(terms: &[String], candidates: &[(&SafePath, &IndexedDoc)]) -> Stats {
        let (mut docs, mut doc_len, mut sections, mut section_len) =
            (0.0f64, 0.0f64, 0.0f64, 0.0f64);
        let mut df = vec![0.0f64; terms.len()];
        for (_, d) in candidates {
            docs += 1.0;
            doc_len += f64::from(d.len);
            for s in &d.sections {
                sections += 1.0;
                section_len += f64::from(s.len);
                for (i, t) in terms.iter().enumerate() {
                    if has(&d.meta, t) || has(&s.trail, t) || has(&s.text, t) {
                        df[i] += 1.0;
                    }
                }
            }
        }
        let average = |total: f64, n: f64| if n > 0.0 { total / n } else { 1.0 };
        Stats {
            idf: df
                .iter()
                .map(|df| (1.0 + (sections - df + 0.5) / (df + 0.5)).ln())
                .collect(),
            avg_doc_len: average(doc_len, docs),
            avg_section_len: average(section_len, sections),
        }
    }

    /// BM25 of one row of length `len` against units averaging `avg_len`.
    fn score(&self, terms: &[String], len: u32, avg_len: f64, tf: impl Fn(&str) -> f64) -> f64 {
        let norm = K1 * (1.0 - B + B * f64::from(len) / avg_len.max(1.0));
        terms
            .iter()
            .zip(&self.idf)
            .map(|(t, idf)| {
                let f = tf(t);
                idf * f * (K1 + 1.0) / (f + norm)
            })
            .sum()
    }
}

fn has(counts: &HashMap<String, u32>, t: &str) -> bool {
    counts.contains_key(t)
}

fn tf(counts: &HashMap<String, u32>, t: &str) -> f64 {
    f64::from(counts.get(t).copied().unwrap_or(0))
}

fn section_matches(doc: &IndexedDoc, s: &Section, terms: &[String]) -> bool {
    terms
        .iter()
        .all(|t| has(&doc.meta, t) || has(&s.trail, t) || has(&s.text, t))
        && terms.iter().any(|t| has(&s.trail, t) || has(&s.text, t))
}

/// Whether `s` holds one of `terms` itself: in its text or its own heading.
fn holds_itself(s: &Section, terms: &[String]) -> bool {
    terms
        .iter()
        .any(|t| has(&s.text, t) || has(&s.own_heading, t))
}

fn section_tf(doc: &IndexedDoc, s: &Section, t: &str) -> f64 {
    tf(&s.text, t) + W_HEADING * tf(&s.trail, t) + W_META * tf(&doc.meta, t)
}

fn doc_tf(doc: &IndexedDoc, t: &str) -> f64 {
    tf(&doc.text, t) + W_HEADING * tf(&doc.headings, t) + W_META * tf(&doc.meta, t)
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
    let mut start = hit.saturating_sub(60);
    while !flat.is_char_boundary(start) {
        start += 1;
    }
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
    /// Brings the index up to date for `scope` and returns the documents in it.
    fn refresh(&mut self, store: &Store, scope: &SafePath) -> io::Result<Vec<SafePath>> {
        let found = store.walk(scope)?;
        let mut paths = Vec::with_capacity(found.len());
        let live: std::collections::BTreeSet<&SafePath> = found.iter().map(|(p, _)| p).collect();
        self.docs
            .retain(|p, _| !p.starts_with(scope) || live.contains(p));
        for (path, stamp) in &found {
            if self.docs.get(path).is_none_or(|d| d.stamp != *stamp) {
                match store.current(path) {
                    Ok(Some(snap)) => {
                        let doc = analyze(
                            path,
                            *stamp,
                            snap.body(),
                            snap.modified,
                            snap.content_hash(),
                        );
                        self.docs.insert(path.clone(), doc);
                    }
                    Ok(None) => {
                        self.docs.remove(path);
                        continue;
                    }
                    Err(e) => {
                        // A damaged document stays out of results; VERSIONS reports it.
                        tracing::warn!(document = %path.decoded(), error = %e, "cannot index a document");
                        self.docs.remove(path);
                        continue;
                    }
                }
            }
            paths.push(path.clone());
        }
        Ok(paths)
    }

    /// Documents (not archived) whose served body has `content_hash`, by path.
    pub(crate) fn find_by_content_hash(
        &mut self,
        store: &Store,
        content_hash: &str,
    ) -> io::Result<Vec<SafePath>> {
        let paths = self.refresh(store, &SafePath::root())?;
        Ok(paths
            .into_iter()
            .filter(|p| {
                self.docs
                    .get(p)
                    .is_some_and(|d| !d.stamp.archived && d.content_hash == content_hash)
            })
            .collect())
    }

    /// Runs `query` over the documents in `scope` that `readable` allows.
    pub(crate) fn search(
        &mut self,
        store: &Store,
        scope: &SafePath,
        query: &LookupQuery,
        readable: &dyn Fn(&SafePath) -> bool,
    ) -> io::Result<LookupResult> {
        let paths = self.refresh(store, scope)?;
        let candidates: Vec<(&SafePath, &IndexedDoc)> = paths
            .iter()
            .filter_map(|p| self.docs.get(p).map(|d| (p, d)))
            .filter(|(p, d)| !d.stamp.archived && passes(d, &query.filters) && readable(p))
            .collect();
        // Rows carry whether they hold a term themselves (see the module
        // doc) and the text their snippet comes from; snippets are cut only
        // for the rows that survive the limit.
        let mut scored: Vec<(bool, f64, LookupRow, Option<&str>)> = Vec::new();
        let factor = |d: &IndexedDoc| 0.7 + 0.3 * d.importance;
        let words: &[String] = match &query.terms {
            Terms::All => &[],
            Terms::Words(w) => w,
        };
        let stats = Stats::new(words, &candidates);
        for (path, doc) in &candidates {
            let all = matches!(query.terms, Terms::All);
            let doc_row = query.mode == MatchMode::Catalog
                && (all || words.iter().all(|t| has(&doc.meta, t)));
            if doc_row {
                let score = if all {
                    1.0
                } else {
                    stats.score(words, doc.len, stats.avg_doc_len, |t| doc_tf(doc, t))
                };
                scored.push((
                    true,
                    score * factor(doc),
                    LookupRow::document(
                        path.encoded(),
                        doc.importance,
                        doc.title.clone(),
                        doc.tags.clone(),
                    ),
                    None,
                ));
                continue;
            }
            for s in &doc.sections {
                if !(all || section_matches(doc, s, words)) {
                    continue;
                }
                let score = if all {
                    1.0
                } else {
                    stats.score(words, s.len, stats.avg_section_len, |t| {
                        section_tf(doc, s, t)
                    })
                };
                let title = match &s.heading {
                    Some(h) => format!("{} › {h}", doc.title),
                    None => doc.title.clone(),
                };
                let mut row =
                    LookupRow::document(path.encoded(), doc.importance, title, doc.tags.clone());
                row.anchor = s.anchor.clone();
                let source = (query.mode == MatchMode::Body)
                    .then(|| doc.body.get(s.range.clone()).unwrap_or(""));
                let itself = all || holds_itself(s, words);
                scored.push((itself, score * factor(doc), row, source));
            }
        }
        scored.sort_by(|(ia, sa, a, _), (ib, sb, b, _)| {
            ib.cmp(ia)
                .then_with(|| sb.total_cmp(sa))
                .then_with(|| a.path.cmp(&b.path))
                .then_with(|| a.anchor.cmp(&b.anchor))
        });
        scored.truncate(query.limit);
        Ok(LookupResult {
            rows: scored
                .into_iter()
                .map(|(_, _, mut row, source)| {
                    row.snippet = source.map(|text| snippet(text, &query.terms));
                    row
                })
                .collect(),
        })
    }
}

fn passes(doc: &IndexedDoc, filters: &[Filter]) -> bool {
    filters.iter().all(|f| match f {
        Filter::Tag(tag) => doc.tags.iter().any(|t| t.to_lowercase() == *tag),
        Filter::ModifiedAfter(t) => doc.modified > *t,
        Filter::ModifiedBefore(t) => doc.modified < *t,
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
    fn analysis_splits_sections_with_trails_and_reads_frontmatter() {
        let text = "---\ntitle: T\ntags: [a, b]\nimportance: 0.25\n---\nIntro words.\n\n# Top\n\nTop text.\n\n## Sub\n\nSub text.\n";
        let path = SafePath::parse("/d.md").unwrap();
        let stamp = Stamp {
            version: 1,
            archived: false,
            len: 0,
            mtime_ns: 0,
        };
        let d = analyze(&path, stamp, text.as_bytes(), 0, String::new());
        assert_eq!(
            (d.title.as_str(), d.tags.clone(), d.importance),
            ("T", vec!["a".to_string(), "b".to_string()], 0.25)
        );
        let anchors: Vec<Option<&str>> = d.sections.iter().map(|s| s.anchor.as_deref()).collect();
        assert_eq!(anchors, [None, Some("top"), Some("sub")]);
        let sub = &d.sections[2];
        assert!(has(&sub.trail, "top") && has(&sub.trail, "sub"));
        assert!(
            has(&sub.text, "text") && !has(&sub.text, "top"),
            "own text only"
        );
        assert_eq!(d.body.get(sub.range.clone()).unwrap().trim(), "Sub text.");
        assert!(section_matches(&d, sub, &["top".into(), "text".into()]));
        assert!(
            !section_matches(&d, sub, &["a".into()]),
            "a title or tag alone does not make a section row"
        );
        let untitled = analyze(
            &SafePath::parse("/x/n.md").unwrap(),
            stamp,
            b"no headings",
            0,
            String::new(),
        );
        assert_eq!(untitled.title, "n.md");
    }
}
