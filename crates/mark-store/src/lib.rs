//! The Mark Protocol engine without networking.
//!
//! [`Engine::handle`] maps one [`mark_proto::Request`] to one
//! [`mark_proto::Response`] over a root folder, in one of two modes:
//! - [`StoreMode::Versioned`]: a versioned store as PROTOCOL.md describes it
//!   (append-only `versions/<name>.v<N>` files chained by `previous-hash`, a
//!   link to the newest, archive markers), written by PUBLISH, APPEND and
//!   ARCHIVE under token auth;
//! - [`StoreMode::Flat`]: a plain folder of `.md` files served read-only.
//!
//! It answers FETCH (conditional, pinned versions, by content hash, the
//! agent manifest, `/health`), LIST (paged), VERSIONS (with the hash chain
//! verified), LOOKUP (BM25-ranked card catalog, see [`lookup`]) and the
//! writes, and checks [`TokenStore`] capability tokens. For WATCH it tells
//! a sink of each change ([`Engine::set_change_sink`]: its own writes at
//! once, others by [`Engine::recheck_changes`]) and says what a watch may
//! follow ([`Engine::watch_scope`]); the server streams the events. Library functions
//! issue tokens ([`generate_token`]) and import a folder ([`import()`]).
//!
//! It is not a server: it opens no socket and has no async runtime.
//! `mark-server` puts it behind QUIC; `mark-mcp` calls it in process over a
//! local folder. Every call is blocking file I/O, takes its clock as a
//! parameter, and never panics: bad input gets a protocol status.
//!
//! ```
//! use mark_proto::{Request, Status, Verb};
//! use mark_store::{Engine, StoreMode};
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("hello.md"), "# Hello\n").unwrap();
//! let engine = Engine::open(dir.path(), StoreMode::Flat, None).unwrap();
//! let resp = engine.handle(&Request::new(Verb::Fetch, "/hello.md"), std::time::SystemTime::now());
//! assert_eq!(resp.status, Status::Ok);
//! assert_eq!(resp.body, b"# Hello\n");
//! ```

mod auth;
mod changes;
mod clock;
mod engine;
mod error;
pub mod function_words;
mod import;
pub mod lookup;
mod manifest;
mod marker;
pub mod passages;
mod paths;
mod regular;
mod store;
mod text_index;
mod versioned;

pub use auth::{Op, TokenLayouts, TokenStore, generate_token};
pub use changes::{ChangeSink, StoreChange};
pub use engine::{DEFAULT_MAX_DOCUMENT_BYTES, Engine, MANIFEST_PATH, MAX_LIST_PAGE, WatchScope};
pub use error::StoreError;
pub use import::{ImportReport, import};
pub use marker::{RootKind, STORE_MARKER, mark};
pub use store::StoreMode;
