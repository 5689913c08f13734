//! MCP resource subscriptions (`resources/subscribe`): the client names a
//! document's resource URI, and when the session's change feed hears that
//! document change, `notifications/resources/updated` goes out with that
//! URI. One forwarder per server, started at the first subscription.

use crate::change_feed::FeedHint;
use crate::session::Session;
use rmcp::{Peer, RoleServer};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The subscribed URIs by document key.
#[derive(Debug, Default)]
pub struct Subscriptions {
    uris: Mutex<HashMap<String, BTreeSet<String>>>,
    forwarding: AtomicBool,
}

impl Subscriptions {
    fn uris(&self) -> std::sync::MutexGuard<'_, HashMap<String, BTreeSet<String>>> {
        self.uris.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Subscribes `uri` (a document of `session`'s source, `#anchor`
    /// allowed: the document's change is what is told); the first
    /// subscription starts forwarding the feed's changes to `peer`.
    pub fn subscribe(
        self: &Arc<Self>,
        session: &Arc<Session>,
        uri: &str,
        peer: Peer<RoleServer>,
    ) -> Result<(), String> {
        let target = session.resolve(uri)?;
        self.uris()
            .entry(target.path)
            .or_default()
            .insert(uri.to_string());
        if !self.forwarding.swap(true, Ordering::Relaxed) {
            let hints = session.feed().listen();
            tokio::spawn(forward(Arc::downgrade(self), hints, peer));
        }
        Ok(())
    }

    /// Ends the subscription of `uri`.
    pub fn unsubscribe(&self, session: &Session, uri: &str) {
        if let Ok(target) = session.resolve(uri) {
            let mut uris = self.uris();
            if let Some(set) = uris.get_mut(&target.path) {
                set.remove(uri);
                if set.is_empty() {
                    uris.remove(&target.path);
                }
            }
        }
    }

    fn subscribed(&self, path: &str) -> Vec<String> {
        self.uris()
            .get(path)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// Tells `peer` of each change to a subscribed document, until the server
/// or the client goes.
async fn forward(
    subscriptions: std::sync::Weak<Subscriptions>,
    mut hints: tokio::sync::mpsc::UnboundedReceiver<FeedHint>,
    peer: Peer<RoleServer>,
) {
    while let Some(hint) = hints.recv().await {
        let FeedHint::Changed(path) = hint else {
            continue;
        };
        let Some(live) = subscriptions.upgrade() else {
            return;
        };
        for uri in live.subscribed(&path) {
            let updated = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
            if peer.notify_resource_updated(updated).await.is_err() {
                return;
            }
        }
    }
}
