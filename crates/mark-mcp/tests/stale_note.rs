//! The stale-context note end to end: a real `mark-server` (WATCH) or a
//! `--root` folder (file events), a real `mark-mcp` driven by rmcp, and
//! another writer. The next call after a change ends with one line naming
//! what changed; a healthy watch makes cached reads cost no request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use mark_client::{Client, ClientConfig, Trust};
use mark_proto::{Request, Verb};
use serde_json::json;
use std::path::Path;
use std::time::Duration;
use support::{Mcp, PublishingServer, Reply};

const DEPLOY: &str =
    "# Deploy\n\nShip it.\n\n## Rollback\n\nRevert the tag.\n\n## Checks\n\nWatch the graphs.\n";

fn source(dir: &Path) {
    std::fs::create_dir_all(dir.join("ops")).unwrap();
    std::fs::write(dir.join("ops/deploy.md"), DEPLOY).unwrap();
    std::fs::write(dir.join("plan.md"), "# Plan\n\nStep one.\n").unwrap();
}

/// Another writer: its own client publishing with the server's token.
async fn publish_elsewhere(p: &PublishingServer, path: &str, body: &str) {
    let token = std::fs::read_to_string(&p.token_file).unwrap();
    let client = Client::new(ClientConfig {
        trust: Trust::Pin(p.server.fingerprint),
        ..Default::default()
    })
    .unwrap();
    let resp = client
        .request(
            "127.0.0.1",
            p.server.addr.port(),
            Request::new(Verb::Publish, path)
                .with_meta("auth", token.trim())
                .with_body(body),
        )
        .await
        .unwrap();
    assert!(resp.status.is_success(), "{}", resp.error_message());
}

fn note(reply: &Reply) -> Option<&str> {
    reply
        .text
        .lines()
        .rev()
        .find(|l| l.starts_with("changed since you read: "))
}

/// Waits (briefly) until the session's watch is acknowledged.
async fn watch_opened(server: &mark_testkit::MarkServerProcess) {
    for _ in 0..100 {
        if server.count_requests("WATCH", "/") > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the session never opened its watch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_writer_s_publish_reaches_the_next_call_within_a_second_naming_the_section() {
    let src = tempfile::tempdir().unwrap();
    source(src.path());
    let p = PublishingServer::start(src.path());
    let mcp = Mcp::start(&p.server.reader_args(&["--fresh-for", "10m"])).await;
    watch_opened(&p.server).await;
    let first = mcp
        .call("mark_fetch", json!({"url": "/ops/deploy.md#rollback"}))
        .await;
    assert!(first.text.contains("Revert the tag."), "{}", first.text);
    let plan = mcp.fetch("/plan.md").await;
    assert_eq!(note(&plan), None);
    publish_elsewhere(
        &p,
        "/ops/deploy.md",
        &DEPLOY.replace("Revert the tag.", "Revert the tag, then page ops."),
    )
    .await;
    publish_elsewhere(&p, "/plan.md", "# Plan\n\nStep one, then two.\n").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let next = mcp.call("mark_list", json!({"url": "/"})).await;
    assert_eq!(
        note(&next),
        Some(
            "changed since you read: /ops/deploy.md#rollback (v1 → v2), /plan.md#plan (v1 → v2); mark_fetch them again to see"
        ),
        "{}",
        next.text
    );
    // Never repeated for the same change.
    let again = mcp.call("mark_list", json!({"url": "/"})).await;
    assert_eq!(note(&again), None, "{}", again.text);
    // A change to a section the agent never read is not news to it.
    publish_elsewhere(
        &p,
        "/ops/deploy.md",
        &DEPLOY
            .replace("Revert the tag.", "Revert the tag, then page ops.")
            .replace("Watch the graphs.", "Watch the logs."),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let unread = mcp.call("mark_list", json!({"url": "/"})).await;
    assert_eq!(note(&unread), None, "{}", unread.text);
    // And the section is not `unchanged` any more.
    let reread = mcp
        .call("mark_fetch", json!({"url": "/ops/deploy.md#rollback"}))
        .await;
    assert!(reread.text.contains("then page ops"), "{}", reread.text);
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_healthy_watch_a_hundred_cached_reads_send_no_request_and_a_change_still_shows() {
    let src = tempfile::tempdir().unwrap();
    source(src.path());
    let p = PublishingServer::start(src.path());
    // Revalidation would send a FETCH per read after 1 ms.
    let mcp = Mcp::start(&p.server.reader_args(&["--fresh-for", "1ms"])).await;
    watch_opened(&p.server).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    mcp.fetch("/plan.md").await;
    // The server's log line of that FETCH reaches the test a little later.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = p.server.count_requests("FETCH", "/plan.md");
    assert_eq!(before, 1);
    for _ in 0..100 {
        let r = mcp.fetch("/plan.md").await;
        assert_eq!(r.status(), "unchanged", "{}", r.text);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        p.server.count_requests("FETCH", "/plan.md"),
        before,
        "cached reads sent requests"
    );
    publish_elsewhere(&p, "/plan.md", "# Plan\n\nStep one, changed.\n").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let r = mcp.fetch("/plan.md").await;
    assert!(r.text.contains("Step one, changed."), "{}", r.text);
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_s_save_under_root_reaches_the_next_call_within_a_second() {
    let dir = tempfile::tempdir().unwrap();
    source(dir.path());
    let root = dir.path().display().to_string();
    let mcp = Mcp::start(&["--root", &root, "--fresh-for", "10m"]).await;
    let first = mcp.fetch("/ops/deploy.md").await;
    assert!(first.text.contains("Revert the tag."), "{}", first.text);
    std::fs::write(
        dir.path().join("ops/deploy.md"),
        DEPLOY.replace("Watch the graphs.", "Watch the graphs and the logs."),
    )
    .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let next = mcp.call("mark_list", json!({"url": "/"})).await;
    assert_eq!(
        note(&next),
        Some(
            "changed since you read: /ops/deploy.md#checks (changed on disk); mark_fetch them again to see"
        ),
        "{}",
        next.text
    );
    std::fs::remove_file(dir.path().join("ops/deploy.md")).unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let gone = mcp.call("mark_list", json!({"url": "/"})).await;
    assert_eq!(
        note(&gone),
        Some("changed since you read: /ops/deploy.md (deleted); mark_fetch them again to see"),
        "{}",
        gone.text
    );
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_the_session_wrote_itself_is_not_news() {
    let src = tempfile::tempdir().unwrap();
    source(src.path());
    let p = PublishingServer::start(src.path());
    let mcp = Mcp::start(&p.writer_args(&[])).await;
    watch_opened(&p.server).await;
    mcp.fetch("/plan.md").await;
    let wrote = mcp.publish("/plan.md", "# Plan\n\nMine.\n", 1).await;
    wrote.assert_created("2");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let next = mcp.call("mark_list", json!({"url": "/"})).await;
    assert_eq!(note(&next), None, "{}", next.text);
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_before_watch_leaves_a_working_session_that_revalidates() {
    let src = tempfile::tempdir().unwrap();
    source(src.path());
    let store = mark_testkit::import_store(src.path()).unwrap();
    let server = mark_testkit::MarkServerProcess::start(store.path(), &["--no-watch"]).unwrap();
    let mcp = Mcp::start(&server.reader_args(&["--fresh-for", "0s"])).await;
    let first = mcp.fetch("/plan.md").await;
    assert!(first.text.contains("Step one."), "{}", first.text);
    let again = mcp.fetch("/plan.md").await;
    assert_eq!(again.status(), "unchanged", "{}", again.text);
    assert_eq!(note(&again), None);
    // It revalidates: every read after --fresh-for asks again.
    assert!(server.count_requests("FETCH", "/plan.md") >= 2);
    assert_eq!(
        server.count_requests("WATCH", "/"),
        1,
        "asked once, then never again"
    );
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_ends_the_watch_closing_then_resync_and_the_session_watches_again() {
    let src = tempfile::tempdir().unwrap();
    source(src.path());
    let store = mark_testkit::import_store(src.path()).unwrap();
    let secrets = tempfile::tempdir().unwrap();
    let tokens = secrets.path().join("tokens.toml");
    let token = mark_testkit::generate_token(&tokens, "/**", "publish", None).unwrap();
    let cert = mark_testkit::write_test_certificate(secrets.path()).unwrap();
    let mut args = vec!["--tokens".to_string(), tokens.display().to_string()];
    args.extend(cert.server_args());
    let mut server = mark_testkit::MarkServerProcess::start(store.path(), &args).unwrap();
    let mcp = Mcp::start(&server.reader_args(&["--fresh-for", "10m"])).await;
    watch_opened(&server).await;
    mcp.fetch("/plan.md").await;
    // SIGTERM: the watch ends `closing`; the server comes back with a new
    // epoch, so resuming from the old cursor answers `resync`, and the
    // session watches afresh.
    support::signal(&server, "TERM");
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.restart().unwrap();
    let listed = mcp.call("mark_list", json!({"url": "/"})).await;
    assert_eq!(listed.status(), "ok", "{}", listed.text);
    let mut watches = 0;
    for _ in 0..100 {
        watches = server.count_requests("WATCH", "/");
        if watches >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        watches >= 3,
        "the watch did not come back ({watches} WATCH requests)"
    );
    let client = Client::new(ClientConfig {
        trust: Trust::Pin(server.fingerprint),
        ..Default::default()
    })
    .unwrap();
    let resp = client
        .request(
            "127.0.0.1",
            server.addr.port(),
            Request::new(Verb::Publish, "/plan.md")
                .with_meta("auth", &token)
                .with_body("# Plan\n\nStep one, again.\n"),
        )
        .await
        .unwrap();
    assert!(resp.status.is_success());
    tokio::time::sleep(Duration::from_secs(1)).await;
    let next = mcp.call("mark_list", json!({"url": "/"})).await;
    assert_eq!(
        note(&next),
        Some("changed since you read: /plan.md#plan (v1 → v2); mark_fetch them again to see"),
        "{}",
        next.text
    );
    mcp.stop().await;
}

/// A versioned copy of the test source served with a token file holding
/// `read` grants: `everything` on `/**` (which makes every read need a
/// token), `ops` on `/ops/**` only, and `brief` on `/**` expiring in 3 s.
struct Guarded {
    server: mark_testkit::MarkServerProcess,
    secrets: tempfile::TempDir,
    _store: mark_testkit::TempStore,
}

impl Guarded {
    fn start() -> Guarded {
        let src = tempfile::tempdir().unwrap();
        source(src.path());
        let store = mark_testkit::import_store(src.path()).unwrap();
        let secrets = tempfile::tempdir().unwrap();
        let tokens = secrets.path().join("tokens.toml");
        let everything = mark_testkit::generate_token(&tokens, "/**", "read", None).unwrap();
        let ops = mark_testkit::generate_token(&tokens, "/ops/**", "read", None).unwrap();
        let brief = mark_store::generate_token(
            &["/**".to_string()],
            &[mark_store::Op::Read],
            Some(std::time::SystemTime::now() + Duration::from_secs(3)),
            &tokens,
        )
        .unwrap();
        for (name, token) in [("everything", everything), ("ops", ops), ("brief", brief)] {
            std::fs::write(secrets.path().join(name), token).unwrap();
        }
        let server = mark_testkit::MarkServerProcess::start(
            store.path(),
            &[
                "--tokens",
                tokens.to_str().unwrap(),
                "--watch-heartbeat-ms",
                "200",
            ],
        )
        .unwrap();
        Guarded {
            server,
            secrets,
            _store: store,
        }
    }

    fn reader(&self, token: &str) -> Vec<String> {
        let file = self.secrets.path().join(token).display().to_string();
        self.server
            .reader_args(&["--token-file", &file, "--fresh-for", "0s"])
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_scoped_below_the_root_gets_revalidation_and_a_working_session() {
    let g = Guarded::start();
    let mcp = Mcp::start(&g.reader("ops")).await;
    watch_opened(&g.server).await;
    let r = mcp.fetch("/ops/deploy.md").await;
    assert!(r.text.contains("Revert the tag."), "{}", r.text);
    let again = mcp.fetch("/ops/deploy.md").await;
    assert_eq!(again.status(), "unchanged", "{}", again.text);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        g.server.count_requests("WATCH", "/"),
        1,
        "not-permitted: never asked again"
    );
    assert!(
        g.server
            .requests_seen()
            .iter()
            .any(|r| r.verb == "WATCH" && r.status == "not-permitted")
    );
    assert_eq!(
        g.server.count_requests("FETCH", "/ops/deploy.md"),
        2,
        "it revalidates"
    );
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_that_expires_mid_watch_ends_it_and_the_session_still_answers() {
    let g = Guarded::start();
    let mcp = Mcp::start(&g.reader("brief")).await;
    watch_opened(&g.server).await;
    let r = mcp.fetch("/plan.md").await;
    assert!(r.text.contains("Step one."), "{}", r.text);
    tokio::time::sleep(Duration::from_secs(4)).await;
    // The watch ended `unauthorized` at a heartbeat; reads now say why.
    let after = mcp
        .call("mark_fetch", json!({"url": "/plan.md", "force": true}))
        .await;
    assert_eq!(after.status(), "unauthorized", "{}", after.text);
    assert_eq!(note(&after), None);
    let listed = mcp.call("mark_list", json!({"url": "/"})).await;
    assert_eq!(listed.status(), "unauthorized", "{}", listed.text);
    mcp.stop().await;
}

/// Reads lines of `child`'s stdout until one satisfies `wanted` (10 s at most).
fn line_until(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    wanted: impl Fn(&str) -> bool,
) -> String {
    for line in lines {
        let line = line.unwrap();
        if wanted(&line) {
            return line;
        }
    }
    panic!("the stream ended before the line came");
}

#[test]
fn the_watch_verb_prints_each_change_as_it_comes_and_ctrl_c_ends_it() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    source(dir.path());
    let mut child = std::process::Command::new(support::bin())
        .args(["--root", &dir.path().display().to_string(), "watch"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(line_until(&mut lines, |_| true), "watching mark://local");
    std::fs::write(dir.path().join("plan.md"), "# Plan\n\nSaved.\n").unwrap();
    assert_eq!(
        line_until(&mut lines, |l| l.starts_with("changed")),
        "changed /plan.md"
    );
    let pid = child.id().to_string();
    std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}

#[test]
fn the_watch_verb_says_when_a_server_has_no_watch() {
    let dir = tempfile::tempdir().unwrap();
    source(dir.path());
    let server =
        mark_testkit::MarkServerProcess::start(dir.path(), &["--flat", "--no-watch"]).unwrap();
    let mut args = server.reader_args(&[]);
    args.push("watch".into());
    let out = support::run_once(&args);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no change feed:") && stderr.contains("server-error"),
        "{stderr}"
    );
}

/// Resident memory of this test's `mark-mcp` child, in KiB (Linux).
fn mark_mcp_rss_kib() -> Option<u64> {
    let me = std::process::id().to_string();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        let field = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .map(str::trim)
                .map(str::to_string)
        };
        if field("Name:").as_deref() == Some("mark-mcp")
            && field("PPid:").as_deref() == Some(me.as_str())
        {
            return field("VmRSS:")?.split_whitespace().next()?.parse().ok();
        }
    }
    None
}

/// The soak: one writer per second, one reading session, for
/// `MARK_SOAK_SECS` (default an hour): every change is told once, in
/// order (the version step from the last read to the new one), and
/// resident memory stays flat (the last tenth of the run against the
/// first). `MARK_SOAK_SECS=3600 cargo test -p mark-mcp --test stale_note -- --ignored soak`
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "an hour by default; run by hand (README)"]
async fn soak_every_change_is_told_once_and_memory_stays_flat() {
    let secs: u64 = std::env::var("MARK_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3600);
    let src = tempfile::tempdir().unwrap();
    source(src.path());
    let p = PublishingServer::start(src.path());
    let mcp = Mcp::start(&p.server.reader_args(&["--fresh-for", "10m"])).await;
    watch_opened(&p.server).await;
    mcp.fetch("/plan.md").await;
    let started = std::time::Instant::now();
    let mut version = 1;
    let mut samples: Vec<(f64, u64)> = Vec::new();
    while started.elapsed() < Duration::from_secs(secs) {
        publish_elsewhere(
            &p,
            "/plan.md",
            &format!("# Plan\n\nStep {}.\n", version + 1),
        )
        .await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let listed = mcp.call("mark_list", json!({"url": "/"})).await;
        let want = format!(
            "changed since you read: /plan.md#plan (v{version} → v{}); mark_fetch them again to see",
            version + 1
        );
        assert_eq!(note(&listed), Some(want.as_str()), "{}", listed.text);
        let quiet = mcp.call("mark_list", json!({"url": "/"})).await;
        assert_eq!(note(&quiet), None, "told twice: {}", quiet.text);
        version += 1;
        let read = mcp.fetch("/plan.md").await;
        assert!(
            read.text.contains(&format!("Step {version}.")),
            "{}",
            read.text
        );
        if let Some(rss) = mark_mcp_rss_kib() {
            samples.push((started.elapsed().as_secs_f64(), rss));
        }
    }
    let tenth = (samples.len() / 10).max(1);
    let mean = |s: &[(f64, u64)]| s.iter().map(|x| x.1).sum::<u64>() / s.len().max(1) as u64;
    let (first, last) = (
        mean(&samples[..tenth]),
        mean(&samples[samples.len() - tenth..]),
    );
    eprintln!(
        "soak: {} changes told once each; resident memory {first} KiB (first tenth) → {last} KiB (last tenth)",
        version - 1
    );
    assert!(
        last <= first + first / 5 + 2048,
        "memory grew: {first} KiB → {last} KiB"
    );
    mcp.stop().await;
}

/// An MCP client that keeps the URIs of `notifications/resources/updated`.
#[derive(Clone)]
struct Updates(tokio::sync::mpsc::UnboundedSender<String>);

impl rmcp::ClientHandler for Updates {
    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send(params.uri);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    deprecated,
    reason = "resources/subscribe, as clients before MCP 2026-07-28 send it"
)]
async fn a_subscribed_resource_is_told_when_its_document_changes() {
    use rmcp::ServiceExt;
    let dir = tempfile::tempdir().unwrap();
    source(dir.path());
    let root = dir.path().display().to_string();
    let (tx, mut updates) = tokio::sync::mpsc::unbounded_channel();
    let client = Updates(tx)
        .serve(support::spawn_mcp(&["--root", &root]))
        .await
        .unwrap();
    let caps = client
        .peer_info()
        .unwrap()
        .capabilities
        .resources
        .clone()
        .unwrap();
    assert_eq!(caps.subscribe, Some(true));
    client
        .subscribe(rmcp::model::SubscribeRequestParams::new(
            "mark://local/plan.md",
        ))
        .await
        .unwrap();
    std::fs::write(dir.path().join("ops/deploy.md"), "# Deploy\n\nOther.\n").unwrap();
    std::fs::write(dir.path().join("plan.md"), "# Plan\n\nSaved.\n").unwrap();
    let uri = tokio::time::timeout(Duration::from_secs(5), updates.recv())
        .await
        .expect("no notifications/resources/updated within 5 s");
    assert_eq!(uri.as_deref(), Some("mark://local/plan.md"));
    client.cancel().await.unwrap();
}
