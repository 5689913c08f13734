//! Cutting a long text into pages at heading or paragraph boundaries, and
//! the opaque cursor that names a page of one version of a document.

use std::ops::Range;

/// Cuts `text` into consecutive ranges of at most `max` bytes. Each cut is
/// made, by preference, at one of `headings` (byte offsets of heading lines
/// in `text`), else at a blank line, else at a line end, else at a char
/// boundary; a preferred cut is only taken in the second half of a page so
/// pages stay reasonably full.
pub fn page_ranges(text: &str, headings: &[usize], max: usize) -> Vec<Range<usize>> {
    let max = max.max(64);
    let mut pages = Vec::new();
    let mut start = 0;
    while text.len() - start > max {
        let limit = text.floor_char_boundary(start + max);
        let half = start + max / 2;
        let window = &text[start..limit];
        let cut = headings
            .iter()
            .copied()
            .filter(|&h| h > half && h <= limit)
            .max()
            .or_else(|| {
                window
                    .rfind("\n\n")
                    .map(|i| start + i + 2)
                    .filter(|&c| c > half)
            })
            .or_else(|| {
                window
                    .rfind('\n')
                    .map(|i| start + i + 1)
                    .filter(|&c| c > start)
            })
            .unwrap_or(limit);
        let cut = if cut <= start {
            limit.max(start + 1)
        } else {
            cut
        };
        pages.push(start..cut);
        start = cut;
    }
    pages.push(start..text.len());
    pages
}

/// A page request: which page (1-based) of which slice (the whole body or
/// one section) of which version (etag prefix), with a check digest over
/// all three so that a cursor mark-mcp did not give for this request (edited,
/// made up, or given for another section) is refused, not read; and a seal
/// over the page and version alone, so that a cursor of an older version
/// (whose slice is no longer known) is told apart from a made-up etag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// 1-based page number.
    pub page: usize,
    /// The first 12 hex digits of the etag the pages were cut from.
    pub etag: String,
    /// The first hex digits of the digest of page, etag and slice.
    check: String,
    /// The first hex digits of the digest of page and etag ("" when the
    /// cursor has none).
    seal: String,
}

/// Hex digits of a cursor's check digest.
const CHECK_DIGITS: usize = 6;
/// Hex digits of a cursor's seal.
const SEAL_DIGITS: usize = 4;

fn seal_of(page: usize, etag: &str) -> String {
    blake3::hash(format!("seal.{page}.{etag}").as_bytes()).to_hex()[..SEAL_DIGITS].to_string()
}

/// The first 12 hex digits of `etag` (all of a shorter one; none without).
fn etag_prefix(etag: Option<&str>) -> &str {
    etag.map(|e| e.get(..12).unwrap_or(e)).unwrap_or("")
}

fn check_of(page: usize, etag: &str, slice: &Range<usize>) -> String {
    let digest = blake3::hash(format!("{page}.{etag}.{}-{}", slice.start, slice.end).as_bytes());
    digest.to_hex()[..CHECK_DIGITS].to_string()
}

impl Cursor {
    /// The cursor for `page` of the bytes `slice` of the document with `etag`.
    pub fn new(page: usize, etag: Option<&str>, slice: &Range<usize>) -> Cursor {
        let etag = etag_prefix(etag).to_string();
        let check = check_of(page, &etag, slice);
        let seal = seal_of(page, &etag);
        Cursor {
            page,
            etag,
            check,
            seal,
        }
    }

    /// Reads a cursor written by [`Cursor::encode`].
    pub fn parse(s: &str) -> Option<Cursor> {
        let (page, rest) = s.trim().strip_prefix('p')?.split_once('.')?;
        let (etag, digests) = rest.rsplit_once('.')?;
        let page = page.parse().ok().filter(|&p| p >= 1)?;
        let (check, seal) = match digests.get(..CHECK_DIGITS) {
            Some(check) if digests.len() == CHECK_DIGITS + SEAL_DIGITS => {
                (check, &digests[CHECK_DIGITS..])
            }
            _ => (digests, ""),
        };
        Some(Cursor {
            page,
            etag: etag.to_string(),
            check: check.to_string(),
            seal: seal.to_string(),
        })
    }

    /// The opaque string given to the agent.
    pub fn encode(&self) -> String {
        format!("p{}.{}.{}{}", self.page, self.etag, self.check, self.seal)
    }

    /// Whether mark-mcp gave this page number with this version (for some
    /// slice): a cursor of an older version is sealed, one whose etag or
    /// page was made up or edited is not.
    pub fn sealed(&self) -> bool {
        self.seal == seal_of(self.page, &self.etag)
    }

    /// Whether this cursor was cut from the document with `etag`.
    pub fn matches(&self, etag: Option<&str>) -> bool {
        etag_prefix(etag) == self.etag
    }

    /// Whether mark-mcp gave this cursor for the bytes `slice` of its
    /// version (a cursor of the whole body does not page a section).
    pub fn pages(&self, slice: &Range<usize>) -> bool {
        check_of(self.page, &self.etag, slice) == self.check
    }
}

/// Reads a tool's optional `cursor` argument with `parse`: `Ok(None)` when it
/// is absent or blank, `Err` with the trimmed text (for the tool's error
/// message) when `parse` refuses it.
pub fn cursor_argument<C>(
    arg: Option<&str>,
    parse: impl FnOnce(&str) -> Option<C>,
) -> Result<Option<C>, &str> {
    match arg.map(str::trim).filter(|c| !c.is_empty()) {
        None => Ok(None),
        Some(c) => parse(c).map(Some).ok_or(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_argument_is_absent_blank_read_or_refused() {
        assert_eq!(cursor_argument(None, Cursor::parse), Ok(None));
        assert_eq!(cursor_argument(Some(" \t"), Cursor::parse), Ok(None));
        assert_eq!(
            cursor_argument(Some(" p2.abc.123456 "), Cursor::parse),
            Ok(Some(Cursor {
                page: 2,
                etag: "abc".to_owned(),
                check: "123456".to_owned(),
                seal: String::new(),
            }))
        );
        assert_eq!(
            cursor_argument(Some(" p0.abc\n"), Cursor::parse),
            Err("p0.abc")
        );
    }

    fn check_cover(text: &str, pages: &[Range<usize>], max: usize) {
        assert_eq!(pages.first().map(|r| r.start), Some(0));
        assert_eq!(pages.last().map(|r| r.end), Some(text.len()));
        for w in pages.windows(2) {
            assert_eq!(w[0].end, w[1].start);
        }
        for p in pages {
            assert!(p.len() <= max.max(64), "{p:?}");
            assert!(text.is_char_boundary(p.start) && text.is_char_boundary(p.end));
        }
    }

    #[test]
    fn cuts_at_headings_first() {
        let text = format!(
            "# A\n{}\n## B\n{}\n## C\n{}\n",
            "a".repeat(60),
            "b".repeat(60),
            "c".repeat(60)
        );
        let b = text.find("## B").unwrap_or(0);
        let c = text.find("## C").unwrap_or(0);
        let pages = page_ranges(&text, &[0, b, c], 100);
        check_cover(&text, &pages, 100);
        assert_eq!(pages[0], 0..b);
        assert_eq!(pages[1].start, b);
    }

    #[test]
    fn falls_back_to_paragraphs_then_chars() {
        let text = format!("{}\n\n{}", "x".repeat(70), "y".repeat(70));
        let pages = page_ranges(&text, &[], 100);
        check_cover(&text, &pages, 100);
        assert_eq!(&text[pages[1].clone()], "y".repeat(70));
        let one_line = "é".repeat(200);
        let pages = page_ranges(&one_line, &[], 101);
        check_cover(&one_line, &pages, 101);
        assert_eq!(pages.len(), 4);
    }

    #[test]
    fn short_text_is_one_page() {
        assert_eq!(page_ranges("short", &[], 100), vec![0..5]);
    }

    #[test]
    fn cursor_round_trips_and_checks_the_version_and_slice() {
        let c = Cursor::new(2, Some("0123456789abcdef"), &(0..100));
        assert!(c.encode().starts_with("p2.0123456789ab."), "{}", c.encode());
        assert_eq!(Cursor::parse(&c.encode()), Some(c.clone()));
        assert!(c.matches(Some("0123456789abffff")));
        assert!(!c.matches(Some("ffff")));
        assert!(c.pages(&(0..100)));
        assert!(!c.pages(&(40..100)));
        assert!(c.sealed());
        let edited = c.encode().replacen("p2.", "p3.", 1);
        assert!(!Cursor::parse(&edited).is_some_and(|e| e.pages(&(0..100))));
        assert!(!Cursor::parse(&edited).is_some_and(|e| e.sealed()));
        let made_up = c.encode().replacen("0123456789ab", "0123456789ac", 1);
        assert!(!Cursor::parse(&made_up).is_some_and(|e| e.sealed()));
        let no_etag = Cursor::new(1, None, &(0..9));
        assert_eq!(Cursor::parse(&no_etag.encode()), Some(no_etag));
        assert_eq!(Cursor::parse("p0.x.y"), None);
        assert_eq!(Cursor::parse("p2.000000000000"), None);
        assert_eq!(Cursor::parse("junk"), None);
    }
}
