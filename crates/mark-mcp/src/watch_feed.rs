//! The change feed's drivers: [`start`] hears a server's changes by one
//! `WATCH /` stream per connection (resumed from its cursor after a drop,
//! given up for today's revalidation when the server has no WATCH for this
//! client), and a folder's by file events (`folder_feed.rs`). Each change
//! goes to [`Session::source_changed`]; health goes to the feed.

use crate::session::Session;
use crate::source::ChangeSource;
use mark_client::{Client, WatchStart, lacks_watch};
use mark_proto::Status;
use mark_proto::watch::{Cursor, WatchBlock};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// The first wait before watching again after a failure; doubled each time.
const RETRY_FIRST: Duration = Duration::from_secs(1);
/// The longest wait before watching again.
const RETRY_MAX: Duration = Duration::from_secs(30);

/// Starts the session's change feed on the current runtime (none for a
/// source without one). It ends with the session.
pub fn start(session: &Arc<Session>) {
    match session.source().change_source() {
        ChangeSource::None => {}
        ChangeSource::Server { client, host, port } => {
            tokio::spawn(watch_server(Arc::downgrade(session), client, host, port));
        }
        ChangeSource::Folder { root } => crate::folder_feed::start(session, &root),
    }
}

/// How one watch ended.
enum Ended {
    /// Watch again from this cursor (or afresh) after a pause.
    Retry(Option<Cursor>),
    /// The server has no watch for this client: revalidate from now on.
    GiveUp,
}

async fn watch_server(session: Weak<Session>, client: Client, host: String, port: u16) {
    let mut since = None;
    let mut pause = RETRY_FIRST;
    loop {
        let ended = watch_once(&session, &client, &host, port, since).await;
        let Some(live) = session.upgrade() else {
            return;
        };
        match ended {
            // `watch_once` said why.
            Ended::GiveUp => return,
            Ended::Retry(cursor) => {
                live.feed().lost();
                since = cursor;
            }
        }
        drop(live);
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(RETRY_MAX);
        if session.strong_count() == 0 {
            return;
        }
    }
}

async fn watch_once(
    session: &Weak<Session>,
    client: &Client,
    host: &str,
    port: u16,
    since: Option<Cursor>,
) -> Ended {
    let mut stream = match client.watch(host, port, "/", since).await {
        Ok(WatchStart::Watching(stream)) => stream,
        Ok(WatchStart::Refused(response)) => {
            if lacks_watch(&response) || response.status == Status::Unauthorized {
                let why = format!(
                    "{host}:{port} gives no WATCH to this client ({}): documents are revalidated by --fresh-for",
                    response.status
                );
                tracing::info!("{why}");
                if let Some(live) = session.upgrade() {
                    live.feed().gave_up(why);
                }
                return Ended::GiveUp;
            }
            tracing::debug!("WATCH refused: {}", response.status);
            return Ended::Retry(since);
        }
        Err(e) => {
            tracing::debug!("WATCH failed: {e}");
            return Ended::Retry(since);
        }
    };
    let mut cursor = Some(stream.ack());
    {
        let Some(live) = session.upgrade() else {
            return Ended::GiveUp;
        };
        live.feed().established(Instant::now(), false);
    }
    loop {
        let block = tokio::time::timeout(crate::change_feed::HEALTHY_SILENCE, stream.next()).await;
        let Some(live) = session.upgrade() else {
            return Ended::GiveUp;
        };
        let now = Instant::now();
        match block {
            Ok(Ok(Some(WatchBlock::Change(change)))) => {
                cursor = Some(change.cursor);
                match crate::keys::document_key(&change.path) {
                    Ok(key) => live.source_changed(&key, now),
                    Err(e) => tracing::debug!("a change to an unusable path: {e}"),
                }
            }
            Ok(Ok(Some(WatchBlock::Heartbeat(at)))) => {
                cursor = Some(at);
                live.feed().heard(now);
            }
            Ok(Ok(Some(WatchBlock::End(status, at)))) => {
                tracing::info!("the server ended the watch: {status}");
                return match status.as_str() {
                    "resync" => Ended::Retry(None),
                    "unauthorized" => {
                        live.feed().gave_up(
                            "the server ended the watch: the token no longer reads / (unauthorized)".into(),
                        );
                        Ended::GiveUp
                    }
                    _ => Ended::Retry(at.or(cursor)),
                };
            }
            Ok(Ok(Some(_))) => live.feed().heard(now),
            Ok(Ok(None)) => return Ended::Retry(cursor),
            Ok(Err(e)) => {
                tracing::debug!("the watch stream failed: {e}");
                return Ended::Retry(cursor);
            }
            Err(_) => {
                tracing::debug!("the watch went silent");
                return Ended::Retry(cursor);
            }
        }
    }
}
