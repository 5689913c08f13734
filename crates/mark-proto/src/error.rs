//! Wire-format errors: each says in one sentence what is wrong.

use thiserror::Error;

/// Why bytes are not a valid Mark Protocol message.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    /// The request line is longer than 4096 bytes.
    #[error("the request line is {0} bytes, over the protocol's 4096-byte limit")]
    RequestLineTooLong(usize),
    /// The metadata block is larger than 64 KiB.
    #[error("the metadata block is over the protocol's 64 KiB limit ({0} bytes)")]
    MetadataTooLarge(usize),
    /// The request has no `\n` after its request line.
    #[error("the request line does not end in a newline")]
    MissingNewline,
    /// The request line is not `VERB /path`.
    #[error("the request line must be `VERB /path` with exactly one space")]
    BadRequestLine,
    /// The verb is not one the protocol defines.
    #[error("unknown verb `{0}`")]
    UnknownVerb(String),
    /// The path breaks a rule.
    #[error("bad path: {0}")]
    BadPath(&'static str),
    /// Text that must be UTF-8 is not.
    #[error("the {0} is not valid UTF-8")]
    NotUtf8(&'static str),
    /// A response that does not start with `---`.
    #[error("the response does not start with a `---` frontmatter block")]
    MissingFrontmatter,
    /// A metadata block with no closing `---`.
    #[error("the metadata block has no closing `---` line")]
    UnclosedMetadata,
    /// A response without `status`.
    #[error("the response frontmatter has no `status`")]
    MissingStatus,
    /// A metadata line that is not `key: value`.
    #[error("the metadata line `{0}` is not `key: value`")]
    BadMetadataLine(String),
    /// A metadata key that cannot be written.
    #[error(
        "the metadata key `{0}` cannot be written: use ASCII letters, digits, `-`, `_` and `.`"
    )]
    BadMetadataKey(String),
    /// Response metadata that tries to set `status` a second time.
    #[error(
        "the response metadata holds a `status` key; set the status with `Response::new` instead"
    )]
    StatusInMetadata,
    /// A quoted value with a bad escape.
    #[error("the quoted value `{0}` has a bad escape or an unbalanced quote")]
    BadQuoting(String),
    /// A body (LIST, VERSIONS, LOOKUP) that does not have the expected form.
    #[error("malformed {what} body: {why}")]
    BadBody {
        /// Which body.
        what: &'static str,
        /// What is wrong.
        why: String,
    },
    /// A `mark://` URL that cannot be used.
    #[error("bad mark:// URL `{url}`: {why}")]
    BadUrl {
        /// The URL as given (cut to 200 characters).
        url: String,
        /// What is wrong.
        why: &'static str,
    },
}
