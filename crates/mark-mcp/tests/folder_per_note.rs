//! A folder-per-note vault past the crawl's listing cap for servers
//! (10,000 LIST pages): the real `mark-mcp --root`, rmcp's client over
//! stdio. A folder is listed whole (only `--crawl-bytes` and `--crawl-time`
//! bound it), so backlinks are complete and a link by folder path resolves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use mark_testkit::{folder_note_name, write_folder_per_note};
use serde_json::json;
use support::{Mcp, root_args};

/// One folder more than listings the cap allows (the root's pages count too).
const NOTES: usize = link_graph::DEFAULT_MAX_LISTINGS + 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vault_of_more_folders_than_the_listing_cap_is_crawled_whole() {
    let vault = tempfile::tempdir().unwrap();
    write_folder_per_note(vault.path(), NOTES).unwrap();
    // A debug build crawls ten thousand folders in seconds: wait for all of it.
    let mcp = Mcp::start(&root_args(vault.path(), &["--crawl-wait", "300s"])).await;
    let hub = folder_note_name(0);
    let card = mcp
        .call("mark_explore", json!({ "url": format!("/{hub}/{hub}.md") }))
        .await;
    assert!(!card.is_error, "{}", card.text);
    assert!(card.text.contains("graph complete"), "{}", card.text);
    assert!(!card.text.contains("listing limit"), "{}", card.text);
    // Every other note links the hub.
    let heading = card
        .body()
        .lines()
        .find(|l| l.starts_with("## Backlinks"))
        .unwrap_or_else(|| panic!("no backlinks in {}", card.text));
    assert!(heading.contains(&format!("{}", NOTES - 1)), "{heading}");
    // The hub's link by folder path and heading reaches the last note.
    let last = folder_note_name(NOTES - 1);
    let escaped = last.replace(' ', "%20");
    let wanted = format!("[{last}/{last}#Heading](/{escaped}/{escaped}.md#Heading)");
    assert!(card.text.contains(&wanted), "{wanted} in {}", card.text);
    mcp.stop().await;
}
