//! Helpers shared by the integration tests: temp stores, a fixed clock,
//! request builders.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use mark_proto::{Request, Response, Status, Verb};
use mark_store::{Engine, Op, StoreMode, TokenStore, generate_token};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tempfile::TempDir;

/// 2026-02-17T10:00:00Z.
pub const T0: u64 = 1_771_322_400;

/// `T0 + secs`.
pub fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(T0 + secs)
}

/// A versioned store in a temp dir with one publish token on `/**`.
pub struct Store {
    pub dir: TempDir,
    pub tokens: TempDir,
    pub engine: Engine,
    pub token: String,
}

/// Issues a token into `file` and returns it.
pub fn token(file: &Path, paths: &[&str], ops: &[Op], expires: Option<SystemTime>) -> String {
    let paths: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
    generate_token(&paths, ops, expires, file).unwrap()
}

impl Store {
    pub fn new() -> Store {
        let dir = tempfile::tempdir().unwrap();
        let tokens = tempfile::tempdir().unwrap();
        let file = tokens.path().join("tokens.toml");
        let token = token(&file, &["/**"], &[Op::Publish], None);
        mark_store::mark(dir.path()).unwrap();
        let engine = Engine::open(
            dir.path(),
            StoreMode::Versioned,
            Some(TokenStore::load(&file).unwrap()),
        )
        .unwrap();
        Store {
            dir,
            tokens,
            engine,
            token,
        }
    }

    /// Re-opens the engine over the same folder (as after a restart).
    pub fn reopen(&mut self) {
        let store = TokenStore::load(&self.tokens.path().join("tokens.toml")).unwrap();
        self.engine = Engine::open(self.dir.path(), StoreMode::Versioned, Some(store)).unwrap();
    }

    pub fn handle(&self, req: Request) -> Response {
        self.engine.handle(&req, at(0))
    }

    pub fn publish_at(
        &self,
        path: &str,
        body: &str,
        expected: Option<u64>,
        now: SystemTime,
    ) -> Response {
        let mut req = Request::new(Verb::Publish, path)
            .with_meta("auth", &self.token)
            .with_body(body);
        if let Some(e) = expected {
            req = req.with_meta("expected-version", e.to_string());
        }
        self.engine.handle(&req, now)
    }

    pub fn publish(&self, path: &str, body: &str) -> Response {
        self.publish_at(path, body, None, at(0))
    }

    pub fn append(&self, path: &str, body: &str, expected: u64) -> Response {
        let req = Request::new(Verb::Append, path)
            .with_meta("auth", &self.token)
            .with_meta("expected-version", expected.to_string())
            .with_body(body);
        self.engine.handle(&req, at(0))
    }

    pub fn archive(&self, path: &str) -> Response {
        self.handle(Request::new(Verb::Archive, path).with_meta("auth", &self.token))
    }

    pub fn fetch(&self, path: &str) -> Response {
        self.handle(Request::new(Verb::Fetch, path))
    }

    pub fn text(&self, path: &str) -> String {
        let resp = self.fetch(path);
        assert_eq!(resp.status, Status::Ok, "{path}: {}", resp.error_message());
        String::from_utf8(resp.body).unwrap()
    }
}

/// A flat engine over a temp dir holding `files` (path, content).
pub fn flat(files: &[(&str, &str)]) -> (TempDir, Engine) {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    let engine = Engine::open(dir.path(), StoreMode::Flat, None).unwrap();
    (dir, engine)
}

/// `ok` or a panic with the error message.
pub fn ok(resp: &Response) {
    assert!(
        resp.status.is_success(),
        "expected success, got {} {}",
        resp.status,
        resp.error_message()
    );
}

/// Asserts that `/doc.md` holds every acknowledged version with exactly its
/// content and that its chain is valid; returns the total on disk.
pub fn assert_acknowledged_versions(s: &Store, acknowledged: &BTreeMap<u64, String>) -> u64 {
    for (n, body) in acknowledged {
        assert_eq!(
            s.fetch(&format!("/doc.md/v{n}")).text().unwrap(),
            body,
            "v{n}"
        );
    }
    let versions = s.handle(Request::new(Verb::Versions, "/doc.md"));
    assert_eq!(
        versions.meta("chain-valid"),
        Some("true"),
        "{:?}",
        versions.meta("chain-error")
    );
    versions.meta("total").unwrap().parse().unwrap()
}
