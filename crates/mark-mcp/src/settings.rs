//! The knobs of a session (thresholds, caps, windows) and the parsers for
//! the human forms the command line accepts (`64MiB`, `5s`, `30m`).

use crate::crawl::CrawlSettings;
use std::time::Duration;

/// Tunables shared by every capability of one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// A body (or section) at or above this many bytes comes as an outline in auto mode.
    pub outline_threshold: usize,
    /// Bytes the session cache keeps (document bodies and their parsed parts).
    pub cache_bytes: usize,
    /// A cached document validated this recently is served without a request.
    pub fresh_for: Duration,
    /// Delivery records older than this are forgotten (clients compact context).
    pub dedup_ttl: Duration,
    /// The largest text one result carries; longer bodies come in pages.
    /// The whole result stays within [`crate::bound::result_bound`] of it.
    pub page_bytes: usize,
    /// Bounds and timing of the link-graph crawl.
    pub crawl: CrawlSettings,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            outline_threshold: 8192,
            cache_bytes: 64 * 1024 * 1024,
            fresh_for: Duration::from_secs(5),
            dedup_ttl: Duration::from_secs(30 * 60),
            page_bytes: crate::bound::DEFAULT_PAGE_BYTES,
            crawl: CrawlSettings::default(),
        }
    }
}

/// A size or duration on the command line that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Not a number followed by a known unit.
    #[error("`{0}` is not a size: use plain bytes or a unit like 512KB, 1MB, 64MiB")]
    Size(String),
    /// Not a number followed by a known unit.
    #[error("`{0}` is not a duration: use a number with ms, s, m or h (500ms, 5s, 30m, 1h)")]
    Duration(String),
    /// A page size under [`MIN_PAGE_BYTES`].
    #[error(
        "--page-bytes {0} is under the floor of {MIN_PAGE_BYTES} bytes (a page must hold a paragraph or an outline); give {MIN_PAGE_BYTES} or more (default 44000)"
    )]
    PageTooSmall(usize),
}

/// The smallest `--page-bytes`: under it a document would come in hundreds
/// of pages of a few lines each.
pub const MIN_PAGE_BYTES: usize = 2000;

/// Parses `--page-bytes`: a size ([`parse_bytes`]) of at least
/// [`MIN_PAGE_BYTES`].
pub fn parse_page_bytes(s: &str) -> Result<usize, ParseError> {
    let bytes = parse_bytes(s)?;
    if bytes < MIN_PAGE_BYTES {
        return Err(ParseError::PageTooSmall(bytes));
    }
    Ok(bytes)
}

/// Splits `"64MiB"` into `(64, "MiB")`.
fn split_number(s: &str) -> Option<(u64, &str)> {
    let s = s.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n = s[..digits].parse().ok()?;
    Some((n, s[digits..].trim()))
}

/// Parses a byte size: plain bytes, `B`, `KB`/`MB`/`GB` (powers of 1000) or
/// `KiB`/`MiB`/`GiB` (powers of 1024), case-insensitive.
pub fn parse_bytes(s: &str) -> Result<usize, ParseError> {
    let err = || ParseError::Size(s.to_string());
    let (n, unit) = split_number(s).ok_or_else(err)?;
    let factor: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1000,
        "m" | "mb" => 1000 * 1000,
        "g" | "gb" => 1000 * 1000 * 1000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        _ => return Err(err()),
    };
    n.checked_mul(factor)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(err)
}

/// Parses a duration: a whole number with `ms`, `s`, `m` or `h`.
pub fn parse_duration(s: &str) -> Result<Duration, ParseError> {
    let err = || ParseError::Duration(s.to_string());
    let (n, unit) = split_number(s).ok_or_else(err)?;
    let ms: u64 = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60 * 1000,
        "h" => 60 * 60 * 1000,
        _ => return Err(err()),
    };
    n.checked_mul(ms).map(Duration::from_millis).ok_or_else(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_every_form() {
        assert_eq!(parse_bytes("64MiB"), Ok(64 * 1024 * 1024));
        assert_eq!(parse_bytes("1MB"), Ok(1_000_000));
        assert_eq!(parse_bytes("8192"), Ok(8192));
        assert_eq!(parse_bytes("2 kib"), Ok(2048));
        assert!(parse_bytes("MiB").is_err());
        assert!(parse_bytes("12 parsecs").is_err());
        assert!(parse_bytes("99999999999999999999").is_err());
    }

    #[test]
    fn durations_in_every_unit() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("soon").is_err());
    }
}
