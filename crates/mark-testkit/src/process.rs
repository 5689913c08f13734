//! A running `mark-server` process and the requests it has logged.

use crate::{START_TIMEOUT, TestkitError, mark_server_binary};
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A real `mark-server` serving a store on 127.0.0.1; killed on drop.
#[derive(Debug)]
pub struct MarkServerProcess {
    /// The address it listens on (the real port, never 0).
    pub addr: SocketAddr,
    /// SHA-256 of its certificate, to pin.
    pub fingerprint: [u8; 32],
    /// The process.
    pub child: Child,
    root: PathBuf,
    extra_args: Vec<String>,
    /// Every stderr line of every run of this server, restarts included.
    log: Arc<Mutex<Vec<String>>>,
    stderr_reader: Option<JoinHandle<()>>,
}

/// One `request VERB /path -> status` line from the server's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedRequest {
    /// The verb as logged (`-` for an unparsable request).
    pub verb: String,
    /// The path as logged (`-` for an unparsable request).
    pub path: String,
    /// The response status.
    pub status: String,
}

impl MarkServerProcess {
    /// Starts `mark-server --root ROOT --listen 127.0.0.1:0 ARGS…` and waits
    /// (up to [`START_TIMEOUT`]) for its `listening` line. The server's
    /// `RUST_LOG` is `MARK_SERVER_LOG` when set, else `info`.
    pub fn start<S: AsRef<str>>(
        root: &Path,
        args: &[S],
    ) -> Result<MarkServerProcess, TestkitError> {
        let extra_args: Vec<String> = args.iter().map(|a| a.as_ref().to_string()).collect();
        let log = Arc::new(Mutex::new(Vec::new()));
        let listen: SocketAddr = SocketAddr::from(([127, 0, 0, 1], 0));
        let (child, addr, fingerprint, stderr_reader) = spawn(root, listen, &extra_args, &log)?;
        Ok(MarkServerProcess {
            addr,
            fingerprint,
            child,
            root: root.to_path_buf(),
            extra_args,
            log,
            stderr_reader: Some(stderr_reader),
        })
    }

    /// Kills the server and starts it again on the same root, port and
    /// arguments. With a self-signed certificate the fingerprint changes
    /// (pass `--cert/--key` from [`crate::write_test_certificate`] to keep it).
    /// The request log goes on accumulating.
    pub fn restart(&mut self) -> Result<(), TestkitError> {
        self.kill();
        let (child, addr, fingerprint, reader) =
            spawn(&self.root, self.addr, &self.extra_args, &self.log)?;
        self.child = child;
        self.addr = addr;
        self.fingerprint = fingerprint;
        self.stderr_reader = Some(reader);
        Ok(())
    }

    /// Kills the process (if it still runs) and waits for it.
    pub fn kill(&mut self) {
        // Errors mean it already exited; either way it is gone afterwards.
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(reader) = self.stderr_reader.take() {
            let _ = reader.join();
        }
    }

    /// The certificate pin as `mark-mcp --pin` takes it: `sha256:<hex>`.
    pub fn pin(&self) -> String {
        format!("sha256:{}", hex::encode(self.fingerprint))
    }

    /// `mark://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("mark://{}", self.addr)
    }

    /// `--host mark://… --pin sha256:…`, then `extra`: the arguments of a
    /// `mark-mcp` reading this server.
    pub fn reader_args(&self, extra: &[&str]) -> Vec<String> {
        self.reader_args_via(self.addr, extra)
    }

    /// [`reader_args`](Self::reader_args) for a reader that reaches this
    /// server through `via` (a relay), still pinning this server.
    pub fn reader_args_via(&self, via: SocketAddr, extra: &[&str]) -> Vec<String> {
        let mut args = vec![
            "--host".to_string(),
            format!("mark://{via}"),
            "--pin".to_string(),
            self.pin(),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        args
    }

    /// The server's stderr so far, one entry per line.
    pub fn log_lines(&self) -> Vec<String> {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Every request the server has logged so far, in order.
    ///
    /// The server logs a request before it writes the response, but this
    /// process reads the log in a thread: right after a response arrives the
    /// line may not have been read yet. Use [`Self::wait_for_requests`] when
    /// the count must include requests that just finished.
    pub fn requests_seen(&self) -> Vec<LoggedRequest> {
        self.log_lines()
            .iter()
            .filter_map(|l| parse_request_line(l))
            .collect()
    }

    /// How many `VERB path` requests the server has logged so far.
    pub fn count_requests(&self, verb: &str, path: &str) -> usize {
        self.requests_seen()
            .iter()
            .filter(|r| r.verb == verb && r.path == path)
            .count()
    }

    /// Waits up to `timeout` until at least `at_least` `VERB path` requests
    /// are logged; returns the count then (which may be lower on timeout).
    pub fn wait_for_requests(
        &self,
        verb: &str,
        path: &str,
        at_least: usize,
        timeout: Duration,
    ) -> usize {
        let deadline = Instant::now() + timeout;
        loop {
            let n = self.count_requests(verb, path);
            if n >= at_least || Instant::now() >= deadline {
                return n;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for MarkServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

type Spawned = (Child, SocketAddr, [u8; 32], JoinHandle<()>);

fn spawn(
    root: &Path,
    listen: SocketAddr,
    extra_args: &[String],
    log: &Arc<Mutex<Vec<String>>>,
) -> Result<Spawned, TestkitError> {
    let bin = mark_server_binary()?;
    let mut child = Command::new(&bin)
        .arg("--root")
        .arg(root)
        .arg("--listen")
        .arg(listen.to_string())
        .args(extra_args)
        // The request lines are info lines: the test's own RUST_LOG must not hide them.
        .env(
            "RUST_LOG",
            std::env::var("MARK_SERVER_LOG").unwrap_or_else(|_| "info".into()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| TestkitError::Spawn {
            program: bin.display().to_string(),
            source,
        })?;
    let (stdout, stderr) = match (child.stdout.take(), child.stderr.take()) {
        (Some(o), Some(e)) => (o, e),
        _ => return Err(TestkitError::NotStarted("no stdout/stderr pipe".into())),
    };
    let stderr_reader = collect_lines(stderr, Arc::clone(log));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        for line in lines.by_ref() {
            let Ok(line) = line else { return };
            let done = line.starts_with("listening ");
            let _ = tx.send(line);
            if done {
                break;
            }
        }
        // Keep draining so the server never blocks on a full pipe.
        for _ in lines {}
    });
    let outcome = wait_listening(&rx);
    match outcome {
        Ok((addr, fingerprint)) => Ok((child, addr, fingerprint, stderr_reader)),
        Err(why) => {
            let _ = child.kill();
            let _ = child.wait();
            let _ = stderr_reader.join();
            let stderr = log
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .join("\n");
            Err(match why {
                StartFailure::Timeout => TestkitError::StartTimeout(START_TIMEOUT, stderr),
                StartFailure::Other(msg) => {
                    TestkitError::NotStarted(format!("{msg}; its stderr: {stderr}"))
                }
            })
        }
    }
}

enum StartFailure {
    Timeout,
    Other(String),
}

fn wait_listening(rx: &mpsc::Receiver<String>) -> Result<(SocketAddr, [u8; 32]), StartFailure> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.starts_with("listening ") => {
                return parse_listening_line(&line).ok_or_else(|| {
                    StartFailure::Other(format!("unreadable listening line `{line}`"))
                });
            }
            // Anything else on stdout is ignored; the server promises one line.
            Ok(_) => {}
            Err(mpsc::RecvTimeoutError::Timeout) => return Err(StartFailure::Timeout),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(StartFailure::Other(
                    "it exited before printing `listening`".into(),
                ));
            }
        }
    }
}

fn collect_lines(
    stream: impl Read + Send + 'static,
    log: Arc<Mutex<Vec<String>>>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { return };
            log.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(line);
        }
    })
}

/// Parses `listening <addr> fingerprint sha256:<64 hex>`.
pub fn parse_listening_line(line: &str) -> Option<(SocketAddr, [u8; 32])> {
    let mut words = line.split_whitespace();
    if words.next()? != "listening" {
        return None;
    }
    let addr = words.next()?.parse().ok()?;
    if words.next()? != "fingerprint" {
        return None;
    }
    let hex_fp = words.next()?.strip_prefix("sha256:")?;
    let mut fp = [0u8; 32];
    hex::decode_to_slice(hex_fp, &mut fp).ok()?;
    if words.next().is_some() {
        return None;
    }
    Some((addr, fp))
}

/// Parses one server log line holding `request VERB PATH -> STATUS` (after
/// the timestamp and level). The path may hold anything but a line break,
/// so the status is taken after the last ` -> `.
pub fn parse_request_line(line: &str) -> Option<LoggedRequest> {
    let (_, rest) = line.split_once(" INFO request ")?;
    let (verb, rest) = rest.split_once(' ')?;
    let (path, status) = rest.rsplit_once(" -> ")?;
    Some(LoggedRequest {
        verb: verb.to_string(),
        path: path.to_string(),
        status: status.trim_end().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_line_parses() {
        let hex_fp = "ab".repeat(32);
        let (addr, fp) = parse_listening_line(&format!(
            "listening 127.0.0.1:6309 fingerprint sha256:{hex_fp}"
        ))
        .unwrap();
        assert_eq!(addr.port(), 6309);
        assert_eq!(fp, [0xab; 32]);
        assert!(parse_listening_line("listening 127.0.0.1:1 fingerprint sha256:abc").is_none());
        assert!(parse_listening_line("ready 127.0.0.1:1").is_none());
    }

    #[test]
    fn request_line_parses_odd_paths() {
        let r = parse_request_line(
            "2026-11-29T18:00:00.123456Z  INFO request FETCH /a b -> c.md -> not-found",
        )
        .unwrap();
        assert_eq!(r.verb, "FETCH");
        assert_eq!(r.path, "/a b -> c.md");
        assert_eq!(r.status, "not-found");
        assert!(
            parse_request_line("2026-11-29T18:00:00Z  INFO listening on 127.0.0.1:1").is_none()
        );
    }
}
