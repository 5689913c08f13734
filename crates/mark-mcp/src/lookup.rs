//! `mark_lookup`: the source's card catalog (LOOKUP), bounded, as one
//! compact line per hit: `url#anchor · Doc › Heading · snippet`, importance
//! only when the rows' values differ, a document's tags once. It asks for
//! any-word ranking (`terms: any`); a server that does not echo it answered
//! all-words, and then one all-words LOOKUP per word, sent concurrently, is
//! merged into the any-word ranking here. A server without LOOKUP (it
//! answers `server-error`, `bad request`) is searched here instead, over
//! the documents the session crawled, with mark-store's own LOOKUP code
//! (the crawl fills the index; a call waits `--crawl-wait` at most), and
//! the note says how many documents that was and whether the crawl was
//! whole. Rows say which query words they lack (the server's `Lacks`
//! column, asked with `columns: lacks`, or the per-word merge). The
//! passages of the top rows that best match the query follow the rows,
//! within `budget` tokens ([`crate::passages`]). `read: N` appends the top N
//! hits' sections, each as `mark_fetch url#anchor` delivers it (the same
//! function, deduplicated the same way), each made within what the rows
//! and the reads before it leave of this result's [`ResultBuilder`]. A row
//! says `read earlier` only when the session sent its text at the version
//! the document has now. The same rows again in one session (an identical
//! search, nothing changed, nothing new to read) answer `unchanged` in one
//! line, like a re-read document.

use crate::bound::result_bound;
use crate::crawl::{CrawlWatcher, Unwatched, Waited};
use crate::dedup::{AnswerKey, Delivery, Slice, answer_digest};
use crate::envelope::{ToolText, one_line};
use crate::fetch::{FetchParams, fetch_built};
use crate::paging::cursor_argument;
use crate::passages::{DEFAULT_BUDGET, MAX_BUDGET, passages_into};
use crate::result::{ResultBuilder, SEPARATOR};
use crate::session::{Loaded, Session, passthrough};
use mark_proto::lookup::{LookupRow, LookupTable, query_words, word_spans};
use mark_proto::{Request, Response, Status, Verb};
use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// The most rows one lookup returns (the protocol allows 1000; an agent
/// needs the top few).
pub const MAX_LIMIT: u32 = 100;

/// What a lookup matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum MatchMode {
    /// Titles and tags: one row per document.
    Catalog,
    /// Section text: one row per section, with a snippet.
    Body,
}

impl MatchMode {
    fn as_str(self) -> &'static str {
        match self {
            MatchMode::Catalog => "catalog",
            MatchMode::Body => "body",
        }
    }
}

/// Parameters of `mark_lookup` (and of the `lookup` verb).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, clap::Args)]
pub struct LookupParams {
    /// Words to find; rows holding more and rarer ones rank first (* for everything).
    pub query: String,
    /// Folder to search, e.g. /projects (default /).
    #[arg(long)]
    #[serde(default)]
    pub scope: Option<String>,
    /// e.g. tag=x,modified-after=2026-01-01
    #[arg(long)]
    #[serde(default)]
    pub filter: Option<String>,
    /// Rows, 1 to 100 (default 10).
    #[arg(long)]
    #[serde(default)]
    pub limit: Option<u32>,
    /// catalog (titles, tags; default) or body (sections, snippets).
    #[arg(long = "match", id = "match", value_enum)]
    #[serde(default, rename = "match")]
    pub match_mode: Option<MatchMode>,
    /// Next-rows cursor from an earlier result.
    #[arg(long)]
    #[serde(default)]
    pub cursor: Option<String>,
    /// Also read the top N hits' whole sections, 0 to 3 (default 0).
    #[arg(long)]
    #[serde(default)]
    pub read: Option<u32>,
    /// Tokens of best-matching passages of the top rows (default 1000).
    #[arg(long)]
    #[serde(default)]
    pub budget: Option<u32>,
    /// Re-send even if unchanged.
    #[arg(long)]
    #[serde(default)]
    pub force: bool,
}

/// Hits read whole by default: none, since the passages of the top hits
/// (see [`crate::passages`]) answer in the same call for a fraction of
/// their sections' tokens (measured in the README's figures).
pub const DEFAULT_READ: u32 = 0;
/// The most hits one lookup reads.
pub const MAX_READ: u32 = 3;
/// The most bytes of the hits a read block's opening line names.
const TARGETS_BYTES: usize = 300;
/// The most bytes of a `=== not read …` line.
const NOT_READ_BYTES: usize = TARGETS_BYTES + 80;

/// Longest snippet shown in a row, in characters: enough to recognise the
/// hit; the section itself is one `mark_fetch url#anchor` away.
const SNIPPET_CHARS: usize = 80;
/// Longest row, in bytes: a longer one is cut, never dropped.
const MAX_ROW_BYTES: usize = 360;
/// Rows asked per word when the server ranks all-words only: enough that a
/// word's row count tells how rare it is.
const PER_WORD_LIMIT: u32 = 200;

/// Runs a LOOKUP for the session at time `now`.
pub async fn lookup(session: &Session, params: LookupParams, now: Instant) -> ToolText {
    lookup_watched(session, params, now, &Unwatched).await
}

/// [`lookup`], telling `watcher` the crawl's progress while a search of a
/// server without LOOKUP waits for the crawl, and giving up when it is
/// cancelled (a crawl this call started stops too).
pub async fn lookup_watched(
    session: &Session,
    params: LookupParams,
    now: Instant,
    watcher: &dyn CrawlWatcher,
) -> ToolText {
    let force = params.force;
    let read = match at_most(
        params.read,
        DEFAULT_READ,
        MAX_READ,
        "read",
        "the hits whose sections to read",
    ) {
        Ok(n) => n,
        Err(e) => return e,
    };
    let budget = match at_most(
        params.budget,
        DEFAULT_BUDGET,
        MAX_BUDGET,
        "budget",
        "tokens of passages to read",
    ) {
        Ok(n) => n,
        Err(e) => return e,
    };
    let query = params.query.clone();
    // An answer is compared only with earlier answers to the same search.
    let key = AnswerKey {
        tool: "lookup",
        subject: [
            params.query.trim(),
            params.scope.as_deref().unwrap_or("/"),
            params.filter.as_deref().unwrap_or(""),
            &params.limit.map(|l| l.to_string()).unwrap_or_default(),
            params.match_mode.map_or("", MatchMode::as_str),
            params.cursor.as_deref().unwrap_or("").trim(),
        ]
        .join("\0"),
        part: String::new(),
    };
    let (found, hits) = match search(session, params, read as usize, now, watcher).await {
        Ok(t) => t,
        Err(t) => return t,
    };
    // The rows as ranked, without their marks: a row marked `read earlier`
    // since is still the same answer.
    let ranked = rows(&hits, &[]).join("\n");
    let digest = answer_digest(&[&ranked, found.get("matches").unwrap_or("")]);
    let rows_sent = !force && session.log().answer_sent(&key, &digest, now);
    let mut b = ResultBuilder::new("ok", result_bound(session.settings().page_bytes));
    for (k, v) in &found.fields {
        b.field(k, v);
    }
    for (k, v) in &found.json {
        b.json(k, v.clone());
    }
    let answer = Delivery::Answer {
        key,
        digest,
        at: now,
    };
    if b.push(&found.text, vec![answer]).is_err() {
        b.push_shortened(&found.text);
    }
    let read_hits = &hits[..hits.len().min(read as usize)];
    let passages = passages_into(
        &mut b,
        session,
        &query,
        &hits[read_hits.len()..],
        budget as usize,
        force,
        now,
    )
    .await;
    let statuses = read_into(&mut b, session, read_hits, force, now).await;
    if !rows_sent || passages.sent > 0 || statuses.iter().any(|s| s != "unchanged") {
        return b.finish().send(session);
    }
    ToolText::new("unchanged")
        .with_opt("matches", found.get("matches").map(str::to_string))
        .with_text(
            "the same rows as an identical lookup earlier this session; force=true to re-send",
        )
}

/// `given`, or `default` when not given; a value over `max` is refused in
/// one sentence naming the parameter (`name`) and what it counts (`what`).
fn at_most(
    given: Option<u32>,
    default: u32,
    max: u32,
    name: &str,
    what: &str,
) -> Result<u32, ToolText> {
    match given {
        None => Ok(default),
        Some(n) if n <= max => Ok(n),
        Some(n) => Err(ToolText::error(format!(
            "{name} {n} is out of range; give 0 to {max} ({what})"
        ))),
    }
}

/// Reads `hits` in rank order into `b`, one fetch per document (its hits'
/// anchors together, so a section inside another comes once), each made
/// within what is left of `b` (room kept for a `not read` line per
/// document after it); `force` re-sends what the session already has.
/// Gives each read's status (`ok`, `unchanged`, `skipped`, …).
async fn read_into(
    b: &mut ResultBuilder,
    session: &Session,
    hits: &[LookupRow],
    force: bool,
    now: Instant,
) -> Vec<String> {
    let mut documents: Vec<(&str, Vec<&LookupRow>)> = Vec::new();
    for hit in hits {
        match documents.iter_mut().find(|(p, _)| *p == hit.path) {
            Some((_, rows)) => rows.push(hit),
            None => documents.push((&hit.path, vec![hit])),
        }
    }
    let count = documents.len();
    let mut statuses = Vec::with_capacity(count);
    for (i, (path, rows)) in documents.into_iter().enumerate() {
        let targets: Vec<String> = rows.iter().map(|r| r.target()).collect();
        let targets = one_line(&targets.join(", "), TARGETS_BYTES);
        let opening = format!("\n{SEPARATOR}read {targets} ===");
        let later = (count - i - 1) * NOT_READ_BYTES;
        let bound = b.room().saturating_sub(opening.len() + 1 + later);
        let read = if bound < MIN_READ_BYTES {
            None
        } else {
            // A row without an anchor (a catalog row) reads its document.
            let anchors = rows
                .iter()
                .map(|r| r.anchor.clone())
                .collect::<Option<Vec<String>>>()
                .unwrap_or_default();
            let params = FetchParams {
                url: path.to_string(),
                anchors,
                force,
                ..FetchParams::default()
            };
            let built = fetch_built(session, params, now, bound).await;
            let status = built.text().status.clone();
            b.push_built(&opening, built).then_some(status)
        };
        match read {
            Some(status) => statuses.push(status),
            None => {
                // Framing of ours, its room kept above; the targets are one line.
                let line = format!(
                    "{SEPARATOR}not read, over the result bound: {targets}; mark_fetch it ===\n"
                );
                let _unnamed_only_below_a_tiny_bound = b.push_framing(&line, Vec::new());
                statuses.push("skipped".into());
            }
        }
    }
    statuses
}

/// The query words a message names: the first [`NAMED_WORDS`], then how
/// many more, cut to [`NAMED_WORDS_BYTES`] (a 10,000-word query is not
/// echoed whole).
fn some_words(words: &[String]) -> String {
    let mut named = words
        .iter()
        .take(NAMED_WORDS)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(" ");
    if words.len() > NAMED_WORDS {
        named.push_str(&format!(" (+{} more)", words.len() - NAMED_WORDS));
    }
    crate::envelope::one_line(&named, NAMED_WORDS_BYTES)
}

/// Query words a message names at most, and their bytes.
const NAMED_WORDS: usize = 20;
const NAMED_WORDS_BYTES: usize = 300;

/// Below this much room a hit is named, not read.
const MIN_READ_BYTES: usize = 400;

/// The most rows a LOOKUP returns (the protocol's bound), so the deepest
/// a cursor reaches.
const SOURCE_MAX_ROWS: usize = 1000;

/// A cursor over one search's ranked rows: `r{offset}.{check}`, where
/// `check` is 12 hex digits of the hash of the search (query, scope, filter,
/// match mode) and the offset, so a cursor is refused for another search,
/// or when forged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RowCursor {
    /// Rows before the first one this page shows.
    offset: usize,
}

impl RowCursor {
    fn check(search: &str, offset: usize) -> String {
        answer_digest(&[search, &offset.to_string()])[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    fn encode(self, search: &str) -> String {
        format!("r{}.{}", self.offset, RowCursor::check(search, self.offset))
    }

    /// Reads a cursor [`RowCursor::encode`] wrote for `search`.
    fn parse(text: &str, search: &str) -> Option<RowCursor> {
        let (offset, check) = text.strip_prefix('r')?.split_once('.')?;
        let offset: usize = offset.parse().ok()?;
        ((1..SOURCE_MAX_ROWS).contains(&offset) && check == RowCursor::check(search, offset))
            .then_some(RowCursor { offset })
    }
}

/// The ranked rows and how many were found in all.
struct Found {
    table: LookupTable,
    total: usize,
}

/// The rows as text, and the hits themselves in rank order. `read`: the
/// top hits whose sections follow (their rows say `read below` in place of
/// a snippet, and no closing hint line is needed); another row
/// whose text the session sent whole at its last-read version says `read
/// earlier`.
async fn search(
    session: &Session,
    params: LookupParams,
    read: usize,
    now: Instant,
    watcher: &dyn CrawlWatcher,
) -> Result<(ToolText, Vec<LookupRow>), ToolText> {
    let query = params.query.trim();
    if query.is_empty() {
        return Err(ToolText::error(
            "the query is empty; give the words to find, or * for everything",
        ));
    }
    let limit = match params.limit {
        None => 10,
        Some(n @ 1..=MAX_LIMIT) => n,
        Some(n) => {
            return Err(ToolText::error(format!(
                "limit {n} is out of range; give 1 to {MAX_LIMIT}"
            )));
        }
    };
    let scope = session.path_of(params.scope.as_deref().unwrap_or("/"))?;
    let filter = params
        .filter
        .as_deref()
        .map(str::trim)
        .filter(|f| !f.is_empty());
    let search = [
        query,
        &scope,
        filter.unwrap_or(""),
        params.match_mode.map_or("", MatchMode::as_str),
    ]
    .join("\0");
    let offset = match cursor_argument(params.cursor.as_deref(), |c| RowCursor::parse(c, &search)) {
        Ok(c) => c.map_or(0, |c| c.offset),
        Err(c) => {
            return Err(ToolText::error(format!(
                "cursor `{c}` is not one this lookup gave; look up again without a cursor"
            )));
        }
    };
    // The rows before the cursor are asked again: the protocol has no cursor.
    let wanted = (offset + limit as usize).min(SOURCE_MAX_ROWS);
    let words = query_words(query);
    if query != "*" && words.searched.is_empty() {
        return Err(ToolText::error(format!(
            "`{}` has no word of 2 characters or more, and LOOKUP leaves shorter ones out; give a longer word, or * for everything",
            crate::session::short(query)
        )));
    }
    let request = |query: &str, limit: u32| {
        let mut req = Request::new(Verb::Lookup, scope.clone())
            .with_meta("query", query)
            .with_meta("limit", limit.to_string());
        if let Some(f) = filter {
            req = req.with_meta("filter", f);
        }
        if let Some(m) = params.match_mode {
            req = req.with_meta("match", m.as_str());
        }
        req
    };
    let asked = request(query, wanted as u32)
        .with_meta("terms", "any")
        .with_meta("columns", "bytes, lacks");
    let (resp, searched_here) = ask(session, asked, now, watcher).await?;
    let mut found = read_table(&resp)?;
    let several = query != "*" && words.searched.len() > 1;
    if several && resp.meta("terms") != Some("any") {
        // An all-words server: rank any-word here, from one LOOKUP per word.
        let replies = futures::future::join_all(
            words
                .searched
                .iter()
                .map(|w| session.send_ok(request(w, PER_WORD_LIMIT))),
        )
        .await;
        let mut per_word = Vec::with_capacity(replies.len());
        for (word, r) in words.searched.iter().zip(replies) {
            per_word.push((word.as_str(), read_table(&r?)?.table.rows));
        }
        found = merge_any(per_word, wanted);
    }
    let hits: Vec<LookupRow> = found.table.rows.drain(..).skip(offset).collect();
    // The top `read` rows are read below; another row whose text the agent
    // already holds, as the document is now, says so, so that it is not
    // fetched again.
    let held = held_rows(session, &hits[read.min(hits.len())..], now).await;
    let marks: Vec<Option<&str>> = (0..hits.len())
        .map(|i| match i {
            _ if i < read => Some("read below"),
            _ if held.contains(&(i - read)) => Some("read earlier"),
            _ => None,
        })
        .collect();
    let lines = rows(&hits, &marks);
    // Whole rows while they fit; the rest are the next cursor's.
    let mut text = String::new();
    let mut shown = 0;
    for line in &lines {
        if text.len() + line.len() >= session.settings().page_bytes / 4 {
            break;
        }
        text.push_str(line);
        text.push('\n');
        shown += 1;
    }
    let next = offset + shown;
    if next < found.total && next < SOURCE_MAX_ROWS && shown > 0 {
        let cursor = RowCursor { offset: next };
        text.push_str(&format!(
            "[rows {} to {next} of {}; more: the same lookup with cursor \"{}\"]\n",
            offset + 1,
            found.total,
            cursor.encode(&search)
        ));
    } else if next < found.total {
        text.push_str(&format!(
            "[rows past {SOURCE_MAX_ROWS} are not listed; narrow the words, the scope or the filter]\n"
        ));
    }
    if shown > 0 {
        // With `read`, the sections below show how a hit is read.
        if read == 0 {
            text.push_str(
                "Read a hit with mark_fetch url#anchor rather than the whole document.\n",
            );
        }
    } else if offset > 0 {
        text.push_str(&format!(
            "no rows after row {offset}: fewer match now than when that cursor was given; look up again without a cursor\n"
        ));
    } else if query != "*" {
        text.push_str(&format!(
            "nothing holds any of: {}; try other or fewer words{}, or a wider scope\n",
            some_words(&words.searched),
            if found.table.mode == mark_proto::lookup::MatchMode::Body {
                ""
            } else {
                ", match=body"
            }
        ));
    }
    // LOOKUP leaves out words under 2 characters: say so, or `phase 5`
    // would look like a search for the fifth phase (`*` has no words).
    let too_short = words.too_short;
    let notes: Vec<String> = [
        searched_here,
        (!too_short.is_empty()).then(|| {
            format!(
                "not searched (words under 2 characters): {}",
                some_words(&too_short)
            )
        }),
    ]
    .into_iter()
    .flatten()
    .collect();
    let text = ToolText::new("ok")
        .with("matches", format!("{shown} of {}", found.total.max(next)))
        .with_opt("match", resp.meta("match"))
        .with_text(text)
        .with_opt("note", (!notes.is_empty()).then(|| notes.join("; ")));
    let mut hits = hits;
    hits.truncate(shown);
    let objects = hits.iter().map(row_object).collect();
    Ok((
        text.with_json("rows", serde_json::Value::Array(objects)),
        hits,
    ))
}

/// Which of `rows` the session sent whole at the version their document
/// has now (DESIGN.md wave-3 rule 3): those the delivery log holds at the
/// version last read are checked against the document as loaded now (from
/// the cache within `--fresh-for`, else revalidated); a document that does
/// not load marks nothing.
async fn held_rows(session: &Session, rows: &[LookupRow], now: Instant) -> HashSet<usize> {
    let slice = |r: &LookupRow| r.anchor.clone().map_or(Slice::Body, Slice::Section);
    let candidates: Vec<usize> = {
        let log = session.log();
        (0..rows.len())
            .filter(|&i| {
                log.last_read(&rows[i].path, now)
                    .is_some_and(|last| log.holds(&rows[i].path, &slice(&rows[i]), &last, now))
            })
            .collect()
    };
    let mut paths: Vec<&str> = candidates.iter().map(|&i| rows[i].path.as_str()).collect();
    paths.sort_unstable();
    paths.dedup();
    let loaded = futures::future::join_all(paths.iter().map(|p| session.load(p, now))).await;
    let current: HashMap<&str, _> = paths
        .into_iter()
        .zip(loaded)
        .filter_map(|(p, l)| match l {
            Loaded::Doc(d) => Some((p, d.identity.clone())),
            Loaded::Answer(_) => None,
        })
        .collect();
    let log = session.log();
    candidates
        .into_iter()
        .filter(|&i| {
            current
                .get(rows[i].path.as_str())
                .is_some_and(|now_is| log.holds(&rows[i].path, &slice(&rows[i]), now_is, now))
        })
        .collect()
}

/// The source's answer to the LOOKUP `req`; for a server without LOOKUP,
/// the answer over the documents this session crawled, with the note that
/// says so. Once a server answered so, the session asks it no more.
async fn ask(
    session: &Session,
    req: Request,
    now: Instant,
    watcher: &dyn CrawlWatcher,
) -> Result<(Response, Option<String>), ToolText> {
    let graph = session.graph();
    if !graph.searches() {
        let resp = session.send(req.clone()).await?;
        if !lacks_lookup(&resp) {
            return match resp.status {
                Status::Ok => Ok((resp, None)),
                _ => Err(passthrough(&resp)),
            };
        }
        graph.enable_search();
    }
    // The crawl fills the index. One that ran before the index existed
    // kept no bodies: crawl again when the index lacks documents the graph has.
    let waited = graph
        .start_and_wait(now, graph.search_misses_documents(), watcher)
        .await;
    if waited == Waited::Cancelled {
        return Err(ToolText::error(
            "lookup was cancelled while it waited for the crawl; call it again to go on",
        ));
    }
    let (resp, searched) = graph
        .search(&req)
        .ok_or_else(|| ToolText::error("the session's search index is missing; look up again"))?;
    if resp.status != Status::Ok {
        return Err(passthrough(&resp));
    }
    Ok((resp, Some(searched_note(session, searched))))
}

/// What a search over the crawled documents covered: how many, and
/// whether the crawl behind them read everything the server lists.
fn searched_note(session: &Session, searched: usize) -> String {
    let graph = session.graph();
    let documents = match searched {
        1 => "the 1 document".to_string(),
        n => format!("the {n} documents"),
    };
    let coverage = graph.coverage();
    let why = graph.progress().note();
    if coverage.complete && why.is_none() && !graph.search_misses_documents() {
        return format!(
            "this server has no LOOKUP; searched {documents} this session crawled (all it lists)"
        );
    }
    let known = coverage
        .known
        .map(|k| format!(" (of ≥{k} known)"))
        .unwrap_or_default();
    format!(
        "this server has no LOOKUP; searched {documents} this session crawled{known}: the crawl was partial{}, so a hit may be missing",
        why.map(|w| format!(" {w}")).unwrap_or_default()
    )
}

/// Whether `resp` is how a server without LOOKUP answers it: a demarkus
/// server before LOOKUP answers `server-error` with the markdown error body
/// every demarkus error has, `\n# Server error\n\nbad request\n` (its
/// message, the title left out, is `bad request`).
fn lacks_lookup(resp: &Response) -> bool {
    resp.status == Status::ServerError && resp.error_message().eq_ignore_ascii_case("bad request")
}

fn read_table(resp: &Response) -> Result<Found, ToolText> {
    let table = mark_proto::lookup::parse(&resp.body)
        .map_err(|e| ToolText::error(format!("the server's LOOKUP table is not readable: {e}")))?;
    let total = resp
        .meta("total")
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(table.rows.len());
    Ok(Found { table, total })
}

/// Any-word ranking from one all-words result per word: a row scores the
/// sum, over the words it was found for, of the word's rarity (fewer rows,
/// more weight) times how high it ranked for it, times the number of those
/// words (holding more of them counts most); ties by path, then anchor.
/// A row not found for a word lacks it.
fn merge_any(per_word: Vec<(&str, Vec<LookupRow>)>, limit: usize) -> Found {
    let mode = if per_word
        .iter()
        .flat_map(|(_, rows)| rows)
        .any(|r| r.snippet.is_some())
    {
        mark_proto::lookup::MatchMode::Body
    } else {
        mark_proto::lookup::MatchMode::Catalog
    };
    let most = per_word
        .iter()
        .map(|(_, rows)| rows.len())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let words: Vec<&str> = per_word.iter().map(|(w, _)| *w).collect();
    let mut scored: HashMap<String, (f64, Vec<&str>, LookupRow)> = HashMap::new();
    for (word, rows) in per_word {
        let rarity = (1.0 + most / rows.len().max(1) as f64).ln();
        let n = rows.len() as f64;
        for (rank, row) in rows.into_iter().enumerate() {
            let weight = rarity * (1.0 - 0.5 * rank as f64 / n);
            scored
                .entry(row.target())
                .and_modify(|(s, held, _)| {
                    *s += weight;
                    held.push(word);
                })
                .or_insert((weight, vec![word], row));
        }
    }
    let mut rows: Vec<(f64, LookupRow)> = Vec::with_capacity(scored.len());
    for (score, held, mut row) in scored.into_values() {
        row.lacks = words
            .iter()
            .filter(|w| !held.contains(w))
            .map(|w| w.to_string())
            .collect();
        rows.push((score * held.len() as f64, row));
    }
    rows.sort_by(|(sa, a), (sb, b)| {
        sb.total_cmp(sa)
            .then_with(|| a.path.cmp(&b.path))
            .then_with(|| a.anchor.cmp(&b.anchor))
    });
    let total = rows.len();
    rows.truncate(limit);
    Found {
        table: LookupTable {
            mode,
            rows: rows.into_iter().map(|(_, r)| r).collect(),
            // A server that only knows all-words knows no columns of ours.
            bytes_column: false,
            lacks_column: true,
        },
        total,
    }
}

/// One line per row: `url#anchor · Doc › Heading (importance) [tags] ·
/// lacks: word · ~N tok · snippet` (see [`trail_after`]; the size when the
/// server gave it); a row with a mark (`read below`, `read earlier`) shows
/// it in place of the snippet.
fn rows(rows: &[LookupRow], marks: &[Option<&str>]) -> Vec<String> {
    let importance_differs = rows
        .windows(2)
        .any(|w| (w[0].importance - w[1].importance).abs() >= 0.005);
    let mut tagged: HashSet<&str> = HashSet::new();
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            let target = r.target();
            let above = i.checked_sub(1).map(|j| &rows[j]);
            let mut line = format!("{target} · {}", trail_after(r, above));
            if importance_differs {
                line.push_str(&format!(" ({:.2})", r.importance));
            }
            // A document's tags once: on its first row that has any to show.
            if !tagged.contains(r.path.as_str()) {
                let tags = new_tags(r);
                if !tags.is_empty() {
                    tagged.insert(&r.path);
                    line.push_str(&format!(" [{}]", tags.join(", ")));
                }
            }
            if !r.lacks.is_empty() {
                line.push_str(&format!(" · lacks: {}", r.lacks.join(" ")));
            }
            if let Some(bytes) = r.bytes {
                let tokens =
                    markdown_slice::bytes_to_tokens(usize::try_from(bytes).unwrap_or(usize::MAX));
                line.push_str(&format!(" · ~{tokens} tok"));
            }
            if let Some(mark) = marks.get(i).copied().flatten() {
                line.push_str(" · ");
                line.push_str(mark);
            } else if let Some(s) = r.snippet.as_deref().filter(|s| !s.is_empty()) {
                line.push_str(" · ");
                line.push_str(&cut_chars(s, SNIPPET_CHARS));
            }
            cut_bytes(line, MAX_ROW_BYTES)
        })
        .collect()
}

/// A row's tags that its url and heading trail do not already say
/// (`/projects/estuary/adr/…` needs no `estuary` or `adr` tag).
fn new_tags(r: &LookupRow) -> Vec<&str> {
    let said: HashSet<String> = word_spans(&r.path)
        .chain(word_spans(&r.title))
        .map(|(_, w)| w.to_lowercase())
        .collect();
    r.tags
        .iter()
        .map(String::as_str)
        .filter(|t| !said.contains(&t.to_lowercase()))
        .collect()
}

/// A row's heading trail, `Doc › Heading`, once when the heading is the
/// document's title (the section of a title heading): `Doc`.
pub(crate) fn trail(title: &str) -> &str {
    match title.split_once(" › ") {
        Some((doc, heading)) if doc == heading => doc,
        _ => title,
    }
}

/// [`trail`], with the leading headings it shares with the row `above` (of
/// the same document, two or more of them) shown as `…`: sibling hits
/// (`File system › Common Objects › Class: fs.Dirent › dirent.isFile()`
/// under `… › dirent.isFIFO()`) say their document and parents once.
fn trail_after<'r>(row: &'r LookupRow, above: Option<&LookupRow>) -> Cow<'r, str> {
    let own = trail(&row.title);
    let Some(above) = above.filter(|a| a.path == row.path) else {
        return Cow::Borrowed(own);
    };
    let segments: Vec<&str> = own.split(" › ").collect();
    let shared = segments[..segments.len() - 1]
        .iter()
        .zip(trail(&above.title).split(" › "))
        .take_while(|(a, b)| **a == *b)
        .count();
    if shared < 2 {
        return Cow::Borrowed(own);
    }
    Cow::Owned(format!("… › {}", segments[shared..].join(" › ")))
}

/// A row for `--json`: the fetchable url and each cell as it is.
fn row_object(r: &LookupRow) -> serde_json::Value {
    let mut object = serde_json::json!({
        "url": r.target(),
        "title": r.title,
        "importance": r.importance,
        "tags": r.tags,
        "snippet": r.snippet,
    });
    if !r.lacks.is_empty() {
        object["lacks"] = serde_json::json!(r.lacks);
    }
    if let Some(bytes) = r.bytes {
        object["bytes"] = serde_json::json!(bytes);
    }
    object
}

fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((end, _)) => format!("{}…", text[..end].trim_end()),
    }
}

fn cut_bytes(mut line: String, max: usize) -> String {
    if line.len() > max {
        let end = line.floor_char_boundary(max - "…".len());
        line.truncate(end);
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(path: &str, anchor: &str, importance: f64, tags: &[&str]) -> LookupRow {
        LookupRow {
            anchor: Some(anchor.to_string()),
            snippet: Some("x".repeat(300)),
            ..LookupRow::document(
                path,
                importance,
                "Doc › Head",
                tags.iter().map(|t| t.to_string()).collect(),
            )
        }
    }

    #[test]
    fn rows_are_one_compact_line_each() {
        let same = rows(
            &[
                row("/a.md", "x", 0.5, &["t"]),
                row("/a.md", "y", 0.5, &["t"]),
            ],
            &[],
        );
        assert_eq!(
            same[0],
            format!("/a.md#x · Doc › Head [t] · {}…", "x".repeat(SNIPPET_CHARS))
        );
        assert!(
            same[1].starts_with("/a.md#y · Doc › Head · "),
            "tags once, importance only when it differs: {}",
            same[1]
        );
        let differ = rows(
            &[row("/a.md", "x", 0.9, &[]), row("/b.md", "y", 0.5, &[])],
            &[],
        );
        assert!(differ[0].starts_with("/a.md#x · Doc › Head (0.90) · "));
        let read = rows(
            &[row("/a.md", "x", 0.5, &[]), row("/a.md", "y", 0.5, &[])],
            &[Some("read below")],
        );
        assert_eq!(
            (read[0].as_str(), read[1].ends_with('…')),
            ("/a.md#x · Doc › Head · read below", true),
            "a row read in the same call has no snippet: its section follows"
        );
        let mut sized = row("/a.md", "x", 0.5, &[]);
        sized.lacks = vec!["pier".into()];
        sized.bytes = Some(3859);
        assert!(
            rows(&[sized], &[])[0]
                .starts_with("/a.md#x · Doc › Head · lacks: pier · ~1043 tok · x"),
            "the size the server gave, in the outline's tokens"
        );
        let nested = |path: &str, anchor: &str, title: &str| LookupRow {
            title: title.into(),
            ..row(path, anchor, 0.5, &[])
        };
        let siblings = rows(
            &[
                nested(
                    "/fs.md",
                    "a",
                    "File system › Class: fs.Dirent › dirent.isFile()",
                ),
                nested(
                    "/fs.md",
                    "b",
                    "File system › Class: fs.Dirent › dirent.isFIFO()",
                ),
                nested(
                    "/fs.md",
                    "c",
                    "File system › Class: fs.Stats › stats.isFile()",
                ),
                nested(
                    "/os.md",
                    "d",
                    "File system › Class: fs.Stats › stats.isFile()",
                ),
            ],
            &[],
        );
        let trails: Vec<&str> = siblings
            .iter()
            .map(|l| l.split(" · ").nth(1).unwrap())
            .collect();
        assert_eq!(
            trails,
            [
                "File system › Class: fs.Dirent › dirent.isFile()",
                "… › dirent.isFIFO()",
                "File system › Class: fs.Stats › stats.isFile()",
                "File system › Class: fs.Stats › stats.isFile()",
            ],
            "the headings a row shares with the one above, two or more, are `…`; \
             the title alone, or another document's, is said again"
        );
        let said = rows(&[row("/adr/a.md", "x", 0.5, &["adr", "Doc", "keys"])], &[]);
        assert!(
            said[0].starts_with("/adr/a.md#x · Doc › Head [keys] · "),
            "a tag the url or trail says is left out: {}",
            said[0]
        );
        let mut titled = row("/a.md", "doc", 0.5, &[]);
        titled.title = "Doc › Doc".to_string();
        assert!(
            rows(&[titled], &[])[0].starts_with("/a.md#doc · Doc · "),
            "a title heading's trail is the title once"
        );
        let mut long = row("/a.md", "x", 0.5, &[]);
        long.title = "T".repeat(1000);
        let cut = rows(&[long], &[]);
        assert!(
            cut[0].len() <= MAX_ROW_BYTES && cut[0].ends_with('…'),
            "cut, not dropped"
        );
    }

    #[test]
    fn a_row_cursor_is_read_only_for_its_search_and_offset() {
        let c = RowCursor { offset: 20 }.encode("a\0/");
        assert_eq!(RowCursor::parse(&c, "a\0/"), Some(RowCursor { offset: 20 }));
        assert_eq!(RowCursor::parse(&c, "b\0/"), None, "another search");
        let other_offset = c.replacen("r20", "r30", 1);
        assert_eq!(RowCursor::parse(&other_offset, "a\0/"), None, "forged");
        let zero = RowCursor { offset: 0 }.encode("a\0/");
        assert_eq!(RowCursor::parse(&zero, "a\0/"), None);
    }

    #[test]
    fn merging_per_word_results_favours_rows_holding_rarer_and_more_words() {
        let r = |p: &str| LookupRow::document(p, 0.5, "T", vec![]);
        let common: Vec<LookupRow> = (0..20).map(|i| r(&format!("/c{i:02}.md"))).collect();
        let mut common_plus = common.clone();
        common_plus.push(r("/both.md"));
        let found = merge_any(
            vec![
                ("common", common_plus),
                ("rare", vec![r("/rare.md"), r("/both.md")]),
            ],
            3,
        );
        let order: Vec<String> = found.table.rows.iter().map(|r| r.target()).collect();
        assert_eq!(order, ["/both.md", "/rare.md", "/c00.md"]);
        assert_eq!(found.total, 22);
        let lacks: Vec<Vec<String>> = found.table.rows.iter().map(|r| r.lacks.clone()).collect();
        assert_eq!(
            lacks,
            [vec![], vec!["common".to_string()], vec!["rare".to_string()]]
        );
        let lines = rows(&found.table.rows, &[]);
        assert_eq!(lines[1], "/rare.md · T · lacks: common");
    }
}
