//! Fuzz target: any bytes, as lossy UTF-8, through every part of markdown-slice.
#![no_main]

use libfuzzer_sys::fuzz_target;
use markdown_slice::{
    Document, OPENING_PARAGRAPH_BYTES, OutlineOptions, diff_sections, estimate_tokens,
};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let doc = Document::parse(text.as_ref());
    let source = doc.source();
    let body = doc.body_range();
    assert!(source.is_char_boundary(body.start));
    let small = OutlineOptions { max_lines: 8, max_bytes: 256 };
    for options in [OutlineOptions::default(), small] {
        let outline = doc.outline(&options).to_string();
        assert!(outline.len() <= options.max_bytes);
    }
    let mut assembled = doc.preamble().len();
    for heading in doc.headings() {
        let section = doc.section_text(heading);
        assert_eq!(source.get(heading.section.clone()), Some(section));
        assert!(source.get(heading.line.clone()).is_some());
        let _ = estimate_tokens(section);
        let _ = doc.section_outline(heading, &small).to_string();
        if heading.parent.is_none() && !heading.nested {
            assembled += section.len();
        }
        if let Some(anchor) = &heading.anchor {
            assert!(doc.find_anchor(anchor).is_ok());
        }
    }
    assert_eq!(assembled, body.len());
    let _ = doc.find_anchor(&text);
    let paragraph = doc.opening_paragraph(OPENING_PARAGRAPH_BYTES);
    assert!(paragraph.len() <= OPENING_PARAGRAPH_BYTES);
    for link in doc.links() {
        assert!(source.get(link.range.clone()).is_some());
        let _ = link.resolve("/dir/doc.md");
        let _ = markdown_slice::resolve("/dir/doc.md", &link.dest);
        let _ = doc.section_anchor_at(link.range.start);
    }
    for block in doc.blocks() {
        assert_eq!(doc.block_text(block), &source[block.range.clone()]);
        assert_eq!(doc.find_block(&block.id).map(|b| &b.id), Ok(&block.id));
    }
    let hashes = doc.section_hashes();
    assert!(diff_sections(&hashes, &hashes).is_empty());
    let _ = doc.title();
    let _ = doc.frontmatter();
});
