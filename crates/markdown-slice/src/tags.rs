//! Tags as Obsidian reads them: the frontmatter's `tags` plus inline `#tag` and nested
//! `#tag/sub` in the body's text, and the rule by which a tag filter matches.
//!
//! An inline tag is a `#` at the start of a line or after white space, followed by letters,
//! digits, `_`, `-` and `/` (a trailing `/` is not part of it), with at least one character
//! that is not a digit (`#1984` is no tag, `#y1984` is). Only the text of paragraphs,
//! headings, list items, block quotes, tables and footnotes counts: never code (spans or
//! blocks), HTML, link destinations or link text, the frontmatter, or a heading's own `#`
//! marker; a `#` inside a word or a URL (`a#b`, `https://x.org/#part`) or after a backslash
//! starts none.

use std::collections::HashSet;
use std::ops::Range;

/// Whether `c` may be part of a tag's name.
fn is_tag_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '/')
}

/// The ranges of the inline tags (without their `#`) in `runs`: ranges of `source` that
/// hold plain text, in order, adjacent ones already joined.
pub(crate) fn inline_tags(source: &str, runs: &[Range<usize>]) -> Vec<Range<usize>> {
    let mut tags = Vec::new();
    for run in runs {
        let Some(text) = source.get(run.clone()) else {
            continue;
        };
        for (i, _) in text.match_indices('#') {
            let hash = run.start + i;
            let after_space = source[..hash]
                .chars()
                .next_back()
                .is_none_or(char::is_whitespace);
            if !after_space {
                continue;
            }
            let name = &text[i + 1..];
            let len = name.find(|c: char| !is_tag_char(c)).unwrap_or(name.len());
            let name = name[..len].trim_end_matches('/');
            if name.starts_with('/') || !name.chars().any(|c| !c.is_numeric()) {
                continue;
            }
            tags.push(hash + 1..hash + 1 + name.len());
        }
    }
    tags
}

/// `names` without a leading `#`, each once: the first spelling of names equal but for
/// case (tags are case-insensitive) is kept.
pub(crate) fn distinct<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = HashSet::new();
    names
        .into_iter()
        .map(|n| n.trim().trim_start_matches('#'))
        .filter(|n| !n.is_empty() && seen.insert(n.to_lowercase()))
        .collect()
}

/// Whether a document's `tag` answers a filter on `wanted`: the same tag, or one nested
/// under it (`project/alpha` answers `project`, as Obsidian's `tag:project` search finds
/// `#project/alpha`; `projects` does not), case-insensitively, a leading `#` on either side
/// ignored.
///
/// ```
/// use markdown_slice::tag_matches;
/// assert!(tag_matches("Project/Alpha", "project"));
/// assert!(tag_matches("project/alpha", "#project/alpha"));
/// assert!(!tag_matches("projects", "project"));
/// assert!(!tag_matches("project", "project/alpha"));
/// ```
pub fn tag_matches(tag: &str, wanted: &str) -> bool {
    let tag = tag.trim().trim_start_matches('#').to_lowercase();
    let wanted = wanted
        .trim()
        .trim_start_matches('#')
        .trim_end_matches('/')
        .to_lowercase();
    !wanted.is_empty()
        && (tag == wanted
            || tag
                .strip_prefix(&wanted)
                .is_some_and(|rest| rest.starts_with('/')))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Document;

    fn tags(text: &str) -> Vec<String> {
        Document::parse(text)
            .tags()
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn inline_and_nested_tags_after_white_space() {
        assert_eq!(
            tags("#start of a line, then #project/alpha and #y1984.\n\n- item #todo\n"),
            ["start", "project/alpha", "y1984", "todo"]
        );
        assert_eq!(
            tags("> quoted #inbox/to-read/\n\n| a | b |\n|---|---|\n| #cell | x |\n"),
            ["inbox/to-read", "cell"]
        );
        assert_eq!(
            tags("snake #snake_case and #kebab-case, #日本語"),
            ["snake_case", "kebab-case", "日本語"]
        );
    }

    #[test]
    fn no_tags_in_code_urls_links_words_or_heading_markers() {
        for text in [
            "`#code` span\n",
            "```\n#fenced\n```\n",
            "    #indented code\n",
            "a#b and C# and x.org/#frag and https://e.com/#part\n",
            "[#text](https://e.com/#dest) and [[Note#Heading]] and <https://e.com/#auto>\n",
            "# Heading\n\n## Sub\n",
            "#1984 is a number, # alone, #/slash first\n",
            "\\#escaped\n",
            "<div>#html</div>\n",
            "---\ntitle: x\n---\nbody\n",
        ] {
            assert_eq!(tags(text), Vec::<String>::new(), "{text:?}");
        }
        // Text in a heading counts; `#Word` without a space is a tag, not a heading.
        assert_eq!(tags("## Ideas #later\n\n#NoSpace\n"), ["later", "NoSpace"]);
    }

    #[test]
    fn frontmatter_tags_first_then_inline_each_once_case_insensitively() {
        let text = "---\ntags: [Rust, \"#notes\"]\n---\n#rust and #notes/daily and #NOTES\n";
        assert_eq!(tags(text), ["Rust", "notes", "notes/daily"]);
    }

    #[test]
    fn tag_text_split_by_the_parser_is_one_tag() {
        // pulldown-cmark may cut text at `_` or `*` runs that are no emphasis.
        assert_eq!(tags("a #tag_name_x and #b*c\n"), ["tag_name_x", "b"]);
    }

    #[test]
    fn nested_tags_answer_their_parents() {
        assert!(tag_matches("inbox/to-read", "inbox"));
        assert!(tag_matches("inbox", "Inbox/"));
        assert!(tag_matches("a/b/c", "a/b"));
        assert!(!tag_matches("inboxes", "inbox"));
        assert!(!tag_matches("inbox", ""));
        assert!(!tag_matches("other/inbox", "inbox"));
    }
}
