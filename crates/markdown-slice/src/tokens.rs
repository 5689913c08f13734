//! A cheap token estimate.

/// A cheap estimate of how many model tokens `text` costs.
///
/// Formula: `ceil(bytes / 3.7)`, i.e. `ceil(bytes * 10 / 37)`. Cheap (no scan of the
/// text), monotone, and additive across sections up to rounding. Checked against real o200k counts on the
/// Node.js API corpus: 3,239,189 bytes are 844,113 tokens (3.84 bytes per token, so the
/// estimate is 3.7% high overall); `fs.md` runs at 3.70; single files range from 3.17
/// (`os.md`, many short table cells: the estimate is 14% low) to 4.6 (short prose files:
/// up to 22% high). Erring slightly high is the safe side for a budget. Exact counts belong
/// to the benchmark, which uses the real tokenizer.
///
/// ```
/// use markdown_slice::estimate_tokens;
/// assert_eq!(estimate_tokens(""), 0);
/// assert_eq!(estimate_tokens("hello"), 2);
/// ```
pub fn estimate_tokens(text: &str) -> usize {
    bytes_to_tokens(text.len())
}

/// [`estimate_tokens`] of a text of `bytes` bytes, for a size known
/// without the text (a LOOKUP row's section).
///
/// ```
/// assert_eq!(markdown_slice::bytes_to_tokens(37), markdown_slice::estimate_tokens(&"x".repeat(37)));
/// ```
pub fn bytes_to_tokens(bytes: usize) -> usize {
    bytes.saturating_mul(10).div_ceil(37)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_up_and_is_zero_for_empty() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("a"), 1);
        assert_eq!(estimate_tokens(&"x".repeat(37)), 10);
        assert_eq!(estimate_tokens(&"x".repeat(38)), 11);
    }

    #[test]
    fn close_to_the_measured_fs_md_ratio() {
        // fs.md: 254 KB measured at about 68.8K o200k tokens.
        let estimate = bytes_to_tokens(254_000);
        assert!((66_000..72_000).contains(&estimate), "{estimate}");
    }
}
