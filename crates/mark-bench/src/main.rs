//! `mark-bench`: the orientation benchmark over the real `mark-mcp` and
//! `mark-server` binaries (`orientation`), the side-by-side of mark-mcp and
//! peer MCP servers (`peers`, run by `bench/peers/run.sh`), LOOKUP's ranking
//! beside a plain tantivy index (`ranking`), and a probe that lists any
//! stdio MCP server's tools through the same rmcp client harness (`tools`).
//! Built from the workspace only (`publish = false`): the product binaries
//! link none of it.

use clap::{Parser, Subcommand};
use mark_bench::peers::{PeersOptions, render_peers, run_peers};
use mark_bench::ranking::{
    Corpus, QuestionSet, render_question_ranking, render_ranking, run_question_ranking, run_ranking,
};
use mark_bench::rows::{render_row_cost, run_row_cost};
use mark_bench::{
    McpSession, OrientationOptions, ServerCommand, render_sets, render_table, run_orientation,
};
use std::path::PathBuf;
use std::process::ExitCode;

/// Benchmarks of mark-mcp: orientation over a real mark-server, and side by
/// side with peer MCP servers.
#[derive(Debug, Parser)]
#[command(name = "mark-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Scripted agents answer the knowledge bases' questions with each
    /// strategy over the real binaries; prints a markdown table of calls,
    /// tokens and requests per knowledge base, then one line per knowledge
    /// base beside its answer sections' own tokens.
    Orientation {
        /// A knowledge base folder; repeat for several, each with its
        /// `--questions` in the same order.
        #[arg(long, default_value = "crates/mark-mcp/soul")]
        kb: Vec<PathBuf>,
        /// The questions file of each `--kb` (default: questions.toml in each).
        #[arg(long)]
        questions: Vec<PathBuf>,
        /// The mark-mcp executable (default: the workspace's, built when missing).
        #[arg(long)]
        mark_mcp: Option<PathBuf>,
        /// The mark-server executable (default: the workspace's, built when missing).
        #[arg(long)]
        mark_server: Option<PathBuf>,
        /// Runs per strategy; wall time is the median.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// The plain agent's `read` on mark_lookup (default: the tool's own).
        #[arg(long)]
        read: Option<u64>,
        /// The plain agent's `budget` on mark_lookup (default: the tool's own).
        #[arg(long)]
        budget: Option<u64>,
        /// The folder the peer servers are installed in (`bench/peers`, after
        /// `npm ci` there): their rows join the same run.
        #[arg(long)]
        peers_dir: Option<PathBuf>,
        /// Also write the raw figures as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Run the questions and the single-section task on mark-mcp and every
    /// peer server; print one markdown table.
    Peers {
        /// The knowledge base folder.
        #[arg(long, default_value = "crates/mark-mcp/soul")]
        kb: PathBuf,
        /// The questions file.
        #[arg(long, default_value = "crates/mark-mcp/soul/questions.toml")]
        questions: PathBuf,
        #[command(flatten)]
        corpus: NodeCorpus,
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
    /// How often LOOKUP's top row is the section a query names (API names
    /// on the Node corpus, unique headings on both corpora), beside a plain
    /// tantivy index of the same sections; in process, no server.
    Ranking {
        /// The knowledge base folder.
        #[arg(long, default_value = "crates/mark-mcp/soul")]
        kb: PathBuf,
        #[command(flatten)]
        corpus: NodeCorpus,
        /// More question sets: a knowledge base folder, repeated, each with
        /// its `--set-questions` in the same order (the bundled notes' and
        /// the Node corpus's sets always run).
        #[arg(long)]
        set_kb: Vec<PathBuf>,
        /// The questions file of each `--set-kb`.
        #[arg(long)]
        set_questions: Vec<PathBuf>,
        /// Also write the raw figures as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Tokens per row of mark_lookup's body-mode rows for 20 API names of
    /// the Node corpus, for this mark-mcp and a baseline build, in one run
    /// (#13's row target).
    Rows {
        #[command(flatten)]
        corpus: NodeCorpus,
        /// The mark-mcp executable measured.
        #[arg(long, default_value = "target/release/mark-mcp")]
        mark_mcp: PathBuf,
        /// The mark-mcp executable compared with (an older build).
        #[arg(long)]
        baseline: PathBuf,
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

/// The Node.js API corpus (`../shared/corpora/nodejs-api`), read in place.
#[derive(Debug, clap::Args)]
struct NodeCorpus {
    /// The Node.js API corpus.
    #[arg(
        id = "corpus",
        long = "corpus",
        value_name = "CORPUS",
        default_value = "../shared/corpora/nodejs-api",
        env = "MARK_NODEJS_CORPUS"
    )]
    dir: PathBuf,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Orientation {
            kb,
            questions,
            mark_mcp,
            mark_server,
            runs,
            read,
            budget,
            peers_dir,
            json,
        } => {
            let binary = |given: Option<PathBuf>, name: &str| match given {
                Some(path) => Ok(path),
                None => mark_testkit::workspace_binary(name).map_err(|e| e.to_string()),
            };
            let (mark_mcp_bin, mark_server_bin) = match (
                binary(mark_mcp, "mark-mcp"),
                binary(mark_server, "mark-server"),
            ) {
                (Ok(a), Ok(b)) => (a, b),
                (Err(e), _) | (_, Err(e)) => {
                    eprintln!("mark-bench: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let questions = match (questions.len(), kb.len()) {
                (0, _) => kb.iter().map(|k| k.join("questions.toml")).collect(),
                (q, k) if q == k => questions,
                (q, k) => {
                    eprintln!(
                        "mark-bench: {k} --kb and {q} --questions: give one --questions per --kb, in the same order (or none, for questions.toml in each)"
                    );
                    return ExitCode::FAILURE;
                }
            };
            let mut reports = Vec::new();
            for (kb, questions) in kb.into_iter().zip(questions) {
                let opts = OrientationOptions {
                    kb,
                    questions,
                    runs: runs.max(1),
                    mark_mcp_bin: mark_mcp_bin.clone(),
                    mark_server_bin: mark_server_bin.clone(),
                    read,
                    budget,
                    peers_dir: peers_dir.clone(),
                };
                match run_orientation(opts).await {
                    Ok(report) => {
                        println!("## {}\n\n{}", report.kb, render_table(&report));
                        reports.push(report);
                    }
                    Err(e) => {
                        eprintln!("mark-bench: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            }
            print!(
                "## The plain agent, per knowledge base\n\n{}",
                render_sets(&reports)
            );
            write_json(json, &reports)
        }
        Command::Peers {
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
                corpus: corpus.dir,
                peers_dir,
                mark_mcp_bin: mark_mcp,
                runs,
            };
            let report = match run_peers(opts).await {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("mark-bench: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let markdown = render_peers(&report);
            print!("{markdown}");
            if let Some(path) = out
                && let Err(e) = std::fs::write(&path, markdown)
            {
                eprintln!("mark-bench: could not write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
            write_json(json, &report)
        }
        Command::Ranking {
            kb,
            corpus,
            set_kb,
            set_questions,
            json,
        } => {
            if set_kb.len() != set_questions.len() {
                eprintln!("mark-bench: give one --set-questions per --set-kb, in the same order");
                return ExitCode::FAILURE;
            }
            let mut sets = vec![
                QuestionSet {
                    name: "bundled notes".into(),
                    questions: kb.join("questions.toml"),
                    dir: kb.clone(),
                },
                QuestionSet {
                    name: "nodejs-api".into(),
                    questions: corpus.dir.with_extension("questions.toml"),
                    dir: corpus.dir.clone(),
                },
            ];
            sets.extend(
                set_kb
                    .into_iter()
                    .zip(set_questions)
                    .map(|(dir, questions)| QuestionSet {
                        name: dir.display().to_string(),
                        dir,
                        questions,
                    }),
            );
            let corpora = [
                Corpus {
                    name: "soul".into(),
                    dir: kb,
                    api: false,
                },
                Corpus {
                    name: "nodejs-api".into(),
                    dir: corpus.dir,
                    api: true,
                },
            ];
            match run_ranking(&corpora).and_then(|rows| Ok((rows, run_question_ranking(&sets)?))) {
                Ok((rows, questions)) => {
                    print!(
                        "{}\n{}",
                        render_ranking(&rows),
                        render_question_ranking(&questions)
                    );
                    write_json(
                        json,
                        &serde_json::json!({ "sets": rows, "questions": questions }),
                    )
                }
                Err(e) => {
                    eprintln!("mark-bench: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Rows {
            corpus,
            mark_mcp,
            baseline,
            json,
        } => {
            let binaries = [
                ("this".to_string(), mark_mcp),
                ("baseline".to_string(), baseline),
            ];
            match run_row_cost(&corpus.dir, &binaries).await {
                Ok(report) => {
                    print!("{}", render_row_cost(&report));
                    write_json(json, &report)
                }
                Err(e) => {
                    eprintln!("mark-bench: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Tools { call, args, server } => {
            let Some((program, rest)) = server.split_first() else {
                eprintln!("mark-bench: give the server command after --");
                return ExitCode::FAILURE;
            };
            let mut session =
                match McpSession::start(&ServerCommand::new(program, rest.iter().cloned())).await {
                    Ok(s) => s,
                    Err(e) => {
                        eprintln!("mark-bench: {e}");
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
                            eprintln!("mark-bench: {e}");
                            code = ExitCode::FAILURE;
                        }
                    },
                    Err(e) => {
                        eprintln!("mark-bench: --args is not JSON: {e}");
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
            eprintln!("mark-bench: could not write {}: {e}", path.display());
            ExitCode::FAILURE
        }
    }
}
