//! The CLI face and the process contract: verbs print what the tools
//! return, `open` reads plain files, and in MCP mode stdout carries nothing
//! but JSON-RPC.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use support::{Mcp, bin, kb, run_once};

fn run(args: &[&str]) -> (String, bool) {
    let out = run_once(args);
    (String::from_utf8(out.stdout).unwrap(), out.status.success())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbs_print_exactly_what_the_tools_return() {
    let root = kb().display().to_string();
    let mcp = Mcp::start(&["--root", &root]).await;
    let cases: [(&[&str], Value, &'static str); 4] = [
        (
            &["fetch", "/large.md"],
            json!({"url": "/large.md"}),
            "mark_fetch",
        ),
        (
            &["fetch", "/large.md", "--anchors", "pilots,contacts"],
            json!({"url": "/large.md", "anchors": ["pilots", "contacts"]}),
            "mark_fetch",
        ),
        (
            &[
                "lookup", "dredger", "--match", "body", "--limit", "2", "--read", "2",
            ],
            json!({"query": "dredger", "match": "body", "limit": 2, "read": 2}),
            "mark_lookup",
        ),
        (&["list", "/notes/"], json!({"url": "/notes/"}), "mark_list"),
    ];
    for (args, params, tool) in cases {
        let mut full = vec!["--root", root.as_str()];
        full.extend_from_slice(args);
        let (stdout, ok) = run(&full);
        assert!(ok, "{args:?}");
        let reply = mcp.call(tool, params).await;
        assert_eq!(stdout, reply.text, "{args:?}");
    }
    mcp.stop().await;

    // --json: the same fields as an object; an error exits non-zero.
    let (stdout, ok) = run(&["--root", &root, "--json", "fetch", "/small.md#gamma"]);
    assert!(ok);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (v["status"].as_str(), v["section"].as_str()),
        (Some("ok"), Some("#gamma"))
    );
    assert!(v["text"].as_str().unwrap().starts_with("## Gamma"));
    // A lookup's rows come as objects too (MCP results stay text: the
    // support client asserts there is no structuredContent).
    let (stdout, ok) = run(&[
        "--root", &root, "--json", "lookup", "dredger", "--match", "body", "--read", "0",
    ]);
    assert!(ok);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["matches"], "2 of 2");
    assert_eq!(
        v["rows"][0],
        json!({
            "url": "/notes/crew.md#night-shift",
            "title": "Crew roster › Night shift",
            "importance": 0.5,
            "tags": ["crew", "roster"],
            "snippet": "Ana and Kofi run the night shift on the dredger.",
            "bytes": "## Night shift\n\nAna and Kofi run the night shift on the dredger.\n".len(),
        })
    );
    let (stdout, ok) = run(&["--root", &root, "fetch", "/small.md#nope"]);
    assert!(!ok && stdout.contains("section #nope not found in /small.md; nearest: "));
    let (_, ok) = run(&["fetch", "/small.md"]);
    assert!(!ok, "no source given");
}

#[test]
fn open_reads_plain_files_and_sources() {
    let file = kb().join("small.md");
    let (out, ok) = run(&["open", &format!("{}#beta", file.display())]);
    assert!(ok);
    assert!(out.starts_with("## Beta\n") && out.contains("Beta detail") && !out.contains("Gamma"));
    let (out, ok) = run(&["open", &file.display().to_string(), "--outline"]);
    assert!(
        ok && out.contains("- Small Notes (#small-notes") && out.contains("(#beta-detail"),
        "{out}"
    );
    let (out, ok) = run(&[
        "--root",
        &kb().display().to_string(),
        "open",
        "/large.md#contacts",
    ]);
    assert!(ok && out.starts_with("## Contacts\n"), "{out}");
}

#[test]
fn stdout_carries_only_json_rpc() {
    let mut child = Command::new(bin())
        .env("XDG_CACHE_HOME", support::cache_home())
        .args(["--root", &kb().display().to_string()])
        .env("RUST_LOG", "debug")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "mark_fetch", "arguments": {"url": "/small.md"}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "resources/templates/list"}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "prompts/list"}),
    ];
    let mut stdin = child.stdin.take().unwrap();
    for r in &requests {
        writeln!(stdin, "{r}").unwrap();
    }
    // Answers come before the process sees end of input and exits.
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while seen.lines().filter(|l| l.contains("\"id\"")).count() < 5 {
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0, "stdout closed early: {seen}");
        seen.push_str(std::str::from_utf8(&buf[..n]).unwrap());
    }
    drop(stdin);
    stdout.read_to_string(&mut seen).unwrap();
    assert!(child.wait().unwrap().success());
    let lines: Vec<Value> = seen
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5, "{seen}");
    for v in &lines {
        assert_eq!(v["jsonrpc"], "2.0");
        assert!(v.get("error").is_none(), "{v}");
    }
    let by_id = |id: u64| lines.iter().find(|v| v["id"] == id).unwrap();
    assert_eq!(by_id(1)["result"]["protocolVersion"], "2025-11-25");
    let caps = &by_id(1)["result"]["capabilities"];
    assert!(
        caps["tools"].is_object() && caps["resources"].is_object() && caps["prompts"].is_object()
    );
    assert_eq!(by_id(2)["result"]["tools"].as_array().unwrap().len(), 5);
    assert!(
        by_id(3)["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("status: ok\n")
    );
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(
        stderr.contains("mark-mcp starting"),
        "logs go to stderr: {stderr}"
    );
}

/// #12.3 and #12.4 over a real server: a CLI write without `--write` is
/// refused before anything is sent (as with `--root`), and a write URL with
/// an `#anchor` is a one-line error that writes nothing.
#[test]
fn cli_writes_need_write_and_a_whole_document_on_host() {
    let publishing = support::PublishingServer::start(&kb());
    let server = &publishing.server;
    let token_file = publishing.token_file.display().to_string();
    let anchored_url = format!("{}/small.md#beta", server.url());
    let call = |verb: &[&str]| {
        let mut args = server.reader_args(&["--token-file", &token_file]);
        args.extend(verb.iter().map(|a| a.to_string()));
        run(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let writes_seen = || {
        server
            .requests_seen()
            .into_iter()
            .filter(|r| ["PUBLISH", "APPEND", "ARCHIVE"].contains(&r.verb.as_str()))
            .count()
    };
    let unasked: [&[&str]; 3] = [
        &[
            "publish",
            "/small.md",
            "--body",
            "# Gone\n",
            "--expected-version",
            "1",
        ],
        &["append", "/small.md", "--body", "more"],
        &["archive", "/small.md"],
    ];
    for verb in unasked {
        let (out, ok) = call(verb);
        assert!(!ok && out.contains("need --write"), "{verb:?}: {out}");
    }
    assert_eq!(writes_seen(), 0, "a refused write sent nothing");

    let anchored: [&[&str]; 3] = [
        &[
            "--write",
            "publish",
            "/small.md#alpha",
            "--body",
            "## Alpha\n",
            "--expected-version",
            "1",
        ],
        &["--write", "append", "/small.md#alpha", "--body", "more"],
        &["--write", "archive", &anchored_url],
    ];
    for verb in anchored {
        let (out, ok) = call(verb);
        let error = support::body(&out).trim_end();
        assert!(
            !ok && !error.contains('\n')
                && error.contains("writes a whole document")
                && error.contains("url \"/small.md\""),
            "{verb:?}: {out}"
        );
    }
    assert_eq!(writes_seen(), 0, "an anchored write sent nothing");
    let (out, ok) = call(&[
        "--write",
        "append",
        "/small.md",
        "--body",
        "Appended.",
        "--apply",
    ]);
    assert!(ok && out.contains("version: 2"), "{out}");
}

/// Every file, folder and link under `root`: a file by its content hash, a
/// link by its target.
fn tree(root: &std::path::Path) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let path = e.path();
            let name = path.strip_prefix(root).unwrap().display().to_string();
            let kind = e.file_type().unwrap();
            let what = if kind.is_symlink() {
                format!("link {}", std::fs::read_link(&path).unwrap().display())
            } else if kind.is_dir() {
                stack.push(path);
                "folder".to_string()
            } else {
                blake3::hash(&std::fs::read(&path).unwrap())
                    .to_hex()
                    .to_string()
            };
            out.insert(name, what);
        }
    }
    out
}

/// #12.1: every read verb, over `--root` and over a real `mark-server`,
/// leaves the tree byte for byte as it was (no link repaired, no temp file
/// removed, no marker written) for a plain folder holding `versions/`, a
/// marked store and an older store without the marker; the plain folder's
/// documents are all served, and the older store gets one line on stderr
/// saying how to mark it.
#[test]
fn read_verbs_change_no_byte_on_disk() {
    let plain = tempfile::tempdir().unwrap();
    for (file, text) in [
        ("notes.md", "# Notes\n\nFerry notes.\n"),
        ("proj/plan.md", "# Plan\n"),
        ("api/versions/v1.md", "# API v1\n"),
        ("api/versions/schema.v1", "schema"),
    ] {
        let path = plain.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    std::fs::create_dir(plain.path().join("versions")).unwrap();
    // A crash can leave a link missing and a temp file behind: reads must
    // leave both for a writer to deal with.
    let crashed = |store: &mark_testkit::TempStore| {
        let root = store.path();
        std::fs::remove_file(root.join("small.md")).unwrap();
        std::fs::write(root.join("versions/.small.md.v2.1-0.0.tmp"), "half").unwrap();
    };
    let marked = mark_testkit::import_store(&kb()).unwrap();
    crashed(&marked);
    let old = mark_testkit::import_store(&kb()).unwrap();
    crashed(&old);
    std::fs::remove_file(old.path().join(mark_store::STORE_MARKER)).unwrap();

    let reads: [&[&str]; 7] = [
        &["fetch", "/notes.md"],
        &["fetch", "/large.md"],
        &["explore", "/large.md"],
        &["lookup", "ferry"],
        &["list", "/"],
        &["versions", "/large.md"],
        &["open", "/large.md"],
    ];
    let run_reads = |source: &[String]| {
        let mut stderr = String::new();
        for verb in reads {
            let out = run_once(
                source
                    .iter()
                    .map(String::as_str)
                    .chain(verb.iter().copied()),
            );
            stderr.push_str(&String::from_utf8_lossy(&out.stderr));
        }
        stderr
    };
    for (root, server_args) in [
        (plain.path(), &["--flat"][..]),
        (marked.path(), &[][..]),
        (old.path(), &["--flat"][..]),
    ] {
        let before = tree(root);
        let local = ["--root".to_string(), root.display().to_string()];
        let stderr = run_reads(&local);
        let server = mark_testkit::MarkServerProcess::start(root, server_args).unwrap();
        run_reads(&server.reader_args(&[]));
        drop(server);
        assert_eq!(tree(root), before, "{} was changed", root.display());
        let hints = stderr.matches("import --mark").count();
        let expected = if root == old.path() { reads.len() } else { 0 };
        assert_eq!(hints, expected, "one hint per run: {stderr}");
    }

    // The plain folder's documents are all there, `versions/` included.
    let root = plain.path().display().to_string();
    let (out, ok) = run(&["--root", &root, "list", "/"]);
    assert!(
        ok && out.contains("/notes.md") && out.contains("/versions/") && out.contains("/proj/"),
        "{out}"
    );
    let (out, ok) = run(&["--root", &root, "fetch", "/notes.md"]);
    assert!(ok && out.contains("Ferry notes."), "{out}");
    let (out, ok) = run(&["--root", &root, "fetch", "/api/versions/v1.md"]);
    assert!(ok && out.contains("# API v1"), "{out}");
}

/// #14.13: the one exit-code rule (README "Exit codes"), for every verb
/// against a real server that lets us write: 0 done (`unchanged` and a
/// preview included), 1 a tool error (a write asked to apply that did not
/// among them), 2 a read the source answered with a non-ok status, 64 a
/// command line the parser refuses.
#[test]
fn every_verb_follows_the_one_exit_code_rule() {
    let server = support::PublishingServer::start(&kb());
    let args = server.writer_args(&[]);
    let code = |verb: &[&str]| {
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        all.extend_from_slice(verb);
        let out = run_once(&all);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.code(), stdout)
    };
    // The archived document the writes below are refused on.
    let (c, out) = code(&["archive", "/notes/crew.md", "--apply"]);
    assert_eq!(c, Some(0), "{out}");
    let cases: &[(&[&str], i32)] = &[
        (&["fetch", "/small.md"], 0),
        (&["fetch", "/nope.md"], 2),
        (&["fetch", "/notes/crew.md"], 2),
        (&["fetch", "/large.md", "--cursor", "junk"], 1),
        (&["explore", "/small.md"], 0),
        (&["explore", "/nope.md"], 2),
        (&["explore", "/small.md", "--cursor", "junk"], 1),
        (&["lookup", "harbour"], 0),
        (&["lookup", ""], 1),
        (&["list", "/"], 0),
        (&["list", "/nope/"], 2),
        (&["list", "mark://elsewhere/"], 1),
        (&["versions", "/small.md"], 0),
        (&["versions", "/nope.md"], 2),
        (&["versions", ""], 1),
        (&["open", "/small.md"], 0),
        (&["open", "/nope.md"], 2),
        (
            &[
                "publish",
                "/new.md",
                "--body",
                "# New\n",
                "--expected-version",
                "0",
            ],
            0,
        ),
        (
            &[
                "publish",
                "/small.md",
                "--body",
                "# S\n",
                "--expected-version",
                "9",
                "--apply",
            ],
            1,
        ),
        (&["append", "/small.md", "--body", "more"], 0),
        // A list item is text to append, not an option (#28.6).
        (&["append", "/small.md", "--body", "- item"], 0),
        // A command line the parser refuses has its own code (#28.6).
        (&["fetch"], 64),
        (&["fetch", "/small.md", "--no-such-option"], 64),
        (&["append", "/brandnew.md", "--body", "more"], 1),
        (&["append", "/brandnew.md", "--body", "more", "--apply"], 1),
        (
            &["append", "/notes/crew.md", "--body", "more", "--apply"],
            1,
        ),
        (
            &[
                "append",
                "/notes/crew.md",
                "--body",
                "x",
                "--expected-version",
                "1",
                "--apply",
            ],
            1,
        ),
        (&["archive", "/nonexist.md"], 1),
        (&["archive", "/small.md"], 0),
        (
            &[
                "publish",
                "/new.md",
                "--body",
                "# New\n",
                "--expected-version",
                "0",
                "--apply",
            ],
            0,
        ),
    ];
    for (verb, expected) in cases {
        let (c, out) = code(verb);
        assert_eq!(c, Some(*expected), "{verb:?}: {out}");
    }
}

/// The index folders under `dir`, each with how many files it holds.
fn index_folders(dir: &std::path::Path) -> Vec<usize> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                // The kept link graph (`graph-…`) lies beside the index folders.
                .filter(|e| e.file_name().to_string_lossy().starts_with("lookup-"))
                .map(|e| std::fs::read_dir(e.path()).map_or(0, |f| f.count()))
                .collect()
        })
        .unwrap_or_default()
}

/// #13, #29: over `--index-ram-bytes` the search index is kept in a folder
/// of its own under `--index-dir` (memory-mapped files), answers as the one
/// in memory does, and stays for the next process, which answers the same
/// from it; `--index-dir ''` keeps nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_index_over_its_ram_bytes_is_kept_and_answers_the_same() {
    let root = kb().display().to_string();
    let cache = tempfile::tempdir().unwrap();
    let kept = cache.path().join("kept");
    let on_disk = |dir: &std::path::Path| {
        vec![
            "--root".to_string(),
            root.clone(),
            "--index-ram-bytes".into(),
            "0".into(),
            "--index-dir".into(),
            dir.display().to_string(),
        ]
    };
    let query = json!({"query": "dredger harbour", "match": "body", "read": 0});
    let in_ram = Mcp::start(&["--root", &root, "--index-dir", ""]).await;
    let expected = in_ram.call("mark_lookup", query.clone()).await.text;
    in_ram.stop().await;
    let mcp = Mcp::start(&on_disk(&kept)).await;
    assert_eq!(mcp.call("mark_lookup", query.clone()).await.text, expected);
    let folders = index_folders(&kept);
    assert!(
        folders.len() == 1 && folders[0] > 2,
        "one index folder with its segment files: {folders:?}"
    );
    mcp.stop().await;
    assert_eq!(index_folders(&kept), folders, "kept after the process");
    let again = Mcp::start(&on_disk(&kept)).await;
    assert_eq!(again.call("mark_lookup", query).await.text, expected);
    again.stop().await;

    let mut args = on_disk(&kept);
    args.extend(
        [
            "lookup",
            "dredger harbour",
            "--match",
            "body",
            "--read",
            "0",
        ]
        .map(String::from),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (stdout, ok) = run(&args);
    assert!(ok && stdout.contains("dredger"), "{stdout}");
    assert_eq!(index_folders(&kept), folders, "the CLI reads the same one");
}

/// #13: a query with no word of 2 characters or more is bad input: refused
/// before the source is asked (no LOOKUP reaches the server), exit 1 and
/// `isError: true` by the README's rule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_without_a_searchable_word_is_refused_before_asking_the_source() {
    let dir = support::pier_and_hosts();
    let server = mark_testkit::MarkServerProcess::start(dir.path(), &["--flat"]).unwrap();
    let args = server.reader_args(&[]);
    let mut cli: Vec<&str> = args.iter().map(String::as_str).collect();
    cli.extend(["lookup", "a b c"]);
    let out = run_once(&cli);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("`a b c` has no word of 2 characters or more"),
        "{stdout}"
    );
    let mcp = Mcp::start(&args).await;
    let r = mcp.call("mark_lookup", json!({"query": "x 1"})).await;
    assert!(r.is_error, "{}", r.text);
    mcp.stop().await;
    assert_eq!(server.count_requests("LOOKUP", "/"), 0);
}

/// #13: a 10,000-word query that finds nothing names some of its words,
/// not all of them.
#[test]
fn a_huge_query_that_finds_nothing_is_not_echoed_whole() {
    let root = kb().display().to_string();
    let words: Vec<String> = (0..10_000).map(|i| format!("zq{i:05}")).collect();
    let query = words.join(" ");
    let out = run_once(["--root", root.as_str(), "lookup", query.as_str()]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("nothing holds any of: zq00000 zq00001"),
        "{stdout}"
    );
    assert!(stdout.contains("(+9980 more)"), "{stdout}");
    assert!(stdout.len() < 2_000, "{} bytes", stdout.len());
}

/// #13: a heading of one word longer than tantivy can index is left out
/// of the index quietly: no MAX_TOKEN_LEN warning per field and entry on
/// stderr, and the rest of the document is found.
#[test]
fn a_giant_heading_prints_no_index_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let giant = "w".repeat(70_000);
    std::fs::write(
        dir.path().join("giant.md"),
        format!("# {giant}\n\nThe harbour text.\n\n## {giant}\n\nMore harbour.\n"),
    )
    .unwrap();
    let root = dir.path().display().to_string();
    let out = run_once(["--root", root.as_str(), "lookup", "harbour", "--read", "0"]);
    let (stdout, stderr) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("/giant.md"), "{stdout}");
    assert!(!stderr.contains("MAX_TOKEN_LEN"), "{stderr}");
}

/// #13: `--page-bytes` under its floor is refused at start, saying the floor.
#[test]
fn page_bytes_under_the_floor_are_refused_at_start() {
    let root = kb().display().to_string();
    let out = run_once([
        "--root",
        root.as_str(),
        "--page-bytes",
        "0",
        "fetch",
        "/small.md",
    ]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success());
    assert!(stderr.contains("under the floor of 2000 bytes"), "{stderr}");
}

/// #13: a heading path whose last step names nothing under a section with
/// no subheadings says so, not that the document has no anchored headings.
#[test]
fn a_heading_path_past_the_last_subheading_says_so() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("note.md"),
        "# Note\n\n## Heading\n\nText.\n\n## Other\n\nMore.\n",
    )
    .unwrap();
    let root = dir.path().display().to_string();
    let (stdout, ok) = run(&["--root", &root, "fetch", "/note.md#Heading#Nope"]);
    assert!(!ok);
    assert!(
        stdout.contains("section #Heading#Nope not found in /note.md; nearest: (none: the section the heading path reaches has no subheadings)"),
        "{stdout}"
    );
    assert!(!stdout.contains("no anchored headings"), "{stdout}");
}

/// #13: an NFC and an NFD `résumé.md` in one folder make one path: the
/// listing shows it once and says why the other cannot be read apart.
#[test]
fn names_differing_only_in_unicode_form_are_listed_once_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let nfc = "r\u{e9}sum\u{e9}.md";
    let nfd = "re\u{301}sume\u{301}.md";
    std::fs::write(dir.path().join(nfc), "# NFC\n").unwrap();
    std::fs::write(dir.path().join(nfd), "# NFD\n").unwrap();
    let root = dir.path().display().to_string();
    let (stdout, ok) = run(&["--root", &root, "list", "/"]);
    assert!(ok, "{stdout}");
    assert_eq!(
        stdout.matches("- /r%C3%A9sum%C3%A9.md").count(),
        1,
        "{stdout}"
    );
    assert!(stdout.contains("entries: 1"), "{stdout}");
    assert!(
        stdout.contains("differ only in Unicode form (NFC and NFD)"),
        "{stdout}"
    );
    let (fetched, ok) = run(&["--root", &root, "fetch", "/résumé.md"]);
    assert!(ok, "{fetched}");
}

/// #28.6: `list` of a document says it is one (and where its folder is),
/// not that a folder of that name is missing; a missing name stays
/// `not found`.
#[test]
fn listing_a_document_says_it_is_a_document() {
    let server = support::PublishingServer::start(&kb());
    let args = server.server.reader_args(&["list", "/small.md"]);
    let out = run_once(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    assert!(
        stdout.contains(
            "/small.md is a document, not a folder: read it with mark_fetch, or list its folder /"
        ),
        "{stdout}"
    );
    let out = run_once(server.server.reader_args(&["list", "/nope.md"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("is a document"), "{stdout}");
}

/// #28.6: a write a server refuses gives a server's advice (a token), not
/// a local folder's.
#[test]
fn a_write_refused_by_a_server_gives_no_local_folder_advice() {
    let (_store, server) = support::serve_copy_of::<&str>(&kb(), &[]);
    let args = server.reader_args(&["--write", "append", "/small.md", "--body", "- x", "--apply"]);
    let out = run_once(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("needs a token with publish rights"),
        "{stdout}"
    );
    assert!(!stdout.contains("local folder"), "{stdout}");
}

/// #28.5: `--token-file` pointed at demarkus' client token store
/// (`~/.mark/tokens.toml`) reads the entry of the host in use; a store
/// without one is refused in a sentence naming the hosts it has, never a
/// token.
#[test]
fn a_demarkus_token_store_gives_the_token_of_the_host_in_use() {
    let server = support::PublishingServer::start(&kb());
    let raw = std::fs::read_to_string(&server.token_file).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("tokens.toml");
    let port = server.server.addr.port();
    std::fs::write(
        &store,
        format!(
            "[\"docs.example:6309\"]\ntoken = \"other-secret\"\n\n[\"127.0.0.1:{port}\"]\ntoken = \"{}\"\n",
            raw.trim()
        ),
    )
    .unwrap();
    let store_arg = store.display().to_string();
    let write = |file: &str| {
        run_once(server.server.reader_args(&[
            "--write",
            "--token-file",
            file,
            "append",
            "/small.md",
            "--body",
            "- x",
            "--apply",
        ]))
    };
    let out = write(&store_arg);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("status: created"), "{stdout}");

    std::fs::write(
        &store,
        "[\"docs.example:6309\"]\ntoken = \"other-secret\"\n",
    )
    .unwrap();
    let out = write(&store_arg);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "with no entry for 127.0.0.1:{port} (it has docs.example:6309)"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("other-secret"), "{stderr}");
}
