//! The one bound on a whole result, in UTF-8 bytes: the text part
//! (`--page-bytes`, 44,000 by default) plus a fixed allowance for the
//! envelope, notes and page line ([`ENVELOPE_ALLOWANCE`]), so 48,000 bytes by
//! default for every tool, verb and resource read. Claude Code shows a tool
//! result of up to 50,000 characters inline (a larger one only as a 2 KB
//! preview), and a byte count is never below the character count it
//! measures; 48,000 bytes is also under its 25,000-token limit for any
//! script.
//!
//! Each capability keeps its own text within `--page-bytes` (pages, budgets,
//! bounded lines); [`fit`] is the last guard every result passes through, and
//! it says what it cut.

use crate::envelope::ToolText;

/// Default of `--page-bytes`: the text one result carries at most.
pub const DEFAULT_PAGE_BYTES: usize = 44_000;

/// Bytes a result may take beyond its text: the `key: value` lines, notes,
/// the blank line and a page's closing line.
pub const ENVELOPE_ALLOWANCE: usize = 4_000;

/// The whole-result bound for a given `--page-bytes`.
pub fn result_bound(page_bytes: usize) -> usize {
    page_bytes.saturating_add(ENVELOPE_ALLOWANCE)
}

/// One metadata value is cut to this many bytes by [`fit`].
const FIELD_BYTES: usize = 600;
/// Room for the line [`fit`] ends a cut text with (and its newlines).
const FOOTER_BYTES: usize = 160;

/// `t` as it is when its rendering is within `result_bound(page_bytes)`;
/// else with over-long metadata values and then the text cut (at a line end
/// when there is one in the last quarter), ending with a line that says how
/// many bytes were left out.
pub fn fit(mut t: ToolText, page_bytes: usize) -> ToolText {
    let bound = result_bound(page_bytes);
    if t.render().len() <= bound {
        return t;
    }
    for (_, value) in &mut t.fields {
        if value.len() > FIELD_BYTES {
            let cut = value.floor_char_boundary(FIELD_BYTES - 3);
            value.truncate(cut);
            value.push('…');
        }
    }
    let overhead = t.render().len() - t.text.len();
    let room = bound.saturating_sub(overhead + FOOTER_BYTES);
    if t.text.len() > room {
        let mut cut = t.text.floor_char_boundary(room);
        if let Some(nl) = t.text[..cut].rfind('\n').filter(|&nl| nl >= cut / 4 * 3) {
            cut = nl + 1;
        }
        let left_out = t.text.len() - cut;
        t.text.truncate(cut);
        t.text.push_str(&format!(
            "\n[cut at the {bound}-byte result bound: {left_out} bytes left out; ask for less, e.g. one url#anchor]\n"
        ));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_result_within_the_bound_is_left_alone() {
        let t = ToolText::new("ok").with("mode", "full").with_text("# A\n");
        assert_eq!(fit(t.clone(), 100), t);
    }

    #[test]
    fn an_over_long_result_is_cut_and_says_so() {
        let t = ToolText::new("ok").with_text("line\n".repeat(20_000));
        let cut = fit(t, 10_000);
        assert!(cut.render().len() <= result_bound(10_000));
        assert!(
            cut.text
                .ends_with("bytes left out; ask for less, e.g. one url#anchor]\n")
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn fit_always_keeps_the_bound(
            text in "([a-zé潮🌊]{0,120}\n?){0,120}",
            note_len in 0usize..20_000,
            page_bytes in 0usize..6_000,
        ) {
            let t = ToolText::new("ok")
                .with("note", "é".repeat(note_len))
                .with("title", "t".repeat(note_len / 2))
                .with_text(text);
            let rendered = fit(t, page_bytes).render();
            prop_assert!(rendered.len() <= result_bound(page_bytes), "{}", rendered.len());
        }
    }
}
