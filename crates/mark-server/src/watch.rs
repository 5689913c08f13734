//! WATCH's logic without I/O: the server's log of recent changes (epoch,
//! sequence, a bounded backlog for resuming) and one subscription's state
//! (what it sent last, when, whether it fell behind). The caller gives the
//! clock and writes the blocks; `watch_stream.rs` drives it over QUIC.

use mark_proto::Status;
use mark_proto::watch::{Change, Cursor, HEARTBEAT_INTERVAL, WatchBlock};
use mark_store::StoreChange;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Changes kept for subscribers that resume or lag, by default.
pub const DEFAULT_BACKLOG: usize = 1024;

/// The server's recent changes, numbered within one epoch.
#[derive(Debug)]
pub struct WatchLog {
    epoch: u64,
    /// The sequence number of the newest change (0 before any).
    last_seq: u64,
    /// The newest changes, oldest first, at most `capacity`.
    recent: VecDeque<Change>,
    capacity: usize,
}

/// A subscriber asked for changes the log no longer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lapped;

impl WatchLog {
    /// An empty log for `epoch` keeping the newest `capacity` changes (at least 1).
    pub fn new(epoch: u64, capacity: usize) -> WatchLog {
        WatchLog {
            epoch,
            last_seq: 0,
            recent: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// Numbers and keeps one change; the oldest kept is dropped past the capacity.
    pub fn record(&mut self, change: StoreChange) -> Cursor {
        self.last_seq += 1;
        let cursor = self.cursor();
        if self.recent.len() == self.capacity {
            self.recent.pop_front();
        }
        self.recent.push_back(Change {
            cursor,
            path: change.path,
            version: change.version,
            hash: change.hash,
            op: change.op,
            agent: None,
        });
        cursor
    }

    /// The cursor of the newest change.
    pub fn cursor(&self) -> Cursor {
        Cursor {
            epoch: self.epoch,
            seq: self.last_seq,
        }
    }

    /// The changes after `seq` of this epoch, oldest first; [`Lapped`] when
    /// some of them were already dropped.
    pub fn after(&self, seq: u64) -> Result<impl Iterator<Item = &Change>, Lapped> {
        let oldest = self.last_seq + 1 - self.recent.len() as u64;
        if seq + 1 < oldest || seq > self.last_seq {
            return Err(Lapped);
        }
        let skip = (seq + 1 - oldest) as usize;
        Ok(self.recent.iter().skip(skip))
    }
}

/// One open watch: where it stands and when it last sent a block.
#[derive(Debug)]
pub struct Subscription {
    /// The cursor of the last change this watch passed (sent or not seen).
    position: Cursor,
    last_sent: Instant,
    heartbeat: Duration,
    ended: bool,
}

/// The status that asks a subscriber to rebuild.
pub fn resync() -> Status {
    Status::Other("resync".to_string())
}

/// The status that says the server is shutting down.
pub fn closing() -> Status {
    Status::Other("closing".to_string())
}

impl Subscription {
    /// Starts a watch at `now`, from `since` when it resumes: the
    /// acknowledgement, then (when `since` is from another epoch or older
    /// than the log holds) at once `resync` at the log's cursor.
    pub fn start(
        log: &WatchLog,
        since: Option<Cursor>,
        now: Instant,
    ) -> (Subscription, Vec<WatchBlock>) {
        let current = log.cursor();
        let resumable = since.filter(|s| s.epoch == current.epoch && log.after(s.seq).is_ok());
        let mut sub = Subscription {
            position: resumable.unwrap_or(current),
            last_sent: now,
            heartbeat: HEARTBEAT_INTERVAL,
            ended: false,
        };
        let mut blocks = vec![WatchBlock::Ack(sub.position)];
        if since.is_some() && resumable.is_none() {
            sub.ended = true;
            blocks.push(WatchBlock::End(resync(), Some(current)));
        }
        (sub, blocks)
    }

    /// Sets the idle time before a heartbeat (default 20 s).
    pub fn with_heartbeat(mut self, every: Duration) -> Subscription {
        self.heartbeat = every;
        self
    }

    /// What to send at `now`: the changes since the last poll that `sees`
    /// lets through, or `resync` when the log dropped some of them before
    /// this watch took them, or a heartbeat when nothing was sent for the
    /// heartbeat interval. Nothing once the watch ended.
    pub fn poll(
        &mut self,
        log: &WatchLog,
        now: Instant,
        mut sees: impl FnMut(&Change) -> bool,
    ) -> Vec<WatchBlock> {
        if self.ended {
            return Vec::new();
        }
        let mut blocks = Vec::new();
        match log.after(self.position.seq) {
            Err(Lapped) => {
                self.ended = true;
                blocks.push(WatchBlock::End(resync(), Some(log.cursor())));
                return blocks;
            }
            Ok(changes) => {
                for change in changes {
                    if sees(change) {
                        blocks.push(WatchBlock::Change(change.clone()));
                    }
                }
            }
        }
        self.position = log.cursor();
        if blocks.is_empty() && now.saturating_duration_since(self.last_sent) >= self.heartbeat {
            blocks.push(WatchBlock::Heartbeat(self.position));
        }
        if !blocks.is_empty() {
            self.last_sent = now;
        }
        blocks
    }

    /// When the next heartbeat is due.
    pub fn next_heartbeat(&self) -> Instant {
        self.last_sent + self.heartbeat
    }

    /// Whether a terminal block was sent.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Ends the watch with `status` (`closing`, `unauthorized`) at its cursor.
    pub fn end(&mut self, status: Status) -> Option<WatchBlock> {
        (!std::mem::replace(&mut self.ended, true))
            .then_some(WatchBlock::End(status, Some(self.position)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mark_proto::watch::ChangeOp;

    fn change(path: &str, version: u64) -> StoreChange {
        StoreChange {
            path: path.to_string(),
            version,
            hash: None,
            op: ChangeOp::Publish,
        }
    }

    fn seqs(blocks: &[WatchBlock]) -> Vec<String> {
        blocks
            .iter()
            .map(|b| match b {
                WatchBlock::Ack(c) => format!("ack {c}"),
                WatchBlock::Change(c) => format!("{} {}", c.path, c.cursor),
                WatchBlock::Heartbeat(c) => format!("heartbeat {c}"),
                WatchBlock::End(s, c) => {
                    format!("{s} {}", c.map(|c| c.to_string()).unwrap_or_default())
                }
                WatchBlock::OtherEvent(_) => "other".into(),
            })
            .collect()
    }

    #[test]
    fn a_watch_sends_what_it_sees_in_order_then_heartbeats_when_idle() {
        let t0 = Instant::now();
        let mut log = WatchLog::new(9, 8);
        log.record(change("/before.md", 1));
        let (mut sub, blocks) = Subscription::start(&log, None, t0);
        assert_eq!(seqs(&blocks), ["ack 9:1"]);
        log.record(change("/a.md", 2));
        log.record(change("/hidden/b.md", 1));
        log.record(change("/c.md", 1));
        let blocks = sub.poll(&log, t0, |c| !c.path.starts_with("/hidden/"));
        assert_eq!(seqs(&blocks), ["/a.md 9:2", "/c.md 9:4"]);
        assert!(
            sub.poll(&log, t0 + Duration::from_secs(19), |_| true)
                .is_empty()
        );
        assert_eq!(sub.next_heartbeat(), t0 + HEARTBEAT_INTERVAL);
        let blocks = sub.poll(&log, t0 + HEARTBEAT_INTERVAL, |_| true);
        assert_eq!(seqs(&blocks), ["heartbeat 9:4"]);
        assert_eq!(sub.next_heartbeat(), t0 + 2 * HEARTBEAT_INTERVAL);
        assert_eq!(seqs(&[sub.end(closing()).unwrap()]), ["closing 9:4"]);
        assert!(sub.end(closing()).is_none(), "one terminal block");
        assert!(
            sub.poll(&log, t0 + 3 * HEARTBEAT_INTERVAL, |_| true)
                .is_empty()
        );
    }

    #[test]
    fn a_lapped_watch_gets_resync_once() {
        let t0 = Instant::now();
        let mut log = WatchLog::new(1, 3);
        let (mut sub, _) = Subscription::start(&log, None, t0);
        for v in 1..=4 {
            log.record(change("/a.md", v));
        }
        assert_eq!(seqs(&sub.poll(&log, t0, |_| true)), ["resync 1:4"]);
        assert!(sub.ended());
        assert!(sub.poll(&log, t0, |_| true).is_empty());
    }

    #[test]
    fn resuming_replays_from_the_cursor_or_asks_for_a_resync() {
        let t0 = Instant::now();
        let mut log = WatchLog::new(5, 3);
        for v in 1..=4 {
            log.record(change(&format!("/{v}.md"), 1));
        }
        let since = |seq| Some(Cursor { epoch: 5, seq });
        let (mut sub, blocks) = Subscription::start(&log, since(2), t0);
        assert_eq!(seqs(&blocks), ["ack 5:2"]);
        assert_eq!(
            seqs(&sub.poll(&log, t0, |_| true)),
            ["/3.md 5:3", "/4.md 5:4"]
        );
        let (_, blocks) = Subscription::start(&log, since(4), t0);
        assert_eq!(seqs(&blocks), ["ack 5:4"]);
        // Older than the log holds, from another epoch, or from the future.
        for cursor in [since(0), Some(Cursor { epoch: 4, seq: 4 }), since(9)] {
            let (sub, blocks) = Subscription::start(&log, cursor, t0);
            assert_eq!(seqs(&blocks), ["ack 5:4", "resync 5:4"]);
            assert!(sub.ended());
        }
    }
}
