//! LOOKUP through the engine: catalog and body matching, filters, limit,
//! scope, ranking order, and the index following changes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use mark_proto::lookup::{LookupTable, MatchMode};
use mark_proto::{Request, Response, Status, Verb};
use sha2::Digest;
use support::{Store, at, ok};

const RUST: &str = "---\ntitle: Rust Guide\ntags: [rust, language]\nimportance: 0.9\n---\n# Rust Guide\n\nIntro text about ownership.\n\n## Install\n\nUse rustup to install the toolchain.\n\n## Async\n\nTokio runs futures. QUIC needs async.\n";
const QUIC: &str = "---\ntitle: QUIC notes\ntags: [network]\n---\n# QUIC notes\n\nQUIC is a transport over UDP.\n\n## Handshake\n\nTLS 1.3 inside QUIC; rust crates such as quinn.\n";
const MISC: &str = "# Misc\n\nNothing about the transport.\n\n## Rust corner\n\nOwnership again.\n";

fn store() -> Store {
    let s = Store::new();
    ok(&s.publish_at("/guide/rust.md", RUST, None, at(0)));
    ok(&s.publish_at("/notes/quic.md", QUIC, None, at(3600)));
    ok(&s.publish_at("/notes/misc.md", MISC, None, at(7200)));
    s
}

fn lookup(s: &Store, scope: &str, meta: &[(&str, &str)]) -> Response {
    let mut req = Request::new(Verb::Lookup, scope);
    for (k, v) in meta {
        req = req.with_meta(*k, *v);
    }
    s.handle(req)
}

fn table(resp: &Response) -> LookupTable {
    assert_eq!(resp.status, Status::Ok, "{}", resp.error_message());
    let t = mark_proto::lookup::parse(&resp.body).unwrap();
    assert_eq!(
        resp.meta("matches"),
        Some(t.rows.len().to_string().as_str())
    );
    t
}

fn targets(resp: &Response) -> Vec<String> {
    table(resp).rows.iter().map(|r| r.target()).collect()
}

#[test]
fn catalog_title_and_tag_matches_are_bare_rows_else_sections() {
    let s = store();
    let r = lookup(&s, "/", &[("query", "rust")]);
    assert_eq!(r.meta("match"), None, "catalog mode is not echoed");
    let t = table(&r);
    assert_eq!(t.mode, MatchMode::Catalog);
    let paths: Vec<String> = t.rows.iter().map(|r| r.target()).collect();
    assert_eq!(
        paths[0], "/guide/rust.md",
        "title and tag hit, importance 0.9, ranks first"
    );
    assert!(
        paths.contains(&"/notes/quic.md#handshake".to_string()),
        "{paths:?}"
    );
    assert!(
        paths.contains(&"/notes/misc.md#rust-corner".to_string()),
        "{paths:?}"
    );
    assert_eq!(paths.len(), 3);
    let first = &t.rows[0];
    assert_eq!(first.title, "Rust Guide");
    assert_eq!(first.tags, ["rust", "language"]);
    assert!((first.importance - 0.9).abs() < 1e-9);
    let corner = t
        .rows
        .iter()
        .find(|r| r.target() == "/notes/misc.md#rust-corner")
        .unwrap();
    assert_eq!(corner.title, "Misc › Rust corner");
    assert!((corner.importance - 0.5).abs() < 1e-9, "default importance");
    assert!(
        r.text()
            .unwrap()
            .starts_with("| Path | Importance | Title | Tags |\n")
    );
}

#[test]
fn terms_may_combine_title_and_section_but_one_must_be_in_the_section() {
    let s = store();
    // "rust" is in the guide's title, "ownership" only in its first section.
    let paths = targets(&lookup(&s, "/", &[("query", "Rust OWNERSHIP")]));
    assert_eq!(
        paths,
        ["/guide/rust.md#rust-guide", "/notes/misc.md#rust-corner"]
    );
    // "network" is only a tag, "language" only a tag of another document: nothing holds both.
    assert!(targets(&lookup(&s, "/", &[("query", "network language")])).is_empty());
    // Whole words only: "rus" is not "rust", one-letter terms are dropped.
    assert!(targets(&lookup(&s, "/", &[("query", "rus")])).is_empty());
    assert_eq!(
        targets(&lookup(&s, "/", &[("query", "x udp")])),
        ["/notes/quic.md#quic-notes"]
    );
}

#[test]
fn body_mode_rows_are_sections_with_snippets() {
    let s = store();
    let r = lookup(&s, "/", &[("query", "quic"), ("match", "body")]);
    assert_eq!(r.meta("match"), Some("body"));
    let t = table(&r);
    assert_eq!(t.mode, MatchMode::Body);
    let paths: Vec<String> = t.rows.iter().map(|r| r.target()).collect();
    assert_eq!(paths.len(), 3, "{paths:?}");
    for p in [
        "/notes/quic.md#quic-notes",
        "/notes/quic.md#handshake",
        "/guide/rust.md#async",
    ] {
        assert!(paths.contains(&p.to_string()), "{p} in {paths:?}");
    }
    let handshake = t
        .rows
        .iter()
        .find(|r| r.anchor.as_deref() == Some("handshake"))
        .unwrap();
    assert_eq!(handshake.title, "QUIC notes › Handshake");
    assert_eq!(
        handshake.snippet.as_deref(),
        Some("TLS 1.3 inside QUIC; rust crates such as quinn.")
    );
    assert!(
        r.text()
            .unwrap()
            .starts_with("| Path | Importance | Title | Tags | Snippet |\n")
    );
}

#[test]
fn snippets_are_one_bounded_line() {
    let s = Store::new();
    let long = format!(
        "# Long\n\n{} needle {}\n",
        "word ".repeat(200),
        "tail | with * specials ".repeat(40)
    );
    ok(&s.publish("/long.md", &long));
    let r = lookup(&s, "/", &[("query", "needle"), ("match", "body")]);
    let body = r.text().unwrap();
    let row = body.lines().nth(2).unwrap();
    let snippet_cell = row.rsplit(" | ").next().unwrap().trim_end_matches(" |");
    assert!(snippet_cell.len() <= 240, "{} bytes", snippet_cell.len());
    assert!(snippet_cell.contains("needle"));
    let parsed = table(&r);
    assert!(!parsed.rows[0].snippet.as_deref().unwrap().contains('\n'));
}

#[test]
fn filters_limit_and_scope() {
    let s = store();
    assert_eq!(
        targets(&lookup(&s, "/", &[("query", "*"), ("filter", "tag=RUST")])),
        ["/guide/rust.md"]
    );
    assert_eq!(
        targets(&lookup(
            &s,
            "/",
            &[
                ("query", "*"),
                ("filter", "modified-after=2026-02-17T10:30:00Z")
            ]
        )),
        ["/notes/misc.md", "/notes/quic.md"]
    );
    assert_eq!(
        targets(&lookup(
            &s,
            "/",
            &[
                ("query", "*"),
                (
                    "filter",
                    "modified-after=2026-02-17T10:30:00Z, modified-before=2026-02-17T11:30:00Z"
                )
            ]
        )),
        ["/notes/quic.md"]
    );
    assert_eq!(
        targets(&lookup(
            &s,
            "/",
            &[("query", "*"), ("filter", "modified-before=2026-02-17")]
        ))
        .len(),
        0
    );
    assert_eq!(
        targets(&lookup(&s, "/", &[("query", "*"), ("limit", "1")])),
        ["/guide/rust.md"]
    );
    let mut scoped = targets(&lookup(&s, "/notes/", &[("query", "rust")]));
    scoped.sort();
    assert_eq!(
        scoped,
        ["/notes/misc.md#rust-corner", "/notes/quic.md#handshake"],
        "the guide is out of scope"
    );
    assert_eq!(
        targets(&lookup(&s, "/notes", &[("query", "*")])),
        ["/notes/misc.md", "/notes/quic.md"],
        "scope without a slash"
    );
    assert_eq!(
        targets(&lookup(&s, "/notes/quic.md", &[("query", "*")])),
        ["/notes/quic.md"],
        "a document as scope"
    );
    assert_eq!(
        targets(&lookup(&s, "/nowhere/", &[("query", "*")])).len(),
        0
    );
}

#[test]
fn star_ranks_by_importance_then_path() {
    let s = store();
    assert_eq!(
        targets(&lookup(&s, "/", &[("query", "*")])),
        ["/guide/rust.md", "/notes/misc.md", "/notes/quic.md"]
    );
    let body = targets(&lookup(&s, "/notes/", &[("query", "*"), ("match", "body")]));
    assert_eq!(
        body,
        [
            "/notes/misc.md#misc",
            "/notes/misc.md#rust-corner",
            "/notes/quic.md#handshake",
            "/notes/quic.md#quic-notes"
        ]
    );
}

#[test]
fn ranking_is_deterministic_and_weighs_headings_up() {
    let s = Store::new();
    ok(&s.publish("/a.md", "# Other\n\nzebra zebra zebra in the text\n"));
    ok(&s.publish("/b.md", "# Zebra\n\nsomething else entirely here\n"));
    ok(&s.publish(
        "/c.md",
        "# Plain\n\none zebra mention among many other words in a longer body of text\n",
    ));
    let first = targets(&lookup(&s, "/", &[("query", "zebra"), ("match", "body")]));
    for _ in 0..3 {
        assert_eq!(
            targets(&lookup(&s, "/", &[("query", "zebra"), ("match", "body")])),
            first
        );
    }
    assert_eq!(
        first.last().unwrap(),
        "/c.md#plain",
        "a single mention in a long section ranks last: {first:?}"
    );
}

#[test]
fn sections_that_hold_a_term_rank_above_those_matched_through_their_headings() {
    let s = Store::new();
    // Every section of the roadmap matches "otter" through its title; the
    // empty containers (Phase 1, Notes) are the shortest, so BM25 alone
    // would put them first.
    ok(&s.publish(
        "/roadmap.md",
        "# Otter roadmap\n\n## Phase 1\n\n### Notes\n\n#### 2025-01-01\n\nNets mended.\n",
    ));
    ok(&s.publish(
        "/hub.md",
        "# Hub\n\nThe otter survey counts every otter on the coast, twice a year.\n",
    ));
    let found = targets(&lookup(&s, "/", &[("query", "otter"), ("match", "body")]));
    assert_eq!(
        found[..2],
        ["/roadmap.md#otter-roadmap", "/hub.md#hub"],
        "the roadmap's own heading and the hub's text first: {found:?}"
    );
    assert_eq!(
        found.len(),
        5,
        "context-only sections still match: {found:?}"
    );
}

#[test]
fn importance_scales_the_score() {
    let s = Store::new();
    let doc = |imp: &str| {
        format!("---\nimportance: {imp}\n---\n# Same\n\nidentical words about otters\n")
    };
    ok(&s.publish("/low.md", &doc("0")));
    ok(&s.publish("/high.md", &doc("1")));
    ok(&s.publish("/mid.md", &doc("7")));
    let t = table(&lookup(&s, "/", &[("query", "otters")]));
    let order: Vec<(String, String)> = t
        .rows
        .iter()
        .map(|r| (r.target(), format!("{:.2}", r.importance)))
        .collect();
    assert_eq!(
        order,
        [
            ("/high.md#same".into(), "1.00".into()),
            ("/mid.md#same".into(), "0.50".into()),
            ("/low.md#same".into(), "0.00".into())
        ],
        "importance outside 0..1 falls back to 0.5"
    );
}

#[test]
fn the_index_follows_new_versions_and_archiving() {
    let s = store();
    assert!(targets(&lookup(&s, "/", &[("query", "pelican")])).is_empty());
    ok(&s.publish("/notes/misc.md", "# Misc\n\nA pelican arrived.\n"));
    assert_eq!(
        targets(&lookup(&s, "/", &[("query", "pelican")])),
        ["/notes/misc.md#misc"]
    );
    ok(&s.archive("/notes/misc.md"));
    assert!(targets(&lookup(&s, "/", &[("query", "pelican")])).is_empty());
    assert_eq!(targets(&lookup(&s, "/", &[("query", "*")])).len(), 2);
}

#[test]
fn bad_requests() {
    let s = store();
    for meta in [
        vec![],
        vec![("query", "  ")],
        vec![("query", "a b")],
        vec![("query", "x"), ("filter", "color=red")],
        vec![("query", "x"), ("filter", "modified-after=someday")],
        vec![("query", "x"), ("filter", "tag")],
        vec![("query", "xx"), ("limit", "0")],
        vec![("query", "xx"), ("limit", "ten")],
        vec![("query", "xx"), ("match", "fuzzy")],
    ] {
        let r = lookup(&s, "/", &meta);
        assert_eq!(r.status, Status::BadRequest, "{meta:?}");
        assert!(r.text().unwrap().starts_with("# Bad request\n\n"));
    }
    // The limit is capped, not refused.
    assert_eq!(
        lookup(&s, "/", &[("query", "*"), ("limit", "5000")]).status,
        Status::Ok
    );
}

#[test]
fn flat_folders_are_searched_the_same_way() {
    let (dir, engine) = support::flat(&[
        ("guide/rust.md", RUST),
        ("notes/quic.md", QUIC),
        ("notes/readme.txt", "rust rust"),
    ]);
    let r = engine.handle(
        &Request::new(Verb::Lookup, "/").with_meta("query", "rust"),
        at(0),
    );
    assert_eq!(targets(&r), ["/guide/rust.md", "/notes/quic.md#handshake"]);
    // A changed file is re-read (its size and mtime changed), but only at
    // the next re-check: a LOOKUP never walks the folder by itself.
    std::fs::write(
        dir.path().join("notes/quic.md"),
        "# QUIC\n\nno mention now, but a longer body\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("new.md"), "# New\n\nrust here too\n").unwrap();
    let rust = |secs| {
        targets(&engine.handle(
            &Request::new(Verb::Lookup, "/").with_meta("query", "rust"),
            at(secs),
        ))
    };
    assert_eq!(
        rust(1),
        ["/guide/rust.md", "/notes/quic.md#handshake"],
        "within the re-check interval the index is not walked"
    );
    assert_eq!(rust(6), ["/guide/rust.md", "/new.md#new"]);
    std::fs::remove_file(dir.path().join("new.md")).unwrap();
    assert_eq!(rust(12), ["/guide/rust.md"]);
}

#[test]
fn any_word_queries_rank_rows_holding_more_and_rarer_words_and_say_so() {
    let s = Store::new();
    ok(&s.publish(
        "/pier.md",
        "# Pier\n\nPier is the deploy service.\n\n## Hosts\n\nHosts pull their deploy work from Pier every minute.\n",
    ));
    ok(&s.publish(
        "/other.md",
        "# Other\n\nThe work of hosts is described elsewhere.\n",
    ));
    ok(&s.publish("/noise.md", "# Noise\n\nwork work work\n"));
    let q = "What is Pier, and how do hosts get their deploy work?";
    let all = lookup(&s, "/", &[("query", q), ("match", "body")]);
    assert_eq!(all.meta("terms"), None, "all-words is not echoed");
    assert_eq!(table(&all).rows.len(), 0, "no section holds every word");
    assert_eq!(all.meta("total"), Some("0"));
    let any = lookup(
        &s,
        "/",
        &[
            ("query", q),
            ("match", "body"),
            ("terms", "any"),
            ("limit", "2"),
        ],
    );
    assert_eq!(any.meta("terms"), Some("any"));
    assert_eq!(targets(&any), ["/pier.md#hosts", "/pier.md#pier"]);
    assert_eq!(
        (any.meta("matches"), any.meta("total")),
        (Some("2"), Some("4")),
        "matches is the rows returned, total the rows found"
    );
}

#[test]
fn any_word_mode_ranks_exact_forms_above_stemmed_ones_and_phrases_first() {
    let s = Store::new();
    ok(&s.publish(
        "/fs.md",
        "# fs\n\n## File descriptors\n\nA callback gets the file descriptor; fs functions take a callback.\n\n## fs.readFile(path, callback)\n\nReads the whole file.\n\n## Callbacks\n\nAll the callbacks run later.\n",
    ));
    ok(&s.publish("/dates.md", "# Log\n\n## Monday\n\nOn 2023-11-20 we shipped.\n\n## Tuesday\n\n20 people met on 2023-12-11.\n"));
    let top = |query: &str| {
        targets(&lookup(
            &s,
            "/",
            &[("query", query), ("match", "body"), ("terms", "any")],
        ))
    };
    assert_eq!(
        top("fs.readFile callback")[0],
        "/fs.md#fsreadfilepath-callback"
    );
    assert_eq!(top("2023-11-20")[0], "/dates.md#monday");
    let callback = top("callback");
    assert_eq!(
        callback,
        [
            "/fs.md#fsreadfilepath-callback",
            "/fs.md#file-descriptors",
            "/fs.md#callbacks"
        ],
        "the heading first; the stemmed form matches in any mode, below the exact ones"
    );
    assert_eq!(
        targets(&lookup(
            &s,
            "/",
            &[("query", "callback"), ("match", "body")]
        ))
        .len(),
        2,
        "all-words recall stays on exact words"
    );
}

#[test]
fn sha256_fetch_and_lookup_follow_writes_without_a_walk() {
    let s = store();
    assert!(targets(&lookup(&s, "/", &[("query", "heron")])).is_empty());
    let body = "# Heron\n\nA heron landed.\n";
    ok(&s.publish("/birds/heron.md", body));
    assert_eq!(
        targets(&lookup(&s, "/", &[("query", "heron"), ("match", "body")])),
        ["/birds/heron.md#heron"],
        "a write is indexed at once"
    );
    let hash = hex::encode(sha2::Sha256::digest(body.as_bytes()));
    let fetched = s.handle(Request::new(Verb::Fetch, format!("/sha256-{hash}")));
    assert_eq!(fetched.status, Status::Ok);
    assert_eq!(fetched.text().unwrap(), body);
    ok(&s.publish("/birds/heron.md", "# Heron\n\nGone now.\n"));
    assert_eq!(
        s.handle(Request::new(Verb::Fetch, format!("/sha256-{hash}")))
            .status,
        Status::NotFound
    );
}

#[test]
fn a_nested_section_s_row_names_the_headings_above_it() {
    let s = Store::new();
    let roadmap = "---\ntitle: Roadmap\n---\n# Roadmap\n\n## Phase 1 — Parser\n\n### Status\n\nDone in March.\n\n## Phase 2 — Replay\n\n### Status\n\nCurrent phase since May.\n";
    ok(&s.publish_at("/roadmap.md", roadmap, None, at(0)));
    let t = table(&lookup(&s, "/", &[("query", "current"), ("match", "body")]));
    let titles: Vec<&str> = t.rows.iter().map(|r| r.title.as_str()).collect();
    // Which `Status` it is, without the document's title twice.
    assert_eq!(titles, ["Roadmap › Phase 2 — Replay › Status"]);
    let t = table(&lookup(&s, "/", &[("query", "replay"), ("match", "body")]));
    assert_eq!(t.rows[0].title, "Roadmap › Phase 2 — Replay");
}

const PIER: &str = "# Pier\n\nPier is the deploy agent.\n";
const HOSTS: &str = "# Hosts\n\nHosts take their deploy work from a queue.\n";

/// #13: asked `columns: lacks`, each row of an any-word LOOKUP names the
/// query words it does not hold (a `Lacks` column); not asked, the table
/// is the one every client knows.
#[test]
fn any_word_rows_name_the_words_they_lack_when_asked() {
    let s = Store::new();
    ok(&s.publish("/pier.md", PIER));
    ok(&s.publish("/hosts.md", HOSTS));
    let ask = |extra: &[(&str, &str)]| {
        let mut meta = vec![
            ("query", "pier deploy work"),
            ("match", "body"),
            ("terms", "any"),
        ];
        meta.extend_from_slice(extra);
        lookup(&s, "/", &meta)
    };
    let plain = ask(&[]);
    assert_eq!(plain.meta("columns"), None);
    assert!(!table(&plain).lacks_column);
    assert!(!String::from_utf8_lossy(&plain.body).contains("Lacks"));
    let r = ask(&[("columns", "lacks")]);
    assert_eq!(r.meta("columns"), Some("lacks"), "echoed");
    let t = table(&r);
    assert!(t.lacks_column);
    let mut lacks: Vec<(String, Vec<String>)> = t
        .rows
        .iter()
        .map(|row| (row.target(), row.lacks.clone()))
        .collect();
    lacks.sort();
    assert_eq!(
        lacks,
        [
            ("/hosts.md#hosts".to_string(), vec!["pier".to_string()]),
            ("/pier.md#pier".to_string(), vec!["work".to_string()]),
        ]
    );
    // All-words rows hold every word: the column is there, empty.
    let all = lookup(
        &s,
        "/",
        &[("query", "deploy"), ("match", "body"), ("columns", "lacks")],
    );
    assert!(table(&all).rows.iter().all(|row| row.lacks.is_empty()));
    let bad = lookup(&s, "/", &[("query", "pier"), ("columns", "score")]);
    assert_eq!(bad.status, Status::BadRequest);
    assert!(
        bad.error_message().contains("`columns: score`"),
        "{}",
        bad.error_message()
    );
}

/// #13: asked `columns: bytes`, each row says how many bytes its path
/// fetches: a section with its subsections, a document whole.
#[test]
fn rows_size_what_they_fetch_when_asked() {
    let s = Store::new();
    let roadmap = "# Roadmap\n\nIntro.\n\n## Phase 1\n\nDone.\n\n### Notes\n\nReplay.\n\n## Phase 2\n\nNext.\n";
    ok(&s.publish("/roadmap.md", roadmap));
    let r = lookup(
        &s,
        "/",
        &[
            ("query", "phase replay"),
            ("match", "body"),
            ("terms", "any"),
            ("columns", "bytes, lacks"),
        ],
    );
    assert_eq!(r.meta("columns"), Some("bytes, lacks"), "echoed");
    let t = table(&r);
    assert!(t.bytes_column && t.lacks_column);
    let size = |anchor: &str| {
        t.rows
            .iter()
            .find(|row| row.anchor.as_deref() == Some(anchor))
            .and_then(|row| row.bytes)
    };
    let phase_1 =
        &roadmap[roadmap.find("## Phase 1").unwrap()..roadmap.find("## Phase 2").unwrap()];
    assert_eq!(
        size("phase-1"),
        Some(phase_1.len() as u64),
        "subsections included"
    );
    assert_eq!(size("phase-2"), Some("## Phase 2\n\nNext.\n".len() as u64));
    let catalog = lookup(&s, "/", &[("query", "roadmap"), ("columns", "bytes")]);
    assert_eq!(table(&catalog).rows[0].bytes, Some(roadmap.len() as u64));
    let plain = lookup(&s, "/", &[("query", "roadmap")]);
    assert!(!table(&plain).bytes_column);
    assert!(table(&plain).rows.iter().all(|row| row.bytes.is_none()));
}

/// #13: the index a client builds from documents it fetched answers as
/// the engine does over the same documents (one parser, index and ranking).
#[test]
fn a_document_index_answers_as_the_engine_does() {
    let s = store();
    ok(&s.publish("/pier.md", PIER));
    ok(&s.publish("/hosts.md", HOSTS));
    let mut index = mark_store::lookup::DocumentIndex::new();
    for path in [
        "/guide/rust.md",
        "/notes/quic.md",
        "/notes/misc.md",
        "/pier.md",
        "/hosts.md",
    ] {
        let fetched = s.fetch(path);
        index
            .insert(path, &fetched.body, fetched.meta("modified"))
            .unwrap();
    }
    assert_eq!(index.len(), 5);
    let queries: [&[(&str, &str)]; 5] = [
        &[("query", "rust")],
        &[
            ("query", "quic rust"),
            ("match", "body"),
            ("terms", "any"),
            ("columns", "lacks"),
        ],
        &[("query", "*"), ("filter", "tag=network")],
        &[
            ("query", "deploy"),
            ("match", "body"),
            ("filter", "modified-after=2000-01-01"),
        ],
        &[("query", "work"), ("match", "body")],
    ];
    for (scope, meta) in ["/", "/notes"]
        .iter()
        .flat_map(|s| queries.iter().map(move |q| (*s, *q)))
    {
        let mut req = Request::new(Verb::Lookup, scope);
        for (k, v) in meta {
            req = req.with_meta(*k, *v);
        }
        let engine = s.handle(req.clone());
        let client = index.lookup(&req);
        assert_eq!(
            (
                client.status,
                &client.metadata,
                String::from_utf8_lossy(&client.body)
            ),
            (
                engine.status,
                &engine.metadata,
                String::from_utf8_lossy(&engine.body)
            ),
            "{scope} {meta:?}"
        );
    }
    // Replaced and removed documents are found by their new text, or not at all.
    index
        .insert("/pier.md", b"# Pier\n\nPier is gone.\n", None)
        .unwrap();
    let deploy = Request::new(Verb::Lookup, "/")
        .with_meta("query", "deploy")
        .with_meta("match", "body");
    assert_eq!(targets(&index.lookup(&deploy)), ["/hosts.md#hosts"]);
    index.remove("/hosts.md").unwrap();
    assert!(targets(&index.lookup(&deploy)).is_empty());
    assert!(!index.contains("/hosts.md") && index.contains("/pier.md"));
    let bad = index.lookup(&Request::new(Verb::Lookup, "/").with_meta("query", "a"));
    assert_eq!(bad.status, Status::BadRequest);
}

/// #16: frontmatter and inline tags count for `tag=` (a parent takes its
/// nested tags) and for the catalog; aliases are searched as names.
#[test]
fn inline_and_nested_tags_filter_and_aliases_are_searched_as_names() {
    let s = store();
    ok(&s.publish(
        "/vault/home.md",
        "---\naliases: [Front page]\ntags: [start]\n---\n# Home\n\nPlans: #project/alpha and #reading; `#not-a-tag` is code.\n",
    ));
    ok(&s.publish(
        "/vault/alpha.md",
        "---\ntags: [project/alpha]\n---\n# Alpha\n\nText.\n",
    ));
    ok(&s.publish("/vault/other.md", "# Other\n\nAbout #projects only.\n"));
    let tagged = |tag: &str| {
        let filter = format!("tag={tag}");
        targets(&lookup(
            &s,
            "/vault/",
            &[("query", "*"), ("filter", filter.as_str())],
        ))
    };
    assert_eq!(tagged("project"), ["/vault/alpha.md", "/vault/home.md"]);
    assert_eq!(
        tagged("Project/Alpha"),
        ["/vault/alpha.md", "/vault/home.md"]
    );
    assert_eq!(tagged("reading"), ["/vault/home.md"]);
    assert_eq!(tagged("start"), ["/vault/home.md"]);
    assert!(tagged("not-a-tag").is_empty(), "code holds no tag");
    assert!(tagged("alpha").is_empty(), "a child is not its parent");
    let home = table(&lookup(&s, "/vault/", &[("query", "reading")]));
    assert_eq!(
        home.rows[0].target(),
        "/vault/home.md",
        "an inline tag is a catalog word"
    );
    assert_eq!(home.rows[0].tags, ["start", "project/alpha", "reading"]);
    assert_eq!(
        targets(&lookup(&s, "/", &[("query", "front page")])),
        ["/vault/home.md"],
        "an alias is found as the note's name"
    );
}

/// Index folders under `cache` (one per store whose index is persisted).
fn index_folders(cache: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(cache)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[test]
fn an_index_over_its_ram_bytes_is_persisted_and_finds_the_same_rows() {
    let queries: [&[(&str, &str)]; 4] = [
        &[("query", "rust")],
        &[("query", "quic transport"), ("match", "body")],
        &[
            ("query", "ownership async"),
            ("match", "body"),
            ("terms", "any"),
        ],
        &[("query", "*"), ("match", "body")],
    ];
    let answers = |s: &Store| -> Vec<(Vec<String>, Option<String>)> {
        queries
            .iter()
            .map(|q| {
                let r = lookup(s, "/", q);
                let snippets = table(&r)
                    .rows
                    .iter()
                    .map(|r| r.snippet.clone().unwrap_or_default())
                    .collect();
                (snippets, r.meta("total").map(str::to_string))
            })
            .chain(queries.iter().map(|q| (targets(&lookup(s, "/", q)), None)))
            .collect()
    };
    let in_ram = answers(&store());
    let cache = tempfile::tempdir().unwrap();
    let storage = |ram_bytes| {
        Some(mark_store::lookup::IndexStorage {
            folder: cache.path().to_path_buf(),
            ram_bytes,
        })
    };

    // Over the bound from the start: on disk, the same rows and counts.
    let s = store();
    s.engine.set_index_storage(storage(100));
    assert_eq!(answers(&s), in_ram);
    let folders = index_folders(cache.path());
    assert_eq!(folders.len(), 1, "{folders:?}");
    assert!(std::fs::read_dir(&folders[0]).unwrap().count() > 2);
    drop(s);
    assert_eq!(
        index_folders(cache.path()),
        folders,
        "kept for the next process"
    );

    // Crossing the bound by a write: moved, and the write is found too.
    let s = store();
    s.engine.set_index_storage(storage(1_000));
    assert_eq!(answers(&s), in_ram);
    assert_eq!(index_folders(cache.path()).len(), 1, "still in RAM");
    let heron = format!(
        "# Heron\n\nA heron landed.\n{}",
        "Grey feathers.\n".repeat(40)
    );
    ok(&s.publish("/birds/heron.md", &heron));
    assert_eq!(
        targets(&lookup(&s, "/", &[("query", "heron"), ("match", "body")])),
        ["/birds/heron.md#heron"]
    );
    assert_eq!(
        index_folders(cache.path()).len(),
        2,
        "moved to a folder of its own"
    );
    assert_eq!(
        targets(&lookup(
            &s,
            "/",
            &[("query", "quic transport"), ("match", "body")]
        )),
        in_ram[5].0
    );
}

/// Only the rows within the limit are put in order: every limit gives the
/// first rows of the whole ranking (ties by path then anchor, many of them
/// here), with the same `total`.
#[test]
fn every_limit_gives_the_first_rows_of_the_whole_ranking() {
    let s = Store::new();
    for d in 0..12 {
        let importance = ["0.2", "0.5", "0.9"][d % 3];
        let body = format!(
            "---\nimportance: {importance}\n---\n# Tide {d}\n\nTide tables.\n\n## Harbour\n\nThe harbour tide.\n\n## Notes\n\nTide{}\n",
            " again".repeat(d % 4)
        );
        ok(&s.publish(&format!("/t/{:02}.md", (d * 7) % 12), &body));
    }
    for q in [
        &[
            ("query", "tide harbour"),
            ("match", "body"),
            ("terms", "any"),
        ][..],
        &[("query", "tide")][..],
        &[("query", "*"), ("match", "body")][..],
    ] {
        let mut all = q.to_vec();
        all.push(("limit", "1000"));
        let whole = lookup(&s, "/", &all);
        let whole_rows = targets(&whole);
        assert!(whole_rows.len() > 10, "{whole_rows:?}");
        for limit in [1, 2, 5, 9, whole_rows.len() - 1] {
            let l = limit.to_string();
            let mut some = q.to_vec();
            some.push(("limit", &l));
            let r = lookup(&s, "/", &some);
            assert_eq!(targets(&r), whole_rows[..limit], "{q:?} limit {limit}");
            assert_eq!(r.meta("total"), whole.meta("total"), "{q:?}");
        }
    }
}

/// A small deterministic generator, so the edits are many and varied but
/// the same on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

const WORDS: [&str; 16] = [
    "harbour",
    "tide",
    "pier",
    "deploy",
    "ledger",
    "estuary",
    "gateway",
    "beacon",
    "callback",
    "ferry",
    "current",
    "phase",
    "driftwood",
    "lantern",
    "buoy",
    "anchor",
];

fn generated_note(rng: &mut Lcg, n: usize) -> String {
    let mut out = format!("# Note {n} {}\n\n", WORDS[rng.next(WORDS.len())]);
    for s in 0..1 + rng.next(3) {
        out.push_str(&format!("## {} {s}\n\n", WORDS[rng.next(WORDS.len())]));
        for _ in 0..3 + rng.next(25) {
            out.push_str(WORDS[rng.next(WORDS.len())]);
            out.push(' ');
        }
        if rng.next(3) == 0 {
            out.push_str(&format!(
                "\n\nSee [the note](/n{}.md#{}-0).",
                rng.next(40),
                WORDS[rng.next(WORDS.len())]
            ));
        }
        out.push_str("\n\n");
    }
    out
}

/// #7: the ranking after many edits and deletions is exactly a fresh
/// build's of the final state: the same response, byte for byte, for
/// all-words, any-word and body lookups (tantivy counts deleted entries in
/// its statistics until a merge; the index counts only live ones).
#[test]
fn an_edited_index_ranks_exactly_as_a_fresh_build_of_the_same_documents() {
    let mut rng = Lcg(7);
    let mut edited = mark_store::lookup::DocumentIndex::new();
    let mut current: std::collections::BTreeMap<String, String> = Default::default();
    for n in 0..40 {
        let path = format!("/n{n}.md");
        let body = generated_note(&mut rng, n);
        edited.insert(&path, body.as_bytes(), None).unwrap();
        current.insert(path, body);
    }
    // Searched between edits, so deletions land in committed segments.
    let probe = Request::new(Verb::Lookup, "/").with_meta("query", "harbour");
    for round in 0..6 {
        for _ in 0..25 {
            let n = rng.next(50);
            let path = format!("/n{n}.md");
            if rng.next(5) == 0 {
                edited.remove(&path).unwrap();
                current.remove(&path);
            } else {
                let body = generated_note(&mut rng, n + round * 100);
                edited.insert(&path, body.as_bytes(), None).unwrap();
                current.insert(path, body);
            }
        }
        assert_eq!(edited.lookup(&probe).status, Status::Ok);
    }
    let mut fresh = mark_store::lookup::DocumentIndex::new();
    // In another order than the edits left them.
    for (path, body) in current.iter().rev() {
        fresh.insert(path, body.as_bytes(), None).unwrap();
    }
    let queries: Vec<Vec<(&str, &str)>> = vec![
        vec![("query", "harbour tide")],
        vec![
            ("query", "harbour tide pier"),
            ("terms", "any"),
            ("limit", "50"),
        ],
        vec![
            ("query", "deploy ledger estuary"),
            ("terms", "any"),
            ("limit", "50"),
        ],
        vec![("query", "callback"), ("match", "body"), ("limit", "50")],
        vec![
            ("query", "lantern buoy anchor ferry"),
            ("terms", "any"),
            ("match", "body"),
            ("limit", "50"),
            ("columns", "lacks"),
        ],
        vec![("query", "note beacon"), ("limit", "50")],
    ];
    for meta in queries {
        let mut request = Request::new(Verb::Lookup, "/");
        for (k, v) in &meta {
            request = request.with_meta(*k, *v);
        }
        let (a, b) = (edited.lookup(&request), fresh.lookup(&request));
        assert_eq!(a.status, Status::Ok, "{meta:?}");
        assert!(a.meta("matches").is_some_and(|m| m != "0"), "{meta:?}");
        assert_eq!(
            String::from_utf8_lossy(&a.encode().unwrap()),
            String::from_utf8_lossy(&b.encode().unwrap()),
            "{meta:?}"
        );
    }
}
