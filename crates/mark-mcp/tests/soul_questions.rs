//! Checks the orientation benchmark's fixture knowledge base (`crates/mark-mcp/soul`) against its
//! own promises: every question's facts sit in the section it names, that section is the
//! smallest one holding them, every internal link and anchor resolves, and the fixture has
//! the size and shape the benchmark relies on. Parsing is markdown-slice's, the same the
//! server and mark-mcp use, so anchors are checked exactly as an agent would meet them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use markdown_slice::{Document, Heading, LinkKind, Target};
use serde::Deserialize;

/// Question kinds the benchmark knows.
const KINDS: [&str; 7] = [
    "project",
    "current_phase",
    "decision",
    "term",
    "journal",
    "owner",
    "phase_status",
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct QuestionFile {
    question: Vec<Question>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Question {
    id: String,
    kind: String,
    question: String,
    facts: Vec<String>,
    section: String,
    hub: String,
}

fn kb_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("soul")
}

/// Every markdown document of the knowledge base, keyed by its path from the root
/// (`/projects/x/roadmap.md`).
fn load_kb() -> BTreeMap<String, Document<String>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Document<String>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                let rel = path.strip_prefix(root).unwrap().to_str().unwrap();
                let text = std::fs::read_to_string(&path).unwrap();
                out.insert(
                    format!("/{}", rel.replace('\\', "/")),
                    Document::parse(text),
                );
            }
        }
    }
    let root = kb_root();
    let mut docs = BTreeMap::new();
    walk(&root, &root, &mut docs);
    docs
}

fn load_questions() -> Vec<Question> {
    let text = std::fs::read_to_string(kb_root().join("questions.toml")).unwrap();
    toml::from_str::<QuestionFile>(&text).unwrap().question
}

/// The heading whose anchor is exactly `anchor` (no fuzzy matching: the fixture must name
/// anchors as GitHub would).
fn heading<'d>(doc: &'d Document<String>, anchor: &str) -> Option<&'d Heading> {
    doc.headings()
        .iter()
        .find(|h| h.anchor.as_deref() == Some(anchor))
}

/// Every heading nested anywhere under `parent`.
fn descendants<'d>(
    doc: &'d Document<String>,
    parent: &'d Heading,
) -> impl Iterator<Item = &'d Heading> {
    doc.headings()
        .iter()
        .filter(move |h| h.line.start > parent.line.start && h.section.end <= parent.section.end)
}

#[test]
fn every_question_names_the_smallest_section_holding_its_facts() {
    let docs = load_kb();
    let questions = load_questions();
    assert!(
        (20..=30).contains(&questions.len()),
        "{} questions, expected 20 to 30",
        questions.len()
    );
    let mut failures = Vec::new();
    let mut ids = BTreeSet::new();
    let mut kinds = BTreeSet::new();
    for q in &questions {
        let id = &q.id;
        if !ids.insert(id.as_str()) {
            failures.push(format!("{id}: duplicate id"));
        }
        if !KINDS.contains(&q.kind.as_str()) {
            failures.push(format!("{id}: unknown kind {:?}", q.kind));
        }
        kinds.insert(q.kind.as_str());
        if q.question.trim().is_empty() || !(1..=3).contains(&q.facts.len()) {
            failures.push(format!("{id}: needs a question and 1 to 3 facts"));
        }
        if !docs.contains_key(&q.hub) {
            failures.push(format!("{id}: hub {} does not exist", q.hub));
        }
        let Some((path, anchor)) = q.section.split_once('#') else {
            failures.push(format!("{id}: section {} has no #anchor", q.section));
            continue;
        };
        let Some(doc) = docs.get(path) else {
            failures.push(format!("{id}: {path} does not exist"));
            continue;
        };
        let Some(section) = heading(doc, anchor) else {
            let nearest = doc.find_anchor(anchor).err().map(|m| m.nearest);
            failures.push(format!("{id}: no #{anchor} in {path}; nearest {nearest:?}"));
            continue;
        };
        let text = doc.section_text(section);
        for fact in &q.facts {
            if !text.contains(fact.as_str()) {
                failures.push(format!("{id}: fact {fact:?} not in {}", q.section));
            }
        }
        for child in descendants(doc, section) {
            let child_text = doc.section_text(child);
            if q.facts.iter().all(|f| child_text.contains(f.as_str())) {
                failures.push(format!(
                    "{id}: #{} inside {} also holds every fact; name the smaller section",
                    child.anchor.as_deref().unwrap_or("?"),
                    q.section
                ));
            }
        }
    }
    let missing_kinds: Vec<_> = KINDS.iter().filter(|k| !kinds.contains(*k)).collect();
    if !missing_kinds.is_empty() {
        failures.push(format!("no question of kind {missing_kinds:?}"));
    }
    for f in &failures {
        eprintln!("{f}");
    }
    assert!(failures.is_empty(), "{} question failures", failures.len());
}

#[test]
fn project_hubs_link_to_their_current_phase() {
    let docs = load_kb();
    let mut checked = 0;
    for q in load_questions()
        .iter()
        .filter(|q| q.kind == "current_phase")
    {
        let hub = &docs[&q.hub];
        let (path, anchor) = q.section.split_once('#').unwrap();
        let linked = hub.links().iter().any(|l| {
            l.resolve(&q.hub)
                == Target::Internal {
                    path: path.to_string(),
                    fragment: Some(anchor.to_string()),
                }
        });
        assert!(
            linked,
            "{}: hub {} does not link to {}",
            q.id, q.hub, q.section
        );
        checked += 1;
    }
    assert!(checked >= 4, "only {checked} current-phase questions");
}

#[test]
fn every_internal_markdown_link_resolves_to_a_file_and_heading() {
    let docs = load_kb();
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut anchored = 0;
    let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for (path, doc) in &docs {
        for link in doc.links() {
            let Target::Internal {
                path: target,
                fragment,
            } = link.resolve(path)
            else {
                continue;
            };
            if !target.ends_with(".md") {
                continue;
            }
            checked += 1;
            let kind = match link.kind {
                LinkKind::Inline => "inline",
                LinkKind::Reference => "reference",
                LinkKind::Wiki => "wiki",
                LinkKind::Autolink | LinkKind::Email => "auto",
            };
            *by_kind.entry(kind).or_default() += 1;
            let Some(target_doc) = docs.get(&target) else {
                failures.push(format!("{path}: {} -> missing {target}", link.dest));
                continue;
            };
            if let Some(fragment) = fragment {
                anchored += 1;
                if heading(target_doc, &fragment).is_none() {
                    failures.push(format!(
                        "{path}: {} -> no #{fragment} in {target}",
                        link.dest
                    ));
                }
            }
        }
    }
    for f in &failures {
        eprintln!("{f}");
    }
    assert!(failures.is_empty(), "{} broken links", failures.len());
    // The fixture must exercise every way of linking the benchmark cares about.
    assert!(checked >= 200, "only {checked} internal links");
    assert!(anchored >= 60, "only {anchored} links with anchors");
    for (kind, at_least) in [("inline", 150), ("reference", 15), ("wiki", 3)] {
        let n = by_kind.get(kind).copied().unwrap_or(0);
        assert!(
            n >= at_least,
            "{n} {kind} links, expected at least {at_least}"
        );
    }
}

#[test]
fn fixture_has_the_size_and_shape_the_benchmark_needs() {
    let docs = load_kb();
    assert!(
        (40..=80).contains(&docs.len()),
        "{} documents, expected 40 to 80",
        docs.len()
    );

    let roadmaps: Vec<(&String, usize)> = docs
        .iter()
        .filter(|(p, _)| p.starts_with("/projects/") && p.ends_with("/roadmap.md"))
        .map(|(p, d)| (p, d.source().len()))
        .collect();
    assert!(
        (4..=6).contains(&roadmaps.len()),
        "{} roadmaps",
        roadmaps.len()
    );
    for (path, size) in &roadmaps {
        assert!(
            (20_000..=60_000).contains(size),
            "{path} is {size} bytes, expected 20 to 60 KB"
        );
        let doc = &docs[*path];
        for anchor in ["status", "status-1", "decisions-1", "notes-1"] {
            assert!(heading(doc, anchor).is_some(), "{path} lacks #{anchor}");
        }
        assert!(
            doc.headings().iter().any(|h| h.level == 4),
            "{path} has no dated #### updates"
        );
        assert!(
            docs.contains_key(&path.replace("/roadmap.md", "/index.md")),
            "{path} has no project hub"
        );
    }
    let large = roadmaps.iter().filter(|(_, s)| *s > 30_000).count();
    assert!(
        large >= 2,
        "{large} roadmaps over 30 KB, expected at least 2"
    );

    for path in ["/shared/glossary.md", "/shared/architecture.md"] {
        let size = docs[path].source().len();
        assert!(size > 10_000, "{path} is {size} bytes, expected over 10 KB");
    }
    assert!(
        docs["/shared/glossary.md"]
            .headings()
            .iter()
            .filter(|h| h.level == 2)
            .count()
            >= 30,
        "the glossary needs many terms"
    );
    assert!(
        docs["/shared/architecture.md"]
            .headings()
            .iter()
            .any(|h| h.level == 4),
        "architecture needs headings down to level 4"
    );
    let adrs = docs.keys().filter(|p| p.contains("/adr/")).count();
    let people = docs.keys().filter(|p| p.starts_with("/people/")).count();
    let journal = docs.keys().filter(|p| p.starts_with("/journal/")).count();
    assert!(
        adrs >= 10 && people >= 5 && journal >= 8,
        "{adrs} ADRs, {people} people, {journal} journal notes"
    );

    let with_frontmatter = docs
        .values()
        .filter(|d| {
            d.frontmatter()
                .is_some_and(|f| f.title.is_some() && !f.tags.is_empty())
        })
        .count();
    assert!(
        with_frontmatter * 10 >= docs.len() * 9,
        "only {with_frontmatter} of {} documents have a title and tags",
        docs.len()
    );
    assert!(
        docs.values().any(|d| d
            .frontmatter()
            .is_some_and(|f| f.extra.contains_key("importance"))),
        "no document has an importance"
    );
    assert!(
        docs.values().any(|d| d
            .headings()
            .iter()
            .any(|h| d.source()[h.line.clone()].contains('`'))),
        "no heading with inline code"
    );
    assert!(
        docs.values()
            .any(|d| d.headings().iter().any(|h| !h.text.is_ascii())),
        "no heading with a non-ASCII name"
    );
}

#[test]
fn comment_lines_in_code_fences_are_not_headings() {
    let docs = load_kb();
    let mut fenced_hash_lines = 0;
    for (path, doc) in &docs {
        let source = doc.source();
        let heading_starts: BTreeSet<usize> = doc.headings().iter().map(|h| h.line.start).collect();
        let mut in_fence = false;
        let mut offset = 0;
        for line in source.split_inclusive('\n') {
            if line.starts_with("```") {
                in_fence = !in_fence;
            } else if in_fence && line.starts_with('#') {
                fenced_hash_lines += 1;
                assert!(
                    !heading_starts.contains(&offset),
                    "{path}: fenced line {line:?} was taken for a heading"
                );
            }
            offset += line.len();
        }
    }
    assert!(
        fenced_hash_lines >= 10,
        "only {fenced_hash_lines} `#` lines inside code fences"
    );
}
