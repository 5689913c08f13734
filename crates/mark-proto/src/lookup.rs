//! LOOKUP bodies: a markdown table of matches,
//! `| Path | Importance | Title | Tags |`, with a `Snippet` column added in
//! body mode, where rows may point at sections (`/doc.md#anchor`, title
//! `Doc › Heading`). Two columns of ours follow, each written only when the
//! request asks for it (`columns: bytes, lacks`), so clients that never ask
//! never see them: `Bytes`, the size of what the row's path fetches (the
//! section with its subsections, or the document), and a last `Lacks`,
//! the query words a row does not hold.
//!
//! Written as the reference server writes it: cells escape `\` and the
//! markdown specials `` [ ] ( ) * _ ` ~ # | `` with backslashes; the anchor
//! follows the escaped path after a bare `#`; tags are joined by `, ` (so a
//! tag cannot hold a comma); importance has two decimals. A cell is one
//! line: line breaks and other control characters are written as spaces, and
//! surrounding spaces are not kept. The reference server's
//! `# Lookup matches for …` heading is skipped when reading.
//!
//! ```
//! use mark_proto::lookup::{self, LookupRow, LookupTable, MatchMode};
//! let table = LookupTable {
//!     mode: MatchMode::Catalog,
//!     rows: vec![LookupRow::document("/a.md", 0.5, "A | B", vec!["x".into()])],
//!     bytes_column: false,
//!     lacks_column: false,
//! };
//! let body = lookup::write(&table);
//! assert_eq!(body, "| Path | Importance | Title | Tags |\n|------|------------|-------|------|\n| /a.md | 0.50 | A \\| B | x |\n");
//! assert_eq!(lookup::parse(body.as_bytes()).unwrap(), table);
//! ```

use crate::error::WireError;
use crate::markdown::{
    SPECIALS, bad_body, body_text, escape, excerpt, numbered_lines, rsplit_unescaped,
    split_unescaped, unescape,
};

const WHAT: &str = "LOOKUP";
const CATALOG_COLUMNS: [&str; 4] = ["Path", "Importance", "Title", "Tags"];

/// How LOOKUP splits text into words: runs of letters, digits and `_`
/// (Unicode letters included), with their byte offsets, as written.
pub fn word_spans(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = text.char_indices().peekable();
    std::iter::from_fn(move || {
        while let Some(&(_, c)) = rest.peek() {
            if c.is_alphanumeric() || c == '_' {
                break;
            }
            rest.next();
        }
        let (start, _) = *rest.peek()?;
        let mut end = start;
        while let Some(&(i, c)) = rest.peek() {
            if !(c.is_alphanumeric() || c == '_') {
                break;
            }
            end = i + c.len_utf8();
            rest.next();
        }
        Some((start, &text[start..end]))
    })
}

/// A query's words as LOOKUP matches them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueryWords {
    /// Lower-cased, deduplicated, each at least 2 characters, in order.
    pub searched: Vec<String>,
    /// The words left out for being shorter, as written (`5` in `phase 5`).
    pub too_short: Vec<String>,
}

/// The words of a LOOKUP `query` (not `*`): see [`QueryWords`].
pub fn query_words(query: &str) -> QueryWords {
    let mut words = QueryWords::default();
    for (_, w) in word_spans(query) {
        if w.chars().count() < 2 {
            if !words.too_short.iter().any(|s| s == w) {
                words.too_short.push(w.to_string());
            }
            continue;
        }
        let w = w.to_lowercase();
        if !words.searched.contains(&w) {
            words.searched.push(w);
        }
    }
    words
}

/// What a LOOKUP matched against (request metadata `match`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MatchMode {
    /// Titles and tags of whole documents (the default).
    #[default]
    Catalog,
    /// Section text; rows may name sections and carry a snippet.
    Body,
}

impl MatchMode {
    /// The value of the `match` metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            MatchMode::Catalog => "catalog",
            MatchMode::Body => "body",
        }
    }

    /// Parses the `match` metadata value.
    pub fn parse(s: &str) -> Option<MatchMode> {
        match s {
            "catalog" => Some(MatchMode::Catalog),
            "body" => Some(MatchMode::Body),
            _ => None,
        }
    }
}

/// One match.
#[derive(Debug, Clone, PartialEq)]
pub struct LookupRow {
    /// The document's path.
    pub path: String,
    /// The section's anchor, for a section row in body mode.
    pub anchor: Option<String>,
    /// The document's importance (written with two decimals).
    pub importance: f64,
    /// The document's title, or `Doc › Heading` for a section.
    pub title: String,
    /// The document's tags.
    pub tags: Vec<String>,
    /// The matching text (body mode only).
    pub snippet: Option<String>,
    /// The size in bytes of what [`target`](LookupRow::target) fetches,
    /// from the `Bytes` column; `None` when the table has no such column.
    pub bytes: Option<u64>,
    /// The query words this row does not hold, from the `Lacks` column;
    /// empty when it holds them all or the table has no such column.
    pub lacks: Vec<String>,
}

impl LookupRow {
    /// A whole-document row without a snippet.
    pub fn document(
        path: impl Into<String>,
        importance: f64,
        title: impl Into<String>,
        tags: Vec<String>,
    ) -> LookupRow {
        LookupRow {
            path: path.into(),
            anchor: None,
            importance,
            title: title.into(),
            tags,
            snippet: None,
            bytes: None,
            lacks: Vec::new(),
        }
    }

    /// The path cell: `/doc.md` or `/doc.md#anchor`.
    pub fn target(&self) -> String {
        match &self.anchor {
            Some(a) => format!("{}#{a}", self.path),
            None => self.path.clone(),
        }
    }
}

/// A LOOKUP result table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LookupTable {
    /// Catalog or body mode; body mode has the `Snippet` column.
    pub mode: MatchMode,
    /// The rows, best first.
    pub rows: Vec<LookupRow>,
    /// Whether the table has the `Bytes` column (asked with `columns: bytes`).
    pub bytes_column: bool,
    /// Whether the table has the `Lacks` column (asked with `columns: lacks`).
    pub lacks_column: bool,
}

/// Writes a LOOKUP table: header, separator, one line per row.
pub fn write(table: &LookupTable) -> String {
    let body_mode = table.mode == MatchMode::Body;
    let mut columns = CATALOG_COLUMNS.to_vec();
    if body_mode {
        columns.push("Snippet");
    }
    if table.bytes_column {
        columns.push("Bytes");
    }
    if table.lacks_column {
        columns.push("Lacks");
    }
    let separator: String = columns
        .iter()
        .map(|c| format!("{}|", "-".repeat(c.len() + 2)))
        .collect();
    let mut out = format!("| {} |\n|{separator}\n", columns.join(" | "));
    for row in &table.rows {
        let mut location = cell(&row.path);
        if let Some(anchor) = &row.anchor {
            // Slugs are left bare, as the reference writes them; only what
            // would break the row is escaped.
            location.push('#');
            location.push_str(&escape(anchor, &['|']));
        }
        let mut cells = vec![
            location,
            format!("{:.2}", row.importance),
            cell(&row.title),
            cell(&row.tags.join(", ")),
        ];
        if body_mode {
            cells.push(cell(row.snippet.as_deref().unwrap_or("")));
        }
        if table.bytes_column {
            cells.push(row.bytes.map_or_else(String::new, |b| b.to_string()));
        }
        if table.lacks_column {
            cells.push(cell(&row.lacks.join(" ")));
        }
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

fn cell(text: &str) -> String {
    escape(text.trim(), SPECIALS).trim().to_string()
}

/// Parses a LOOKUP table. Leading blank lines, `#` headings and prose before
/// the header are skipped, as is anything after the table; an empty body
/// (or one without a table) has no rows. A path cell `/doc.md#anchor` is
/// split at its last unescaped `#`.
pub fn parse(body: &[u8]) -> Result<LookupTable, WireError> {
    let text = body_text(WHAT, body)?;
    let mut lines = numbered_lines(text).skip_while(|(_, l)| !l.trim_start().starts_with('|'));
    let Some((_, header)) = lines.next() else {
        return Ok(LookupTable::default());
    };
    let names: Vec<String> = row_cells(header)
        .ok_or_else(|| {
            bad_body(
                WHAT,
                format!("the header is not a table row: `{}`", excerpt(header)),
            )
        })?
        .iter()
        .map(|c| unescape(c).to_ascii_lowercase())
        .collect();
    let known: Vec<&str> = names.iter().map(String::as_str).collect();
    let ["path", "importance", "title", "tags", rest @ ..] = known.as_slice() else {
        return Err(bad_header(header));
    };
    // The optional columns, each at most once, in this order.
    let mut rest = rest.iter().copied().peekable();
    let mut optional = |name: &str| rest.next_if_eq(&name).is_some();
    let columns = Columns {
        mode: if optional("snippet") {
            MatchMode::Body
        } else {
            MatchMode::Catalog
        },
        bytes: optional("bytes"),
        lacks: optional("lacks"),
    };
    if rest.next().is_some() {
        return Err(bad_header(header));
    }
    match lines.next() {
        Some((_, sep)) if is_separator(sep) => {}
        _ => {
            return Err(bad_body(
                WHAT,
                "the header is not followed by a `|---|` separator line".to_string(),
            ));
        }
    }
    let mut rows = Vec::new();
    for (n, line) in lines {
        if !line.trim_start().starts_with('|') {
            break;
        }
        let cells = row_cells(line)
            .filter(|c| c.len() == names.len())
            .ok_or_else(|| {
                bad_body(
                    WHAT,
                    format!(
                        "line {n} does not have {} cells: `{}`",
                        names.len(),
                        excerpt(line)
                    ),
                )
            })?;
        rows.push(
            parse_row(&columns, &cells)
                .map_err(|why| bad_body(WHAT, format!("line {n}: {why}")))?,
        );
    }
    Ok(LookupTable {
        mode: columns.mode,
        rows,
        bytes_column: columns.bytes,
        lacks_column: columns.lacks,
    })
}

/// Which of the optional columns a table has.
struct Columns {
    /// Body mode has the `Snippet` column.
    mode: MatchMode,
    bytes: bool,
    lacks: bool,
}

fn bad_header(header: &str) -> WireError {
    bad_body(
        WHAT,
        format!(
            "the header is not `| Path | Importance | Title | Tags |`: `{}`",
            excerpt(header)
        ),
    )
}

fn parse_row(columns: &Columns, cells: &[&str]) -> Result<LookupRow, String> {
    let (path, anchor) = match rsplit_unescaped(cells[0], '#') {
        Some((p, a)) if !a.is_empty() => (unescape(p), Some(unescape(a))),
        _ => (unescape(cells[0]), None),
    };
    if !path.starts_with('/') {
        return Err(format!(
            "the path `{}` does not start with /",
            excerpt(&path)
        ));
    }
    let importance: f64 = cells[1]
        .parse()
        .ok()
        .filter(|i: &f64| i.is_finite())
        .ok_or_else(|| format!("the importance `{}` is not a number", excerpt(cells[1])))?;
    let tags = split_unescaped(cells[3], ',')
        .into_iter()
        .map(|tag| unescape(tag.trim()))
        .filter(|tag| !tag.is_empty())
        .collect();
    Ok(LookupRow {
        path,
        anchor,
        importance,
        title: unescape(cells[2]),
        tags,
        snippet: (columns.mode == MatchMode::Body).then(|| unescape(cells[4])),
        bytes: match columns
            .bytes
            .then(|| cells[4 + usize::from(columns.mode == MatchMode::Body)])
        {
            None | Some("") => None,
            Some(b) => Some(
                b.parse()
                    .map_err(|_| format!("the bytes `{}` are not a count", excerpt(b)))?,
            ),
        },
        lacks: match cells.last() {
            Some(last) if columns.lacks => unescape(last)
                .split_whitespace()
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        },
    })
}

/// The trimmed cells of `| a | b |`, escapes kept; `None` when the line is
/// not a row.
fn row_cells(line: &str) -> Option<Vec<&str>> {
    let inner = line.trim().strip_prefix('|')?;
    let mut cells = split_unescaped(inner, '|');
    // The closing `|` leaves an empty last piece; a missing one is tolerated.
    if cells.len() > 1 && cells.last().is_some_and(|c| c.trim().is_empty()) {
        cells.pop();
    }
    Some(cells.into_iter().map(str::trim).collect())
}

fn is_separator(line: &str) -> bool {
    row_cells(line).is_some_and(|cells| {
        cells
            .iter()
            .all(|c| c.contains('-') && c.bytes().all(|b| matches!(b, b'-' | b':')))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_unicode_runs_with_offsets() {
        let w: Vec<(usize, &str)> = word_spans("Ünïcode, snake_case & C++ 1.3").collect();
        assert_eq!(
            w,
            [
                (0, "Ünïcode"),
                (11, "snake_case"),
                (24, "C"),
                (28, "1"),
                (30, "3")
            ]
        );
    }

    #[test]
    fn query_words_keep_two_characters_and_name_what_they_leave_out() {
        let q = query_words("Phase 5 of the phase-5 API, é 2026-03-14");
        assert_eq!(
            q.searched,
            ["phase", "of", "the", "api", "2026", "03", "14"]
        );
        assert_eq!(q.too_short, ["5", "é"]);
        assert_eq!(query_words("a b").searched, Vec::<String>::new());
    }

    const CATALOG_HEAD: &str =
        "| Path | Importance | Title | Tags |\n|------|------------|-------|------|\n";
    const BODY_HEAD: &str = "| Path | Importance | Title | Tags | Snippet |\n|------|------------|-------|------|---------|\n";

    #[test]
    fn writes_catalog_rows_as_the_reference_does() {
        let table = LookupTable {
            mode: MatchMode::Catalog,
            rows: vec![
                LookupRow::document("/a.md", 1.0, "Alpha", vec!["x".into(), "y z".into()]),
                LookupRow::document("/b_c.md", 0.333, "B* (draft) #1 ~x~", vec![]),
            ],
            bytes_column: false,
            lacks_column: false,
        };
        assert_eq!(
            write(&table),
            format!(
                "{CATALOG_HEAD}| /a.md | 1.00 | Alpha | x, y z |\n| /b\\_c.md | 0.33 | B\\* \\(draft\\) \\#1 \\~x\\~ |  |\n"
            )
        );
    }

    #[test]
    fn reads_the_reference_server_tables() {
        let catalog = format!(
            "\n# Lookup matches for \"alpha beta\" in /\n\n{CATALOG_HEAD}| /notes/a.md | 0.70 | Alpha | alpha, wire |\n| /notes/b.md | 0.40 | Beta \\| piped | beta |\n"
        );
        let table = parse(catalog.as_bytes()).unwrap();
        assert_eq!(table.mode, MatchMode::Catalog);
        assert_eq!(
            table.rows,
            vec![
                LookupRow::document(
                    "/notes/a.md",
                    0.7,
                    "Alpha",
                    vec!["alpha".into(), "wire".into()]
                ),
                LookupRow::document("/notes/b.md", 0.4, "Beta | piped", vec!["beta".into()]),
            ]
        );
        let body = format!(
            "\n# Lookup matches for \"appended\" in /\n\n{BODY_HEAD}| /notes/a.md#appended_notes | 0.70 | Alpha › Appended | alpha, wire | More. |\n"
        );
        let table = parse(body.as_bytes()).unwrap();
        assert_eq!(table.mode, MatchMode::Body);
        let row = &table.rows[0];
        assert_eq!(row.path, "/notes/a.md");
        assert_eq!(row.anchor.as_deref(), Some("appended_notes"));
        assert_eq!(row.title, "Alpha › Appended");
        assert_eq!(row.snippet.as_deref(), Some("More."));
        let empty = format!("\n# Lookup matches for \"zzz\" in /\n\n{CATALOG_HEAD}");
        assert_eq!(parse(empty.as_bytes()).unwrap(), LookupTable::default());
    }

    #[test]
    fn body_mode_adds_snippets_and_bare_anchors() {
        let table = LookupTable {
            mode: MatchMode::Body,
            rows: vec![
                LookupRow {
                    path: "/doc.md".into(),
                    anchor: Some("set_up".into()),
                    importance: 0.25,
                    title: "Doc › Set up".into(),
                    tags: vec![],
                    snippet: Some("run `make` | then\nrest".into()),
                    bytes: None,
                    lacks: vec![],
                },
                LookupRow {
                    snippet: Some(String::new()),
                    ..LookupRow::document("/whole.md", 0.0, "Whole", vec!["t".into()])
                },
            ],
            bytes_column: false,
            lacks_column: false,
        };
        let body = write(&table);
        assert_eq!(
            body,
            format!(
                "{BODY_HEAD}| /doc.md#set_up | 0.25 | Doc › Set up |  | run \\`make\\` \\| then rest |\n| /whole.md | 0.00 | Whole | t |  |\n"
            )
        );
        let parsed = parse(body.as_bytes()).unwrap();
        assert_eq!(
            parsed.rows[0].snippet.as_deref(),
            Some("run `make` | then rest")
        );
        assert_eq!(parsed.rows[0].anchor.as_deref(), Some("set_up"));
        assert_eq!(parsed.rows[1], table.rows[1]);
    }

    #[test]
    fn escapes_backslashes_pipes_and_hashes() {
        let table = LookupTable {
            mode: MatchMode::Body,
            rows: vec![LookupRow {
                anchor: Some("x".into()),
                snippet: Some(r"a\b".into()),
                ..LookupRow::document("/c#|d.md", 0.5, r"C:\dir", vec![r"\".into()])
            }],
            bytes_column: false,
            lacks_column: false,
        };
        let body = write(&table);
        assert!(
            body.contains(r"| /c\#\|d.md#x | 0.50 | C:\\dir | \\ | a\\b |"),
            "{body}"
        );
        assert_eq!(parse(body.as_bytes()).unwrap(), table);
    }

    #[test]
    fn the_lacks_column_names_the_words_a_row_does_not_hold() {
        let table = LookupTable {
            mode: MatchMode::Body,
            rows: vec![
                LookupRow {
                    anchor: Some("hosts".into()),
                    snippet: Some("Hosts take work.".into()),
                    lacks: vec!["pier".into(), "deploy_id".into()],
                    ..LookupRow::document("/hosts.md", 0.5, "Hosts", vec![])
                },
                LookupRow {
                    snippet: Some(String::new()),
                    ..LookupRow::document("/pier.md", 0.5, "Pier", vec![])
                },
            ],
            bytes_column: false,
            lacks_column: true,
        };
        let body = write(&table);
        assert!(
            body.starts_with("| Path | Importance | Title | Tags | Snippet | Lacks |\n"),
            "{body}"
        );
        assert!(
            body.contains("| Hosts take work. | pier deploy\\_id |\n"),
            "{body}"
        );
        assert_eq!(parse(body.as_bytes()).unwrap(), table);
        let catalog = "| Path | Importance | Title | Tags | Lacks |\n|---|---|---|---|---|\n| /a.md | 0.50 | A |  | pier |\n";
        let parsed = parse(catalog.as_bytes()).unwrap();
        assert_eq!(
            (
                parsed.mode,
                parsed.lacks_column,
                parsed.rows[0].lacks.clone()
            ),
            (MatchMode::Catalog, true, vec!["pier".to_string()])
        );
        let unknown = "| Path | Importance | Title | Tags | Score |\n|---|---|---|---|---|\n";
        assert!(parse(unknown.as_bytes()).is_err(), "an unknown column");
    }

    #[test]
    fn the_bytes_column_sizes_what_a_row_fetches() {
        let table = LookupTable {
            mode: MatchMode::Body,
            rows: vec![LookupRow {
                anchor: Some("hosts".into()),
                snippet: Some("Hosts take work.".into()),
                bytes: Some(1043),
                lacks: vec!["pier".into()],
                ..LookupRow::document("/hosts.md", 0.5, "Hosts", vec![])
            }],
            bytes_column: true,
            lacks_column: true,
        };
        let body = write(&table);
        assert!(
            body.starts_with("| Path | Importance | Title | Tags | Snippet | Bytes | Lacks |\n"),
            "{body}"
        );
        assert!(
            body.contains("| Hosts take work. | 1043 | pier |\n"),
            "{body}"
        );
        assert_eq!(parse(body.as_bytes()).unwrap(), table);
        let catalog = "| Path | Importance | Title | Tags | Bytes |\n|---|---|---|---|---|\n| /a.md | 0.50 | A |  | 77 |\n| /b.md | 0.50 | B |  |  |\n";
        let parsed = parse(catalog.as_bytes()).unwrap();
        assert_eq!(
            (parsed.mode, parsed.rows[0].bytes, parsed.rows[1].bytes),
            (MatchMode::Catalog, Some(77), None)
        );
        let bad = "| Path | Importance | Title | Tags | Bytes |\n|---|---|---|---|---|\n| /a.md | 0.50 | A |  | many |\n";
        assert!(parse(bad.as_bytes()).is_err(), "not a count");
        let reordered =
            "| Path | Importance | Title | Tags | Lacks | Bytes |\n|---|---|---|---|---|---|\n";
        assert!(parse(reordered.as_bytes()).is_err(), "out of order");
    }

    #[test]
    fn tags_split_at_commas() {
        let body = format!("{CATALOG_HEAD}| /a.md | 0.10 | A | x,y , ,z |\n");
        assert_eq!(
            parse(body.as_bytes()).unwrap().rows[0].tags,
            vec!["x", "y", "z"]
        );
    }

    #[test]
    fn reads_aligned_separators_and_stops_after_the_table() {
        let body = b"\n\n| Path | Importance | Title | Tags |\n|:-----|-----:|:---:|---|\n| /a.md | 0.9 | A | |\n\n_2 matches_\n";
        let table = parse(body).unwrap();
        assert_eq!(table.rows.len(), 1);
        assert_eq!(table.rows[0].importance, 0.9);
        assert!(table.rows[0].tags.is_empty());
    }

    #[test]
    fn empty_body_has_no_rows() {
        assert_eq!(parse(b"").unwrap(), LookupTable::default());
        assert_eq!(parse(b"\nNo matches.\n").unwrap(), LookupTable::default());
        let header_only = write(&LookupTable::default());
        assert_eq!(
            parse(header_only.as_bytes()).unwrap(),
            LookupTable::default()
        );
    }

    #[test]
    fn bad_tables_name_the_problem() {
        let cases: [(String, &str); 6] = [
            (
                "| Name | Score |\n|---|---|\n".into(),
                "the header is not `| Path | Importance | Title | Tags |`",
            ),
            (
                "| Path | Importance | Title | Tags |\n| /a.md | 1 | A | |\n".into(),
                "separator",
            ),
            (
                format!("{CATALOG_HEAD}| /a.md | 1 | A |\n"),
                "line 3 does not have 4 cells",
            ),
            (
                format!("{CATALOG_HEAD}| /a.md | high | A | |\n"),
                "the importance `high` is not a number",
            ),
            (
                format!("{CATALOG_HEAD}| /a.md | NaN | A | |\n"),
                "the importance `NaN` is not a number",
            ),
            (
                format!("{CATALOG_HEAD}| a.md | 1 | A | |\n"),
                "does not start with /",
            ),
        ];
        for (body, want) in cases {
            let err = parse(body.as_bytes()).unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
        }
    }

    #[test]
    fn match_mode_values() {
        for m in [MatchMode::Catalog, MatchMode::Body] {
            assert_eq!(MatchMode::parse(m.as_str()), Some(m));
        }
        assert_eq!(MatchMode::parse("fuzzy"), None);
    }
}
