//! `mark-bench-peers`: the side-by-side of mark-mcp and peer MCP servers
//! (run by `bench/peers/run.sh`), and a probe that lists any stdio MCP server's tools through
//! the same rmcp client harness. The orientation benchmark over a real
//! mark-server is `mark-mcp bench orientation`.

use clap::{Parser, Subcommand};
use mark_bench::peers::{PeersOptions, render_peers, run_peers};
use mark_bench::{McpSession, ServerCommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Side-by-side benchmark of mark-mcp and peer MCP servers.
#[derive(Debug, Parser)]
#[command(name = "mark-bench-peers", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the questions and the single-section task on every server; print
    /// one markdown table.
    Run {
        /// The knowledge base folder.
        #[arg(long, default_value = "fixtures/soul")]
        kb: PathBuf,
        /// The questions file.
        #[arg(long, default_value = "fixtures/soul/questions.toml")]
        questions: PathBuf,
        /// The Node.js API corpus (fs.md is read from it).
        #[arg(
            long,
            default_value = "../shared/corpora/nodejs-api",
            env = "MARK_NODEJS_CORPUS"
        )]
        corpus: PathBuf,
        /// The folder holding the installed peers (`npx --no-install` runs there).
        #[arg(long, default_value = "bench/peers")]
        peers_dir: PathBuf,
        /// The mark-mcp executable.
        #[arg(long, default_value = "target/release/mark-mcp")]
        mark_mcp: PathBuf,
        /// Runs per server (wall time is the median).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Also write the markdown here.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Also write the raw figures as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Start a stdio MCP server, list its tools and optionally call one.
    Tools {
        /// A tool to call after listing.
        #[arg(long)]
        call: Option<String>,
        /// Its JSON arguments.
        #[arg(long, default_value = "{}")]
        args: String,
        /// The server command and its arguments.
        #[arg(last = true, required = true)]
        server: Vec<String>,
    },
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Run {
            kb,
            questions,
            corpus,
            peers_dir,
            mark_mcp,
            runs,
            out,
            json,
        } => {
            let opts = PeersOptions {
                kb,
                questions,
                corpus,
                peers_dir,
                mark_mcp_bin: mark_mcp,
                runs,
            };
            let report = match run_peers(opts).await {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("mark-bench-peers: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let markdown = render_peers(&report);
            print!("{markdown}");
            if let Some(path) = out
                && let Err(e) = std::fs::write(&path, markdown)
            {
                eprintln!("mark-bench-peers: could not write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
            write_json(json, &report)
        }
        Command::Tools { call, args, server } => {
            let Some((program, rest)) = server.split_first() else {
                eprintln!("mark-bench-peers: give the server command after --");
                return ExitCode::FAILURE;
            };
            let mut session =
                match McpSession::start(&ServerCommand::new(program, rest.iter().cloned())).await {
                    Ok(s) => s,
                    Err(e) => {
                        eprintln!("mark-bench-peers: {e}");
                        return ExitCode::FAILURE;
                    }
                };
            println!("tools: {}", session.tools().join(", "));
            let mut code = ExitCode::SUCCESS;
            if let Some(tool) = call {
                match serde_json::from_str(&args) {
                    Ok(value) => match session.call(&tool, value).await {
                        Ok(c) => println!(
                            "{} tokens, {} bytes, isError {}\n{}",
                            c.tokens, c.bytes, c.is_error, c.text
                        ),
                        Err(e) => {
                            eprintln!("mark-bench-peers: {e}");
                            code = ExitCode::FAILURE;
                        }
                    },
                    Err(e) => {
                        eprintln!("mark-bench-peers: --args is not JSON: {e}");
                        code = ExitCode::FAILURE;
                    }
                }
            }
            session.close().await;
            code
        }
    }
}

/// Writes `value` as pretty JSON to `path` when one is given.
fn write_json(path: Option<PathBuf>, value: &impl serde::Serialize) -> ExitCode {
    let Some(path) = path else {
        return ExitCode::SUCCESS;
    };
    let written = serde_json::to_string_pretty(value)
        .map_err(|e| e.to_string())
        .and_then(|text| std::fs::write(&path, text).map_err(|e| e.to_string()));
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mark-bench-peers: could not write {}: {e}", path.display());
            ExitCode::FAILURE
        }
    }
}
