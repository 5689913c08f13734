//! `mark-bench`: the orientation benchmark. Scripted agents (fixed sequences
//! of tool calls, no model) answer orientation questions over real MCP
//! servers started as processes — the real `mark-mcp` binary against a real
//! `mark-server`, and peer MCP servers over the same files — and every tool
//! call is measured: tool calls until the evidence, o200k tokens of the
//! results (OpenAI's tokenizer, a proxy for Claude's), result bytes, Mark
//! Protocol requests the server logged, and wall time.
//!
//! A question counts as answered only when every one of its facts appears
//! verbatim (white space collapsed) in text the tools returned. The
//! strategies choose what to read by term overlap between the question and
//! headings, links, titles or file names; they never look at a question's
//! expected section or facts.
//!
//! This crate is not a mock and not a model: it drives real processes
//! through rmcp's client. It is not run in CI beyond its own integration
//! test; the `mark-bench` binary (`mark-bench orientation`, `mark-bench peers`) runs it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), mark_bench::BenchError> {
//! let opts = mark_bench::OrientationOptions {
//!     runs: 1,
//!     mark_mcp_bin: "target/release/mark-mcp".into(),
//!     mark_server_bin: "target/release/mark-server".into(),
//!     ..Default::default()
//! };
//! let report = mark_bench::run_orientation(opts).await?;
//! println!("{}", mark_bench::render_table(&report));
//! # Ok(()) }
//! ```

mod orientation;
mod pass;
pub mod peers;
pub mod questions;
pub mod ranking;
pub mod reading;
pub mod report;
pub mod rows;
pub mod server;
pub mod session;
pub mod strategy;
pub mod terms;
pub mod tokens;

pub use orientation::{COUNTED_NOTE, OrientationOptions, check_targets, run_orientation};
pub use questions::{Question, load_questions};
pub use report::{Report, StrategyFigures, TargetCheck, render_sets, render_table};
pub use session::{McpSession, ServerCommand, ToolCall, proc_status_kib, resident_kib};
pub use strategy::Strategy;
pub use tokens::o200k_tokens;

use std::path::PathBuf;

/// Why a benchmark could not run; each message says what to check.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A file or process operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The questions file is unreadable or inconsistent.
    #[error("questions file {path}: {why}")]
    Questions {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// An MCP server failed to start or to answer.
    #[error("MCP server `{command}`: {why}")]
    Mcp {
        /// The command line.
        command: String,
        /// What went wrong.
        why: String,
    },
    /// mark-server failed to import or to start.
    #[error("mark-server: {0}")]
    Server(String),
}
