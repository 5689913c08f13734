//! WATCH's stream: its cursor (`<epoch>:<seq>`) and the frontmatter blocks
//! with no bodies a watch sends (the acknowledgement, change events,
//! heartbeats and one terminal block), with a bounded decoder that takes
//! the bytes as they arrive. No sockets and no clock: the server and the
//! client drive it.

use crate::error::WireError;
use crate::message::{Status, split_optional_block};
use crate::meta::{Metadata, write_block};
use std::fmt;
use std::time::Duration;

/// Largest block of a watch stream, fences included (PROTOCOL.md, WATCH).
pub const MAX_WATCH_BLOCK: usize = 8192;
/// How often a server sends a heartbeat on an idle watch.
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(20);

/// Where a watch stream stands: the server's epoch (it changes when the
/// server's sequence restarts) and the sequence number of the last event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cursor {
    /// The server's epoch.
    pub epoch: u64,
    /// The sequence number within the epoch.
    pub seq: u64,
}

impl Cursor {
    /// Parses `<epoch>:<seq>` (two decimal numbers).
    pub fn parse(text: &str) -> Option<Cursor> {
        let (epoch, seq) = text.trim().split_once(':')?;
        let number = |s: &str| {
            (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse().ok())
                .flatten()
        };
        Some(Cursor {
            epoch: number(epoch)?,
            seq: number(seq)?,
        })
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.epoch, self.seq)
    }
}

/// What a write did to a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeOp {
    /// A new version written whole (or unarchived, or changed outside the
    /// protocol: a flat folder's file saved, another process's write).
    Publish,
    /// A new version appended to the last.
    Append,
    /// The current version flagged archived.
    Archive,
    /// The document is gone (ours: a flat folder's file deleted).
    Remove,
    /// An op this crate does not know (clients ignore it).
    Other(String),
}

impl ChangeOp {
    /// The op as it stands on the wire.
    pub fn as_str(&self) -> &str {
        match self {
            ChangeOp::Publish => "publish",
            ChangeOp::Append => "append",
            ChangeOp::Archive => "archive",
            ChangeOp::Remove => "remove",
            ChangeOp::Other(s) => s,
        }
    }

    /// Parses a wire op.
    pub fn parse(text: &str) -> ChangeOp {
        match text {
            "publish" => ChangeOp::Publish,
            "append" => ChangeOp::Append,
            "archive" => ChangeOp::Archive,
            "remove" => ChangeOp::Remove,
            other => ChangeOp::Other(other.to_string()),
        }
    }
}

/// One change event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The cursor to resume after this event.
    pub cursor: Cursor,
    /// The changed document's request path (percent-encoded as on the wire).
    pub path: String,
    /// The document's version after the change (0 when it is gone).
    pub version: u64,
    /// `sha256-<hex>` of the new body as served; `None` when archived or gone.
    pub hash: Option<String>,
    /// What happened.
    pub op: ChangeOp,
    /// A label of the writer's token, never the token.
    pub agent: Option<String>,
}

/// One block of a watch stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchBlock {
    /// `status: ok`: the subscription stands; events follow this cursor.
    Ack(Cursor),
    /// `event: change`.
    Change(Change),
    /// `event: heartbeat`: the watch is alive and nothing changed.
    Heartbeat(Cursor),
    /// An event this crate does not know (clients ignore it).
    OtherEvent(Option<Cursor>),
    /// The terminal block: `resync` (rebuild and watch again from the
    /// cursor), `closing` (resume from the last cursor) or `unauthorized`.
    End(Status, Option<Cursor>),
}

impl WatchBlock {
    /// The block's bytes, fences included.
    pub fn encode(&self) -> Vec<u8> {
        let mut meta = Metadata::new();
        match self {
            WatchBlock::Ack(cursor) => {
                meta.insert("status", "ok");
                meta.insert("cursor", cursor.to_string());
            }
            WatchBlock::Change(c) => {
                meta.insert("event", "change");
                meta.insert("cursor", c.cursor.to_string());
                meta.insert("path", c.path.as_str());
                meta.insert("version", c.version.to_string());
                if let Some(hash) = &c.hash {
                    meta.insert("hash", hash.as_str());
                }
                meta.insert("op", c.op.as_str());
                if let Some(agent) = &c.agent {
                    meta.insert("agent", agent.as_str());
                }
            }
            WatchBlock::Heartbeat(cursor) => {
                meta.insert("event", "heartbeat");
                meta.insert("cursor", cursor.to_string());
            }
            WatchBlock::OtherEvent(cursor) => {
                meta.insert("event", "other");
                if let Some(c) = cursor {
                    meta.insert("cursor", c.to_string());
                }
            }
            WatchBlock::End(status, cursor) => {
                meta.insert("status", status.as_str());
                if let Some(c) = cursor {
                    meta.insert("cursor", c.to_string());
                }
            }
        }
        // Keys are fixed and valid; a path is a checked request path.
        let block = write_block(&meta).unwrap_or_default();
        format!("---\n{block}---\n").into_bytes()
    }

    /// Parses one whole block (fences included).
    pub fn parse(bytes: &[u8]) -> Result<WatchBlock, WireError> {
        if !bytes.starts_with(b"---\n") && !bytes.starts_with(b"---\r\n") {
            return Err(WireError::MissingFrontmatter);
        }
        let (meta, _) = split_optional_block(bytes, MAX_WATCH_BLOCK)?;
        let cursor = meta.get("cursor").and_then(Cursor::parse);
        let bad = |why: &str| WireError::BadBody {
            what: "WATCH",
            why: why.to_string(),
        };
        match (meta.get("event"), meta.get("status")) {
            (Some("change"), _) => Ok(WatchBlock::Change(Change {
                cursor: cursor.ok_or_else(|| bad("a change event has no cursor"))?,
                path: meta
                    .get("path")
                    .ok_or_else(|| bad("a change event has no path"))?
                    .to_string(),
                version: meta
                    .get("version")
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0),
                hash: meta.get("hash").map(str::to_string),
                op: ChangeOp::parse(meta.get("op").unwrap_or("publish")),
                agent: meta.get("agent").map(str::to_string),
            })),
            (Some("heartbeat"), _) => Ok(WatchBlock::Heartbeat(
                cursor.ok_or_else(|| bad("a heartbeat has no cursor"))?,
            )),
            (Some(_), _) => Ok(WatchBlock::OtherEvent(cursor)),
            (None, Some("ok")) => Ok(WatchBlock::Ack(
                cursor.ok_or_else(|| bad("the acknowledgement has no cursor"))?,
            )),
            (None, Some(status)) => Ok(WatchBlock::End(Status::parse(status), cursor)),
            (None, None) => Err(WireError::MissingStatus),
        }
    }
}

/// Splits a watch stream into blocks as its bytes arrive, holding at most
/// one block of [`MAX_WATCH_BLOCK`] bytes.
#[derive(Debug, Default)]
pub struct WatchDecoder {
    buf: Vec<u8>,
}

impl WatchDecoder {
    /// An empty decoder.
    pub fn new() -> WatchDecoder {
        WatchDecoder::default()
    }

    /// Adds bytes read from the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The bytes of the next whole block, taken out of the buffer;
    /// `Ok(None)` while it is incomplete; an error when the buffer does not
    /// start a block or the block passes [`MAX_WATCH_BLOCK`].
    pub fn next_bytes(&mut self) -> Result<Option<Vec<u8>>, WireError> {
        // Blank lines between blocks are insignificant.
        let lead = self
            .buf
            .iter()
            .take_while(|b| matches!(b, b'\n' | b'\r'))
            .count();
        self.buf.drain(..lead);
        if self.buf.is_empty() {
            return Ok(None);
        }
        let open = if self.buf.starts_with(b"---\n") {
            4
        } else if self.buf.starts_with(b"---\r\n") {
            5
        } else if b"---\r\n".starts_with(&self.buf[..self.buf.len().min(5)]) {
            return Ok(None);
        } else {
            return Err(WireError::MissingFrontmatter);
        };
        let mut line_start = open;
        while let Some(i) = self.buf[line_start..].iter().position(|&b| b == b'\n') {
            let end = line_start + i + 1;
            let line = &self.buf[line_start..line_start + i];
            if line.strip_suffix(b"\r").unwrap_or(line) == b"---" {
                if end > MAX_WATCH_BLOCK {
                    return Err(WireError::MetadataTooLarge(end));
                }
                return Ok(Some(self.buf.drain(..end).collect()));
            }
            line_start = end;
        }
        if self.buf.len() > MAX_WATCH_BLOCK {
            return Err(WireError::MetadataTooLarge(self.buf.len()));
        }
        Ok(None)
    }

    /// The next whole block, parsed (see [`WatchDecoder::next_bytes`]).
    pub fn next_block(&mut self) -> Result<Option<WatchBlock>, WireError> {
        self.next_bytes()?
            .map(|bytes| WatchBlock::parse(&bytes))
            .transpose()
    }

    /// The bytes received and not yet taken as a block.
    pub fn pending(&self) -> &[u8] {
        &self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor(seq: u64) -> Cursor {
        Cursor { epoch: 7, seq }
    }

    #[test]
    fn cursors_round_trip_and_refuse_what_is_not_two_numbers() {
        assert_eq!(Cursor::parse("7:42"), Some(cursor(42)));
        assert_eq!(cursor(42).to_string(), "7:42");
        for bad in ["", "7", "7:", ":4", "a:1", "1:-2", "1:2:3"] {
            assert_eq!(Cursor::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn every_block_round_trips() {
        let blocks = [
            WatchBlock::Ack(cursor(0)),
            WatchBlock::Change(Change {
                cursor: cursor(3),
                path: "/ops/deploy%20plan.md".into(),
                version: 4,
                hash: Some(format!("sha256-{}", "a".repeat(64))),
                op: ChangeOp::Append,
                agent: Some("ci".into()),
            }),
            WatchBlock::Change(Change {
                cursor: cursor(4),
                path: "/gone.md".into(),
                version: 0,
                hash: None,
                op: ChangeOp::Remove,
                agent: None,
            }),
            WatchBlock::Heartbeat(cursor(4)),
            WatchBlock::End(Status::Other("resync".into()), Some(cursor(4))),
            WatchBlock::End(Status::Unauthorized, None),
        ];
        for block in blocks {
            let bytes = block.encode();
            assert!(bytes.len() <= MAX_WATCH_BLOCK);
            assert_eq!(WatchBlock::parse(&bytes).unwrap(), block);
        }
    }

    #[test]
    fn unknown_ops_and_events_are_kept_not_refused() {
        let block = WatchBlock::parse(
            b"---\nevent: change\ncursor: \"1:2\"\npath: /a.md\nversion: \"2\"\nop: move\n---\n",
        )
        .unwrap();
        assert!(
            matches!(block, WatchBlock::Change(Change { op: ChangeOp::Other(ref o), .. }) if o == "move")
        );
        let block = WatchBlock::parse(b"---\nevent: rename\ncursor: 1:3\n---\n").unwrap();
        assert_eq!(
            block,
            WatchBlock::OtherEvent(Some(Cursor { epoch: 1, seq: 3 }))
        );
    }

    #[test]
    fn the_decoder_takes_blocks_in_any_split_and_bounds_them() {
        let stream: Vec<u8> = [
            WatchBlock::Ack(cursor(0)).encode(),
            WatchBlock::Heartbeat(cursor(0)).encode(),
            WatchBlock::End(Status::Other("closing".into()), Some(cursor(0))).encode(),
        ]
        .concat();
        for split in 0..stream.len() {
            let mut decoder = WatchDecoder::new();
            let mut got = Vec::new();
            for part in [&stream[..split], &stream[split..]] {
                decoder.push(part);
                while let Some(block) = decoder.next_block().unwrap() {
                    got.push(block);
                }
            }
            assert_eq!(got.len(), 3, "split at {split}");
            assert!(decoder.pending().is_empty());
        }
        let mut decoder = WatchDecoder::new();
        decoder.push(b"---\n");
        decoder.push(&vec![b'a'; MAX_WATCH_BLOCK]);
        assert!(decoder.next_block().is_err());
        let mut decoder = WatchDecoder::new();
        decoder.push(b"# not a block\n");
        assert!(decoder.next_block().is_err());
    }
}
