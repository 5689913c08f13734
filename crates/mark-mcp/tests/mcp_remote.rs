//! End to end over `--host`: the real `mark-mcp` binary reading a real
//! `mark-server` on 127.0.0.1 (pinned certificate), counting the server's
//! requests from its log to prove what the session cache saves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use mark_testkit::MarkServerProcess;
use serde_json::json;
use std::time::Duration;
use support::{
    Mcp, PIER_QUERY, PublishingServer, assert_nothing_found, fetch_statuses, kb, pier_and_hosts,
};

const WAIT: Duration = Duration::from_secs(5);

/// Waits until the server logged a `FETCH /index.md` beyond `seen` (a
/// sentinel: requests of one session arrive in order, so everything sent
/// before it is in the log too).
async fn sync_log(mcp: &Mcp, server: &MarkServerProcess, seen: &mut usize) {
    sync_log_at(mcp, server, "/index.md", seen).await;
}

/// [`sync_log`] with the sentinel FETCH of `path` (one no crawl reads).
async fn sync_log_at(mcp: &Mcp, server: &MarkServerProcess, path: &str, seen: &mut usize) {
    mcp.call("mark_fetch", json!({"url": path, "force": true}))
        .await;
    *seen += 1;
    assert_eq!(server.wait_for_requests("FETCH", path, *seen, WAIT), *seen);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_cache_dedup_and_writes() {
    let publishing = PublishingServer::start(&kb());
    let server = &publishing.server;
    let host = server.url();

    // Session A: writes allowed, a long freshness window.
    let a = Mcp::start(&publishing.writer_args(&["--fresh-for", "1h"])).await;
    let mut sentinel = 0;
    let r = a.fetch(&format!("{host}/small.md")).await;
    r.assert_full();
    assert_eq!(r.field("version"), Some("1"));
    // Within --fresh-for: a section (held by the body read), a repeat and
    // an outline cost no request.
    assert_eq!(a.fetch("/small.md#beta").await.status(), "unchanged");
    assert_eq!(a.fetch("/small.md").await.status(), "unchanged");
    assert_eq!(a.fetch("/large.md").await.field("mode"), Some("outline"));
    assert!(
        a.fetch("/large.md#pilots")
            .await
            .body()
            .starts_with("## Pilots")
    );
    sync_log(&a, server, &mut sentinel).await;
    assert_eq!(server.count_requests("FETCH", "/small.md"), 1);
    assert_eq!(server.count_requests("FETCH", "/large.md"), 1);

    // Writes: a conflict names both versions and what to do next.
    let changed = std::fs::read_to_string(kb().join("small.md"))
        .unwrap()
        .replace(
            "The second ferry leaves at nine.",
            "The second ferry leaves at half past nine.",
        )
        + "## Delta\n\nA new pier opens in May.\n";
    let r = a.publish("/small.md", &changed, 5).await;
    assert!(r.is_error && r.status() == "conflict", "{}", r.text);
    assert!(
        r.body().contains("v5")
            && r.body().contains("v1")
            && r.body().contains("expected_version 1"),
        "{}",
        r.text
    );
    a.publish("/small.md", &changed, 1)
        .await
        .assert_created("2");

    // The changed document comes with the version step and which sections changed.
    let r = a.fetch("/small.md").await;
    assert_eq!(r.field("mode"), Some("full"), "{}", r.text);
    assert_eq!(
        r.field("note"),
        Some("changed since your last read (v1 -> v2); sections changed: #beta; added: #delta")
    );
    assert!(r.body().contains("half past nine"));
    assert_eq!(a.fetch("/small.md").await.status(), "unchanged");

    // Append resolves the current version itself; versions lists the chain.
    let r = a
        .call(
            "mark_append",
            json!({"url": "/small.md", "body": "Late ferries run in summer.\n", "apply": true}),
        )
        .await;
    r.assert_created("3");
    let r = a.call("mark_versions", json!({"url": "/small.md"})).await;
    assert_eq!(r.field("current"), Some("3"), "{}", r.text);
    let listed: Vec<&str> = r.body().lines().filter(|l| l.starts_with("- v")).collect();
    assert_eq!(listed.len(), 3);
    assert!(listed[0].starts_with("- v3"));
    let r = a
        .call(
            "mark_archive",
            json!({"url": "/notes/crew.md", "apply": true}),
        )
        .await;
    assert_eq!(r.status(), "ok", "{}", r.text);
    let r = a.fetch("/notes/crew.md").await;
    assert_eq!(r.status(), "archived");
    assert!(r.body().contains("\"/notes/crew.md/vN\""), "{}", r.text);

    // Lookup and list pass through the server.
    let r = a.call("mark_lookup", json!({"query": "harbour"})).await;
    assert!(r.body().contains("/large.md"), "{}", r.text);
    let r = a
        .call("mark_list", json!({"url": format!("{host}/")}))
        .await;
    assert!(r.body().contains("- /large.md"), "{}", r.text);

    // Resources: the template names this server; a read gives one section.
    let templates = a.client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, format!("{host}/{{+path}}"));
    let pilots = a.read(&format!("{host}/large.md#pilots")).await.unwrap();
    assert!(pilots.starts_with("## Pilots") && !pilots.contains("## Tide"));
    a.stop().await;

    // Session B: never validated-fresh, so every read is conditional; and it
    // does not share A's dedup.
    let b = Mcp::start(&server.reader_args(&["--fresh-for", "0s"])).await;
    let before = server.count_requests("FETCH", "/large.md");
    assert_eq!(
        b.fetch("/large.md#pilots").await.field("mode"),
        Some("section")
    );
    assert_eq!(
        b.fetch("/large.md#contacts").await.field("mode"),
        Some("section")
    );
    sync_log(&b, server, &mut sentinel).await;
    let after = fetch_statuses(server, "/large.md");
    assert_eq!(after.len(), before + 2);
    assert_eq!(
        after.last().map(String::as_str),
        Some("not-modified"),
        "{after:?}"
    );
    let r = b.fetch("/small.md").await;
    assert_eq!(
        r.field("mode"),
        Some("full"),
        "a new session starts with no deliveries: {}",
        r.text
    );
    assert_eq!(r.field("version"), Some("3"));
    b.stop().await;
}

/// A server that ranks all-words only (`--all-words-lookup`: `terms` not
/// read, not echoed) finds no section holding every word; mark_lookup asks
/// once per word, concurrently, ranks any-word itself, and a row holding
/// only some of the words says which it lacks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_all_words_server_gets_one_lookup_per_word_ranked_here() {
    let dir = pier_and_hosts();
    let server = MarkServerProcess::start(dir.path(), &["--flat", "--all-words-lookup"]).unwrap();
    let mcp = Mcp::start(&server.reader_args(&[])).await;
    mcp.assert_pier_rows(false).await;
    // One LOOKUP answered all-words, then one per word.
    assert_eq!(server.wait_for_requests("LOOKUP", "/", 4, WAIT), 4);
    // Words that match nothing are named, with what to try.
    let r = mcp.lookup_body("zebra quokka").await;
    assert_nothing_found(&r, "zebra quokka");
    mcp.stop().await;
}

/// #13: rows from a server that ranks any-word itself (our own
/// `mark-server`) say which query words they lack too, and their sizes:
/// mark_lookup asks for the `Bytes` and `Lacks` columns (`columns: bytes,
/// lacks`), in the one LOOKUP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_from_an_any_word_server_say_which_words_they_lack() {
    let dir = pier_and_hosts();
    let server = MarkServerProcess::start(dir.path(), &["--flat"]).unwrap();
    let mcp = Mcp::start(&server.reader_args(&[])).await;
    mcp.assert_pier_rows(true).await;
    let r = mcp
        .call("mark_lookup", json!({"query": "zebra quokka", "read": 0}))
        .await;
    assert_nothing_found(&r, "zebra quokka");
    assert!(
        r.body().contains(", match=body"),
        "catalog mode: {}",
        r.text
    );
    assert_eq!(server.wait_for_requests("LOOKUP", "/", 2, WAIT), 2);
    mcp.stop().await;
}

/// #13, #28: a server without LOOKUP (`--no-lookup`: `server-error` with
/// demarkus' own error body, `\n# Server error\n\nbad request\n`, byte for
/// byte as a demarkus server before LOOKUP answers) is searched
/// here over the documents the session crawled, with mark-store's LOOKUP
/// code: the hits are found, with what they lack; the note says how many
/// documents were searched; a second lookup neither asks the server nor
/// crawls again; words that match nothing are named; and a crawl cut by
/// its bound says the search was partial.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_lookup_is_searched_over_the_crawled_documents() {
    let dir = pier_and_hosts();
    let server = MarkServerProcess::start(dir.path(), &["--flat", "--no-lookup"]).unwrap();
    let mcp = Mcp::start(&server.reader_args(&[])).await;
    let r = mcp.assert_pier_rows(true).await;
    assert_eq!(
        r.field("note"),
        Some(
            "this server has no LOOKUP; searched the 3 documents this session crawled (all it lists)"
        ),
        "{}",
        r.text
    );
    let mut sentinel = 0;
    sync_log_at(&mcp, &server, "/missing.md", &mut sentinel).await;
    let requests = |server: &MarkServerProcess| {
        ["LOOKUP", "LIST", "FETCH"].map(|verb| {
            server
                .requests_seen()
                .iter()
                .filter(|r| r.verb == verb)
                .count()
        })
    };
    let before = requests(&server);
    assert_eq!(before[0], 1, "the server was asked once");
    // A second lookup: no LOOKUP, no crawl; a catalog row by title.
    let r = mcp
        .call("mark_lookup", json!({"query": "hosts", "read": 0}))
        .await;
    assert_eq!(r.field("matches"), Some("1 of 1"), "{}", r.text);
    assert!(
        r.body().starts_with("/hosts.md · Hosts · ~15 tok\n"),
        "{}",
        r.text
    );
    let r = mcp.lookup_body("zebra quokka").await;
    assert_nothing_found(&r, "zebra quokka");
    assert!(
        r.field("note")
            .is_some_and(|n| n.contains("searched the 3 documents")),
        "{}",
        r.text
    );
    sync_log_at(&mcp, &server, "/missing.md", &mut sentinel).await;
    let after = requests(&server);
    assert_eq!(
        (after[0], after[1], after[2]),
        (before[0], before[1], before[2] + 1),
        "one more FETCH, the log sentinel's"
    );
    mcp.stop().await;

    // A crawl stopped at its document bound: the note says what was
    // searched and why it is partial.
    let mcp = Mcp::start(&server.reader_args(&["--crawl-docs", "1"])).await;
    let r = mcp.lookup_body(PIER_QUERY).await;
    assert_eq!(r.status(), "ok", "{}", r.text);
    let note = r.field("note").unwrap_or_default();
    assert!(
        note.starts_with("this server has no LOOKUP; searched the 1 document this session crawled (of ≥3 known): the crawl was partial (crawl stopped: document limit (1) reached), so a hit may be missing"),
        "{}",
        r.text
    );
    mcp.stop().await;
}
