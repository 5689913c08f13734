//! A real `mark-server` for the benchmark: a versioned store imported from
//! the knowledge base (`mark-server import`), served on 127.0.0.1:0, with
//! its `request VERB /path -> status` log lines counted.

use crate::BenchError;
use mark_testkit::{LoggedRequest, parse_listening_line, parse_request_line};
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long `mark-server` has to print its `listening` line.
pub const LISTEN_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an import may take.
pub const IMPORT_TIMEOUT: Duration = Duration::from_secs(120);

/// A running `mark-server` over a temporary store; killed on drop.
#[derive(Debug)]
pub struct BenchServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// `sha256:<hex>` of its certificate, for `mark-mcp --pin`.
    pub pin: String,
    child: Child,
    log: Arc<Mutex<Vec<LoggedRequest>>>,
    _store: TempDir,
}

impl BenchServer {
    /// Imports `kb` into a new versioned store with `BIN import` and serves it
    /// with `BIN --root STORE --listen 127.0.0.1:0`.
    pub async fn start(bin: &Path, kb: &Path) -> Result<BenchServer, BenchError> {
        let store = tempfile::tempdir().map_err(|source| BenchError::Io {
            what: "making a temporary store directory".into(),
            source,
        })?;
        let root = store.path().join("store");
        let import = Command::new(bin)
            .arg("import")
            .arg(kb)
            .arg(&root)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(IMPORT_TIMEOUT, import)
            .await
            .map_err(|_| {
                BenchError::Server(format!("`mark-server import` took over {IMPORT_TIMEOUT:?}"))
            })?
            .map_err(|source| BenchError::Io {
                what: format!("running {}", bin.display()),
                source,
            })?;
        if !out.status.success() {
            return Err(BenchError::Server(format!(
                "`mark-server import {}` failed: {}",
                kb.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let mut child = Command::new(bin)
            .arg("--root")
            .arg(&root)
            .arg("--listen")
            .arg("127.0.0.1:0")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| BenchError::Io {
                what: format!("starting {}", bin.display()),
                source,
            })?;
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(BenchError::Server(
                "mark-server has no stdout/stderr pipe".into(),
            ));
        };
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&log);
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(r) = parse_request_line(&line) {
                    sink.lock().unwrap_or_else(PoisonError::into_inner).push(r);
                }
            }
        });
        let mut lines = BufReader::new(stdout).lines();
        let listening = tokio::time::timeout(LISTEN_TIMEOUT, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(found) = parse_listening_line(&line) {
                    return Some(found);
                }
            }
            None
        })
        .await;
        // Keep draining stdout so the server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let (addr, fingerprint) = match listening {
            Ok(Some(found)) => found,
            Ok(None) => {
                return Err(BenchError::Server(
                    "mark-server exited before printing `listening`".into(),
                ));
            }
            Err(_) => {
                return Err(BenchError::Server(format!(
                    "mark-server printed no `listening` line within {LISTEN_TIMEOUT:?}"
                )));
            }
        };
        let pin = format!(
            "sha256:{}",
            fingerprint
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        Ok(BenchServer {
            addr,
            pin,
            child,
            log,
            _store: store,
        })
    }

    /// `mark://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("mark://{}", self.addr)
    }

    /// Requests logged so far.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The requests logged so far, once the log has been quiet for a moment:
    /// the server logs a request before it answers, but this process reads
    /// the log concurrently, so the last lines may still be in the pipe.
    pub async fn settled_requests(&self) -> Vec<LoggedRequest> {
        let mut seen = self.requests().len();
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(25)).await;
            let now = self.requests().len();
            if now == seen {
                break;
            }
            seen = now;
        }
        self.requests()
    }

    /// Stops the server.
    pub async fn stop(mut self) {
        // An error means it already exited.
        let _ = self.child.kill().await;
    }
}
