//! The `mark-mcp` binary: MCP over stdio, or one CLI verb.

use mark_mcp::cli::{self, Cli, Verb};
use mark_mcp::demo;
use mark_mcp::server::MarkServer;
use mark_mcp::session::Session;
use mark_mcp::sources;
use mark_mcp::{reasons, usage};
use std::process::ExitCode;
use std::sync::Arc;

fn main() -> ExitCode {
    let cli = Cli::parse_args();
    // Stdout carries only JSON-RPC (or a verb's result): logs go to stderr.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "mark_mcp=info,warn".into()),
        )
        .init();
    if let Some(Verb::Open(args)) = &cli.verb
        && let Some(result) = cli::open_file(args)
    {
        return printed(result);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mark-mcp: could not start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(cli))
}

/// A verb's text on stdout, or its error on stderr with a failing exit.
fn printed(result: Result<String, String>) -> ExitCode {
    match result {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mark-mcp: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(mut cli: Cli) -> ExitCode {
    // These need no source (the demo starts its own server and session).
    match &cli.verb {
        Some(Verb::Demo) => return demo::demo().await,
        Some(Verb::Tools { json }) => {
            let cards = MarkServer::tool_cards();
            if *json || cli.json {
                println!("{}", reasons::to_json(&cards));
            } else {
                print!("{}", reasons::to_markdown(&cards));
            }
            return ExitCode::SUCCESS;
        }
        Some(Verb::Index { clear }) => {
            return printed(sources::kept_index(&cli, *clear));
        }
        Some(Verb::Usage(args)) => {
            let tools = MarkServer::tool_cards()
                .into_iter()
                .map(|c| c.name)
                .collect();
            return match usage::run(args, cli.root.as_deref(), tools, cli.json) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("mark-mcp: {e}");
                    ExitCode::FAILURE
                }
            };
        }
        _ => {}
    }
    if matches!(cli.verb, Some(Verb::Hook { .. })) {
        mark_mcp::hook::plugin_options(&mut cli.source, &mut cli.pin);
    }
    let source = match sources::from_cli(&cli) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mark-mcp: {e}");
            return ExitCode::FAILURE;
        }
    };
    tracing::debug!(source = %source.describe(), "mark-mcp starting");
    let session = Arc::new(Session::new(source, cli.settings()));
    // The SessionStart hook's process writes nothing to the cache.
    if !matches!(cli.verb, Some(Verb::Hook { .. }))
        && let Some(kept) = sources::kept_graph(&cli)
    {
        session.graph().keep_in(kept);
    }
    let Some(verb) = cli.verb.take() else {
        // A one-shot verb crawls only if it needs the graph (explore).
        if session.settings().crawl.at_start {
            session.graph().start(std::time::Instant::now(), false);
        }
        mark_mcp::watch_feed::start(&session);
        return serve(session, cli.write).await;
    };
    if matches!(verb, Verb::Watch) {
        let mut out = std::io::stdout();
        let ctrl_c = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        return match mark_mcp::hints::print_hints(&session, &mut out, ctrl_c).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("mark-mcp: {e}");
                ExitCode::FAILURE
            }
        };
    }
    // `open` prints the document as it is, a hook the JSON Claude Code reads.
    let is_raw = matches!(verb, Verb::Open(_) | Verb::Hook { .. });
    let result = cli::run(&session, verb, cli.write).await;
    if is_raw && !cli.json && !result.is_error {
        print!("{}", result.text);
    } else {
        cli::print(
            &mark_mcp::bound::fit(result.clone(), cli.page_bytes),
            cli.json,
        );
    }
    ExitCode::from(cli::exit_code(&result))
}

async fn serve(session: Arc<Session>, write: bool) -> ExitCode {
    let server = MarkServer::new(session, write);
    let (stdin, stdout) = rmcp::transport::stdio();
    let running = match server.serve_over(stdin, stdout).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mark-mcp: the MCP handshake failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    match running.waiting().await {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mark-mcp: the MCP session ended with an error: {e}");
            ExitCode::FAILURE
        }
    }
}
