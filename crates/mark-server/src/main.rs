//! `mark-server`: a Mark Protocol server over QUIC, the thin binary face of
//! `mark-store`.
//!
//! It loads or makes a certificate and serves with the crate's library (the
//! listener: quinn, rustls with the ring provider, TLS 1.3 only, ALPN
//! `mark`; one request per bidirectional stream within size and time
//! limits, answered by [`mark_store::Engine::handle`] on the blocking pool).
//! It also wraps two store functions as subcommands:
//! `import` (a folder of markdown to a versioned store) and `token generate`.
//! It holds no store logic of its own: paths, versions, LOOKUP and auth are
//! all mark-store's.
//!
//! Output contract (stable; tests and other crates read it):
//! - stdout: exactly one line once ready, `listening <addr> fingerprint
//!   sha256:<64 hex>`, then nothing.
//! - stderr: tracing logs (`RUST_LOG`, default `info`); each request is one
//!   info line whose message is `request VERB /path -> status` (`request - -
//!   -> status` when the bytes were not a request). Metadata, bodies and
//!   tokens are never logged.
//!
//! See the crate README for every flag and the token flow.

mod cli;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    init_logging();
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mark-server: {}", error_chain(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes joined by `: `, each said once: many errors
/// repeat their source's text in their own message (`… (os error 2)`),
/// which anyhow's `{:#}` would print again.
fn error_chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// Logs go to stderr, without colour unless stderr is a terminal.
fn init_logging() {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .init();
}
