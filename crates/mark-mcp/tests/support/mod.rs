//! Shared helpers of the end-to-end tests: start the real `mark-mcp` binary
//! and talk MCP to it over stdio with rmcp's client.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use rmcp::model::{
    CallToolRequestParams, ContentBlock, GetPromptRequestParams, ReadResourceRequestParams,
};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// `../shared/corpora/NAME` from the workspace root, or `$MARK_CORPORA/NAME`.
pub fn corpus(name: &str) -> PathBuf {
    let base = std::env::var_os("MARK_CORPORA").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora"),
        PathBuf::from,
    );
    base.join(name)
}

/// Copies the folder `from` to `to`, recursively (hidden files included).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_mark-mcp")
}

/// The cache folder the binary defaults to in these tests (`XDG_CACHE_HOME`,
/// in cargo's target folder, one per test process): what a session keeps
/// between sessions when no `--index-dir` is given (the link graph) stays
/// out of the user's cache, and one test's sessions never start from what
/// another's kept (nextest runs each test in a process of its own).
pub fn cache_home() -> PathBuf {
    let folder = format!("cache-home-{}", std::process::id());
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(folder)
}

/// Runs the binary once with `args`: no token in its environment, no stdin.
pub fn run_once<I, S>(args: I) -> std::process::Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    std::process::Command::new(bin())
        .args(args)
        .env("XDG_CACHE_HOME", cache_home())
        .env_remove("MARK_TOKEN")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// The fixture knowledge base (read-only: copy it before writing).
pub fn kb() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/mcp/kb")
}

/// `mark-mcp`'s arguments for the folder `root` as the README gives them
/// (`--root DIR`), then `extra`.
pub fn root_args(root: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["--root".to_string(), root.display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// A copy of the fixture knowledge base in a temporary directory.
pub fn copy_kb() -> tempfile::TempDir {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let target = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &target);
            } else {
                std::fs::copy(e.path(), target).unwrap();
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    copy(&kb(), dir.path());
    dir
}

/// A folder where no section holds every word of [`PIER_QUERY`]:
/// `/pier.md` lacks `work`, `/hosts.md` lacks `pier`; `/index.md` holds none.
pub fn pier_and_hosts() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("pier.md", "# Pier\n\nPier is the deploy agent.\n"),
        (
            "hosts.md",
            "# Hosts\n\nHosts take their deploy work from a queue.\n",
        ),
        ("index.md", "# Index\n\nThe notes of the harbour.\n"),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

/// The query of the any-word cases over [`pier_and_hosts`].
pub const PIER_QUERY: &str = "pier deploy work";

/// How each row of a body lookup of [`PIER_QUERY`] over [`pier_and_hosts`]
/// starts, in any order: each says which word it lacks, and its section's
/// size when the server gave it.
pub const PIER_ROWS: [&str; 2] = [
    "/hosts.md#hosts · Hosts · lacks: pier · ~15 tok · Hosts take",
    "/pier.md#pier · Pier · lacks: work · ~10 tok · Pier is",
];

/// Asserts that `reply` holds one row starting with each of `rows`.
pub fn assert_rows_start(reply: &Reply, rows: &[&str]) {
    let shown = reply.rows();
    assert_eq!(shown.len(), rows.len(), "{}", reply.text);
    for row in rows {
        assert!(
            shown.iter().any(|r| r.starts_with(row)),
            "{row}: {}",
            reply.text
        );
    }
}

/// Asserts that `reply` is a lookup that found nothing and says which
/// words it searched and what to try.
pub fn assert_nothing_found(reply: &Reply, words: &str) {
    assert_eq!(
        (reply.status(), reply.field("matches")),
        ("ok", Some("0 of 0")),
        "{}",
        reply.text
    );
    assert!(
        reply.body().contains(&format!(
            "nothing holds any of: {words}; try other or fewer words"
        )),
        "{}",
        reply.text
    );
}

/// A real `mark-server` on 127.0.0.1 serving a versioned copy of `src`,
/// started with `args`; the copy lives as long as the returned store.
pub fn serve_copy_of<S: AsRef<str>>(
    src: &Path,
    args: &[S],
) -> (mark_testkit::TempStore, mark_testkit::MarkServerProcess) {
    let store = mark_testkit::import_store(src).unwrap();
    let server = mark_testkit::MarkServerProcess::start(store.path(), args).unwrap();
    (store, server)
}

/// A real `mark-server` on a versioned copy of `src` whose token store
/// grants publishing everywhere, with that token in a file for `--token-file`.
pub struct PublishingServer {
    /// The running server (request counting, url, pin).
    pub server: mark_testkit::MarkServerProcess,
    /// The file holding the raw publish token.
    pub token_file: PathBuf,
    _store: mark_testkit::TempStore,
    _secrets: tempfile::TempDir,
}

impl PublishingServer {
    /// Imports `src` and starts the server on 127.0.0.1.
    pub fn start(src: &Path) -> PublishingServer {
        let secrets = tempfile::tempdir().unwrap();
        let tokens = secrets.path().join("tokens.toml");
        let token = mark_testkit::generate_token(&tokens, "/**", "publish", None).unwrap();
        let token_file = secrets.path().join("token");
        std::fs::write(&token_file, &token).unwrap();
        let (store, server) = serve_copy_of(src, &["--tokens", tokens.to_str().unwrap()]);
        PublishingServer {
            server,
            token_file,
            _store: store,
            _secrets: secrets,
        }
    }

    /// `--host URL --pin sha256:… --write --token-file F` and `extra`: a
    /// session that may write.
    pub fn writer_args(&self, extra: &[&str]) -> Vec<String> {
        let token_file = self.token_file.display().to_string();
        let mut writer = vec!["--write", "--token-file", &token_file];
        writer.extend(extra);
        self.server.reader_args(&writer)
    }
}

/// The statuses `server` logged for `FETCH path`, oldest first.
pub fn fetch_statuses(server: &mark_testkit::MarkServerProcess, path: &str) -> Vec<String> {
    server
        .requests_seen()
        .into_iter()
        .filter(|r| r.verb == "FETCH" && r.path == path)
        .map(|r| r.status)
        .collect()
}

/// Sends `kill -SIG` to a server process (`STOP` freezes it, `CONT` thaws
/// it, `TERM` ends it cleanly).
pub fn signal(server: &mark_testkit::MarkServerProcess, sig: &str) {
    let status = std::process::Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(server.child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success(), "kill -{sig}");
}

/// The envelope readers the benchmark's scripted agents use: a `key: value`
/// line of a result, and the text after its blank line.
pub use mark_bench::reading::{body, field};

/// The JSON object of a `json!({..})` argument list (anything else: none).
fn object(args: Value) -> Map<String, Value> {
    match args {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// One tool result: its text and whether it was a tool error.
#[derive(Debug)]
pub struct Reply {
    pub text: String,
    pub is_error: bool,
}

impl Reply {
    pub fn field(&self, key: &str) -> Option<&str> {
        field(&self.text, key)
    }
    pub fn status(&self) -> &str {
        self.field("status").unwrap_or("")
    }
    pub fn body(&self) -> &str {
        body(&self.text)
    }
    /// A lookup's rows, in order: the body's lines that start with a url,
    /// before the sections `read` appended.
    pub fn rows(&self) -> Vec<&str> {
        let body = self.body();
        let rows = body
            .split_once("\n=== read ")
            .map_or(body, |(rows, _)| rows);
        rows.lines().filter(|l| l.starts_with('/')).collect()
    }
    /// Asserts a read's result: `ok`, the whole document (`mode: full`).
    #[track_caller]
    pub fn assert_full(&self) {
        assert_eq!(
            (self.status(), self.field("mode")),
            ("ok", Some("full")),
            "{}",
            self.text
        );
    }
    /// Asserts an `unchanged` answer whose text starts with `start`.
    #[track_caller]
    pub fn assert_unchanged(&self, start: &str) {
        assert_eq!(self.status(), "unchanged", "{}", self.text);
        assert!(self.body().starts_with(start), "{}", self.text);
    }
    /// Asserts a write's result: `created`, as version `version`.
    #[track_caller]
    pub fn assert_created(&self, version: &str) {
        assert_eq!(
            (self.status(), self.field("version")),
            ("created", Some(version)),
            "{}",
            self.text
        );
    }
}

/// Spawns `mark-mcp ARGS…` (no `MARK_TOKEN`, warnings on stderr): its
/// stdio, for an MCP client to serve over.
pub fn spawn_mcp<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> TokioChildProcess {
    let mut cmd = tokio::process::Command::new(bin());
    cmd.args(args)
        .env("XDG_CACHE_HOME", cache_home())
        .env_remove("MARK_TOKEN")
        .env("RUST_LOG", "warn");
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    transport
}

/// A running `mark-mcp` with an MCP client session over its stdio.
pub struct Mcp {
    pub client: RunningService<RoleClient, ()>,
}

impl Mcp {
    /// Starts `mark-mcp ARGS…` and completes the MCP handshake.
    pub async fn start<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Mcp {
        let client = ().serve(spawn_mcp(args)).await.unwrap();
        Mcp { client }
    }

    /// Calls a tool with JSON arguments.
    pub async fn call(&self, tool: &'static str, args: Value) -> Reply {
        let args = object(args);
        let result = self
            .client
            .call_tool(CallToolRequestParams::new(tool).with_arguments(args))
            .await
            .unwrap();
        assert!(
            result.structured_content.is_none(),
            "results are plain text"
        );
        let text = result
            .content
            .iter()
            .filter_map(ContentBlock::as_text)
            .map(|t| t.text.as_str())
            .collect::<Vec<_>>()
            .join("");
        Reply {
            text,
            is_error: result.is_error.unwrap_or(false),
        }
    }

    /// `mark_publish` of `body` at `url` over version `expected_version`,
    /// applied (without `apply` a write is only a preview).
    pub async fn publish(&self, url: &str, body: &str, expected_version: u64) -> Reply {
        let args =
            json!({"url": url, "body": body, "expected_version": expected_version, "apply": true});
        self.call("mark_publish", args).await
    }

    /// `mark_fetch` with just a url.
    pub async fn fetch(&self, url: &str) -> Reply {
        self.call("mark_fetch", json!({ "url": url })).await
    }

    /// `mark_lookup` of `query` in body mode, reading no hit.
    pub async fn lookup_body(&self, query: &str) -> Reply {
        self.call(
            "mark_lookup",
            json!({"query": query, "match": "body", "read": 0}),
        )
        .await
    }

    /// Looks up [`PIER_QUERY`] with [`Mcp::lookup_body`] and asserts both
    /// rows came, each saying which word it lacks, and its size when
    /// `sized` (a server that knows no columns of ours gives none).
    pub async fn assert_pier_rows(&self, sized: bool) -> Reply {
        let r = self.lookup_body(PIER_QUERY).await;
        assert_eq!(
            (r.status(), r.field("match"), r.field("matches")),
            ("ok", Some("body"), Some("2 of 2")),
            "{}",
            r.text
        );
        let rows = PIER_ROWS.map(|row| match sized {
            true => row.to_string(),
            false => {
                let (start, rest) = row.split_once(" · ~").unwrap();
                format!("{start}{}", &rest[rest.find(" · ").unwrap()..])
            }
        });
        assert_rows_start(&r, &rows.each_ref().map(String::as_str));
        r
    }

    /// Reads a resource; the text of its first content.
    pub async fn read(&self, uri: &str) -> Result<String, String> {
        match self
            .client
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
        {
            Ok(r) => Ok(match r.contents.first() {
                Some(rmcp::model::ResourceContents::TextResourceContents {
                    text,
                    mime_type,
                    ..
                }) => {
                    assert_eq!(mime_type.as_deref(), Some("text/markdown"));
                    text.clone()
                }
                other => panic!("unexpected contents {other:?}"),
            }),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Gets a prompt; its messages' text joined.
    pub async fn prompt(&self, name: &str, args: Value) -> String {
        let args = object(args);
        let r = self
            .client
            .get_prompt(GetPromptRequestParams::new(name).with_arguments(args))
            .await
            .unwrap();
        r.messages
            .iter()
            .map(|m| {
                serde_json::to_value(&m.content).unwrap()["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Ends the session (the child process exits with its stdin).
    pub async fn stop(self) {
        self.client.cancel().await.unwrap();
    }
}
