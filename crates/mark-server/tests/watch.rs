//! WATCH end to end: a real `mark-server` process on 127.0.0.1, watches
//! opened with `mark-client`, changes made by other clients' writes and by
//! files saved under `--flat`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mark_client::{Client, ClientConfig, Trust, WatchStart, WatchStream, lacks_watch};
use mark_proto::watch::{ChangeOp, Cursor, WatchBlock};
use mark_proto::{Request, Status, Verb};
use mark_testkit::{MarkServerProcess, generate_token, import_store};
use std::path::Path;
use std::time::Duration;

fn client_for(server: &MarkServerProcess) -> Client {
    Client::new(ClientConfig {
        trust: Trust::Pin(server.fingerprint),
        ..Default::default()
    })
    .unwrap()
}

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// A versioned store with `/guide/a.md`, `/b.md` and a private `/private/p.md`.
struct Served {
    server: MarkServerProcess,
    writer: String,
    reader: String,
    _store: mark_testkit::TempStore,
    _tokens: tempfile::TempDir,
}

fn serve(extra: &[&str]) -> Served {
    let src = tempfile::tempdir().unwrap();
    write(
        src.path(),
        &[
            ("guide/a.md", "# A\n"),
            ("b.md", "# B\n"),
            ("private/p.md", "# P\n"),
        ],
    );
    let store = import_store(src.path()).unwrap();
    let tokens = tempfile::tempdir().unwrap();
    let file = tokens.path().join("tokens.toml");
    let writer = generate_token(&file, "/**", "publish", None).unwrap();
    let reader = generate_token(&file, "/private/**", "read", None).unwrap();
    let mut args = vec!["--tokens".to_string(), file.display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    let server = MarkServerProcess::start(store.path(), &args).unwrap();
    Served {
        server,
        writer,
        reader,
        _store: store,
        _tokens: tokens,
    }
}

async fn open(
    client: &Client,
    server: &MarkServerProcess,
    path: &str,
    since: Option<Cursor>,
) -> WatchStart {
    client
        .watch("127.0.0.1", server.addr.port(), path, since)
        .await
        .unwrap()
}

async fn watching(client: &Client, server: &MarkServerProcess, path: &str) -> WatchStream {
    match open(client, server, path, None).await {
        WatchStart::Watching(w) => w,
        WatchStart::Refused(r) => {
            panic!("WATCH {path} refused: {} {}", r.status, r.error_message())
        }
    }
}

/// The next block within 10 s.
async fn next(watch: &mut WatchStream) -> Option<WatchBlock> {
    tokio::time::timeout(Duration::from_secs(10), watch.next())
        .await
        .expect("no block within 10 s")
        .unwrap()
}

/// The next change event, skipping heartbeats.
async fn next_change(watch: &mut WatchStream) -> mark_proto::watch::Change {
    loop {
        match next(watch).await {
            Some(WatchBlock::Change(c)) => return c,
            Some(WatchBlock::Heartbeat(_)) => continue,
            other => panic!("expected a change, got {other:?}"),
        }
    }
}

async fn publish(client: &Client, s: &Served, path: &str, body: &str) {
    let resp = client
        .request(
            "127.0.0.1",
            s.server.addr.port(),
            Request::new(Verb::Publish, path)
                .with_meta("auth", &s.writer)
                .with_body(body),
        )
        .await
        .unwrap();
    assert!(resp.status.is_success(), "{}", resp.error_message());
}

#[tokio::test]
async fn another_client_s_writes_reach_the_watches_whose_scope_they_are_in() {
    let s = serve(&[]);
    let watcher = client_for(&s.server);
    let mut all = watching(&watcher, &s.server, "/").await;
    let mut guide = watching(&watcher, &s.server, "/guide/").await;
    let writer = client_for(&s.server);
    publish(&writer, &s, "/b.md", "# B\n\nmore\n").await;
    publish(&writer, &s, "/guide/a.md", "# A\n\nmore\n").await;
    publish(&writer, &s, "/guide/a.md", "# A\n\nmore\n").await; // identical: no change
    publish(&writer, &s, "/private/p.md", "# P2\n").await;
    let first = next_change(&mut all).await;
    assert_eq!(
        (first.path.as_str(), first.version, &first.op),
        ("/b.md", 2, &ChangeOp::Publish)
    );
    assert!(
        first
            .hash
            .as_deref()
            .is_some_and(|h| h.starts_with("sha256-"))
    );
    assert!(first.cursor.seq > all.ack().seq);
    let second = next_change(&mut all).await;
    assert_eq!(second.path, "/guide/a.md");
    // The folder watch sees only its folder.
    let only = next_change(&mut guide).await;
    assert_eq!(
        (only.path.as_str(), only.cursor),
        ("/guide/a.md", second.cursor)
    );
    // A private document's change is not shown to a watch without its read token.
    let archive = Request::new(Verb::Archive, "/b.md").with_meta("auth", &s.writer);
    writer
        .request("127.0.0.1", s.server.addr.port(), archive)
        .await
        .unwrap();
    let third = next_change(&mut all).await;
    assert_eq!(
        (third.path.as_str(), &third.op, third.hash.as_deref()),
        ("/b.md", &ChangeOp::Archive, None)
    );
    // Each watch is one request line in the server's log.
    assert_eq!(s.server.count_requests("WATCH", "/"), 1);
}

#[tokio::test]
async fn a_read_token_guards_its_subtree_and_errors_come_as_ordinary_answers() {
    let s = serve(&[]);
    let client = client_for(&s.server);
    match open(&client, &s.server, "/private/", None).await {
        WatchStart::Refused(r) => assert_eq!(r.status, Status::Unauthorized),
        WatchStart::Watching(_) => panic!("a private folder was watched without its token"),
    }
    match open(&client, &s.server, "/nowhere/", None).await {
        WatchStart::Refused(r) => assert_eq!(r.status, Status::NotFound),
        WatchStart::Watching(_) => panic!("a missing folder was watched"),
    }
    let reader = Client::new(ClientConfig {
        trust: Trust::Pin(s.server.fingerprint),
        token: Some(mark_client::Token::new(s.reader.clone())),
        ..Default::default()
    })
    .unwrap();
    let mut private = watching(&reader, &s.server, "/private/").await;
    publish(&client, &s, "/private/p.md", "# P2\n").await;
    assert_eq!(next_change(&mut private).await.path, "/private/p.md");
}

#[tokio::test]
async fn heartbeats_come_while_idle_and_a_resumed_watch_replays_or_asks_for_a_resync() {
    let s = serve(&["--watch-heartbeat-ms", "200", "--watch-backlog", "2"]);
    let client = client_for(&s.server);
    let mut w = watching(&client, &s.server, "/").await;
    assert!(matches!(next(&mut w).await, Some(WatchBlock::Heartbeat(c)) if c == w.ack()));
    let start = w.ack();
    drop(w);
    publish(&client, &s, "/b.md", "# B v2\n").await;
    match open(&client, &s.server, "/", Some(start)).await {
        WatchStart::Watching(mut w) => {
            assert_eq!(w.ack(), start);
            assert_eq!(next_change(&mut w).await.path, "/b.md");
        }
        WatchStart::Refused(r) => panic!("{}", r.error_message()),
    }
    for v in 3..6 {
        publish(&client, &s, "/b.md", &format!("# B v{v}\n")).await;
    }
    match open(&client, &s.server, "/", Some(start)).await {
        WatchStart::Watching(mut w) => {
            let end = next(&mut w).await;
            assert!(
                matches!(end, Some(WatchBlock::End(Status::Other(ref s), Some(_))) if s == "resync"),
                "{end:?}"
            );
            assert_eq!(next(&mut w).await, None, "the stream ends after resync");
        }
        WatchStart::Refused(r) => panic!("{}", r.error_message()),
    }
    let bad = Cursor { epoch: 1, seq: 1 };
    match open(&client, &s.server, "/", Some(bad)).await {
        WatchStart::Watching(mut w) => {
            assert!(
                matches!(next(&mut w).await, Some(WatchBlock::End(Status::Other(ref s), _)) if s == "resync")
            );
        }
        WatchStart::Refused(r) => panic!("{}", r.error_message()),
    }
}

#[tokio::test]
async fn a_flat_folder_s_saved_and_deleted_files_reach_a_watch() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &[("notes/a.md", "# A\n"), ("b.md", "# B\n")]);
    let server =
        MarkServerProcess::start(dir.path(), &["--flat", "--watch-recheck-ms", "50"]).unwrap();
    let client = client_for(&server);
    let mut w = watching(&client, &server, "/").await;
    // Let the first re-check take the folder's stamps.
    tokio::time::sleep(Duration::from_millis(300)).await;
    std::fs::write(dir.path().join("notes/a.md"), "# A, saved by an editor\n").unwrap();
    let saved = next_change(&mut w).await;
    assert_eq!((saved.path.as_str(), saved.version), ("/notes/a.md", 1));
    std::fs::remove_file(dir.path().join("b.md")).unwrap();
    let gone = next_change(&mut w).await;
    assert_eq!(
        (gone.path.as_str(), &gone.op, gone.hash),
        ("/b.md", &ChangeOp::Remove, None)
    );
}

#[tokio::test]
async fn watches_are_capped_per_connection_and_a_server_before_watch_says_so() {
    let s = serve(&["--max-watches-per-connection", "1"]);
    let client = client_for(&s.server);
    let _one = watching(&client, &s.server, "/").await;
    match open(&client, &s.server, "/guide/", None).await {
        WatchStart::Refused(r) => assert_eq!(r.status, Status::Unavailable),
        WatchStart::Watching(_) => panic!("a second watch passed the cap"),
    }
    // Requests still flow on the connection holding the watch.
    let resp = client
        .request(
            "127.0.0.1",
            s.server.addr.port(),
            Request::new(Verb::Fetch, "/b.md"),
        )
        .await
        .unwrap();
    assert_eq!(resp.status, Status::Ok);
    let old = serve(&["--no-watch"]);
    let client = client_for(&old.server);
    match open(&client, &old.server, "/", None).await {
        WatchStart::Refused(r) => {
            assert_eq!(r.status, Status::ServerError);
            assert!(lacks_watch(&r));
        }
        WatchStart::Watching(_) => panic!("--no-watch watched"),
    }
    let refused = mark_testkit::run_mark_server(&[
        "--root",
        ".",
        "--max-streams",
        "4",
        "--max-watches-per-connection",
        "4",
    ]);
    assert!(
        refused
            .unwrap_err()
            .to_string()
            .contains("below --max-streams")
    );
}

#[tokio::test]
async fn a_shutdown_ends_each_watch_with_closing() {
    let s = serve(&[]);
    let client = client_for(&s.server);
    let mut w = watching(&client, &s.server, "/").await;
    let pid = s.server.child.id().to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    let end = next(&mut w).await;
    assert!(
        matches!(end, Some(WatchBlock::End(Status::Other(ref s), Some(c))) if s == "closing" && c == w.ack()),
        "{end:?}"
    );
}
