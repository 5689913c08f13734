//! End to end over `--host`: the real `mark-mcp` binary reading a real
//! `mark-server` on 127.0.0.1 (pinned certificate), counting the server's
//! requests from its log to prove what the session cache saves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use mark_testkit::MarkServerProcess;
use serde_json::json;
use std::time::Duration;
use support::{Mcp, PublishingServer, fetch_statuses, kb};

const WAIT: Duration = Duration::from_secs(5);

/// Waits until the server logged a `FETCH /index.md` beyond `seen` (a
/// sentinel: requests of one session arrive in order, so everything sent
/// before it is in the log too).
async fn sync_log(mcp: &Mcp, server: &MarkServerProcess, seen: &mut usize) {
    mcp.call("mark_fetch", json!({"url": "/index.md", "force": true}))
        .await;
    *seen += 1;
    assert_eq!(
        server.wait_for_requests("FETCH", "/index.md", *seen, WAIT),
        *seen
    );
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
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("pier.md"),
        "# Pier\n\nPier is the deploy agent.\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("hosts.md"),
        "# Hosts\n\nHosts take their deploy work from a queue.\n",
    )
    .unwrap();
    let server = MarkServerProcess::start(dir.path(), &["--flat", "--all-words-lookup"]).unwrap();
    let mcp = Mcp::start(&server.reader_args(&[])).await;
    let r = mcp
        .call(
            "mark_lookup",
            json!({"query": "pier deploy work", "match": "body", "read": 0}),
        )
        .await;
    assert_eq!(
        (r.status(), r.field("match"), r.field("matches")),
        ("ok", Some("body"), Some("2 of 2")),
        "{}",
        r.text
    );
    let rows: Vec<&str> = r.body().lines().filter(|l| l.starts_with('/')).collect();
    for row in [
        "/hosts.md#hosts · Hosts › Hosts · lacks: pier · Hosts take",
        "/pier.md#pier · Pier › Pier · lacks: work · Pier is",
    ] {
        assert!(rows.iter().any(|r| r.starts_with(row)), "{row}: {}", r.text);
    }
    // One LOOKUP answered all-words, then one per word.
    assert_eq!(server.wait_for_requests("LOOKUP", "/", 4, WAIT), 4);
    mcp.stop().await;
}
