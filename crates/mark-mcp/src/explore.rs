//! `mark_explore`: one small card that orients an agent in a document — its
//! outline, opening paragraph, outbound links, backlinks and siblings — so
//! that the next call can fetch the one section it needs.
//!
//! The document FETCH (through the session cache, like `mark_fetch`), the
//! parent LIST and the link-graph query run concurrently. Only the document's
//! own FETCH can fail the call: a failing LIST or an unbuilt graph becomes a
//! one-line note in its section. Each section shows at most
//! [`CARD_LINES`] lines; one that overflows ends with `+N more: cursor "…"`,
//! and that cursor (a section name and an offset) asks for the next page of
//! just that section. The byte budgets of the sections are pooled: what one
//! section does not need goes to those that overflow, so the card shows as
//! much as its bound allows.
//!
//! A card or page is recorded in the session's delivery log by a digest of
//! its text: asking again for the same card of the same version answers
//! `unchanged` in one line (`force` re-sends it), like `mark_fetch`. The
//! card goes out through a [`ResultBuilder`], which records it only when it
//! went in whole.

use crate::crawl::{
    CrawlProgress, CrawlWatcher, StopOnDrop, Unwatched, Waited, age_text, parent_dir,
};
use crate::dedup::{AnswerKey, Delivery, document_answer_digest};
use crate::envelope::{ToolText, one_line, size_line};
use crate::fetch::change_note;
use crate::keys::{graph_key, wire_path};
use crate::list::{Completeness, entry_path};
use crate::paging::cursor_argument;
use crate::result::ResultBuilder;
use crate::session::{CachedDoc, FolderListing, Freshness, Loaded, Session};
use futures::future::BoxFuture;
use link_graph::{Backlink, Coverage, LinkTarget};
use mark_proto::list::ListEntry;
use mark_proto::{Request, Status, Verb};
use markdown_slice::{OutlineEntry, OutlineOptions};
use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::RequestContext;
use serde::Deserialize;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

/// Lines per section on the card, the `+N more` line included.
pub const CARD_LINES: usize = 10;
/// Lines per page when a cursor asks for more of one section (bounded in
/// bytes too: a glossary's whole outline fits one page, a long link list not).
pub const PAGE_LINES: usize = 60;
/// Bytes of a page of one section.
const PAGE_BYTES: usize = 4000;
/// Byte budgets of the card's parts: together with the headings and the
/// last line they keep the whole card under 2 KB. The listed parts pool
/// theirs (see [`pooled_budgets`]).
const OUTLINE_BYTES: usize = 600;
const OPENING_BYTES: usize = 220;
const LINKS_BYTES: usize = 280;
const BACKLINKS_BYTES: usize = 240;
const SIBLINGS_BYTES: usize = 160;
const TITLE_BYTES: usize = 80;
/// Link texts and titles inside list lines are cut to this many bytes.
const LABEL_BYTES: usize = 40;
/// Longest line of any part (a 200,000-character link target is cut).
const LINE_BYTES: usize = 200;
/// Longest line of a compact run of heading names.
const NAMES_LINE_BYTES: usize = 100;
/// The line before a run of heading names.
const NAMES_INTRO: &str = "By name (a name works as #anchor):\n";
/// Every heading: the card chooses what to show itself.
const WHOLE_OUTLINE: OutlineOptions = OutlineOptions {
    max_lines: usize::MAX,
    max_bytes: usize::MAX,
};
/// Entries asked for per LIST page when listing the parent folder.
const LIST_PAGE: usize = 1000;
/// Entries of the parent folder read at most (its pages are followed until
/// then): the siblings count is the folder's up to this many.
const LISTED_ENTRIES: usize = 10_000;

/// Parameters of `mark_explore` (and of the `explore` verb).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, clap::Args)]
pub struct ExploreParams {
    /// /path, mark://host/path or `[[Note]]` of a document.
    pub url: String,
    /// From a "+N more" line: the next page of that section.
    #[arg(long)]
    #[serde(default)]
    pub cursor: Option<String>,
    /// Re-send even if unchanged.
    #[arg(long)]
    #[serde(default)]
    pub force: bool,
}

/// A card section that can be paged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Outline,
    Links,
    Backlinks,
    Siblings,
}

impl Part {
    fn name(self) -> &'static str {
        match self {
            Part::Outline => "outline",
            Part::Links => "links",
            Part::Backlinks => "backlinks",
            Part::Siblings => "siblings",
        }
    }
}

/// `backlinks.20`: a section and the offset of the next line to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cursor {
    part: Part,
    offset: usize,
}

impl Cursor {
    fn parse(s: &str) -> Option<Cursor> {
        let (name, offset) = s.trim().split_once('.')?;
        let part = [Part::Outline, Part::Links, Part::Backlinks, Part::Siblings]
            .into_iter()
            .find(|p| p.name() == name)?;
        Some(Cursor {
            part,
            offset: offset.parse().ok()?,
        })
    }

    fn encode(self) -> String {
        format!("{}.{}", self.part.name(), self.offset)
    }
}

/// The card for `params.url` (or, with a cursor, one page of one section).
pub async fn explore(session: &Session, params: ExploreParams, now: Instant) -> ToolText {
    explore_watched(session, params, now, &Unwatched).await
}

/// [`explore`], telling `watcher` the crawl's progress while the card waits
/// for the link graph, and giving up when it is cancelled (a crawl this call
/// started stops too).
pub async fn explore_watched(
    session: &Session,
    params: ExploreParams,
    now: Instant,
    watcher: &dyn CrawlWatcher,
) -> ToolText {
    explore_card(session, params, now, watcher, ShowBacklinks::Always).await
}

/// Whether a card shows its backlinks part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShowBacklinks {
    /// Always, saying how complete the graph is (every tool call).
    Always,
    /// Only when the graph is complete, else nothing about backlinks at
    /// all (the SessionStart hook, which cannot wait for a crawl).
    OnlyComplete,
}

/// [`explore_watched`], choosing whether an incomplete graph's backlinks
/// are shown.
pub async fn explore_card(
    session: &Session,
    params: ExploreParams,
    now: Instant,
    watcher: &dyn CrawlWatcher,
    backlinks: ShowBacklinks,
) -> ToolText {
    let target = match session.resolve_argument(&params.url, now, watcher).await {
        Ok(t) => t,
        Err(e) => return ToolText::error(e),
    };
    // Decoded, as the graph and link resolution have paths; requests re-encode.
    let path = graph_key(&target.path).into_owned();
    if path.ends_with('/') {
        return ToolText::error(format!(
            "{path} is a folder; explore a document in it (mark_list {path} names them)"
        ));
    }
    let cursor = match cursor_argument(params.cursor.as_deref(), Cursor::parse) {
        Ok(c) => c,
        Err(c) => {
            return ToolText::error(format!(
                "cursor `{c}` is not one mark_explore gave; explore {path} again without a cursor"
            ));
        }
    };
    match cursor {
        None => card(session, &path, params.force, now, watcher, backlinks).await,
        Some(c) => page(session, &path, c, params.force, now, watcher).await,
    }
}

/// Byte budgets that pool what parts leave unused: each part keeps its own
/// `budgets[i]` up to its `needs[i]`; the bytes left over go to the parts
/// that need more, in order. The sum never exceeds the sum of `budgets`.
fn pooled_budgets<const N: usize>(needs: [usize; N], budgets: [usize; N]) -> [usize; N] {
    let mut spare: usize = (0..N).map(|i| budgets[i].saturating_sub(needs[i])).sum();
    std::array::from_fn(|i| {
        let extra = needs[i].saturating_sub(budgets[i]).min(spare);
        spare -= extra;
        budgets[i].min(needs[i]) + extra
    })
}

/// Bytes of the first [`CARD_LINES`] of `lines`, line breaks counted: what a
/// part would take with no byte bound.
fn need(lines: &[String]) -> usize {
    lines.iter().take(CARD_LINES).map(|l| l.len() + 1).sum()
}

/// Cuts `text` to one line of at most `max` bytes, marking a cut with `…`.
fn label(text: &str, max: usize) -> String {
    one_line(text, max)
}

/// How many of `lines` fit in `max_lines` and `max_bytes` (line breaks
/// counted). The first line always does, so one long line cannot hide a
/// whole section.
fn fitting(lines: &[String], max_lines: usize, max_bytes: usize) -> usize {
    let mut bytes = 0;
    let mut kept = 0;
    for line in lines {
        if kept > 0 && (kept >= max_lines || bytes + line.len() + 1 > max_bytes) {
            break;
        }
        bytes += line.len() + 1;
        kept += 1;
    }
    kept
}

/// Lines `offset..` of a section, as many as fit in `max_lines` (the
/// overflow line included) and `max_bytes`, then `+N more: cursor "…"`.
fn fit(lines: &[String], part: Part, offset: usize, max_lines: usize, max_bytes: usize) -> String {
    // A line over LINE_BYTES (a 200,000-character link target) is cut, so
    // that the first line, always shown, stays small too.
    let rest: Vec<String> = lines
        .get(offset..)
        .unwrap_or_default()
        .iter()
        .map(|l| {
            if l.len() <= LINE_BYTES {
                l.clone()
            } else {
                label(l, LINE_BYTES)
            }
        })
        .collect();
    let mut kept = fitting(&rest, max_lines, max_bytes);
    if kept < rest.len() {
        kept = fitting(&rest, max_lines.saturating_sub(1), max_bytes);
    }
    let mut out: String = rest[..kept].iter().map(|l| format!("{l}\n")).collect();
    let left = rest.len() - kept;
    if left > 0 {
        let next = Cursor {
            part,
            offset: offset + kept,
        };
        out.push_str(&format!("+{left} more: cursor \"{}\"\n", next.encode()));
    }
    out
}

/// A listing of the parent folder, or why there is none.
type Listing = Result<Arc<FolderListing>, String>;

/// The listing of `dir`: the session's, when listed within the freshness
/// window (a burst of cards in one folder costs one LIST), else one LIST.
async fn list_parent(session: &Session, dir: &str, now: Instant) -> Listing {
    if let Some(listing) = session.fresh_listing(dir, now) {
        return Ok(listing);
    }
    // Follow the server's pages so the counts the card and its siblings
    // cursor give are the folder's, up to `LISTED_ENTRIES`.
    let mut entries = Vec::new();
    let mut next: Option<String> = None;
    // A server whose paging loops (a cursor given again) is not followed
    // round: the listing ends there, partial.
    let mut followed = std::collections::HashSet::new();
    let ticket = session.listing_ticket();
    let completeness = loop {
        let mut req = Request::new(Verb::List, dir).with_meta("page-size", LIST_PAGE.to_string());
        if let Some(c) = &next {
            req = req.with_meta("cursor", c.as_str());
        }
        let resp = session.send(req).await.map_err(|t| t.text)?;
        if resp.status != Status::Ok {
            let message = resp.error_message();
            let message = message.lines().next().unwrap_or("").trim();
            return Err(if message.is_empty() {
                format!("LIST {dir} answered {}", resp.status.as_str())
            } else {
                format!(
                    "LIST {dir} answered {}: {}",
                    resp.status.as_str(),
                    label(message, 120)
                )
            });
        }
        let page = mark_proto::list::parse(&resp.body)
            .map_err(|e| format!("the listing of {dir} is malformed ({e})"))?;
        let empty = page.is_empty();
        entries.extend(page);
        match Completeness::of(&resp) {
            Completeness::Partial(Some(c))
                if !empty && entries.len() < LISTED_ENTRIES && followed.insert(c.clone()) =>
            {
                next = Some(c);
            }
            other => break other,
        }
    };
    Ok(session.keep_listing(
        dir,
        FolderListing {
            entries,
            completeness,
        },
        now,
        ticket,
    ))
}

/// The graph as a card sees it: the backlinks, the coverage, the crawl's
/// state, and the graph's age when it is older than `--graph-fresh-for`.
struct GraphView {
    backlinks: Vec<Backlink>,
    coverage: Coverage,
    progress: CrawlProgress,
    age: Option<std::time::Duration>,
}

/// Starts a crawl when the graph needs one (none yet, older than
/// `--graph-fresh-for`, or `force`), waits for it within the session's
/// bound, and reads `path`'s backlinks. `None`: cancelled.
async fn graph_view(
    session: &Session,
    path: &str,
    now: Instant,
    force: bool,
    watcher: &dyn CrawlWatcher,
) -> Option<GraphView> {
    let graph = session.graph();
    if graph.start_and_wait(now, force, watcher).await == Waited::Cancelled {
        return None;
    }
    let (backlinks, coverage) = graph.backlinks(&wire_path(path));
    Some(GraphView {
        backlinks,
        coverage,
        progress: graph.progress(),
        age: graph.stale_age(Instant::now().max(now)),
    })
}

/// The `## Backlinks …` heading and one line per linking document: its
/// first section holding a link here, and how many more sections link.
fn backlink_lines(view: &GraphView) -> (String, Vec<String>) {
    let mut lines = Vec::new();
    let mut rest = view.backlinks.as_slice();
    while let Some(first) = rest.first() {
        let same = rest.iter().take_while(|b| b.source == first.source).count();
        let name = first
            .source_title
            .as_deref()
            .unwrap_or_else(|| first.source.rsplit('/').next().unwrap_or(&first.source));
        let section = first
            .section
            .as_deref()
            .map(|s| format!("#{s}"))
            .unwrap_or_default();
        let more = match same - 1 {
            0 => String::new(),
            1 => " (+1 section)".to_string(),
            n => format!(" (+{n} sections)"),
        };
        lines.push(format!(
            "- [{}]({}{section}){more}",
            label(name, LABEL_BYTES),
            wire_path(&first.source)
        ));
        rest = &rest[same..];
    }
    let mut note = view.coverage.backlinks_note(lines.len());
    if let Some(age) = view.age {
        // Inside the closing parenthesis: `(3; graph complete, as of 4 min ago)`.
        note.insert_str(note.len() - 1, &format!(", as of {} ago", age_text(age)));
    }
    let heading = format!("## Backlinks {note}");
    (heading, lines)
}

/// Outbound links in card order: internal (resolved by the session graph,
/// note names by the vault rule, anchors kept) then external, then names
/// no known note has; deduplicated by target, images, attachments and
/// links to the document itself left out, an embedded note marked.
fn link_lines(session: &Session, path: &str, cached: &CachedDoc) -> Vec<String> {
    let graph = session.graph();
    let mut seen = HashSet::new();
    let (mut internal, mut external, mut unresolved) = (Vec::new(), Vec::new(), Vec::new());
    let complete = graph.coverage().complete;
    for (edge, target) in graph.resolve_links(&wire_path(path), &cached.doc) {
        let embed = edge.note.as_ref().is_some_and(|n| n.embed);
        let (target, kind) = match target {
            LinkTarget::Document { path: p, .. } if p == path => continue,
            LinkTarget::Document { path: p, fragment } => {
                let anchor = fragment.map(|f| format!("#{f}")).unwrap_or_default();
                (format!("{}{anchor}", wire_path(&p)), 0)
            }
            LinkTarget::External(url) => (url, 1),
            LinkTarget::Unresolved { name, fragment } => {
                let anchor = fragment.map(|f| format!("#{f}")).unwrap_or_default();
                (format!("[[{name}{anchor}]]"), 2)
            }
        };
        if !seen.insert((target.clone(), embed)) {
            continue;
        }
        let text = if edge.text.trim().is_empty() {
            target.clone()
        } else {
            edge.text.clone()
        };
        let text = label(&text, LABEL_BYTES);
        let embedded = if embed { " (embedded note)" } else { "" };
        match kind {
            0 => internal.push(format!("- [{text}]({target}){embedded}")),
            1 => external.push(format!("- [{text}]({target})")),
            // Over a partial graph the note may exist, not crawled yet.
            _ if complete => {
                unresolved.push(format!("- {target}: unresolved, no note has this name"))
            }
            _ => unresolved.push(format!("- {target}: not seen yet (graph partial)")),
        }
    }
    internal.extend(external);
    internal.extend(unresolved);
    internal
}

/// The siblings of `path` in its folder listing (itself left out), folders
/// with a trailing `/`, documents with their title when the graph has it.
fn sibling_lines(session: &Session, dir: &str, path: &str, entries: &[ListEntry]) -> Vec<String> {
    let graph = session.graph();
    let (dir_key, own_key) = (wire_path(dir), wire_path(path));
    entries
        .iter()
        .map(|e| (e, entry_path(&dir_key, e)))
        .filter(|(e, key)| e.is_dir || *key != own_key)
        .map(|(e, key)| {
            let name = entry_path("", e);
            match (e.is_dir, graph.title(&key)) {
                (false, Some(title)) => format!("- {name}: {}", label(&title, LABEL_BYTES)),
                _ => format!("- {name}"),
            }
        })
        .collect()
}

fn siblings_heading(dir: &str, listing: &Listing, count: usize) -> String {
    match listing.as_ref().map(|l| &l.completeness) {
        Ok(Completeness::Complete) => format!("## Siblings in {} ({count})", wire_path(dir)),
        Ok(Completeness::Partial(_)) => format!(
            "## Siblings in {} ({count}+, listing paged)",
            wire_path(dir)
        ),
        Ok(Completeness::Unstated) => format!(
            "## Siblings in {} ({count}; the server did not say whether its listing is complete)",
            wire_path(dir)
        ),
        Err(_) => format!("## Siblings in {}", wire_path(dir)),
    }
}

/// The document's headings as outline lines (`- Text (#anchor, ~N tok)`,
/// indented by depth), a lone top heading (the title) left out.
fn outline_entries(cached: &CachedDoc) -> Vec<OutlineEntry> {
    let all = cached.doc.outline(&WHOLE_OUTLINE);
    let mut entries: Vec<OutlineEntry> = all.entries;
    let tops = entries
        .iter()
        .filter(|e| matches!(e, OutlineEntry::Heading { depth: 0, .. }))
        .count();
    if tops == 1
        && entries.len() > 1
        && matches!(entries[0], OutlineEntry::Heading { depth: 0, .. })
    {
        entries.remove(0);
    }
    let base = entries.iter().map(entry_depth).min().unwrap_or(0);
    for e in &mut entries {
        if let OutlineEntry::Heading { depth, .. } = e {
            *depth -= base;
        }
    }
    entries
}

fn entry_depth(e: &OutlineEntry) -> usize {
    match e {
        OutlineEntry::Heading { depth, .. } | OutlineEntry::Collapsed { depth, .. } => *depth,
        OutlineEntry::More { .. } => 0,
    }
}

/// The outline section within `max_bytes`: the shallowest level first, then
/// each deeper level while the whole level still fits (all H2s before any
/// H3). When even the shallowest level does not fit as lines (a glossary's
/// forty terms), its headings' names come as a compact run instead, so the
/// card still names every section it can.
fn outline_text(entries: &[OutlineEntry], max_bytes: usize) -> String {
    if entries.is_empty() {
        return "(no headings)\n".to_string();
    }
    let lines: Vec<(usize, String)> = entries
        .iter()
        .map(|e| (entry_depth(e), e.to_string()))
        .collect();
    let room = CARD_LINES - 1;
    let fits = |depth: usize| {
        let shown = lines.iter().filter(|(d, _)| *d <= depth);
        let (count, bytes) = shown.fold((0, 0), |(n, b), (_, l)| (n + 1, b + l.len() + 1));
        count <= room && bytes <= max_bytes
    };
    let max_depth = lines.iter().map(|(d, _)| *d).max().unwrap_or(0);
    let Some(depth) = (0..=max_depth).rev().find(|&d| fits(d)) else {
        return heading_names(entries, max_bytes);
    };
    let shown: Vec<&str> = lines
        .iter()
        .filter(|(d, _)| *d <= depth)
        .map(|(_, l)| l.as_str())
        .collect();
    let mut out: String = shown.iter().map(|l| format!("{l}\n")).collect();
    if shown.len() < lines.len() {
        // What did not fit is paged from the first heading: the whole outline in order.
        out.push_str(&more_headings(lines.len() - shown.len(), lines.len()));
    }
    out
}

/// `+N more headings: cursor "outline.0" lists all M`.
fn more_headings(left: usize, all: usize) -> String {
    let cursor = Cursor {
        part: Part::Outline,
        offset: 0,
    };
    format!(
        "+{left} more headings: cursor \"{}\" lists all {all}\n",
        cursor.encode()
    )
}

/// The names of the shallowest headings, joined by ` · ` into lines of at
/// most [`NAMES_LINE_BYTES`], as many as fit in `max_bytes`. A name works as
/// an anchor (`mark_fetch` re-slugs heading text), which the first line says.
fn heading_names(entries: &[OutlineEntry], max_bytes: usize) -> String {
    // A name that would find an earlier namesake (the second `Setup`) comes as its anchor.
    let names: Vec<(String, Option<&str>)> = entries
        .iter()
        .filter_map(|e| match e {
            OutlineEntry::Heading {
                depth: 0,
                text,
                by_name,
                anchor,
                ..
            } => match (by_name, anchor) {
                (true, _) => Some((label(text, LABEL_BYTES), anchor.as_deref())),
                (false, Some(anchor)) => Some((
                    label(&format!("#{anchor}"), LABEL_BYTES),
                    Some(anchor.as_str()),
                )),
                (false, None) => None,
            },
            _ => None,
        })
        .collect();
    let all = entries.len();
    let whole = names_lines(names.iter().map(|(n, _)| n.clone()));
    if whole.len() <= max_bytes && names.len() == all {
        return whole;
    }
    let footer_room = |shown: usize| more_headings(all - shown, all).len();
    if whole.len() + footer_room(names.len()) <= max_bytes {
        return format!("{whole}{}", more_headings(all - names.len(), all));
    }
    // Too many names: the first two and the newest (documents that grow by
    // appending put them last), with the cut in the middle named.
    let head = names.len().min(2);
    let with_tail = |tail: usize| -> (String, usize) {
        let cut = &names[head..names.len() - tail];
        let mut tokens: Vec<String> = names[..head].iter().map(|(n, _)| n.clone()).collect();
        if !cut.is_empty() {
            let ends = match (cut.first().and_then(|c| c.1), cut.last().and_then(|c| c.1)) {
                (Some(a), Some(b)) if cut.len() > 1 => format!(": #{a} … #{b}"),
                (Some(a), _) => format!(": #{a}"),
                _ => String::new(),
            };
            tokens.push(label(
                &format!("(+{}{ends})", cut.len()),
                2 * LABEL_BYTES + 12,
            ));
        }
        tokens.extend(names[names.len() - tail..].iter().map(|(n, _)| n.clone()));
        let shown = head + tail;
        (names_lines(tokens.into_iter()), shown)
    };
    let fits = |tail: usize| {
        let (text, shown) = with_tail(tail);
        text.len() + footer_room(shown) <= max_bytes
    };
    // The most names from the end that fit (more names, more bytes).
    let (mut fitting, mut too_many) = (0, names.len() - head);
    while too_many - fitting > 1 {
        let mid = fitting + (too_many - fitting) / 2;
        if fits(mid) {
            fitting = mid;
        } else {
            too_many = mid;
        }
    }
    let (text, shown) = with_tail(fitting);
    if text.len() + footer_room(shown) > max_bytes {
        return more_headings(all, all);
    }
    format!("{text}{}", more_headings(all - shown, all))
}

/// The names run: [`NAMES_INTRO`], then `- a · b · c` lines of at most
/// [`NAMES_LINE_BYTES`] (a longer name has a line of its own).
fn names_lines(names: impl Iterator<Item = String>) -> String {
    let mut out = String::from(NAMES_INTRO);
    let mut line = String::new();
    for name in names {
        if !line.is_empty() && line.len() + " · ".len() + name.len() > NAMES_LINE_BYTES {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        line.push_str(if line.is_empty() { "- " } else { " · " });
        line.push_str(&name);
    }
    if !line.is_empty() {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Every heading in document order, indented by level, for paging.
fn outline_lines(cached: &CachedDoc) -> Vec<String> {
    outline_entries(cached)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// The header lines every card and page starts with.
fn header(cached: &CachedDoc) -> ToolText {
    let doc = &cached.doc;
    // Frontmatter and inline tags, and the note's other names, as search sees them.
    let joined = |names: Vec<&str>| Some(names.join(", ")).filter(|t| !t.is_empty());
    let tags = joined(doc.tags());
    let aliases = joined(doc.aliases().iter().map(String::as_str).collect());
    ToolText::new("ok")
        .with_opt("version", cached.identity.version.clone())
        .with_opt("title", doc.title().map(|t| label(t, TITLE_BYTES)))
        .with("size", size_line(doc.source()))
        .with_opt("aliases", aliases.map(|a| label(&a, TITLE_BYTES)))
        .with_opt("tags", tags.map(|t| label(&t, TITLE_BYTES)))
}

async fn card(
    session: &Session,
    path: &str,
    force: bool,
    now: Instant,
    watcher: &dyn CrawlWatcher,
    show_backlinks: ShowBacklinks,
) -> ToolText {
    let dir = parent_dir(path);
    let (request_path, request_dir) = (wire_path(path), wire_path(dir));
    // The crawl starts now and runs beside the document's FETCH and the
    // LIST; the card waits for it only once the document is known to exist,
    // so a missing document is answered at once.
    let graph = session.graph();
    let mut stop_on_drop = StopOnDrop(graph.start(now, force).then_some(graph));
    let freshness = if force {
        Freshness::Revalidate
    } else {
        Freshness::CacheOk
    };
    let (loaded, listing) = tokio::join!(
        session.load_with(&request_path, now, freshness),
        list_parent(session, &request_dir, now),
    );
    let cached = match loaded {
        Loaded::Doc(d) => d,
        Loaded::Answer(t) => {
            stop_on_drop.0 = None;
            return t;
        }
    };
    let Some(view) = graph_view(session, path, now, false, watcher).await else {
        return ToolText::error("explore was cancelled; call it again to go on");
    };
    stop_on_drop.0 = None;

    let outline = outline_entries(&cached);
    // What the outline shows with no byte bound: what it needs, and what it
    // shows whenever its budget covers that.
    let whole_outline = outline_text(&outline, usize::MAX);
    let links = link_lines(session, path, &cached);
    let (backlinks_heading, backlinks) = backlink_lines(&view);
    let siblings = match &listing {
        Ok(l) => sibling_lines(session, dir, path, &l.entries),
        Err(_) => Vec::new(),
    };
    // The outline has the first claim on spare bytes: it is what the next
    // call picks from.
    let [outline_bytes, links_bytes, backlinks_bytes, siblings_bytes] = pooled_budgets(
        [
            whole_outline.len(),
            need(&links),
            need(&backlinks),
            need(&siblings),
        ],
        [OUTLINE_BYTES, LINKS_BYTES, BACKLINKS_BYTES, SIBLINGS_BYTES],
    );

    let shown_outline = if outline_bytes >= whole_outline.len() {
        whole_outline
    } else {
        outline_text(&outline, outline_bytes)
    };
    let mut text = format!("## Outline\n{shown_outline}");
    let opening = cached.doc.opening_paragraph(OPENING_BYTES).trim();
    text.push_str("\n## Opening\n");
    text.push_str(if opening.is_empty() {
        "(no opening paragraph)"
    } else {
        opening
    });
    text.push('\n');

    text.push_str(&format!("\n## Outbound links ({})\n", links.len()));
    text.push_str(&fit(&links, Part::Links, 0, CARD_LINES, links_bytes));

    if show_backlinks == ShowBacklinks::Always || view.coverage.complete {
        text.push_str(&format!("\n{backlinks_heading}\n"));
        let note_line = view.progress.note();
        let room = CARD_LINES - usize::from(note_line.is_some());
        text.push_str(&fit(&backlinks, Part::Backlinks, 0, room, backlinks_bytes));
        if let Some(n) = note_line {
            text.push_str(&n);
            text.push('\n');
        }
    }

    text.push_str(&format!(
        "\n{}\n",
        siblings_heading(dir, &listing, siblings.len())
    ));
    match &listing {
        Ok(_) => text.push_str(&fit(
            &siblings,
            Part::Siblings,
            0,
            CARD_LINES,
            siblings_bytes,
        )),
        Err(e) => text.push_str(&format!("(not listed: {})\n", label(e, 160))),
    }

    text.push_str(&format!(
        "\nRead a section: mark_fetch \"{}#anchor\". More of a section: mark_explore with its cursor.\n",
        wire_path(path)
    ));
    deliver(
        session,
        path,
        "card".to_string(),
        &cached,
        header(&cached),
        text,
        force,
        now,
    )
}

/// Sends `text` under `head` unless this session was already sent exactly
/// this text of this version as this `part` (`card`, or a page's cursor)
/// of this document (then one `unchanged` line, which renews nothing). The
/// card never counts as a delivery of the body or a section, so a later
/// fetch still sends the text; a changed document's card says what changed
/// since the session last read it.
#[allow(clippy::too_many_arguments)]
fn deliver(
    session: &Session,
    path: &str,
    part: String,
    cached: &CachedDoc,
    head: ToolText,
    text: String,
    force: bool,
    now: Instant,
) -> ToolText {
    let identity = &cached.identity;
    let key = AnswerKey {
        tool: "explore",
        subject: path.to_string(),
        part,
    };
    let digest = document_answer_digest(identity, &text);
    let (sent, changed_from) = {
        let log = session.log();
        (
            log.answer_sent(&key, &digest, now),
            log.changed_from(path, identity, now),
        )
    };
    if sent && !force {
        return ToolText::new("unchanged").with_text(format!(
            "card unchanged since {} (explored earlier this session); force=true to re-send",
            identity.label()
        ));
    }
    let note = changed_from
        .map(|(old, hashes)| change_note(&old, identity, hashes.as_deref(), &cached.hashes));
    let mut b = ResultBuilder::for_page_bytes("ok", session.settings().page_bytes);
    for (k, v) in &head.fields {
        b.field(k, v);
    }
    b.field_opt("note", note.as_deref());
    let sent = vec![
        Delivery::Doc {
            path: path.to_string(),
            part: None,
            identity: identity.clone(),
            snapshot: Arc::clone(&cached.hashes),
            at: now,
        },
        Delivery::Answer {
            key,
            digest,
            at: now,
        },
    ];
    if let Err(_not_sent) = b.push(&text, sent) {
        b.push_shortened(&text);
    }
    b.finish().send(session)
}

/// One page of one section, from the cursor's offset.
async fn page(
    session: &Session,
    path: &str,
    cursor: Cursor,
    force: bool,
    now: Instant,
    watcher: &dyn CrawlWatcher,
) -> ToolText {
    // Pages of the document's own parts have its version, so they dedup.
    // `more` is "+" when the count is a floor (a folder listed only in part).
    let (heading, lines, base, doc, more) = match cursor.part {
        Part::Outline | Part::Links => {
            let cached = match session.load(&wire_path(path), now).await {
                Loaded::Doc(d) => d,
                Loaded::Answer(t) => return t,
            };
            let (heading, lines) = if cursor.part == Part::Outline {
                let lines = outline_lines(&cached);
                (format!("## Outline ({} headings)", lines.len()), lines)
            } else {
                let lines = link_lines(session, path, &cached);
                (format!("## Outbound links ({})", lines.len()), lines)
            };
            (heading, lines, header(&cached), Some(cached), "")
        }
        Part::Backlinks => {
            let Some(view) = graph_view(session, path, now, false, watcher).await else {
                return ToolText::error("explore was cancelled; call it again to go on");
            };
            let (heading, lines) = backlink_lines(&view);
            let title = session.graph().title(&wire_path(path));
            (
                heading,
                lines,
                ToolText::new("ok").with_opt("title", title),
                None,
                "",
            )
        }
        Part::Siblings => {
            let dir = parent_dir(path);
            let listing = list_parent(session, &wire_path(dir), now).await;
            let lines = match &listing {
                Ok(l) => sibling_lines(session, dir, path, &l.entries),
                Err(e) => return ToolText::error(format!("{e}; try again later")),
            };
            let heading = siblings_heading(dir, &listing, lines.len());
            let more = match listing.as_ref().map(|l| &l.completeness) {
                Ok(Completeness::Partial(_)) => "+",
                _ => "",
            };
            (heading, lines, ToolText::new("ok"), None, more)
        }
    };
    let body = if cursor.offset >= lines.len() {
        format!(
            "(nothing from line {}: {}{more} in all)\n",
            cursor.offset + 1,
            lines.len()
        )
    } else {
        fit(&lines, cursor.part, cursor.offset, PAGE_LINES, PAGE_BYTES)
    };
    let head = base.with("section", cursor.part.name()).with(
        "page",
        format!("from {} (of {}{})", cursor.offset + 1, lines.len(), more),
    );
    let text = format!("{heading}\n{body}");
    match doc {
        Some(cached) => deliver(
            session,
            path,
            cursor.encode(),
            &cached,
            head,
            text,
            force,
            now,
        ),
        None => ResultBuilder::shorten(head.with_text(text), session.settings().page_bytes),
    }
}

/// Progress and cancellation of one MCP request: notifications go out only
/// when the client sent a progress token.
pub struct McpWatcher {
    ctx: RequestContext<RoleServer>,
    token: Option<ProgressToken>,
}

impl McpWatcher {
    /// Watches the request `ctx` belongs to.
    pub fn new(ctx: RequestContext<RoleServer>) -> McpWatcher {
        let token = ctx.meta.get_progress_token();
        McpWatcher { ctx, token }
    }
}

impl std::fmt::Debug for McpWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpWatcher")
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl CrawlWatcher for McpWatcher {
    fn progress(&self, progress: &CrawlProgress) -> BoxFuture<'_, ()> {
        let Some(token) = self.token.clone() else {
            return Box::pin(std::future::ready(()));
        };
        let param = ProgressNotificationParam::new(token, progress.fetched as f64)
            .with_total(progress.listed as f64)
            .with_message(progress.message());
        Box::pin(async move {
            if let Err(e) = self.ctx.peer.notify_progress(param).await {
                tracing::debug!(error = %e, "progress notification not sent");
            }
        })
    }

    fn cancelled(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.ctx.ct.cancelled())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("- line {i}")).collect()
    }

    #[test]
    fn spare_bytes_go_to_the_parts_that_overflow_in_order() {
        // The first part needs 100 of its 400 and the last 10 of its 100:
        // 390 spare; the second takes 250 of them, the third the last 140.
        let got = pooled_budgets([100, 550, 400, 10], [400, 300, 200, 100]);
        assert_eq!(got, [100, 550, 340, 10]);
        assert_eq!(got.iter().sum::<usize>(), 1000);
        // Nothing spare: every part keeps its own.
        assert_eq!(pooled_budgets([900, 900], [10, 20]), [10, 20]);
    }

    fn whole_outline(md: &str) -> Vec<OutlineEntry> {
        markdown_slice::Document::parse(md)
            .outline(&WHOLE_OUTLINE)
            .entries
    }

    #[test]
    fn a_long_flat_outline_comes_as_names_within_its_bytes() {
        let entries = whole_outline(
            &(0..40)
                .map(|i| format!("## Term {i}\n\ntext\n\n"))
                .collect::<String>(),
        );
        let all = outline_text(&entries, 2000);
        assert!(all.starts_with(NAMES_INTRO), "{all}");
        assert!(all.contains("- Term 0 · Term 1 · "), "{all}");
        assert!(all.contains("Term 39") && !all.contains("more headings"));
        assert!(all.lines().all(|l| l.len() <= NAMES_LINE_BYTES));
        let cut = outline_text(&entries, 200);
        assert!(cut.len() <= 200 + 60, "{cut}");
        assert!(cut.contains("more headings: cursor \"outline.0\" lists all 40"));
        // A short outline keeps its lines with anchors and sizes.
        let short = outline_text(&entries[..3], 2000);
        assert!(short.starts_with("- Term 0 (#term-0, ~"), "{short}");
        // A budget that covers the unbounded text shows exactly that text
        // (the card renders it once when its budget allows).
        for part in [&entries[..], &entries[..3]] {
            let whole = outline_text(part, usize::MAX);
            assert_eq!(outline_text(part, whole.len()), whole);
        }
        // Names of uneven lengths, where lines break at different places.
        let uneven = whole_outline(
            &(0..30)
                .map(|i| format!("## {}\n\n", "Word ".repeat(1 + i % 7).trim_end()))
                .collect::<String>(),
        );
        let whole = outline_text(&uneven, usize::MAX);
        assert!(whole.starts_with(NAMES_INTRO), "{whole}");
        assert_eq!(outline_text(&uneven, whole.len()), whole);
        for max in 40..whole.len() {
            let cut = outline_text(&uneven, max);
            let kept = cut.split("+").next().unwrap_or("");
            assert!(kept.len() <= max, "{max}: {cut}");
        }
    }

    #[test]
    fn a_repeated_name_is_offered_as_its_anchor() {
        let entries = whole_outline("## Setup\n\none\n\n## Setup\n\ntwo\n\n## Setup 1\n\nthree\n");
        let names = heading_names(&entries, 2000);
        assert_eq!(
            names,
            format!("{NAMES_INTRO}- Setup · #setup-1 · Setup 1\n")
        );
    }

    #[test]
    fn cursors_round_trip_and_refuse_junk() {
        let c = Cursor {
            part: Part::Backlinks,
            offset: 20,
        };
        assert_eq!(c.encode(), "backlinks.20");
        assert_eq!(Cursor::parse("backlinks.20"), Some(c));
        for bad in ["", "backlinks", "backlinks.x", "body.3", "p2.abc"] {
            assert_eq!(Cursor::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_section_shows_at_most_its_lines_and_counts_the_rest() {
        assert_eq!(fit(&lines(3), Part::Links, 0, 10, 1000).lines().count(), 3);
        let ten = fit(&lines(10), Part::Links, 0, 10, 1000);
        assert_eq!(ten.lines().count(), 10);
        assert!(!ten.contains("more"));
        let over = fit(&lines(11), Part::Links, 0, 10, 1000);
        assert_eq!(over.lines().count(), 10);
        assert!(over.ends_with("+2 more: cursor \"links.9\"\n"), "{over}");
        let paged = fit(&lines(11), Part::Links, 9, 10, 1000);
        assert_eq!(paged, "- line 9\n- line 10\n");
        let tight = fit(&lines(11), Part::Siblings, 0, 10, 20);
        assert_eq!(
            tight,
            "- line 0\n- line 1\n+9 more: cursor \"siblings.2\"\n"
        );
    }

    #[test]
    fn labels_are_one_bounded_line() {
        assert_eq!(label("a\n b", 10), "a b");
        let cut = label(&"é".repeat(40), 11);
        assert!(cut.len() <= 11 && cut.ends_with('…'), "{cut}");
    }
}
