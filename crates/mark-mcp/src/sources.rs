//! The two sources: a local folder served in process by `mark-store`, and a
//! Mark server reached over QUIC by `mark-client`; and choosing one from the
//! command line.

use crate::cli::{Cli, SourceChoice};
use crate::kept_graph::KeptGraph;
use crate::pace::{self, Pace};
use crate::source::{Source, SourceError};
use crate::token_file;
use futures::future::BoxFuture;
use mark_client::{Client, ClientConfig, ClientError, Token, Trust, parse_fingerprint};
use mark_proto::{MarkUrl, Request, Response};
use mark_store::lookup::IndexStorage;
use mark_store::{Engine, RootKind, StoreMode, TokenStore};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

/// Origin of the URLs of a local folder.
pub const LOCAL_ORIGIN: &str = "mark://local";

/// A folder read in process: the same engine mark-server runs.
pub struct LocalSource {
    engine: Arc<Engine>,
    root: String,
    /// The owner's token for writes through this process (see [`LocalSource::open`]).
    owner_token: Option<String>,
    /// The longest wait for one answer (see [`LocalSource::with_deadline`]).
    deadline: Duration,
}

/// The longest wait for one answer of a folder unless told otherwise (the
/// default `--timeout`).
const LOCAL_DEADLINE: Duration = Duration::from_secs(15);

impl LocalSource {
    /// Opens `root`: a versioned store when it has the store's marker (or,
    /// with `write`, when it is empty: the first write marks it), else a
    /// flat read-only folder. An older store without the marker is served
    /// flat, with one line on stderr saying how to mark it; with `write` it
    /// is marked, unless plain documents in it would vanish. With `write`
    /// on a versioned store the person running mark-mcp is its owner: the
    /// engine gets a token store with one publish grant on everything,
    /// whose token never leaves this process. Without `write` nothing on
    /// disk changes.
    pub fn open(root: &Path, write: bool) -> Result<LocalSource, String> {
        let kind =
            RootKind::of(root).map_err(|e| format!("cannot read {}: {e}", root.display()))?;
        let shown = root.display();
        let mode = match (kind, write) {
            (RootKind::Store, _) | (RootKind::Empty, true) => StoreMode::Versioned,
            (RootKind::UnmarkedStore, true) => match mark_store::mark(root) {
                Ok(()) => {
                    tracing::info!(
                        "marked {shown} as a versioned store (it had the layout of an older one)"
                    );
                    StoreMode::Versioned
                }
                Err(e) => {
                    tracing::warn!("{e}; it is served as a plain read-only folder");
                    StoreMode::Flat
                }
            },
            (RootKind::UnmarkedStore, false) => {
                tracing::warn!(
                    "{shown} has versions/ folders like a store of an older mark but no .mark-store marker, so it is served as a plain read-only folder; to use it as a store, mark it with `mark-server import --mark {shown}` or open it once with --write"
                );
                StoreMode::Flat
            }
            (RootKind::Empty | RootKind::Folder, _) => StoreMode::Flat,
        };
        let (tokens, owner_token) = if write && mode == StoreMode::Versioned {
            let (store, token) = owner_grant()?;
            (Some(store), Some(token))
        } else {
            (None, None)
        };
        let engine = Engine::open(root, mode, tokens)
            .map_err(|e| format!("cannot serve {}: {e}", root.display()))?;
        Ok(LocalSource {
            engine: Arc::new(engine),
            root: root.display().to_string(),
            owner_token,
            deadline: LOCAL_DEADLINE,
        })
    }

    /// The same source, waiting at most `deadline` for each answer: a read
    /// stalled on a hung file system then fails with a sentence saying so
    /// (the blocked thread cannot be stopped and is left behind).
    pub fn with_deadline(self, deadline: Duration) -> LocalSource {
        LocalSource { deadline, ..self }
    }
}

/// A one-process token granting publish everywhere (reads stay public: a
/// read grant would make them need the token). Its strength hardly matters:
/// it is never written, printed or sent anywhere, and whoever reaches this
/// process's stdio may write anyway.
fn owner_grant() -> Result<(TokenStore, String), String> {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = format!("mark-mcp owner {} {nanos}", std::process::id());
    let token = blake3::hash(seed.as_bytes()).to_hex().to_string();
    let hash = hex::encode(Sha256::digest(token.as_bytes()));
    let text =
        format!("[[token]]\nhash = \"sha256-{hash}\"\npaths = [\"/**\"]\nops = [\"publish\"]\n");
    let store =
        TokenStore::parse(&text).map_err(|e| format!("could not set up local writes: {e}"))?;
    Ok((store, token))
}

impl Source for LocalSource {
    fn send(&self, mut req: Request) -> BoxFuture<'_, Result<Response, SourceError>> {
        if let Some(t) = &self.owner_token
            && req.verb.is_write()
        {
            req = req.with_meta("auth", t.as_str());
        }
        let engine = Arc::clone(&self.engine);
        let deadline = self.deadline;
        Box::pin(async move {
            let work = tokio::task::spawn_blocking(move || engine.handle(&req, SystemTime::now()));
            match tokio::time::timeout(deadline, work).await {
                Ok(answer) => answer.map_err(|e| SourceError::Local(e.to_string())),
                Err(_) => Err(SourceError::Stalled(deadline)),
            }
        })
    }

    fn origin(&self) -> String {
        LOCAL_ORIGIN.to_string()
    }

    fn describe(&self) -> String {
        let mode = match (self.engine.mode(), &self.owner_token) {
            (StoreMode::Versioned, Some(_)) => "versioned store, writable",
            (StoreMode::Versioned, None) => "versioned store, read-only",
            (StoreMode::Flat, _) => "folder, read-only",
        };
        format!("{} ({mode}) as {LOCAL_ORIGIN}", self.root)
    }

    fn change_source(&self) -> crate::source::ChangeSource {
        crate::source::ChangeSource::Folder {
            root: self.engine.root().to_path_buf(),
        }
    }

    fn refuses_writes(&self) -> Option<&'static str> {
        match (self.engine.mode(), &self.owner_token) {
            (StoreMode::Versioned, Some(_)) => None,
            (StoreMode::Versioned, None) => Some("the store was opened without --write"),
            (StoreMode::Flat, _) => Some("a plain folder is read-only"),
        }
    }
}

/// The longest wait for a server's QUIC handshake (within `--timeout`): a
/// closed UDP port sends nothing back (no ICMP reaches QUIC), so a wrong
/// host or port is said after this, not after the whole request deadline.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// A Mark server over QUIC: one client, one connection reused, requests
/// paced ([`crate::pace`]): at most [`pace::MAX_IN_FLIGHT`] at once, and
/// once the server closes a stream without answering (over its request
/// rate), one per interval after a pause; such a read is sent again at
/// that pace up to [`pace::RESENDS`] times.
pub struct RemoteSource {
    client: Client,
    url: MarkUrl,
    pace: Mutex<Pace>,
    in_flight: tokio::sync::Semaphore,
}

impl RemoteSource {
    /// A source for `host` (`mark://HOST[:PORT]`) with the given client.
    pub fn new(url: MarkUrl, client: Client) -> RemoteSource {
        RemoteSource {
            client,
            url,
            pace: Mutex::new(Pace::new()),
            in_flight: tokio::sync::Semaphore::new(pace::MAX_IN_FLIGHT),
        }
    }

    fn pace(&self) -> std::sync::MutexGuard<'_, Pace> {
        self.pace.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for the pace, then takes its turn.
    async fn wait_turn(&self) -> Instant {
        loop {
            let now = Instant::now();
            let ready = self.pace().ready_at(now);
            if ready <= now {
                self.pace().sent(now);
                return now;
            }
            tokio::time::sleep_until(ready.into()).await;
        }
    }
}

impl Source for RemoteSource {
    fn send(&self, req: Request) -> BoxFuture<'_, Result<Response, SourceError>> {
        Box::pin(async move {
            // The semaphore is never closed.
            let _slot = self.in_flight.acquire().await;
            let resends = if req.verb.is_idempotent() {
                pace::RESENDS
            } else {
                0
            };
            let mut sent = 0;
            loop {
                let asked = self.wait_turn().await;
                let answer = self
                    .client
                    .request(self.url.host(), self.url.port(), req.clone())
                    .await;
                match answer {
                    Err(ClientError::NoAnswer) => {
                        self.pace().unanswered(asked, Instant::now());
                        if sent == resends {
                            return Err(ClientError::NoAnswer.into());
                        }
                        sent += 1;
                    }
                    answer => {
                        if answer.is_ok() {
                            self.pace().answered();
                        }
                        return Ok(answer?);
                    }
                }
            }
        })
    }

    fn origin(&self) -> String {
        self.url.origin()
    }

    fn describe(&self) -> String {
        format!("Mark server {}", self.url.origin())
    }

    fn change_source(&self) -> crate::source::ChangeSource {
        crate::source::ChangeSource::Server {
            client: self.client.clone(),
            host: self.url.host().to_string(),
            port: self.url.port(),
        }
    }
}

/// Reads the token for `url`'s host from `--token-file` (a raw token, or
/// demarkus' token store: see [`crate::token_file`]), else `MARK_TOKEN`,
/// else `DEMARKUS_AUTH`. Never logged. An empty `--token-file ''` (an unset
/// plugin setting) names no file.
fn token(cli: &Cli, url: &MarkUrl) -> Result<Option<String>, String> {
    if let Some(file) = cli
        .token_file
        .as_ref()
        .filter(|f| !f.as_os_str().is_empty())
    {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read the token file {}: {e}", file.display()))?;
        return token_file::token_from_file(file, &text, url.host(), url.port()).map(Some);
    }
    Ok(token_file::token_from_env(|name| std::env::var(name).ok()))
}

/// The folder source at `root` as the options set it up: its deadline,
/// its index's re-check and where its index is kept.
pub fn local(cli: &Cli, root: &Path) -> Result<LocalSource, String> {
    let source = LocalSource::open(root, cli.write)?.with_deadline(cli.timeout);
    // Files edited behind the engine's back are searched after at most
    // the time a fetched document is trusted.
    source.engine.set_index_recheck(cli.fresh_for);
    source
        .engine
        .set_index_storage(IndexStorage::in_folder_or_cache(
            cli.index_dir.clone(),
            cli.index_ram_bytes as u64,
        ));
    Ok(source)
}

/// The link graph kept between sessions for the source the options name,
/// in the cache folder (`--index-dir`; `''` keeps nothing): by a folder's
/// canonical root, or by a server's origin and its token's identity.
pub fn kept_graph(cli: &Cli) -> Option<KeptGraph> {
    let cache = IndexStorage::in_folder_or_cache(cli.index_dir.clone(), 0)?.folder;
    match cli.source_choice()? {
        SourceChoice::Folder(root) => {
            let root = std::fs::canonicalize(root).ok()?;
            let source = format!("folder {}", root.display());
            Some(KeptGraph::new(&cache, &source, None))
        }
        SourceChoice::Server(host) => {
            let url = MarkUrl::parse(&host).ok()?;
            let token = token(cli, &url).ok()?;
            let source = format!("server {}", url.origin());
            Some(KeptGraph::new(&cache, &source, token.as_deref()))
        }
    }
}

/// The `index` verb's line on the kept link graph (removed with `clear`).
fn kept_graph_line(cli: &Cli, clear: bool) -> Result<String, String> {
    let Some(kept) = kept_graph(cli) else {
        return Ok(String::new());
    };
    let file = kept.file().display();
    let Ok(meta) = std::fs::metadata(kept.file()) else {
        return Ok(format!(
            "No link graph is kept yet: a complete crawl writes it to {file}.\n"
        ));
    };
    if clear {
        kept.clear()
            .map_err(|e| format!("cannot remove the kept link graph {file}: {e}"))?;
        return Ok(format!(
            "Removed the kept link graph {file} ({} bytes).\n",
            meta.len()
        ));
    }
    Ok(format!(
        "The link graph kept: {file}\nsize: {} bytes\n",
        meta.len()
    ))
}

/// The `index` verb: what is kept of `--root`'s search index between
/// sessions (folder, size, documents, last update) and of its link graph,
/// removed with `clear`.
pub fn kept_index(cli: &Cli, clear: bool) -> Result<String, String> {
    let index = kept_search_index(cli, clear)?;
    Ok(format!("{index}{}", kept_graph_line(cli, clear)?))
}

fn kept_search_index(cli: &Cli, clear: bool) -> Result<String, String> {
    let Some(SourceChoice::Folder(root)) = cli.source_choice() else {
        return Err(
            "index needs --root DIR (a server keeps its own index, and nothing is kept for it here)"
                .into(),
        );
    };
    let source = local(cli, &root)?;
    let shown = source.engine.root().display().to_string();
    let kept = source
        .engine
        .kept_index(clear)
        .map_err(|e| format!("cannot read the index kept for {shown}: {e}"))?;
    let Some(kept) = kept else {
        return Ok(format!(
            "No search index is kept for {shown}: --index-dir is '' (or no cache folder is known), so each process builds it in memory.\n"
        ));
    };
    let folder = kept.folder.display();
    if !kept.exists {
        return Ok(format!(
            "No search index is kept for {shown} yet: the first lookup over more than --index-ram-bytes ({} bytes) of markdown writes it to {folder}.\n",
            cli.index_ram_bytes
        ));
    }
    let documents = kept.documents.map_or_else(
        || "no readable commit".to_string(),
        |n| format!("{n} documents"),
    );
    let updated = kept.updated.unwrap_or_else(|| "never".to_string());
    let what = format!(
        "{folder}\nsize: {} bytes; {documents}; last update: {updated}\n",
        kept.bytes
    );
    Ok(if clear {
        format!("Removed the search index kept for {shown}: {what}")
    } else {
        format!("The search index kept for {shown}: {what}")
    })
}

/// Builds the source the options name. A token (`--token-file`,
/// `MARK_TOKEN`) goes to a server; a local folder needs none.
pub fn from_cli(cli: &Cli) -> Result<Arc<dyn Source>, String> {
    let host = match cli.source_choice() {
        Some(SourceChoice::Folder(root)) => return Ok(Arc::new(local(cli, &root)?)),
        Some(SourceChoice::Server(host)) => host,
        None => {
            return Err(
                "give a source: --source DIR or --source mark://HOST[:PORT] (also --root DIR, --host mark://HOST[:PORT])"
                    .into(),
            );
        }
    };
    let url = MarkUrl::parse(&host).map_err(|e| format!("--source: {e}"))?;
    let token = token(cli, &url)?;
    // An empty `--pin ''` (an unset plugin setting) pins nothing.
    let pin = cli.pin.as_deref().map(str::trim).filter(|p| !p.is_empty());
    let trust = if cli.insecure {
        tracing::warn!("--insecure: the server's certificate is not verified");
        Trust::Insecure
    } else if let Some(pin) = pin {
        Trust::Pin(parse_fingerprint(pin).map_err(|e| format!("--pin: {e}"))?)
    } else if let Some(ca) = &cli.ca {
        Trust::CaFile(ca.clone())
    } else {
        Trust::SystemRoots
    };
    let client = Client::new(ClientConfig {
        trust,
        token: token.map(Token::new),
        connect_timeout: HANDSHAKE_TIMEOUT.min(cli.timeout),
        request_timeout: cli.timeout,
        max_response_bytes: cli.max_response_bytes,
        ..Default::default()
    })
    .map_err(|e| e.to_string())?;
    Ok(Arc::new(RemoteSource::new(url, client)))
}
