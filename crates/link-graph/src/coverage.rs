//! How complete the graph is, and the one way every caller says it.

use std::fmt;

/// How much of the source the graph has indexed: read it before showing a backlink count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coverage {
    /// Documents indexed (their links are in the graph).
    pub indexed: usize,
    /// Documents known to exist (listed by the crawler, or indexed): a lower bound of the
    /// source's total. `None` while the crawler has listed nothing.
    pub known: Option<usize>,
    /// The crawler finished within its bounds and every known document is indexed.
    pub complete: bool,
    /// The graph's byte bound (in bytes) if it has refused a document's links: then some
    /// links are missing for good in this graph, whatever the crawl does.
    pub bound_reached: Option<usize>,
}

impl Coverage {
    /// The parenthesised note that goes after "Backlinks" on a card, for `count` backlinks:
    ///
    /// - `(12; graph complete)`
    /// - `(3 so far; graph partial: 120 of ≥300 documents)`
    /// - `(3 so far; graph partial: all 53 listed documents read, but the listings did not say whether they are whole)`
    /// - `(3 so far; graph partial: 120 documents, total unknown)`
    /// - `(none known; graph not built yet: no documents indexed)`: never a bare 0.
    pub fn backlinks_note(&self, count: usize) -> String {
        if self.complete {
            format!("({count}; {self})")
        } else if self.indexed == 0 {
            format!("(none known; {self})")
        } else {
            format!("({count} so far; {self})")
        }
    }
}

/// `graph complete`, `graph partial: 120 of ≥300 documents`,
/// `graph partial: 120 documents, total unknown` or `graph not built yet: no documents indexed`;
/// once the byte bound refused a document, `(memory bound of 32 MiB reached)` follows.
impl fmt::Display for Coverage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_state(f)?;
        match self.bound_reached {
            Some(bound) => write!(f, " (memory bound of {} reached)", mib_text(bound)),
            None => Ok(()),
        }
    }
}

/// `32 MiB`, `1.5 MiB`, `4096 bytes`.
fn mib_text(bytes: usize) -> String {
    const MIB: usize = 1 << 20;
    match bytes {
        b if b >= MIB && b % MIB == 0 => format!("{} MiB", b / MIB),
        b if b >= MIB => format!("{:.1} MiB", b as f64 / MIB as f64),
        b => format!("{b} bytes"),
    }
}

impl Coverage {
    fn fmt_state(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Coverage { complete: true, .. } => f.write_str("graph complete"),
            Coverage { indexed: 0, .. } => f.write_str("graph not built yet: no documents indexed"),
            // Every document listed is read: what is unknown is whether the
            // listings were whole (a server that does not page LIST says
            // nothing of it; a failed or cut listing names less).
            Coverage {
                indexed,
                known: Some(known),
                ..
            } if known <= indexed => write!(
                f,
                "graph partial: all {indexed} listed documents read, but the listings did not say whether they are whole"
            ),
            Coverage {
                indexed,
                known: Some(known),
                ..
            } => write!(f, "graph partial: {indexed} of ≥{known} documents"),
            Coverage {
                indexed,
                known: None,
                ..
            } => write!(f, "graph partial: {indexed} documents, total unknown"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_renders_its_own_words() {
        let complete = Coverage {
            indexed: 64,
            known: Some(64),
            complete: true,
            bound_reached: None,
        };
        assert_eq!(complete.backlinks_note(12), "(12; graph complete)");
        assert_eq!(complete.backlinks_note(0), "(0; graph complete)");

        let partial = Coverage {
            indexed: 120,
            known: Some(300),
            complete: false,
            bound_reached: None,
        };
        assert_eq!(
            partial.backlinks_note(3),
            "(3 so far; graph partial: 120 of ≥300 documents)"
        );

        // #28.6: all listed documents read, the listings' completeness unknown.
        let all_listed = Coverage {
            indexed: 53,
            known: Some(53),
            complete: false,
            bound_reached: None,
        };
        assert_eq!(
            all_listed.backlinks_note(4),
            "(4 so far; graph partial: all 53 listed documents read, but the listings did not say whether they are whole)"
        );

        let unlisted = Coverage {
            indexed: 5,
            known: None,
            complete: false,
            bound_reached: None,
        };
        assert_eq!(
            unlisted.backlinks_note(0),
            "(0 so far; graph partial: 5 documents, total unknown)"
        );
    }

    #[test]
    fn a_reached_memory_bound_is_said_after_the_state() {
        let bounded = Coverage {
            indexed: 120,
            known: Some(300),
            complete: false,
            bound_reached: Some(32 << 20),
        };
        assert_eq!(
            bounded.backlinks_note(3),
            "(3 so far; graph partial: 120 of ≥300 documents (memory bound of 32 MiB reached))"
        );
        assert_eq!(mib_text(3 << 19), "1.5 MiB");
        assert_eq!(mib_text(4096), "4096 bytes");
    }

    #[test]
    fn an_unbuilt_graph_never_says_zero() {
        for known in [None, Some(300)] {
            let empty = Coverage {
                indexed: 0,
                known,
                complete: false,
                bound_reached: None,
            };
            let note = empty.backlinks_note(0);
            assert_eq!(
                note,
                "(none known; graph not built yet: no documents indexed)"
            );
            assert!(!note.contains('0'));
        }
    }
}
