//! Deliveries are recorded only when their answer goes out. rmcp answers a
//! `notifications/cancelled` by forgetting the request, and drops its
//! response even when the handler had already finished: a fetch that
//! recorded its text as delivered would then make the next call answer
//! `unchanged` for text the agent never received. So a tool call collects
//! what it sends ([`collect`]); the server holds that under the request id
//! ([`Outbox::hold`]); and [`DeliveryTransport`], which sees every message
//! in and out, commits it to the session's log when the response is
//! written, or forgets it when the cancellation comes first. rmcp handles
//! one message at a time in its loop, so for one request either the
//! response is written or the cancellation seen first, never both.
//!
//! Outside a collecting call (the CLI's one-shot verbs, library use) a
//! delivery is committed at once.

use crate::dedup::Delivery;
use crate::session::Session;
use markdown_slice::SectionHashes;
use rmcp::RoleServer;
use rmcp::model::{ClientNotification, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A delivery of the session's log.
pub type SessionDelivery = Delivery<Arc<SectionHashes>>;

tokio::task_local! {
    /// The deliveries of the tool call running on this task.
    static SENDING: RefCell<Vec<SessionDelivery>>;
}

/// Runs `work`, collecting the deliveries it makes (see [`deliver`])
/// instead of committing them.
pub async fn collect<T>(work: impl Future<Output = T>) -> (T, Vec<SessionDelivery>) {
    SENDING
        .scope(RefCell::new(Vec::new()), async move {
            let out = work.await;
            (out, SENDING.with(RefCell::take))
        })
        .await
}

/// Records that `delivery` is part of the answer being made: held until
/// the answer goes out inside [`collect`], committed at once outside it.
pub fn deliver(session: &Session, delivery: SessionDelivery) {
    let mut delivery = Some(delivery);
    let _outside = SENDING.try_with(|sending| {
        if let Some(d) = delivery.take() {
            sending.borrow_mut().push(d);
        }
    });
    if let Some(d) = delivery {
        session.log().commit(d);
    }
}

/// Where each request in progress stands.
#[derive(Debug)]
enum Call {
    /// Received; its handler has not answered.
    Running,
    /// Answered with these deliveries; the response is not written yet.
    Answered(Vec<SessionDelivery>),
}

/// The deliveries of answered requests, until their responses go out.
#[derive(Debug)]
pub struct Outbox {
    session: Arc<Session>,
    calls: Mutex<HashMap<RequestId, Call>>,
}

impl Outbox {
    /// An empty outbox committing into `session`'s log.
    pub fn new(session: Arc<Session>) -> Outbox {
        Outbox {
            session,
            calls: Mutex::new(HashMap::new()),
        }
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Call>> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A request came in.
    fn started(&self, id: RequestId) {
        self.calls().insert(id, Call::Running);
    }

    /// The handler of request `id` answered with `deliveries`. A request
    /// cancelled meanwhile (or never seen) gets no response: they are dropped.
    pub fn hold(&self, id: &RequestId, deliveries: Vec<SessionDelivery>) {
        if let Some(call) = self.calls().get_mut(id) {
            *call = Call::Answered(deliveries);
        }
    }

    /// The client cancelled request `id`: whatever it answered is dropped.
    fn cancelled(&self, id: &RequestId) {
        self.calls().remove(id);
    }

    /// The response to request `id` is being written: its deliveries count.
    fn sent(&self, id: &RequestId) {
        let Some(Call::Answered(deliveries)) = self.calls().remove(id) else {
            return;
        };
        let mut log = self.session.log();
        for d in deliveries {
            log.commit(d);
        }
    }
}

/// A transport that tells an [`Outbox`] what goes in and out.
pub struct DeliveryTransport<T> {
    inner: T,
    outbox: Arc<Outbox>,
}

impl<T> DeliveryTransport<T> {
    /// Wraps `inner`, reporting to `outbox`.
    pub fn new(inner: T, outbox: Arc<Outbox>) -> DeliveryTransport<T> {
        DeliveryTransport { inner, outbox }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for DeliveryTransport<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Committed as the message is handed over, in rmcp's loop, before
        // it reads the next message (which may be a cancellation).
        match &item {
            JsonRpcMessage::Response(r) => self.outbox.sent(&r.id),
            JsonRpcMessage::Error(e) => {
                if let Some(id) = &e.id {
                    self.outbox.sent(id);
                }
            }
            _ => {}
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let message = self.inner.receive().await?;
        match &message {
            JsonRpcMessage::Request(r) => self.outbox.started(r.id.clone()),
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    self.outbox.cancelled(id);
                }
            }
            _ => {}
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dedup::{Decision, Identity, Page, Slice, Wanted};
    use crate::settings::Settings;
    use crate::sources::LocalSource;
    use std::path::Path;
    use std::time::Instant;

    fn session() -> Arc<Session> {
        let kb = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/mcp/kb");
        Arc::new(Session::new(
            Arc::new(LocalSource::open(&kb, false).unwrap()),
            Settings::default(),
        ))
    }

    fn delivery(now: Instant) -> SessionDelivery {
        Delivery::Doc {
            path: "/a.md".into(),
            part: Some((Slice::Body, Page::WHOLE)),
            identity: identity(),
            snapshot: Arc::default(),
            at: now,
        }
    }

    fn identity() -> Identity {
        Identity {
            version: Some("1".into()),
            etag: Some("e".into()),
        }
    }

    fn has_it(session: &Session, now: Instant) -> bool {
        let wanted = Wanted {
            slice: &Slice::Body,
            within: &[],
            page: Page::WHOLE,
        };
        let decision = session
            .log()
            .check("/a.md", &wanted, &identity(), false, now);
        matches!(decision, Decision::Unchanged { .. })
    }

    #[tokio::test]
    async fn a_delivery_counts_when_its_response_goes_out_not_before() {
        let now = Instant::now();
        let session = session();
        let outbox = Outbox::new(Arc::clone(&session));
        let id = RequestId::Number(7);
        outbox.started(id.clone());
        let ((), held) = collect(async { deliver(&session, delivery(now)) }).await;
        assert_eq!(held.len(), 1);
        assert!(!has_it(&session, now), "collected, not committed");
        outbox.hold(&id, held);
        assert!(!has_it(&session, now), "answered, not sent");
        outbox.sent(&id);
        assert!(has_it(&session, now));
    }

    #[tokio::test]
    async fn a_cancellation_before_the_response_drops_the_delivery() {
        let now = Instant::now();
        for cancel_before_answer in [false, true] {
            let session = session();
            let outbox = Outbox::new(Arc::clone(&session));
            let id = RequestId::Number(1);
            outbox.started(id.clone());
            if cancel_before_answer {
                outbox.cancelled(&id);
            }
            outbox.hold(&id, vec![delivery(now)]);
            outbox.cancelled(&id);
            // rmcp drops the response; had it been written, nothing is held.
            outbox.sent(&id);
            assert!(!has_it(&session, now), "{cancel_before_answer}");
            assert!(outbox.calls().is_empty());
        }
        // Outside a tool call, a delivery counts at once.
        let session = session();
        deliver(&session, delivery(now));
        assert!(has_it(&session, now));
    }
}
