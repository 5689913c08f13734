//! The stale-context note (DESIGN.md wave-3 rule 4): one line closing any
//! tool result that names the documents this session delivered (its read
//! set: the delivery log) that changed since, each once per change, with
//! the sections the agent read that changed when the log still holds their
//! old hashes: `changed since you read: /ops/deploy.md#rollback (v3 → v4),
//! /plan.md (deleted) +2 more; mark_fetch them again to see`.
//!
//! A change waits in the change feed until a note tells it. Before it is
//! named, the document is loaded once (a conditional FETCH at most, or the
//! cache the feed keeps current) and compared with what was delivered: the
//! same identity, one this session wrote, or one already told is not news,
//! nor a change to sections the agent never read. A change this result
//! re-delivers is not noted; a note that does not fit the result's bound
//! is not told and stays pending.

use crate::dedup::{Identity, Slice};
use crate::outbox::SessionDelivery;
use crate::result::Built;
use crate::session::{Loaded, Session};
use markdown_slice::SectionHashes;
use std::sync::Arc;
use std::time::Instant;

/// The longest note, in bytes.
pub const MAX_NOTE_BYTES: usize = 400;
/// Documents checked (loaded) for one note at most; the rest wait.
const CHECKED_PER_NOTE: usize = 16;
/// Changed anchors named per document at most.
const ANCHORS_NAMED: usize = 3;

const OPENING: &str = "changed since you read: ";
const CLOSING: &str = "; mark_fetch them again to see";

/// What a gone document is told as (it has no identity to compare).
fn gone() -> Identity {
    Identity {
        version: None,
        etag: Some("gone".into()),
    }
}

/// One change found to be news.
struct News {
    path: String,
    /// `#a, #b` or empty (the document only).
    anchors: String,
    /// `v3 → v4`, `deleted`, `changed on disk`.
    step: String,
    identity: Identity,
    hashes: Option<Arc<SectionHashes>>,
}

impl News {
    fn render(&self) -> String {
        format!("{}{} ({})", self.path, self.anchors, self.step)
    }
}

/// `t` closed with the note of what changed, when there is news and it
/// fits; what it tells is marked told, what the result re-delivers settled.
pub async fn close(
    session: &Session,
    t: crate::envelope::ToolText,
    delivered_now: &[SessionDelivery],
) -> crate::envelope::ToolText {
    let pending: Vec<String> = session.feed().pending().map(str::to_string).collect();
    if pending.is_empty() {
        return t;
    }
    let now = Instant::now();
    let mut news = Vec::new();
    for path in pending.into_iter().take(CHECKED_PER_NOTE) {
        let redelivered = delivered_now.iter().any(|d| match d {
            crate::dedup::Delivery::Doc { path: p, .. } => *p == path,
            crate::dedup::Delivery::Answer { .. } => false,
        });
        if redelivered {
            session.feed().redelivered(&path);
            continue;
        }
        match check(session, &path, now).await {
            Some(Some(item)) => news.push(item),
            Some(None) => session.feed().settle(&path),
            None => {}
        }
    }
    let Some(line) = render(&news) else {
        return t;
    };
    let bound = crate::bound::result_bound(session.settings().page_bytes);
    match Built::close_with(t, &line, bound) {
        Ok(closed) => {
            let mut feed = session.feed();
            for item in news {
                feed.told(&item.path, item.identity, item.hashes);
            }
            closed
        }
        Err(t) => t,
    }
}

/// Whether `path`'s change is news: `Some(Some(news))`, `Some(None)` when
/// it is not (settle it), `None` when it cannot be told now (the source
/// did not answer: it waits).
async fn check(session: &Session, path: &str, now: Instant) -> Option<Option<News>> {
    let Some(read) = session.log().last_read(path, now) else {
        return Some(None);
    };
    let doc = match session.load(path, now).await {
        Loaded::Doc(doc) => doc,
        Loaded::Answer(t) if matches!(t.status.as_str(), "not-found" | "archived") => {
            if session.feed().already_known(path, &gone()) {
                return Some(None);
            }
            let step = if t.status == "archived" {
                "archived"
            } else {
                "deleted"
            };
            return Some(Some(News {
                path: path.to_string(),
                anchors: String::new(),
                step: step.to_string(),
                identity: gone(),
                hashes: None,
            }));
        }
        Loaded::Answer(_) => return None,
    };
    let current = &doc.identity;
    if read == *current || session.feed().already_known(path, current) {
        return Some(None);
    }
    // The base: what was told last since the read, else what was read.
    let (base, old) = match session.feed().told_state(path) {
        Some((told, hashes)) => (told, hashes),
        None => match session.log().changed_from(path, current, now) {
            Some((read, hashes)) => (read, hashes),
            None => (read, None),
        },
    };
    let slices = session.log().slices_read(path, now);
    let mut anchors = Vec::new();
    if let Some(old) = &old {
        let diff = markdown_slice::diff_sections(old, &doc.hashes);
        let moved: Vec<&String> = diff.changed.iter().chain(&diff.removed).collect();
        let whole = slices.contains(&Slice::Body) || slices.is_empty();
        anchors = moved
            .into_iter()
            .filter(|a| {
                whole
                    || slices
                        .iter()
                        .any(|s| matches!(s, Slice::Section(r) if r == *a))
            })
            .cloned()
            .collect();
        if anchors.is_empty() && !whole {
            // Only sections the agent never read changed: not news to it.
            return Some(None);
        }
    }
    let step = if base.version.is_some() && base.version != current.version {
        format!(
            "v{} → v{}",
            base.version.as_deref().unwrap_or("?"),
            current.version.as_deref().unwrap_or("?")
        )
    } else {
        "changed on disk".to_string()
    };
    let more = anchors.len().saturating_sub(ANCHORS_NAMED);
    let mut named: Vec<String> = anchors
        .iter()
        .take(ANCHORS_NAMED)
        .map(|a| format!("#{a}"))
        .collect();
    if more > 0 {
        named.push(format!("+{more}"));
    }
    Some(Some(News {
        path: path.to_string(),
        anchors: named.join(", "),
        step,
        identity: current.clone(),
        hashes: Some(Arc::clone(&doc.hashes)),
    }))
}

/// The note's line within [`MAX_NOTE_BYTES`]: as many items as fit, the
/// rest counted (`+2 more`); `None` without news.
fn render(news: &[News]) -> Option<String> {
    if news.is_empty() {
        return None;
    }
    let mut shown: Vec<String> = Vec::new();
    for (i, item) in news.iter().enumerate() {
        let text = item.render();
        let rest = news.len() - i - 1;
        let tail = if rest > 0 {
            format!(" +{rest} more")
        } else {
            String::new()
        };
        let len = OPENING.len()
            + shown.iter().map(|s| s.len() + 2).sum::<usize>()
            + text.len()
            + tail.len()
            + CLOSING.len();
        if len > MAX_NOTE_BYTES {
            break;
        }
        shown.push(text);
    }
    let more = news.len() - shown.len();
    if shown.is_empty() {
        return Some(format!("{OPENING}{} documents{CLOSING}", news.len()));
    }
    let tail = if more > 0 {
        format!(" +{more} more")
    } else {
        String::new()
    };
    Some(format!("{OPENING}{}{tail}{CLOSING}", shown.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(path: &str, anchors: &str, step: &str) -> News {
        News {
            path: path.into(),
            anchors: anchors.into(),
            step: step.into(),
            identity: Identity::default(),
            hashes: None,
        }
    }

    #[test]
    fn the_note_names_what_fits_and_counts_the_rest() {
        let line = render(&[
            item("/ops/deploy.md", "#rollback", "v3 → v4"),
            item("/plan.md", "", "deleted"),
        ])
        .unwrap();
        assert_eq!(
            line,
            "changed since you read: /ops/deploy.md#rollback (v3 → v4), /plan.md (deleted); mark_fetch them again to see"
        );
        let burst: Vec<News> = (0..10_000)
            .map(|i| item(&format!("/notes/n{i}.md"), "", "changed on disk"))
            .collect();
        let line = render(&burst).unwrap();
        assert!(line.len() <= MAX_NOTE_BYTES, "{}", line.len());
        assert!(line.contains(" more; mark_fetch"), "{line}");
        let long = [item(&format!("/{}.md", "x".repeat(500)), "", "v1 → v2")];
        assert!(render(&long).unwrap().len() <= MAX_NOTE_BYTES);
        assert_eq!(render(&[]), None);
    }
}
