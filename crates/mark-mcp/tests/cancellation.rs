//! Cancellation end to end: the real `mark-mcp` binary over stdio, spoken
//! to in raw newline-delimited JSON-RPC (so the test owns every request id),
//! reading a real `mark-server`. An MCP `notifications/cancelled` for a long
//! call stops its work: a crawl sends no further request, a fetch stalled on
//! a frozen server is dropped (nothing of it reaches the session cache or
//! the delivery log), no result of the cancelled call is ever sent, and the
//! session goes on answering.
//!
//! The MCP specification (basic/utilities/cancellation) says the receiver
//! SHOULD stop processing, free its resources and not send a response; rmcp
//! 3.11 drops any response to a cancelled id. An error response would be
//! tolerable; a normal result after the cancellation is not.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use mark_testkit::{MarkServerProcess, TempStore, import_store};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{body, field, kb, signal};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// A hang guard for one answer (debug build, loaded 2-core machine), not a
/// performance bound.
const ANSWER_LIMIT: Duration = Duration::from_secs(30);

/// The protocol revision the handshake names (the newest with `initialize`).
const PROTOCOL: &str = "2025-11-25";

/// A `mark-mcp` child spoken to in raw JSON-RPC over its stdin and stdout.
struct RawMcp {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    /// Every message read from stdout so far, in order.
    transcript: Vec<Value>,
}

impl RawMcp {
    /// Starts `mark-mcp ARGS…` and completes the handshake (request id 0).
    async fn start(args: &[String]) -> RawMcp {
        let mut child = Command::new(support::bin())
            .env("XDG_CACHE_HOME", support::cache_home())
            .args(args)
            .env_remove("MARK_TOKEN")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut mcp = RawMcp {
            child,
            stdin,
            stdout,
            transcript: Vec::new(),
        };
        mcp.send(json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "cancellation-test", "version": "0"}
            }
        }))
        .await;
        let init = mcp.response(0).await;
        assert!(init.get("result").is_some(), "handshake: {init}");
        mcp.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        mcp
    }

    async fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        let mut line = message.to_string();
        line.push('\n');
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// Sends `tools/call NAME ARGS` as request `id` without waiting.
    async fn call_tool(&mut self, id: u64, name: &str, args: Value) {
        self.send(json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": args}
        }))
        .await;
    }

    /// Sends `notifications/cancelled` for request `id`.
    async fn cancel(&mut self, id: u64) {
        self.send(json!({
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "the test gave up"}
        }))
        .await;
    }

    /// The next message from stdout; `None` at the end of the stream.
    async fn next_message(&mut self, limit: Duration) -> Option<Value> {
        let line = tokio::time::timeout(limit, self.stdout.next_line())
            .await
            .expect("mark-mcp said nothing within the hang guard")
            .unwrap()?;
        let message: Value = serde_json::from_str(&line).unwrap();
        self.transcript.push(message.clone());
        Some(message)
    }

    /// Reads until the response to request `id` (notifications in between
    /// are kept in the transcript).
    async fn response(&mut self, id: u64) -> Value {
        loop {
            let message = self
                .next_message(ANSWER_LIMIT)
                .await
                .expect("mark-mcp ended before answering");
            if message.get("id") == Some(&json!(id)) {
                return message;
            }
        }
    }

    /// Calls a tool and returns its result text, checking it is no tool error.
    async fn call_ok(&mut self, id: u64, name: &str, args: Value) -> String {
        self.call_tool(id, name, args).await;
        let answer = self.response(id).await;
        let result = &answer["result"];
        assert_eq!(result["isError"], json!(false), "{answer}");
        result["content"][0]["text"].as_str().unwrap().to_string()
    }

    /// Closes stdin (the session ends), reads the rest of stdout and waits
    /// for the process: afterwards the transcript holds everything it sent.
    async fn finish(mut self) -> Vec<Value> {
        drop(self.stdin.take());
        while self.next_message(ANSWER_LIMIT).await.is_some() {}
        let status = tokio::time::timeout(ANSWER_LIMIT, self.child.wait())
            .await
            .expect("mark-mcp did not exit after stdin closed")
            .unwrap();
        assert!(status.success(), "mark-mcp exited with {status}");
        self.transcript
    }
}

/// Checks that the cancelled request `id` got no normal result: either no
/// response at all (what the specification asks for) or an error.
fn no_result_for(transcript: &[Value], id: u64) {
    for message in transcript
        .iter()
        .filter(|m| m.get("id") == Some(&json!(id)))
    {
        let is_tool_error = message["result"]["isError"] == json!(true);
        assert!(
            message.get("error").is_some() || is_tool_error,
            "a result for the cancelled request {id}: {message}"
        );
    }
}

fn fetches(server: &MarkServerProcess) -> usize {
    server
        .requests_seen()
        .iter()
        .filter(|r| r.verb == "FETCH")
        .count()
}

/// Polls `count` until it has not changed for `quiet`; returns the settled
/// count and when it last changed (`None`: never, after the first reading).
/// Panics if it never settles within `limit`.
fn settle(count: impl Fn() -> usize, quiet: Duration, limit: Duration) -> (usize, Option<Instant>) {
    let started = Instant::now();
    let mut last = count();
    let mut changed_at = None;
    loop {
        std::thread::sleep(Duration::from_millis(10));
        let now = count();
        if now != last {
            last = now;
            changed_at = Some(Instant::now());
        } else if changed_at.unwrap_or(started).elapsed() >= quiet {
            return (last, changed_at);
        }
        assert!(
            started.elapsed() < limit,
            "the count still grows {limit:?} on: {last}"
        );
    }
}

/// Waits until the server has logged at least `n` FETCHes.
async fn wait_for_fetches(server: &MarkServerProcess, n: usize) {
    let started = Instant::now();
    while fetches(server) < n {
        assert!(
            started.elapsed() < ANSWER_LIMIT,
            "only {} FETCHes, waiting for {n}",
            fetches(server)
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Documents per folder and folders of the generated tree.
const PER_FOLDER: usize = 100;
const FOLDERS: usize = 40;

fn doc_path(folder: usize, n: usize) -> String {
    format!("/f{folder:02}/doc-{n:03}.md")
}

/// A tree of `FOLDERS × PER_FOLDER` small documents, each linking to the
/// hub and to the next one, and `/hub.md` linking to the first of each
/// folder.
fn write_tree(root: &Path) {
    let mut hub = String::from("# Hub\n\nWhere every chain starts.\n\n## Chains\n\n");
    for folder in 0..FOLDERS {
        std::fs::create_dir(root.join(format!("f{folder:02}"))).unwrap();
        hub.push_str(&format!("- [chain {folder}]({})\n", doc_path(folder, 0)));
        for n in 0..PER_FOLDER {
            let next = format!("doc-{:03}.md", (n + 1) % PER_FOLDER);
            let text = format!(
                "# Document {folder}.{n}\n\nBack to the [hub](/hub.md#chains); next: [{next}]({next}).\n"
            );
            std::fs::write(root.join(&doc_path(folder, n)[1..]), text).unwrap();
        }
    }
    std::fs::write(root.join("hub.md"), hub).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_explore_stops_its_crawl() {
    a_cancelled_call_stops_its_crawl(&[], "mark_explore", json!({"url": "/hub.md"})).await;
}

/// #13: a lookup on a server without LOOKUP waits for the crawl that fills
/// its index; cancelled, it stops that crawl as a card does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_lookup_on_a_server_without_lookup_stops_its_crawl() {
    a_cancelled_call_stops_its_crawl(&["--no-lookup"], "mark_lookup", json!({"query": "hub"}))
        .await;
}

/// Calls `tool` with `args` on a session over the generated tree (served
/// with `--flat` and `server_flags`), a call that waits for the whole
/// crawl; cancels it once the crawl runs, and checks the crawl stopped
/// and the session answers the next call at once.
async fn a_cancelled_call_stops_its_crawl(server_flags: &[&str], tool: &str, args: Value) {
    let tree = tempfile::tempdir().unwrap();
    write_tree(tree.path());
    let total = FOLDERS * PER_FOLDER + 1;
    let flags: Vec<&str> = ["--flat"].iter().chain(server_flags).copied().collect();
    let server = Arc::new(MarkServerProcess::start(tree.path(), &flags).unwrap());
    // One crawl request at a time, bounds far beyond the tree, and a card
    // that would wait for the whole crawl: only the cancellation ends it.
    let mut mcp = RawMcp::start(&server.reader_args(&[
        "--crawl-concurrency",
        "1",
        "--crawl-docs",
        "100000",
        "--crawl-time",
        "30m",
        "--crawl-wait",
        "30m",
    ]))
    .await;
    mcp.call_tool(1, tool, args).await;
    // The crawl is running once the server has answered some of its FETCHes;
    // how fast it goes is measured to show that a quiet second means a stop.
    wait_for_fetches(&server, 20).await;
    let pace = Instant::now();
    wait_for_fetches(&server, 40).await;
    let twenty = pace.elapsed();
    let at_cancel = fetches(&server);
    mcp.cancel(1).await;
    let cancelled = Instant::now();

    // The count stops growing: a second without a new FETCH, the one in
    // flight at the cancellation (and the log reader's lag) allowed for.
    let quiet = Duration::from_secs(1);
    assert!(
        twenty * 4 < quiet * 20,
        "the crawl is too slow ({twenty:?} for 20 FETCHes) for a quiet second to mean a stop"
    );
    let (settled, last_change) = tokio::task::spawn_blocking({
        let server = Arc::clone(&server);
        move || settle(|| fetches(&server), quiet, ANSWER_LIMIT)
    })
    .await
    .unwrap();
    let last_after = last_change.map(|at| at.saturating_duration_since(cancelled));
    eprintln!(
        "crawl: 20 FETCHes took {twenty:?} before the cancellation; {at_cancel} FETCHes \
         at it, {settled} once settled (last new one seen at {last_after:?} after it; None: none while settling); \
         {total} documents in the tree"
    );
    // The one request in flight, and log lines not yet read at the
    // cancellation, may still be counted: a few, where a crawl going on
    // would add hundreds a second (and never settle before its end).
    assert!(
        settled <= at_cancel + 10,
        "the crawl went on after the cancellation: {at_cancel} -> {settled}"
    );
    assert!(settled < total / 2, "the crawl had all but finished");

    // The session answers the next call right away, correctly, and it costs
    // exactly one FETCH: nothing else started again.
    let one = doc_path(7, 42);
    let crawled = server.count_requests("FETCH", &one);
    let started = Instant::now();
    let text = mcp.call_ok(2, "mark_fetch", json!({ "url": one })).await;
    let took = started.elapsed();
    eprintln!("crawl: the next call answered in {took:?}");
    assert_eq!(field(&text, "status"), Some("ok"), "{text}");
    assert_eq!(
        body(&text),
        "# Document 7.42\n\nBack to the [hub](/hub.md#chains); next: [doc-043.md](doc-043.md).\n"
    );
    server.wait_for_requests("FETCH", &one, crawled + 1, ANSWER_LIMIT);
    assert_eq!(fetches(&server), settled + 1, "only the fetch went out");
    let transcript = mcp.finish().await;
    no_result_for(&transcript, 1);
}

/// A mark-server over the fixture knowledge base and a session with a long
/// request timeout, so only a cancellation ends a stalled call early; cached
/// copies stay fresh for the whole test, so a cached document costs no request.
async fn server_and_patient_session() -> (TempStore, MarkServerProcess, RawMcp) {
    let store = import_store(&kb()).unwrap();
    let server = MarkServerProcess::start::<&str>(store.path(), &[]).unwrap();
    let mcp = RawMcp::start(&server.reader_args(&["--timeout", "60s", "--fresh-for", "10m"])).await;
    (store, server, mcp)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_fetch_on_a_stalled_server_is_dropped() {
    let (_store, server, mut mcp) = server_and_patient_session().await;
    let text = mcp
        .call_ok(1, "mark_fetch", json!({"url": "/small.md"}))
        .await;
    assert_eq!(field(&text, "mode"), Some("full"), "{text}");

    // The server freezes; the fetch of a section goes out and hangs.
    signal(&server, "STOP");
    mcp.call_tool(2, "mark_fetch", json!({"url": "/large.md#pilots"}))
        .await;
    // Time for the request to leave (the frozen server cannot say it came).
    tokio::time::sleep(Duration::from_millis(500)).await;
    mcp.cancel(2).await;

    // The session answers the next call at once, from its cache (rmcp runs
    // calls side by side, so this alone does not show the work stopped:
    // what follows does).
    let started = Instant::now();
    let text = mcp
        .call_ok(3, "mark_fetch", json!({"url": "/small.md"}))
        .await;
    let took = started.elapsed();
    assert_eq!(field(&text, "status"), Some("unchanged"), "{text}");
    assert!(
        took < Duration::from_secs(10),
        "the next call took {took:?}"
    );

    // The server thaws and answers the request it had received. A call
    // still waiting would take that answer into the session cache and mark
    // the section delivered; the cancelled one dropped its stream instead.
    signal(&server, "CONT");
    // Under heavy load the request may not have left before the
    // cancellation; then there is nothing for the server to answer.
    let stalled = server.wait_for_requests("FETCH", "/large.md", 1, Duration::from_secs(5));
    // Give a call that wrongly lived on the time to take the answer in.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let text = mcp
        .call_ok(4, "mark_fetch", json!({"url": "/large.md#pilots"}))
        .await;
    assert_eq!(
        field(&text, "status"),
        Some("ok"),
        "delivered again: {text}"
    );
    assert!(body(&text).starts_with("## Pilots"), "{text}");
    // Not from the cache: the cancelled call left nothing there.
    assert_eq!(
        server.wait_for_requests("FETCH", "/large.md", stalled + 1, ANSWER_LIMIT),
        stalled + 1
    );
    eprintln!(
        "fetch: the call after the cancellation answered in {took:?}; \
         the stalled request reached the server: {}",
        stalled == 1
    );
    let transcript = mcp.finish().await;
    no_result_for(&transcript, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_card_on_a_stalled_server_is_not_recorded_as_sent() {
    let (_store, server, mut mcp) = server_and_patient_session().await;
    // The first card builds the whole link graph.
    let text = mcp
        .call_ok(1, "mark_explore", json!({"url": "/small.md"}))
        .await;
    assert!(text.contains("graph complete"), "{text}");
    let fetches = server.count_requests("FETCH", "/large.md");

    // The server freezes; the card for /large.md waits on the document's
    // FETCH (its folder's listing is the session's, within --fresh-for).
    signal(&server, "STOP");
    mcp.call_tool(2, "mark_explore", json!({"url": "/large.md"}))
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    mcp.cancel(2).await;

    // Thawed, the server answers what it had received; a call that lived on
    // would now finish, cache the document and record the card as sent.
    signal(&server, "CONT");
    let stalled =
        server.wait_for_requests("FETCH", "/large.md", fetches + 1, Duration::from_secs(5));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let text = mcp
        .call_ok(3, "mark_explore", json!({"url": "/large.md"}))
        .await;
    assert_eq!(field(&text, "status"), Some("ok"), "sent again: {text}");
    assert!(text.contains("## Outline"), "{text}");
    // Not from the cache: the cancelled call left nothing there.
    assert_eq!(
        server.wait_for_requests("FETCH", "/large.md", stalled + 1, ANSWER_LIMIT),
        stalled + 1
    );
    let transcript = mcp.finish().await;
    no_result_for(&transcript, 2);
}
