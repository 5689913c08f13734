//! `mark_lookup`'s passages over `--root` (issue 27, item 1): the real
//! `mark-mcp` binary on a copy of `fixtures/mcp/kb`, driven by rmcp's client.
//! A passage is recorded exactly as sent, is not sent again while the
//! document is unchanged, never makes its section count as read, and is
//! sent again once the document changes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::json;
use support::{Mcp, copy_kb, root_args};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passages_come_once_per_version_and_never_stand_for_their_section() {
    let dir = copy_kb();
    let mcp = Mcp::start(&root_args(dir.path(), &["--fresh-for", "0s"])).await;
    let ask = json!({"query": "who runs the night shift on the dredger?", "match": "body"});
    let first = mcp.call("mark_lookup", ask.clone()).await;
    assert_eq!(first.status(), "ok", "{}", first.text);
    // The default reads no whole section, and the passage says where it is.
    assert!(!first.text.contains("=== read "), "{}", first.text);
    let (_, passages) = first
        .body()
        .split_once("\n=== passages matching the query, ~")
        .unwrap_or_else(|| panic!("no passages: {}", first.text));
    assert!(
        passages.contains("=== passage /notes/crew.md#night-shift · "),
        "{}",
        first.text
    );
    assert!(
        passages.contains("Ana and Kofi run the night shift on the dredger."),
        "{}",
        first.text
    );

    // The same lookup again: the same rows and the same passages, held.
    let again = mcp.call("mark_lookup", ask.clone()).await;
    assert_eq!(again.status(), "unchanged", "{}", again.text);

    // A passage is not its section: fetching the section sends it.
    let section = mcp.fetch("/notes/crew.md#night-shift").await;
    assert_eq!(section.field("mode"), Some("section"), "{}", section.text);
    assert!(section.text.contains("Ana and Kofi"), "{}", section.text);

    // Another wording whose best passage was sent says so, not the text.
    let other = mcp
        .call(
            "mark_lookup",
            json!({"query": "night shift dredger crew", "match": "body", "limit": 3}),
        )
        .await;
    assert!(
        !other.text.contains("Ana and Kofi run the night shift"),
        "{}",
        other.text
    );

    // Once the document changes, its passage comes again, new.
    let crew = dir.path().join("notes/crew.md");
    let text = std::fs::read_to_string(&crew).unwrap();
    std::fs::write(&crew, text.replace("Ana and Kofi", "Ana and Mei")).unwrap();
    let changed = mcp.call("mark_lookup", ask).await;
    assert_eq!(changed.status(), "ok", "{}", changed.text);
    assert!(
        changed
            .text
            .contains("Ana and Mei run the night shift on the dredger."),
        "{}",
        changed.text
    );
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_is_checked_and_zero_sends_no_passage() {
    let dir = copy_kb();
    let mcp = Mcp::start(&root_args(dir.path(), &[])).await;
    let none = mcp
        .call(
            "mark_lookup",
            json!({"query": "night shift", "match": "body", "budget": 0}),
        )
        .await;
    assert!(!none.text.contains("=== passage"), "{}", none.text);
    let over = mcp
        .call(
            "mark_lookup",
            json!({"query": "night shift", "budget": 999_999}),
        )
        .await;
    assert!(over.is_error, "{}", over.text);
    assert!(
        over.body()
            .starts_with("budget 999999 is out of range; give 0 to 4000"),
        "{}",
        over.text
    );
    mcp.stop().await;
}
