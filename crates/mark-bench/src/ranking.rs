//! The ranking benchmark: how often LOOKUP's top row is the section a
//! query names, against a plain tantivy index over the same sections
//! (sections as documents, heading ×3, English stemming, any-word), in one
//! run. It reads the corpora in place, in process (mark-store's engine, no
//! server): ranking, not transport, is measured.
//!
//! Two query sets (issue #13):
//! - **API names** (Node corpus): every heading that starts with a dotted
//!   name and `(` (`fs.readFile(path[, options], callback)`), one query per
//!   distinct name (`fs.readFile`); a hit is a top row in a file holding such
//!   a heading whose anchor starts with the name's slug (any overload).
//! - **unique headings**: every heading whose text is unique in its corpus,
//!   queried by its own words (the benchmark's stop words dropped); a hit is
//!   that very section as the top row.
//!
//! And the **question sets** (issue #27): each question of a
//! `questions.toml`, queried as the plain agent asks it (the question's
//! words, the benchmark's stop words dropped), ranked over 10 rows; a hit is
//! a row of the answer's section (`section`) or of a subsection inside it.
//! Reported as top-1, top-3, top-5 and the mean reciprocal rank, for LOOKUP
//! and for the plain tantivy reference.

use crate::BenchError;
use crate::questions::AnswerSection;
use crate::terms::terms;
use mark_proto::lookup::query_words;
use mark_proto::{Request, Status, Verb};
use mark_store::{Engine, StoreMode};
use markdown_slice::{Document, slugify};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{STORED, STRING, Schema, TEXT, Value};
use tantivy::{Index, IndexReader, TantivyDocument};

/// The share of queries each set must answer with its section first.
pub const API_TARGET: f64 = 96.0;
/// See [`API_TARGET`].
pub const HEADING_TARGET: f64 = 95.0;
/// Misses listed per row in the report.
const MISSES_SHOWN: usize = 8;

/// One section of a corpus: where it is and what the reference indexes.
#[derive(Debug, Clone)]
struct Section {
    path: String,
    anchor: Option<String>,
    heading: String,
    text: String,
}

/// A query and the top rows that count as its answer.
#[derive(Debug, Clone)]
struct Query {
    text: String,
    /// What the reference parses: the query's words, space-separated.
    words: String,
    answers: Answers,
}

#[derive(Debug, Clone)]
enum Answers {
    /// A section of one of these files whose anchor starts with the slug.
    SlugIn(BTreeSet<String>, String),
    /// Exactly this section.
    Section(String, String),
    /// A section of this file with one of these anchors (a section and its
    /// subsections); no anchors: any row of the file.
    Within(String, BTreeSet<String>),
}

impl Answers {
    fn accepts(&self, path: &str, anchor: Option<&str>) -> bool {
        match self {
            Answers::SlugIn(files, slug) => {
                files.contains(path) && anchor.is_some_and(|a| a.starts_with(slug.as_str()))
            }
            Answers::Section(p, a) => p == path && anchor == Some(a.as_str()),
            Answers::Within(p, anchors) => {
                p == path && (anchors.is_empty() || anchor.is_some_and(|a| anchors.contains(a)))
            }
        }
    }
}

/// One query set on one corpus.
#[derive(Debug, Clone, Serialize)]
pub struct RankingRow {
    /// The corpus's name.
    pub corpus: String,
    /// Which query set.
    pub set: String,
    /// Queries run.
    pub queries: usize,
    /// Queries whose top LOOKUP row is the answer.
    pub lookup_top: usize,
    /// Queries whose top reference row is the answer.
    pub reference_top: usize,
    /// The target share, in percent.
    pub target: f64,
    /// A few queries LOOKUP missed: `query → top row`.
    pub misses: Vec<String>,
}

impl RankingRow {
    fn share(n: usize, of: usize) -> f64 {
        if of == 0 {
            0.0
        } else {
            100.0 * n as f64 / of as f64
        }
    }

    /// LOOKUP's share, in percent.
    pub fn lookup_share(&self) -> f64 {
        Self::share(self.lookup_top, self.queries)
    }

    /// The reference's share, in percent.
    pub fn reference_share(&self) -> f64 {
        Self::share(self.reference_top, self.queries)
    }

    /// At the target and at least as good as the reference.
    pub fn met(&self) -> bool {
        self.lookup_share() >= self.target && self.lookup_top >= self.reference_top
    }
}

/// A corpus to measure: its name and folder.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// Shown in the table.
    pub name: String,
    /// The folder of markdown files.
    pub dir: PathBuf,
    /// Whether its headings hold API names (the API-name set runs on it).
    pub api: bool,
}

/// Every `*.md` under `dir` (hidden entries skipped) as `/rel/path.md`, sorted.
fn markdown_files(dir: &Path) -> Result<Vec<(String, PathBuf)>, BenchError> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|source| BenchError::Io {
            what: format!("reading {}", d.display()),
            source,
        })?;
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with('.') {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else if name.ends_with(".md")
                && let Ok(rel) = path.strip_prefix(dir)
            {
                out.push((format!("/{}", rel.to_string_lossy()), path));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Each document's sections as LOOKUP splits them: the preamble, then
/// every heading with its own text (subsections excluded).
fn sections(dir: &Path) -> Result<Vec<Section>, BenchError> {
    let mut out = Vec::new();
    for (rel, file) in markdown_files(dir)? {
        let source = std::fs::read_to_string(&file).map_err(|source| BenchError::Io {
            what: format!("reading {}", file.display()),
            source,
        })?;
        let doc = Document::parse(&source);
        let headings = doc.headings();
        out.push(Section {
            path: rel.clone(),
            anchor: None,
            heading: String::new(),
            text: source.get(doc.preamble_range()).unwrap_or("").to_string(),
        });
        for (i, h) in headings.iter().enumerate() {
            let end = headings
                .get(i + 1)
                .map_or(doc.body_range().end, |next| next.line.start);
            out.push(Section {
                path: rel.clone(),
                anchor: h.anchor.clone(),
                heading: h.text.clone(),
                text: source
                    .get(h.line.end.min(end)..end)
                    .unwrap_or("")
                    .to_string(),
            });
        }
    }
    Ok(out)
}

/// The dotted name a heading starts with when `(` follows it
/// (`fs.readFile(path)` → `fs.readFile`).
fn api_name(heading: &str) -> Option<&str> {
    let text = heading.trim_start_matches('`');
    let (name, _) = text.split_once('(')?;
    let word = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
    };
    (name.contains('.') && name.split('.').all(word)).then_some(name)
}

fn words_of(query: &str) -> String {
    query_words(query).searched.join(" ")
}

/// The API-name queries of a corpus: one per distinct dotted name.
fn api_queries(sections: &[Section]) -> Vec<Query> {
    let mut files: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for s in sections.iter().filter(|s| s.anchor.is_some()) {
        if let Some(name) = api_name(&s.heading) {
            files.entry(name).or_default().insert(s.path.clone());
        }
    }
    files
        .into_iter()
        .map(|(name, files)| Query {
            text: name.to_string(),
            words: words_of(name),
            answers: Answers::SlugIn(files, slugify(name)),
        })
        .collect()
}

/// The distinct API names of the corpus in `dir` (the API-name set's
/// queries), sorted.
pub fn api_names(dir: &Path) -> Result<Vec<String>, BenchError> {
    Ok(api_queries(&sections(dir)?)
        .into_iter()
        .map(|q| q.text)
        .collect())
}

/// The unique-heading queries of a corpus: one per heading whose text no
/// other heading has, by its words without stop words.
fn heading_queries(sections: &[Section]) -> Vec<Query> {
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for s in sections.iter().filter(|s| s.anchor.is_some()) {
        *count.entry(s.heading.as_str()).or_default() += 1;
    }
    sections
        .iter()
        .filter(|s| count.get(s.heading.as_str()) == Some(&1))
        .filter_map(|s| {
            let words = terms(&s.heading).join(" ");
            (!words.is_empty()).then(|| Query {
                text: words.clone(),
                words: words_of(&words),
                answers: Answers::Section(s.path.clone(), s.anchor.clone().unwrap_or_default()),
            })
        })
        .collect()
}

/// The plain tantivy index: one document per section, heading and text
/// with tantivy's English-stemming tokenizer, heading boosted ×3, the
/// query parser's default any-word (OR) queries.
struct Reference {
    reader: IndexReader,
    parser: QueryParser,
    path: tantivy::schema::Field,
    anchor: tantivy::schema::Field,
}

impl Reference {
    fn build(sections: &[Section]) -> tantivy::Result<Reference> {
        let mut schema = Schema::builder();
        let path = schema.add_text_field("path", STRING | STORED);
        let anchor = schema.add_text_field("anchor", STRING | STORED);
        let heading = schema.add_text_field("heading", tantivy_text());
        let text = schema.add_text_field("text", tantivy_text());
        let index = Index::create_in_ram(schema.build());
        let mut writer = index.writer_with_num_threads(1, 50_000_000)?;
        for s in sections {
            let mut doc = TantivyDocument::default();
            doc.add_text(path, &s.path);
            doc.add_text(anchor, s.anchor.as_deref().unwrap_or(""));
            doc.add_text(heading, &s.heading);
            doc.add_text(text, &s.text);
            writer.add_document(doc)?;
        }
        writer.commit()?;
        let mut parser = QueryParser::for_index(&index, vec![heading, text]);
        parser.set_field_boost(heading, 3.0);
        Ok(Reference {
            reader: index.reader()?,
            parser,
            path,
            anchor,
        })
    }

    /// The top row's path and anchor (`None` for a preamble).
    fn top(&self, words: &str) -> Option<(String, Option<String>)> {
        self.rows(words, 1).into_iter().next()
    }

    /// The first `limit` rows' paths and anchors.
    fn rows(&self, words: &str, limit: usize) -> Vec<(String, Option<String>)> {
        let (query, _) = self.parser.parse_query_lenient(words);
        let searcher = self.reader.searcher();
        let Ok(top) = searcher.search(&query, &TopDocs::with_limit(limit).order_by_score()) else {
            return Vec::new();
        };
        top.iter()
            .filter_map(|(_, address)| {
                let doc: TantivyDocument = searcher.doc(*address).ok()?;
                let field = |f| {
                    doc.get_first(f)
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default()
                };
                let anchor = field(self.anchor);
                Some((field(self.path), (!anchor.is_empty()).then_some(anchor)))
            })
            .collect()
    }
}

fn tantivy_text() -> tantivy::schema::TextOptions {
    TEXT.set_indexing_options(
        tantivy::schema::TextFieldIndexing::default()
            .set_tokenizer("en_stem")
            .set_index_option(tantivy::schema::IndexRecordOption::WithFreqsAndPositions),
    )
}

/// LOOKUP's top row: body mode, any word, as mark-mcp asks.
fn lookup_top(engine: &Engine, query: &str, now: SystemTime) -> Option<(String, Option<String>)> {
    lookup_rows(engine, query, 1, now).into_iter().next()
}

/// LOOKUP's first `limit` rows: body mode, any word, as mark-mcp asks.
fn lookup_rows(
    engine: &Engine,
    query: &str,
    limit: usize,
    now: SystemTime,
) -> Vec<(String, Option<String>)> {
    let request = Request::new(Verb::Lookup, "/")
        .with_meta("query", query)
        .with_meta("match", "body")
        .with_meta("terms", "any")
        .with_meta("limit", limit.to_string());
    let response = engine.handle(&request, now);
    if response.status != Status::Ok {
        return Vec::new();
    }
    mark_proto::lookup::parse(&response.body).map_or_else(
        |_| Vec::new(),
        |table| table.rows.into_iter().map(|r| (r.path, r.anchor)).collect(),
    )
}

fn show(top: Option<&(String, Option<String>)>) -> String {
    match top {
        None => "no row".into(),
        Some((path, None)) => path.clone(),
        Some((path, Some(anchor))) => format!("{path}#{anchor}"),
    }
}

fn measure(
    corpus: &str,
    set: &str,
    target: f64,
    queries: &[Query],
    engine: &Engine,
    reference: &Reference,
) -> RankingRow {
    let now = SystemTime::now();
    let mut row = RankingRow {
        corpus: corpus.to_string(),
        set: set.to_string(),
        queries: queries.len(),
        lookup_top: 0,
        reference_top: 0,
        target,
        misses: Vec::new(),
    };
    let hit = |top: &Option<(String, Option<String>)>, q: &Query| {
        top.as_ref()
            .is_some_and(|(p, a)| q.answers.accepts(p, a.as_deref()))
    };
    for q in queries {
        let ours = lookup_top(engine, &q.text, now);
        if hit(&ours, q) {
            row.lookup_top += 1;
        } else if row.misses.len() < MISSES_SHOWN {
            row.misses
                .push(format!("`{}` → {}", q.text, show(ours.as_ref())));
        }
        if hit(&reference.top(&q.words), q) {
            row.reference_top += 1;
        }
    }
    row
}

/// Runs both query sets on every corpus (the API-name set only where
/// `api` is set).
pub fn run_ranking(corpora: &[Corpus]) -> Result<Vec<RankingRow>, BenchError> {
    let mut rows = Vec::new();
    for corpus in corpora {
        let sections = sections(&corpus.dir)?;
        let reference =
            Reference::build(&sections).map_err(|e| BenchError::Server(format!("tantivy: {e}")))?;
        let engine = Engine::open(&corpus.dir, StoreMode::Flat, None)
            .map_err(|e| BenchError::Server(format!("opening {}: {e}", corpus.dir.display())))?;
        if corpus.api {
            let queries = api_queries(&sections);
            rows.push(measure(
                &corpus.name,
                "API names",
                API_TARGET,
                &queries,
                &engine,
                &reference,
            ));
        }
        let queries = heading_queries(&sections);
        rows.push(measure(
            &corpus.name,
            "unique headings",
            HEADING_TARGET,
            &queries,
            &engine,
            &reference,
        ));
    }
    Ok(rows)
}

/// Rows a question set ranks over.
const QUESTION_ROWS: usize = 10;

/// A question set to measure: a knowledge base and its `questions.toml`.
#[derive(Debug, Clone)]
pub struct QuestionSet {
    /// Shown in the table.
    pub name: String,
    /// The knowledge base folder.
    pub dir: PathBuf,
    /// Its questions file.
    pub questions: PathBuf,
}

/// Where one search put the answer, over a question set.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Ranks {
    /// Questions whose answer is row 1.
    pub top1: usize,
    /// … within rows 1–3.
    pub top3: usize,
    /// … within rows 1–5.
    pub top5: usize,
    /// Mean of 1/rank over the questions (0 for an answer not in the rows).
    pub mrr: f64,
}

impl Ranks {
    fn of(ranks: &[Option<usize>]) -> Ranks {
        let within = |n: usize| ranks.iter().filter(|r| r.is_some_and(|r| r <= n)).count();
        let sum: f64 = ranks.iter().flatten().map(|&r| 1.0 / r as f64).sum();
        Ranks {
            top1: within(1),
            top3: within(3),
            top5: within(5),
            mrr: if ranks.is_empty() {
                0.0
            } else {
                sum / ranks.len() as f64
            },
        }
    }
}

/// One question set's figures.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionRanking {
    /// The set's name.
    pub set: String,
    /// Questions asked.
    pub questions: usize,
    /// LOOKUP's ranks.
    pub lookup: Ranks,
    /// The plain tantivy reference's ranks.
    pub reference: Ranks,
    /// Questions whose answer LOOKUP did not rank in the top 5: `id → top row`.
    pub misses: Vec<String>,
}

/// Ranks each question set's answers over 10 rows, LOOKUP beside the plain
/// tantivy reference (the same sections).
pub fn run_question_ranking(sets: &[QuestionSet]) -> Result<Vec<QuestionRanking>, BenchError> {
    let now = SystemTime::now();
    let mut out = Vec::new();
    for set in sets {
        let questions = crate::questions::load_questions(&set.questions)?;
        let sections = sections(&set.dir)?;
        let reference =
            Reference::build(&sections).map_err(|e| BenchError::Server(format!("tantivy: {e}")))?;
        let engine = Engine::open(&set.dir, StoreMode::Flat, None)
            .map_err(|e| BenchError::Server(format!("opening {}: {e}", set.dir.display())))?;
        let (mut ours, mut theirs, mut misses) = (Vec::new(), Vec::new(), Vec::new());
        for q in &questions {
            let section = AnswerSection::read(&set.dir, q)?;
            let answer = Answers::Within(section.path.clone(), section.anchors());
            let query = terms(&q.question).join(" ");
            let rank = |rows: &[(String, Option<String>)]| {
                rows.iter()
                    .position(|(p, a)| answer.accepts(p, a.as_deref()))
                    .map(|i| i + 1)
            };
            let rows = lookup_rows(&engine, &query, QUESTION_ROWS, now);
            let r = rank(&rows);
            if r.is_none_or(|r| r > 5) && misses.len() < MISSES_SHOWN {
                misses.push(format!("{} → {}", q.id, show(rows.first())));
            }
            ours.push(r);
            theirs.push(rank(&reference.rows(&words_of(&query), QUESTION_ROWS)));
        }
        out.push(QuestionRanking {
            set: set.name.clone(),
            questions: questions.len(),
            lookup: Ranks::of(&ours),
            reference: Ranks::of(&theirs),
            misses,
        });
    }
    Ok(out)
}

/// The markdown table of [`run_question_ranking`], and LOOKUP's misses.
pub fn render_question_ranking(rows: &[QuestionRanking]) -> String {
    let mut out = String::from(
        "| question set | questions | LOOKUP top-1 / 3 / 5 | LOOKUP MRR | plain tantivy top-1 / 3 / 5 | plain tantivy MRR |\n\
         |---|---|---|---|---|---|\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} / {} / {} | {:.2} | {} / {} / {} | {:.2} |\n",
            r.set,
            r.questions,
            r.lookup.top1,
            r.lookup.top3,
            r.lookup.top5,
            r.lookup.mrr,
            r.reference.top1,
            r.reference.top3,
            r.reference.top5,
            r.reference.mrr
        ));
    }
    for r in rows.iter().filter(|r| !r.misses.is_empty()) {
        out.push_str(&format!(
            "\nNot in LOOKUP's top 5, {} (first {}): {}\n",
            r.set,
            r.misses.len(),
            r.misses.join("; ")
        ));
    }
    out
}

/// The markdown table of [`run_ranking`]'s rows, and LOOKUP's misses.
pub fn render_ranking(rows: &[RankingRow]) -> String {
    let mut out = String::from(
        "| corpus | queries | set | LOOKUP top row | plain tantivy top row | target | met |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {:.1} % ({}) | {:.1} % ({}) | ≥ {:.0} % and ≥ reference | {} |\n",
            r.corpus,
            r.queries,
            r.set,
            r.lookup_share(),
            r.lookup_top,
            r.reference_share(),
            r.reference_top,
            r.target,
            if r.met() { "yes" } else { "no" }
        ));
    }
    for r in rows.iter().filter(|r| !r.misses.is_empty()) {
        out.push_str(&format!(
            "\nLOOKUP misses, {} {} (first {}):\n",
            r.corpus,
            r.set,
            r.misses.len()
        ));
        for m in &r.misses {
            out.push_str(&format!("- {m}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_names_are_dotted_names_before_a_parenthesis() {
        assert_eq!(
            api_name("`fs.readFile(path[, options], callback)`"),
            Some("fs.readFile")
        );
        assert_eq!(api_name("fs.promises.open(path)"), Some("fs.promises.open"));
        assert_eq!(api_name("new Foo(x)"), None);
        assert_eq!(api_name("readFile(path)"), None);
        assert_eq!(api_name("Class: fs.Dir"), None);
    }

    #[test]
    fn a_slug_answer_takes_any_overload_of_its_files() {
        let files: BTreeSet<String> = ["/fs.md".to_string()].into();
        let a = Answers::SlugIn(files, slugify("fs.readFile"));
        assert!(a.accepts("/fs.md", Some("fsreadfilepath-options-callback")));
        assert!(!a.accepts("/fs.md", Some("file-descriptors")));
        assert!(!a.accepts("/buffer.md", Some("fsreadfile")));
    }

    #[test]
    fn ranks_count_top_rows_and_the_mean_reciprocal_rank() {
        let r = Ranks::of(&[Some(1), Some(2), Some(4), None]);
        assert_eq!((r.top1, r.top3, r.top5), (1, 2, 3));
        assert!((r.mrr - (1.0 + 0.5 + 0.25) / 4.0).abs() < 1e-9);
        let within = Answers::Within(
            "/a.md".into(),
            ["x".to_string(), "x-sub".to_string()].into(),
        );
        assert!(within.accepts("/a.md", Some("x-sub")));
        assert!(!within.accepts("/a.md", Some("y")) && !within.accepts("/b.md", Some("x")));
        assert!(Answers::Within("/a.md".into(), BTreeSet::new()).accepts("/a.md", None));
    }
}
