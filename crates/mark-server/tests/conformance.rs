//! Conformance of `mark-server` to PROTOCOL.md: a real server process on
//! 127.0.0.1 (started by mark-testkit), real requests through `mark-client`,
//! and raw QUIC streams where a test must send bytes the client refuses to
//! write (malformed or oversized requests, unfinished streams).
//!
//! Traversal answers: a path the wire format forbids (NUL, control
//! characters, no leading `/`) is refused by the request parser with
//! `bad-request`; every other escape attempt (`..`, encoded dots and
//! slashes, backslashes, symlinks out of the root) is a well-formed request
//! for a document that does not exist, so it answers `not-found`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mark_client::{Client, ClientConfig, Trust};
use mark_proto::{Request, Response, Status, Verb};
use mark_testkit::{MarkServerProcess, TempStore, generate_token, import_store, run_mark_server};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

// ---------------------------------------------------------------- fixture

/// The knowledge base every test starts from.
fn write_fixture(dir: &Path) {
    let files: &[(&str, &str)] = &[
        (
            "index.md",
            "---\ntitle: Home\ntags: [welcome, overview]\n---\n# Home\n\nWelcome to the tidewatch knowledge base.\n\n## Links\n\nSee [the guide](guide/intro.md).\n",
        ),
        (
            "guide/intro.md",
            "# Intro\n\nThe ingest pipeline buffers readings in jetstream.\n\n## Setup\n\nInstall the estuary collector before the gateway.\n",
        ),
        ("guide/setup.md", "# Setup\n\nRun the installer.\n"),
        ("private/plan.md", "# Plan\n\nThe private roadmap.\n"),
        (".hidden.md", "# Hidden\n\nNever listed.\n"),
    ];
    for (path, text) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    std::fs::create_dir_all(dir.join("many")).unwrap();
    for i in 0..25 {
        std::fs::write(
            dir.join(format!("many/file-{i:02}.md")),
            format!("# File {i}\n"),
        )
        .unwrap();
    }
}

/// Raw tokens issued for the fixture's token file.
struct Tokens {
    /// `publish` on `/**`.
    writer: String,
    /// `publish` on `/guide/**` only.
    guide_writer: String,
    /// `read` on `/private/**` (which makes that subtree private).
    private_reader: String,
    /// `publish` on `/**`, expired in 2020.
    expired: String,
}

/// A served fixture store with a token file.
struct Fixture {
    server: MarkServerProcess,
    store: TempStore,
    tokens: Tokens,
    client: Client,
    _tokens_dir: tempfile::TempDir,
}

impl Fixture {
    fn start() -> Fixture {
        Fixture::start_with(&[])
    }

    fn start_with(extra: &[&str]) -> Fixture {
        let src = tempfile::tempdir().unwrap();
        write_fixture(src.path());
        let store = import_store(src.path()).unwrap();
        let tokens_dir = tempfile::tempdir().unwrap();
        let file = tokens_dir.path().join("tokens.toml");
        let tokens = Tokens {
            writer: generate_token(&file, "/**", "publish", None).unwrap(),
            guide_writer: generate_token(&file, "/guide/**", "publish", None).unwrap(),
            private_reader: generate_token(&file, "/private/**", "read", None).unwrap(),
            // `token generate` refuses a past expiry: the library writes one.
            expired: mark_store::generate_token(
                &["/**".to_string()],
                &[mark_store::Op::Publish],
                Some(std::time::UNIX_EPOCH + Duration::from_secs(1_577_836_800)),
                &file,
            )
            .unwrap(),
        };
        let mut args = vec!["--tokens".to_string(), file.display().to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        let server = MarkServerProcess::start(store.path(), &args).unwrap();
        let client = client_for(&server);
        Fixture {
            server,
            store,
            tokens,
            client,
            _tokens_dir: tokens_dir,
        }
    }

    async fn send(&self, request: Request) -> Response {
        send(&self.client, &self.server, request).await
    }

    async fn fetch(&self, path: &str) -> Response {
        self.send(Request::new(Verb::Fetch, path)).await
    }

    async fn publish(&self, path: &str, body: &str) -> Response {
        self.send(
            Request::new(Verb::Publish, path)
                .with_meta("auth", &self.tokens.writer)
                .with_body(body),
        )
        .await
    }

    /// The folder holding the store root (files outside the root go here).
    fn outside(&self) -> PathBuf {
        self.store.path().parent().unwrap().to_path_buf()
    }
}

fn client_for(server: &MarkServerProcess) -> Client {
    Client::new(ClientConfig {
        trust: Trust::Pin(server.fingerprint),
        ..Default::default()
    })
    .unwrap()
}

async fn send(client: &Client, server: &MarkServerProcess, request: Request) -> Response {
    tokio::time::timeout(
        Duration::from_secs(30),
        client.request("127.0.0.1", server.addr.port(), request),
    )
    .await
    .expect("request timed out")
    .expect("request failed")
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn assert_status(resp: &Response, status: Status) {
    assert_eq!(
        resp.status,
        status,
        "unexpected answer: {:?} {}",
        resp.metadata,
        String::from_utf8_lossy(&resp.body)
    );
}

// ---------------------------------------------------------------- raw QUIC

/// A bare QUIC connection for bytes `mark-client` will not send.
mod raw {
    use super::*;
    use quinn::crypto::rustls::QuicClientConfig;

    /// A connection to the server (the endpoint is kept alive with it).
    pub struct RawConnection {
        pub connection: quinn::Connection,
        _endpoint: quinn::Endpoint,
    }

    pub async fn connect(server: &MarkServerProcess) -> RawConnection {
        try_connect(server).await.unwrap()
    }

    /// Connects, or says why the handshake failed.
    pub async fn try_connect(server: &MarkServerProcess) -> Result<RawConnection, String> {
        try_connect_with_alpn(server, &[b"mark"]).await
    }

    /// Connects offering these ALPN protocols.
    pub async fn try_connect_with_alpn(
        server: &MarkServerProcess,
        alpn: &[&[u8]],
    ) -> Result<RawConnection, String> {
        // mark-client's own TLS (pinned certificate, TLS 1.3), other ALPNs allowed.
        let mut tls = mark_client::rustls_client_config(&Trust::Pin(server.fingerprint)).unwrap();
        tls.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(
            QuicClientConfig::try_from(tls).unwrap(),
        )));
        let connecting = endpoint
            .connect(server.addr, "localhost")
            .map_err(|e| e.to_string())?;
        let connection = tokio::time::timeout(Duration::from_secs(10), connecting)
            .await
            .map_err(|_| "handshake timed out".to_string())?
            .map_err(|e| e.to_string())?;
        Ok(RawConnection {
            connection,
            _endpoint: endpoint,
        })
    }

    impl RawConnection {
        /// Sends `bytes` as one request and reads the whole response. A
        /// failed write is ignored: the server may stop reading an oversized
        /// request and answer at once.
        pub async fn exchange(&self, bytes: &[u8]) -> Response {
            Response::parse(&self.exchange_bytes(bytes).await).unwrap()
        }

        /// Like [`Self::exchange`], returning the response bytes as sent.
        pub async fn exchange_bytes(&self, bytes: &[u8]) -> Vec<u8> {
            let (mut send, mut recv) = self.connection.open_bi().await.unwrap();
            let _ = send.write_all(bytes).await;
            let _ = send.finish();
            tokio::time::timeout(Duration::from_secs(30), recv.read_to_end(1 << 20))
                .await
                .expect("response timed out")
                .expect("response read failed")
        }
    }
}

// ---------------------------------------------------------------- FETCH

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_answers_ok_with_modified_etag_version_and_content_hash() {
    let fx = Fixture::start();
    let resp = fx.fetch("/guide/intro.md").await;
    assert_status(&resp, Status::Ok);
    assert!(resp.text().unwrap().starts_with("# Intro\n"));
    assert_eq!(resp.meta("version"), Some("1"));
    let etag = resp.meta("etag").unwrap();
    assert_eq!(etag.len(), 64);
    assert!(
        etag.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    );
    assert_eq!(
        resp.meta("content-hash"),
        Some(format!("sha256-{}", sha256_hex(&resp.body)).as_str())
    );
    let modified = resp.meta("modified").unwrap();
    time::OffsetDateTime::parse(modified, &time::format_description::well_known::Rfc3339).unwrap();
    assert!(modified.ends_with('Z'), "modified must be UTC: {modified}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn if_none_match_gives_not_modified_with_no_body_and_no_other_metadata() {
    let fx = Fixture::start();
    let first = fx.fetch("/index.md").await;
    let etag = first.meta("etag").unwrap().to_string();
    let again = fx
        .send(Request::new(Verb::Fetch, "/index.md").with_meta("if-none-match", &etag))
        .await;
    assert_status(&again, Status::NotModified);
    assert!(again.body.is_empty());
    assert!(
        again.metadata.is_empty(),
        "not-modified carries {:?}",
        again.metadata
    );

    let other = fx
        .send(Request::new(Verb::Fetch, "/index.md").with_meta("if-none-match", "0".repeat(64)))
        .await;
    assert_status(&other, Status::Ok);
    assert_eq!(other.body, first.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn if_modified_since_gives_not_modified_only_when_unchanged_since() {
    let fx = Fixture::start();
    let first = fx.fetch("/index.md").await;
    let modified = first.meta("modified").unwrap().to_string();
    let same = fx
        .send(Request::new(Verb::Fetch, "/index.md").with_meta("if-modified-since", &modified))
        .await;
    assert_status(&same, Status::NotModified);
    assert!(same.body.is_empty() && same.metadata.is_empty());

    let older = fx
        .send(
            Request::new(Verb::Fetch, "/index.md")
                .with_meta("if-modified-since", "2000-01-01T00:00:00Z"),
        )
        .await;
    assert_status(&older, Status::Ok);

    // if-none-match is checked first: a stale etag wins over a fresh date.
    let stale_etag = fx
        .send(
            Request::new(Verb::Fetch, "/index.md")
                .with_meta("if-none-match", "0".repeat(64))
                .with_meta("if-modified-since", &modified),
        )
        .await;
    assert_status(&stale_etag, Status::Ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pinned_versions_answer_with_current_version() {
    let fx = Fixture::start();
    let v1 = fx.fetch("/guide/setup.md").await;
    let created = fx
        .publish("/guide/setup.md", "# Setup\n\nRun the new installer.\n")
        .await;
    assert_status(&created, Status::Created);
    assert_eq!(created.meta("version"), Some("2"));

    let pinned = fx.fetch("/guide/setup.md/v1").await;
    assert_status(&pinned, Status::Ok);
    assert_eq!(pinned.body, v1.body);
    assert_eq!(pinned.meta("version"), Some("1"));
    assert_eq!(pinned.meta("current-version"), Some("2"));

    let current = fx.fetch("/guide/setup.md").await;
    assert_eq!(current.text(), Some("# Setup\n\nRun the new installer.\n"));
    assert_eq!(current.meta("version"), Some("2"));

    assert_status(&fx.fetch("/guide/setup.md/v3").await, Status::NotFound);
    assert_status(&fx.fetch("/guide/setup.md/v0").await, Status::NotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_hash_fetch_finds_the_document_with_that_body() {
    let fx = Fixture::start();
    let doc = fx.fetch("/guide/intro.md").await;
    let hash = doc.meta("content-hash").unwrap().to_string();
    let by_hash = fx.fetch(&format!("/{hash}")).await;
    assert_status(&by_hash, Status::Ok);
    assert_eq!(by_hash.body, doc.body);
    assert_status(
        &fx.fetch(&format!("/sha256-{}", "0".repeat(64))).await,
        Status::NotFound,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_answers_ok() {
    let fx = Fixture::start();
    assert_status(&fx.fetch("/health").await, Status::Ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archived_documents_answer_archived_and_an_empty_publish_unarchives() {
    let fx = Fixture::start();
    let archive = fx
        .send(Request::new(Verb::Archive, "/guide/setup.md").with_meta("auth", &fx.tokens.writer))
        .await;
    assert!(archive.status.is_success(), "archive: {:?}", archive.status);

    let archived = fx.fetch("/guide/setup.md").await;
    assert_status(&archived, Status::Archived);
    assert!(archived.body.is_empty());

    let pinned = fx.fetch("/guide/setup.md/v1").await;
    assert_status(&pinned, Status::Ok);
    assert_eq!(pinned.text(), Some("# Setup\n\nRun the installer.\n"));

    let unarchive = fx.publish("/guide/setup.md", "").await;
    assert!(
        unarchive.status.is_success(),
        "unarchive: {:?}",
        unarchive.status
    );
    let back = fx.fetch("/guide/setup.md").await;
    assert_status(&back, Status::Ok);
    assert_eq!(back.text(), Some("# Setup\n\nRun the installer.\n"));
}

// ---------------------------------------------------------------- LIST, VERSIONS

fn listed_names(resp: &Response) -> Vec<String> {
    resp.text()
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("- ["))
        .filter_map(|l| l.split_once(']').map(|(name, _)| name.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_pages_with_cursor_and_never_shows_hidden_names() {
    let fx = Fixture::start();
    let root = fx.send(Request::new(Verb::List, "/")).await;
    assert_status(&root, Status::Ok);
    let names = listed_names(&root);
    assert!(names.contains(&"index.md".to_string()), "{names:?}");
    assert!(names.contains(&"guide/".to_string()), "{names:?}");
    assert!(
        names.iter().all(|n| !n.starts_with('.')),
        "hidden listed: {names:?}"
    );
    assert_eq!(root.meta("entries"), Some(names.len().to_string().as_str()));

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 0.. {
        assert!(page < 10, "paging does not end");
        let mut req = Request::new(Verb::List, "/many/").with_meta("page-size", "10");
        if let Some(c) = &cursor {
            req = req.with_meta("cursor", c);
        }
        let resp = fx.send(req).await;
        assert_status(&resp, Status::Ok);
        let names = listed_names(&resp);
        assert!(names.len() <= 10);
        seen.extend(names);
        match resp.meta("complete") {
            Some("true") => break,
            Some("false") => {
                cursor = Some(resp.meta("next-cursor").expect("next-cursor").to_string())
            }
            other => panic!("complete is {other:?}"),
        }
    }
    let expected: Vec<String> = (0..25).map(|i| format!("file-{i:02}.md")).collect();
    assert_eq!(seen, expected);

    let with_archived = fx
        .send(Request::new(Verb::List, "/").with_meta("include-archived", "true"))
        .await;
    assert!(
        listed_names(&with_archived)
            .iter()
            .all(|n| !n.starts_with('.'))
    );
}

/// The version file `<name>.v<N>` of a document, wherever the store keeps it.
fn version_file(root: &Path, name: &str, n: u32) -> PathBuf {
    let wanted = format!("{name}.v{n}");
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|f| f == wanted.as_str()) {
                return path;
            }
        }
    }
    panic!("no {wanted} under {}", root.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_lists_history_and_reports_a_tampered_chain() {
    let fx = Fixture::start();
    fx.publish("/guide/setup.md", "# Setup\n\nv2\n").await;
    fx.publish("/guide/setup.md", "# Setup\n\nv3\n").await;
    let history = fx
        .send(Request::new(Verb::Versions, "/guide/setup.md"))
        .await;
    assert_status(&history, Status::Ok);
    assert_eq!(history.meta("total"), Some("3"));
    assert_eq!(history.meta("current"), Some("3"));
    assert_eq!(history.meta("chain-valid"), Some("true"));
    assert_eq!(history.meta("chain-error"), None);
    let body = history.text().unwrap();
    let v3 = body.find("[v3](/guide/setup.md/v3)").expect("v3 line");
    let v1 = body.find("[v1](/guide/setup.md/v1)").expect("v1 line");
    assert!(v3 < v1, "newest first: {body}");

    let file = version_file(fx.store.path(), "setup.md", 1);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend_from_slice(b"tampered\n");
    std::fs::write(&file, bytes).unwrap();
    let tampered = fx
        .send(Request::new(Verb::Versions, "/guide/setup.md"))
        .await;
    assert_status(&tampered, Status::Ok);
    assert_eq!(tampered.meta("chain-valid"), Some("false"));
    assert!(!tampered.meta("chain-error").unwrap_or("").is_empty());
}

// ---------------------------------------------------------------- auth

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_auth_outcome_has_its_status() {
    let fx = Fixture::start();
    let publish = |token: Option<&str>, path: &str| {
        let mut req = Request::new(Verb::Publish, path).with_body("# New\n");
        if let Some(token) = token {
            req = req.with_meta("auth", token);
        }
        req
    };
    // Run in order: only the last case creates the document.
    let t = &fx.tokens;
    #[rustfmt::skip]
    let cases: [(&str, Option<&str>, &str, Status); 6] = [
        ("no token", None, "/guide/new.md", Status::Unauthorized),
        ("unknown token", Some("mark_0000000000000000"), "/guide/new.md", Status::Unauthorized),
        ("path outside its globs", Some(&t.guide_writer), "/index-2.md", Status::NotPermitted),
        ("operation not granted", Some(&t.private_reader), "/private/new.md", Status::NotPermitted),
        ("expired token (as demarkus)", Some(&t.expired), "/guide/new.md", Status::Unauthorized),
        ("granted", Some(&t.guide_writer), "/guide/new.md", Status::Created),
    ];
    for (case, token, path, status) in cases {
        let resp = fx.send(publish(token, path)).await;
        assert_eq!(
            resp.status,
            status,
            "{case}: {:?} {}",
            resp.metadata,
            String::from_utf8_lossy(&resp.body)
        );
    }

    // A read grant makes its paths private; others stay public.
    assert_status(&fx.fetch("/private/plan.md").await, Status::Unauthorized);
    let private = fx
        .send(
            Request::new(Verb::Fetch, "/private/plan.md")
                .with_meta("auth", &fx.tokens.private_reader),
        )
        .await;
    assert_status(&private, Status::Ok);
    assert_status(
        &fx.send(
            Request::new(Verb::Fetch, "/private/plan.md").with_meta("auth", &fx.tokens.writer),
        )
        .await,
        Status::NotPermitted,
    );
    assert_status(&fx.fetch("/index.md").await, Status::Ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_tokens_never_reach_the_log() {
    let fx = Fixture::start();
    fx.publish("/guide/setup.md", "# Setup\n\nchanged\n").await;
    fx.send(
        Request::new(Verb::Fetch, "/private/plan.md").with_meta("auth", &fx.tokens.private_reader),
    )
    .await;
    assert_eq!(
        fx.server
            .wait_for_requests("FETCH", "/private/plan.md", 1, Duration::from_secs(5)),
        1
    );
    let log = fx.server.log_lines().join("\n");
    assert!(!log.contains(&fx.tokens.writer) && !log.contains(&fx.tokens.private_reader));
    let seen = fx.server.requests_seen();
    assert!(
        seen.iter()
            .any(|r| r.verb == "PUBLISH" && r.path == "/guide/setup.md" && r.status == "created")
    );
}

// ---------------------------------------------------------------- writes

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expected_version_mismatch_is_a_conflict_naming_both_versions() {
    let fx = Fixture::start();
    fx.publish("/guide/setup.md", "# Setup\n\nv2\n").await;
    let publish_expecting = |path: &str, expected: &str, body: &str| {
        Request::new(Verb::Publish, path)
            .with_meta("auth", &fx.tokens.writer)
            .with_meta("expected-version", expected)
            .with_body(body)
    };
    let stale = fx
        .send(publish_expecting(
            "/guide/setup.md",
            "1",
            "# Setup\n\nfrom v1\n",
        ))
        .await;
    assert_status(&stale, Status::Conflict);
    assert_eq!(stale.meta("your-version"), Some("1"));
    assert_eq!(stale.meta("server-version"), Some("2"));

    // Expected version 0 means "must not exist yet".
    let must_not_exist = fx
        .send(publish_expecting("/guide/setup.md", "0", "# Fresh\n"))
        .await;
    assert_status(&must_not_exist, Status::Conflict);

    let fresh = fx
        .send(publish_expecting("/guide/fresh.md", "0", "# Fresh\n"))
        .await;
    assert_status(&fresh, Status::Created);
    assert_eq!(fresh.meta("version"), Some("1"));
    assert!(fresh.meta("modified").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_needs_expected_version_and_a_body_and_joins_as_demarkus() {
    let fx = Fixture::start();
    let append = |expected: Option<&str>, body: &str| {
        let mut req = Request::new(Verb::Append, "/guide/setup.md")
            .with_meta("auth", &fx.tokens.writer)
            .with_body(body);
        if let Some(v) = expected {
            req = req.with_meta("expected-version", v);
        }
        req
    };
    assert_status(&fx.send(append(None, "more")).await, Status::BadRequest);
    assert_status(&fx.send(append(Some("1"), "")).await, Status::BadRequest);
    let stale = fx.send(append(Some("7"), "more")).await;
    assert_status(&stale, Status::Conflict);
    assert_eq!(stale.meta("server-version"), Some("1"));

    let ok = fx.send(append(Some("1"), "Then reboot.\n")).await;
    assert_status(&ok, Status::Created);
    assert_eq!(ok.meta("version"), Some("2"));
    // demarkus' join: the body ends with a line end, so none is added.
    let doc = fx.fetch("/guide/setup.md").await;
    assert_eq!(
        doc.text(),
        Some("# Setup\n\nRun the installer.\nThen reboot.\n")
    );
    // A body without one gets one.
    let plain = fx.publish("/guide/plain.md", "# Ap\n\nText.").await;
    assert_status(&plain, Status::Created);
    let req = Request::new(Verb::Append, "/guide/plain.md")
        .with_meta("auth", &fx.tokens.writer)
        .with_meta("expected-version", "1")
        .with_body("- x");
    assert_status(&fx.send(req).await, Status::Created);
    assert_eq!(
        fx.fetch("/guide/plain.md").await.text(),
        Some("# Ap\n\nText.\n- x")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishing_the_identical_body_is_ok_without_a_new_version() {
    let fx = Fixture::start();
    let same = fx
        .publish("/guide/setup.md", "# Setup\n\nRun the installer.\n")
        .await;
    assert_status(&same, Status::Ok);
    let history = fx
        .send(Request::new(Verb::Versions, "/guide/setup.md"))
        .await;
    assert_eq!(history.meta("total"), Some("1"));
    assert_eq!(fx.fetch("/guide/setup.md").await.meta("version"), Some("1"));
}

// ---------------------------------------------------------------- traversal

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_traversal_variant_is_not_found() {
    let fx = Fixture::start();
    let outside = fx.outside();
    std::fs::write(outside.join("secret.md"), "# Secret\n\nTOP SECRET\n").unwrap();
    std::fs::create_dir_all(outside.join("secret-dir")).unwrap();
    std::fs::write(
        outside.join("secret-dir/inner.md"),
        "# Inner\n\nTOP SECRET\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.join("secret.md"), fx.store.path().join("link.md"))
            .unwrap();
        std::os::unix::fs::symlink(outside.join("secret-dir"), fx.store.path().join("linkdir"))
            .unwrap();
    }
    let absolute = outside.join("secret.md").display().to_string();
    let variants = [
        "/../secret.md".to_string(),
        "/guide/../../secret.md".to_string(),
        "/%2e%2e/secret.md".to_string(),
        "/%2E%2E/secret.md".to_string(),
        "/..%2fsecret.md".to_string(),
        "/%2e%2e%2fsecret.md".to_string(),
        "/..\\secret.md".to_string(),
        "/guide\\..\\..\\secret.md".to_string(),
        "/%5c..%5csecret.md".to_string(),
        "/guide/%00/../../secret.md".to_string(),
        "/guide/%0a../secret.md".to_string(),
        absolute.clone(),
        format!("/{absolute}"),
        "/link.md".to_string(),
        "/linkdir/inner.md".to_string(),
    ];
    for path in &variants {
        let resp = fx.fetch(path).await;
        assert_status(&resp, Status::NotFound);
        assert!(
            !resp.text().unwrap_or("").contains("TOP SECRET"),
            "{path} leaked"
        );
        let listing = fx.send(Request::new(Verb::List, format!("{path}/"))).await;
        assert_status(&listing, Status::NotFound);
    }
    for dir in ["/linkdir/", "/../secret-dir/", "/%2e%2e/secret-dir/"] {
        let listing = fx.send(Request::new(Verb::List, dir)).await;
        assert_status(&listing, Status::NotFound);
        assert!(
            !listed_names(&listing).contains(&"inner.md".to_string()),
            "LIST {dir} leaked"
        );
    }
    // Writes through a traversal land nowhere outside the root either.
    let escape = fx.publish("/../escaped.md", "# Escaped\n").await;
    assert!(
        !escape.status.is_success(),
        "publish escaped: {:?}",
        escape.status
    );
    assert!(!outside.join("escaped.md").exists());
    assert_status(&fx.fetch("/index.md").await, Status::Ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_the_wire_forbids_are_bad_requests_and_the_server_keeps_serving() {
    let fx = Fixture::start();
    let conn = raw::connect(&fx.server).await;
    let forbidden: [&[u8]; 6] = [
        b"FETCH /a\0b.md\n",
        b"FETCH /a\x01b.md\n",
        b"FETCH /a\x7fb.md\n",
        b"FETCH secret.md\n",
        b"FETCH  /index.md\n",
        b"fetch /index.md\n",
    ];
    for bytes in forbidden {
        let resp = conn.exchange(bytes).await;
        assert_status(&resp, Status::BadRequest);
    }
    let ok = conn.exchange(b"FETCH /index.md\n").await;
    assert_status(&ok, Status::Ok);
    assert_eq!(
        fx.server
            .wait_for_requests("-", "-", 6, Duration::from_secs(5)),
        6,
        "unparsable requests are logged as `request - - -> status`"
    );
}

// ---------------------------------------------------------------- limits

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_request_line_and_metadata_are_refused_and_the_server_keeps_serving() {
    let fx = Fixture::start();
    let conn = raw::connect(&fx.server).await;

    let long_line = format!("FETCH /{}.md\n", "a".repeat(5000));
    assert_status(&conn.exchange(long_line.as_bytes()).await, Status::TooLarge);

    let big_meta = format!(
        "FETCH /index.md\n---\nnote: {}\n---\n",
        "x".repeat(70 * 1024)
    );
    assert_status(&conn.exchange(big_meta.as_bytes()).await, Status::TooLarge);

    let endless_meta = format!("FETCH /index.md\n---\nnote: {}\n", "x".repeat(70 * 1024));
    let resp = conn.exchange(endless_meta.as_bytes()).await;
    assert!(
        matches!(resp.status, Status::TooLarge | Status::BadRequest),
        "unclosed huge metadata: {:?}",
        resp.status
    );

    // A body over the transport cap (request line + metadata + 1 MiB document).
    let mut huge = b"PUBLISH /guide/huge.md\n".to_vec();
    huge.resize(huge.len() + 2 * 1024 * 1024, b'a');
    let resp = conn.exchange(&huge).await;
    assert_status(&resp, Status::TooLarge);
    // #14.11: the message names the document limit (1 MiB), not the request cap.
    let message = String::from_utf8_lossy(&resp.body);
    assert!(message.contains("at most 1048576 bytes"), "{message}");
    assert!(!message.contains("1118216"), "{message}");

    assert_status(&conn.exchange(b"FETCH /index.md\n").await, Status::Ok);
    assert_status(&fx.fetch("/index.md").await, Status::Ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_streams_do_not_stop_others_and_time_out() {
    let fx = Fixture::start_with(&["--stream-timeout-ms", "1500"]);
    let slow = raw::connect(&fx.server).await;
    let mut stalled = Vec::new();
    for _ in 0..50 {
        let (mut send, recv) = slow.connection.open_bi().await.unwrap();
        send.write_all(b"FETCH /index.md\n---\nnote: never fin")
            .await
            .unwrap();
        stalled.push((send, recv));
    }
    // Others, on the same connection and on another, are answered meanwhile.
    assert_status(&slow.exchange(b"FETCH /index.md\n").await, Status::Ok);
    for _ in 0..20 {
        assert_status(&fx.fetch("/guide/intro.md").await, Status::Ok);
    }
    // The stalled streams are answered with bad-request once their time is up.
    for (_send, mut recv) in stalled {
        let out = tokio::time::timeout(Duration::from_secs(20), recv.read_to_end(1 << 16))
            .await
            .expect("a stalled stream was never released")
            .unwrap();
        assert_status(&Response::parse(&out).unwrap(), Status::BadRequest);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_limit_are_refused_until_one_closes() {
    let fx = Fixture::start_with(&["--max-connections", "1"]);
    let first = raw::connect(&fx.server).await;
    assert_status(&first.exchange(b"FETCH /health\n").await, Status::Ok);
    let second = raw::try_connect(&fx.server).await;
    assert!(second.is_err(), "a second connection must be refused");

    first.connection.close(0u8.into(), b"done");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let third = loop {
        match raw::try_connect(&fx.server).await {
            Ok(conn) => break conn,
            Err(e) => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "slot never freed: {e}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    assert_status(&third.exchange(b"FETCH /health\n").await, Status::Ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_mark_alpn_is_accepted() {
    let fx = Fixture::start();
    assert!(
        raw::try_connect_with_alpn(&fx.server, &[b"h3"])
            .await
            .is_err()
    );
    assert!(raw::try_connect_with_alpn(&fx.server, &[]).await.is_err());
    let both = raw::try_connect_with_alpn(&fx.server, &[b"h3", b"mark"])
        .await
        .unwrap();
    assert_eq!(
        both.connection
            .handshake_data()
            .and_then(|d| d.downcast::<quinn::crypto::rustls::HandshakeData>().ok())
            .and_then(|d| d.protocol),
        Some(b"mark".to_vec())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_frontmatter_quotes_what_yaml_would_coerce() {
    let fx = Fixture::start();
    let conn = raw::connect(&fx.server).await;
    let bytes = conn.exchange_bytes(b"FETCH /index.md\n").await;
    let text = String::from_utf8_lossy(&bytes);
    let head = text.split("\n---\n").next().unwrap();
    assert!(head.starts_with("---\n"), "{head}");
    assert!(head.lines().any(|l| l == "status: ok"), "{head}");
    assert!(head.lines().any(|l| l == "version: \"1\""), "{head}");
    assert!(
        head.lines()
            .any(|l| l.starts_with("modified: \"") && l.ends_with("Z\"")),
        "{head}"
    );
}

// ---------------------------------------------------------------- LOOKUP, manifest

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookup_answers_a_catalog_table_and_body_matches() {
    let fx = Fixture::start();
    let catalog = fx
        .send(Request::new(Verb::Lookup, "/").with_meta("query", "welcome"))
        .await;
    assert_status(&catalog, Status::Ok);
    let text = catalog.text().unwrap();
    assert!(
        text.contains("| Path | Importance | Title | Tags |"),
        "{text}"
    );
    assert!(text.contains("/index.md"), "{text}");
    assert!(catalog.meta("matches").unwrap().parse::<u32>().unwrap() >= 1);

    let body = fx
        .send(
            Request::new(Verb::Lookup, "/")
                .with_meta("query", "estuary collector")
                .with_meta("match", "body"),
        )
        .await;
    assert_status(&body, Status::Ok);
    assert_eq!(body.meta("match"), Some("body"));
    let text = body.text().unwrap();
    assert!(text.contains("Snippet"), "{text}");
    assert!(text.contains("/guide/intro.md#setup"), "{text}");

    let no_query = fx.send(Request::new(Verb::Lookup, "/")).await;
    assert_status(&no_query, Status::BadRequest);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_manifest_is_public_markdown_with_capabilities() {
    let fx = Fixture::start();
    let manifest = fx.fetch("/.well-known/agent-manifest.md").await;
    assert_status(&manifest, Status::Ok);
    let text = manifest.text().unwrap();
    assert!(text.starts_with("# "), "{text}");
    assert!(text.contains("## Capabilities"), "{text}");
    assert!(text.contains("lookup-match"), "{text}");
}

// ---------------------------------------------------------------- concurrency

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_fetches_on_one_connection_all_succeed() {
    let fx = Fixture::start();
    let expected = fx.fetch("/guide/intro.md").await.body;
    let requests = (0..200).map(|_| fx.fetch("/guide/intro.md"));
    let answers = futures::future::join_all(requests).await;
    for resp in &answers {
        assert_status(resp, Status::Ok);
        assert_eq!(resp.body, expected);
    }
    assert_eq!(
        fx.server
            .wait_for_requests("FETCH", "/guide/intro.md", 201, Duration::from_secs(10)),
        201
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_never_lose_or_reuse_a_version() {
    let fx = Arc::new(Fixture::start());
    // 16 PUBLISHes of distinct bodies without expected-version: each one is a new version.
    let publishes = (0..16).map(|i| {
        let fx = Arc::clone(&fx);
        async move {
            fx.publish("/guide/race.md", &format!("# Race\n\nwriter {i}\n"))
                .await
        }
    });
    let mut versions: Vec<u64> = futures::future::join_all(publishes)
        .await
        .iter()
        .map(|r| {
            assert_status(r, Status::Created);
            r.meta("version").unwrap().parse().unwrap()
        })
        .collect();
    versions.sort_unstable();
    assert_eq!(versions, (1..=16).collect::<Vec<u64>>());

    // 12 appenders with expected-version, retrying on conflict: every line lands once.
    let appenders = (0..12).map(|i| {
        let fx = Arc::clone(&fx);
        tokio::spawn(async move {
            loop {
                let current = fx.fetch("/guide/race.md").await;
                let version = current.meta("version").unwrap().to_string();
                let resp = fx
                    .send(
                        Request::new(Verb::Append, "/guide/race.md")
                            .with_meta("auth", &fx.tokens.writer)
                            .with_meta("expected-version", version)
                            .with_body(format!("line {i}")),
                    )
                    .await;
                match resp.status {
                    Status::Created => {
                        return resp.meta("version").unwrap().parse::<u64>().unwrap();
                    }
                    Status::Conflict => continue,
                    other => panic!("append answered {other:?}"),
                }
            }
        })
    });
    let mut appended: Vec<u64> = futures::future::join_all(appenders)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    appended.sort_unstable();
    assert_eq!(appended, (17..=28).collect::<Vec<u64>>());
    let doc = fx.fetch("/guide/race.md").await;
    assert_eq!(doc.meta("version"), Some("28"));
    let text = doc.text().unwrap();
    for i in 0..12 {
        let line = format!("line {i}");
        assert_eq!(
            text.lines().filter(|l| *l == line).count(),
            1,
            "{line} in {text}"
        );
    }
    let history = fx
        .send(Request::new(Verb::Versions, "/guide/race.md"))
        .await;
    assert_eq!(history.meta("total"), Some("28"));
    assert_eq!(history.meta("chain-valid"), Some("true"));
}

// ---------------------------------------------------------------- binary: modes, certificates, subcommands

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flat_mode_serves_a_plain_folder_read_only() {
    let src = tempfile::tempdir().unwrap();
    write_fixture(src.path());
    let server = MarkServerProcess::start(src.path(), &["--flat"]).unwrap();
    let client = client_for(&server);
    let doc = send(
        &client,
        &server,
        Request::new(Verb::Fetch, "/guide/intro.md"),
    )
    .await;
    assert_status(&doc, Status::Ok);
    assert_eq!(
        doc.body,
        std::fs::read(src.path().join("guide/intro.md")).unwrap()
    );
    assert_eq!(doc.meta("etag"), Some(sha256_hex(&doc.body).as_str()));
    let write = send(
        &client,
        &server,
        Request::new(Verb::Publish, "/guide/intro.md").with_body("# Changed\n"),
    )
    .await;
    assert!(!write.status.is_success());
    assert_eq!(
        std::fs::read(src.path().join("guide/intro.md")).unwrap(),
        doc.body,
        "a flat folder is never written"
    );
}

/// #12.2: without --flat the root must be a marked store or an empty
/// folder; a plain folder (even one holding `versions/`) and an older store
/// without the marker are refused with what to do, and nothing is written.
/// An empty folder is marked by its first write; `import --mark` marks an
/// older store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_root_is_refused_without_flat_and_an_empty_one_becomes_a_store() {
    let plain = tempfile::tempdir().unwrap();
    write_fixture(plain.path());
    std::fs::create_dir(plain.path().join("versions")).unwrap();
    let old = tempfile::tempdir().unwrap();
    let old_root = old.path().join("store");
    run_mark_server(&[
        "import",
        plain.path().to_str().unwrap(),
        old_root.to_str().unwrap(),
    ])
    .unwrap();
    std::fs::remove_file(old_root.join(mark_store::STORE_MARKER)).unwrap();
    for (root, names) in [
        (plain.path(), ["--flat", "import"]),
        (old_root.as_path(), ["--flat", "import --mark"]),
    ] {
        let listing = |r: &Path| {
            let mut names: Vec<_> = walk_names(r);
            names.sort();
            names
        };
        let before = listing(root);
        let refused =
            run_mark_server(&["--root", root.to_str().unwrap(), "--listen", "127.0.0.1:0"]);
        let stderr = match refused {
            Err(mark_testkit::TestkitError::Command { stderr, .. }) => stderr,
            other => panic!("{} was served: {other:?}", root.display()),
        };
        assert!(names.iter().all(|n| stderr.contains(n)), "{stderr}");
        assert_eq!(listing(root), before, "a refused root is not written");
    }
    run_mark_server(&["import", "--mark", old_root.to_str().unwrap()]).unwrap();
    let marked = MarkServerProcess::start::<&str>(&old_root, &[]).unwrap();
    let doc = send(
        &client_for(&marked),
        &marked,
        Request::new(Verb::Fetch, "/guide/intro.md"),
    )
    .await;
    assert_status(&doc, Status::Ok);

    let empty = tempfile::tempdir().unwrap();
    let tokens_dir = tempfile::tempdir().unwrap();
    let file = tokens_dir.path().join("tokens.toml");
    let writer = generate_token(&file, "/**", "publish", None).unwrap();
    let server =
        MarkServerProcess::start(empty.path(), &["--tokens", file.to_str().unwrap()]).unwrap();
    assert!(
        !empty.path().join(mark_store::STORE_MARKER).exists(),
        "opening writes nothing"
    );
    let created = send(
        &client_for(&server),
        &server,
        Request::new(Verb::Publish, "/a.md")
            .with_meta("auth", &writer)
            .with_body("# A\n"),
    )
    .await;
    assert_status(&created, Status::Created);
    assert!(empty.path().join(mark_store::STORE_MARKER).is_file());
}

/// Every path under `root`, relative.
fn walk_names(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            out.push(e.path().strip_prefix(root).unwrap().display().to_string());
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_given_certificate_is_served_and_survives_restart() {
    let certs = tempfile::tempdir().unwrap();
    let cert = mark_testkit::write_test_certificate(certs.path()).unwrap();
    let src = tempfile::tempdir().unwrap();
    write_fixture(src.path());
    let store = import_store(src.path()).unwrap();
    let mut server = MarkServerProcess::start(store.path(), &cert.server_args()).unwrap();
    assert_eq!(server.fingerprint, cert.fingerprint);
    let port = server.addr.port();
    server.restart().unwrap();
    assert_eq!(server.addr.port(), port);
    assert_eq!(server.fingerprint, cert.fingerprint);
    let client = client_for(&server);
    assert_status(
        &send(&client, &server, Request::new(Verb::Fetch, "/health")).await,
        Status::Ok,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_pin_is_refused() {
    let fx = Fixture::start();
    let mut wrong = fx.server.fingerprint;
    wrong[0] ^= 0xff;
    let client = Client::new(ClientConfig {
        trust: Trust::Pin(wrong),
        ..Default::default()
    })
    .unwrap();
    let result = client
        .request(
            "127.0.0.1",
            fx.server.addr.port(),
            Request::new(Verb::Fetch, "/health"),
        )
        .await;
    assert!(result.is_err(), "a wrong pin must fail the handshake");
}

#[test]
fn import_makes_every_file_version_one() {
    let src = tempfile::tempdir().unwrap();
    write_fixture(src.path());
    let store = import_store(src.path()).unwrap();
    let v1 = version_file(store.path(), "intro.md", 1);
    let stored = std::fs::read_to_string(v1).unwrap();
    assert!(stored.contains("version: 1"), "{stored}");
    assert!(stored.ends_with("## Setup\n\nInstall the estuary collector before the gateway.\n"));
    // Importing the same folder again adds no version.
    run_mark_server(&[
        std::ffi::OsStr::new("import"),
        src.path().as_os_str(),
        store.path().as_os_str(),
    ])
    .unwrap();
    let history = std::fs::read_dir(version_file(store.path(), "intro.md", 1).parent().unwrap())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("intro.md.v")
        })
        .count();
    assert_eq!(history, 1);
}

/// #14.9: `import` takes a file over `--max-document-bytes` but says so, and
/// what a write to it would need.
#[test]
fn import_warns_of_a_document_over_the_limit() {
    let src = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("small.md"), "# Small\n").unwrap();
    std::fs::write(src.path().join("big.md"), "x".repeat(2_000_000)).unwrap();
    let dest = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(mark_testkit::mark_server_binary().unwrap())
        .arg("import")
        .arg(src.path())
        .arg(dest.path().join("store"))
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("/big.md is 2000000 bytes, over the 1048576-byte document limit"),
        "{stderr}"
    );
    assert!(stderr.contains("--max-document-bytes 2000000"), "{stderr}");
    assert!(!stderr.contains("/small.md is"), "{stderr}");
}

/// #14.11: `token generate` refuses an expiry already past and says what
/// an `--expires` must look like; mark-server says each cause of an error
/// once (no repeated `(os error 2)`).
#[test]
fn token_generate_refuses_a_past_expiry_and_says_each_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens.toml");
    let generate = |expires: &str| {
        let out = std::process::Command::new(mark_testkit::mark_server_binary().unwrap())
            .args([
                "token",
                "generate",
                "--paths",
                "/**",
                "--ops",
                "read",
                "--expires",
                expires,
            ])
            .arg("--tokens")
            .arg(&file)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, stderr) = generate("2020-01-01T00:00:00Z");
    assert!(!ok && stderr.contains("is already past"), "{stderr}");
    assert!(!file.exists(), "a token that can never work was stored");
    for wrong in ["20270-01-01T00:00:00Z", "2027", "2027-13-01T00:00:00Z"] {
        let (ok, stderr) = generate(wrong);
        assert!(!ok, "{stderr}");
        assert!(stderr.contains("give a four-digit year"), "{stderr}");
        assert!(!stderr.contains("character literal"), "{stderr}");
    }
    // A token file that is not there: the cause and its source say "os error 2".
    let root = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(mark_testkit::mark_server_binary().unwrap())
        .arg("--root")
        .arg(root.path())
        .args(["--tokens", "/nonexistent/tokens.toml"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(stderr.matches("os error 2").count(), 1, "{stderr}");
}

#[test]
fn token_generate_prints_the_raw_token_once_and_stores_only_its_hash() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens.toml");
    let out = run_mark_server(&[
        "token",
        "generate",
        "--paths",
        "/**",
        "--ops",
        "read,publish",
        "--expires",
        "2099-01-01T00:00:00Z",
        "--tokens",
        file.to_str().unwrap(),
    ])
    .unwrap();
    assert_eq!(out.lines().count(), 1, "one line: {out}");
    let raw = out.trim();
    assert!(raw.len() >= 32);
    let stored = std::fs::read_to_string(&file).unwrap();
    assert!(!stored.contains(raw), "the raw token must not be stored");
    assert!(
        stored.contains(&format!("sha256-{}", sha256_hex(raw.as_bytes()))),
        "{stored}"
    );

    let bad = run_mark_server(&[
        "token",
        "generate",
        "--paths",
        "/**",
        "--ops",
        "delete",
        "--tokens",
        file.to_str().unwrap(),
    ]);
    assert!(bad.is_err());
}

/// A token file as `demarkus-token generate` writes it: one
/// `[tokens.<label>]` table per token, `operations`, an RFC 3339 `expires`.
#[tokio::test]
async fn a_demarkus_token_file_is_read_and_named_on_stderr() {
    let src = tempfile::tempdir().unwrap();
    write_fixture(src.path());
    let store = import_store(src.path()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens.toml");
    let (writer, expired) = ("demarkus-writer-secret", "demarkus-expired-secret");
    std::fs::write(
        &file,
        format!(
            "[tokens.fritz-laptop]\nhash = \"sha256-{}\"\npaths = [\"/guide/*\"]\noperations = [\"publish\"]\nexpires = \"2099-01-01T00:00:00Z\"\n\n\
             [tokens.old-ci]\nhash = \"sha256-{}\"\npaths = [\"/guide/*\"]\noperations = [\"publish\"]\nexpires = \"2020-01-01T00:00:00Z\"\n",
            sha256_hex(writer.as_bytes()),
            sha256_hex(expired.as_bytes())
        ),
    )
    .unwrap();
    let server =
        MarkServerProcess::start(store.path(), &["--tokens", file.to_str().unwrap()]).unwrap();
    let client = client_for(&server);
    let publish = |token: &str| {
        Request::new(Verb::Publish, "/guide/new.md")
            .with_meta("auth", token)
            .with_body("# New\n")
    };
    assert_status(
        &send(&client, &server, publish(writer)).await,
        Status::Created,
    );
    // Expired: unauthorized, as demarkus answers it.
    assert_status(
        &send(&client, &server, publish(expired)).await,
        Status::Unauthorized,
    );
    let log = server.log_lines().join("\n");
    assert!(
        log.contains("2 tokens in demarkus' [tokens.<label>] layout"),
        "stderr should say which layout it read: {log}"
    );
}

/// Sends SIGTERM and waits (up to 15 s) for the process to exit.
fn terminate(server: &mut MarkServerProcess) -> std::process::ExitStatus {
    let status = std::process::Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(exit) = server.child.try_wait().unwrap() {
            return exit;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still running after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_stops_the_server_cleanly() {
    let src = tempfile::tempdir().unwrap();
    write_fixture(src.path());
    let mut server = MarkServerProcess::start(src.path(), &["--flat"]).unwrap();
    let exit = terminate(&mut server);
    assert!(exit.success(), "exit after SIGTERM: {exit}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_a_request_in_flight_finish() {
    let src = tempfile::tempdir().unwrap();
    write_fixture(src.path());
    let mut server =
        MarkServerProcess::start(src.path(), &["--flat", "--stream-timeout-ms", "1500"]).unwrap();
    let conn = raw::connect(&server).await;
    let (mut send, mut recv) = conn.connection.open_bi().await.unwrap();
    send.write_all(b"FETCH /index.md\n---\nnote: unfinished")
        .await
        .unwrap();
    // Let the server take the stream before the signal.
    assert_status(&conn.exchange(b"FETCH /health\n").await, Status::Ok);
    let exit = tokio::task::block_in_place(|| terminate(&mut server));
    assert!(exit.success(), "exit after SIGTERM: {exit}");
    // The stream in flight was answered (its time ran out), not cut off.
    let out = tokio::time::timeout(Duration::from_secs(5), recv.read_to_end(1 << 16))
        .await
        .unwrap()
        .unwrap();
    assert_status(&Response::parse(&out).unwrap(), Status::BadRequest);
}

// ---------------------------------------------------------------- odd files and hung reads

/// A named pipe and a socket named `*.md` in a flat folder are never opened:
/// each FETCH answers `not-found` at once saying what it is, none is
/// listed, and 600 such requests (more than the blocking pool's 512
/// threads, which each used to pin) leave the server answering documents
/// and `/health`.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipes_and_sockets_named_md_are_refused_at_once_and_never_wedge_the_server() {
    let src = tempfile::tempdir().unwrap();
    write_fixture(src.path());
    mark_testkit::make_fifo(&src.path().join("pipe.md")).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(src.path().join("sock.md")).unwrap();
    let server = MarkServerProcess::start(src.path(), &["--flat"]).unwrap();
    let client = client_for(&server);
    let started = std::time::Instant::now();
    let pipes = futures::future::join_all(
        (0..600).map(|_| send(&client, &server, Request::new(Verb::Fetch, "/pipe.md"))),
    )
    .await;
    for answer in &pipes {
        assert_status(answer, Status::NotFound);
    }
    assert!(
        String::from_utf8_lossy(&pipes[0].body)
            .contains("`/pipe.md` is a named pipe (FIFO), not a regular file"),
        "{}",
        String::from_utf8_lossy(&pipes[0].body)
    );
    let socket = send(&client, &server, Request::new(Verb::Fetch, "/sock.md")).await;
    assert_status(&socket, Status::NotFound);
    assert!(String::from_utf8_lossy(&socket.body).contains("is a socket"));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    assert_status(
        &send(&client, &server, Request::new(Verb::Fetch, "/health")).await,
        Status::Ok,
    );
    assert_status(
        &send(
            &client,
            &server,
            Request::new(Verb::Fetch, "/guide/setup.md"),
        )
        .await,
        Status::Ok,
    );
    let listing = send(&client, &server, Request::new(Verb::List, "/")).await;
    let listed = String::from_utf8_lossy(&listing.body).to_string();
    assert!(listed.contains("index.md"), "{listed}");
    assert!(
        !listed.contains("pipe.md") && !listed.contains("sock.md"),
        "{listed}"
    );
}

/// A read stalled on a hung file system (`--stalled-path`) answers
/// `server-error` at the stream timeout, other requests are served
/// meanwhile, and SIGTERM ends the process although that read is still
/// blocked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_read_answers_at_the_stream_timeout_and_sigterm_still_exits() {
    let src = tempfile::tempdir().unwrap();
    write_fixture(src.path());
    let mut server = MarkServerProcess::start(
        src.path(),
        &[
            "--flat",
            "--stream-timeout-ms",
            "1000",
            "--stalled-path",
            "/guide/setup.md",
        ],
    )
    .unwrap();
    let client = client_for(&server);
    let started = std::time::Instant::now();
    let stalled = send(
        &client,
        &server,
        Request::new(Verb::Fetch, "/guide/setup.md"),
    )
    .await;
    assert_status(&stalled, Status::ServerError);
    assert!(
        String::from_utf8_lossy(&stalled.body).contains("did not answer within 1000 ms"),
        "{}",
        String::from_utf8_lossy(&stalled.body)
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_status(
        &send(&client, &server, Request::new(Verb::Fetch, "/health")).await,
        Status::Ok,
    );
    assert_status(
        &send(&client, &server, Request::new(Verb::Fetch, "/index.md")).await,
        Status::Ok,
    );
    let exit = tokio::task::block_in_place(|| terminate(&mut server));
    assert!(exit.success(), "exit after SIGTERM: {exit}");
}

// ------------------------------------------------------- rate-limit stand-in

/// `--rate-limit` answers as demarkus over its rate: a stream past the
/// burst is closed without a byte (the client's `NoAnswer`), its slot of
/// `--max-streams` never freed; the client moves to a new connection, so
/// more refusals than the connection has slots never stall it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_rate_a_stream_closes_unanswered_and_the_client_is_never_stalled() {
    let fx = Fixture::start_with(&[
        "--rate-limit",
        "1/s",
        "--rate-burst",
        "3",
        "--max-streams",
        "2",
    ]);
    let port = fx.server.addr.port();
    let mut answered = 0;
    let mut unanswered = 0;
    let started = std::time::Instant::now();
    // Three times the connection's slots, one after another.
    for _ in 0..6 {
        match tokio::time::timeout(
            Duration::from_secs(5),
            fx.client
                .request("127.0.0.1", port, Request::new(Verb::Fetch, "/index.md")),
        )
        .await
        .expect("a request over the rate was stalled, not refused")
        {
            Ok(resp) => {
                assert_status(&resp, Status::Ok);
                answered += 1;
            }
            Err(mark_client::ClientError::NoAnswer) => unanswered += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!((answered, unanswered), (3, 3));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        fx.server
            .log_lines()
            .iter()
            .filter(|l| l.contains("stream closed unanswered: 127.0.0.1"))
            .count(),
        3
    );
}
