//! The whole-result bound as an invariant: for generated documents (long
//! sections, CJK, emoji, repeated and deep headings, many links), generated
//! options (`--page-bytes`, `--outline-threshold`) and generated calls of
//! every read tool and resource reads, the rendered result (envelope, notes,
//! text, page line) is at most `--page-bytes` + the envelope allowance bytes,
//! 48,000 by default, before the last-guard cut (`bound::fit`) ever runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mark_mcp::bound::{DEFAULT_PAGE_BYTES, result_bound};
use mark_mcp::explore::{ExploreParams, explore};
use mark_mcp::fetch::{FetchMode, FetchParams, fetch};
use mark_mcp::list::{ListParams, list};
use mark_mcp::lookup::{LookupParams, MatchMode, lookup};
use mark_mcp::session::Session;
use mark_mcp::settings::Settings;
use mark_mcp::sources::LocalSource;
use proptest::prelude::*;
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

async fn run_calls(session: &Session, anchors: &[Vec<String>], calls: &[Call]) -> Vec<usize> {
    let now = Instant::now();
    let mut sizes = Vec::new();
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
                    let t = fetch(session, params.clone(), now).await;
                    let text = t.render();
                    sizes.push(text.len());
                    match next_cursor(&text) {
                        Some(c) if params.anchors.len() <= 1 => params.cursor = Some(c),
                        _ => break,
                    }
                }
            }
            Call::Explore { doc } => {
                let params = ExploreParams {
                    url: format!("/doc{doc}.md"),
                    force: true,
                    ..ExploreParams::default()
                };
                sizes.push(explore(session, params, now).await.render().len());
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
                sizes.push(lookup(session, params, now).await.render().len());
            }
            Call::List => {
                let params = ListParams {
                    url: "/".to_string(),
                    ..ListParams::default()
                };
                sizes.push(list(session, params).await.render().len());
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
    sizes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn every_result_is_within_the_whole_result_bound(
        docs in prop::collection::vec(prop::collection::vec(section_spec(), 0..40), 3),
        page_bytes in prop_oneof![Just(DEFAULT_PAGE_BYTES), 2_000usize..60_000],
        outline_threshold in prop_oneof![Just(8192usize), 100usize..100_000],
        calls in prop::collection::vec(call(), 1..12),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut anchors = Vec::new();
        for (i, sections) in docs.iter().enumerate() {
            let text = document(&format!("Doc {i} 潮位"), sections);
            let parsed = markdown_slice::Document::parse(text.as_str());
            anchors.push(parsed.headings().iter().filter_map(|h| h.anchor.clone()).collect::<Vec<_>>());
            std::fs::write(dir.path().join(format!("doc{i}.md")), &text).unwrap();
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
        let sizes = runtime.block_on(run_calls(&session, &anchors, &calls));
        let bound = result_bound(page_bytes);
        for (i, size) in sizes.iter().enumerate() {
            prop_assert!(*size <= bound, "result {i} of {calls:?}: {size} bytes, over {bound}");
        }
    }
}

/// The default bound is the documented 48,000 bytes.
#[test]
fn the_default_bound_is_48000_bytes() {
    assert_eq!(result_bound(DEFAULT_PAGE_BYTES), 48_000);
    assert_eq!(Settings::default().page_bytes, DEFAULT_PAGE_BYTES);
}
