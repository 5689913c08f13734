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
    let mut command = Command::new(bin());
    command.env("XDG_CACHE_HOME", support::cache_home());
    command.args(args);
    run_command(command, stdin, env)
}

/// Runs `command` without MARK_TOKEN or CLAUDE_PID, with `stdin` and extra
/// environment; (stdout, ok).
fn run_command(mut command: Command, stdin: &str, env: &[(&str, &str)]) -> (String, bool) {
    let mut child = command
        .env_remove("MARK_TOKEN")
        .env_remove("CLAUDE_PID")
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

/// The plugin's hook command as `hooks.json` has it (exec form: the
/// executable and its arguments, no option placeholder that can be unset).
fn plugin_hook_command() -> (String, Vec<String>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../integrations/claude-code/mark/hooks/hooks.json");
    let hooks: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let hook = &hooks["hooks"]["SessionStart"][0]["hooks"][0];
    let args: Vec<String> = hook["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    assert!(
        !args.iter().any(|a| a.contains("${")),
        "a placeholder of an unset option stops the hook from running: {args:?}"
    );
    (hook["command"].as_str().unwrap().to_string(), args)
}

/// How Claude Code might start the hook: directly (exec form), or through
/// each shell, which then stays the hook's parent (`; exit $?` keeps a shell
/// from replacing itself with the command).
fn hook_launchers() -> Vec<(&'static str, Vec<String>)> {
    let (command, args) = plugin_hook_command();
    let line = format!("{command} {}; exit $?", args.join(" "));
    let mut out = vec![("exec form", [vec![command], args].concat())];
    for shell in ["dash", "bash", "zsh"] {
        let found = Command::new(shell).args(["-c", "exit 0"]).status().is_ok();
        // CI installs all three (.ci/run); elsewhere a missing one is skipped.
        assert!(
            found || std::env::var_os("CI").is_none(),
            "{shell} is not installed"
        );
        if found {
            out.push((shell, vec![shell.to_string(), "-c".into(), line.clone()]));
        } else {
            eprintln!("skipped: {shell} is not installed");
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_compaction_or_clear_the_running_server_delivers_text_again_however_the_hook_is_started()
 {
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().display().to_string();
    let root = kb().display().to_string();
    // `mark-mcp` on the PATH, as the plugin runs it.
    let bin_dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(bin(), bin_dir.path().join("mark-mcp")).unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // As Claude Code starts a plugin's server: CLAUDE_PLUGIN_DATA set, and
    // this process (standing in for Claude Code) is its parent.
    let mut cmd = tokio::process::Command::new(bin());
    cmd.env("XDG_CACHE_HOME", support::cache_home());
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

    // The hook as a plugin install leaves it: the source from the plugin's
    // option variable, no pin, and no CLAUDE_PID (not relied on).
    let hook = |launcher: &[String], source: &str| {
        let stdin =
            json!({"session_id": "s1", "hook_event_name": "SessionStart", "source": source});
        let mut command = Command::new(&launcher[0]);
        command
            .args(&launcher[1..])
            .env_remove("CLAUDE_PLUGIN_OPTION_PIN");
        let (stdout, ok) = run_command(
            command,
            &stdin.to_string(),
            &[
                ("PATH", path.as_str()),
                ("CLAUDE_PLUGIN_DATA", data_dir.as_str()),
                ("CLAUDE_PLUGIN_OPTION_SOURCE", root.as_str()),
            ],
        );
        assert!(ok, "{launcher:?}: {stdout}");
        assert!(
            hook_context(&stdout).contains("Its root:"),
            "{launcher:?}: {stdout}"
        );
    };
    for (name, launcher) in hook_launchers() {
        hook(&launcher, "startup");
        assert_eq!(
            mcp.fetch("/small.md").await.status(),
            "unchanged",
            "{name}: startup forgets nothing"
        );
        for source in ["compact", "clear"] {
            hook(&launcher, source);
            let again = mcp.fetch("/small.md").await;
            assert_eq!(again.status(), "ok", "{name}, {source}: {}", again.text);
            again.assert_full();
            assert_eq!(
                mcp.fetch("/small.md").await.status(),
                "unchanged",
                "{name}, {source}: once"
            );
        }
    }
    // Each reset took its marker; only the live server's registration is left.
    let left: Vec<String> = std::fs::read_dir(data.path().join("context-reset"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(!left[0].ends_with(".reset"), "{left:?}");
    mcp.stop().await;
    let registrations = data.path().join("context-reset");
    let ended = Instant::now();
    while std::fs::read_dir(&registrations).unwrap().count() > 0 {
        assert!(
            ended.elapsed() < Duration::from_secs(5),
            "an ended server removes its registration"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[test]
fn the_hook_ends_within_its_deadline_with_one_line_on_a_stalled_server() {
    // A UDP socket that never answers: the QUIC handshake stalls.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let url = format!("mark://{}", silent.local_addr().unwrap());
    let index_dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let mut child = Command::new(bin())
        .env("XDG_CACHE_HOME", support::cache_home())
        .args([
            "--source",
            &url,
            "--pin",
            &format!("sha256:{}", "0".repeat(64)),
            "--index-dir",
            &index_dir.path().display().to_string(),
            "hook",
            "session-start",
        ])
        .env_remove("MARK_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = loop {
        if child.try_wait().unwrap().is_some() {
            break child.wait_with_output().unwrap();
        }
        if started.elapsed() > Duration::from_secs(9) {
            child.kill().unwrap();
            panic!("the hook is still running after 9 s (the hooks.json timeout is 10 s)");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(7),
        "one deadline of 5 s for the whole hook: {took:?}"
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let context = hook_context(&stdout);
    assert!(
        context.starts_with("mark-mcp could not read the knowledge base")
            && !context.contains('\n'),
        "one line: {context}"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.starts_with("mark-mcp: "))
            .count(),
        1,
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_dir(index_dir.path()).unwrap().count(),
        0,
        "the hook never writes a search index"
    );
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
