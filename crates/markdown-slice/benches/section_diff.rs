//! What a changed document costs mark-mcp: the section hashes of a
//! 40,000-heading document and its diff against the version before, where
//! every section changed. The baseline is the linear-search diff the crate
//! had before (`SectionHashes::get` per anchor), on a 4,000-heading
//! document (40,000 would take half a minute per sample). Run:
//! `cargo bench -p markdown-slice --bench section_diff`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use markdown_slice::{Document, SectionHashes, diff_sections};

/// `headings` sections, each with one line of text ending in `tag`.
fn document(headings: usize, tag: &str) -> String {
    (0..headings)
        .map(|i| format!("## Section {i}\n\nText of section {i}, {tag}.\n\n"))
        .collect()
}

/// The diff as it was: one linear search per anchor.
fn linear_diff(old: &SectionHashes, new: &SectionHashes) -> usize {
    new.sections
        .iter()
        .filter(|(a, h)| old.get(a).is_some_and(|o| o != h))
        .count()
}

fn section_diff(c: &mut Criterion) {
    let mut group = c.benchmark_group("changed-document");
    for headings in [4_000, 40_000] {
        let old = Document::parse(document(headings, "first")).section_hashes();
        let new_text = document(headings, "second");
        group.bench_function(format!("hashes-{headings}"), |b| {
            b.iter(|| black_box(Document::parse(black_box(new_text.as_str())).section_hashes()))
        });
        let new = Document::parse(new_text.as_str()).section_hashes();
        assert_eq!(diff_sections(&old, &new).changed.len(), headings);
        group.bench_function(format!("diff-{headings}"), |b| {
            b.iter(|| black_box(diff_sections(black_box(&old), black_box(&new))))
        });
        if headings <= 4_000 {
            group.bench_function(format!("linear-diff-{headings}"), |b| {
                b.iter(|| black_box(linear_diff(black_box(&old), black_box(&new))))
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = section_diff
}
criterion_main!(benches);
