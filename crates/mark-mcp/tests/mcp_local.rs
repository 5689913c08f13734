//! End to end over `--root`: the real `mark-mcp` binary serving the fixture
//! folder `fixtures/mcp/kb` in process, driven by rmcp's client over stdio.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::json;
use support::{Mcp, copy_kb, kb, root_args};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_sizes_sections_and_errors() {
    let mcp = Mcp::start(&root_args(&kb(), &[])).await;
    let small = std::fs::read_to_string(kb().join("small.md")).unwrap();
    let large = std::fs::read_to_string(kb().join("large.md")).unwrap();

    // A small document comes whole.
    let r = mcp.fetch("/small.md").await;
    assert_eq!(r.status(), "ok", "{}", r.text);
    assert_eq!(r.field("mode"), Some("full"));
    assert_eq!(r.field("title"), Some("Small Notes"));
    assert_eq!(r.body(), small);
    assert!(
        r.field("size")
            .unwrap()
            .starts_with(&format!("{} bytes, ~", small.len()))
    );

    // A large one gives its outline, opening paragraph, size and the hint.
    let r = mcp.fetch("mark://local/large.md").await;
    assert_eq!(r.field("mode"), Some("outline"), "{}", r.text);
    assert!(
        r.field("size")
            .unwrap()
            .starts_with(&format!("{} bytes", large.len()))
    );
    for anchor in ["#berths", "#pilots", "#tide-tables", "#contacts"] {
        assert!(r.body().contains(anchor), "{anchor} in {}", r.text);
    }
    assert!(
        r.body()
            .contains("The harbour handbook explains how the port runs day to day")
    );
    assert!(r.body().contains("/large.md#anchor") && r.body().contains("force=true"));
    assert!(
        !r.body().contains("Pilot note 3"),
        "no body text in an outline"
    );
    // The same outline again is one line, as a card is; mode outline with
    // force sends it again.
    let again = mcp.fetch("/large.md").await;
    assert_eq!(again.status(), "unchanged", "{}", again.text);
    assert!(
        again
            .body()
            .starts_with("outline unchanged since v1 (sent earlier this session); fetch a section with url \"/large.md#anchor\""),
        "{}",
        again.text
    );
    let r = mcp
        .call(
            "mark_fetch",
            json!({"url": "/large.md", "mode": "outline", "force": true}),
        )
        .await;
    assert_eq!(r.field("mode"), Some("outline"), "{}", r.text);

    // mode full and force give the body.
    let r = mcp
        .call("mark_fetch", json!({"url": "/large.md", "mode": "full"}))
        .await;
    assert_eq!((r.field("mode"), r.body()), (Some("full"), large.as_str()));
    let r = mcp
        .call("mark_fetch", json!({"url": "/large.md", "force": true}))
        .await;
    assert_eq!(r.body(), large);

    // A section of a small document: heading and subsections, not the next
    // sibling (forced: the whole body was read, which holds it).
    let r = mcp
        .call(
            "mark_fetch",
            json!({"url": "/small.md#beta", "force": true}),
        )
        .await;
    assert_eq!(
        (r.field("mode"), r.field("section")),
        (Some("section"), Some("#beta")),
        "{}",
        r.text
    );
    assert!(r.body().starts_with("## Beta\n") && r.body().contains("### Beta detail"));
    assert!(!r.body().contains("## Gamma"));
    // Raw heading text works as an anchor too.
    let r = mcp.fetch("/small.md#Beta detail").await;
    assert_eq!(r.field("section"), Some("#beta-detail"));

    // A section of a large document (forced: its whole body was read).
    let r = mcp
        .call(
            "mark_fetch",
            json!({"url": "/large.md#berths", "force": true}),
        )
        .await;
    assert!(
        r.body().starts_with("## Berths\n") && r.body().contains("### South quay"),
        "{}",
        r.text
    );
    assert!(!r.body().contains("## Pilots"));

    // Several anchors in one call (forced, like the one before).
    let r = mcp
        .call(
            "mark_fetch",
            json!({"url": "/large.md", "anchors": ["pilots", "#contacts"], "force": true}),
        )
        .await;
    assert_eq!(r.field("section"), Some("#pilots, #contacts"), "{}", r.text);
    assert!(r.body().contains("## Pilots\n") && r.body().contains("## Contacts\n"));
    assert!(!r.body().contains("## Tide tables"));

    // An oversized section gives its sub-outline; force gives its text.
    let r = mcp.fetch("/large.md#tide-tables").await;
    assert_eq!(r.field("mode"), Some("outline"), "{}", r.text);
    assert!(r.body().contains("#spring-tides") && r.body().contains("#storm-surges"));
    assert!(!r.body().contains("Spring note 1"));
    let r = mcp
        .call(
            "mark_fetch",
            json!({"url": "/large.md#tide-tables", "force": true}),
        )
        .await;
    assert_eq!(r.field("mode"), Some("section"));
    assert!(r.body().contains("Spring note 1") && !r.body().contains("## Contacts"));

    // The H1's section is the whole document and obeys the threshold.
    let r = mcp.fetch("/large.md#harbour-handbook").await;
    assert_eq!(r.field("mode"), Some("outline"));

    // Unknown anchor: a tool error naming the nearest anchors.
    let r = mcp.fetch("/large.md#pilot").await;
    assert!(r.is_error);
    assert!(
        r.body()
            .starts_with("section #pilot not found in /large.md; nearest: "),
        "{}",
        r.text
    );
    assert!(r.body().contains("pilots"));

    // Non-ok statuses pass through; binary bodies give a notice.
    let r = mcp.fetch("/missing.md").await;
    assert_eq!(r.status(), "not-found");
    assert!(!r.is_error);
    let r = mcp.fetch("/binary.md").await;
    assert_eq!(r.field("mode"), Some("notice"), "{}", r.text);
    assert!(r.body().contains("not UTF-8") && !r.body().contains("binary bytes"));

    // Other hosts and schemes are refused in one sentence.
    for url in [
        "mark://elsewhere.example/small.md",
        "https://example.com/x.md",
    ] {
        let r = mcp.fetch(url).await;
        assert!(r.is_error, "{url}");
        assert_eq!(r.body().lines().count(), 1);
    }
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dedup_within_and_across_sessions() {
    let dir = copy_kb();
    let args = root_args(dir.path(), &["--fresh-for", "0s"]);
    let mcp = Mcp::start(&args).await;
    let first = mcp.fetch("/small.md").await;
    assert_eq!(first.field("mode"), Some("full"));

    // The same slice again: one line, no body.
    let again = mcp.fetch("/small.md").await;
    again.assert_unchanged("unchanged since ");
    assert!(again.body().contains("force=true to re-read") && !again.body().contains("ferry"));
    assert_eq!(
        (again.field("size"), again.field("title")),
        (None, None),
        "one short answer"
    );

    // force re-delivers; a section of the body read is unchanged too.
    assert!(
        mcp.call("mark_fetch", json!({"url": "/small.md", "force": true}))
            .await
            .body()
            .contains("ferry")
    );
    let sec = mcp.fetch("/small.md#gamma").await;
    assert_eq!(sec.status(), "unchanged", "{}", sec.text);
    assert!(sec.body().contains("in the whole document"), "{}", sec.text);

    // A second session does not see this one's deliveries.
    let other = Mcp::start(&args).await;
    assert_eq!(other.fetch("/small.md").await.field("mode"), Some("full"));
    other.stop().await;

    // The document changes on disk: the body comes with what changed.
    let path = dir.path().join("small.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replace(
        "The second ferry leaves at nine.",
        "The second ferry leaves at half past nine.",
    );
    std::fs::write(
        &path,
        format!("{text}\n## Delta\n\nA new pier opens in May.\n"),
    )
    .unwrap();
    let changed = mcp.fetch("/small.md").await;
    assert_eq!(changed.field("mode"), Some("full"), "{}", changed.text);
    let note = changed.field("note").unwrap();
    assert!(note.starts_with("changed since your last read ("), "{note}");
    assert!(
        note.contains("sections changed: #beta") && note.contains("added: #delta"),
        "{note}"
    );
    assert!(changed.body().contains("half past nine"));
    // ... and then it is unchanged again.
    assert_eq!(mcp.fetch("/small.md").await.status(), "unchanged");
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_bodies_come_in_pages() {
    let mcp = Mcp::start(&root_args(&kb(), &["--page-bytes", "4000"])).await;
    let large = std::fs::read_to_string(kb().join("large.md")).unwrap();
    let mut got = String::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut args = json!({"url": "/large.md", "mode": "full"});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let r = mcp.call("mark_fetch", args).await;
        pages += 1;
        let page = r.field("page").unwrap().to_string();
        assert!(page.starts_with(&format!("{pages} of ")), "{}", r.text);
        let (text, trailer) = r.body().rsplit_once("\n\n[page ").unwrap();
        assert!(text.len() <= 4000);
        got.push_str(text);
        cursor = trailer.split('"').nth(1).map(str::to_string);
        if cursor.is_none() {
            assert!(trailer.contains("the last"));
            break;
        }
        assert!(pages < 10);
    }
    assert!(pages >= 4);
    assert_eq!(got, large, "the pages re-assemble the body");
    let r = mcp
        .call(
            "mark_fetch",
            json!({"url": "/large.md", "cursor": "nonsense"}),
        )
        .await;
    assert!(r.is_error);
    mcp.stop().await;
}

/// #14.11: a conflict names a url that shows the version it names, also
/// after an archive (where the document's own url answers `archived`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_after_an_archive_names_a_url_that_reads_the_version() {
    let store = mark_testkit::import_store(&kb()).unwrap();
    let mcp = Mcp::start(&root_args(store.path(), &["--write"])).await;
    mcp.publish("/new.md", "# New\n", 0)
        .await
        .assert_created("1");
    mcp.publish("/new.md", "# New\n\nTwo.\n", 1)
        .await
        .assert_created("2");
    let archived = mcp
        .call("mark_archive", json!({"url": "/new.md", "apply": true}))
        .await;
    assert_eq!(archived.status(), "ok", "{}", archived.text);
    let conflict = mcp.publish("/new.md", "# Mine\n", 1).await;
    assert_eq!(conflict.status(), "conflict", "{}", conflict.text);
    assert!(
        conflict.body().contains("fetch \"/new.md/v2\" to see v2"),
        "{}",
        conflict.text
    );
    let v2 = mcp.fetch("/new.md/v2").await;
    assert_eq!(v2.status(), "ok", "{}", v2.text);
    assert!(v2.body().contains("Two."), "{}", v2.text);
    mcp.stop().await;
}

/// #14.11: a history longer than one result pages with the cursor its
/// `+N older versions` line gives; a cursor it did not give is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_history_pages_with_its_cursor() {
    let store = mark_testkit::import_store(&kb()).unwrap();
    let mcp = Mcp::start(&root_args(store.path(), &["--write"])).await;
    for v in 0..60u64 {
        mcp.publish("/log.md", &format!("# Log\n\nentry {v}\n"), v)
            .await
            .assert_created(&(v + 1).to_string());
    }
    let first = mcp.call("mark_versions", json!({"url": "/log.md"})).await;
    assert_eq!(first.field("total"), Some("60"), "{}", first.text);
    assert!(first.body().starts_with("- v60  "), "{}", first.text);
    assert!(
        first.body().contains("+10 older versions: cursor \"v10\""),
        "{}",
        first.text
    );
    let older = mcp
        .call("mark_versions", json!({"url": "/log.md", "cursor": "v10"}))
        .await;
    assert!(older.body().starts_with("- v10  "), "{}", older.text);
    assert!(older.body().contains("- v1  "), "{}", older.text);
    assert!(!older.body().contains("older versions"), "{}", older.text);
    for bad in ["v99", "junk"] {
        let r = mcp
            .call("mark_versions", json!({"url": "/log.md", "cursor": bad}))
            .await;
        assert!(r.is_error, "{bad}: {}", r.text);
    }
    mcp.stop().await;
}

/// #14.11: a large document with no headings says so and offers pages,
/// not a `#anchor` it does not have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_document_without_headings_offers_pages() {
    let dir = tempfile::tempdir().unwrap();
    let text = "A line of plain prose without any heading at all.\n\n".repeat(400);
    std::fs::write(dir.path().join("plain.md"), &text).unwrap();
    let mcp = Mcp::start(&root_args(dir.path(), &[])).await;
    let r = mcp.fetch("/plain.md").await;
    assert_eq!(r.field("mode"), Some("outline"), "{}", r.text);
    assert!(
        r.body().contains(
            "It has no headings, so no #anchor to fetch: read it in pages with mode \"full\""
        ),
        "{}",
        r.text
    );
    assert!(!r.body().contains("#anchor\" (several"), "{}", r.text);
    let full = mcp
        .call("mark_fetch", json!({"url": "/plain.md", "mode": "full"}))
        .await;
    assert_eq!(full.status(), "ok", "{}", full.text);
    mcp.stop().await;
}

/// #14.10: a cursor mark-mcp did not give for this request (a page number
/// past the end, a made-up etag, a whole-body cursor used for a section) is
/// a one-line error, not a page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_not_given_for_this_request_is_a_one_line_error() {
    let mcp = Mcp::start(&root_args(&kb(), &["--page-bytes", "4000"])).await;
    let first = mcp
        .call("mark_fetch", json!({"url": "/large.md", "mode": "full"}))
        .await;
    let given = first.body().rsplit('"').nth(1).unwrap().to_string();
    let page2 = mcp
        .call("mark_fetch", json!({"url": "/large.md", "cursor": given}))
        .await;
    assert_eq!(page2.field("page"), Some("2 of 4"), "{}", page2.text);
    let (etag_part, _) = given.rsplit_once('.').unwrap();
    let (page_part, digests) = given.rsplit_once('.').unwrap();
    let (page_part, _etag) = page_part.split_once('.').unwrap();
    let forged = [
        given.replacen("p2.", "p99.", 1),
        "p2.000000000000".to_string(),
        format!("{etag_part}.000000"),
        // #13: a made-up etag is not one mark-mcp gave (not "changed since").
        format!("{page_part}.0123456789ab.{digests}"),
    ];
    for cursor in &forged {
        let r = mcp
            .call("mark_fetch", json!({"url": "/large.md", "cursor": cursor}))
            .await;
        assert!(r.is_error, "{cursor}: {}", r.text);
        assert!(r.text.contains("is not one mark-mcp gave"), "{}", r.text);
        assert_eq!(r.body().trim().lines().count(), 1, "{}", r.text);
    }
    let section = mcp
        .call(
            "mark_fetch",
            json!({"url": "/large.md#tide-tables", "cursor": given}),
        )
        .await;
    assert!(section.is_error, "{}", section.text);
    assert!(
        section
            .text
            .contains("is not one mark-mcp gave for /large.md#tide-tables"),
        "{}",
        section.text
    );
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookup_reads_its_top_hits_as_mark_fetch_delivers_them() {
    let dir = copy_kb();
    let mcp = Mcp::start(&root_args(dir.path(), &["--fresh-for", "0s"])).await;
    let fresh = Mcp::start(&root_args(dir.path(), &[])).await;
    let night = json!({"query": "night shift", "match": "body", "read": 1, "budget": 0});
    // read 1: the top hit's section, exactly as mark_fetch
    // gives it to a session that has not read it.
    let r = mcp.call("mark_lookup", night.clone()).await;
    let (rows, read) = r
        .body()
        .split_once("\n=== read /notes/crew.md#night-shift ===\n")
        .unwrap_or_else(|| panic!("no read block: {}", r.text));
    // No hint line after the rows: the section below shows how a hit is read.
    assert!(
        rows.lines()
            .last()
            .is_some_and(|l| l.starts_with("/notes/crew.md#")),
        "{rows}"
    );
    let fetched = fresh
        .call("mark_fetch", json!({"url": "/notes/crew.md#night-shift"}))
        .await;
    assert_eq!(read, fetched.text);
    // It counts as delivered: mark_fetch and the same lookup say unchanged.
    let again = mcp.fetch("/notes/crew.md#night-shift").await;
    assert_eq!(again.status(), "unchanged", "{}", again.text);
    let same = mcp.call("mark_lookup", night.clone()).await;
    assert_eq!(same.status(), "unchanged", "{}", same.text);
    // Two hits, one inside the other: one fetch, each text once.
    let r = mcp
        .call(
            "mark_lookup",
            json!({"query": "dredger", "match": "body", "read": 2}),
        )
        .await;
    let read = r.body().split_once("\n=== read ").unwrap().1;
    assert_eq!(read.matches("Ana and Kofi").count(), 1, "{}", r.text);
    assert!(read.contains("#night-shift: inside #crew-roster in this result"));
    // A changed section is delivered with the note saying what changed.
    let crew = dir.path().join("notes/crew.md");
    let text = std::fs::read_to_string(&crew).unwrap();
    std::fs::write(
        &crew,
        text.replace("on the dredger.", "on the dredger and the tug."),
    )
    .unwrap();
    let r = mcp.call("mark_lookup", night).await;
    assert!(r.body().contains("and the tug"), "{}", r.text);
    assert!(
        r.body().contains("\nnote: changed since your last read"),
        "{}",
        r.text
    );
    // read 0 reads nothing; over 3 is refused in one sentence.
    let r = mcp
        .call(
            "mark_lookup",
            json!({"query": "gullwing", "match": "body", "read": 0}),
        )
        .await;
    assert!(!r.text.contains("=== read"), "{}", r.text);
    let r = mcp
        .call("mark_lookup", json!({"query": "gullwing", "read": 4}))
        .await;
    assert!(r.is_error && r.body().starts_with("read 4 is out of range; give 0 to 3"));
    mcp.stop().await;
    fresh.stop().await;

    // A section over the outline threshold comes as its sub-outline.
    let mcp = Mcp::start(&root_args(&kb(), &["--outline-threshold", "100"])).await;
    let r = mcp
        .call(
            "mark_lookup",
            json!({"query": "pilots", "match": "body", "read": 1}),
        )
        .await;
    let read = r.body().split_once("\n=== read ").unwrap().1;
    assert!(read.contains("\nmode: outline\n"), "{}", r.text);
    mcp.stop().await;
}

/// #13: a row whose section the session already sent whole says so, so
/// the agent does not fetch it again; an identical lookup is still
/// `unchanged`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lookup_whose_read_is_an_outline_is_unchanged_the_second_time() {
    let mcp = Mcp::start(&root_args(&kb(), &[])).await;
    let ask =
        json!({"query": "harbour handbook", "match": "body", "limit": 3, "read": 1, "budget": 0});
    let first = mcp.call("mark_lookup", ask.clone()).await;
    let (_, read) = first
        .body()
        .split_once("\n=== read /large.md#harbour-handbook ===\n")
        .unwrap_or_else(|| panic!("no read block: {}", first.text));
    assert!(read.contains("\nmode: outline\n"), "{read}");
    // The outline was sent, not the text: the same lookup is one line,
    // and a fetch of the section says the outline is unchanged.
    let again = mcp.call("mark_lookup", ask).await;
    assert_eq!(again.status(), "unchanged", "{}", again.text);
    mcp.fetch("/large.md#harbour-handbook")
        .await
        .assert_unchanged("outline unchanged since v1");
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_whose_section_was_read_earlier_says_so() {
    let mcp = Mcp::start(&root_args(&kb(), &[])).await;
    let ask = json!({"query": "pilots", "match": "body", "read": 0, "limit": 5});
    let first = mcp.call("mark_lookup", ask.clone()).await;
    let rows = first.rows();
    assert!(
        rows.len() >= 2 && !first.text.contains("read earlier"),
        "{}",
        first.text
    );
    // The first row after the top one whose section comes whole (a title
    // section over the threshold comes as an outline: no text is held).
    let mut url = "";
    for row in &rows[1..] {
        url = row.split(" · ").next().unwrap();
        if mcp.fetch(url).await.field("mode") == Some("section") {
            break;
        }
    }
    let again = mcp.call("mark_lookup", ask.clone()).await;
    assert_eq!(again.status(), "unchanged", "the same rows: {}", again.text);
    let mut wider = ask;
    wider["limit"] = json!(6);
    let r = mcp.call("mark_lookup", wider).await;
    let marked: Vec<&str> = r
        .body()
        .lines()
        .filter(|l| l.ends_with(" · read earlier"))
        .collect();
    assert_eq!(marked.len(), 1, "{}", r.text);
    assert!(marked[0].starts_with(&format!("{url} · ")), "{}", r.text);
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lookup_cursor_pages_the_ranked_rows_and_refuses_forged_ones() {
    let mcp = Mcp::start(&root_args(&kb(), &[])).await;
    let rows = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with('/'))
            .map(str::to_string)
            .collect()
    };
    let cursor_of = |text: &str| {
        text.split_once("with cursor \"")
            .map(|(_, rest)| rest.split('"').next().unwrap().to_string())
    };
    let all = mcp
        .call(
            "mark_lookup",
            json!({"query": "*", "limit": 100, "read": 0}),
        )
        .await;
    assert_eq!(cursor_of(&all.text), None, "all rows fit: {}", all.text);
    let (mut paged, mut cursor, mut calls) = (Vec::new(), None, 0);
    loop {
        let r = mcp
            .call(
                "mark_lookup",
                json!({"query": "*", "limit": 2, "read": 0, "cursor": cursor}),
            )
            .await;
        assert_eq!(r.status(), "ok", "{}", r.text);
        paged.extend(rows(&r.text));
        calls += 1;
        cursor = cursor_of(&r.text);
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!((paged, calls), (rows(&all.text), 3));
    let first = mcp
        .call(
            "mark_lookup",
            json!({"query": "*", "limit": 2, "read": 0, "force": true}),
        )
        .await;
    let good = cursor_of(&first.text).unwrap();
    assert!(first.text.contains("[rows 1 to 2 of 5; "), "{}", first.text);
    let forged = good.replace('r', "r1");
    for (query, cursor) in [("*", forged.as_str()), ("crew", good.as_str()), ("*", "x")] {
        let r = mcp
            .call("mark_lookup", json!({"query": query, "cursor": cursor}))
            .await;
        assert!(r.is_error, "{}", r.text);
        assert_eq!(
            r.body().trim_end(),
            format!(
                "cursor `{cursor}` is not one this lookup gave; look up again without a cursor"
            )
        );
    }
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookup_list_versions_and_refused_writes() {
    let mcp = Mcp::start(&root_args(&kb(), &["--write"])).await;
    let r = mcp
        .call("mark_lookup", json!({"query": "crew", "read": 1}))
        .await;
    assert_eq!(r.status(), "ok", "{}", r.text);
    assert!(r.body().contains("/notes/crew.md"), "{}", r.text);
    // The same search again: one line, not the rows; force sends them.
    let again = mcp
        .call("mark_lookup", json!({"query": "crew", "read": 1}))
        .await;
    assert_eq!(again.status(), "unchanged", "{}", again.text);
    assert_eq!(again.field("matches"), r.field("matches"));
    assert_eq!(
        again.body().trim_end(),
        "the same rows as an identical lookup earlier this session; force=true to re-send"
    );
    // force re-sends the rows and the top hit's text read in the first
    // call (issue 26 item 4: after a context loss the agent needs both).
    let forced = mcp
        .call(
            "mark_lookup",
            json!({"query": "crew", "read": 1, "force": true}),
        )
        .await;
    let rows = |text: &str| text.split("\n=== read ").next().unwrap().to_string();
    assert_eq!(rows(&forced.text), rows(&r.text));
    assert!(!forced.text.contains("unchanged since"), "{}", forced.text);
    assert!(forced.text.contains("\nmode: full\n"), "{}", forced.text);
    let r = mcp
        .call(
            "mark_lookup",
            json!({"query": "dredger", "match": "body", "limit": 3}),
        )
        .await;
    assert_eq!(r.field("match"), Some("body"), "{}", r.text);
    assert!(r.body().contains("/notes/crew.md#"), "{}", r.text);
    assert_eq!(r.field("note"), None);
    // LOOKUP leaves out one-character words; the result says which.
    let r = mcp
        .call(
            "mark_lookup",
            json!({"query": "dredger 2 b", "match": "body"}),
        )
        .await;
    assert_eq!(r.status(), "ok", "{}", r.text);
    assert_eq!(
        r.field("note"),
        Some("not searched (words under 2 characters): 2 b"),
        "{}",
        r.text
    );
    let r = mcp
        .call("mark_lookup", json!({"query": "*", "limit": 1}))
        .await;
    assert_eq!((r.status(), r.field("note")), ("ok", None), "{}", r.text);
    let r = mcp.call("mark_lookup", json!({"query": " "})).await;
    assert!(r.is_error);

    let r = mcp.call("mark_list", json!({"url": "/"})).await;
    assert_eq!(r.status(), "ok", "{}", r.text);
    for entry in ["- /small.md", "- /large.md", "- /index.md", "- /notes/"] {
        assert!(r.body().contains(entry), "{entry} in {}", r.text);
    }
    let r = mcp.call("mark_list", json!({"url": "/notes"})).await;
    assert!(r.body().contains("- /notes/crew.md"), "{}", r.text);

    let r = mcp.call("mark_versions", json!({"url": "/small.md"})).await;
    assert_eq!(r.status(), "ok", "{}", r.text);
    assert!(r.body().contains("- v1"), "{}", r.text);

    // A plain folder is read-only: the refusal says so.
    let r = mcp
        .call(
            "mark_publish",
            json!({"url": "/small.md", "body": "# x\n", "expected_version": 1}),
        )
        .await;
    assert!(r.is_error, "{}", r.text);
    assert_eq!(r.status(), "not-permitted", "{}", r.text);
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_and_prompts() {
    let mcp = Mcp::start(&root_args(&kb(), &[])).await;
    let listed = mcp.client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = listed.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris.first(), Some(&"mark://local/index.md"), "{uris:?}");
    assert!(uris.contains(&"mark://local/large.md") && uris.contains(&"mark://local/small.md"));
    let templates = mcp.client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "mark://local/{+path}");

    // A read is the whole body (no outline, no dedup), or one section.
    let large = std::fs::read_to_string(kb().join("large.md")).unwrap();
    assert_eq!(mcp.read("mark://local/large.md").await.unwrap(), large);
    assert_eq!(mcp.read("mark://local/large.md").await.unwrap(), large);
    let pilots = mcp.read("mark://local/large.md#pilots").await.unwrap();
    assert!(pilots.starts_with("## Pilots\n") && !pilots.contains("## Tide"));
    assert!(mcp.read("mark://local/nope.md").await.is_err());

    let prompts = mcp.client.list_all_prompts().await.unwrap();
    let mut names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["orient", "recall", "whats-new"]);
    let p = mcp.prompt("orient", json!({"url": "/index.md"})).await;
    assert!(p.contains("mark_fetch {url: \"/index.md\"}") && p.contains("url#anchor"));
    let p = mcp
        .prompt("recall", json!({"subject": "night shift"}))
        .await;
    assert!(p.contains("mark_lookup {query: \"night shift\"}"));
    let p = mcp
        .prompt("whats-new", json!({"since": "2026-11-01"}))
        .await;
    assert!(p.contains("modified-after=2026-11-01"));
    let p = mcp.prompt("whats-new", json!({})).await;
    assert!(p.contains("mark_lookup"));
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_list_is_small_and_well_formed() {
    let mcp = Mcp::start(&root_args(&kb(), &[])).await;
    let tools = mcp.client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "mark_explore",
            "mark_fetch",
            "mark_list",
            "mark_lookup",
            "mark_versions"
        ]
    );
    for t in &tools {
        assert_eq!(
            t.input_schema.get("type"),
            Some(&json!("object")),
            "{}",
            t.name
        );
        let a = t.annotations.as_ref().unwrap();
        assert_eq!(a.read_only_hint, Some(true));
        assert!(
            a.destructive_hint.is_some()
                && a.idempotent_hint.is_some()
                && a.open_world_hint.is_some()
        );
    }
    let size = serde_json::to_string(&json!({ "tools": tools }))
        .unwrap()
        .len();
    assert!(size < 4096, "tools/list is {size} bytes");
    mcp.stop().await;

    let mcp = Mcp::start(&root_args(&kb(), &["--write"])).await;
    let tools = mcp.client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 8);
    let publish = tools.iter().find(|t| t.name == "mark_publish").unwrap();
    assert_eq!(
        publish.annotations.as_ref().unwrap().read_only_hint,
        Some(false)
    );
    mcp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_versioned_folder_is_writable_with_write() {
    let store = mark_testkit::import_store(&kb()).unwrap();
    let root = store.path().display().to_string();

    // Without --write the store is read-only, and the refusal says what to do.
    let (out, ok) = {
        let out = std::process::Command::new(support::bin())
            .env("XDG_CACHE_HOME", support::cache_home())
            .args(["--root", &root, "archive", "/small.md"])
            .output()
            .unwrap();
        (String::from_utf8(out.stdout).unwrap(), out.status.success())
    };
    assert!(!ok && out.contains("--write"), "{out}");

    let mcp = Mcp::start(&["--root", &root, "--write", "--fresh-for", "0s"]).await;
    assert_eq!(mcp.fetch("/small.md").await.field("version"), Some("1"));
    let rewritten = "# Small Notes\n\nRewritten.\n";
    let r = mcp.publish("/small.md", rewritten, 0).await;
    assert!(
        r.is_error && r.status() == "conflict" && r.body().contains("expected_version 1"),
        "{}",
        r.text
    );
    mcp.publish("/small.md", rewritten, 1)
        .await
        .assert_created("2");
    let r = mcp.fetch("/small.md").await;
    let note = r.field("note").unwrap();
    assert!(note.starts_with("changed since your last read (v1 -> v2); sections changed: #small-notes; removed: #alpha, #beta"), "{note}");
    assert_eq!(mcp.fetch("/small.md").await.status(), "unchanged");
    mcp.stop().await;
}

/// #12.3 on the tool face: publish, append and archive of `url#anchor` are
/// one-line tool errors naming the whole document's url, and the document
/// keeps every section and its version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_url_with_an_anchor_is_refused_and_writes_nothing() {
    let store = mark_testkit::import_store(&kb()).unwrap();
    let mcp = Mcp::start(&root_args(store.path(), &["--write", "--fresh-for", "0s"])).await;
    let before = mcp.fetch("/small.md").await.body().to_string();
    let calls = [
        mcp.publish("/small.md#alpha", "## Alpha\n\nOnly this.\n", 1)
            .await,
        mcp.call(
            "mark_append",
            json!({"url": "/small.md#alpha", "body": "more"}),
        )
        .await,
        mcp.call("mark_archive", json!({"url": "mark://local/small.md#beta"}))
            .await,
    ];
    for r in calls {
        assert!(
            r.is_error
                && !r.body().trim_end().contains('\n')
                && r.body().contains("writes a whole document")
                && r.body().contains("url \"/small.md\""),
            "{}",
            r.text
        );
    }
    // The same version, still holding every section: nothing was written.
    let after = mcp.fetch("/small.md").await;
    assert!(
        before.contains("## Beta")
            && after.status() == "unchanged"
            && after.body().contains("since v1"),
        "{}",
        after.text
    );
    mcp.stop().await;
}

/// The Node.js API docs (read in place from the shared corpora): a 254 KB
/// document gives a bounded outline, a big section its children, and `force`
/// pages that put together are the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_large_document_stays_bounded() {
    let corpora = std::env::var_os("MARK_CORPORA")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora")
        });
    let root = corpora.join("nodejs-api");
    let fs_md = std::fs::read_to_string(root.join("fs.md")).unwrap();
    let mcp = Mcp::start(&root_args(&root, &[])).await;

    let r = mcp.fetch("/fs.md").await;
    assert_eq!(r.field("mode"), Some("outline"));
    assert!(r.text.len() < 4096, "{} bytes", r.text.len());
    assert!(r.body().contains("(#promises-api, ") && r.body().contains("subsections"));
    // The section of the only top-level heading is the document: its
    // outline has the document's bounds, not a section's larger ones.
    let title = mcp.fetch("/fs.md#file-system").await;
    assert_eq!(title.field("mode"), Some("outline"));
    assert!(title.text.len() < 4096, "{} bytes", title.text.len());

    let r = mcp.fetch("/fs.md#promises-api").await;
    assert_eq!(r.field("mode"), Some("outline"));
    assert!(
        r.body().contains("(#class-filehandle, ") && r.body().contains("(#filehandleclose, "),
        "{}",
        r.text
    );
    assert!(r.text.len() < 8192);

    let mut got = String::new();
    let mut args = json!({"url": "/fs.md", "force": true});
    loop {
        let r = mcp.call("mark_fetch", args.clone()).await;
        let (text, trailer) = r.body().rsplit_once("\n\n[page ").unwrap();
        assert!(r.text.len() < 81_000);
        got.push_str(text);
        match trailer.split('"').nth(1) {
            Some(cursor) => args["cursor"] = json!(cursor),
            None => break,
        }
    }
    assert_eq!(got, fs_md);
    mcp.stop().await;
}

/// #13: over `--root` the in-process engine ranks any-word and each row
/// says which query words it lacks; words that match nothing are named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_over_a_folder_say_which_words_they_lack() {
    let dir = support::pier_and_hosts();
    let mcp = Mcp::start(&root_args(dir.path(), &[])).await;
    mcp.assert_pier_rows(true).await;
    let r = mcp.lookup_body("zebra quokka").await;
    support::assert_nothing_found(&r, "zebra quokka");
    mcp.stop().await;
}

/// #13: a cursor mark-mcp gave for an older version still says the
/// document changed (its seal vouches for its page and version), while a
/// made-up etag is "not one mark-mcp gave".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_of_an_older_version_says_the_document_changed() {
    let kb = support::copy_kb();
    let mcp = Mcp::start(&root_args(
        kb.path(),
        &["--page-bytes", "4000", "--fresh-for", "0s"],
    ))
    .await;
    let first = mcp
        .call("mark_fetch", json!({"url": "/large.md", "mode": "full"}))
        .await;
    let given = first.body().rsplit('"').nth(1).unwrap().to_string();
    let file = kb.path().join("large.md");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{text}\nOne more line.\n")).unwrap();
    let r = mcp
        .call("mark_fetch", json!({"url": "/large.md", "cursor": given}))
        .await;
    assert!(r.is_error, "{}", r.text);
    assert!(
        r.text
            .contains("/large.md changed since that cursor was given"),
        "{}",
        r.text
    );
    mcp.stop().await;
}
