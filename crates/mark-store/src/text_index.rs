//! The tantivy index behind LOOKUP, in RAM or persisted in a folder
//! (memory-mapped, so resident memory does not grow with the corpus, and
//! shared by the processes that serve one source): one tantivy document per
//! section (its own text, its own heading, the headings above it, the
//! document's title and tags) and one per document (title and tags, all its
//! headings) for catalog rows, and one per link from a document to a
//! section of another (its document's title and the words around it: what
//! others say of that section, which in any-word mode raises its rank).
//!
//! Words are mark-proto's word rule ([`word_spans`], lower-cased, no length
//! cut-off below tantivy's own limit, so a long identifier stays one word). Each text field has an
//! English-stemmed twin that only ranks, and only in any-word mode: all-words
//! recall uses the exact fields, so the wire default finds what it always
//! found. Scores are BM25 per field with boosts: the own heading and the
//! title and tags above the text, above the headings above (in any-word
//! mode a word scores by its best field, see [`TIE`]); a stemmed field
//! weighs [`STEM`] of its exact twin, so exact forms rank first. Each pair
//! of adjacent query words is also a phrase query on text and heading, so
//! `fs.readFile` or `2023-11-20` rank the sections holding that run first,
//! and a section whose heading is the query ranks above one that only
//! mentions it ([`W_NAMED`]).
//!
//! Writes are buffered and committed before the next search, so a burst of
//! PUBLISHes costs one commit. A persisted index has no writer between
//! updates: [`TextIndex::lock_writer`] takes tantivy's writer lock for one
//! update and [`TextIndex::commit_with`] releases it after the commit, whose
//! payload names what the caller saved beside it; other processes read
//! what is committed ([`TextIndex::reload`]).
//!
//! Ranking is exactly a fresh build's, however the index was edited: tantivy
//! keeps deleted entries (and their words and tokens) in its statistics
//! until a merge, and a merge only estimates the tokens. So the BM25
//! statistics are the live entries': their count and tokens per field are
//! kept here as entries are added and removed ([`Live`]), and a word's
//! count skips deleted entries. A word longer than tantivy's
//! `MAX_TOKEN_LEN` cannot be indexed: it is left out here, silently (tantivy
//! would log a warning per field and entry).

use mark_proto::lookup::{query_words, word_spans};
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::directory::error::LockError;
use tantivy::directory::{Directory, INDEX_WRITER_LOCK, MmapDirectory};
use tantivy::indexer::IndexWriterOptions;
use tantivy::query::{
    Bm25StatisticsProvider, BooleanQuery, BoostQuery, ConstScoreQuery, DisjunctionMaxQuery,
    EnableScoring, Occur, PhraseQuery, Query, TermQuery, Weight,
};
use tantivy::schema::{
    FAST, Field, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::tokenizer::{
    Language, MAX_TOKEN_LEN, Stemmer, TextAnalyzer, Token, TokenStream, Tokenizer,
};
use tantivy::{
    BitSet, DocAddress, DocId, Index, IndexReader, IndexWriter, ReloadPolicy, Score, Searcher,
    SegmentOrdinal, SegmentReader, TantivyDocument, TantivyError, Term,
};

const WORDS: &str = "mark_words";
const STEMMED: &str = "mark_words_en";
/// Boosts per field (BM25 scores are summed over the matching clauses).
const W_HEADING: Score = 2.0;
const W_TITLE: Score = 2.0;
const W_TEXT: Score = 1.0;
const W_TRAIL: Score = 0.5;
const W_LINKED: Score = 1.0;
/// A stemmed field's weight relative to its exact twin.
const STEM: Score = 0.4;
/// In any-word mode each word scores by its best field, plus this share
/// of its other fields' scores (a disjunction max): a word found in a
/// section's heading, title and text at once counts about once, so holding
/// more of the words beats holding one of them everywhere.
const TIE: Score = 0.3;
/// Extra weight of two adjacent query words found adjacent, per field weight.
const W_PHRASE: Score = 1.0;
/// Extra weight of a section whose heading is the query: its words, all
/// of them, in order and nothing else (`Driftwood` for `driftwood`).
const W_NAMED: Score = 1.0;
/// Extra weight of a section whose document a query word names: the
/// word is the document's title, an alias, a tag, its file or its folder
/// name (`lumen` for `lumen/index.md`).
const W_DOCUMENT_NAMED: Score = 1.0;
/// A catalog row's weight: every word in the title and tags is the
/// strongest signal catalog mode has, so such a row ranks above sections.
const W_DOCUMENT: Score = 2.0;
/// Indexing memory (tantivy's minimum per thread is 15 MB).
const WRITER_BYTES: usize = 20_000_000;
/// How often a busy writer lock is tried again.
const LOCK_POLL: Duration = Duration::from_millis(20);
/// Reloads tried when a commit lands between reading the index and its
/// meta file (see [`TextIndex::reload`]).
const RELOAD_TRIES: usize = 5;

/// mark-proto's word rule as a tantivy tokenizer: runs of letters, digits
/// and `_`, lower-cased, positions counted in words.
#[derive(Clone, Default)]
struct WordTokenizer;

struct WordStream {
    tokens: Vec<Token>,
    next: usize,
}

impl Tokenizer for WordTokenizer {
    type TokenStream<'a> = WordStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> WordStream {
        let tokens = word_spans(text)
            .enumerate()
            .map(|(position, (start, w))| Token {
                offset_from: start,
                offset_to: start + w.len(),
                position,
                text: w.to_lowercase(),
                position_length: 1,
            })
            // What tantivy could not index anyway (it would warn for each).
            .filter(|t| t.text.len() <= MAX_TOKEN_LEN)
            .collect();
        WordStream { tokens, next: 0 }
    }
}

/// The tokens [`WordTokenizer`] makes of `text` (its stemmed twin makes as
/// many): what tantivy counts in a field's statistics.
fn token_count(text: &str) -> u64 {
    // Lower-casing grows a word by at most half again (`İ` → `i̇`): only
    // words near the limit are lower-cased to be sure.
    word_spans(text)
        .filter(|(_, w)| {
            w.len() * 3 / 2 <= MAX_TOKEN_LEN || w.to_lowercase().len() <= MAX_TOKEN_LEN
        })
        .count() as u64
}

/// What the live (not deleted) entries of some documents add to the
/// BM25 statistics: their count by kind and their tokens per field (a
/// persisted index keeps each document's in its catalog file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Live {
    /// Links.
    pub links: u64,
    /// Sections and catalog entries.
    pub others: u64,
    /// Tokens by field.
    pub tokens: HashMap<Field, u64>,
}

impl Live {
    fn add(&mut self, other: &Live) {
        self.links += other.links;
        self.others += other.others;
        for (field, n) in &other.tokens {
            *self.tokens.entry(*field).or_default() += n;
        }
    }

    fn subtract(&mut self, other: &Live) {
        self.links -= other.links;
        self.others -= other.others;
        for (field, n) in &other.tokens {
            if let Some(held) = self.tokens.get_mut(field) {
                *held -= n;
            }
        }
    }
}

impl TokenStream for WordStream {
    fn advance(&mut self) -> bool {
        if self.next < self.tokens.len() {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        &self.tokens[self.next.saturating_sub(1)]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.next.saturating_sub(1)]
    }
}

/// An exact field and its stemmed twin.
#[derive(Clone, Copy)]
struct Pair {
    exact: Field,
    stemmed: Field,
    weight: Score,
}

#[derive(Clone, Copy)]
struct Fields {
    kind: Field,
    path: Field,
    /// A section heading's words as one term (see [`named_key`]).
    named: Field,
    /// The names of a section's document, each as one term (see
    /// [`SectionEntry::names`]).
    document_named: Field,
    ord: Field,
    body: Field,
    title: Pair,
    heading: Pair,
    trail: Pair,
    text: Pair,
    linked: Pair,
}

const SECTION: &str = "s";
const DOCUMENT: &str = "d";
const LINK: &str = "l";

/// One section to index.
pub(crate) struct SectionEntry<'a> {
    /// The caller's key for this row.
    pub ord: u64,
    /// The document's encoded path (its sections are removed by it).
    pub path: &'a str,
    /// The document's title and tags.
    pub title: &'a str,
    /// The names its document goes by, each as its query words (title,
    /// aliases, tags, file and folder name).
    pub names: &'a [Vec<String>],
    /// The section's own heading ("" for a preamble).
    pub heading: &'a str,
    /// The headings above it.
    pub trail: &'a str,
    /// Its own text (subsections excluded); also kept for snippets.
    pub text: &'a str,
}

/// One document's catalog entry.
pub(crate) struct DocumentEntry<'a> {
    /// The caller's key for this row.
    pub ord: u64,
    /// The document's encoded path.
    pub path: &'a str,
    /// Its title and tags.
    pub title: &'a str,
    /// All its headings.
    pub headings: &'a str,
}

/// One link to a section of another document.
pub(crate) struct LinkEntry<'a> {
    /// The caller's key for this link.
    pub ord: u64,
    /// The encoded path of the document holding the link (its links are
    /// removed with it).
    pub path: &'a str,
    /// Its document's title and the words around it (the link's own text
    /// left out).
    pub context: &'a str,
}

/// One matching row: the caller's key, the score, whether a section holds
/// a query word in its own text or heading, which query words it holds,
/// where to read it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hit {
    pub ord: u64,
    pub score: Score,
    pub itself: bool,
    /// Bit `i` set: the entry holds query word `i` in its text, headings,
    /// title or tags, exactly or by its English stem (an any-word section
    /// search only; 0 otherwise).
    pub held: u64,
    pub address: DocAddress,
}

/// The most query words a search tells apart in [`Hit::held`]: one bit
/// each, so the mask's width.
pub(crate) const MAX_HELD_WORDS: usize = u64::BITS as usize;

/// The index and its writer: always there in RAM; for a persisted index
/// only while an update holds tantivy's writer lock.
pub(crate) struct TextIndex {
    fields: Fields,
    index: Index,
    writer: Option<IndexWriter>,
    reader: IndexReader,
    stemmer: TextAnalyzer,
    uncommitted: bool,
    /// What each document's live entries add to the statistics, by path.
    live_by_path: HashMap<String, Live>,
    /// All live entries, as added and removed (the writer's view).
    live: Live,
    /// `live` at the last commit: what searches see.
    committed: Live,
    /// A persisted index's folder; `None` in RAM.
    folder: Option<PathBuf>,
}

impl std::fmt::Debug for TextIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextIndex").finish_non_exhaustive()
    }
}

fn io_error(e: tantivy::TantivyError) -> io::Error {
    io::Error::other(format!("search index: {e}"))
}

/// The schema every index has (an index whose schema differs is of
/// another format).
fn schema() -> (Schema, Fields) {
    let mut schema = Schema::builder();
    let text_options = |tokenizer: &str| {
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(tokenizer)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        )
    };
    let mut pair = |name: &str, weight: Score| Pair {
        exact: schema.add_text_field(name, text_options(WORDS)),
        stemmed: schema.add_text_field(&format!("{name}_en"), text_options(STEMMED)),
        weight,
    };
    let (title, heading, trail, text, linked) = (
        pair("title", W_TITLE),
        pair("heading", W_HEADING),
        pair("trail", W_TRAIL),
        pair("text", W_TEXT),
        pair("linked", W_LINKED),
    );
    let fields = Fields {
        kind: schema.add_text_field("kind", STRING),
        path: schema.add_text_field("path", STRING),
        named: schema.add_text_field("named", STRING),
        document_named: schema.add_text_field("document_named", STRING),
        ord: schema.add_u64_field("ord", FAST),
        body: schema.add_text_field("body", STORED),
        title,
        heading,
        trail,
        text,
        linked,
    };
    (schema.build(), fields)
}

fn stemmer() -> TextAnalyzer {
    TextAnalyzer::builder(WordTokenizer)
        .filter(Stemmer::new(Language::English))
        .build()
}

fn writer_of(index: &Index) -> tantivy::Result<IndexWriter> {
    index.writer_with_options(
        IndexWriterOptions::builder()
            .memory_budget_per_thread(WRITER_BYTES)
            .num_worker_threads(1)
            .num_merge_threads(1)
            .build(),
    )
}

impl TextIndex {
    /// An empty index in RAM.
    pub(crate) fn new() -> io::Result<TextIndex> {
        let (schema, fields) = schema();
        let index = Index::create_in_ram(schema);
        Self::register(&index);
        let writer = Some(writer_of(&index).map_err(io_error)?);
        Self::with(index, fields, writer, None)
    }

    /// The index persisted in `folder`, which must exist: opened as it was
    /// last committed, or created there empty when the folder holds none.
    /// An index of another schema, or one tantivy cannot read, is an
    /// error (the caller rebuilds it, see [`TextIndex::create_over`]).
    pub(crate) fn open_or_create(folder: &Path) -> io::Result<TextIndex> {
        let (schema, fields) = schema();
        let dir = MmapDirectory::open(folder).map_err(|e| io::Error::other(e.to_string()))?;
        let index = Index::open_or_create(dir, schema).map_err(io_error)?;
        Self::register(&index);
        Self::with(index, fields, None, Some(folder.to_path_buf()))
    }

    /// A new empty index in `folder` in place of whatever is there (an
    /// unreadable index or one of another schema), once no other process
    /// writes it: every file is removed under tantivy's writer lock,
    /// waiting for it at most `wait`.
    pub(crate) fn create_over(folder: &Path, wait: Duration) -> io::Result<TextIndex> {
        let dir = MmapDirectory::open(folder).map_err(|e| io::Error::other(e.to_string()))?;
        let deadline = Instant::now() + wait;
        let _lock = loop {
            match dir.acquire_lock(&INDEX_WRITER_LOCK) {
                Ok(lock) => break lock,
                Err(LockError::LockBusy) if Instant::now() < deadline => {
                    std::thread::sleep(LOCK_POLL)
                }
                Err(e) => return Err(io::Error::other(e.to_string())),
            }
        };
        for entry in std::fs::read_dir(folder)?.flatten() {
            let name = entry.file_name();
            // The lock file stays: others wait on it.
            if name.to_str() == INDEX_WRITER_LOCK.filepath.to_str() {
                continue;
            }
            let path = entry.path();
            if path.is_dir() {
                std::fs::remove_dir_all(&path)?;
            } else {
                std::fs::remove_file(&path)?;
            }
        }
        drop(dir);
        Self::open_or_create(folder)
    }

    /// Registers the tokenizers on `index`.
    fn register(index: &Index) {
        index
            .tokenizers()
            .register(WORDS, TextAnalyzer::from(WordTokenizer));
        index.tokenizers().register(STEMMED, stemmer());
    }

    fn with(
        index: Index,
        fields: Fields,
        writer: Option<IndexWriter>,
        folder: Option<PathBuf>,
    ) -> io::Result<TextIndex> {
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(io_error)?;
        Ok(TextIndex {
            fields,
            index,
            writer,
            reader,
            stemmer: stemmer(),
            uncommitted: false,
            live_by_path: HashMap::new(),
            live: Live::default(),
            committed: Live::default(),
            folder,
        })
    }

    /// Whether this process holds the writer (always, in RAM).
    pub(crate) fn writing(&self) -> bool {
        self.writer.is_some()
    }

    /// Takes the writer lock of a persisted index, trying again until
    /// `wait` has passed; `false` when another process still holds it.
    /// The writer sees what is committed at that moment.
    pub(crate) fn lock_writer(&mut self, wait: Duration) -> io::Result<bool> {
        let deadline = Instant::now() + wait;
        while self.writer.is_none() {
            match writer_of(&self.index) {
                Ok(writer) => self.writer = Some(writer),
                Err(TantivyError::LockFailure(LockError::LockBusy, _)) => {
                    if Instant::now() >= deadline {
                        return Ok(false);
                    }
                    std::thread::sleep(LOCK_POLL);
                }
                Err(e) => return Err(io_error(e)),
            }
        }
        Ok(true)
    }

    /// Commits a persisted index: `save` is given the commit's opstamp
    /// before the commit and returns the payload committed with it (the
    /// name of what it saved); then the writer lock is released (merges
    /// finished) and searches see the commit.
    pub(crate) fn commit_with(
        &mut self,
        save: impl FnOnce(u64) -> io::Result<String>,
    ) -> io::Result<String> {
        let mut writer = self
            .writer
            .take()
            .ok_or_else(|| io::Error::other("search index: no writer to commit with"))?;
        let mut prepared = writer.prepare_commit().map_err(io_error)?;
        let payload = save(prepared.opstamp())?;
        prepared.set_payload(&payload);
        prepared.commit().map_err(io_error)?;
        writer.wait_merging_threads().map_err(io_error)?;
        self.reader.reload().map_err(io_error)?;
        self.committed = self.live.clone();
        self.uncommitted = false;
        Ok(payload)
    }

    /// Brings searches of a persisted index to what is committed now and
    /// returns that commit's payload (`None`: nothing committed with one).
    /// The reader and the payload are of one commit: read again while a
    /// commit lands between them. The statistics are the caller's to set
    /// ([`TextIndex::set_live`]).
    pub(crate) fn reload(&mut self) -> io::Result<Option<String>> {
        for _ in 0..RELOAD_TRIES {
            self.reader.reload().map_err(io_error)?;
            let searcher = self.reader.searcher();
            let metas = self.index.load_metas().map_err(io_error)?;
            let committed: std::collections::BTreeMap<_, _> = metas
                .segments
                .iter()
                .map(|s| (s.id(), s.delete_opstamp()))
                .collect();
            if &committed == searcher.generation().segments() {
                return Ok(metas.payload);
            }
        }
        Err(io::Error::other(
            "search index: commits kept landing while it was read",
        ))
    }

    /// Whether the committed index holds any entry (deleted ones included).
    pub(crate) fn holds_entries(&self) -> bool {
        self.reader.searcher().num_docs() > 0
    }

    /// Removes every entry (a persisted index whose catalog was lost is
    /// rebuilt from nothing); needs the writer.
    pub(crate) fn clear(&mut self) -> io::Result<()> {
        self.writer_mut()?
            .delete_all_documents()
            .map_err(io_error)?;
        self.live_by_path.clear();
        self.live = Live::default();
        self.uncommitted = true;
        Ok(())
    }

    /// What each document's entries add to the statistics, by path.
    pub(crate) fn live_by_path(&self) -> &HashMap<String, Live> {
        &self.live_by_path
    }

    /// Sets the statistics of a persisted index as its catalog file says,
    /// for what is committed now.
    pub(crate) fn set_live(&mut self, by_path: HashMap<String, Live>) {
        let mut all = Live::default();
        for live in by_path.values() {
            all.add(live);
        }
        self.live_by_path = by_path;
        self.live = all.clone();
        self.committed = all;
    }

    /// The field with tantivy's id `id`, when this schema has it.
    pub(crate) fn field(&self, id: u32) -> Option<Field> {
        let field = Field::from_field_id(id);
        (self.index.schema().fields().any(|(f, _)| f == field)).then_some(field)
    }

    fn writer_mut(&mut self) -> io::Result<&mut IndexWriter> {
        self.writer
            .as_mut()
            .ok_or_else(|| io::Error::other("search index: written without its writer lock"))
    }

    /// Adds `text` to both fields of `pair`, counting its tokens in `live`.
    fn add_pair(doc: &mut TantivyDocument, live: &mut Live, pair: Pair, text: &str) {
        doc.add_text(pair.exact, text);
        doc.add_text(pair.stemmed, text);
        let tokens = token_count(text);
        for field in [pair.exact, pair.stemmed] {
            *live.tokens.entry(field).or_default() += tokens;
        }
    }

    /// Adds a section (visible after the next search's commit).
    pub(crate) fn add_section(&mut self, s: &SectionEntry<'_>) -> io::Result<()> {
        let f = self.fields;
        let mut live = Live {
            others: 1,
            ..Live::default()
        };
        let mut doc = TantivyDocument::default();
        doc.add_text(f.kind, SECTION);
        doc.add_text(f.path, s.path);
        doc.add_u64(f.ord, s.ord);
        doc.add_text(f.body, s.text);
        Self::add_pair(&mut doc, &mut live, f.title, s.title);
        Self::add_pair(&mut doc, &mut live, f.heading, s.heading);
        let named = named_key(&query_words(s.heading).searched);
        // One token, the whole key; a key tantivy cannot index is left out.
        if named.len() <= MAX_TOKEN_LEN {
            doc.add_text(f.named, named);
            live.tokens.insert(f.named, 1);
        }
        let mut names = 0;
        for name in s.names.iter().map(|n| named_key(n)) {
            if name.len() <= MAX_TOKEN_LEN {
                doc.add_text(f.document_named, name);
                names += 1;
            }
        }
        if names > 0 {
            live.tokens.insert(f.document_named, names);
        }
        Self::add_pair(&mut doc, &mut live, f.trail, s.trail);
        Self::add_pair(&mut doc, &mut live, f.text, s.text);
        self.add(s.path, doc, &live)
    }

    /// Adds a document's catalog entry.
    pub(crate) fn add_document(&mut self, d: &DocumentEntry<'_>) -> io::Result<()> {
        let f = self.fields;
        let mut live = Live {
            others: 1,
            ..Live::default()
        };
        let mut doc = TantivyDocument::default();
        doc.add_text(f.kind, DOCUMENT);
        doc.add_text(f.path, d.path);
        doc.add_u64(f.ord, d.ord);
        Self::add_pair(&mut doc, &mut live, f.title, d.title);
        Self::add_pair(&mut doc, &mut live, f.heading, d.headings);
        self.add(d.path, doc, &live)
    }

    /// Adds a link to a section of another document.
    pub(crate) fn add_link(&mut self, l: &LinkEntry<'_>) -> io::Result<()> {
        let f = self.fields;
        let mut live = Live {
            links: 1,
            ..Live::default()
        };
        let mut doc = TantivyDocument::default();
        doc.add_text(f.kind, LINK);
        doc.add_text(f.path, l.path);
        doc.add_u64(f.ord, l.ord);
        Self::add_pair(&mut doc, &mut live, f.linked, l.context);
        self.add(l.path, doc, &live)
    }

    /// Adds an entry of the document at `path`, which adds `live` to the
    /// statistics.
    fn add(&mut self, path: &str, doc: TantivyDocument, live: &Live) -> io::Result<()> {
        self.writer_mut()?.add_document(doc).map_err(io_error)?;
        self.live_by_path
            .entry(path.to_string())
            .or_default()
            .add(live);
        self.live.add(live);
        self.uncommitted = true;
        Ok(())
    }

    /// Removes every entry of the document at `path`.
    pub(crate) fn remove(&mut self, path: &str) -> io::Result<()> {
        let term = Term::from_field_text(self.fields.path, path);
        self.writer_mut()?.delete_term(term);
        if let Some(gone) = self.live_by_path.remove(path) {
            self.live.subtract(&gone);
        }
        self.uncommitted = true;
        Ok(())
    }

    /// A searcher over everything added so far (a persisted index is
    /// committed by [`TextIndex::commit_with`] first: this one only
    /// commits in RAM).
    pub(crate) fn searcher(&mut self) -> io::Result<Searcher> {
        if self.uncommitted {
            if self.folder.is_some() {
                return Err(io::Error::other(
                    "search index: searched before its update was committed",
                ));
            }
            self.writer_mut()?.commit().map_err(io_error)?;
            self.reader.reload().map_err(io_error)?;
            self.committed = self.live.clone();
            self.uncommitted = false;
        }
        Ok(self.reader.searcher())
    }

    /// The stored text of a section hit.
    pub(crate) fn section_text(&self, searcher: &Searcher, address: DocAddress) -> String {
        searcher
            .doc::<TantivyDocument>(address)
            .ok()
            .and_then(|d| {
                d.get_first(self.fields.body)
                    .and_then(|v| v.as_str().map(str::to_string))
            })
            .unwrap_or_default()
    }

    fn stem(&self, word: &str) -> String {
        let mut analyzer = self.stemmer.clone();
        let mut stream = analyzer.token_stream(word);
        if stream.advance() {
            stream.token().text.clone()
        } else {
            word.to_string()
        }
    }

    fn kind(&self, kind: &str) -> (Occur, Box<dyn Query>) {
        let term = TermQuery::new(
            Term::from_field_text(self.fields.kind, kind),
            IndexRecordOption::Basic,
        );
        (
            Occur::Must,
            Box::new(ConstScoreQuery::new(Box::new(term), 0.0)),
        )
    }

    /// `word` in `pair`'s exact field, and in its stemmed one when `stemmed`.
    fn word_in(&self, pair: Pair, word: &str, stemmed: bool) -> Vec<(Occur, Box<dyn Query>)> {
        let term = |field: Field, text: &str, weight: Score| -> (Occur, Box<dyn Query>) {
            let q = TermQuery::new(
                Term::from_field_text(field, text),
                IndexRecordOption::WithFreqs,
            );
            (
                Occur::Should,
                Box::new(BoostQuery::new(Box::new(q), weight)),
            )
        };
        let mut out = vec![term(pair.exact, word, pair.weight)];
        if stemmed {
            out.push(term(pair.stemmed, &self.stem(word), pair.weight * STEM));
        }
        out
    }

    fn any_of(clauses: Vec<(Occur, Box<dyn Query>)>) -> Box<dyn Query> {
        Box::new(BooleanQuery::new(clauses))
    }

    /// Adjacent query words found adjacent in the text or heading.
    fn phrases(&self, words: &[String]) -> Vec<(Occur, Box<dyn Query>)> {
        let mut out: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for pair in words.windows(2) {
            for field in [self.fields.text, self.fields.heading] {
                let q = PhraseQuery::new(
                    pair.iter()
                        .map(|w| Term::from_field_text(field.exact, w))
                        .collect(),
                );
                out.push((
                    Occur::Should,
                    Box::new(BoostQuery::new(Box::new(q), W_PHRASE * field.weight)),
                ));
            }
        }
        out
    }

    /// Sections matching `words`: with `any`, every section holding one of
    /// them in its text or headings; else every section whose text,
    /// headings, title or tags hold them all, one at least in its text or
    /// headings. Each hit says whether it holds a word itself.
    pub(crate) fn sections(
        &self,
        searcher: &Searcher,
        words: &[String],
        any: bool,
    ) -> io::Result<Vec<Hit>> {
        let f = self.fields;
        let own = [f.heading, f.text];
        let located = [f.heading, f.text, f.trail];
        let anywhere = [f.title, f.heading, f.text, f.trail];
        let mut clauses = vec![self.kind(SECTION)];
        let in_section: Vec<(Occur, Box<dyn Query>)> = words
            .iter()
            .flat_map(|w| located.iter().flat_map(|p| self.word_in(*p, w, any)))
            .collect();
        if any {
            // Recall only; each word then scores by its best field.
            clauses.push((
                Occur::Must,
                Box::new(ConstScoreQuery::new(Self::any_of(in_section), 0.0)),
            ));
            for w in words {
                let disjuncts: Vec<Box<dyn Query>> = anywhere
                    .iter()
                    .flat_map(|p| self.word_in(*p, w, true))
                    .map(|(_, q)| q)
                    .collect();
                clauses.push((
                    Occur::Should,
                    Box::new(DisjunctionMaxQuery::with_tie_breaker(disjuncts, TIE)),
                ));
            }
        } else {
            clauses.push((Occur::Must, Self::any_of(in_section)));
            // Every word somewhere; scores come from these clauses too.
            for w in words {
                let somewhere = anywhere
                    .iter()
                    .flat_map(|p| self.word_in(*p, w, false))
                    .collect();
                clauses.push((Occur::Must, Self::any_of(somewhere)));
            }
        }
        clauses.extend(self.phrases(words));
        let named = TermQuery::new(
            Term::from_field_text(f.named, &named_key(words)),
            IndexRecordOption::Basic,
        );
        clauses.push((
            Occur::Should,
            Box::new(BoostQuery::new(Box::new(named), W_NAMED)),
        ));
        // A word that is its document's name (or the whole query, for a
        // name of several words) lifts every section of that document.
        let whole = (words.len() > 1).then(|| named_key(words));
        for name in words.iter().cloned().chain(whole) {
            let q = TermQuery::new(
                Term::from_field_text(f.document_named, &name),
                IndexRecordOption::Basic,
            );
            clauses.push((
                Occur::Should,
                Box::new(BoostQuery::new(Box::new(q), W_DOCUMENT_NAMED)),
            ));
        }
        // Sections holding a word in their own text or heading: a set per
        // segment, tested as each hit is collected.
        let itself = Self::any_of(
            words
                .iter()
                .flat_map(|w| own.iter().flat_map(|p| self.word_in(*p, w, any)))
                .collect(),
        )
        .weight(EnableScoring::disabled_from_searcher(searcher))
        .map_err(io_error)?;
        // Which words each hit holds anywhere (any-word mode: in all-words
        // mode every hit holds them all).
        let held = if any {
            words
                .iter()
                .take(MAX_HELD_WORDS)
                .map(|w| {
                    Self::any_of(
                        anywhere
                            .iter()
                            .flat_map(|p| self.word_in(*p, w, true))
                            .collect(),
                    )
                    .weight(EnableScoring::disabled_from_searcher(searcher))
                    .map_err(io_error)
                })
                .collect::<io::Result<Vec<_>>>()?
        } else {
            Vec::new()
        };
        self.search(
            searcher,
            SECTION,
            &BooleanQuery::new(clauses),
            &AllHits {
                itself: Some(itself),
                held,
            },
        )
    }

    /// Links whose context holds one of `words` (exactly or by stem),
    /// scored as any-word sections are.
    pub(crate) fn links(&self, searcher: &Searcher, words: &[String]) -> io::Result<Vec<Hit>> {
        let mut clauses = vec![self.kind(LINK)];
        let any = words
            .iter()
            .flat_map(|w| self.word_in(self.fields.linked, w, true))
            .collect();
        clauses.push((Occur::Must, Self::any_of(any)));
        self.search(
            searcher,
            LINK,
            &BooleanQuery::new(clauses),
            &AllHits::plain(),
        )
    }

    /// Documents whose title and tags hold every one of `words`.
    pub(crate) fn documents(&self, searcher: &Searcher, words: &[String]) -> io::Result<Vec<Hit>> {
        let f = self.fields;
        let mut clauses = vec![self.kind(DOCUMENT)];
        for w in words {
            clauses.push((Occur::Must, Self::any_of(self.word_in(f.title, w, false))));
            clauses.extend(self.word_in(f.heading, w, false));
        }
        let query = BoostQuery::new(Box::new(BooleanQuery::new(clauses)), W_DOCUMENT);
        self.search(searcher, DOCUMENT, &query, &AllHits::plain())
    }

    /// Runs `query` over the links (`kind` [`LINK`]) or over the sections
    /// and catalog entries, each scored as if the index held only those:
    /// links do not change the sections' BM25 statistics (a new link does
    /// not move every section's rank), nor sections the links'. The
    /// statistics are the live entries' (see the module's note).
    fn search(
        &self,
        searcher: &Searcher,
        kind: &str,
        query: &dyn Query,
        collector: &AllHits,
    ) -> io::Result<Vec<Hit>> {
        let live = &self.committed;
        let stats = KindStatistics {
            searcher,
            docs: if kind == LINK {
                live.links
            } else {
                live.others
            },
            tokens: &live.tokens,
        };
        searcher
            .search_with_statistics_provider(query, collector, &stats)
            .map_err(io_error)
    }

    /// How much each of `words` says about a section: its inverse document
    /// frequency over the sections' text and headings (stemmed, BM25's
    /// form), so a word most sections hold weighs little and a rare one
    /// much. Every weight is above 0.
    pub(crate) fn word_weights(
        &self,
        searcher: &Searcher,
        words: &[String],
    ) -> io::Result<Vec<f64>> {
        let f = self.fields;
        // The live entries' counts, as every search's (a fresh build's).
        let stats = KindStatistics {
            searcher,
            docs: self.committed.others,
            tokens: &self.committed.tokens,
        };
        let all = stats.total_num_docs().map_err(io_error)? as f64;
        words
            .iter()
            .map(|w| {
                let stem = self.stem(w);
                let mut df: u64 = 0;
                for field in [f.text.stemmed, f.heading.stemmed] {
                    df = df.max(
                        stats
                            .doc_freq(&Term::from_field_text(field, &stem))
                            .map_err(io_error)?,
                    );
                }
                let df = df as f64;
                Ok((1.0 + (all - df + 0.5) / (df + 0.5)).ln())
            })
            .collect()
    }

    /// Every section (`*` in body mode), unscored.
    pub(crate) fn all_sections(&self, searcher: &Searcher) -> io::Result<Vec<Hit>> {
        searcher
            .search(
                &BooleanQuery::new(vec![self.kind(SECTION)]),
                &AllHits::plain(),
            )
            .map_err(io_error)
    }
}

/// What a heading that is the query is indexed and asked as: its words
/// (mark-proto's query rule: lower-cased, once each, two characters at
/// least), space-separated.
fn named_key(words: &[String]) -> String {
    words.join(" ")
}

/// BM25 statistics of some of the live entries (see [`TextIndex::search`]):
/// the number of entries is theirs; a field's tokens are the live entries'
/// (only they hold the field), a term's count the live entries holding it,
/// never above the number of entries. Fields no ranking reads (`kind`,
/// `path`) keep tantivy's counts.
struct KindStatistics<'a> {
    searcher: &'a Searcher,
    docs: u64,
    tokens: &'a HashMap<Field, u64>,
}

impl Bm25StatisticsProvider for KindStatistics<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        match self.tokens.get(&field) {
            Some(n) => Ok(*n),
            None => Bm25StatisticsProvider::total_num_tokens(self.searcher, field),
        }
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.docs.max(1))
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let mut count = 0u64;
        for segment in self.searcher.segment_readers() {
            let postings = segment.inverted_index(term.field())?;
            count += u64::from(match segment.alive_bitset() {
                None => postings.doc_freq(term)?,
                Some(alive) => postings
                    .read_postings(term, IndexRecordOption::Basic)?
                    .map_or(0, |p| p.doc_freq_given_deletes(alive)),
            });
        }
        Ok(count.min(self.docs.max(1)))
    }
}

/// Collects every match with its score and key (LOOKUP filters and counts
/// them all, then ranks only what it returns). `itself` is the query whose
/// matches are flagged as holding a word themselves.
struct AllHits {
    itself: Option<Box<dyn Weight>>,
    /// One per query word: the entries holding it ([`Hit::held`]).
    held: Vec<Box<dyn Weight>>,
}

impl AllHits {
    /// Hits with neither flag computed.
    fn plain() -> AllHits {
        AllHits {
            itself: None,
            held: Vec::new(),
        }
    }
}

/// The entries of `reader` that `weight` matches.
fn matched(weight: &dyn Weight, reader: &SegmentReader) -> tantivy::Result<BitSet> {
    let mut set = BitSet::with_max_value(reader.max_doc());
    weight.for_each_no_score(reader, &mut |docs| {
        for &doc in docs {
            set.insert(doc);
        }
    })?;
    Ok(set)
}

struct SegmentHits {
    segment: SegmentOrdinal,
    ord: Column<u64>,
    itself: Option<BitSet>,
    held: Vec<BitSet>,
    hits: Vec<Hit>,
}

impl Collector for AllHits {
    type Fruit = Vec<Hit>;
    type Child = SegmentHits;

    fn for_segment(
        &self,
        segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<SegmentHits> {
        let itself = match &self.itself {
            Some(weight) => Some(matched(weight.as_ref(), reader)?),
            None => None,
        };
        Ok(SegmentHits {
            segment,
            ord: reader.fast_fields().u64("ord")?,
            itself,
            held: self
                .held
                .iter()
                .map(|w| matched(w.as_ref(), reader))
                .collect::<tantivy::Result<_>>()?,
            hits: Vec::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<Vec<Hit>>) -> tantivy::Result<Vec<Hit>> {
        Ok(fruits.into_iter().flatten().collect())
    }
}

impl SegmentCollector for SegmentHits {
    type Fruit = Vec<Hit>;

    fn collect(&mut self, doc: DocId, score: Score) {
        if let Some(ord) = self.ord.first(doc) {
            self.hits.push(Hit {
                ord,
                score,
                itself: self.itself.as_ref().is_some_and(|set| set.contains(doc)),
                held: self
                    .held
                    .iter()
                    .enumerate()
                    .filter(|(_, set)| set.contains(doc))
                    .fold(0, |mask, (i, _)| mask | 1 << i),
                address: DocAddress::new(self.segment, doc),
            });
        }
    }

    fn harvest(self) -> Vec<Hit> {
        self.hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(ws: &[&str]) -> Vec<String> {
        ws.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn tokens_follow_the_word_rule_without_a_length_cut() {
        let long = "a".repeat(60);
        let text = format!("fs.readFile(path) {long} ERR_INVALID_ARG_TYPE");
        let mut t = WordTokenizer;
        let mut s = t.token_stream(&text);
        let mut got = Vec::new();
        while s.advance() {
            got.push(s.token().text.clone());
        }
        assert_eq!(
            got,
            [
                "fs",
                "readfile",
                "path",
                long.as_str(),
                "err_invalid_arg_type"
            ]
        );
    }

    #[test]
    fn the_live_statistics_count_what_tantivy_counts_in_a_fresh_index() {
        let giant = "x".repeat(MAX_TOKEN_LEN + 1);
        let mut index = TextIndex::new().unwrap();
        for (ord, heading, text) in [
            (1, "Pier İstanbul", "Pier deploys callbacks, İİ naïve."),
            (2, giant.as_str(), "The heading above is one word too long."),
            (3, "", "fs.readFile(path) 2023-11-20"),
        ] {
            index
                .add_section(&SectionEntry {
                    ord,
                    path: "/a.md",
                    title: "Harbour ops",
                    names: &[
                        vec!["harbour".to_string(), "ops".to_string()],
                        vec!["a".to_string()],
                    ],
                    heading,
                    trail: heading,
                    text,
                })
                .unwrap();
        }
        index
            .add_link(&LinkEntry {
                ord: 4,
                path: "/a.md",
                context: "see the pier",
            })
            .unwrap();
        let searcher = index.searcher().unwrap();
        let f = index.fields;
        for pair in [f.title, f.heading, f.trail, f.text, f.linked] {
            for field in [pair.exact, pair.stemmed] {
                assert_eq!(
                    index.committed.tokens.get(&field).copied().unwrap_or(0),
                    Bm25StatisticsProvider::total_num_tokens(&searcher, field).unwrap(),
                    "{field:?}"
                );
            }
        }
        for field in [f.named, f.document_named] {
            assert_eq!(
                index.committed.tokens[&field],
                Bm25StatisticsProvider::total_num_tokens(&searcher, field).unwrap(),
                "{field:?}"
            );
        }
        assert_eq!((index.committed.others, index.committed.links), (3, 1));
        index.remove("/a.md").unwrap();
        index.searcher().unwrap();
        assert_eq!((index.committed.others, index.committed.links), (0, 0));
        assert!(index.committed.tokens.values().all(|n| *n == 0));
    }

    #[test]
    fn stemmed_forms_rank_only_in_any_mode_and_below_exact_ones() {
        let mut index = TextIndex::new().unwrap();
        for (ord, text) in [(1, "callbacks run later"), (2, "a callback runs")] {
            index
                .add_section(&SectionEntry {
                    ord,
                    path: "/a.md",
                    title: "A",
                    names: &[],
                    heading: "",
                    trail: "",
                    text,
                })
                .unwrap();
        }
        let searcher = index.searcher().unwrap();
        let all = index
            .sections(&searcher, &words(&["callback"]), false)
            .unwrap();
        assert_eq!(all.iter().map(|h| h.ord).collect::<Vec<_>>(), [2]);
        let mut any = index
            .sections(&searcher, &words(&["callback"]), true)
            .unwrap();
        any.sort_by(|a, b| b.score.total_cmp(&a.score));
        assert_eq!(any.iter().map(|h| h.ord).collect::<Vec<_>>(), [2, 1]);
    }

    #[test]
    fn each_hit_says_which_words_it_holds_in_every_field_and_form() {
        let mut index = TextIndex::new().unwrap();
        for (ord, heading, text) in [
            (1, "Pier", "Pier deploys callbacks."),
            (2, "Hosts", "Hosts take work."),
        ] {
            index
                .add_section(&SectionEntry {
                    ord,
                    path: "/a.md",
                    title: "Harbour ops",
                    names: &[],
                    heading,
                    trail: "",
                    text,
                })
                .unwrap();
        }
        let searcher = index.searcher().unwrap();
        let query = words(&["pier", "callback", "harbour", "work"]);
        let found = index.sections(&searcher, &query, true).unwrap();
        let held = |ord: u64| found.iter().find(|h| h.ord == ord).unwrap().held;
        assert_eq!(held(1), 0b0111, "callbacks by its stem");
        assert_eq!(held(2), 0b1100, "harbour from the title");
        let all_words = index.sections(&searcher, &query[2..], false).unwrap();
        assert!(
            all_words.iter().all(|h| h.held == 0),
            "all-words mode holds every word by definition"
        );
    }

    #[test]
    fn a_persisted_index_is_shared_by_commits_and_finds_what_ram_finds() {
        let folder = tempfile::tempdir().unwrap();
        let add = |index: &mut TextIndex| {
            for (ord, text) in [(1, "tide tables"), (2, "harbour tide")] {
                index
                    .add_section(&SectionEntry {
                        ord,
                        path: "/a.md",
                        title: "A",
                        names: &[],
                        heading: "Tides",
                        trail: "",
                        text,
                    })
                    .unwrap();
            }
        };
        let found = |index: &mut TextIndex| {
            let searcher = index.searcher().unwrap();
            let mut hits = index
                .sections(&searcher, &words(&["harbour", "tide"]), true)
                .unwrap();
            hits.sort_by_key(|h| h.ord);
            let text = index.section_text(&searcher, hits[1].address);
            (
                hits.iter()
                    .map(|h| (h.ord, h.score, h.itself))
                    .collect::<Vec<_>>(),
                text,
            )
        };
        let mut ram = TextIndex::new().unwrap();
        add(&mut ram);
        let expected = found(&mut ram);

        let mut first = TextIndex::open_or_create(folder.path()).unwrap();
        assert!(!first.writing(), "no writer between updates");
        assert!(
            first
                .add_section(&SectionEntry {
                    ord: 9,
                    path: "/b.md",
                    title: "",
                    names: &[],
                    heading: "",
                    trail: "",
                    text: "",
                })
                .is_err(),
            "a write needs the lock"
        );
        assert!(first.lock_writer(Duration::ZERO).unwrap());
        let mut second = TextIndex::open_or_create(folder.path()).unwrap();
        assert!(
            !second.lock_writer(Duration::from_millis(50)).unwrap(),
            "one writer at a time"
        );
        add(&mut first);
        let live = first.live_by_path().clone();
        let payload = first
            .commit_with(|opstamp| Ok(format!("catalog-{opstamp}")))
            .unwrap();
        assert!(!first.writing(), "the lock goes with the commit");
        assert_eq!(found(&mut first), expected);

        assert_eq!(second.reload().unwrap(), Some(payload));
        second.set_live(live);
        assert_eq!(
            found(&mut second),
            expected,
            "another reader, the same rows"
        );
        assert!(second.lock_writer(Duration::ZERO).unwrap(), "free again");
        assert!(
            std::fs::read_dir(folder.path()).unwrap().count() > 2,
            "segments are files"
        );
    }

    #[test]
    fn an_unreadable_index_is_created_over_once_its_lock_is_free() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("meta.json"), "{ half written").unwrap();
        assert!(TextIndex::open_or_create(folder.path()).is_err());
        let mut index = TextIndex::create_over(folder.path(), Duration::ZERO).unwrap();
        assert_eq!(index.reload().unwrap(), None);
        assert!(!index.holds_entries());
    }
}
