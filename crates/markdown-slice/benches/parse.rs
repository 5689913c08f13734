//! Parse throughput on real markdown: markdown-slice's `Document::parse` (headings,
//! anchors, sections, links, opening paragraph) beside a bare pulldown-cmark event walk with
//! the same options (the floor) and a full comrak parse (a complete GFM AST).
//!
//! Inputs: `fs.md` (254 KB) and the whole Node.js API corpus concatenated (3.2 MB), read
//! from `../shared/corpora/nodejs-api` relative to the workspace root or
//! `$MARK_CORPORA/nodejs-api`. Run: `cargo bench -p markdown-slice`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use markdown_slice::{Document, parser_options};

#[path = "../tests/common/corpus.rs"]
mod corpus;

fn inputs() -> Vec<(&'static str, String)> {
    let files = corpus::node_corpus_files();
    let fs_md = files
        .iter()
        .find(|(name, _)| name == "fs.md")
        .map(|(_, text)| text.clone())
        .expect("fs.md in the corpus");
    let all: Vec<&str> = files.iter().map(|(_, text)| text.as_str()).collect();
    vec![("fs.md", fs_md), ("node-corpus", all.join("\n\n"))]
}

fn comrak_options() -> comrak::Options<'static> {
    let mut options = comrak::Options::default();
    options.extension.table = true;
    options.extension.strikethrough = true;
    options.extension.tasklist = true;
    options.extension.footnotes = true;
    options.extension.autolink = true;
    options
}

fn parse(c: &mut Criterion) {
    let comrak_options = comrak_options();
    for (name, text) in inputs() {
        let mut group = c.benchmark_group(name);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function("markdown-slice", |b| {
            b.iter(|| {
                let doc = Document::parse(black_box(text.as_str()));
                black_box((doc.headings().len(), doc.links().len()))
            })
        });
        group.bench_function("pulldown-cmark-walk", |b| {
            b.iter(|| {
                let parser =
                    pulldown_cmark::Parser::new_ext(black_box(text.as_str()), parser_options());
                black_box(parser.into_offset_iter().count())
            })
        });
        group.bench_function("comrak-parse", |b| {
            b.iter(|| {
                let arena = comrak::Arena::new();
                let root =
                    comrak::parse_document(&arena, black_box(text.as_str()), &comrak_options);
                black_box(root.children().count())
            })
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = parse
}
criterion_main!(benches);
