//! WATCH from the client's side: open a watch on the shared connection,
//! take its acknowledgement (or the ordinary response refusing it) within
//! the request timeout, then read its blocks one at a time for as long as
//! the caller wants. Dropping the stream cancels the watch.

use crate::client::{Client, connection_lost, deadline_after};
use crate::error::ClientError;
use mark_proto::watch::{Cursor, WatchBlock, WatchDecoder};
use mark_proto::{Request, Response, Status, Verb};
use quinn::{ReadError, RecvStream, SendStream, VarInt};

/// How a WATCH request was answered.
#[derive(Debug)]
pub enum WatchStart {
    /// The watch stands; read its blocks from the stream.
    Watching(WatchStream),
    /// An ordinary response instead (`not-found`, `unauthorized`,
    /// `not-permitted`, `bad-request`, or a server before WATCH:
    /// `server-error` with `bad request`).
    Refused(Response),
}

/// An open watch. Dropping it resets the stream, which ends the watch on
/// the server.
#[derive(Debug)]
pub struct WatchStream {
    send: SendStream,
    recv: RecvStream,
    decoder: WatchDecoder,
    ack: Cursor,
    done: bool,
}

impl Client {
    /// Opens `WATCH path` on `host:port` (from `since` when it resumes),
    /// on the connection every request shares; the acknowledgement or the
    /// refusal comes within `request_timeout`. Blocks then come as they are
    /// sent, with no deadline: the caller judges the heartbeats.
    pub async fn watch(
        &self,
        host: &str,
        port: u16,
        path: &str,
        since: Option<Cursor>,
    ) -> Result<WatchStart, ClientError> {
        let mut request = Request::new(Verb::Watch, path);
        if let Some(cursor) = since {
            request = request.with_meta("since", cursor.to_string());
        }
        let bytes = self
            .with_token(request)
            .encode()
            .map_err(ClientError::Encode)?;
        let timeout = self.config().request_timeout;
        let deadline = deadline_after(timeout);
        let cap = self.config().max_response_bytes;
        let opening = async {
            let connection = self.connection(host, port, deadline).await?;
            let (mut send, mut recv) = connection.open_bi().await.map_err(connection_lost)?;
            send.write_all(&bytes)
                .await
                .map_err(|e| ClientError::ConnectionLost {
                    reason: e.to_string(),
                })?;
            let _ = send.finish();
            let mut decoder = WatchDecoder::new();
            let first = loop {
                if let Some(block) = decoder.next_bytes().map_err(ClientError::Malformed)? {
                    break block;
                }
                match read_some(&mut recv).await? {
                    Some(chunk) => decoder.push(&chunk),
                    None if decoder.pending().is_empty() => return Err(ClientError::NoAnswer),
                    None => {
                        return Err(ClientError::Malformed(
                            mark_proto::WireError::UnclosedMetadata,
                        ));
                    }
                }
            };
            match WatchBlock::parse(&first) {
                Ok(WatchBlock::Ack(ack)) => Ok(WatchStart::Watching(WatchStream {
                    send,
                    recv,
                    decoder,
                    ack,
                    done: false,
                })),
                _ => {
                    // An ordinary response: its first block, and its body.
                    let mut whole = first;
                    whole.extend_from_slice(decoder.pending());
                    while let Some(chunk) = read_some(&mut recv).await? {
                        whole.extend_from_slice(&chunk);
                        if whole.len() > cap {
                            return Err(ClientError::TooLarge {
                                cap,
                                verb: Verb::Watch,
                            });
                        }
                    }
                    Response::parse(&whole)
                        .map(WatchStart::Refused)
                        .map_err(ClientError::Malformed)
                }
            }
        };
        tokio::time::timeout_at(deadline, opening)
            .await
            .map_err(|_| ClientError::RequestTimeout { timeout })?
    }
}

impl WatchStream {
    /// Where the watch started (the acknowledgement's cursor).
    pub fn ack(&self) -> Cursor {
        self.ack
    }

    /// The next block; `Ok(None)` once the server finished the stream.
    /// No deadline: race it with the caller's own clock.
    pub async fn next(&mut self) -> Result<Option<WatchBlock>, ClientError> {
        loop {
            if let Some(block) = self.decoder.next_block().map_err(ClientError::Malformed)? {
                return Ok(Some(block));
            }
            if self.done {
                return Ok(None);
            }
            match read_some(&mut self.recv).await? {
                Some(chunk) => self.decoder.push(&chunk),
                None => {
                    self.done = true;
                    if !self.decoder.pending().is_empty() {
                        return Err(ClientError::Malformed(
                            mark_proto::WireError::UnclosedMetadata,
                        ));
                    }
                }
            }
        }
    }
}

impl Drop for WatchStream {
    fn drop(&mut self) {
        let _ = self.send.reset(VarInt::from_u32(0));
        let _ = self.recv.stop(VarInt::from_u32(0));
    }
}

/// The next chunk of a stream; `None` at its end.
async fn read_some(recv: &mut RecvStream) -> Result<Option<Vec<u8>>, ClientError> {
    match recv
        .read_chunk(mark_proto::watch::MAX_WATCH_BLOCK, true)
        .await
    {
        Ok(Some(chunk)) => Ok(Some(chunk.bytes.to_vec())),
        Ok(None) => Ok(None),
        Err(ReadError::Reset(code)) => Err(ClientError::StreamReset {
            code: code.into_inner(),
        }),
        Err(ReadError::ConnectionLost(e)) => Err(connection_lost(e)),
        Err(other) => Err(ClientError::ConnectionLost {
            reason: other.to_string(),
        }),
    }
}

/// Whether a refusal says the server has no WATCH (or none for this
/// token's scope), so the caller should revalidate instead of watching:
/// `bad-request`, `not-permitted`, or `server-error` whose message is
/// `bad request` (a demarkus server before WATCH).
pub fn lacks_watch(response: &Response) -> bool {
    match response.status {
        Status::BadRequest | Status::NotPermitted => true,
        Status::ServerError => response.error_message().eq_ignore_ascii_case("bad request"),
        _ => false,
    }
}
