//! `bench orientation` and `demo`: thin adapters over
//! [`mark_bench::run_orientation`], which starts a real `mark-server` on
//! 127.0.0.1 and drives this very binary over stdio with an MCP client.

use crate::cli::OrientationArgs;
use mark_bench::{OrientationOptions, render_table, run_orientation};
use std::path::PathBuf;
use std::process::ExitCode;

/// `mark-mcp bench orientation`: the table on stdout, the raw figures as
/// JSON where `--json` says.
pub async fn orientation(args: &OrientationArgs) -> ExitCode {
    let Some(kb) = args.kb.clone().or_else(bundled_kb) else {
        eprintln!(
            "mark-mcp bench: the bundled knowledge base fixtures/soul is not here; give one with --kb DIR."
        );
        return ExitCode::FAILURE;
    };
    let questions = args
        .questions
        .clone()
        .unwrap_or_else(|| kb.join("questions.toml"));
    let Some(opts) = options(kb, questions, args.runs) else {
        return ExitCode::FAILURE;
    };
    let report = match run_orientation(opts).await {
        Ok(report) => report,
        Err(e) => {
            eprintln!("mark-mcp bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    print!("{}", render_table(&report));
    if let Some(path) = &args.json {
        let written = serde_json::to_string_pretty(&report)
            .map_err(|e| e.to_string())
            .and_then(|json| std::fs::write(path, json).map_err(|e| e.to_string()));
        if let Err(e) = written {
            eprintln!("mark-mcp bench: could not write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// `mark-mcp demo`: the orientation scenario once on the bundled knowledge
/// base, then where to go next.
pub async fn demo() -> ExitCode {
    let args = OrientationArgs {
        kb: None,
        questions: None,
        runs: 1,
        json: None,
    };
    let code = orientation(&args).await;
    if code == ExitCode::SUCCESS {
        println!(
            "\nNext: `mark-mcp --root fixtures/soul explore /index.md`, then fetch a `#section` it names; \
             `claude mcp add mark -- mark-mcp --root /path/to/notes` to give an agent your own notes."
        );
    }
    code
}

/// `fixtures/soul` in the working directory, else in the workspace this
/// binary was built from.
fn bundled_kb() -> Option<PathBuf> {
    [
        PathBuf::from("fixtures/soul"),
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/soul")),
    ]
    .into_iter()
    .find(|p| p.join("questions.toml").is_file())
}

/// This executable as the MCP server under test, and the `mark-server`
/// beside it (built when missing, as in the tests).
fn options(kb: PathBuf, questions: PathBuf, runs: usize) -> Option<OrientationOptions> {
    let mark_mcp_bin = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("mark-mcp bench: cannot find this executable: {e}");
            return None;
        }
    };
    let mark_server_bin = match mark_testkit::workspace_binary("mark-server") {
        Ok(p) => p,
        Err(e) => {
            eprintln!("mark-mcp bench: {e}");
            return None;
        }
    };
    Some(OrientationOptions {
        kb,
        questions,
        runs: runs.max(1),
        mark_mcp_bin,
        mark_server_bin,
    })
}
