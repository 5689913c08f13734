//! Hardening, secrets: a sentinel token used for reads and writes through
//! the real `mark-mcp` binary (`RUST_LOG=trace`) against a real
//! `mark-server` never shows up in mark-mcp's stdout (the JSON-RPC stream
//! the client reads), its stderr, any tool result or error, nor in the
//! server's output or files (the token store holds only its hash).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use mark_testkit::{MarkServerProcess, import_store};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ContentBlock};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::{Arc, Mutex};
use support::kb;
use tokio::io::AsyncReadExt;

const SENTINEL: &str = "SENTINEL-TOKEN-7f3a9c2e41d84b6fa0e5c1d2b3a49687";

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut hits = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            hits.extend(files_containing(&path, needle));
        } else if std::fs::read(&path)
            .unwrap()
            .windows(needle.len())
            .any(|w| w == needle)
        {
            hits.push(path.display().to_string());
        }
    }
    hits
}

/// One session of the binary with its stderr captured; every result's whole
/// JSON (as the client received it) is kept too.
async fn session(args: &[String], env_token: bool) -> (Vec<String>, String) {
    let mut cmd = tokio::process::Command::new(support::bin());
    cmd.args(args)
        .env("RUST_LOG", "trace")
        .env_remove("MARK_TOKEN");
    if env_token {
        cmd.env("MARK_TOKEN", SENTINEL);
    }
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let captured = Arc::new(Mutex::new(Vec::new()));
    let reader = {
        let captured = Arc::clone(&captured);
        let mut stderr = stderr.unwrap();
        tokio::spawn(async move {
            let mut buf = Vec::new();
            let _ = stderr.read_to_end(&mut buf).await;
            captured.lock().unwrap().extend(buf);
        })
    };
    let client = ().serve(transport).await.unwrap();
    let calls: Vec<(&str, Value)> = vec![
        ("mark_fetch", json!({"url": "/small.md"})),
        ("mark_fetch", json!({"url": "/large.md#pilots"})),
        ("mark_fetch", json!({"url": "/large.md#no-such"})),
        ("mark_fetch", json!({"url": "/missing.md"})),
        ("mark_lookup", json!({"query": "harbour"})),
        ("mark_list", json!({"url": "/"})),
        ("mark_versions", json!({"url": "/small.md"})),
        (
            "mark_publish",
            json!({"url": "/small.md", "body": "# Small\n\nconflict\n", "expected_version": 99, "apply": true}),
        ),
        (
            "mark_publish",
            json!({"url": "/new.md", "body": "# New\n\nwritten with the token\n", "expected_version": 0, "apply": true}),
        ),
        (
            "mark_append",
            json!({"url": "/new.md", "body": "Appended.\n", "apply": true}),
        ),
        (
            "mark_archive",
            json!({"url": "/notes/crew.md", "apply": true}),
        ),
        ("mark_fetch", json!({"url": "/new.md"})),
    ];
    let mut results = Vec::new();
    for (tool, args) in calls {
        let Value::Object(args) = args else {
            unreachable!()
        };
        let r = client
            .call_tool(CallToolRequestParams::new(tool).with_arguments(args))
            .await
            .unwrap();
        let text: String = r
            .content
            .iter()
            .filter_map(ContentBlock::as_text)
            .map(|t| t.text.clone())
            .collect();
        assert!(!text.contains("not-permitted"), "{tool}: {text}");
        results.push(serde_json::to_string(&r).unwrap());
    }
    client.cancel().await.unwrap();
    reader.await.unwrap();
    let stderr = String::from_utf8_lossy(&captured.lock().unwrap()).into_owned();
    (results, stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_never_leaks() {
    let store = import_store(&kb()).unwrap();
    let secrets = tempfile::tempdir().unwrap();
    let tokens = secrets.path().join("tokens.toml");
    let hash = hex::encode(Sha256::digest(SENTINEL.as_bytes()));
    // Reads need the token too (a read grant makes paths private).
    std::fs::write(
        &tokens,
        format!(
            "[[token]]\nhash = \"sha256-{hash}\"\npaths = [\"/**\"]\nops = [\"read\", \"publish\"]\n"
        ),
    )
    .unwrap();
    let token_file = secrets.path().join("token");
    std::fs::write(&token_file, format!("{SENTINEL}\n")).unwrap();
    let server =
        MarkServerProcess::start(store.path(), &["--tokens", tokens.to_str().unwrap()]).unwrap();
    let base = server.reader_args(&["--write"]);

    // With --token-file, then with MARK_TOKEN.
    let mut with_file = base.clone();
    with_file.extend(["--token-file".to_string(), token_file.display().to_string()]);
    let (results, stderr) = session(&with_file, false).await;
    assert!(
        stderr.contains("TRACE") || stderr.contains("DEBUG"),
        "trace logging is on"
    );
    for r in &results {
        assert!(!r.contains(SENTINEL), "a result holds the token: {r}");
    }
    assert!(!stderr.contains(SENTINEL), "stderr holds the token");
    assert!(results.iter().any(|r| r.contains("status: created")));

    let (results, stderr) = session(&base, true).await;
    for r in &results {
        assert!(!r.contains(SENTINEL), "a result holds the token: {r}");
    }
    assert!(!stderr.contains(SENTINEL), "stderr holds the token");

    // The server: nothing in its output; its files hold only the hash.
    assert!(!server.log_lines().iter().any(|l| l.contains(SENTINEL)));
    assert_eq!(
        files_containing(store.path(), SENTINEL.as_bytes()),
        Vec::<String>::new()
    );
    let token_store = std::fs::read_to_string(&tokens).unwrap();
    assert!(!token_store.contains(SENTINEL) && token_store.contains(&hash));

    // Without the token, reads of the private store are refused in one
    // sentence that does not invent a token either.
    let mut read_only = base.clone();
    read_only.retain(|a| a != "--write");
    let mcp = support::Mcp::start(&read_only).await;
    let r = mcp.fetch("/small.md").await;
    mcp.stop().await;
    assert_eq!(r.status(), "unauthorized", "{}", r.text);
    assert!(!r.text.contains(SENTINEL));
    // #14.11: it says what the user sets, not the wire's `auth` field.
    assert!(
        r.body()
            .contains("--token-file FILE or the MARK_TOKEN environment variable"),
        "{}",
        r.text
    );
    assert!(!r.text.contains("`auth`"), "{}", r.text);
}
