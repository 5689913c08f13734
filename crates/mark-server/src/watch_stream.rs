//! WATCH over QUIC: the thin driver around `watch.rs`. It feeds the
//! engine's changes into the server's log, re-checks the store for changes
//! made outside it while watches are open, and runs each watch stream:
//! acknowledgement, events, heartbeats, one terminal block. A watch is not
//! bound by the stream timeout as a whole; each write to it is.

use crate::listener::{Limits, write_bounded};
use crate::watch::{Subscription, WatchLog, closing};
use mark_proto::watch::{Cursor, HEARTBEAT_INTERVAL, WatchBlock};
use mark_proto::{Request, Response, Status};
use mark_store::Engine;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{Notify, watch};
use tracing::{debug, info, warn};

/// How watches are served.
#[derive(Debug, Clone, Copy)]
pub struct WatchConfig {
    /// Watches open at once on the whole server.
    pub max_watches: usize,
    /// Watches open at once on one connection (below its stream limit).
    pub max_per_connection: usize,
    /// How often the store is re-checked for changes made outside the
    /// server while a watch is open.
    pub recheck: Duration,
    /// Idle time before a heartbeat.
    pub heartbeat: Duration,
    /// Changes kept for watches that resume or lag.
    pub backlog: usize,
}

impl Default for WatchConfig {
    fn default() -> WatchConfig {
        WatchConfig {
            max_watches: 4096,
            max_per_connection: 16,
            recheck: mark_store::lookup::DEFAULT_RECHECK,
            heartbeat: HEARTBEAT_INTERVAL,
            backlog: crate::watch::DEFAULT_BACKLOG,
        }
    }
}

/// The server's watches: the change log every watch reads, the wake-up
/// they wait on, and how many are open.
#[derive(Debug)]
pub struct Watches {
    engine: Arc<Engine>,
    log: Mutex<WatchLog>,
    changed: Notify,
    open: AtomicUsize,
    config: WatchConfig,
}

/// Counts one open watch on the server and on its connection while it lives.
struct Open<'a> {
    server: &'a AtomicUsize,
    connection: Arc<AtomicUsize>,
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.server.fetch_sub(1, Ordering::Relaxed);
        self.connection.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Watches {
    /// Serves WATCH over `engine`: its changes go to the watches from now
    /// on. The epoch is the start time in milliseconds, so a restarted
    /// server never continues an old sequence.
    pub fn new(engine: Arc<Engine>, config: WatchConfig) -> Arc<Watches> {
        let epoch = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(1, |d| d.as_millis() as u64);
        let watches = Arc::new(Watches {
            engine: Arc::clone(&engine),
            log: Mutex::new(WatchLog::new(epoch, config.backlog)),
            changed: Notify::new(),
            open: AtomicUsize::new(0),
            config,
        });
        // Weak: the engine holds the sink, and the watches hold the engine.
        let sink: Weak<Watches> = Arc::downgrade(&watches);
        engine.set_change_sink(Some(Arc::new(move |change| {
            if let Some(watches) = sink.upgrade() {
                watches.log().record(change);
                watches.changed.notify_waiters();
            }
        })));
        watches
    }

    fn log(&self) -> std::sync::MutexGuard<'_, WatchLog> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Watches open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Re-checks the store every `recheck` while a watch is open (and once
    /// at start, to take the store's stamps as the start), until `stop`.
    pub(crate) async fn recheck_until(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let mut first = true;
        loop {
            if first || self.open() > 0 {
                first = false;
                let engine = Arc::clone(&self.engine);
                match tokio::task::spawn_blocking(move || engine.recheck_changes()).await {
                    Ok(Ok(n)) if n > 0 => debug!("re-check found {n} changes"),
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => warn!("cannot re-check the store for watches: {e}"),
                    Err(e) => warn!("the re-check failed: {e}"),
                }
            }
            tokio::select! {
                () = tokio::time::sleep(self.config.recheck) => {}
                _ = stop.changed() => return,
            }
        }
    }

    /// Runs one WATCH stream until the client cancels it, the connection
    /// ends, the watch must end (`resync`, a token no longer valid) or
    /// `stop` (the server shuts down: `closing`). Logs the request line
    /// (`request WATCH /path -> status`) once it is answered or acknowledged.
    pub(crate) async fn serve(
        &self,
        request: Request,
        connection: &quinn::Connection,
        send: &mut quinn::SendStream,
        on_connection: &Arc<AtomicUsize>,
        stop: &mut watch::Receiver<bool>,
        limits: &Limits,
    ) {
        let engine = Arc::clone(&self.engine);
        let asked = request.clone();
        let scope =
            tokio::task::spawn_blocking(move || engine.watch_scope(&asked, SystemTime::now()))
                .await
                .unwrap_or_else(|_| {
                    Err(Response::error_for(
                        Status::ServerError,
                        "The watch could not be set up; try again.",
                    ))
                });
        let since = request.metadata.get("since");
        let refusal = match (&scope, since.map(|s| (s, Cursor::parse(s)))) {
            (Err(response), _) => Some(response.clone()),
            (_, Some((text, None))) => Some(Response::error_for(
                Status::BadRequest,
                &format!(
                    "`since: {text}` is not a cursor: give the `<epoch>:<seq>` of a block this server sent."
                ),
            )),
            _ => None,
        };
        if let Some(response) = refusal {
            info!("request WATCH {} -> {}", request.path, response.status);
            self.answer_once(connection, send, &response, limits).await;
            return;
        }
        let Ok(scope) = scope else {
            return;
        };
        let Some(_open) = self.admit(on_connection) else {
            let response = Response::error_for(
                Status::Unavailable,
                &format!(
                    "Too many watches are open (at most {} per connection, {} on this server); close one or try again later.",
                    self.config.max_per_connection, self.config.max_watches
                ),
            );
            info!("request WATCH {} -> {}", request.path, response.status);
            self.answer_once(connection, send, &response, limits).await;
            return;
        };
        info!("request WATCH {} -> ok", request.path);
        let since = since.and_then(Cursor::parse);
        let (sub, first) = Subscription::start(&self.log(), since, Instant::now());
        let mut sub = sub.with_heartbeat(self.config.heartbeat);
        let cancelled = send.stopped();
        tokio::pin!(cancelled);
        let mut blocks = first;
        loop {
            if !write_blocks(connection, send, &blocks, limits).await {
                return;
            }
            if sub.ended() {
                break;
            }
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            blocks = {
                let log = self.log();
                sub.poll(&log, Instant::now(), |c| {
                    self.engine
                        .watch_sees(&request, &scope, &c.path, SystemTime::now())
                })
            };
            if !blocks.is_empty() {
                continue;
            }
            let heartbeat = tokio::time::Instant::from_std(sub.next_heartbeat());
            tokio::select! {
                () = &mut changed => {}
                () = tokio::time::sleep_until(heartbeat) => {
                    if !self.engine.watch_permitted(&request, &scope, SystemTime::now()) {
                        blocks.extend(sub.end(Status::Unauthorized));
                    }
                }
                _ = stop.changed() => blocks.extend(sub.end(closing())),
                _ = &mut cancelled => {
                    debug!("watch {} cancelled by the client", request.path);
                    return;
                }
            }
        }
        let _ = send.finish();
        let _ =
            crate::listener::while_acknowledged(connection, limits.stream_timeout, cancelled).await;
        debug!("watch {} ended", request.path);
    }

    /// Counts a new watch when both caps leave room for it.
    fn admit(&self, on_connection: &Arc<AtomicUsize>) -> Option<Open<'_>> {
        let server = self.open.fetch_add(1, Ordering::Relaxed);
        let here = on_connection.fetch_add(1, Ordering::Relaxed);
        let open = Open {
            server: &self.open,
            connection: Arc::clone(on_connection),
        };
        (server < self.config.max_watches && here < self.config.max_per_connection).then_some(open)
    }

    /// An ordinary response instead of a watch.
    async fn answer_once(
        &self,
        connection: &quinn::Connection,
        send: &mut quinn::SendStream,
        response: &Response,
        limits: &Limits,
    ) {
        let bytes = response.encode().unwrap_or_default();
        write_bounded(connection, send, &bytes, limits).await;
    }
}

/// Writes `blocks`, each write within the stream timeout (longer while the
/// client keeps acknowledging); `false` when the stream is gone or stuck
/// (then it is reset).
async fn write_blocks(
    connection: &quinn::Connection,
    send: &mut quinn::SendStream,
    blocks: &[WatchBlock],
    limits: &Limits,
) -> bool {
    if blocks.is_empty() {
        return true;
    }
    let bytes: Vec<u8> = blocks.iter().flat_map(WatchBlock::encode).collect();
    let write = send.write_all(&bytes);
    match crate::listener::while_acknowledged(connection, limits.stream_timeout, write).await {
        Some(Ok(())) => true,
        Some(Err(e)) => {
            debug!("watch write failed: {e}");
            false
        }
        None => {
            debug!("watch write timed out");
            let _ = send.reset(0u8.into());
            false
        }
    }
}
