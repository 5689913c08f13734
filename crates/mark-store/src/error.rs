//! Errors of the library functions (opening a store, token files, import).
//! Requests never fail with these: [`crate::Engine::handle`] answers every
//! request with a protocol status.

use std::path::PathBuf;
use thiserror::Error;

/// Why a store, a token file or an import could not be used.
#[derive(Debug, Error)]
pub enum StoreError {
    /// The store root cannot be read.
    #[error("the store root {path} cannot be opened: {source}")]
    Root {
        /// The root as given.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The store root is not a directory.
    #[error("the store root {0} is not a directory; give the folder that holds the documents")]
    NotADirectory(PathBuf),
    /// A token file cannot be read or written.
    #[error("the token file {path} cannot be {action}: {source}")]
    TokenFileIo {
        /// The token file.
        path: PathBuf,
        /// `read` or `written`.
        action: &'static str,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A token file that is not in the documented format.
    #[error("the token file {path} is not valid: {why}")]
    TokenFile {
        /// The token file.
        path: PathBuf,
        /// What is wrong, with the entry number.
        why: String,
    },
    /// A token grant (paths, operations, expiry) that cannot be issued.
    #[error("cannot issue this token: {0}")]
    BadGrant(String),
    /// The operating system gave no secure random bytes.
    #[error("no secure random bytes are available to make a token: {0}")]
    Random(String),
    /// A file or folder of an import cannot be read or written.
    #[error("import failed at {path}: {source}")]
    Import {
        /// The file or folder.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A folder opened as a versioned store that is neither marked nor empty.
    #[error(
        "{0} is not a versioned store: it has no .mark-store marker and is not empty; serve it as a plain folder, or mark or import it into a store"
    )]
    NotAStore(PathBuf),
    /// A folder that cannot be marked because documents would vanish.
    #[error("{} cannot be marked as a versioned store: its plain file {first}{} would no longer be served; import the folder into a new store instead", .root.display(), more_note(*.more))]
    PlainDocuments {
        /// The folder.
        root: PathBuf,
        /// The first plain document found, as a /path.
        first: String,
        /// How many more there are.
        more: usize,
    },
}

/// ` (and N more)`, or nothing.
fn more_note(more: usize) -> String {
    if more > 0 {
        format!(" (and {more} more)")
    } else {
        String::new()
    }
}
