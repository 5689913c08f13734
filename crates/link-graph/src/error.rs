//! Typed errors of the graph and the crawl planner.

/// Why the graph refused an input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    /// A document path is not in the canonical form the graph keys on.
    #[error(
        "`{path}` is not a canonical document path ({reason}); pass an absolute path like `/dir/doc.md`, resolved with markdown-slice's `resolve`"
    )]
    NotCanonical {
        /// The path as given (cut to 200 bytes).
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The graph ran out of 32-bit identifiers or offsets.
    #[error(
        "the link graph is full ({what} exceed 32-bit indexes); start a new session or lower the crawl limits"
    )]
    Full {
        /// Which table overflowed.
        what: &'static str,
    },
    /// Indexing the document would take the graph past its byte bound
    /// ([`LinkGraph::with_byte_bound`](crate::LinkGraph::with_byte_bound)).
    #[error(
        "the link graph reached its memory bound of {bound} bytes, so this document's links are not kept; raise the bound or lower the crawl limits"
    )]
    OverBound {
        /// The bound, in bytes.
        bound: usize,
    },
}

/// Why the crawl planner refused a report from its driver.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The driver reported a result for a step the planner never handed out (or already closed).
    #[error(
        "no crawl step for `{0}` is in flight; report each step the planner hands out exactly once"
    )]
    NotInFlight(String),
    /// The crawl root is not an absolute directory path.
    #[error("crawl root `{0}` must be an absolute path starting with `/`")]
    BadRoot(String),
}
