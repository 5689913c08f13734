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
}

impl Coverage {
    /// The parenthesised note that goes after "Backlinks" on a card, for `count` backlinks:
    ///
    /// - `(12; graph complete)`
    /// - `(3 so far; graph partial: 120 of ≥300 documents)`
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
/// `graph partial: 120 documents, total unknown` or `graph not built yet: no documents indexed`.
impl fmt::Display for Coverage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Coverage { complete: true, .. } => f.write_str("graph complete"),
            Coverage { indexed: 0, .. } => f.write_str("graph not built yet: no documents indexed"),
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
        };
        assert_eq!(complete.backlinks_note(12), "(12; graph complete)");
        assert_eq!(complete.backlinks_note(0), "(0; graph complete)");

        let partial = Coverage {
            indexed: 120,
            known: Some(300),
            complete: false,
        };
        assert_eq!(
            partial.backlinks_note(3),
            "(3 so far; graph partial: 120 of ≥300 documents)"
        );

        let unlisted = Coverage {
            indexed: 5,
            known: None,
            complete: false,
        };
        assert_eq!(
            unlisted.backlinks_note(0),
            "(0 so far; graph partial: 5 documents, total unknown)"
        );
    }

    #[test]
    fn an_unbuilt_graph_never_says_zero() {
        for known in [None, Some(300)] {
            let empty = Coverage {
                indexed: 0,
                known,
                complete: false,
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
