//! `mark-mcp watch`: the change hints of a source as they come, one line
//! each, for people and scripts, until Ctrl-C (or until the source turns
//! out to have no change feed). The lines are the session's change feed
//! (`change_feed.rs`), the one every other part of mark-mcp hears.

use crate::change_feed::FeedHint;
use crate::session::Session;
use std::io::Write;
use std::sync::Arc;

/// Prints each hint of `session`'s source to `out` as it comes:
/// `watching <origin>`, `changed <path>`, `lost the feed; trying again`,
/// and at the end `no change feed: <why>`. Returns whether it ended for
/// want of a feed (an error) rather than by `stop`.
pub async fn print_hints(
    session: &Arc<Session>,
    out: &mut (dyn Write + Send),
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), String> {
    let mut hints = session.feed().listen();
    crate::watch_feed::start(session);
    let origin = session.source().origin();
    tokio::pin!(stop);
    loop {
        let hint = tokio::select! {
            hint = hints.recv() => hint,
            () = &mut stop => return Ok(()),
        };
        let line = match hint {
            Some(FeedHint::Established) => format!("watching {origin}"),
            Some(FeedHint::Changed(path)) => format!("changed {path}"),
            Some(FeedHint::Lost) => "lost the feed; trying again".to_string(),
            Some(FeedHint::GaveUp(why)) => return Err(format!("no change feed: {why}")),
            None => return Err(format!("no change feed for {origin}")),
        };
        writeln!(out, "{line}")
            .and_then(|()| out.flush())
            .map_err(|e| e.to_string())?;
    }
}
