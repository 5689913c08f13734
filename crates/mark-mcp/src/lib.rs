//! mark-mcp: an MCP server and CLI that reads markdown knowledge from a Mark
//! Protocol server or a local folder, and spends the agent's tokens well:
//! small documents whole, large ones as outlines, sections by anchor, and
//! one line instead of text the session already read.
//!
//! This increment holds the session's pure logic: the byte-bounded document
//! cache ([`cache`]), the delivery log behind dedup ([`dedup`]), the result
//! envelope ([`envelope`]), paging ([`paging`]), the prompt plans
//! ([`prompts`]) and the option parsers ([`settings`]).
//!
//! It is not a markdown parser (that is `markdown-slice`) nor a protocol
//! implementation (that is `mark-proto`, `mark-client`, `mark-store`).

pub mod cache;
pub mod dedup;
pub mod envelope;
pub mod paging;
pub mod prompts;
pub mod settings;
