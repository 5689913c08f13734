//! Every auth outcome through the engine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use mark_proto::{Request, Status, Verb};
use mark_store::{Engine, Op, StoreMode, TokenStore};
use support::{at, token};

struct Setup {
    _dir: tempfile::TempDir,
    _tokens: tempfile::TempDir,
    engine: Engine,
    admin: String,
    docs_writer: String,
    reader: String,
    expired: String,
}

/// Publish on everything (admin), publish on /docs/* only, read on
/// /private/** (making it private), and an expired reader.
fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let tokens = tempfile::tempdir().unwrap();
    let file = tokens.path().join("tokens.toml");
    let admin = token(&file, &["/**"], &[Op::Publish], None);
    let docs_writer = token(&file, &["/docs/*"], &[Op::Publish], None);
    let reader = token(&file, &["/private/**"], &[Op::Read], None);
    let expired = token(
        &file,
        &["/private/**"],
        &[Op::Read],
        Some(at(0) - std::time::Duration::from_secs(1)),
    );
    mark_store::mark(dir.path()).unwrap();
    let engine = Engine::open(
        dir.path(),
        StoreMode::Versioned,
        Some(TokenStore::load(&file).unwrap()),
    )
    .unwrap();
    Setup {
        _dir: dir,
        _tokens: tokens,
        engine,
        admin,
        docs_writer,
        reader,
        expired,
    }
}

fn with_auth(req: Request, tok: Option<&str>) -> Request {
    match tok {
        Some(t) => req.with_meta("auth", t),
        None => req,
    }
}

#[test]
fn write_outcomes() {
    let s = setup();
    let publish = |path: &str, tok: Option<&str>| {
        s.engine
            .handle(
                &with_auth(Request::new(Verb::Publish, path).with_body("x"), tok),
                at(0),
            )
            .status
    };
    assert_eq!(publish("/docs/a.md", None), Status::Unauthorized);
    assert_eq!(
        publish("/docs/a.md", Some("not-a-token")),
        Status::Unauthorized
    );
    // An expired token is unauthorized, as demarkus answers it.
    assert_eq!(
        publish("/docs/a.md", Some(&s.expired)),
        Status::Unauthorized
    );
    assert_eq!(
        publish("/docs/a.md", Some(&s.reader)),
        Status::NotPermitted,
        "read-only token"
    );
    assert_eq!(
        publish("/other/a.md", Some(&s.docs_writer)),
        Status::NotPermitted,
        "outside its paths"
    );
    assert_eq!(
        publish("/docs/deep/a.md", Some(&s.docs_writer)),
        Status::NotPermitted,
        "* is one segment"
    );
    assert_eq!(publish("/docs/a.md", Some(&s.docs_writer)), Status::Created);
    assert_eq!(publish("/anywhere/b.md", Some(&s.admin)), Status::Created);
    let append = s.engine.handle(
        &Request::new(Verb::Append, "/docs/a.md")
            .with_meta("expected-version", "1")
            .with_body("y"),
        at(0),
    );
    assert_eq!(append.status, Status::Unauthorized);
    let archive = s.engine.handle(
        &with_auth(Request::new(Verb::Archive, "/docs/a.md"), Some(&s.reader)),
        at(0),
    );
    assert_eq!(archive.status, Status::NotPermitted);
}

#[test]
fn tokens_expire_by_the_clock_parameter() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = tempfile::tempdir().unwrap();
    let file = tokens.path().join("tokens.toml");
    let t = token(&file, &["/**"], &[Op::Publish], Some(at(100)));
    mark_store::mark(dir.path()).unwrap();
    let engine = Engine::open(
        dir.path(),
        StoreMode::Versioned,
        Some(TokenStore::load(&file).unwrap()),
    )
    .unwrap();
    let req = Request::new(Verb::Publish, "/a.md")
        .with_meta("auth", &t)
        .with_body("x");
    assert_eq!(engine.handle(&req, at(99)).status, Status::Created);
    // Expired: unauthorized, as demarkus answers it.
    assert_eq!(
        engine.handle(&req.clone().with_body("y"), at(100)).status,
        Status::Unauthorized
    );
}

#[test]
fn reads_are_public_unless_a_read_grant_covers_the_path() {
    let s = setup();
    for path in ["/private/secret.md", "/public.md"] {
        let r = s.engine.handle(
            &Request::new(Verb::Publish, path)
                .with_meta("auth", &s.admin)
                .with_body("hidden words"),
            at(0),
        );
        assert_eq!(r.status, Status::Created);
    }
    let fetch = |path: &str, tok: Option<&str>| {
        s.engine
            .handle(&with_auth(Request::new(Verb::Fetch, path), tok), at(0))
            .status
    };
    assert_eq!(fetch("/public.md", None), Status::Ok);
    assert_eq!(fetch("/private/secret.md", None), Status::Unauthorized);
    assert_eq!(
        fetch("/private/secret.md", Some("wrong")),
        Status::Unauthorized
    );
    assert_eq!(
        fetch("/private/secret.md", Some(&s.docs_writer)),
        Status::NotPermitted,
        "known, no read grant"
    );
    assert_eq!(
        fetch("/private/secret.md", Some(&s.expired)),
        Status::Unauthorized
    );
    assert_eq!(fetch("/private/secret.md", Some(&s.reader)), Status::Ok);
    assert_eq!(
        fetch("/private/secret.md/v1", None),
        Status::Unauthorized,
        "pinned versions too"
    );
    assert_eq!(
        fetch("/private/secret.md", Some(&s.admin)),
        Status::NotPermitted,
        "publish does not imply read"
    );
    // VERSIONS and LIST of a covered path need the token as well.
    let versions = |tok| {
        s.engine
            .handle(
                &with_auth(Request::new(Verb::Versions, "/private/secret.md"), tok),
                at(0),
            )
            .status
    };
    assert_eq!(versions(None), Status::Unauthorized);
    assert_eq!(versions(Some(&s.reader)), Status::Ok);
    let list = |tok| {
        s.engine
            .handle(
                &with_auth(Request::new(Verb::List, "/private/"), tok),
                at(0),
            )
            .status
    };
    assert_eq!(list(None), Status::Unauthorized);
    assert_eq!(list(Some(&s.reader)), Status::Ok);
    // LOOKUP leaves out what the caller may not read; fetching by hash does too.
    let lookup = |tok| {
        let r = s.engine.handle(
            &with_auth(
                Request::new(Verb::Lookup, "/").with_meta("query", "hidden"),
                tok,
            ),
            at(0),
        );
        mark_proto::lookup::parse(&r.body)
            .unwrap()
            .rows
            .into_iter()
            .map(|r| r.path)
            .collect::<Vec<_>>()
    };
    assert_eq!(lookup(None), ["/public.md"]);
    assert_eq!(
        lookup(Some(&s.reader)),
        ["/private/secret.md", "/public.md"]
    );
    let by_hash = format!(
        "/sha256-{}",
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"hidden words"))
    );
    let r = s.engine.handle(&Request::new(Verb::Fetch, &by_hash), at(0));
    assert_eq!(r.status, Status::Ok, "the public copy is found");
    // The manifest and health stay public.
    assert_eq!(fetch("/.well-known/agent-manifest.md", None), Status::Ok);
    assert_eq!(fetch("/health", None), Status::Ok);
}

#[test]
fn no_token_store_means_no_publishing_and_public_reads() {
    let dir = tempfile::tempdir().unwrap();
    mark_store::mark(dir.path()).unwrap();
    let engine = Engine::open(dir.path(), StoreMode::Versioned, None).unwrap();
    for verb in [Verb::Publish, Verb::Append, Verb::Archive] {
        let r = engine.handle(
            &Request::new(verb, "/a.md")
                .with_meta("auth", "anything")
                .with_meta("expected-version", "1")
                .with_body("x"),
            at(0),
        );
        assert_eq!(r.status, Status::NotPermitted, "{verb}");
    }
    assert_eq!(
        engine.handle(&Request::new(Verb::List, "/"), at(0)).status,
        Status::Ok
    );
}

#[test]
fn raw_tokens_never_reach_the_token_file() {
    let tokens = tempfile::tempdir().unwrap();
    let file = tokens.path().join("tokens.toml");
    let raw = token(&file, &["/**"], &[Op::Read], None);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains(&raw));
    assert!(text.contains("hash = \"sha256-"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
