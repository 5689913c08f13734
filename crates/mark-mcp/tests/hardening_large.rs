//! Hardening, large and pathological documents generated at test time into
//! a temporary folder (never committed): 10 MB, 200,000 headings, 50,000
//! links, one 5 MB line, 10,000 nested blockquotes and lists. The real
//! `mark-mcp` binary serves the folder; every answer stays within the page
//! bound, comes within a generous hang guard, and the session keeps working.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use std::fmt::Write as _;
use std::time::Duration;
use support::{Mcp, Reply};

/// A hang guard per call (debug build, other tests running beside it), not
/// a performance bound.
const CALL_LIMIT: Duration = Duration::from_secs(60);
/// `--page-bytes` default: the longest text one result carries.
const PAGE_BYTES: usize = 44_000;
/// The whole-result bound: the text plus the envelope allowance (48,000).
const RESULT_BOUND: usize = PAGE_BYTES + 4_000;

fn write_documents(dir: &std::path::Path) -> Vec<(&'static str, usize)> {
    let mut docs = Vec::new();
    let mut put = |name: &'static str, text: String| {
        docs.push((name, text.len()));
        std::fs::write(dir.join(name), text).unwrap();
    };

    let mut big = String::from("# Ten megabytes\n\n");
    let mut i = 0;
    while big.len() < 10 * 1024 * 1024 {
        if i % 50 == 0 {
            writeln!(big, "\n## Part {i}\n").unwrap();
        }
        writeln!(
            big,
            "Line {i} of filler text about tides, gauges and harbour pilots.\n"
        )
        .unwrap();
        i += 1;
    }
    put("ten-mb.md", big);

    let mut headings = String::from("# Headings\n\n");
    for i in 0..200_000 {
        writeln!(headings, "## h{i}\n").unwrap();
    }
    put("headings.md", headings);

    let mut links = String::from("# Links\n\n");
    for i in 0..50_000 {
        writeln!(links, "- [doc {i}](/d/{i}.md#s{i}) and [[wiki {i}]]").unwrap();
    }
    put("links.md", links);

    put(
        "one-line.md",
        format!("# One line\n\n{}\n", "word ".repeat(1024 * 1024)),
    );
    put(
        "deep-quotes.md",
        format!("# Quotes\n\n{} deep\n", ">".repeat(10_000)),
    );
    put(
        "deep-lists.md",
        format!("# Lists\n\n{}deep\n", "- ".repeat(10_000)),
    );
    let mut nested = String::from("# Indented lists\n\n");
    for i in 0..10_000 {
        writeln!(nested, "{}- level {i}", "  ".repeat(i % 400)).unwrap();
    }
    put("indented-lists.md", nested);
    put("small.md", "# Small\n\nStill here.\n".to_string());
    docs
}

async fn call(mcp: &Mcp, case: &str, args: Value) -> Reply {
    let r = tokio::time::timeout(CALL_LIMIT, mcp.call("mark_fetch", args))
        .await
        .unwrap_or_else(|_| panic!("{case}: no answer within {CALL_LIMIT:?}"));
    assert!(
        r.text.len() <= RESULT_BOUND,
        "{case}: a {}-byte result is over the bound",
        r.text.len()
    );
    r
}

async fn still_works(mcp: &Mcp, case: &str) {
    let r = call(mcp, case, json!({"url": "/small.md", "force": true})).await;
    assert_eq!(r.body(), "# Small\n\nStill here.\n", "{case}: {}", r.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_documents_give_bounded_answers() {
    let dir = tempfile::tempdir().unwrap();
    let docs = write_documents(dir.path());
    let mcp = Mcp::start(&["--root", &dir.path().display().to_string()]).await;
    let mut calls = 0;
    for (name, size) in docs.iter().filter(|(n, _)| *n != "small.md") {
        let url = format!("/{name}");
        // Auto: an outline (or a bounded page of one), never the body.
        let r = call(&mcp, name, json!({ "url": url })).await;
        assert!(!r.is_error, "{name}: {}", r.text);
        assert_eq!(r.field("mode"), Some("outline"), "{name}: {}", r.text);
        assert!(
            r.field("size")
                .unwrap()
                .starts_with(&format!("{size} bytes")),
            "{name}: {}",
            r.text
        );
        // The whole body comes in pages, each within the bound; the first
        // page names the next cursor.
        let r = call(&mcp, name, json!({ "url": url, "mode": "full" })).await;
        assert!(!r.is_error, "{name}: {}", r.text);
        if *size > PAGE_BYTES {
            assert!(r.body().contains("cursor"), "{name}: no next page");
        }
        // An anchor that does not exist: the nearest, in one line.
        let r = call(&mcp, name, json!({ "url": format!("{url}#no-such-part") })).await;
        assert!(r.is_error, "{name}: {}", r.text);
        assert_eq!(r.body().trim().lines().count(), 1, "{name}: {}", r.text);
        still_works(&mcp, name).await;
        calls += 4;
    }

    // Sections of the big ones: a real section, and many anchors at once.
    let r = call(&mcp, "part", json!({"url": "/ten-mb.md#part-50"})).await;
    assert!(r.body().starts_with("## Part 50"), "{}", r.text);
    let many: Vec<String> = (0..1000).map(|i| format!("h{i}")).collect();
    let r = call(
        &mcp,
        "1,000 sections",
        json!({"url": "/headings.md", "anchors": many}),
    )
    .await;
    assert!(!r.is_error && r.body().starts_with("## h0"), "{}", r.text);
    let r = call(&mcp, "last heading", json!({"url": "/headings.md#h199999"})).await;
    assert_eq!(r.body().trim(), "## h199999", "{}", r.text);
    calls += 3;

    // Lookup over the folder with these documents in it stays bounded too.
    let r = tokio::time::timeout(
        CALL_LIMIT,
        mcp.call(
            "mark_lookup",
            json!({"query": "harbour pilots", "match": "body"}),
        ),
    )
    .await
    .expect("lookup hung");
    assert!(r.text.len() <= RESULT_BOUND, "{} bytes", r.text.len());
    calls += 1;
    assert_eq!(calls, 32);
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_whose_forty_thousand_sections_all_changed_answers_bounded_and_soon() {
    let dir = tempfile::tempdir().unwrap();
    let doc = |tag: &str| -> String {
        (0..40_000)
            .map(|i| format!("## Section {i}\n\n{tag} {i}.\n\n"))
            .collect()
    };
    let path = dir.path().join("changing.md");
    std::fs::write(&path, doc("first")).unwrap();
    let mcp = Mcp::start(&[
        "--root",
        &dir.path().display().to_string(),
        "--fresh-for",
        "0s",
    ])
    .await;
    call(&mcp, "first read", json!({"url": "/changing.md"})).await;
    std::fs::write(&path, doc("second")).unwrap();
    // The hang guard: the section diff was quadratic (29.6 s in release).
    let r = call(&mcp, "changed", json!({"url": "/changing.md"})).await;
    let note = r.field("note").unwrap_or_default();
    assert!(
        note.contains("sections changed: ") && note.contains("+39997 more") && note.len() < 300,
        "{note}"
    );
    mcp.stop().await;
}

/// #14.9: a document over the client's 16 MiB response cap (from
/// `mark-server --flat`): the whole, a section and a page all fail the same
/// way, and the message offers what works (`--max-response-bytes`), which
/// then reads it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_over_the_response_cap_names_the_option_that_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut big = String::from("# Big\n\n");
    let mut n = 0;
    while big.len() < 17_500_000 {
        let _ = write!(big, "## Part {n}\n\n{}\n\n", "filler text ".repeat(800));
        n += 1;
    }
    std::fs::write(dir.path().join("big.md"), &big).unwrap();
    let server = mark_testkit::MarkServerProcess::start(dir.path(), &["--flat"]).unwrap();
    let mcp = Mcp::start(&server.reader_args(&[])).await;
    for args in [
        json!({"url": "/big.md"}),
        json!({"url": "/big.md#part-3"}),
        json!({"url": "/big.md", "mode": "full"}),
    ] {
        let r = tokio::time::timeout(CALL_LIMIT, mcp.call("mark_fetch", args.clone()))
            .await
            .unwrap();
        assert!(r.is_error, "{args}: {}", r.text);
        assert!(
            r.text.contains("--max-response-bytes"),
            "{args}: {}",
            r.text
        );
        assert!(!r.text.contains("ask for less"), "{}", r.text);
    }
    mcp.stop().await;
    let mcp = Mcp::start(&server.reader_args(&["--max-response-bytes", "32MiB"])).await;
    let r = tokio::time::timeout(
        CALL_LIMIT,
        mcp.call("mark_fetch", json!({"url": "/big.md#part-3"})),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), "ok", "{}", r.text);
    assert_eq!(r.field("section"), Some("#part-3"), "{}", r.text);
    mcp.stop().await;
}
