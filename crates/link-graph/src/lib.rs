//! The per-session link graph of a markdown knowledge base, as a pure library.
//!
//! mark-mcp keeps one [`LinkGraph`] per session, behind a `RwLock`, and fills it from a
//! bounded crawl of the source and from every document the session fetches; `mark_explore`
//! reads a document's [backlinks](LinkGraph::backlinks) and [outbound links](LinkGraph::outbound)
//! from it, with a [`Coverage`] note saying how complete the graph is.
//!
//! - Documents are keyed by canonical path (`/dir/doc.md`), interned once as `u32` ids.
//!   Each holds its etag, title and outbound edges: the section anchor holding the link,
//!   the link text (one line, at most [`MAX_LINK_TEXT_BYTES`]), and the target document with
//!   its fragment, or an external URL. External links are outbound only; images and links
//!   from a document to itself are not edges.
//! - [`LinkGraph::index_document`] takes a markdown-slice [`Document`](markdown_slice::Document)
//!   (edges from [`document_edges`]); [`LinkGraph::update`] takes edges made elsewhere. Either
//!   replaces a document's edges when its etag changed and is a no-op otherwise; the backlink
//!   index follows.
//! - [`CrawlPlan`] decides which LIST and FETCH come next within bounds on documents, bytes,
//!   time and requests in flight; the driver does the I/O (the way quinn-proto leaves sockets
//!   to quinn).
//!
//! It is not a crawler (no sockets, no async runtime, no clock: time comes in as a
//! parameter), not a cache of bodies, and not a markdown parser.

mod coverage;
mod crawl;
mod error;
mod extract;
mod graph;
mod names;
mod paths;
mod text;

pub use coverage::Coverage;
pub use crawl::{
    CrawlLimits, CrawlOutcome, CrawlPlan, CrawlStep, DEFAULT_MAX_LISTINGS, StopReason,
};
pub use error::{GraphError, PlanError};
pub use extract::document_edges;
pub use graph::{Backlink, Edge, LinkGraph, LinkTarget, NoteName, OutboundLink, UpdateOutcome};
pub use paths::check_canonical;
pub use text::{MAX_LINK_TEXT_BYTES, MAX_TITLE_BYTES};
