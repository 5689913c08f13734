//! The versioned store end to end through `Engine::handle`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use mark_proto::{Request, Status, Verb};
use sha2::{Digest, Sha256};
use support::{Store, at, ok};

#[test]
fn publish_then_fetch_round_trips_with_metadata() {
    let s = Store::new();
    let body = "---\ntitle: Mine\n---\n# Doc\n\nText.\n";
    let created = s.publish_at("/notes/doc.md", body, Some(0), at(5));
    assert_eq!(created.status, Status::Created);
    assert_eq!(created.meta("version"), Some("1"));
    assert_eq!(created.meta("modified"), Some("2026-02-17T10:00:05Z"));

    let resp = s.fetch("/notes/doc.md");
    assert_eq!(resp.status, Status::Ok);
    assert_eq!(
        resp.body,
        body.as_bytes(),
        "content is served verbatim, store frontmatter stripped"
    );
    assert_eq!(resp.meta("version"), Some("1"));
    assert_eq!(resp.meta("modified"), Some("2026-02-17T10:00:05Z"));
    let stored = std::fs::read(s.dir.path().join("notes/versions/doc.md.v1")).unwrap();
    assert_eq!(
        resp.meta("etag"),
        Some(hex::encode(Sha256::digest(&stored)).as_str())
    );
    let hash = format!("sha256-{}", hex::encode(Sha256::digest(body.as_bytes())));
    assert_eq!(resp.meta("content-hash"), Some(hash.as_str()));
    // The wire form encodes and parses back.
    let wire = resp.encode().unwrap();
    assert_eq!(mark_proto::Response::parse(&wire).unwrap(), resp);
}

#[test]
fn layout_on_disk_is_the_documented_one() {
    let s = Store::new();
    ok(&s.publish("/dir/doc.md", "one\n"));
    ok(&s.publish("/dir/doc.md", "two\n"));
    let root = s.dir.path();
    let v1 = std::fs::read(root.join("dir/versions/doc.md.v1")).unwrap();
    let v2 = std::fs::read_to_string(root.join("dir/versions/doc.md.v2")).unwrap();
    assert!(String::from_utf8_lossy(&v1).starts_with("---\nversion: 1\nmodified: "));
    assert!(v2.starts_with(&format!(
        "---\nversion: 2\nprevious-hash: sha256-{}\n",
        hex::encode(Sha256::digest(&v1))
    )));
    assert!(v2.ends_with("---\ntwo\n"));
    #[cfg(unix)]
    assert_eq!(
        std::fs::read_link(root.join("dir/doc.md")).unwrap(),
        std::path::Path::new("versions/doc.md.v2")
    );
    // Nothing but the two versions in the versions folder: no temp files left.
    assert_eq!(
        std::fs::read_dir(root.join("dir/versions"))
            .unwrap()
            .count(),
        2
    );
}

#[test]
fn pinned_versions_and_current_version() {
    let s = Store::new();
    ok(&s.publish("/a.md", "first"));
    ok(&s.publish("/a.md", "second"));
    let v1 = s.fetch("/a.md/v1");
    assert_eq!(
        (v1.status.clone(), v1.body.as_slice()),
        (Status::Ok, b"first".as_slice())
    );
    assert_eq!(v1.meta("version"), Some("1"));
    assert_eq!(v1.meta("current-version"), Some("2"));
    assert_eq!(s.text("/a.md"), "second");
    assert_eq!(s.fetch("/a.md/v3").status, Status::NotFound);
    assert_eq!(s.fetch("/a.md/v0").status, Status::NotFound);
}

#[test]
fn conditional_fetch() {
    let s = Store::new();
    ok(&s.publish_at("/a.md", "x", None, at(100)));
    let full = s.fetch("/a.md");
    let etag = full.meta("etag").unwrap().to_string();
    let nm = s.handle(Request::new(Verb::Fetch, "/a.md").with_meta("if-none-match", &etag));
    assert_eq!(nm.status, Status::NotModified);
    assert!(nm.body.is_empty() && nm.metadata.is_empty());
    let changed =
        s.handle(Request::new(Verb::Fetch, "/a.md").with_meta("if-none-match", "0".repeat(64)));
    assert_eq!(changed.status, Status::Ok);
    // if-modified-since at or after the modification time: not modified.
    let since = s.handle(
        Request::new(Verb::Fetch, "/a.md").with_meta("if-modified-since", "2026-02-17T10:01:40Z"),
    );
    assert_eq!(since.status, Status::NotModified);
    let before = s.handle(
        Request::new(Verb::Fetch, "/a.md").with_meta("if-modified-since", "2026-02-17T10:01:39Z"),
    );
    assert_eq!(before.status, Status::Ok);
    // if-none-match is checked first: a mismatch serves even when the date says unchanged.
    let both = s.handle(
        Request::new(Verb::Fetch, "/a.md")
            .with_meta("if-none-match", "nope")
            .with_meta("if-modified-since", "2030-01-01T00:00:00Z"),
    );
    assert_eq!(both.status, Status::Ok);
    // Conditional on a pinned version too.
    let pinned = s.handle(Request::new(Verb::Fetch, "/a.md/v1").with_meta("if-none-match", &etag));
    assert_eq!(pinned.status, Status::NotModified);
}

#[test]
fn fetch_by_content_hash_health_and_not_found() {
    let s = Store::new();
    ok(&s.publish("/x/a.md", "alpha"));
    let hash = hex::encode(Sha256::digest(b"alpha"));
    let by_hash = s.fetch(&format!("/sha256-{hash}"));
    assert_eq!(by_hash.status, Status::Ok);
    assert_eq!(by_hash.body, b"alpha");
    // After a new version the old hash no longer names a current document.
    ok(&s.publish("/x/a.md", "beta"));
    assert_eq!(s.fetch(&format!("/sha256-{hash}")).status, Status::NotFound);
    assert_eq!(s.fetch("/health").status, Status::Ok);
    let missing = s.fetch("/nope.md");
    assert_eq!(missing.status, Status::NotFound);
    assert!(missing.text().unwrap().starts_with("# Not found\n\n"));
    // A folder is not a document.
    assert_eq!(s.fetch("/x/").status, Status::NotFound);
    assert_eq!(s.fetch("/x").status, Status::NotFound);
}

#[test]
fn versions_lists_newest_first_and_verifies_the_chain() {
    let s = Store::new();
    ok(&s.publish_at("/a.md", "one", None, at(0)));
    ok(&s.publish_at("/a.md", "two", None, at(60)));
    ok(&s.publish_at("/a.md", "three", None, at(120)));
    let v = s.handle(Request::new(Verb::Versions, "/a.md"));
    assert_eq!(v.status, Status::Ok);
    assert_eq!(v.meta("total"), Some("3"));
    assert_eq!(v.meta("current"), Some("3"));
    assert_eq!(v.meta("chain-valid"), Some("true"));
    assert_eq!(v.meta("chain-error"), None);
    assert_eq!(
        v.text().unwrap(),
        "- [v3](/a.md/v3) - 2026-02-17T10:02:00Z\n- [v2](/a.md/v2) - 2026-02-17T10:01:00Z\n- [v1](/a.md/v1) - 2026-02-17T10:00:00Z\n"
    );
    let parsed = mark_proto::versions::parse(&v.body).unwrap();
    assert_eq!(parsed.len(), 3);

    // Tamper with v2's content: v3's previous-hash no longer matches.
    let v2_path = s.dir.path().join("versions/a.md.v2");
    let tampered = std::fs::read_to_string(&v2_path)
        .unwrap()
        .replace("two", "TWO");
    std::fs::write(&v2_path, tampered).unwrap();
    let v = s.handle(Request::new(Verb::Versions, "/a.md"));
    assert_eq!(v.meta("chain-valid"), Some("false"));
    assert_eq!(
        v.meta("chain-error"),
        Some("v3's previous-hash does not match v2")
    );
    assert_eq!(
        s.handle(Request::new(Verb::Versions, "/missing.md")).status,
        Status::NotFound
    );
}

#[test]
fn archive_and_unarchive() {
    let s = Store::new();
    ok(&s.publish("/a.md", "body"));
    let r = s.archive("/a.md");
    assert_eq!(
        (r.status.clone(), r.meta("version")),
        (Status::Ok, Some("1"))
    );
    assert!(s.dir.path().join("versions/a.md.archived").is_file());
    let f = s.fetch("/a.md");
    assert_eq!(f.status, Status::Archived);
    assert!(f.body.is_empty());
    // Pinned versions still work.
    assert_eq!(s.fetch("/a.md/v1").status, Status::Ok);
    // Archiving again is harmless; no new version either way.
    ok(&s.archive("/a.md"));
    // Hidden from LIST unless asked.
    let list = s.handle(Request::new(Verb::List, "/"));
    assert_eq!(list.meta("entries"), Some("0"));
    let all = s.handle(Request::new(Verb::List, "/").with_meta("include-archived", "true"));
    assert_eq!(all.meta("entries"), Some("1"));
    // APPEND refuses an archived document.
    assert_eq!(s.append("/a.md", "more", 1).status, Status::Archived);
    // An empty PUBLISH unarchives without a new version.
    let un = s.publish("/a.md", "");
    assert_eq!(
        (un.status.clone(), un.meta("version")),
        (Status::Ok, Some("1"))
    );
    assert_eq!(s.text("/a.md"), "body");
    // An empty PUBLISH on a live document is refused.
    assert_eq!(s.publish("/a.md", "").status, Status::BadRequest);
    assert_eq!(s.publish("/new.md", "").status, Status::BadRequest);
    // A new version after archiving also brings the document back.
    ok(&s.archive("/a.md"));
    let r = s.publish("/a.md", "fresh");
    assert_eq!(
        (r.status.clone(), r.meta("version")),
        (Status::Created, Some("2"))
    );
    assert_eq!(s.text("/a.md"), "fresh");
    assert_eq!(s.archive("/missing.md").status, Status::NotFound);
}

#[test]
fn identical_publish_makes_no_new_version() {
    let s = Store::new();
    ok(&s.publish("/a.md", "same"));
    let r = s.publish("/a.md", "same");
    assert_eq!(
        (r.status.clone(), r.meta("version")),
        (Status::Ok, Some("1"))
    );
    assert!(!s.dir.path().join("versions/a.md.v2").exists());
}

#[test]
fn expected_version_conflicts() {
    let s = Store::new();
    ok(&s.publish_at("/a.md", "one", Some(0), at(0)));
    let c = s.publish_at("/a.md", "again", Some(0), at(0));
    assert_eq!(c.status, Status::Conflict);
    assert_eq!(
        (c.meta("your-version"), c.meta("server-version")),
        (Some("0"), Some("1"))
    );
    let c = s.publish_at("/a.md", "two", Some(5), at(0));
    assert_eq!(
        (c.status.clone(), c.meta("server-version")),
        (Status::Conflict, Some("1"))
    );
    let ok2 = s.publish_at("/a.md", "two", Some(1), at(0));
    assert_eq!(
        (ok2.status.clone(), ok2.meta("version")),
        (Status::Created, Some("2"))
    );
    let bad = s.handle(
        Request::new(Verb::Publish, "/a.md")
            .with_meta("auth", &s.token)
            .with_meta("expected-version", "two")
            .with_body("x"),
    );
    assert_eq!(bad.status, Status::BadRequest);
}

#[test]
fn append_rules() {
    let s = Store::new();
    assert_eq!(s.append("/a.md", "x", 1).status, Status::NotFound);
    ok(&s.publish("/a.md", "line one"));
    let r = s.append("/a.md", "line two", 1);
    assert_eq!(
        (r.status.clone(), r.meta("version")),
        (Status::Created, Some("2"))
    );
    assert_eq!(s.text("/a.md"), "line one\nline two");
    // Stale expected-version: conflict.
    let c = s.append("/a.md", "line three", 1);
    assert_eq!(
        (c.status.clone(), c.meta("server-version")),
        (Status::Conflict, Some("2"))
    );
    // expected-version is required and at least 1; a body is required.
    let no_expected = s.handle(
        Request::new(Verb::Append, "/a.md")
            .with_meta("auth", &s.token)
            .with_body("x"),
    );
    assert_eq!(no_expected.status, Status::BadRequest);
    assert_eq!(s.append("/a.md", "x", 0).status, Status::BadRequest);
    assert_eq!(s.append("/a.md", "", 2).status, Status::BadRequest);
}

#[test]
fn document_size_limit() {
    let mut s = Store::new();
    s.engine = mark_store::Engine::open(
        s.dir.path(),
        mark_store::StoreMode::Versioned,
        Some(mark_store::TokenStore::load(&s.tokens.path().join("tokens.toml")).unwrap()),
    )
    .unwrap()
    .with_max_document_bytes(10);
    assert_eq!(s.publish("/a.md", "01234567890").status, Status::TooLarge);
    ok(&s.publish("/a.md", "0123456789"));
    // APPEND checks the size of the result.
    assert_eq!(s.append("/a.md", "x", 1).status, Status::TooLarge);
}

#[test]
fn default_limit_is_one_mebibyte() {
    let s = Store::new();
    let big = "a".repeat(mark_store::DEFAULT_MAX_DOCUMENT_BYTES + 1);
    assert_eq!(s.publish("/big.md", &big).status, Status::TooLarge);
}

#[test]
fn list_sorts_encodes_pages_and_hides() {
    let s = Store::new();
    for name in ["/b.md", "/a.md", "/my notes/x.md", "/sub/y.md", "/c.md"] {
        ok(&s.publish(name, "x"));
    }
    std::fs::write(s.dir.path().join(".hidden.md"), "x").unwrap();
    std::fs::create_dir(s.dir.path().join(".git")).unwrap();
    let all = s.handle(Request::new(Verb::List, "/"));
    assert_eq!(all.status, Status::Ok);
    assert_eq!(
        (all.meta("entries"), all.meta("complete")),
        (Some("5"), Some("true"))
    );
    assert_eq!(
        all.text().unwrap(),
        "\n- [a.md](a.md)\n- [b.md](b.md)\n- [c.md](c.md)\n- [my notes/](my%20notes/)\n- [sub/](sub/)\n"
    );
    assert!(!all.text().unwrap().contains("versions"));
    // Paging with a cursor.
    let p1 = s.handle(Request::new(Verb::List, "/").with_meta("page-size", "2"));
    assert_eq!(
        (p1.meta("entries"), p1.meta("complete")),
        (Some("2"), Some("false"))
    );
    let cursor = p1.meta("next-cursor").unwrap().to_string();
    let p2 = s.handle(
        Request::new(Verb::List, "/")
            .with_meta("page-size", "2")
            .with_meta("cursor", &cursor),
    );
    let names2: Vec<String> = mark_proto::list::parse(&p2.body)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names2, ["c.md", "my notes"]);
    let p3 = s.handle(
        Request::new(Verb::List, "/")
            .with_meta("page-size", "2")
            .with_meta("cursor", p2.meta("next-cursor").unwrap()),
    );
    assert_eq!(
        (
            p3.meta("entries"),
            p3.meta("complete"),
            p3.meta("next-cursor")
        ),
        (Some("1"), Some("true"), None)
    );
    // Sub-folders, bad page sizes, missing folders, and the store's own folders.
    let sub = s.handle(Request::new(Verb::List, "/my%20notes/"));
    assert_eq!(sub.text().unwrap(), "\n- [x.md](x.md)\n");
    assert_eq!(
        s.handle(Request::new(Verb::List, "/").with_meta("page-size", "0"))
            .status,
        Status::BadRequest
    );
    assert_eq!(
        s.handle(Request::new(Verb::List, "/").with_meta("page-size", "many"))
            .status,
        Status::BadRequest
    );
    assert_eq!(
        s.handle(Request::new(Verb::List, "/").with_meta("include-archived", "maybe"))
            .status,
        Status::BadRequest
    );
    assert_eq!(
        s.handle(Request::new(Verb::List, "/none/")).status,
        Status::NotFound
    );
    assert_eq!(
        s.handle(Request::new(Verb::List, "/versions/")).status,
        Status::NotFound
    );
    assert_eq!(s.fetch("/versions/a.md.v1").status, Status::NotFound);
    assert_eq!(s.fetch("/.hidden.md").status, Status::NotFound);
}

#[test]
fn list_pages_are_capped_at_1000() {
    let s = Store::new();
    let vdir = s.dir.path().join("versions");
    std::fs::create_dir(&vdir).unwrap();
    // Write 1001 documents straight in the store layout (fast: no publish round trips).
    for i in 0..1001 {
        std::fs::write(
            vdir.join(format!("d{i:04}.md.v1")),
            "---\nversion: 1\n---\nx",
        )
        .unwrap();
    }
    let page = s.handle(Request::new(Verb::List, "/").with_meta("page-size", "5000"));
    assert_eq!(
        (page.meta("entries"), page.meta("complete")),
        (Some("1000"), Some("false"))
    );
    assert_eq!(page.meta("next-cursor"), Some("d0999.md"));
}

#[test]
fn reserved_and_misplaced_writes_are_refused() {
    let s = Store::new();
    ok(&s.publish("/a.md", "x"));
    assert_eq!(s.publish("/a.md/v2", "x").status, Status::BadRequest);
    assert_eq!(s.publish("/health", "x").status, Status::BadRequest);
    assert_eq!(s.publish("/dir/", "x").status, Status::BadRequest);
    assert_eq!(s.publish("/", "x").status, Status::BadRequest);
    // A document where a folder must be.
    assert_eq!(s.publish("/a.md/b.md", "x").status, Status::BadRequest);
    // An unmanaged file in the way is never replaced.
    std::fs::write(s.dir.path().join("plain.md"), "mine").unwrap();
    assert_eq!(s.publish("/plain.md", "x").status, Status::BadRequest);
    assert_eq!(
        std::fs::read_to_string(s.dir.path().join("plain.md")).unwrap(),
        "mine"
    );
    // Hidden names and the store's folders are not addressable.
    assert_eq!(s.publish("/.secret.md", "x").status, Status::NotFound);
    assert_eq!(s.publish("/versions/a.md", "x").status, Status::NotFound);
}

#[test]
fn crash_leftovers_are_recovered_on_open() {
    let mut s = Store::new();
    ok(&s.publish("/a.md", "one"));
    ok(&s.publish("/a.md", "two"));
    let root = s.dir.path().to_path_buf();
    // A crash between writing v2 and switching the link leaves the link at v1,
    // and a killed writer leaves a hidden temp file.
    #[cfg(unix)]
    {
        std::fs::remove_file(root.join("a.md")).unwrap();
        std::os::unix::fs::symlink("versions/a.md.v1", root.join("a.md")).unwrap();
    }
    std::fs::write(root.join("versions/.a.md.v3.99.0.tmp"), "---\nversion: 3\n").unwrap();
    // Reads already treat the highest complete version as current.
    assert_eq!(s.text("/a.md"), "two");
    s.reopen();
    #[cfg(unix)]
    assert_eq!(
        std::fs::read_link(root.join("a.md")).unwrap(),
        std::path::Path::new("versions/a.md.v2")
    );
    let r = s.publish("/a.md", "three");
    assert_eq!(r.meta("version"), Some("3"));
    assert_eq!(
        s.handle(Request::new(Verb::Versions, "/a.md"))
            .meta("chain-valid"),
        Some("true")
    );
}

#[test]
fn agent_manifest_is_public_and_generated_or_served() {
    let s = Store::new();
    let m = s.fetch("/.well-known/agent-manifest.md");
    assert_eq!(m.status, Status::Ok);
    let text = m.text().unwrap();
    assert!(text.contains("## Capabilities"));
    assert!(text.contains("lookup-match: catalog, body"));
    assert!(text.contains("PUBLISH"));
    std::fs::create_dir(s.dir.path().join(".well-known")).unwrap();
    std::fs::write(
        s.dir.path().join(".well-known/agent-manifest.md"),
        "# Ours\n",
    )
    .unwrap();
    assert_eq!(s.text("/.well-known/agent-manifest.md"), "# Ours\n");
    // Other hidden paths stay hidden.
    assert_eq!(s.fetch("/.well-known/other.md").status, Status::NotFound);
}

#[test]
fn flat_mode_refuses_writes_and_serves_files() {
    let (_dir, engine) = support::flat(&[("a.md", "# A\n"), ("sub/b.md", "b"), ("notes.txt", "t")]);
    let fetch = |p: &str| engine.handle(&Request::new(Verb::Fetch, p), at(0));
    let a = fetch("/a.md");
    assert_eq!(
        (a.status.clone(), a.meta("version"), a.body.as_slice()),
        (Status::Ok, Some("1"), b"# A\n".as_slice())
    );
    assert_eq!(
        a.meta("etag"),
        Some(hex::encode(Sha256::digest(b"# A\n")).as_str())
    );
    assert_eq!(fetch("/a.md/v1").meta("current-version"), Some("1"));
    assert_eq!(fetch("/a.md/v2").status, Status::NotFound);
    assert_eq!(
        fetch("/notes.txt").status,
        Status::NotFound,
        "only .md files are documents"
    );
    let list = engine.handle(&Request::new(Verb::List, "/"), at(0));
    assert_eq!(list.text().unwrap(), "\n- [a.md](a.md)\n- [sub/](sub/)\n");
    let v = engine.handle(&Request::new(Verb::Versions, "/sub/b.md"), at(0));
    assert_eq!(
        (v.meta("total"), v.meta("current"), v.meta("chain-valid")),
        (Some("1"), Some("1"), Some("true"))
    );
    for verb in [Verb::Publish, Verb::Append, Verb::Archive] {
        let r = engine.handle(
            &Request::new(verb, "/a.md")
                .with_meta("expected-version", "1")
                .with_body("x"),
            at(0),
        );
        assert_eq!(r.status, Status::NotPermitted, "{verb}");
    }
    let manifest = fetch("/.well-known/agent-manifest.md");
    assert!(manifest.text().unwrap().contains("read-only"));
}

#[test]
fn damage_to_one_document_does_not_break_the_others() {
    let mut s = Store::new();
    ok(&s.publish("/good.md", "# Good\n\nfindable words\n"));
    ok(&s.publish("/bad.md", "# Bad\n\nfindable words\n"));
    // A damaged version file (no store frontmatter) and a plain file where bad.md's link was.
    std::fs::write(s.dir.path().join("versions/bad.md.v1"), "garbage").unwrap();
    std::fs::remove_file(s.dir.path().join("bad.md")).unwrap();
    std::fs::write(s.dir.path().join("bad.md"), "a plain file").unwrap();
    s.reopen();
    assert_eq!(
        std::fs::read_to_string(s.dir.path().join("bad.md")).unwrap(),
        "a plain file",
        "never replaced"
    );
    assert_eq!(s.fetch("/bad.md").status, Status::ServerError);
    let v = s.handle(Request::new(Verb::Versions, "/bad.md"));
    assert_eq!(v.meta("chain-valid"), Some("false"));
    assert!(
        v.meta("chain-error")
            .unwrap()
            .starts_with("v1 is unreadable")
    );
    let found = s.handle(Request::new(Verb::Lookup, "/").with_meta("query", "findable"));
    assert_eq!(found.status, Status::Ok);
    let rows = mark_proto::lookup::parse(&found.body).unwrap().rows;
    assert_eq!(
        rows.iter().map(|r| r.target()).collect::<Vec<_>>(),
        ["/good.md#good"]
    );
}

/// #12.1: a store is recognised by its marker only. A folder that is
/// neither marked nor empty is refused in versioned mode; the first write
/// into an empty folder marks it; opening without tokens repairs nothing.
#[test]
fn a_store_is_its_marker_and_a_read_only_open_changes_nothing() {
    use mark_store::{Engine, RootKind, STORE_MARKER, StoreMode};
    let plain = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(plain.path().join("api/versions")).unwrap();
    std::fs::write(plain.path().join("api/versions/schema.v1"), "s").unwrap();
    std::fs::write(plain.path().join("notes.md"), "# Notes\n").unwrap();
    let e = Engine::open(plain.path(), StoreMode::Versioned, None).unwrap_err();
    assert!(e.to_string().contains("no .mark-store marker"), "{e}");

    let empty = tempfile::tempdir().unwrap();
    let s = Store::new();
    assert!(s.dir.path().join(STORE_MARKER).is_file());
    std::fs::remove_file(s.dir.path().join(STORE_MARKER)).unwrap();
    // Reopened on the folder it marks at its first write.
    let tokens = mark_store::TokenStore::load(&s.tokens.path().join("tokens.toml")).unwrap();
    let engine = Engine::open(empty.path(), StoreMode::Versioned, Some(tokens)).unwrap();
    let publish = Request::new(Verb::Publish, "/a.md")
        .with_meta("auth", &s.token)
        .with_body("one");
    assert_eq!(engine.handle(&publish, at(0)).status, Status::Created);
    assert_eq!(RootKind::of(empty.path()).unwrap(), RootKind::Store);

    // A link one step behind stays behind when opened read-only.
    #[cfg(unix)]
    {
        let link = empty.path().join("a.md");
        std::fs::remove_file(&link).unwrap();
        drop(engine);
        let engine = Engine::open(empty.path(), StoreMode::Versioned, None).unwrap();
        let fetched = engine.handle(&Request::new(Verb::Fetch, "/a.md"), at(1));
        assert_eq!(fetched.body, b"one");
        assert!(std::fs::symlink_metadata(&link).is_err(), "no link repair");
    }
}
