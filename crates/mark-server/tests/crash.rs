//! Crash safety of the real `mark-server` binary: writers PUBLISH and
//! APPEND continuously over QUIC while the server process is killed with
//! SIGKILL at random moments, many times, and restarted on the same store.
//!
//! After every restart, for every document: VERSIONS answers
//! `chain-valid: true` and lists exactly v1..=vN; every version the server
//! acknowledged `created` is there and FETCH `/path/vN` returns exactly the
//! content recorded for it; no version appears that nobody wrote; a write
//! that was in flight at the kill (no answer) is either absent or there
//! intact, as the next version; the current document is the newest version.
//! Writes after a restart get the next number and never a number already
//! known (each writer sends `expected-version`, so each `created` answer
//! names a content the test knows exactly).
//!
//! `MARK_CRASH_KILLS` sets the number of kills (default 30),
//! `MARK_CRASH_SEED` the seed (printed at the start, so a failure
//! reproduces its choices; the kill moments also depend on timing). The
//! figures are printed at the end (`--no-capture` shows them).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mark_client::{Client, ClientConfig, Token, Trust};
use mark_proto::{Request, Response, Status, Verb, versions};
use mark_testkit::{MarkServerProcess, generate_token, import_store};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;

/// One writer per document; two share a versions folder.
const DOCS: [&str; 3] = ["/crash/a.md", "/crash/b.md", "/crash/deep/c.md"];
const DEFAULT_KILLS: usize = 30;
/// The kill comes this many milliseconds (inclusive range) after the writers start.
const KILL_DELAY_MS: (u64, u64) = (2, 50);
/// Older versions fetched again per document after each restart (all of them after the last).
const RECHECKED_PER_RESTART: usize = 16;
/// Generous: a live server answers in milliseconds, a killed one is never waited for.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// SplitMix64: a few lines of seeded randomness, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `low..=high`.
    fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next_u64() % (high - low + 1)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// What the test knows about one document.
#[derive(Debug)]
struct Doc {
    path: &'static str,
    /// Every version known to exist and its exact content: acknowledged
    /// ones, and in-flight ones found intact after a restart.
    known: BTreeMap<u64, String>,
    /// Known versions not fetched since they became known.
    unchecked: Vec<u64>,
}

impl Doc {
    fn new(path: &'static str) -> Doc {
        Doc {
            path,
            known: BTreeMap::new(),
            unchecked: Vec::new(),
        }
    }

    fn newest(&self) -> u64 {
        self.known.keys().last().copied().unwrap_or(0)
    }
}

/// A write sent but not answered when the server died.
#[derive(Debug)]
struct InFlight {
    version: u64,
    content: String,
}

/// A writer's document after the kill, and its unanswered write.
struct WriterOutcome {
    doc: Doc,
    in_flight: Option<InFlight>,
    publishes: usize,
    appends: usize,
}

#[derive(Debug, Default)]
struct Figures {
    acknowledged_publishes: usize,
    acknowledged_appends: usize,
    in_flight_found: usize,
    in_flight_absent: usize,
    rounds_without_ack: usize,
    versions_fetched: usize,
    slowest_restart: Duration,
    total_restart: Duration,
}

/// The server this test kills, with what it takes to talk to it.
struct Target {
    server: MarkServerProcess,
    token: String,
    seed: u64,
}

impl Target {
    fn client(&self) -> Client {
        Client::new(ClientConfig {
            trust: Trust::Pin(self.server.fingerprint),
            token: Some(Token::new(&self.token)),
            request_timeout: REQUEST_TIMEOUT,
            ..Default::default()
        })
        .unwrap()
    }

    async fn send(&self, client: &Client, request: Request) -> Response {
        let what = format!("{} {}", request.verb, request.path);
        client
            .request("127.0.0.1", self.server.addr.port(), request)
            .await
            .unwrap_or_else(|e| panic!("{what} failed after the restart (seed {}): {e}", self.seed))
    }
}

/// PUBLISHes and APPENDs to `doc` (each with `expected-version`) until the
/// kill is announced, recording every `created` answer.
async fn write_until_killed(
    client: Client,
    port: u16,
    mut doc: Doc,
    mut rng: Rng,
    label: String,
    mut killed: watch::Receiver<bool>,
) -> WriterOutcome {
    let (mut publishes, mut appends) = (0, 0);
    let mut write = 0u64;
    loop {
        write += 1;
        let base = doc.newest();
        let line = format!("{label} write {write} ({:016x})\n", rng.next_u64());
        let append_to = doc.known.get(&base).filter(|_| rng.below(3) != 0);
        let (request, content) = match append_to {
            Some(current) => (
                Request::new(Verb::Append, doc.path).with_body(line.clone()),
                // The APPEND join rule (demarkus'): a line end only where
                // the body lacks one.
                String::from_utf8(mark_proto::append::appended(
                    current.as_bytes(),
                    line.as_bytes(),
                ))
                .unwrap(),
            ),
            None => {
                let body = format!("# {label}\n\n{line}");
                (
                    Request::new(Verb::Publish, doc.path).with_body(body.clone()),
                    body,
                )
            }
        };
        let verb = request.verb;
        let request = request.with_meta("expected-version", base.to_string());
        let pending = InFlight {
            version: base + 1,
            content,
        };
        let answer = tokio::select! {
            biased;
            _ = killed.wait_for(|k| *k) => None,
            answer = client.request("127.0.0.1", port, request) => Some(answer),
        };
        match answer {
            Some(Ok(r)) if r.status == Status::Created => {
                let version: u64 = r.meta("version").and_then(|v| v.parse().ok()).unwrap_or(0);
                // One above the newest known version: above every
                // acknowledged one, so no number is ever reused.
                assert_eq!(
                    version, pending.version,
                    "{verb} {} with expected-version {base} was created as v{version}",
                    doc.path
                );
                doc.known.insert(version, pending.content);
                doc.unchecked.push(version);
                match verb {
                    Verb::Append => appends += 1,
                    _ => publishes += 1,
                }
            }
            Some(Ok(r)) => panic!(
                "{verb} {} with expected-version {base} answered {}: {:?} {}",
                doc.path,
                r.status,
                r.metadata,
                String::from_utf8_lossy(&r.body)
            ),
            // A lost connection before the kill was seen: the write is in
            // doubt all the same, so stop and let the restart settle it.
            Some(Err(_)) | None => {
                let _ = killed.wait_for(|k| *k).await;
                return WriterOutcome {
                    doc,
                    in_flight: Some(pending),
                    publishes,
                    appends,
                };
            }
        }
    }
}

/// Checks one document after a restart against what the test knows, and
/// adds an in-flight write that landed to what it knows.
async fn check_document(
    target: &Target,
    client: &Client,
    doc: &mut Doc,
    in_flight: Option<InFlight>,
    rng: &mut Rng,
    recheck_all: bool,
    figures: &mut Figures,
) {
    let (path, seed) = (doc.path, target.seed);
    let history = target
        .send(client, Request::new(Verb::Versions, path))
        .await;
    let newest_known = doc.newest();
    let total = if history.status == Status::NotFound && newest_known == 0 {
        0
    } else {
        assert_eq!(
            history.status,
            Status::Ok,
            "VERSIONS {path} (seed {seed}): {:?} {}",
            history.metadata,
            String::from_utf8_lossy(&history.body)
        );
        assert_eq!(
            history.meta("chain-valid"),
            Some("true"),
            "VERSIONS {path} after a kill (seed {seed}): chain-error {:?}",
            history.meta("chain-error")
        );
        let total: u64 = history.meta("total").unwrap().parse().unwrap();
        assert_eq!(history.meta("current"), Some(total.to_string().as_str()));
        let listed: Vec<u64> = versions::parse(&history.body)
            .unwrap()
            .iter()
            .inspect(|e| assert_eq!(e.path, path))
            .map(|e| e.version)
            .collect();
        assert_eq!(
            listed,
            (1..=total).rev().collect::<Vec<u64>>(),
            "VERSIONS {path} must list v{total}..v1, newest first (seed {seed})"
        );
        total
    };
    assert!(
        total >= newest_known,
        "{path}: acknowledged v{newest_known} is lost, the server has {total} versions (seed {seed})"
    );
    match in_flight {
        Some(write) if total == write.version => {
            figures.in_flight_found += 1;
            doc.known.insert(write.version, write.content);
            doc.unchecked.push(write.version);
        }
        Some(write) => {
            assert_eq!(write.version, newest_known + 1);
            figures.in_flight_absent += 1;
        }
        None => {}
    }
    assert_eq!(
        total,
        doc.newest(),
        "{path}: the server has {total} versions, the writers know {} (seed {seed})",
        doc.newest()
    );

    let mut to_fetch = std::mem::take(&mut doc.unchecked);
    let older: Vec<u64> = doc
        .known
        .keys()
        .copied()
        .filter(|v| !to_fetch.contains(v))
        .collect();
    if recheck_all {
        to_fetch.extend(older);
    } else if !older.is_empty() {
        to_fetch.extend((0..RECHECKED_PER_RESTART).map(|_| older[rng.below(older.len())]));
    }
    for version in to_fetch {
        let pinned = target
            .send(
                client,
                Request::new(Verb::Fetch, format!("{path}/v{version}")),
            )
            .await;
        assert_eq!(
            pinned.status,
            Status::Ok,
            "FETCH {path}/v{version} (seed {seed})"
        );
        assert_eq!(pinned.meta("version"), Some(version.to_string().as_str()));
        assert_eq!(
            pinned.text(),
            Some(doc.known[&version].as_str()),
            "FETCH {path}/v{version} must return exactly what was written (seed {seed})"
        );
        figures.versions_fetched += 1;
    }
    if total > 0 {
        let current = target.send(client, Request::new(Verb::Fetch, path)).await;
        assert_eq!(current.status, Status::Ok, "FETCH {path} (seed {seed})");
        assert_eq!(
            current.meta("version"),
            Some(total.to_string().as_str()),
            "FETCH {path} must serve the newest version (seed {seed})"
        );
        assert_eq!(current.text(), Some(doc.known[&total].as_str()));
    }
}

/// Hidden temp files killed writes left under `dir`: `(in versions
/// folders, elsewhere)` — unfinished version files and document-link
/// temps. Nothing removes them; they are counted for the report.
fn leftover_temp_files(dir: &Path) -> (usize, usize) {
    let (mut versions, mut links) = (0, 0);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else if name.starts_with('.') && name.ends_with(".tmp") {
                if dir.ends_with("versions") {
                    versions += 1;
                } else {
                    links += 1;
                }
            }
        }
    }
    (versions, links)
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, not `{v}`"))
    })
}

#[test]
fn sigkill_at_random_moments_loses_no_acknowledged_version() {
    let kills = env_number("MARK_CRASH_KILLS").map_or(DEFAULT_KILLS, |k| k as usize);
    let seed = env_number("MARK_CRASH_SEED").unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    });
    eprintln!("crash test: MARK_CRASH_SEED={seed} MARK_CRASH_KILLS={kills}");
    let mut rng = Rng(seed);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // Clients are made and dropped on this thread: they need the runtime's context.
    let _context = runtime.enter();

    let src = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("index.md"), "# Crash test\n").unwrap();
    let store = import_store(src.path()).unwrap();
    let tokens_dir = tempfile::tempdir().unwrap();
    let tokens = tokens_dir.path().join("tokens.toml");
    let token = generate_token(&tokens, "/crash/**", "publish", None).unwrap();
    let server_args = ["--tokens".to_string(), tokens.display().to_string()];
    let mut target = Target {
        server: MarkServerProcess::start(store.path(), &server_args).unwrap(),
        token,
        seed,
    };
    let mut docs: Vec<Doc> = DOCS.into_iter().map(Doc::new).collect();
    let mut figures = Figures::default();
    let started = Instant::now();

    let mut client = target.client();
    // Opens the connection, so the first round's writes start at once.
    runtime.block_on(async {
        for doc in &mut docs {
            check_document(&target, &client, doc, None, &mut rng, false, &mut figures).await;
        }
    });
    for round in 0..kills {
        let (announce_kill, killed) = watch::channel(false);
        let writers: Vec<_> = docs
            .drain(..)
            .enumerate()
            .map(|(i, doc)| {
                runtime.spawn(write_until_killed(
                    client.clone(),
                    target.server.addr.port(),
                    doc,
                    Rng(rng.next_u64()),
                    format!("writer {i} round {round}"),
                    killed.clone(),
                ))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(
            rng.between(KILL_DELAY_MS.0, KILL_DELAY_MS.1),
        ));
        if let Some(status) = target.server.child.try_wait().unwrap() {
            panic!(
                "round {round}: the server exited on its own ({status}) (seed {seed}); its log:\n{}",
                target.server.log_lines().join("\n")
            );
        }
        // std's Child::kill is SIGKILL on Unix; it returns once the process is gone.
        target.server.kill();
        announce_kill.send(true).unwrap();
        let outcomes: Vec<WriterOutcome> = runtime.block_on(async {
            let mut outcomes = Vec::new();
            for writer in writers {
                match writer.await {
                    Ok(outcome) => outcomes.push(outcome),
                    Err(e) => std::panic::resume_unwind(e.into_panic()),
                }
            }
            outcomes
        });
        let acks: usize = outcomes.iter().map(|o| o.publishes + o.appends).sum();
        figures.acknowledged_publishes += outcomes.iter().map(|o| o.publishes).sum::<usize>();
        figures.acknowledged_appends += outcomes.iter().map(|o| o.appends).sum::<usize>();
        if acks == 0 {
            figures.rounds_without_ack += 1;
        }

        let restart_began = Instant::now();
        target.server.restart().unwrap_or_else(|e| {
            panic!("round {round}: restarting on the same store and port failed (seed {seed}): {e}")
        });
        let restart = restart_began.elapsed();
        figures.slowest_restart = figures.slowest_restart.max(restart);
        figures.total_restart += restart;
        client = target.client();

        let last = round + 1 == kills;
        runtime.block_on(async {
            for outcome in outcomes {
                let mut doc = outcome.doc;
                check_document(
                    &target,
                    &client,
                    &mut doc,
                    outcome.in_flight,
                    &mut rng,
                    last,
                    &mut figures,
                )
                .await;
                docs.push(doc);
            }
        });
    }

    let acknowledged = figures.acknowledged_publishes + figures.acknowledged_appends;
    let leftover = leftover_temp_files(store.path());
    eprintln!(
        "crash test: seed {seed}, {kills} kills in {:.1?}: {acknowledged} writes acknowledged \
         ({} PUBLISH, {} APPEND), {} rounds without an acknowledgement; in flight at the kill: \
         {} found intact, {} absent; {} versions fetched and compared; restart {:.1?} on average, \
         {:.1?} at most; {} versions in all; temp files left by killed writes: {} version, {} link",
        started.elapsed(),
        figures.acknowledged_publishes,
        figures.acknowledged_appends,
        figures.rounds_without_ack,
        figures.in_flight_found,
        figures.in_flight_absent,
        figures.versions_fetched,
        figures.total_restart / kills.max(1) as u32,
        figures.slowest_restart,
        docs.iter().map(Doc::newest).sum::<u64>(),
        leftover.0,
        leftover.1,
    );
    // Typically 4 to 14 per round; far fewer means the kills came too early to test much.
    assert!(
        acknowledged >= kills / 2,
        "only {acknowledged} writes were acknowledged in {kills} rounds"
    );
}
