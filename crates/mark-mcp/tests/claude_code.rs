//! What the Claude Code plugin relies on, over the real binaries: one
//! `--source` option for a folder or a server (`--pin ''` and
//! `--token-file ''` meaning none), `mark-mcp hook session-start` printing
//! the root card as hook JSON at once, and the context-reset marker making
//! a running server deliver text again after a compaction.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{Mcp, bin, kb};

/// Runs `mark-mcp ARGS…` with `stdin` and extra environment; (stdout, ok).
fn run_with(args: &[&str], stdin: &str, env: &[(&str, &str)]) -> (String, bool) {
    let mut child = Command::new(bin())
        .args(args)
        .env_remove("MARK_TOKEN")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (String::from_utf8(out.stdout).unwrap(), out.status.success())
}

#[test]
fn source_takes_a_folder_or_a_server_and_empty_pin_or_token_file_mean_none() {
    let root = kb().display().to_string();
    let (out, ok) = run_with(
        &[
            "--source",
            &root,
            "--pin",
            "",
            "--token-file",
            "",
            "fetch",
            "/small.md",
        ],
        "",
        &[],
    );
    assert!(ok && out.starts_with("status: ok\n"), "{out}");

    let (_store, server) = support::serve_copy_of(&kb(), &[] as &[&str]);
    let (out, ok) = run_with(
        &[
            "--source",
            &server.url(),
            "--pin",
            &server.pin(),
            "fetch",
            "/small.md",
        ],
        "",
        &[],
    );
    assert!(ok && out.starts_with("status: ok\n"), "{out}");
    assert!(out.contains("version: 1"), "a versioned server: {out}");

    let (out, ok) = run_with(&["--source", "", "fetch", "/small.md"], "", &[]);
    assert!(
        !ok && out.is_empty(),
        "no source is an error on stderr: {out}"
    );
}

/// The hook's JSON: its event name and the context it adds.
fn hook_context(stdout: &str) -> String {
    let v: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn session_start_prints_the_root_card_within_2_s_whatever_the_size() {
    let startup = r#"{"session_id":"s1","hook_event_name":"SessionStart","source":"startup"}"#;
    let nodejs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora/nodejs-api");
    let only_readme = tempfile::tempdir().unwrap();
    std::fs::write(
        only_readme.path().join("README.md"),
        "# Readme only\n\nThe notes of a person.\n\n## Work\n\nMore.\n",
    )
    .unwrap();
    let no_root_doc = tempfile::tempdir().unwrap();
    std::fs::write(no_root_doc.path().join("a.md"), "# A\n").unwrap();
    std::fs::create_dir(no_root_doc.path().join("sub")).unwrap();
    let cases = [
        (kb(), "/index.md"),
        (nodejs, "/index.md"),
        (only_readme.path().to_path_buf(), "Readme only"),
        (no_root_doc.path().to_path_buf(), "sub/"),
    ];
    for (dir, expected) in cases {
        let started = Instant::now();
        let (out, ok) = run_with(
            &[
                "--source",
                &dir.display().to_string(),
                "hook",
                "session-start",
            ],
            startup,
            &[],
        );
        let took = started.elapsed();
        assert!(ok, "{}: {out}", dir.display());
        assert!(took < Duration::from_secs(2), "{}: {took:?}", dir.display());
        let context = hook_context(&out);
        assert!(context.len() <= 2048, "{} bytes", context.len());
        assert!(context.contains(expected), "{}: {context}", dir.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_compaction_the_running_server_delivers_text_again() {
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().display().to_string();
    let root = kb().display().to_string();
    // As Claude Code starts a plugin's server: CLAUDE_PLUGIN_DATA set, and
    // this process (standing in for Claude Code) is its parent.
    let mut cmd = tokio::process::Command::new(bin());
    cmd.args(["--source", &root])
        .env_remove("MARK_TOKEN")
        .env("RUST_LOG", "warn")
        .env("CLAUDE_PLUGIN_DATA", &data_dir);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mcp = Mcp {
        client: ().serve(transport).await.unwrap(),
    };
    assert_eq!(mcp.fetch("/small.md").await.status(), "ok");
    assert_eq!(mcp.fetch("/small.md").await.status(), "unchanged");

    // A startup hook forgets nothing; a compact hook does.
    let pid = std::process::id().to_string();
    let env = [
        ("CLAUDE_PLUGIN_DATA", data_dir.as_str()),
        ("CLAUDE_PID", pid.as_str()),
    ];
    let hook = |source: &str| {
        let stdin =
            json!({"session_id": "s1", "hook_event_name": "SessionStart", "source": source});
        let (out, ok) = run_with(
            &["--source", &root, "hook", "session-start"],
            &stdin.to_string(),
            &env,
        );
        assert!(ok, "{out}");
    };
    hook("startup");
    assert_eq!(mcp.fetch("/small.md").await.status(), "unchanged");
    hook("compact");
    let again = mcp.fetch("/small.md").await;
    assert_eq!(again.status(), "ok", "{}", again.text);
    again.assert_full();
    assert_eq!(mcp.fetch("/small.md").await.status(), "unchanged");
    hook("clear");
    assert_eq!(mcp.fetch("/small.md").await.status(), "ok");
    mcp.stop().await;
}

/// The plugin's skill names only tools, parameters (and their values) and
/// CLI verbs and options that exist: every `identifier` or `name: value`
/// code span against the real `tools/list`, every `mark-mcp …` line of its
/// shell block against the real command line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_skill_names_only_tools_parameters_and_verbs_that_exist() {
    use clap::Parser;
    let skill_path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../integrations/claude-code/mark/skills/mark/SKILL.md");
    let skill = std::fs::read_to_string(skill_path).unwrap();
    assert!(
        skill.starts_with("---\nname: mark\ndescription: "),
        "frontmatter"
    );

    let root = kb().display().to_string();
    let mcp = Mcp::start(&["--source", &root, "--write"]).await;
    let tools = mcp.client.list_all_tools().await.unwrap();
    mcp.stop().await;
    let mut words: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for tool in &tools {
        words.insert(tool.name.to_string(), vec![]);
        for (name, schema) in tool.input_schema["properties"].as_object().unwrap() {
            let values: Vec<String> = schema["enum"]
                .as_array()
                .map(|v| v.iter().map(|x| x.as_str().unwrap().to_string()).collect())
                .unwrap_or_default();
            words.entry(name.clone()).or_default().extend(values);
        }
    }
    // Result words the skill explains (statuses), not parameters.
    words.insert("unchanged".into(), vec![]);

    let (prose, shell) = skill.split_once("```sh\n").unwrap();
    let shell = shell.split_once("```").unwrap().0;
    let mut checked = 0;
    for span in prose.split('`').skip(1).step_by(2) {
        let (head, value) = match span.split_once(": ") {
            Some((h, v)) => (h, Some(v)),
            None => (span, None),
        };
        if !head.chars().all(|c| c.is_ascii_lowercase() || c == '_') || head.is_empty() {
            continue;
        }
        let values = words
            .get(head)
            .unwrap_or_else(|| panic!("`{span}`: no tool or parameter {head}"));
        if let Some(v) = value
            && !values.is_empty()
        {
            assert!(
                values.iter().any(|x| x == v),
                "`{span}`: {v} is not one of {values:?}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} spans checked");
    for line in shell.lines().filter(|l| l.starts_with("mark-mcp ")) {
        let args = shell_words(line);
        mark_mcp::cli::Cli::try_parse_from(&args).unwrap_or_else(|e| panic!("{line}: {e}"));
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} checked");
}

/// Splits a shell line at spaces, keeping double-quoted words whole.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = vec![String::new()];
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => words.push(String::new()),
            c => words.last_mut().unwrap().push(c),
        }
    }
    words.retain(|w| !w.is_empty());
    words
}
