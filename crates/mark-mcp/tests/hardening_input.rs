//! Hardening, bad tool arguments: the real `mark-mcp` binary over `--root`
//! gets missing, mistyped, oversized and malformed arguments. Each answer is
//! a tool error in one short sentence (or, for arguments the JSON schema
//! rejects, rmcp's invalid-params error), never a crash, and the session
//! keeps answering: a normal fetch succeeds after every bad call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use rmcp::model::CallToolRequestParams;
use serde_json::{Map, Value, json};
use std::time::Duration;
use support::{Mcp, kb};

/// A hang guard, not a performance bound.
const CALL_LIMIT: Duration = Duration::from_secs(30);

/// What one bad call produced.
#[derive(Debug)]
enum Outcome {
    /// A tool result with `isError: true`: its text.
    ToolError(String),
    /// A tool result that is not an error: its text.
    Ok(String),
    /// A JSON-RPC error (rmcp refused the arguments before the tool ran).
    Rpc(String),
}

async fn call_raw(mcp: &Mcp, tool: &'static str, args: Value) -> Outcome {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let call = mcp
        .client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(args));
    match tokio::time::timeout(CALL_LIMIT, call)
        .await
        .expect("the call hung")
    {
        Ok(r) => {
            let text: String = r
                .content
                .iter()
                .filter_map(|c| c.as_text())
                .map(|t| t.text.as_str())
                .collect();
            if r.is_error.unwrap_or(false) {
                Outcome::ToolError(text)
            } else {
                Outcome::Ok(text)
            }
        }
        Err(e) => Outcome::Rpc(e.to_string()),
    }
}

/// The message of a tool error: one line, short, a sentence about the input.
fn assert_one_sentence(case: &str, text: &str) {
    // Our errors come in the envelope; rmcp's own (arguments it cannot
    // deserialize) are the bare sentence.
    let message = if text.starts_with("status: ") {
        support::body(text).trim()
    } else {
        text.trim()
    };
    assert!(!message.is_empty(), "{case}: empty error: {text:?}");
    assert!(
        !message.contains('\n'),
        "{case}: the error is more than one line: {message:?}"
    );
    assert!(
        message.len() <= 600,
        "{case}: the error is {} bytes (echoes the input?): {}…",
        message.len(),
        &message[..message.floor_char_boundary(200)]
    );
    for word in ["panic", "unwrap", "RUST_BACKTRACE"] {
        assert!(!message.contains(word), "{case}: {message}");
    }
    assert!(
        !message.chars().any(|c| c.is_control()),
        "{case}: control characters in the error: {message:?}"
    );
}

/// The session still works: a small document comes whole.
async fn still_works(mcp: &Mcp, case: &str) {
    let r = tokio::time::timeout(
        CALL_LIMIT,
        mcp.call("mark_fetch", json!({"url": "/small.md", "force": true})),
    )
    .await
    .unwrap_or_else(|_| panic!("{case}: the session hangs afterwards"));
    assert_eq!(
        (r.status(), r.field("mode")),
        ("ok", Some("full")),
        "{case}: the session is broken afterwards: {}",
        r.text
    );
}

fn obj(pairs: &[(&str, Value)]) -> Value {
    let mut m = Map::new();
    for (k, v) in pairs {
        m.insert((*k).to_string(), v.clone());
    }
    Value::Object(m)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_are_one_sentence_errors_and_the_session_survives() {
    let mcp = Mcp::start(&["--root", &kb().display().to_string()]).await;
    let huge_url = format!("/{}.md", "a".repeat(1 << 20));
    let long_anchor = format!("/large.md#{}", "x".repeat(10_000));
    let many_anchors: Vec<String> = (0..1000).map(|i| format!("missing-{i}")).collect();

    // Cases that must be tool errors (`isError: true`) in one sentence.
    let tool_errors: Vec<(&str, &'static str, Value)> = vec![
        ("empty url", "mark_fetch", json!({"url": ""})),
        ("blank url", "mark_fetch", json!({"url": "   "})),
        (
            "another scheme",
            "mark_fetch",
            json!({"url": "https://example.org/small.md"}),
        ),
        (
            "another host",
            "mark_fetch",
            json!({"url": "mark://docs.example.org/small.md"}),
        ),
        ("relative path", "mark_fetch", json!({"url": "small.md"})),
        ("1 MB url", "mark_fetch", json!({"url": huge_url})),
        (
            "10,000-char anchor",
            "mark_fetch",
            json!({"url": long_anchor}),
        ),
        (
            "control characters",
            "mark_fetch",
            json!({"url": "/sm\u{0}all\u{7}.md\r\n"}),
        ),
        (
            "1,000 unknown anchors",
            "mark_fetch",
            json!({"url": "/large.md", "anchors": many_anchors}),
        ),
        (
            "bad cursor",
            "mark_fetch",
            json!({"url": "/large.md", "cursor": "p9.nonsense"}),
        ),
        (
            "list of another host",
            "mark_list",
            json!({"url": "mark://x/"}),
        ),
        ("versions of empty url", "mark_versions", json!({"url": ""})),
    ];
    let mut counted = 0;
    for (case, tool, args) in tool_errors {
        match call_raw(&mcp, tool, args).await {
            Outcome::ToolError(text) => assert_one_sentence(case, &text),
            other => panic!("{case}: expected a tool error, got {other:?}"),
        }
        still_works(&mcp, case).await;
        counted += 1;
    }

    // Arguments the JSON schema rejects: rmcp answers invalid params before
    // the tool runs. Either way it names the problem and the session lives.
    let schema_errors: Vec<(&str, &'static str, Value)> = vec![
        ("missing url", "mark_fetch", json!({})),
        ("url of wrong type", "mark_fetch", json!({"url": 42})),
        ("url null", "mark_fetch", obj(&[("url", Value::Null)])),
        (
            "anchors not a list",
            "mark_fetch",
            json!({"url": "/large.md", "anchors": "pilots"}),
        ),
        (
            "force not a bool",
            "mark_fetch",
            json!({"url": "/small.md", "force": "yes"}),
        ),
        (
            "unknown mode",
            "mark_fetch",
            json!({"url": "/small.md", "mode": "everything"}),
        ),
        (
            "limit negative",
            "mark_lookup",
            json!({"query": "harbour", "limit": -1}),
        ),
        ("missing query", "mark_lookup", json!({})),
    ];
    for (case, tool, args) in schema_errors {
        match call_raw(&mcp, tool, args).await {
            Outcome::ToolError(text) => assert_one_sentence(case, &text),
            Outcome::Rpc(message) => {
                assert!(
                    message.len() < 1000 && !message.contains("panic"),
                    "{case}: {message}"
                );
            }
            Outcome::Ok(text) => panic!("{case}: accepted: {text}"),
        }
        still_works(&mcp, case).await;
        counted += 1;
    }

    // Paths that climb out of the root name nothing: not-found, no bytes.
    for url in [
        "/../etc/passwd",
        "/notes/../../etc/passwd",
        "/%2e%2e/etc/passwd",
    ] {
        match call_raw(&mcp, "mark_fetch", json!({ "url": url })).await {
            Outcome::Ok(text) | Outcome::ToolError(text) => {
                assert!(!text.contains("root:"), "{url}: {text}");
                assert!(
                    matches!(
                        support::field(&text, "status"),
                        Some("not-found" | "bad-request" | "error")
                    ),
                    "{url}: {text}"
                );
            }
            Outcome::Rpc(e) => panic!("{url}: {e}"),
        }
        still_works(&mcp, url).await;
        counted += 1;
    }

    // Unknown parameters are ignored (clients add their own), the known ones
    // still apply.
    match call_raw(
        &mcp,
        "mark_fetch",
        json!({"url": "/large.md#pilots", "bogus": [1, 2], "format": "xml"}),
    )
    .await
    {
        Outcome::Ok(text) => {
            assert!(support::body(&text).starts_with("## Pilots"), "{text}")
        }
        other => panic!("unknown parameters: {other:?}"),
    }
    still_works(&mcp, "unknown parameters").await;
    counted += 1;

    // An unknown tool is a JSON-RPC error and nothing more.
    let unknown_tool = mcp
        .client
        .call_tool(CallToolRequestParams::new("mark_delete_everything"))
        .await;
    assert!(unknown_tool.is_err(), "{unknown_tool:?}");
    still_works(&mcp, "unknown tool").await;
    counted += 1;

    // A valid section with 1,000 anchors that all exist (repeats collapse).
    let r = mcp
        .call(
            "mark_fetch",
            json!({"url": "/large.md", "anchors": vec!["pilots"; 1000], "force": true}),
        )
        .await;
    assert_eq!(r.field("section"), Some("#pilots"), "{}", r.text);
    counted += 1;

    // Resources and prompts with bad input: errors, not crashes.
    assert!(mcp.read("https://example.org/x.md").await.is_err());
    assert!(mcp.read("mark://local/missing.md").await.is_err());
    still_works(&mcp, "bad resource").await;
    counted += 2;

    assert_eq!(counted, 28, "every case ran");
    mcp.stop().await;
}

/// Runs the binary once, killing it if it has not ended within `limit`
/// (then the test fails: a hang, not an answer).
fn run_within(args: &[&str], limit: Duration) -> std::process::Output {
    let mut child = std::process::Command::new(support::bin())
        .env("XDG_CACHE_HOME", support::cache_home())
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            panic!("mark-mcp {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A named pipe and a socket named `*.md` in a `--root` folder: the CLI and
/// the MCP tools answer at once that each is no regular file (a FIFO used
/// to block the open forever), and the rest of the folder is served.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipes_and_sockets_in_a_root_folder_answer_at_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.md"), "# A\n\nServed.\n").unwrap();
    mark_testkit::make_fifo(&dir.path().join("pipe.md")).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(dir.path().join("sock.md")).unwrap();
    let root = dir.path().display().to_string();
    let out = run_within(
        &["--root", &root, "fetch", "/pipe.md"],
        Duration::from_secs(10),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    assert!(stdout.contains("status: not-found"), "{stdout}");
    assert!(
        stdout.contains("`/pipe.md` is a named pipe (FIFO), not a regular file"),
        "{stdout}"
    );
    let mcp = Mcp::start(&["--root", &root]).await;
    for (path, kind) in [("/pipe.md", "named pipe"), ("/sock.md", "socket")] {
        let r = tokio::time::timeout(CALL_LIMIT, mcp.fetch(path))
            .await
            .expect("a fetch of an odd file hung");
        assert_eq!(r.status(), "not-found", "{}", r.text);
        assert!(r.text.contains(kind), "{}", r.text);
    }
    let card = tokio::time::timeout(
        CALL_LIMIT,
        mcp.call("mark_explore", json!({"url": "/a.md"})),
    )
    .await
    .expect("a card over a folder with a pipe hung");
    assert_eq!(card.status(), "ok", "{}", card.text);
    assert!(mcp.fetch("/a.md").await.body().contains("Served."));
    mcp.stop().await;
}
