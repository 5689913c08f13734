//! `mark_explore` end to end over `--host`: the real `mark-mcp` binary reading
//! a real `mark-server` (pinned certificate) that holds `fixtures/explore`,
//! counting the server's requests from its log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use mark_testkit::{MarkServerProcess, generate_token};
use rmcp::model::{
    CallToolRequestParams, ClientRequest, ProgressNotificationParam, Request, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{Mcp, PublishingServer, serve_copy_of, spawn_mcp};

const WAIT: Duration = Duration::from_secs(10);

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/explore")
}

/// Every request the server logged, as `VERB /path -> status`.
fn log(server: &MarkServerProcess) -> Vec<String> {
    server
        .requests_seen()
        .into_iter()
        .map(|r| format!("{} {} -> {}", r.verb, r.path, r.status))
        .collect()
}

/// Waits until the server logged the sentinel `FETCH /sentinel.md` (a missing
/// document nothing else asks for) number `n`: requests of one session arrive
/// in order, so all before it are logged too.
async fn sync(mcp: &Mcp, server: &MarkServerProcess, n: usize) {
    mcp.call("mark_fetch", json!({"url": "/sentinel.md"})).await;
    assert_eq!(
        server.wait_for_requests("FETCH", "/sentinel.md", n, WAIT),
        n
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_costs_one_fetch_and_one_list_once_the_graph_is_built() {
    let (_store, server) = serve_copy_of::<&str>(&fixture(), &[]);
    let mcp = Mcp::start(&server.reader_args(&["--fresh-for", "0s"])).await;
    // The first card starts the crawl and waits for it.
    let card = mcp.call("mark_explore", json!({"url": "/hub.md"})).await;
    assert_eq!(card.status(), "ok", "{}", card.text);
    assert!(
        card.text.contains("## Backlinks (29; graph complete)"),
        "{}",
        card.text
    );
    assert!(card.text.contains("## Siblings in / (5)"));
    sync(&mcp, &server, 1).await;
    let first = log(&server);
    // The crawl: one LIST per folder, one FETCH per document, nothing twice.
    for dir in ["/", "/guides/", "/guides/deep/", "/refs/"] {
        assert_eq!(
            server.count_requests("LIST", dir),
            1 + usize::from(dir == "/"),
            "{dir}"
        );
    }
    assert_eq!(server.count_requests("FETCH", "/refs/ref-07.md"), 1);

    // Once built, a card costs its document's (conditional) FETCH and one LIST
    // (the same card again says `unchanged`; `force` would crawl again too).
    let again = mcp.call("mark_explore", json!({"url": "/hub.md"})).await;
    assert_eq!(again.status(), "unchanged", "{}", again.text);
    sync(&mcp, &server, 2).await;
    let mut added: Vec<String> = log(&server)[first.len()..].to_vec();
    added.sort();
    assert_eq!(
        added,
        [
            "FETCH /hub.md -> not-modified",
            "FETCH /sentinel.md -> not-found",
            "LIST / -> ok",
        ]
    );
    // A backlinks page costs no request at all.
    let page = mcp
        .call(
            "mark_explore",
            json!({"url": "/hub.md", "cursor": "backlinks.7"}),
        )
        .await;
    assert_eq!(page.field("section"), Some("backlinks"), "{}", page.text);
    sync(&mcp, &server, 3).await;
    assert_eq!(log(&server).len(), first.len() + 4);
    // The same card a third time: one line, not the card.
    let repeat = mcp.call("mark_explore", json!({"url": "/hub.md"})).await;
    assert_eq!(repeat.status(), "unchanged", "{}", repeat.text);
    assert!(
        repeat.text.contains(
            "card unchanged since v1 (explored earlier this session); force=true to re-send"
        ),
        "{}",
        repeat.text
    );
    assert!(!repeat.text.contains("## Outline"));
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_protected_folder_listing_becomes_a_note() {
    let secrets = tempfile::tempdir().unwrap();
    let tokens = secrets.path().join("tokens.toml");
    // A read grant on the folder itself: its LIST needs a token, its documents do not.
    generate_token(&tokens, "/guides", "read", None).unwrap();
    let (_store, server) = serve_copy_of(&fixture(), &["--tokens", tokens.to_str().unwrap()]);
    let mcp = Mcp::start(&server.reader_args(&["--crawl"])).await;
    let card = mcp
        .call("mark_explore", json!({"url": "/guides/intro.md"}))
        .await;
    assert_eq!(card.status(), "ok", "{}", card.text);
    assert_eq!(card.field("title"), Some("Introduction"));
    let body = card.body();
    assert!(
        body.contains("## Siblings in /guides/\n(not listed: LIST /guides/ answered unauthorized"),
        "{}",
        card.text
    );
    // The rest of the card is there; the crawl could not list the folder either, and says so.
    assert!(body.contains("## Outbound links (2)\n- [hub overview](/hub.md#overview)"));
    assert!(
        body.contains("(1 crawl request failed, first: LIST /guides/ answered unauthorized)"),
        "{}",
        card.text
    );
    assert!(body.contains("graph partial"), "{}", card.text);
    assert!(server.wait_for_requests("LIST", "/guides/", 2, WAIT) >= 2);
    mcp.stop().await;
}

/// An MCP client that keeps every progress notification it receives.
#[derive(Clone, Default)]
struct ProgressLog(Arc<Mutex<Vec<ProgressNotificationParam>>>);

impl ClientHandler for ProgressLog {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.lock().unwrap().push(params);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_with_a_progress_token_hears_the_crawl() {
    let (_store, server) = serve_copy_of::<&str>(&fixture(), &[]);
    let transport = spawn_mcp(&server.reader_args(&["--crawl-concurrency", "1"]));
    let heard = ProgressLog::default();
    let client = heard.clone().serve(transport).await.unwrap();
    let mut args = serde_json::Map::new();
    args.insert("url".into(), json!("/hub.md"));
    let handle = client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(
                CallToolRequestParams::new("mark_explore").with_arguments(args),
            )),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    let token = handle.progress_token.clone();
    let ServerResult::CallToolResult(result) = handle.await_response().await.unwrap() else {
        panic!("a tool result");
    };
    let text = result.content[0].as_text().unwrap().text.clone();
    assert!(text.contains("## Backlinks (29; graph complete)"), "{text}");
    let heard = heard.0.lock().unwrap().clone();
    assert!(!heard.is_empty(), "no progress notification");
    for p in &heard {
        assert_eq!(p.progress_token, token);
        assert!(
            p.message.as_deref().unwrap().starts_with("link graph: "),
            "{p:?}"
        );
        assert!(p.total.unwrap() >= p.progress);
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_document_has_its_links_replaced() {
    let server = PublishingServer::start(&fixture());
    let mcp = Mcp::start(&server.writer_args(&[])).await;
    let card = mcp.call("mark_explore", json!({"url": "/hub.md"})).await;
    assert!(card.text.contains("## Backlinks (29; graph complete)"));
    assert!(card.text.contains("- [About the harbour](/about.md#team)"));
    let about_card = mcp.call("mark_explore", json!({"url": "/about.md"})).await;
    assert_eq!(about_card.field("note"), None);

    // about.md now links to the changelog instead of the hub.
    let about = std::fs::read_to_string(fixture().join("about.md"))
        .unwrap()
        .replace(
            "Back to the [hub](hub.md).",
            "See the [changelog](changelog.md).",
        );
    let r = mcp
        .call(
            "mark_publish",
            json!({"url": "/about.md", "body": about, "expected_version": 1, "apply": true}),
        )
        .await;
    assert_eq!(r.status(), "created", "{}", r.text);
    // Reading the new version (here by its card) replaces its edges in the
    // graph, and the card says what changed since the last one.
    let about_card = mcp.call("mark_explore", json!({"url": "/about.md"})).await;
    assert_eq!(about_card.field("version"), Some("2"));
    assert_eq!(
        about_card.field("note"),
        Some("changed since your last read (v1 -> v2); sections changed: #team"),
        "{}",
        about_card.text
    );
    let card = mcp.call("mark_explore", json!({"url": "/hub.md"})).await;
    assert!(
        card.text.contains("## Backlinks (28; graph complete)"),
        "{}",
        card.text
    );
    assert!(
        !card.text.contains("- [About the harbour]"),
        "{}",
        card.text
    );
    let changelog = mcp
        .call("mark_explore", json!({"url": "/changelog.md"}))
        .await;
    assert!(
        changelog
            .text
            .contains("- [About the harbour](/about.md#team)"),
        "{}",
        changelog.text
    );
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cards_in_one_folder_list_it_once_within_the_freshness_window() {
    let server = PublishingServer::start(&fixture());
    let mcp = Mcp::start(&server.writer_args(&["--fresh-for", "1h"])).await;
    let log_of = &server.server;
    let hub = mcp.call("mark_explore", json!({"url": "/hub.md"})).await;
    assert!(hub.text.contains("## Siblings in / (5)"), "{}", hub.text);
    let about = mcp.call("mark_explore", json!({"url": "/about.md"})).await;
    assert_eq!(about.status(), "ok", "{}", about.text);
    let siblings = mcp
        .call(
            "mark_explore",
            json!({"url": "/hub.md", "cursor": "siblings.0"}),
        )
        .await;
    assert_eq!(
        siblings.field("section"),
        Some("siblings"),
        "{}",
        siblings.text
    );
    sync(&mcp, log_of, 1).await;
    // The crawl lists `/` once and the first card once; the next card in
    // the folder and the siblings page use that listing.
    assert_eq!(log_of.count_requests("LIST", "/"), 2);

    // A write through the session lists the folder again: the new
    // document is a sibling at once.
    mcp.publish("/new.md", "# New\n\nA new page.\n", 0)
        .await
        .assert_created("1");
    let hub = mcp
        .call("mark_explore", json!({"url": "/hub.md", "force": true}))
        .await;
    assert!(hub.text.contains("## Siblings in / (6)"), "{}", hub.text);
    assert!(hub.text.contains("- new.md"), "{}", hub.text);
    sync(&mcp, log_of, 2).await;
    // The card's own LIST, and `force` crawls again: one more each.
    assert_eq!(log_of.count_requests("LIST", "/"), 4);
    mcp.stop().await;
}
