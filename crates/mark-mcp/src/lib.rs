//! mark-mcp: an MCP server and CLI that reads markdown knowledge from a Mark
//! Protocol server or a local folder, and spends the agent's tokens well:
//! small documents whole, large ones as outlines, sections by anchor, and
//! one line instead of text the session already read.
//!
//! Layers, bottom up: a [`source::Source`] answers Mark Protocol requests
//! (in process over `mark-store`, or over QUIC with `mark-client`: see
//! [`sources`]); a
//! [`session::Session`] keeps the document cache ([`cache`]), the
//! delivery log ([`dedup`]) and the link graph with its crawl ([`crawl`]);
//! one function per capability ([`fetch`], [`explore`], [`lookup`],
//! [`list`], [`versions`], [`mod@write`], [`resources`],
//! [`prompts`]) returns a [`envelope::ToolText`]; the MCP server
//! ([`server`]) and the CLI verbs ([`cli`]) are thin adapters over those
//! functions and never call each other.
//!
//! It is not a markdown parser (that is `markdown-slice`) nor a protocol
//! implementation (that is `mark-proto`, `mark-client`, `mark-store`).

pub mod bound;
pub mod cache;
pub mod change_feed;
pub mod cli;
pub mod context_reset;
pub mod crawl;
pub mod dedup;
pub mod demo;
pub mod envelope;
pub mod explore;
pub mod fetch;
pub mod folder_feed;
pub mod hints;
pub mod hook;
pub mod kept_graph;
pub mod keys;
pub mod list;
pub mod lookup;
pub mod outbox;
pub mod pace;
pub mod paging;
pub mod passages;
pub mod prompts;
pub mod reasons;
pub mod resources;
pub mod result;
pub mod server;
pub mod session;
pub mod settings;
pub mod source;
pub mod sources;
pub mod stale_note;
pub mod subscriptions;
pub mod token_file;
pub mod usage;
pub mod versions;
pub mod watch_feed;
pub mod write;
