//! The scripted agents: fixed sequences of tool calls per question, with no
//! model. Each stops as soon as every fact of the question appears in the
//! text its tools returned, or when its plan runs out.

use crate::BenchError;
use crate::questions::{Evidence, Question};
use crate::reading::{self, CardLink, LookupHit};
use crate::session::{McpSession, ToolCall};
use crate::terms::{key_terms, overlap, query_ladder, rank_by_overlap, terms};
use markdown_slice::{Document, Target};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{HashSet, VecDeque};

/// Most documents a full-chain agent reads for one question.
pub const MAX_FULL_READS: usize = 10;
/// Most links of one document a full-chain agent follows.
pub const LINKS_PER_DOCUMENT: usize = 3;
/// Most documents a full-chain agent takes from the search.
pub const SEARCH_CANDIDATES: usize = 4;
/// Most sections a section agent fetches for one question.
pub const MAX_SECTION_FETCHES: usize = 4;
/// Most pages of a card's outline an explore agent reads.
pub const MAX_CARD_PAGES: usize = 3;
/// Rows a lookup asks for.
pub const LOOKUP_LIMIT: u32 = 10;
/// Rows the plain agent's one lookup asks for.
pub const PLAIN_LIMIT: u32 = 5;
/// Most tool calls the plain agent makes for one question.
pub const PLAIN_CALLS: usize = 3;
/// The document a session starts from (the SessionStart hook's card).
pub const ROOT_DOCUMENT: &str = "/index.md";

/// The strategies over mark-mcp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// One `mark_lookup` (body, [`PLAIN_LIMIT`] rows, `read` at the tool's
    /// default or as given) with the question's words, then `mark_fetch` of
    /// the next hits' sections in rank order, at most [`PLAIN_CALLS`] calls.
    PlainAgent,
    /// `mark_lookup` (catalog), then `mark_fetch mode=full` of each candidate
    /// and of its best links, one step.
    FullChain,
    /// `mark_lookup match=body`, then `mark_fetch /doc.md#anchor` of the hits
    /// in rank order.
    LookupSection,
    /// `mark_explore` of the root document, then of the hub its card
    /// offers and `mark_fetch` of the hub card's headings and links chosen
    /// by term overlap with the question; the plain agent's search when the
    /// root card offers nothing or the hub's offers did not answer.
    ExploreSection,
    /// Strategy 3 asked twice in one session; the second pass is measured.
    WarmSession,
    /// Not an agent: the least strategy 3 can pay. `mark_explore` of the
    /// hub, then, unless the card holds the facts, `mark_fetch` of the
    /// question's own smallest section (which it takes from the questions
    /// file, as no agent can).
    ExploreFloor,
}

impl Strategy {
    /// Every strategy, in table order.
    pub const ALL: [Strategy; 6] = [
        Strategy::PlainAgent,
        Strategy::FullChain,
        Strategy::LookupSection,
        Strategy::ExploreSection,
        Strategy::ExploreFloor,
        Strategy::WarmSession,
    ];

    /// The label in tables.
    pub fn label(self) -> &'static str {
        match self {
            Strategy::PlainAgent => {
                "plain agent (lookup body limit 5 + read → next hits' sections)"
            }
            Strategy::FullChain => "1. full-chain (lookup → fetch full, links one step)",
            Strategy::LookupSection => "2. lookup → section",
            Strategy::ExploreSection => "3. explore → section",
            Strategy::WarmSession => "4. warm session (2nd pass of 3)",
            Strategy::ExploreFloor => "3 floor: explore → the answer's own section (not an agent)",
        }
    }

    /// The tool a strategy cannot run without.
    pub fn needs_tool(self) -> &'static str {
        match self {
            Strategy::PlainAgent | Strategy::FullChain | Strategy::LookupSection => "mark_lookup",
            Strategy::ExploreSection | Strategy::WarmSession | Strategy::ExploreFloor => {
                "mark_explore"
            }
        }
    }
}

/// What one question cost one strategy.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionOutcome {
    /// The question's id.
    pub id: String,
    /// Every fact appeared in the returned text.
    pub answered: bool,
    /// Tool calls made (until the evidence, or until the plan ran out).
    pub calls: usize,
    /// o200k tokens of every result.
    pub tokens: usize,
    /// UTF-8 bytes of every result.
    pub bytes: usize,
    /// Calls that came back with `isError`.
    pub tool_errors: usize,
    /// Facts never seen (empty when answered).
    pub missing: Vec<String>,
    /// `tool target → status (mode), N tok` of each call, in order.
    pub trace: Vec<String>,
}

/// A scripted agent working on one question: it records the calls and
/// gathers their text as evidence.
pub struct Asker<'s> {
    session: &'s mut McpSession,
    question: &'s Question,
    evidence: Evidence,
    outcome: QuestionOutcome,
}

impl<'s> Asker<'s> {
    /// Starts on `question` with the evidence already in hand (the text of
    /// the session's earlier results; empty in a fresh session).
    pub fn with_evidence(
        session: &'s mut McpSession,
        question: &'s Question,
        evidence: Evidence,
    ) -> Asker<'s> {
        let outcome = QuestionOutcome {
            id: question.id.clone(),
            answered: false,
            calls: 0,
            tokens: 0,
            bytes: 0,
            tool_errors: 0,
            missing: Vec::new(),
            trace: Vec::new(),
        };
        Asker {
            session,
            question,
            evidence,
            outcome,
        }
    }

    /// The question.
    pub fn question(&self) -> &'s Question {
        self.question
    }

    /// Whether every fact is in the evidence.
    pub fn done(&self) -> bool {
        self.evidence.holds_all(&self.question.facts)
    }

    /// Calls a tool, records it and adds its text to the evidence.
    pub async fn call(&mut self, tool: &str, args: Value) -> Result<ToolCall, BenchError> {
        let call = self.session.call(tool, args).await?;
        self.outcome.calls += 1;
        self.outcome.tokens += call.tokens;
        self.outcome.bytes += call.bytes;
        self.outcome.tool_errors += usize::from(call.is_error);
        self.outcome.trace.push(trace_line(&call));
        self.evidence.add(&call.text);
        Ok(call)
    }

    /// The text `call` stands for: its own, or, when it answered `unchanged`
    /// (this session already sent that text), the text of the earlier call
    /// with the same arguments that the agent still holds in its context.
    pub fn remembered<'c>(&'c self, call: &'c ToolCall) -> &'c str {
        if reading::field(&call.text, "status") != Some("unchanged") {
            return &call.text;
        }
        self.session
            .calls()
            .iter()
            .rev()
            .find(|c| {
                c.name == call.name
                    && c.args == call.args
                    && reading::field(&c.text, "status") != Some("unchanged")
            })
            .map_or(&call.text, |c| c.text.as_str())
    }

    /// The outcome and the evidence gathered.
    pub fn finish(mut self) -> (QuestionOutcome, Evidence) {
        self.outcome.missing = self
            .evidence
            .missing(&self.question.facts)
            .into_iter()
            .map(String::from)
            .collect();
        self.outcome.answered = self.outcome.missing.is_empty();
        (self.outcome, self.evidence)
    }
}

fn trace_line(call: &ToolCall) -> String {
    let target = ["url", "query", "path", "paths"]
        .iter()
        .find_map(|k| call.args.get(*k))
        .map(|v| v.as_str().map_or_else(|| v.to_string(), String::from))
        .unwrap_or_default();
    let mut line = format!("{} {target}", call.name);
    if let Some(anchors) = call.args.get("anchors") {
        line.push_str(&format!(" anchors={anchors}"));
    }
    if call.is_error {
        line.push_str(" → error");
    } else if let Some(status) = reading::field(&call.text, "status") {
        line.push_str(" → ");
        line.push_str(status);
        if let Some(mode) = reading::field(&call.text, "mode") {
            line.push_str(&format!(" ({mode})"));
        }
    }
    line.push_str(&format!(", {} tok", call.tokens));
    line
}

/// What a scripted agent does for each question, on which server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// A strategy over mark-mcp.
    Mark(Strategy),
    /// The plain agent with `read: N` given (`None`: the tool's default).
    Plain {
        /// Sections the lookup reads.
        read: Option<u64>,
        /// The lookup's passage budget.
        budget: Option<u64>,
    },
    /// server-filesystem: `search_files **/*.md`, then `read_text_file` of
    /// the files whose path shares words with the question (best first,
    /// shallow first; `/index.md` when none does), and of their best links,
    /// one step — strategy 1's walk with the peer's own tools.
    FilesystemRead {
        /// The folder the server was given (no trailing `/`).
        root: String,
    },
    /// mcpvault: `search_notes` (all question words), then per hit (top 3)
    /// `get_note_outline` and `read_note_lines` of up to 2 sections whose
    /// headings share the most words with the question (the note's first
    /// section when none does).
    VaultSections,
}

/// Runs one plan on one question, starting from the evidence the session's
/// earlier results hold (none in a fresh session): an agent that already
/// holds the facts makes no call. Returns the outcome and the session's
/// evidence afterwards.
pub async fn ask(
    session: &mut McpSession,
    plan: &Plan,
    question: &Question,
    session_evidence: Evidence,
) -> Result<(QuestionOutcome, Evidence), BenchError> {
    let mut asker = Asker::with_evidence(session, question, session_evidence);
    if !asker.done() {
        match plan {
            Plan::Mark(Strategy::FullChain) => {
                full_chain(&mut asker, &DocReader::MarkFetchFull).await?
            }
            Plan::Mark(Strategy::PlainAgent) => plain_agent(&mut asker, None, None).await?,
            Plan::Plain { read, budget } => plain_agent(&mut asker, *read, *budget).await?,
            Plan::Mark(Strategy::LookupSection) => lookup_section(&mut asker).await?,
            Plan::Mark(Strategy::ExploreSection | Strategy::WarmSession) => {
                explore_section(&mut asker).await?
            }
            Plan::Mark(Strategy::ExploreFloor) => explore_floor(&mut asker).await?,
            Plan::FilesystemRead { root } => filesystem_read(&mut asker, root).await?,
            Plan::VaultSections => vault_sections(&mut asker).await?,
        }
    }
    Ok(asker.finish())
}

/// Replays `calls` (a first pass's tool calls for this question, verbatim)
/// in the same session: the question counts as answered when the facts are
/// in any text the session returned, since the agent holds it in context
/// (that is what a dedup answer like `unchanged since v1` relies on).
pub async fn replay(
    session: &mut McpSession,
    question: &Question,
    session_evidence: Evidence,
    calls: &[ToolCall],
) -> Result<(QuestionOutcome, Evidence), BenchError> {
    let mut asker = Asker::with_evidence(session, question, session_evidence);
    for c in calls {
        asker.call(&c.name, c.args.clone()).await?;
    }
    Ok(asker.finish())
}

/// How a full-chain agent reads a whole document.
#[derive(Debug, Clone)]
pub enum DocReader {
    /// `mark_fetch {url, mode: "full"}`.
    MarkFetchFull,
    /// server-filesystem's `read_text_file {path: ROOT/path}`.
    FilesystemText {
        /// The folder the server was given.
        root: String,
    },
}

impl DocReader {
    fn request(&self, path: &str) -> (&'static str, Value) {
        match self {
            DocReader::MarkFetchFull => ("mark_fetch", json!({ "url": path, "mode": "full" })),
            DocReader::FilesystemText { root } => {
                ("read_text_file", json!({ "path": format!("{root}{path}") }))
            }
        }
    }

    /// The markdown of a successful read (mark-mcp puts an envelope first).
    fn markdown<'t>(&self, text: &'t str) -> &'t str {
        match self {
            DocReader::MarkFetchFull => reading::body(text),
            DocReader::FilesystemText { .. } => text,
        }
    }
}

/// One `mark_lookup` (body match, and `read: 0`, when `body`) and its hits, read from the
/// agent's context when the answer is `unchanged`.
async fn lookup(
    asker: &mut Asker<'_>,
    query: &str,
    body: bool,
) -> Result<Vec<LookupHit>, BenchError> {
    let mut args = json!({ "query": query, "limit": LOOKUP_LIMIT });
    if body {
        args["match"] = json!("body");
        // Body lookups are made by the section readers (2 and 3), which
        // read the hits they choose themselves.
        if asker.session.param("mark_lookup", "read").is_some() {
            args["read"] = json!(0);
        }
    }
    let call = asker.call("mark_lookup", args).await?;
    Ok(reading::lookup_hits(asker.remembered(&call)))
}

/// Tries the lookup ladder (see [`query_ladder`]) until one matches; the
/// hits of the first query with matches.
async fn lookup_ladder(asker: &mut Asker<'_>, body: bool) -> Result<Vec<LookupHit>, BenchError> {
    for query in query_ladder(&asker.question().question) {
        let hits = lookup(asker, &query, body).await?;
        if !hits.is_empty() || asker.done() {
            return Ok(hits);
        }
    }
    Ok(Vec::new())
}

/// Strategy 1 with mark-mcp: catalog lookup, then whole documents.
async fn full_chain(asker: &mut Asker<'_>, reader: &DocReader) -> Result<(), BenchError> {
    let hits = lookup_ladder(asker, false).await?;
    let mut candidates: Vec<String> = Vec::new();
    for h in &hits {
        if candidates.len() < SEARCH_CANDIDATES && !candidates.iter().any(|c| c == h.path()) {
            candidates.push(h.path().to_string());
        }
    }
    read_whole_documents(asker, reader, candidates).await
}

/// Reads `candidates` whole, in order, queueing each one's best links (one
/// step), until the facts appear or [`MAX_FULL_READS`] documents are read.
pub async fn read_whole_documents(
    asker: &mut Asker<'_>,
    reader: &DocReader,
    candidates: Vec<String>,
) -> Result<(), BenchError> {
    if asker.done() {
        return Ok(());
    }
    let q_terms = terms(&asker.question().question);
    let candidate_set: HashSet<String> = candidates.iter().cloned().collect();
    let mut queued: HashSet<String> = candidate_set.clone();
    let mut queue: VecDeque<String> = candidates.into();
    let mut reads = 0;
    while let Some(path) = queue.pop_front() {
        if reads == MAX_FULL_READS {
            break;
        }
        let (tool, args) = reader.request(&path);
        let call = asker.call(tool, args).await?;
        reads += 1;
        if asker.done() {
            break;
        }
        if call.is_error || !candidate_set.contains(&path) {
            continue;
        }
        for link in best_links(&q_terms, &path, reader.markdown(&call.text)) {
            if queued.insert(link.clone()) {
                queue.push_back(link);
            }
        }
    }
    Ok(())
}

/// The internal markdown documents `markdown` (at `path`) links to, ranked
/// by overlap of link text and target with the question, at most
/// [`LINKS_PER_DOCUMENT`].
fn best_links(q_terms: &[String], path: &str, markdown: &str) -> Vec<String> {
    let doc = Document::parse(markdown);
    let mut links: Vec<(String, String)> = Vec::new();
    for link in doc.links() {
        if link.is_image {
            continue;
        }
        if let Target::Internal { path: target, .. } = link.resolve(path)
            && target.ends_with(".md")
            && target != path
            && !links.iter().any(|(t, _)| *t == target)
        {
            let text = format!("{} {target}", link.text);
            links.push((target, text));
        }
    }
    rank_by_overlap(q_terms, links, |(_, text)| text.clone())
        .into_iter()
        .take(LINKS_PER_DOCUMENT)
        .map(|(t, _)| t)
        .collect()
}

/// [`Strategy::PlainAgent`]: one body lookup with the question's words
/// (stop words dropped, nothing else), then the next hits' sections (see
/// [`search_and_read`]), until the facts are in or [`PLAIN_CALLS`] calls are
/// spent. No ladder, no hub.
async fn plain_agent(
    asker: &mut Asker<'_>,
    read: Option<u64>,
    budget: Option<u64>,
) -> Result<(), BenchError> {
    search_and_read(asker, read, budget, PLAIN_CALLS - 1).await
}

/// One body lookup ([`PLAIN_LIMIT`] rows) with the question's words,
/// reading `read` hits in the same call (the tool's default when `None`;
/// none when the tool has no `read`), then `mark_fetch` of at most
/// `fetches` next hits in rank order, skipping the rows whose text the
/// agent has (`read below`, `read earlier`), until the facts are in.
async fn search_and_read(
    asker: &mut Asker<'_>,
    read: Option<u64>,
    budget: Option<u64>,
    fetches: usize,
) -> Result<(), BenchError> {
    let mut args = json!({
        "query": terms(&asker.question().question).join(" "),
        "match": "body",
        "limit": PLAIN_LIMIT,
    });
    if let (Some(n), Some(_)) = (read, asker.session.param("mark_lookup", "read")) {
        args["read"] = json!(n);
    }
    if let (Some(n), Some(_)) = (budget, asker.session.param("mark_lookup", "budget")) {
        args["budget"] = json!(n);
    }
    let call = asker.call("mark_lookup", args).await?;
    let hits = reading::lookup_hits(asker.remembered(&call));
    for hit in hits.iter().filter(|h| !h.held).take(fetches) {
        if asker.done() {
            break;
        }
        asker.call("mark_fetch", json!({ "url": hit.url })).await?;
    }
    Ok(())
}

/// Strategy 2: body lookup, then the hits' sections in rank order.
async fn lookup_section(asker: &mut Asker<'_>) -> Result<(), BenchError> {
    let hits = lookup_ladder(asker, true).await?;
    for hit in hits.iter().filter(|h| !h.held).take(MAX_SECTION_FETCHES) {
        if asker.done() {
            break;
        }
        asker.call("mark_fetch", json!({ "url": hit.url })).await?;
    }
    Ok(())
}

/// What a card offers to read next: its outline's headings (as
/// `hub#anchor`, or `hub#name` from a run of names) and its outbound
/// links, with their text.
fn card_offers(hub: &str, card: &str) -> Vec<CardLink> {
    let outline = reading::card_section(card, "Outline");
    let mut offers: Vec<CardLink> = reading::outline_items(outline)
        .into_iter()
        .map(|item| CardLink {
            url: format!("{hub}#{}", item.anchor),
            text: item.text,
        })
        .collect();
    offers.extend(
        reading::outline_names(outline)
            .into_iter()
            .map(|name| CardLink {
                url: format!("{hub}#{name}"),
                text: name,
            }),
    );
    offers.extend(reading::card_links(reading::card_section(
        card,
        "Outbound links",
    )));
    offers
}

/// What an agent reads of an offer: its text and where it points (a link
/// named `ADR 0004` says what it is about in its target's file name).
fn offer_words(offer: &CardLink) -> String {
    format!("{} {}", offer.text, offer.url)
}

/// Whether a question word is a number (a date's parts, a phase's number).
fn is_number(term: &str) -> bool {
    term.chars().all(|c| c.is_ascii_digit())
}

/// Most card offers a section agent fetches before it searches instead.
pub const MAX_OFFER_FETCHES: usize = 2;

/// Strategy 3: explore the hub; choose among the card's headings and links
/// by overlap of their text and target with the question's words (the words
/// of the hub's own title left out: everything on its card is about that).
/// An offer is good when it shares at least two words (every word, for a
/// one-word question) or names one of the question's naming words (see
/// [`key_terms`]; numbers left out: a date's year names nothing). While no
/// offer is good and the card cut its outline short, page the outline
/// (`mark_explore` with the card's cursor, at most [`MAX_CARD_PAGES`]
/// pages); links are not paged: a card whose first links show nothing
/// relevant is the wrong place, and a search finds more for a call. Then
/// fetch the offers, good ones first, at most
/// [`MAX_OFFER_FETCHES`]; a target that comes back as an outline is
/// narrowed to its best heading, and a link's `#anchor` that did not answer
/// is followed by its whole document (an outline, when large). When that
/// did not answer, or the root card offered nothing: the plain agent's
/// search ([`search_and_read`]), reading at most [`MAX_OFFER_FETCHES`] more
/// hits.
async fn explore_section(asker: &mut Asker<'_>) -> Result<(), BenchError> {
    let start = find_hub(asker).await?;
    if asker.done() {
        return Ok(());
    }
    let Some(start) = start else {
        return search_and_read(asker, None, None, MAX_OFFER_FETCHES).await;
    };
    let hub = document(&start).to_string();
    if start.contains('#') {
        // The root card links a section: read it before its document's card.
        SectionReader::new(terms(&asker.question().question))
            .read(asker, &start)
            .await?;
        if asker.done() {
            return Ok(());
        }
    }
    let call = asker.call("mark_explore", json!({ "url": hub })).await?;
    if asker.done() || call.is_error {
        return Ok(());
    }
    let card = asker.remembered(&call).to_string();
    let title_terms = terms(reading::field(&card, "title").unwrap_or(""));
    let question = &asker.question().question;
    let q_terms: Vec<String> = terms(question)
        .into_iter()
        .filter(|t| !title_terms.contains(t))
        .collect();
    let names: Vec<String> = key_terms(question)
        .into_iter()
        .filter(|t| !title_terms.contains(t) && !is_number(t))
        .collect();
    let strong = 2.min(q_terms.len()).max(1);
    let good = |offer: &CardLink| {
        let words = offer_words(offer);
        overlap(&q_terms, &words) >= strong || overlap(&names, &words) > 0
    };
    let mut offers = card_offers(&hub, &card);
    let mut cursor =
        reading::more_cursor(reading::card_section(&card, "Outline")).map(String::from);
    let mut pages = 0;
    while let Some(c) = cursor.take() {
        if offers.iter().any(good) || pages == MAX_CARD_PAGES {
            break;
        }
        let call = asker
            .call("mark_explore", json!({ "url": hub, "cursor": c }))
            .await?;
        pages += 1;
        if asker.done() {
            return Ok(());
        }
        let page = asker.remembered(&call).to_string();
        for offer in card_offers(&hub, &page) {
            if !offers.contains(&offer) {
                offers.push(offer);
            }
        }
        cursor = reading::more_cursor(reading::card_section(&page, "Outline")).map(String::from);
    }
    let (strong_offers, weak_offers): (Vec<CardLink>, Vec<CardLink>) =
        offers.into_iter().partition(good);
    let mut ranked = rank_by_overlap(&q_terms, strong_offers, offer_words);
    // A weak offer must share a word, not just a number (every journal link has the year).
    let words: Vec<String> = q_terms.iter().filter(|t| !is_number(t)).cloned().collect();
    ranked.extend(rank_by_overlap(&words, weak_offers, offer_words));
    let mut reader = SectionReader::new(q_terms);
    for offer in ranked {
        if asker.done() || reader.fetches >= MAX_OFFER_FETCHES {
            break;
        }
        reader.read(asker, &offer.url).await?;
        // A link's anchor is where its author pointed, not always where the
        // answer is: when that section missed, read its document (whole
        // when small, else narrowed from its outline).
        if let Some((doc, _)) = offer.url.split_once('#')
            && doc != hub
            && !asker.done()
            && reader.fetches < MAX_OFFER_FETCHES
        {
            reader.read(asker, doc).await?;
        }
    }
    if asker.done() {
        return Ok(());
    }
    search_and_read(asker, None, None, MAX_OFFER_FETCHES).await
}

/// The runs of digits in `text` (`phase 7` → `7`).
fn numbers(text: &str) -> Vec<&str> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter(|n| !n.is_empty())
        .collect()
}

/// A url without its `#anchor`.
fn document(url: &str) -> &str {
    url.split('#').next().unwrap_or(url)
}

/// Where strategy 3 explores: it starts from [`ROOT_DOCUMENT`]'s card, as a
/// session that began with it would, and takes its best good offer: one
/// sharing two of the question's words (its word, for a one-word question;
/// a link to a section keeps its `#anchor`). A naming word alone does not
/// make a root offer good, as it does a hub card's: on the root card it is
/// mostly the project's name, one facet of a longer question, and the
/// search with all the words lands nearer. The card's further pages of
/// links are not read: a search costs about what a page does and reads its
/// best hit too. `None` when the card answered or offered nothing good.
async fn find_hub(asker: &mut Asker<'_>) -> Result<Option<String>, BenchError> {
    let call = asker
        .call("mark_explore", json!({ "url": ROOT_DOCUMENT }))
        .await?;
    if asker.done() {
        return Ok(None);
    }
    let question = &asker.question().question;
    let q_terms = terms(question);
    let strong = 2.min(q_terms.len()).max(1);
    let asked = numbers(question);
    let is_good = |o: &CardLink| {
        // `Phase 8` is not the answer to a question about phase 7.
        let other_number = !asked.is_empty() && numbers(&o.text).iter().any(|n| !asked.contains(n));
        !other_number && overlap(&q_terms, &offer_words(o)) >= strong
    };
    let card = asker.remembered(&call).to_string();
    let good: Vec<CardLink> = card_offers(ROOT_DOCUMENT, &card)
        .into_iter()
        .filter(is_good)
        .collect();
    Ok(rank_by_overlap(&q_terms, good, offer_words)
        .first()
        .map(|best| best.url.clone()))
}

/// [`Strategy::ExploreFloor`]: the hub's card, then the answer's section.
async fn explore_floor(asker: &mut Asker<'_>) -> Result<(), BenchError> {
    let question = asker.question();
    asker
        .call("mark_explore", json!({ "url": question.hub }))
        .await?;
    if !asker.done() {
        asker
            .call("mark_fetch", json!({ "url": question.section }))
            .await?;
    }
    Ok(())
}

/// Fetches sections for a section agent, each url once; a target that
/// comes back as an outline is narrowed to the heading that shares most
/// words with the question.
struct SectionReader {
    q_terms: Vec<String>,
    fetched: HashSet<String>,
    fetches: usize,
}

impl SectionReader {
    fn new(q_terms: Vec<String>) -> SectionReader {
        SectionReader {
            q_terms,
            fetched: HashSet::new(),
            fetches: 0,
        }
    }

    async fn read(&mut self, asker: &mut Asker<'_>, url: &str) -> Result<(), BenchError> {
        if !self.fetched.insert(url.to_string()) {
            return Ok(());
        }
        let got = asker.call("mark_fetch", json!({ "url": url })).await?;
        self.fetches += 1;
        if asker.done() || reading::field(&got.text, "mode") != Some("outline") {
            return Ok(());
        }
        let path = url.split('#').next().unwrap_or(url);
        let items = reading::outline_items(reading::body(&got.text));
        if let Some(best) = rank_by_overlap(&self.q_terms, items, |i| i.text.clone())
            .into_iter()
            .next()
        {
            let narrowed = format!("{path}#{}", best.anchor);
            if self.fetched.insert(narrowed.clone()) {
                asker.call("mark_fetch", json!({ "url": narrowed })).await?;
                self.fetches += 1;
            }
        }
        Ok(())
    }
}

/// Strategy 1's walk over server-filesystem.
async fn filesystem_read(asker: &mut Asker<'_>, root: &str) -> Result<(), BenchError> {
    let listing = asker
        .call(
            "search_files",
            json!({ "path": root, "pattern": "**/*.md" }),
        )
        .await?;
    let q_terms = terms(&asker.question().question);
    let mut paths: Vec<String> = listing
        .text
        .lines()
        .filter_map(|l| l.trim().strip_prefix(root))
        .filter(|p| p.starts_with('/') && p.ends_with(".md"))
        .map(String::from)
        .collect();
    // Shallow first among equals: an agent opens a folder's top file first.
    paths.sort_by_key(|p| p.matches('/').count());
    let mut candidates: Vec<String> = rank_by_overlap(&q_terms, paths, Clone::clone)
        .into_iter()
        .take(SEARCH_CANDIDATES)
        .collect();
    if candidates.is_empty() {
        candidates.push("/index.md".into());
    }
    let reader = DocReader::FilesystemText {
        root: root.to_string(),
    };
    read_whole_documents(asker, &reader, candidates).await
}

/// Most notes a vault agent opens.
const VAULT_NOTES: usize = 3;
/// Most sections a vault agent reads per note.
const VAULT_SECTIONS_PER_NOTE: usize = 2;

/// One heading of mcpvault's `get_note_outline`.
#[derive(Debug, Clone, serde::Deserialize)]
struct VaultHeading {
    level: u32,
    text: String,
    line: u64,
}

/// One hit of mcpvault's `search_notes` (its `ln` counts lines after the
/// frontmatter, unlike the outline's `line`, so it is not used).
#[derive(Debug, Clone, serde::Deserialize)]
struct VaultHit {
    p: String,
}

/// The line range of the section a heading opens: to the line before the
/// next heading of the same or a higher level (the server clamps the end of
/// a last section to the end of the note).
fn vault_section_range(headings: &[VaultHeading], index: usize) -> (u64, u64) {
    let h = &headings[index];
    let end = headings[index + 1..]
        .iter()
        .find(|n| n.level <= h.level)
        .map_or(u64::from(u32::MAX), |n| n.line.saturating_sub(1));
    (h.line, end)
}

/// mcpvault's best honest use: search, outline, line ranges.
async fn vault_sections(asker: &mut Asker<'_>) -> Result<(), BenchError> {
    let q_terms = terms(&asker.question().question);
    let search = asker
        .call(
            "search_notes",
            json!({ "query": q_terms.join(" "), "limit": 5 }),
        )
        .await?;
    let hits: Vec<VaultHit> = serde_json::from_str(&search.text).unwrap_or_default();
    for hit in hits.iter().take(VAULT_NOTES) {
        if asker.done() {
            return Ok(());
        }
        let outline = asker
            .call("get_note_outline", json!({ "path": hit.p }))
            .await?;
        let headings: Vec<VaultHeading> = serde_json::from_str(&outline.text).unwrap_or_default();
        let mut chosen: Vec<usize> =
            rank_by_overlap(&q_terms, (0..headings.len()).collect(), |&i| {
                headings[i].text.clone()
            });
        // No heading shares a word: the note's first section (its top).
        if chosen.is_empty() && !headings.is_empty() {
            chosen.push(0);
        }
        let mut read: Vec<usize> = Vec::new();
        for i in chosen {
            if asker.done() || read.len() == VAULT_SECTIONS_PER_NOTE {
                break;
            }
            if read.contains(&i) {
                continue;
            }
            read.push(i);
            let (start, end) = vault_section_range(&headings, i);
            asker
                .call(
                    "read_note_lines",
                    json!({ "path": hit.p, "startLine": start, "endLine": end }),
                )
                .await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vault_sections_end_before_the_next_peer() {
        let h = |level, line| VaultHeading {
            level,
            text: String::new(),
            line,
        };
        let headings = vec![h(1, 5), h(2, 9), h(3, 12), h(2, 20)];
        assert_eq!(vault_section_range(&headings, 1), (9, 19));
        assert_eq!(vault_section_range(&headings, 2), (12, 19));
        assert_eq!(vault_section_range(&headings, 3).0, 20);
        assert!(vault_section_range(&headings, 0).1 > 1000);
    }

    #[test]
    fn best_links_rank_by_overlap_and_resolve() {
        let md = "See [the dedup key](adr/0003-dedup-key.md), [Rust](adr/0001-rust.md#status), [img](![x](a.png)) and [home](../../index.md) and [out](https://x.org/dedup.md).";
        let q = terms("Who decided the dedup key for Tidewatch readings?");
        let links = best_links(&q, "/projects/tidewatch/index.md", md);
        assert_eq!(
            links,
            vec![
                "/projects/tidewatch/adr/0003-dedup-key.md".to_string(),
                "/projects/tidewatch/adr/0001-rust.md".to_string()
            ]
        );
    }
}
