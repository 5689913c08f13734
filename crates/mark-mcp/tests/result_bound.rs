//! The whole-result bound as an invariant: for generated documents (long
//! sections, CJK, emoji, repeated and deep headings, many links, long
//! titles, one section holding hundreds of subsections), generated options
//! (`--page-bytes`, `--outline-threshold`) and generated calls of every read
//! tool (many distinct nested anchors at once, lookups reading their hits)
//! and resource reads, (a) the rendered result (envelope, notes, text, page
//! line) is at most `--page-bytes` + the envelope allowance bytes, 48,000 by
//! default, so the last guard (`bound::fit`) never fires, and (b) every
//! delivery the call records is text the result carries (issue 26).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mark_mcp::bound::{DEFAULT_PAGE_BYTES, cuts, fit, result_bound};
use mark_mcp::dedup::{Delivery, Slice};
use mark_mcp::explore::{ExploreParams, explore};
use mark_mcp::fetch::{FetchMode, FetchParams, fetch};
use mark_mcp::list::{ListParams, list};
use mark_mcp::lookup::{LookupParams, MatchMode, lookup};
use mark_mcp::outbox::{SessionDelivery, collect, deliver};
use mark_mcp::session::Session;
use mark_mcp::settings::Settings;
use mark_mcp::sources::LocalSource;
use proptest::prelude::*;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Words of every width: ASCII, accented, CJK (3 bytes), emoji (4 bytes).
const WORDS: [&str; 8] = [
    "tide",
    "gauge",
    "Müller",
    "潮位",
    "観測所",
    "🌊",
    "harbour",
    "déjà",
];

fn words(seed: usize, bytes: usize) -> String {
    let mut out = String::new();
    let mut i = seed;
    while out.len() < bytes {
        out.push_str(WORDS[i % WORDS.len()]);
        out.push(if i.is_multiple_of(13) { '\n' } else { ' ' });
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    out
}

/// One generated section: heading level, heading word, body bytes, links.
type SectionSpec = (usize, usize, usize, usize);

fn document(title: &str, sections: &[SectionSpec]) -> String {
    let mut doc = format!("---\ntitle: {title}\ntags: [a, b]\n---\n\n# {title}\n\n");
    doc.push_str(&words(1, 300));
    for (i, &(level, word, body, links)) in sections.iter().enumerate() {
        // Repeated heading texts (`Status`) and every width of word.
        let heading = if i.is_multiple_of(3) {
            "Status".to_string()
        } else {
            format!("{} {i}", WORDS[word % WORDS.len()])
        };
        writeln!(doc, "\n{} {heading}\n", "#".repeat(level)).unwrap();
        doc.push_str(&words(i, body));
        for l in 0..links {
            write!(doc, " [{} {l}](/doc{}.md#status)", WORDS[l % 8], l % 3).unwrap();
        }
        doc.push('\n');
    }
    doc
}

/// A document whose `## Outer` holds `subs` subsections of `body` bytes,
/// under a title of `title` bytes: many distinct nested anchors.
fn nested(subs: usize, body: usize, title: usize) -> String {
    let title: String = words(7, title)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut doc = format!("# Nested {title}\n\nOpening.\n\n## Outer\n\n");
    for i in 0..subs {
        let level = if i % 5 == 4 { 4 } else { 3 };
        writeln!(doc, "{} Sub {i}\n\n{}\n", "#".repeat(level), words(i, body)).unwrap();
    }
    doc
}

fn section_spec() -> impl Strategy<Value = SectionSpec> {
    (1usize..=6, 0usize..8, 0usize..12_000, 0usize..120)
}

/// A generated call of one read tool, from parts of the document.
#[derive(Debug, Clone)]
enum Call {
    Fetch {
        doc: usize,
        mode: Option<FetchMode>,
        anchors: usize,
        force: bool,
        pages: usize,
    },
    /// Distinct anchors of the nested document, in a generated order.
    Nested {
        mode: Option<FetchMode>,
        picks: Vec<usize>,
    },
    Explore {
        doc: usize,
    },
    Lookup {
        word: usize,
        body: bool,
        /// The hits whose sections it reads too.
        read: u32,
    },
    List,
    Resource {
        doc: usize,
        section: bool,
    },
}

fn call() -> impl Strategy<Value = Call> {
    prop_oneof![
        (
            0usize..3,
            prop::option::of(prop_oneof![
                Just(FetchMode::Auto),
                Just(FetchMode::Full),
                Just(FetchMode::Outline)
            ]),
            0usize..400,
            any::<bool>(),
            1usize..4,
        )
            .prop_map(|(doc, mode, anchors, force, pages)| Call::Fetch {
                doc,
                mode,
                anchors,
                force,
                pages
            }),
        (
            prop::option::of(prop_oneof![Just(FetchMode::Auto), Just(FetchMode::Full)]),
            prop::collection::vec(0usize..400, 1..320),
        )
            .prop_map(|(mode, picks)| Call::Nested { mode, picks }),
        (0usize..3).prop_map(|doc| Call::Explore { doc }),
        (0usize..8, any::<bool>(), 0u32..=3).prop_map(|(word, body, read)| Call::Lookup {
            word,
            body,
            read
        }),
        Just(Call::List),
        (0usize..3, any::<bool>()).prop_map(|(doc, section)| Call::Resource { doc, section }),
    ]
}

/// The next-page cursor a result names, if any.
fn next_cursor(text: &str) -> Option<String> {
    let at = text.rfind("cursor \"")? + "cursor \"".len();
    let end = text[at..].find('"')?;
    Some(text[at..at + end].to_string())
}

/// Where a delivered slice's page lies in `text`, its document.
fn delivered_text<'t>(
    text: &'t str,
    slice: &Slice,
    number: usize,
    total: usize,
    page_bytes: usize,
) -> &'t str {
    let doc = markdown_slice::Document::parse(text);
    let range = match slice {
        Slice::Body => 0..text.len(),
        Slice::Section(a) => doc.find_part(a).unwrap().range(),
        Slice::Block(id) => doc.find_part(&format!("^{id}")).unwrap().range(),
        Slice::Passage(r) => {
            let (start, end) = r.split_once('-').unwrap();
            start.parse().unwrap()..end.parse().unwrap()
        }
    };
    let whole = &text[range.clone()];
    if total == 1 {
        return whole;
    }
    let pages = mark_mcp::fetch::text_pages(&doc, whole, range.start, page_bytes);
    &whole[pages[number - 1].clone()]
}

/// Checks that each of `sent` is text `result` carries (an outline's
/// record: that the result holds an outline), then records them.
fn check_and_record(
    session: &Session,
    docs: &HashMap<String, String>,
    result: &str,
    sent: Vec<SessionDelivery>,
) -> Result<(), String> {
    let page_bytes = session.settings().page_bytes;
    for d in sent {
        match &d {
            Delivery::Doc {
                path,
                part: Some((slice, page)),
                ..
            } => {
                let text = delivered_text(&docs[path], slice, page.number, page.total, page_bytes);
                if !result.contains(text.trim_end()) {
                    return Err(format!(
                        "{path} {slice:?} {page:?} recorded, not in the result"
                    ));
                }
            }
            Delivery::Answer { key, .. }
                if key.tool == "fetch"
                    && !result.contains("(outline):\n")
                    && !result.contains("\nmode: outline\n") =>
            {
                return Err(format!("outline {} recorded, none in the result", key.part));
            }
            _ => {}
        }
        deliver(session, d);
    }
    Ok(())
}

/// Runs `calls`, giving each result's size; each result's deliveries are
/// checked against its text (see [`check_and_record`]).
async fn run_calls(
    session: &Session,
    docs: &HashMap<String, String>,
    anchors: &[Vec<String>],
    calls: &[Call],
) -> Result<Vec<usize>, String> {
    let now = Instant::now();
    let page_bytes = session.settings().page_bytes;
    let mut sizes = Vec::new();
    // Each result passes the last guard as the server's does, and its
    // deliveries are checked before they count.
    let sent = |t: mark_mcp::envelope::ToolText, deliveries: Vec<SessionDelivery>| {
        let text = fit(t, page_bytes).render();
        check_and_record(session, docs, &text, deliveries).map(|()| text)
    };
    for c in calls {
        match c {
            Call::Fetch {
                doc,
                mode,
                anchors: n,
                force,
                pages,
            } => {
                let mut params = FetchParams {
                    url: format!("/doc{doc}.md"),
                    mode: *mode,
                    force: *force,
                    ..FetchParams::default()
                };
                let all = &anchors[*doc];
                if *n > 0 && !all.is_empty() {
                    params.anchors = (0..*n).map(|i| all[i % all.len()].clone()).collect();
                    if *n == 1 {
                        params.url = format!("/doc{doc}.md#{}", all[0]);
                        params.anchors.clear();
                    }
                }
                for _ in 0..*pages {
                    let (t, d) = collect(fetch(session, params.clone(), now)).await;
                    let text = sent(t, d)?;
                    sizes.push(text.len());
                    match next_cursor(&text) {
                        Some(c) if params.anchors.len() <= 1 => params.cursor = Some(c),
                        _ => break,
                    }
                }
            }
            Call::Nested { mode, picks } => {
                let all = &anchors[3];
                let mut chosen: Vec<String> = Vec::new();
                for p in picks {
                    let a = &all[p % all.len()];
                    if !chosen.contains(a) {
                        chosen.push(a.clone());
                    }
                }
                let params = FetchParams {
                    url: "/nested.md".to_string(),
                    mode: *mode,
                    anchors: chosen,
                    ..FetchParams::default()
                };
                let (t, d) = collect(fetch(session, params, now)).await;
                sizes.push(sent(t, d)?.len());
            }
            Call::Explore { doc } => {
                let params = ExploreParams {
                    url: format!("/doc{doc}.md"),
                    force: true,
                    ..ExploreParams::default()
                };
                let (t, d) = collect(explore(session, params, now)).await;
                sizes.push(sent(t, d)?.len());
            }
            Call::Lookup { word, body, read } => {
                let params = LookupParams {
                    query: WORDS[*word].to_string(),
                    limit: Some(100),
                    match_mode: Some(if *body {
                        MatchMode::Body
                    } else {
                        MatchMode::Catalog
                    }),
                    read: Some(*read),
                    force: true,
                    ..LookupParams::default()
                };
                let (t, d) = collect(lookup(session, params, now)).await;
                sizes.push(sent(t, d)?.len());
            }
            Call::List => {
                let params = ListParams {
                    url: "/".to_string(),
                    ..ListParams::default()
                };
                let (t, d) = collect(list(session, params)).await;
                sizes.push(sent(t, d)?.len());
            }
            Call::Resource { doc, section } => {
                let mut uri = format!("mark://local/doc{doc}.md");
                if *section && let Some(a) = anchors[*doc].first() {
                    uri.push('#');
                    uri.push_str(a);
                }
                let text = mark_mcp::resources::read(session, &uri, now)
                    .await
                    .unwrap_or_else(|e| e.message().to_string());
                sizes.push(text.len());
            }
        }
    }
    Ok(sizes)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn every_result_is_within_the_whole_result_bound(
        docs in prop::collection::vec(prop::collection::vec(section_spec(), 0..40), 3),
        page_bytes in prop_oneof![Just(DEFAULT_PAGE_BYTES), 2_000usize..60_000],
        outline_threshold in prop_oneof![Just(8192usize), 100usize..100_000],
        nested_doc in (0usize..320, 0usize..300, 0usize..4_000),
        calls in prop::collection::vec(call(), 1..12),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut anchors = Vec::new();
        let mut texts = HashMap::new();
        let (subs, body, title) = nested_doc;
        let named = docs
            .iter()
            .enumerate()
            .map(|(i, sections)| (format!("doc{i}.md"), document(&format!("Doc {i} 潮位 {}", "long title ".repeat(title / 40)), sections)))
            .chain([("nested.md".to_string(), nested(subs, body, title))]);
        for (name, text) in named {
            let parsed = markdown_slice::Document::parse(text.as_str());
            anchors.push(parsed.headings().iter().filter_map(|h| h.anchor.clone()).collect::<Vec<_>>());
            std::fs::write(dir.path().join(&name), &text).unwrap();
            texts.insert(format!("/{name}"), text);
        }
        let settings = Settings {
            page_bytes,
            outline_threshold,
            ..Settings::default()
        };
        let mut settings = settings;
        settings.crawl.wait = Duration::ZERO;
        let source = LocalSource::open(dir.path(), false).unwrap();
        let session = Session::new(Arc::new(source), settings);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let sizes = runtime.block_on(run_calls(&session, &texts, &anchors, &calls));
        let sizes = match sizes {
            Ok(s) => s,
            Err(e) => return Err(TestCaseError::fail(format!("{e}: {calls:?}"))),
        };
        let bound = result_bound(page_bytes);
        for (i, size) in sizes.iter().enumerate() {
            prop_assert!(*size <= bound, "result {i} of {calls:?}: {size} bytes, over {bound}");
        }
        prop_assert_eq!(cuts(), 0, "the last guard never fires");
    }
}

/// The default bound is the documented 48,000 bytes.
#[test]
fn the_default_bound_is_48000_bytes() {
    assert_eq!(result_bound(DEFAULT_PAGE_BYTES), 48_000);
    assert_eq!(Settings::default().page_bytes, DEFAULT_PAGE_BYTES);
}
