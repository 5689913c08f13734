//! The one bound on a whole result, in UTF-8 bytes: the text part
//! (`--page-bytes`, 44,000 by default) plus a fixed allowance for the
//! envelope, notes and page line ([`ENVELOPE_ALLOWANCE`]), so 48,000 bytes by
//! default for every tool, verb and resource read. Claude Code shows a tool
//! result of up to 50,000 characters inline (a larger one only as a 2 KB
//! preview), and a byte count is never below the character count it
//! measures; 48,000 bytes is also under its 25,000-token limit for any
//! script.
//!
//! Every read result is made by [`crate::result::ResultBuilder`], which
//! charges each part against this bound before adding it; a result that
//! delivers nothing is shortened by [`crate::result::ResultBuilder::shorten`].
//! [`fit`] is the assertion every result passes on its way out: it never
//! fires (a debug build panics if it would; [`cuts`] counts it for tests;
//! a release build still cuts, so an agent never gets more than the bound).

use crate::envelope::ToolText;
use crate::result::ResultBuilder;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Default of `--page-bytes`: the text one result carries at most.
pub const DEFAULT_PAGE_BYTES: usize = 44_000;

/// Bytes a result may take beyond its text: the `key: value` lines, notes,
/// the blank line and a page's closing line.
pub const ENVELOPE_ALLOWANCE: usize = 4_000;

/// The whole-result bound for a given `--page-bytes`.
pub fn result_bound(page_bytes: usize) -> usize {
    page_bytes.saturating_add(ENVELOPE_ALLOWANCE)
}

/// Results [`fit`] found over the bound in this process (0, always).
static CUTS: AtomicUsize = AtomicUsize::new(0);

/// How many results [`fit`] found over the bound in this process.
pub fn cuts() -> usize {
    CUTS.load(Ordering::Relaxed)
}

/// `t` as it is: its rendering is within `result_bound(page_bytes)`, since
/// the result builder made it so. Were it not, a debug build stops here,
/// and a release build counts it ([`cuts`]) and shortens it.
pub fn fit(t: ToolText, page_bytes: usize) -> ToolText {
    let bound = result_bound(page_bytes);
    let len = t.rendered_len();
    if len <= bound {
        return t;
    }
    CUTS.fetch_add(1, Ordering::Relaxed);
    debug_assert!(
        false,
        "a {len}-byte result passed the {bound}-byte bound: it was not made by the result builder"
    );
    ResultBuilder::shorten(t, page_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_within_the_bound_passes_as_it_is() {
        let t = ToolText::new("ok").with("mode", "full").with_text("# A\n");
        assert_eq!(fit(t.clone(), 100), t);
        assert_eq!(t.rendered_len(), t.render().len());
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "not made by the result builder")]
    fn a_result_over_the_bound_stops_a_debug_build() {
        fit(
            ToolText::new("ok").with_text("line\n".repeat(20_000)),
            10_000,
        );
    }
}
