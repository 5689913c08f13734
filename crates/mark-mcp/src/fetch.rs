//! `mark_fetch`: a document, an outline, or sections, sized to fit the
//! agent's budget and deduplicated against what this session delivered.
//! The result is made by a [`ResultBuilder`]: each section, outline and
//! line is charged before it goes in, and only what goes in is recorded
//! as delivered.

use crate::bound::result_bound;
use crate::crawl::Unwatched;
use crate::dedup::{
    AnswerKey, Decision, Delivery, Identity, Page, Slice, Wanted, document_answer_digest,
};
use crate::envelope::{MAX_FIELD_BYTES, ToolText, one_line, size_line};
use crate::outbox::SessionDelivery;
use crate::paging::{Cursor, cursor_argument, page_ranges};
use crate::result::{Built, Held, ResultBuilder, escape_framing, field_bytes};
use crate::session::{CachedDoc, Freshness, Loaded, Session, short};
use markdown_slice::{
    Block, Document, Heading, OutlineOptions, Part as Named, PartMiss, SectionHashes, diff_sections,
};
use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

/// How much of a document to deliver.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum FetchMode {
    /// Whole when small, outline when large.
    #[default]
    Auto,
    /// The body, paged when very large.
    Full,
    /// Headings only.
    Outline,
}

/// Parameters of `mark_fetch` (and of the `fetch` verb).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, clap::Args)]
pub struct FetchParams {
    /// /path, mark://host/path or `[[Note]]`; #anchor or #^block for one part.
    pub url: String,
    /// auto (default): whole if small, else outline; full: the body, paged; outline.
    #[arg(long, value_enum)]
    #[serde(default)]
    pub mode: Option<FetchMode>,
    /// Several sections at once (anchors or heading text).
    #[arg(long, value_delimiter = ',')]
    #[serde(default)]
    pub anchors: Vec<String>,
    /// Re-deliver even if unchanged; whole body instead of outline.
    #[arg(long)]
    #[serde(default)]
    pub force: bool,
    /// Next-page cursor from an earlier result.
    #[arg(long)]
    #[serde(default)]
    pub cursor: Option<String>,
}

/// Bounds of a section's sub-outline (the document outline keeps the
/// markdown-slice default of 60 lines / 2 KB, as does the section of a
/// document's only top-level heading, which is the document).
const SECTION_OUTLINE: OutlineOptions = OutlineOptions {
    max_lines: 120,
    max_bytes: 6 * 1024,
};

/// How a section is named in a result: `#anchor`, and when its heading's
/// text is one of `repeated` (see [`crate::session::repeated_headings`]),
/// the headings above it up to the title, so the agent knows which one it got:
/// `#status-7 (in Phase 8 — Backpressure and replay)`.
fn section_label<S: AsRef<str>>(
    doc: &Document<S>,
    h: &Heading,
    repeated: &HashSet<String>,
) -> String {
    let label = format!("#{}", doc.fragment_of(h).unwrap_or_default());
    if !repeated.contains(h.text.as_str()) {
        return label;
    }
    let headings = doc.headings();
    let mut above = Vec::new();
    let mut parent = h.parent.and_then(|i| headings.get(i));
    while let Some(p) = parent {
        if p.parent.is_none() && doc.title() == Some(p.text.as_str()) {
            break;
        }
        above.push(p.text.as_str());
        parent = p.parent.and_then(|i| headings.get(i));
    }
    if above.is_empty() {
        return label;
    }
    above.reverse();
    format!("{label} (in {})", above.join(" › "))
}

/// Fetches `params.url` for the session at time `now`.
pub async fn fetch(session: &Session, params: FetchParams, now: Instant) -> ToolText {
    let bound = result_bound(session.settings().page_bytes);
    fetch_built(session, params, now, bound).await.send(session)
}

/// [`fetch`] made within `bound` bytes in all (its text within
/// `--page-bytes` too) and not sent yet: `mark_lookup`'s `read` puts its
/// hits' sections in what the rows leave of its own result. A document too
/// big for what is left comes as its outline; a section, as for several
/// anchors, is only named.
pub async fn fetch_built(
    session: &Session,
    params: FetchParams,
    now: Instant,
    bound: usize,
) -> Built {
    match fetch_within(session, params, now, bound).await {
        Ok(built) => built,
        Err(t) => Built::delivering_nothing(t, bound),
    }
}

/// [`fetch_built`], or the answer that is not the document (an error, the
/// source's status).
async fn fetch_within(
    session: &Session,
    params: FetchParams,
    now: Instant,
    bound: usize,
) -> Result<Built, ToolText> {
    let target = session
        .resolve_argument(&params.url, now, &Unwatched)
        .await
        .map_err(ToolText::error)?;
    let mut anchors: Vec<String> = Vec::new();
    for a in target.fragment.into_iter().chain(params.anchors) {
        let a = a.trim().trim_start_matches('#').to_string();
        if !a.is_empty() && !anchors.contains(&a) {
            anchors.push(a);
        }
    }
    let cursor = cursor_argument(params.cursor.as_deref(), Cursor::parse).map_err(|c| {
        ToolText::error(format!(
            "cursor `{c}` is not one mark-mcp gave; fetch again without a cursor"
        ))
    })?;
    if cursor.is_some() && anchors.len() > 1 {
        return Err(ToolText::error(
            "a cursor pages one section at a time; fetch url#anchor with the cursor",
        ));
    }
    // `force` asks the source again (conditionally), even within --fresh-for.
    let freshness = if params.force {
        Freshness::Revalidate
    } else {
        Freshness::CacheOk
    };
    let cached = match session.load_with(&target.path, now, freshness).await {
        Loaded::Doc(d) => d,
        Loaded::Answer(t) => return Err(t),
    };
    if let Some(c) = &cursor
        && !c.matches(cached.identity.etag.as_deref())
    {
        return Err(ToolText::error(if c.sealed() {
            format!(
                "{} changed since that cursor was given (now {}); fetch it again without a cursor",
                target.path,
                cached.identity.label()
            )
        } else {
            format!(
                "cursor `{}` is not one mark-mcp gave; fetch again without a cursor",
                c.encode()
            )
        }));
    }
    // The header and the lines that close the result are held first: the
    // sections get what is left, `--page-bytes` at most.
    let mut builder = ResultBuilder::new("ok", bound);
    let header = builder.hold(header_bytes(&cached));
    let closing = builder.hold(NOT_INCLUDED_BYTES);
    let budget = builder
        .room()
        .saturating_sub(TEXT_FRAME_BYTES)
        .min(session.settings().page_bytes);
    let mut view = View {
        session,
        path: &target.path,
        cached: &cached,
        mode: params.mode.unwrap_or_default(),
        force: params.force,
        now,
        budget,
        left: budget,
    };
    let parts = if anchors.is_empty() {
        vec![view.whole(cursor.as_ref())?]
    } else {
        view.sections(&anchors, cursor.as_ref())?
    };
    Ok(view.compose(parts, builder, [header, closing]))
}

/// The most bytes of header lines a fetch result has: version, title, mode,
/// section, size, page and note.
fn header_bytes(cached: &CachedDoc) -> usize {
    let value = |v: Option<&str>| v.map_or(0, |v| v.len().min(MAX_FIELD_BYTES));
    field_bytes("version", value(cached.identity.version.as_deref()))
        + field_bytes("title", value(cached.doc.title()))
        + field_bytes("mode", "unchanged".len())
        + field_bytes("section", MAX_FIELD_BYTES)
        + field_bytes("size", 48)
        + field_bytes("page", 24)
        + field_bytes("note", MAX_FIELD_BYTES)
}

/// The most bytes of the line naming the sections not included.
const NOT_INCLUDED_BYTES: usize = NAMES_BYTES + 160;
/// The blank line before a text and its closing newline.
const TEXT_FRAME_BYTES: usize = 2;

/// One delivered piece of a fetch result.
#[derive(Debug)]
struct Part {
    /// `#anchor`, or empty for the whole document.
    label: String,
    kind: PartKind,
    /// The text of this piece as the agent sees it.
    text: String,
    /// `size:` of the thing described (whole document or section).
    size: String,
    /// `1 of 4` when the text is one page of several.
    page: Option<String>,
    /// The earlier delivery when the document changed since (its section
    /// hashes, unless the delivery log dropped them to keep its bound).
    changed_from: Option<ChangedFrom>,
    /// Whether the agent has this part's whole text once the result is
    /// sent: sent whole now, or held unchanged (so a part inside it is too).
    whole_text: bool,
    /// What sending this part records (only if it goes into the result).
    deliveries: Vec<SessionDelivery>,
}

impl Part {
    /// A section left out for the result's bound: only named.
    fn skipped(label: String, text: &str) -> Part {
        Part {
            label,
            kind: PartKind::Skipped,
            text: String::new(),
            size: size_line(text),
            page: None,
            changed_from: None,
            whole_text: false,
            deliveries: Vec::new(),
        }
    }

    /// The part as it stands among several: `#a: unchanged …`, `#a
    /// (outline):` and the outline, or the text.
    fn piece(&self) -> String {
        match self.kind {
            PartKind::Unchanged => format!("{}: {}", self.label, self.text),
            PartKind::Outline => format!("{} (outline):\n{}", self.label, self.text),
            _ => self.text.trim_end().to_string(),
        }
    }

    /// What the part takes of the text among several: its piece as the
    /// result builder will add it (escaped) and the blank line before it,
    /// so a planned part is never refused when it is added.
    fn cost(&self) -> usize {
        match self.kind {
            PartKind::Skipped => 0,
            _ => escape_framing(&self.piece()).len() + 2,
        }
    }
}

/// Below this much of the text bound left, no more sections are read.
const MIN_PART_BYTES: usize = 200;
/// The most bytes of section names in the `section` line or a "not
/// included" line.
const NAMES_BYTES: usize = 400;

/// `#a, #b, #c` while it fits in `max` bytes, then `+N more` (a first
/// name longer than `max` is cut, so one is always shown).
fn names_within(names: &[&str], max: usize) -> String {
    let mut out = String::new();
    for (i, name) in names.iter().enumerate() {
        if i == 0 && name.len() > max {
            out.push_str(&one_line(name, max / 2));
            continue;
        }
        if out.len() + name.len() + 2 > max {
            out.push_str(&format!(", +{} more", names.len() - i));
            break;
        }
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(name);
    }
    out
}

/// The identity and section hashes of the last delivery of a document.
type ChangedFrom = (Identity, Option<Arc<SectionHashes>>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PartKind {
    Full,
    Section,
    Block,
    Outline,
    Unchanged,
    Skipped,
}

impl PartKind {
    fn mode(self) -> &'static str {
        match self {
            PartKind::Full => "full",
            PartKind::Section => "section",
            PartKind::Block => "block",
            PartKind::Outline => "outline",
            PartKind::Unchanged => "unchanged",
            PartKind::Skipped => "skipped",
        }
    }
}

struct View<'a> {
    session: &'a Session,
    path: &'a str,
    cached: &'a CachedDoc,
    mode: FetchMode,
    force: bool,
    now: Instant,
    /// The most text bytes this result may carry.
    budget: usize,
    /// What is left of `budget` for the parts not planned yet.
    left: usize,
}

impl<'a> View<'a> {
    fn threshold(&self) -> usize {
        self.session.settings().outline_threshold
    }

    /// Whether a text of `len` bytes comes whole rather than as an outline.
    fn comes_whole(&self, len: usize, cursor: Option<&Cursor>) -> bool {
        match self.mode {
            FetchMode::Outline => false,
            FetchMode::Full => true,
            FetchMode::Auto => self.force || cursor.is_some() || len < self.threshold(),
        }
    }

    fn whole(&self, cursor: Option<&Cursor>) -> Result<Part, ToolText> {
        let body = self.cached.doc.source();
        if !self.comes_whole(body.len(), cursor) {
            return Ok(self.outline(None));
        }
        match self.deliver(
            Slice::Body,
            &[],
            String::new(),
            body,
            0,
            cursor,
            self.budget,
        )? {
            part if part.kind == PartKind::Skipped => Ok(self.outline(None)),
            part => Ok(part),
        }
    }

    fn sections(
        &mut self,
        anchors: &[String],
        cursor: Option<&Cursor>,
    ) -> Result<Vec<Part>, ToolText> {
        let cached: &'a CachedDoc = self.cached;
        let doc = &cached.doc;
        let named = anchors
            .iter()
            .map(|a| self.find(a))
            .collect::<Result<Vec<_>, _>>()?;
        // Each text comes once in this call: the same section named twice
        // (by anchor and by heading text) once, and one inside another
        // named section (before or after it) only as a line pointing there,
        // once that section is known to come whole. So the parts not inside
        // another named one are planned first, in order, then those inside.
        let mut parts: Vec<Option<Part>> = named.iter().map(|_| None).collect();
        let mut inside = Vec::new();
        for (i, n) in named.iter().copied().enumerate() {
            if named[..i].iter().any(|e| e.range() == n.range()) {
                continue;
            }
            let enclosing = self.enclosing_of(n);
            // The outermost named part holding this one.
            let outer = named
                .iter()
                .enumerate()
                .filter(|(_, e)| enclosing.contains(&part_slice(doc, **e)))
                .max_by_key(|(_, e)| e.range().len())
                .map(|(o, _)| o);
            match outer {
                Some(o) => inside.push((i, o)),
                None => parts[i] = Some(self.plan(n, &enclosing, cursor)?),
            }
        }
        for (i, o) in inside {
            let n = named[i];
            let held_whole = parts[o].as_ref().is_some_and(|p| p.whole_text);
            let part = match (held_whole, part_slice(doc, named[o])) {
                (true, Slice::Section(outer)) => {
                    let (text, label) = self.text_and_label(n);
                    let line = Part {
                        text: format!("inside #{outer} in this result"),
                        label,
                        kind: PartKind::Unchanged,
                        size: size_line(text),
                        page: None,
                        changed_from: None,
                        whole_text: true,
                        deliveries: Vec::new(),
                    };
                    if line.cost() <= self.left {
                        self.left -= line.cost();
                        line
                    } else {
                        Part::skipped(line.label, text)
                    }
                }
                _ => self.plan(n, &self.enclosing_of(n), cursor)?,
            };
            parts[i] = Some(part);
        }
        Ok(parts.into_iter().flatten().collect())
    }

    /// The text of part `n` and how it is named.
    fn text_and_label(&self, n: Named<'a>) -> (&'a str, String) {
        let cached: &'a CachedDoc = self.cached;
        let doc = &cached.doc;
        match n {
            Named::Section(h) => (
                doc.section_text(h),
                section_label(doc, h, &self.cached.repeated_headings),
            ),
            Named::Block(b) => (doc.block_text(b), format!("#^{}", b.id)),
        }
    }

    /// The slices that hold part `n`'s text, nearest first.
    fn enclosing_of(&self, n: Named<'_>) -> Vec<Slice> {
        match n {
            Named::Section(h) => self.enclosing(h),
            Named::Block(b) => self.enclosing_block(b),
        }
    }

    /// Part `n` as it comes in what is left of the text bound (charged to
    /// it): its text, its outline, an `unchanged` line, or only its name
    /// when it does not fit.
    fn plan(
        &mut self,
        n: Named<'a>,
        enclosing: &[Slice],
        cursor: Option<&Cursor>,
    ) -> Result<Part, ToolText> {
        let (text, label) = self.text_and_label(n);
        let part = match n {
            _ if self.left < MIN_PART_BYTES => Part::skipped(label, text),
            // A block is delivered whole (paged when very long): it has no outline.
            Named::Section(h) if !self.comes_whole(text.len(), cursor) => self.outline(Some(h)),
            _ => self.deliver(
                part_slice(&self.cached.doc, n),
                enclosing,
                label,
                text,
                n.range().start,
                cursor,
                self.left,
            )?,
        };
        if part.cost() > self.left {
            return Ok(Part::skipped(part.label, text));
        }
        self.left -= part.cost();
        Ok(part)
    }

    /// The section or block `wanted` names (`^id` is a block), or the
    /// error naming the nearest ones.
    fn find(&self, wanted: &str) -> Result<Named<'a>, ToolText> {
        let cached: &'a CachedDoc = self.cached;
        cached
            .doc
            .find_part(wanted)
            .map_err(|miss| ToolText::error(miss_message(self.path, wanted, &miss)))
    }

    /// The slices that hold block `b`'s text, nearest first: the sections
    /// around it, then the whole body.
    fn enclosing_block(&self, b: &Block) -> Vec<Slice> {
        let doc = &self.cached.doc;
        match doc.section_at(b.range.start) {
            Some(h) => {
                let own = h.anchor.is_some().then(|| anchor_slice(doc, h));
                own.into_iter().chain(self.enclosing(h)).collect()
            }
            None => vec![Slice::Body],
        }
    }

    /// The slices that hold `h`'s text, nearest first: its enclosing
    /// sections, then the whole body.
    fn enclosing(&self, h: &Heading) -> Vec<Slice> {
        let headings = self.cached.doc.headings();
        let mut out = Vec::new();
        let mut parent = h.parent.and_then(|i| headings.get(i));
        while let Some(p) = parent {
            if p.anchor.is_some() {
                out.push(anchor_slice(&self.cached.doc, p));
            }
            parent = p.parent.and_then(|i| headings.get(i));
        }
        out.push(Slice::Body);
        out
    }

    /// An outline of the document (or of one section), with the opening
    /// paragraph and how to get the text. The same outline of the same
    /// version again in the session is one `unchanged` line, as a card is
    /// (it is never a delivery of the text); a change since the last
    /// delivery is reported and then counts as seen.
    fn outline(&self, heading: Option<&Heading>) -> Part {
        let doc = &self.cached.doc;
        // A section outline is asked for after the document outline showed
        // only `+N subsections` under it: give its children more room (still
        // about 1.5K tokens at most) so drilling down always shows a level.
        // The section of the only top-level heading (a title heading) is
        // the document: it gets the document outline's bounds.
        let whole = |h: &Heading| {
            h.parent.is_none() && doc.headings().iter().filter(|x| x.parent.is_none()).count() == 1
        };
        let opts = match heading {
            Some(h) if !whole(h) => SECTION_OUTLINE,
            _ => OutlineOptions::default(),
        };
        let (what, text, label) = match heading {
            None => ("document", doc.source(), String::new()),
            Some(h) => (
                "section",
                doc.section_text(h),
                section_label(doc, h, &self.cached.repeated_headings),
            ),
        };
        let mut out = match heading {
            None => doc.outline(&opts).to_string(),
            Some(h) => doc.section_outline(h, &opts).to_string(),
        }
        .trim_end()
        .lines()
        // The indent is the outline's nesting: keep it, bound the rest.
        .map(|l| {
            let text = l.trim_start();
            format!(
                "{}{}",
                &l[..l.len() - text.len()],
                one_line(text, OUTLINE_LINE_BYTES)
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
        let has_headings = !out.trim().is_empty();
        if heading.is_none() {
            let opening = doc.opening_paragraph(400);
            if !opening.is_empty() {
                out.push_str("\n\n");
                out.push_str(opening.trim());
            }
        }
        let wanted = if self.mode == FetchMode::Outline {
            format!("Outline as asked ({} bytes in all).", text.len())
        } else {
            format!(
                "This {what} is {} bytes (~{} tok), over the {}-byte outline threshold.",
                text.len(),
                markdown_slice::estimate_tokens(text),
                self.threshold()
            )
        };
        if has_headings {
            out.push_str(&format!(
                "\n\n{wanted} Fetch a section with url \"{}#anchor\" (several: anchors [..]); force=true for the whole {what}.",
                self.path
            ));
        } else {
            out.push_str(&format!(
                "\n\n{wanted} It has no headings, so no #anchor to fetch: read it in pages with mode \"full\" (each page names the cursor of the next)."
            ));
        }
        let identity = &self.cached.identity;
        let key = AnswerKey {
            tool: "fetch",
            subject: self.path.to_string(),
            part: format!("outline{label}"),
        };
        let digest = document_answer_digest(identity, &out);
        if !self.force && self.session.log().answer_sent(&key, &digest, self.now) {
            return Part {
                text: format!(
                    "outline unchanged since {} (sent earlier this session); fetch a section with url \"{}#anchor\", or force=true for the whole {what}",
                    identity.label(),
                    self.path
                ),
                label,
                kind: PartKind::Unchanged,
                size: size_line(text),
                page: None,
                changed_from: None,
                whole_text: false,
                deliveries: Vec::new(),
            };
        }
        let changed_from = self
            .session
            .log()
            .changed_from(self.path, identity, self.now);
        Part {
            label,
            kind: PartKind::Outline,
            text: out,
            size: size_line(text),
            page: None,
            changed_from,
            whole_text: false,
            deliveries: vec![
                self.sent(None),
                Delivery::Answer {
                    key,
                    digest,
                    at: self.now,
                },
            ],
        }
    }

    /// What sending `part` records (`None`: only the document's identity,
    /// for an outline).
    fn sent(&self, part: Option<(Slice, Page)>) -> SessionDelivery {
        Delivery::Doc {
            path: self.path.to_string(),
            part,
            identity: self.cached.identity.clone(),
            snapshot: Arc::clone(&self.cached.hashes),
            at: self.now,
        }
    }

    /// The pages `text` (starting at byte `offset` of the document) comes in.
    fn pages(&self, text: &str, offset: usize) -> Vec<std::ops::Range<usize>> {
        let page_bytes = self.session.settings().page_bytes;
        if text.len() <= page_bytes {
            return std::iter::once(0..text.len()).collect();
        }
        text_pages(&self.cached.doc, text, offset, page_bytes)
    }

    /// The line of a slice the agent has: whole, inside a bigger slice, or
    /// as some of its pages (then which, and the next page not sent).
    fn unchanged_line(
        &self,
        since: &Identity,
        within: Option<&Slice>,
        page: Page,
        pages_sent: &[usize],
        bytes: &std::ops::Range<usize>,
    ) -> String {
        let since = since.label();
        match within {
            _ if !pages_sent.is_empty() => {
                let sent: Vec<String> = pages_sent.iter().map(ToString::to_string).collect();
                let next = (page.number + 1..=page.total)
                    .chain(1..page.number)
                    .find(|n| !pages_sent.contains(n));
                let next = match next {
                    Some(n) => format!(
                        "; the next page not sent: cursor \"{}\"",
                        Cursor::new(n, self.cached.identity.etag.as_deref(), bytes).encode()
                    ),
                    None => String::new(),
                };
                format!(
                    "page {} of {} unchanged since {since} (pages sent earlier this session: {}){next}; force=true to re-read",
                    page.number,
                    page.total,
                    sent.join(", ")
                )
            }
            None => format!(
                "unchanged since {since} (read earlier this session); force=true to re-read"
            ),
            Some(Slice::Body) => format!(
                "unchanged since {since} (in the whole document read earlier this session); force=true to re-read"
            ),
            Some(Slice::Section(a)) => format!(
                "unchanged since {since} (in #{} read earlier this session); force=true to re-read",
                one_line(a, LABEL_BYTES)
            ),
            Some(Slice::Block(id)) => format!(
                "unchanged since {since} (in #^{} read earlier this session); force=true to re-read",
                one_line(id, LABEL_BYTES)
            ),
            // A fetch asks for no passage, and a passage holds no bigger slice.
            Some(Slice::Passage(_)) => format!(
                "unchanged since {since} (read earlier this session); force=true to re-read"
            ),
        }
    }

    /// Delivers `text` (the body or one section, starting at byte `offset`
    /// of the document), unless this session already has it unchanged
    /// (itself, or one of the slices `within` that hold it); paged when
    /// over the page size, each page a delivery of its own; skipped when
    /// over `budget` (what is left of the result bound after earlier sections).
    #[allow(clippy::too_many_arguments)]
    fn deliver(
        &self,
        slice: Slice,
        within: &[Slice],
        label: String,
        text: &str,
        offset: usize,
        cursor: Option<&Cursor>,
        budget: usize,
    ) -> Result<Part, ToolText> {
        let identity = &self.cached.identity;
        let kind = match slice {
            Slice::Body => PartKind::Full,
            Slice::Section(_) => PartKind::Section,
            Slice::Block(_) | Slice::Passage(_) => PartKind::Block,
        };
        let size = size_line(text);
        let page_bytes = self.session.settings().page_bytes;
        let pages = self.pages(text, offset);
        let total = pages.len();
        let bytes = offset..offset + text.len();
        if let Some(c) = cursor
            && (!c.pages(&bytes) || c.page > total)
        {
            return Err(ToolText::error(format!(
                "cursor `{}` is not one mark-mcp gave for {}{}; fetch it again without a cursor",
                short(&c.encode()),
                self.path,
                label
            )));
        }
        let page = Page {
            number: cursor.map_or(1, |c| c.page).min(total),
            total,
        };
        let page_line = (total > 1).then(|| format!("{} of {total}", page.number));
        let wanted = Wanted {
            slice: &slice,
            within,
            page,
        };
        let decision = self
            .session
            .log()
            .check(self.path, &wanted, identity, self.force, self.now);
        let changed_from = match decision {
            Decision::Unchanged {
                since,
                within,
                pages_sent,
            } => {
                return Ok(Part {
                    text: self.unchanged_line(&since, within.as_ref(), page, &pages_sent, &bytes),
                    label,
                    kind: PartKind::Unchanged,
                    size,
                    whole_text: pages_sent.is_empty(),
                    page: page_line.filter(|_| !pages_sent.is_empty()),
                    changed_from: None,
                    deliveries: Vec::new(),
                });
            }
            Decision::Deliver { changed_from } => changed_from,
        };
        if text.len().min(page_bytes) > budget {
            return Ok(Part::skipped(label, text));
        }
        let n = page.number;
        let mut out = text[pages[n - 1].clone()].to_string();
        if n < total {
            let next = Cursor::new(n + 1, identity.etag.as_deref(), &bytes).encode();
            out.push_str(&format!(
                "\n\n[page {n} of {total}; for the next call mark_fetch with the same url and cursor \"{next}\"]"
            ));
        } else if total > 1 {
            out.push_str(&format!("\n\n[page {n} of {total}, the last]"));
        }
        Ok(Part {
            label,
            kind,
            text: out,
            size,
            whole_text: total == 1,
            page: page_line,
            changed_from,
            deliveries: vec![self.sent(Some((slice, page)))],
        })
    }

    /// The result of `parts`, each charged to `builder` as it goes in (a
    /// part that does not fit is named as not included, and records
    /// nothing); `held` is the room held for the header and closing lines.
    fn compose(&self, parts: Vec<Part>, mut b: ResultBuilder, held: [Held; 2]) -> Built {
        let [header, closing] = held;
        let identity = &self.cached.identity;
        let note = parts
            .iter()
            .find_map(|p| p.changed_from.as_ref())
            .map(|(old, hashes)| {
                change_note(old, identity, hashes.as_deref(), &self.cached.hashes)
            });
        let all_unchanged = parts.iter().all(|p| p.kind == PartKind::Unchanged);
        let mut parts = parts;
        if let [_] = parts.as_slice() {
            let one = parts.remove(0);
            b.release(closing);
            b.release(header);
            self.head(&mut b, all_unchanged);
            b.field_opt("mode", (!all_unchanged).then(|| one.kind.mode()));
            b.field_opt(
                "section",
                Some(one.label.as_str()).filter(|l| !l.is_empty()),
            );
            b.field_opt("size", Some(one.size.as_str()).filter(|_| !all_unchanged));
            b.field_opt("page", one.page.as_deref());
            b.field_opt("note", note.as_deref());
            if let Err(_not_sent) = b.push(&one.text, one.deliveries) {
                b.push_shortened(&one.text);
            }
            return b.finish();
        }
        let mut shown = Vec::with_capacity(parts.len());
        let mut skipped = Vec::new();
        for p in parts {
            let joint = if b.text_is_empty() { "" } else { "\n\n" };
            let pushed = p.kind != PartKind::Skipped
                && b.push(&format!("{joint}{}", p.piece()), p.deliveries)
                    .is_ok();
            match pushed {
                true => shown.push(p.label),
                false => skipped.push(p.label),
            }
        }
        b.release(closing);
        if !skipped.is_empty() {
            let names: Vec<&str> = skipped.iter().map(String::as_str).collect();
            let joint = if b.text_is_empty() { "" } else { "\n\n" };
            b.push_shortened(&format!(
                "{joint}Not included, over the result's {}-byte text bound: {}; fetch them in another call.",
                self.budget,
                names_within(&names, NAMES_BYTES)
            ));
        }
        b.release(header);
        let all_unchanged = all_unchanged && skipped.is_empty();
        self.head(&mut b, all_unchanged);
        let labels: Vec<&str> = shown.iter().map(String::as_str).collect();
        let size = b.text_size();
        b.field(
            "mode",
            if all_unchanged {
                "unchanged"
            } else {
                "sections"
            },
        );
        b.field("section", &names_within(&labels, NAMES_BYTES));
        b.field_opt("size", Some(size.as_str()).filter(|_| !all_unchanged));
        b.field_opt("note", note.as_deref());
        b.finish()
    }

    /// The status, and unless every part is unchanged (then the result is
    /// one short line naming the version) the version and title.
    fn head(&self, b: &mut ResultBuilder, all_unchanged: bool) {
        b.set_status(if all_unchanged { "unchanged" } else { "ok" });
        if !all_unchanged {
            b.field_opt("version", self.cached.identity.version.as_deref());
            b.field_opt("title", self.cached.doc.title());
        }
    }
}

/// `text` (which starts at byte `offset` of `doc`) cut into pages of at
/// most `page_bytes`, at its headings by preference.
pub fn text_pages<S: AsRef<str>>(
    doc: &Document<S>,
    text: &str,
    offset: usize,
    page_bytes: usize,
) -> Vec<std::ops::Range<usize>> {
    let starts: Vec<usize> = doc
        .headings()
        .iter()
        .map(|h| h.line.start)
        .filter(|&s| s > offset && s < offset + text.len())
        .map(|s| s - offset)
        .collect();
    page_ranges(text, &starts, page_bytes)
}

/// `changed since your last read (v3 -> v5); sections changed: #a; added: #c; removed: #d`,
/// each list capped at [`NOTE_ANCHORS`] anchors and `+N more` (a document
/// whose thousands of sections all changed still gets a short note).
/// `old_hashes` is `None` when the delivery log dropped them to keep its bound.
pub(crate) fn change_note(
    old: &Identity,
    new: &Identity,
    old_hashes: Option<&SectionHashes>,
    new_hashes: &SectionHashes,
) -> String {
    let mut note = format!("changed since your last read ({})", old.step_to(new));
    let Some(old_hashes) = old_hashes else {
        note.push_str(
            "; which sections changed is not known (the session's delivery records reached their bound)",
        );
        return note;
    };
    let diff = diff_sections(old_hashes, new_hashes);
    let list = |xs: &[String]| {
        let mut shown: Vec<String> = xs
            .iter()
            .take(NOTE_ANCHORS)
            .map(|a| format!("#{}", one_line(a, LABEL_BYTES)))
            .collect();
        if xs.len() > NOTE_ANCHORS {
            shown.push(format!("+{} more", xs.len() - NOTE_ANCHORS));
        }
        shown.join(", ")
    };
    for (name, xs) in [
        ("sections changed", &diff.changed),
        ("added", &diff.added),
        ("removed", &diff.removed),
    ] {
        if !xs.is_empty() {
            note.push_str(&format!("; {name}: {}", list(xs)));
        }
    }
    note
}

/// Anchors a change note names per kind of change.
const NOTE_ANCHORS: usize = 3;
/// Longest anchor or label quoted inside a note or an `unchanged` line.
const LABEL_BYTES: usize = 40;
/// Longest line of an outline (a 1 MB heading is cut, not repeated whole).
const OUTLINE_LINE_BYTES: usize = 300;

/// The delivery key of part `n`.
fn part_slice<S: AsRef<str>>(doc: &Document<S>, n: Named) -> Slice {
    match n {
        Named::Section(h) => anchor_slice(doc, h),
        Named::Block(b) => Slice::Block(b.id.clone()),
    }
}

/// The one-line error for a fragment of `path` that names nothing: the
/// nearest anchors or block ids (the same for tools, resources and `open`).
pub(crate) fn miss_message(path: &str, wanted: &str, miss: &PartMiss) -> String {
    let listed = |nearest: Vec<String>, none: &str| -> String {
        if nearest.is_empty() {
            none.to_string()
        } else {
            nearest.join(", ")
        }
    };
    match miss {
        PartMiss::Block(miss) => {
            let ids: Vec<String> = miss.nearest.iter().map(|id| format!("^{id}")).collect();
            format!(
                "block ^{} not found in {path}; nearest: {}",
                short(&miss.query),
                listed(ids, "(none: the document has no block ids)")
            )
        }
        PartMiss::Section(miss) => format!(
            "section #{} not found in {path}; nearest: {}",
            short(wanted),
            listed(
                miss.nearest.clone(),
                // A heading path (`Heading#Sub`) looks only under the
                // headings it names.
                if wanted.trim_start_matches('#').contains('#') {
                    "(none: the section the heading path reaches has no subheadings)"
                } else {
                    "(none: the document has no anchored headings)"
                }
            )
        ),
    }
}

/// The delivery key of `h`'s section: its anchor, or for an anchorless
/// heading (`## 🚀`) the text that fetches it.
fn anchor_slice<S: AsRef<str>>(doc: &Document<S>, h: &Heading) -> Slice {
    Slice::Section(doc.fragment_of(h).unwrap_or_default().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::repeated_headings;

    fn id(v: &str) -> Identity {
        Identity {
            version: Some(v.into()),
            etag: Some(format!("e{v}")),
        }
    }

    #[test]
    fn change_note_names_the_step_and_each_kind_of_change() {
        let old = Document::parse("# T\n\n## A\n\none\n\n## B\n\ntwo\n\n## C\n\nthree\n")
            .section_hashes();
        let new =
            Document::parse("# T\n\n## A\n\nONE\n\n## B\n\ntwo\n\n## D\n\nfour\n").section_hashes();
        let note = change_note(&id("3"), &id("5"), Some(&old), &new);
        assert!(
            note.starts_with("changed since your last read (v3 -> v5); sections changed: "),
            "{note}"
        );
        assert!(
            note.contains("#a") && note.ends_with("added: #d; removed: #c"),
            "{note}"
        );
        assert!(!note.contains("#b"));
        let same = change_note(&id("3"), &id("4"), Some(&old), &old);
        assert_eq!(same, "changed since your last read (v3 -> v4)");
        let unknown = change_note(&id("3"), &id("4"), None, &old);
        assert!(unknown.contains("not known"), "{unknown}");
    }

    #[test]
    fn a_change_note_names_a_few_anchors_and_counts_the_rest() {
        let doc = |tag: &str| {
            let text: String = (0..3000)
                .map(|i| format!("## S{i} {}\n\n{tag}\n\n", "x".repeat(i % 300)))
                .collect();
            Document::parse(text).section_hashes()
        };
        let note = change_note(&id("1"), &id("2"), Some(&doc("a")), &doc("b"));
        assert!(note.len() < 300, "{} bytes: {note}", note.len());
        assert!(note.ends_with(", +2997 more"), "{note}");
    }

    #[test]
    fn a_repeated_heading_is_named_with_the_headings_above_it() {
        let doc = Document::parse(
            "# Roadmap\n\n## Phase 1\n\n### Status\n\nDone.\n\n## Phase 2\n\n### Status\n\nOpen.\n\n### Notes\n\n#### Status\n",
        );
        let repeated = repeated_headings(&doc);
        let label = |anchor: &str| section_label(&doc, doc.find_anchor(anchor).unwrap(), &repeated);
        assert_eq!(
            label("phase-2"),
            "#phase-2",
            "a unique heading: the anchor alone"
        );
        assert_eq!(label("notes"), "#notes");
        assert_eq!(
            label("status"),
            "#status (in Phase 1)",
            "the title is left out"
        );
        assert_eq!(label("status-1"), "#status-1 (in Phase 2)");
        assert_eq!(label("status-2"), "#status-2 (in Phase 2 › Notes)");
        let untitled = Document::parse("## A\n\n### X\n\n## B\n\n### X\n");
        let x = untitled.find_anchor("x-1").unwrap();
        assert_eq!(
            section_label(&untitled, x, &repeated_headings(&untitled)),
            "#x-1 (in B)"
        );
    }

    #[test]
    fn section_names_show_at_least_one_name() {
        assert_eq!(names_within(&["#a", "#b", "#c"], 6), "#a, #b, +1 more");
        let long = format!("#{}", "x".repeat(500));
        let shown = names_within(&[&long, "#b"], 400);
        assert!(
            shown.starts_with("#xxx") && shown.ends_with("…, #b"),
            "{shown}"
        );
    }

    #[test]
    fn params_accept_the_documented_json() {
        let p: FetchParams = serde_json::from_str(
            r#"{"url": "/a.md", "mode": "outline", "anchors": ["x"], "force": true}"#,
        )
        .unwrap();
        assert_eq!(
            (p.mode, p.anchors.len(), p.force),
            (Some(FetchMode::Outline), 1, true)
        );
        let p: FetchParams = serde_json::from_str(r#"{"url": "/a.md"}"#).unwrap();
        assert_eq!((p.mode, p.force, p.cursor), (None, false, None));
        assert!(
            serde_json::from_str::<FetchParams>(r#"{"url": "/a.md", "mode": "everything"}"#)
                .is_err()
        );
    }
}
