//! Test support for the mark workspace: real `mark-server` processes on
//! 127.0.0.1, temporary stores, and a UDP relay ([`UdpRelay`]) that gives
//! loopback a real network's delay, loss, reordering, duplication and black
//! holes. Dev-only (`publish = false`).
//!
//! This crate is not a fake server and not a client: it starts the real
//! `mark-server` binary, waits for its `listening <addr> fingerprint
//! sha256:<hex>` line on stdout, and keeps its stderr log so that a test can
//! count the `request VERB /path -> status` lines the server writes for every
//! request. Tests talk to the server with `mark-client`.
//!
//! ```no_run
//! use mark_testkit::{MarkServerProcess, import_store};
//! let store = import_store(std::path::Path::new("fixtures/kb")).unwrap();
//! let server = MarkServerProcess::start(store.path(), &["--tokens", "/tmp/tokens.toml"]).unwrap();
//! // ... send requests to server.addr, pinning server.fingerprint ...
//! assert_eq!(server.count_requests("FETCH", "/index.md"), 0);
//! ```
//!
//! Finding the binary: `MARK_SERVER_BIN` if set; else `mark-server` in the
//! target directory of the running test executable (`target/<profile>/deps/x`
//! → `target/<profile>/mark-server`); else it is built with
//! `cargo build -p mark-server --bin mark-server` (with `--release` when the
//! test runs from a release directory), using `$CARGO` or `cargo`.

mod binary;
mod cert;
mod odd_files;
mod process;
mod relay;
mod store;
mod tree;

pub use binary::{mark_server_binary, workspace_binary};
pub use cert::{TestCertificate, write_test_certificate};
pub use odd_files::make_fifo;
pub use process::{LoggedRequest, MarkServerProcess, parse_listening_line, parse_request_line};
pub use relay::{Direction, LinkShape, RelayStats, UdpRelay};
pub use store::{TempStore, generate_token, import_store, run_mark_server};
pub use tree::{
    LINKED_TREE_QUERIES, folder_note_name, shared_name_path, vault_note_name,
    write_folder_per_note, write_linked_tree, write_shared_names, write_vault,
};

use std::time::Duration;

/// How long [`MarkServerProcess::start`] waits for the `listening` line.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);

/// Why a test helper failed; each message says what to check.
#[derive(Debug, thiserror::Error)]
pub enum TestkitError {
    /// Spawning or talking to a process failed.
    #[error("could not run `{program}`: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Building the binary failed.
    #[error(
        "building a workspace binary failed ({0}); run `cargo build --workspace --bins` (or set MARK_SERVER_BIN)"
    )]
    Build(String),
    /// The server exited or printed something else before `listening`.
    #[error("mark-server did not start: {0}")]
    NotStarted(String),
    /// The server printed no `listening` line in time.
    #[error("mark-server printed no `listening` line within {0:?}; its stderr: {1}")]
    StartTimeout(Duration, String),
    /// A `mark-server` subcommand failed.
    #[error("`mark-server {args}` failed: {stderr}")]
    Command {
        /// The arguments.
        args: String,
        /// What it wrote to stderr.
        stderr: String,
    },
    /// A file operation in a temporary directory failed.
    #[error("file error in test setup: {0}")]
    Io(#[from] std::io::Error),
    /// Making a test certificate failed.
    #[error("could not make a test certificate: {0}")]
    Certificate(String),
}
