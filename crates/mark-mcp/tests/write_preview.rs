//! Writes a person approves (#18.2), over the real binaries: without
//! `apply` a write is a preview (a unified diff, nothing written), checked
//! against a real `mark-server`'s version chain and request log; apply writes
//! exactly what was previewed; a write by someone else in between makes the
//! apply a conflict; the diff of a 1 MB document stays bounded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use similar::TextDiff;
use std::process::{Command, Stdio};
use support::{Mcp, PublishingServer, Reply, kb};

/// The versions `mark_versions` lists for `url`.
async fn versions(mcp: &Mcp, url: &str) -> Vec<String> {
    let r = mcp.call("mark_versions", json!({ "url": url })).await;
    r.body()
        .lines()
        .filter(|l| l.starts_with("- v"))
        .map(str::to_string)
        .collect()
}

/// The diff a preview should show: `similar`'s unified diff of the two bodies.
fn expected_diff(path: &str, from: u64, old: &str, new: &str) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("{path} v{from}"), &format!("{path} v{}", from + 1))
        .to_string()
}

fn version_field(r: &Reply, key: &str) -> u64 {
    r.field(key).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_never_writes_and_apply_writes_exactly_what_it_showed() {
    let publishing = PublishingServer::start(&kb());
    let server = &publishing.server;
    let mcp = Mcp::start(&publishing.writer_args(&["--fresh-for", "0s"])).await;
    let v1 = mcp
        .call("mark_fetch", json!({"url": "/small.md", "mode": "full"}))
        .await
        .body()
        .to_string();
    let before = versions(&mcp, "/small.md").await;
    let changed = v1.replace("leaves at nine", "leaves at half past nine");

    // Previews of all three writes: success, nothing sent, nothing written.
    let preview = mcp
        .call(
            "mark_publish",
            json!({"url": "/small.md", "body": changed, "expected_version": 1}),
        )
        .await;
    assert!(!preview.is_error, "{}", preview.text);
    assert_eq!(preview.status(), "preview");
    assert_eq!(version_field(&preview, "against-version"), 1);
    assert_eq!(version_field(&preview, "creates-version"), 2);
    assert_eq!(preview.field("changes"), Some("+1 -1 lines"));
    assert!(
        preview
            .field("note")
            .unwrap()
            .contains("expected_version: 1")
    );
    assert_eq!(
        preview.body(),
        expected_diff("/small.md", 1, &v1, &changed),
        "the previewed diff"
    );
    let append = mcp
        .call(
            "mark_append",
            json!({"url": "/small.md", "body": "Late ferries run in summer.\n"}),
        )
        .await;
    assert_eq!((append.status(), append.is_error), ("preview", false));
    assert!(append.field("note").unwrap().contains("not idempotent"));
    assert!(append.body().contains("+Late ferries run in summer."));
    let archive = mcp
        .call("mark_archive", json!({"url": "/notes/crew.md"}))
        .await;
    assert_eq!((archive.status(), archive.is_error), ("preview", false));
    assert!(
        archive
            .field("note")
            .unwrap()
            .contains("no expected_version")
    );
    let same = mcp
        .call(
            "mark_publish",
            json!({"url": "/small.md", "body": v1, "expected_version": 1}),
        )
        .await;
    assert_eq!(
        (same.status(), same.field("outcome")),
        ("preview", Some("no change"))
    );
    assert!(same.body().contains("writes no new version"));

    assert_eq!(versions(&mcp, "/small.md").await, before);
    assert_eq!(
        mcp.fetch("/notes/crew.md").await.status(),
        "ok",
        "not archived"
    );
    let writes = server
        .requests_seen()
        .into_iter()
        .filter(|r| ["PUBLISH", "APPEND", "ARCHIVE"].contains(&r.verb.as_str()))
        .count();
    assert_eq!(writes, 0, "a preview sends no write");

    // Apply: the same parameters plus apply, with the preview's version.
    let applied = mcp
        .call(
            "mark_publish",
            json!({"url": "/small.md", "body": changed, "expected_version": 1, "apply": true}),
        )
        .await;
    applied.assert_created("2");
    let v1_again = mcp.fetch("/small.md/v1").await.body().to_string();
    let v2 = mcp.fetch("/small.md/v2").await.body().to_string();
    assert_eq!(v2, changed);
    assert_eq!(
        preview.body(),
        expected_diff("/small.md", 1, &v1_again, &v2)
    );
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_writer_between_preview_and_apply_makes_apply_a_conflict() {
    let publishing = PublishingServer::start(&kb());
    let a = Mcp::start(&publishing.writer_args(&["--fresh-for", "0s"])).await;
    let b = Mcp::start(&publishing.writer_args(&["--fresh-for", "0s"])).await;
    let body = "# Small Notes\n\nA's version.\n";
    let preview = a
        .call(
            "mark_publish",
            json!({"url": "/small.md", "body": body, "expected_version": 1}),
        )
        .await;
    assert_eq!(preview.status(), "preview", "{}", preview.text);
    let against = version_field(&preview, "against-version");

    b.publish("/small.md", "# Small Notes\n\nB's version.\n", 1)
        .await
        .assert_created("2");

    let r = a
        .call(
            "mark_publish",
            json!({"url": "/small.md", "body": body, "expected_version": against, "apply": true}),
        )
        .await;
    assert!(r.is_error && r.status() == "conflict", "{}", r.text);
    assert_eq!(
        (r.field("your-version"), r.field("server-version")),
        (Some("1"), Some("2"))
    );
    assert!(r.body().contains("expected_version 2"), "{}", r.text);
    // A new preview from A is the same conflict, before anything is sent.
    let again = a
        .call(
            "mark_publish",
            json!({"url": "/small.md", "body": body, "expected_version": against}),
        )
        .await;
    assert_eq!(
        (again.status(), again.is_error, again.body()),
        (r.status(), true, r.body())
    );
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn previews_fail_where_the_write_would() {
    // A plain folder is read-only: the preview is the write's refusal.
    let root = kb().display().to_string();
    let plain = Mcp::start(&["--root", root.as_str(), "--write"]).await;
    let r = plain
        .call("mark_archive", json!({"url": "/small.md"}))
        .await;
    assert!(r.is_error && r.status() == "not-permitted", "{}", r.text);
    plain.stop().await;

    let store = mark_testkit::import_store(&kb()).unwrap();
    let root = store.path().display().to_string();
    let mcp = Mcp::start(&["--root", root.as_str(), "--write", "--fresh-for", "0s"]).await;
    let too_big = "x".repeat(mark_store::DEFAULT_MAX_DOCUMENT_BYTES + 1);
    let r = mcp
        .call(
            "mark_publish",
            json!({"url": "/small.md", "body": too_big, "expected_version": 1}),
        )
        .await;
    assert!(r.is_error && r.status() == "too-large", "{}", r.text);
    let r = mcp
        .call(
            "mark_append",
            json!({"url": "/small.md", "body": "more", "expected_version": 7}),
        )
        .await;
    assert!(r.is_error && r.status() == "conflict", "{}", r.text);
    assert!(r.body().contains("append is not idempotent"), "{}", r.text);
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_diff_of_a_1_mb_document_stays_within_the_result_bound() {
    let src = tempfile::tempdir().unwrap();
    let line = |i: usize, word: &str| {
        format!("Line {i:06} of the {word} register, kept for the harbour.\n")
    };
    let old: String = (0..18_000).map(|i| line(i, "old")).collect();
    assert!(old.len() > 900_000 && old.len() < mark_store::DEFAULT_MAX_DOCUMENT_BYTES);
    std::fs::write(src.path().join("big.md"), format!("# Big\n\n{old}")).unwrap();
    let store = mark_testkit::import_store(src.path()).unwrap();
    let root = store.path().display().to_string();
    let new: String = format!(
        "# Big\n\n{}",
        (0..18_000).map(|i| line(i, "new")).collect::<String>()
    );

    let mcp = Mcp::start(&["--root", root.as_str(), "--write"]).await;
    let r = mcp
        .call(
            "mark_publish",
            json!({"url": "/big.md", "body": new, "expected_version": 1}),
        )
        .await;
    assert_eq!(
        (r.status(), r.is_error),
        ("preview", false),
        "{}",
        r.field("note").unwrap_or("")
    );
    assert!(r.text.len() < 48_000, "{} bytes", r.text.len());
    assert_eq!(r.field("changes"), Some("+18000 -18000 lines"));
    assert!(
        r.body().contains("more diff lines not shown"),
        "names what it left out"
    );
    mcp.stop().await;
}

#[test]
fn the_cli_previews_unless_apply_and_json_gives_the_diff_as_a_field() {
    let store = mark_testkit::import_store(&kb()).unwrap();
    let root = store.path().display().to_string();
    let run = |args: &[&str]| {
        let out = Command::new(support::bin())
            .env("XDG_CACHE_HOME", support::cache_home())
            .args(args)
            .env_remove("MARK_TOKEN")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (String::from_utf8(out.stdout).unwrap(), out.status.code())
    };
    let publish = |extra: &[&str]| {
        let mut args = vec![
            "--root",
            root.as_str(),
            "--write",
            "--json",
            "publish",
            "/small.md",
        ];
        args.extend_from_slice(&[
            "--body",
            "# Small Notes\n\nShort now.\n",
            "--expected-version",
            "1",
        ]);
        args.extend_from_slice(extra);
        run(&args)
    };
    let (out, code) = publish(&[]);
    assert_eq!(code, Some(0), "a preview is a success: {out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["status"], "preview");
    assert_eq!(v["outcome"], "would create v2");
    assert!(v["diff"].as_str().unwrap().contains("+Short now."), "{v}");
    assert!(v.get("text").is_none());
    let (out, code) = publish(&["--apply"]);
    assert_eq!(code, Some(0), "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["status"].as_str(), v["version"].as_str()),
        (Some("created"), Some("2"))
    );
    // The same preview again is now a conflict: exit 1.
    let (out, code) = publish(&[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("conflict"), "{out}");
}

/// #28.3: the append preview joins as the server writes (demarkus' rule,
/// mark-server's too: a line end only where the body lacks one), so the
/// diff approved is the diff applied, for a body ending with a line end
/// and for one without.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_preview_is_exactly_what_the_server_appends() {
    let publishing = PublishingServer::start(&kb());
    let server = &publishing.server;
    let mcp = Mcp::start(&publishing.writer_args(&["--fresh-for", "0s"])).await;
    mcp.publish("/plain.md", "# Ap\n\nText.", 0)
        .await
        .assert_created("1");
    // The bodies as the server holds them, byte for byte.
    let client = mark_client::Client::new(mark_client::ClientConfig {
        trust: mark_client::Trust::Pin(server.fingerprint),
        ..Default::default()
    })
    .unwrap();
    let raw = |path: String| {
        let client = client.clone();
        async move {
            let req = mark_proto::Request::new(mark_proto::Verb::Fetch, path);
            let resp = client.request("127.0.0.1", server.addr.port(), req).await;
            String::from_utf8(resp.unwrap().body).unwrap()
        }
    };
    for (url, joined) in [
        ("/small.md", "Tickets are sold on board.\n- x"),
        ("/plain.md", "# Ap\n\nText.\n- x"),
    ] {
        let before = raw(format!("{url}/v1")).await;
        let preview = mcp
            .call("mark_append", json!({"url": url, "body": "- x"}))
            .await;
        assert_eq!(preview.status(), "preview", "{}", preview.text);
        mcp.call(
            "mark_append",
            json!({"url": url, "body": "- x", "expected_version": 1, "apply": true}),
        )
        .await
        .assert_created("2");
        let after = raw(format!("{url}/v2")).await;
        assert!(after.ends_with(joined), "{after:?}");
        assert_eq!(
            preview.body(),
            expected_diff(url, 1, &before, &after),
            "{url}"
        );
    }
    mcp.stop().await;
}

/// #28.4: the archive preview says what the server in use does with its
/// listings: mark-server (it pages LIST) leaves an archived document out;
/// a server that does not page LIST (demarkus, replayed by
/// `--unpaged-list`) keeps listing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_archive_preview_says_what_the_server_does_with_listings() {
    let (_paged, paged) = support::serve_copy_of::<&str>(&kb(), &[]);
    let (_unpaged, unpaged) = support::serve_copy_of(&kb(), &["--unpaged-list"]);
    for (server, says) in [(&paged, "would leave"), (&unpaged, "would stay in")] {
        let mcp = Mcp::start(&server.reader_args(&["--write"])).await;
        let r = mcp
            .call("mark_archive", json!({"url": "/notes/crew.md"}))
            .await;
        assert_eq!(r.status(), "preview", "{}", r.text);
        let wanted = format!("/notes/crew.md {says} the listing of /notes/");
        assert!(r.body().contains(&wanted), "{}", r.text);
        mcp.stop().await;
    }
}
