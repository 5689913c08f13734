//! What an APPEND makes of a document: the one join rule, shared by the
//! engine that writes it (`mark-store`) and the preview that shows it
//! (`mark-mcp`).
//!
//! PROTOCOL.md's summary says "current body + `\n` + request body"; the
//! reference server (demarkus, every version since APPEND) adds the `\n`
//! only when the body does not already end with one, so `# Ap\n\nText.\n`
//! and `- x` become `# Ap\n\nText.\n- x`, not a list item after a blank
//! line. Where the two disagree the server wins (`docs/PROTOCOL-NOTES.md`).

/// What goes between `current` and the appended text: a line end unless
/// `current` already ends with one (or is empty).
pub fn separator(current: &[u8]) -> &'static str {
    if current.is_empty() || current.ends_with(b"\n") {
        ""
    } else {
        "\n"
    }
}

/// The body an APPEND of `text` to `current` writes.
pub fn appended(current: &[u8], text: &[u8]) -> Vec<u8> {
    [current, separator(current).as_bytes(), text].concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_end_only_where_the_body_lacks_one_as_demarkus_joins() {
        assert_eq!(appended(b"# Ap\n\nText.\n", b"- x"), b"# Ap\n\nText.\n- x");
        assert_eq!(appended(b"# Ap\n\nText.", b"- x"), b"# Ap\n\nText.\n- x");
        assert_eq!(appended(b"a\n\n", b"b\n"), b"a\n\nb\n");
    }
}
