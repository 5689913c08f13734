//! `mark-mcp usage`: what agents did with mark-mcp, read from Claude Code
//! session transcripts. Per tool: calls, errors, results the client did not
//! show inline, the characters the model saw; tools never called; the
//! `unchanged` answers; and the reads of markdown that went around mark-mcp
//! (built-in `Read`, `Grep`, shell searches), grouped by folder.
//!
//! Transcripts are JSON lines, one per content block (`../shared/CLAUDE-CODE.md`):
//! `assistant` lines carry `tool_use` blocks, `user` lines the matching
//! `tool_result` (what the model saw). Files are streamed line by line; a line
//! that is not JSON, or a call or result of a shape this reader does not know,
//! is counted and skipped, never fatal.

use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::{Component, Path, PathBuf};

/// The longest transcript line read; the rest of a longer one is skipped
/// (and the line counted as skipped) so one broken file cannot take the
/// memory.
const MAX_LINE_BYTES: u64 = 64 * 1024 * 1024;

/// Shell programs that search files: a command with one of them and
/// markdown in its words is a search.
const SHELL_SEARCHERS: [&str; 6] = ["grep", "egrep", "rg", "ag", "ack", "find"];
/// Shell programs that print files: with markdown in its words and no
/// searcher, a command is a read (`cat x.md`, `sed -n 1,40p x.md`).
const SHELL_PRINTERS: [&str; 7] = ["cat", "head", "tail", "less", "more", "sed", "awk"];

/// Arguments of `usage` (`--root` is the global option: only reads under it
/// are listed).
#[derive(Debug, Clone, clap::Args)]
pub struct UsageArgs {
    /// Folder of transcripts (default: ~/.claude/projects).
    #[arg(long, value_name = "DIR")]
    pub transcripts: Option<PathBuf>,
    /// The MCP server name mark-mcp is registered under (`mcp__NAME__…`,
    /// also in a plugin: `mcp__plugin_P_NAME__…`).
    #[arg(long, default_value = "mark", value_name = "NAME")]
    pub server: String,
    /// Only calls on or after this day (YYYY-MM-DD, UTC).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Print the report as JSON instead of markdown tables.
    #[arg(long)]
    pub json: bool,
}

/// What to count: which server's tools, which reads, from when.
#[derive(Debug, Clone)]
pub struct Filter {
    /// The MCP server name.
    pub server: String,
    /// Reads around mark-mcp are listed only under this folder.
    pub root: Option<PathBuf>,
    /// `YYYY-MM-DD`: calls before it are left out.
    pub since: Option<String>,
    /// Every tool mark-mcp offers (for "never called").
    pub tools: Vec<String>,
}

/// Figures of one mark-mcp tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolUsage {
    /// Calls with a result from mark-mcp.
    pub calls: usize,
    /// Of them, results with `is_error: true`.
    pub errors: usize,
    /// Calls Claude Code answered itself with `No such tool available` (the
    /// server was not connected): not in `calls`, `errors` or the sizes,
    /// since mark-mcp never saw them.
    pub not_connected: usize,
    /// Results the client did not show inline: `<persisted-output>` or the
    /// token-limit error.
    pub not_inline: usize,
    /// `status: unchanged` answers.
    pub unchanged: usize,
    /// Characters of the earlier answers that the `unchanged` ones replaced
    /// (at least: only when the earlier answer is in the same transcript).
    pub unchanged_saved_chars: usize,
    /// Characters the model saw, per result.
    pub result_chars: Vec<usize>,
    /// Estimated tokens the model saw (markdown-slice's estimate).
    pub est_tokens: usize,
}

impl ToolUsage {
    fn chars(&self) -> usize {
        self.result_chars.iter().sum()
    }

    /// The median result size: the middle value, or the mean of the two
    /// middle ones for an even count (0 without results).
    fn median(&self) -> f64 {
        let mut v = self.result_chars.clone();
        v.sort_unstable();
        let mid = v.len() / 2;
        match (v.len() % 2, v.get(mid.wrapping_sub(1)), v.get(mid)) {
            (1, _, Some(m)) => *m as f64,
            (0, Some(a), Some(b)) => (*a as f64 + *b as f64) / 2.0,
            _ => 0.0,
        }
    }

    fn largest(&self) -> usize {
        self.result_chars.iter().copied().max().unwrap_or(0)
    }
}

/// Reads of markdown in one folder that did not go through mark-mcp.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AroundReads {
    /// Built-in `Read` calls of `.md` files.
    pub reads: usize,
    /// `Grep` and shell searches targeting markdown.
    pub searches: usize,
    /// Characters the model saw from them.
    pub chars: usize,
    /// Estimated tokens of those characters.
    pub est_tokens: usize,
}

/// How the lines went: read, skipped, unmatched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineCounts {
    /// Transcript files read (subagent transcripts included).
    pub files: usize,
    /// Of them, subagent transcripts (`<session>/subagents/`).
    pub subagent_files: usize,
    /// Files left out unread: last modified before `--since`.
    pub files_before_since: usize,
    /// Lines read.
    pub lines: usize,
    /// Lines skipped: not JSON, no `type`, or a call/result of an unknown shape.
    pub skipped: usize,
    /// Results whose call is not in the same transcript.
    pub results_without_call: usize,
    /// Calls with no result in the same transcript (cut-off sessions).
    pub calls_without_result: usize,
    /// Files that could not be opened or read to the end.
    pub unreadable_files: Vec<String>,
}

/// The whole report.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Per mark-mcp tool (name without the `mcp__…__` prefix).
    pub tools: BTreeMap<String, ToolUsage>,
    /// Tools mark-mcp offers that no counted call used.
    pub never_called: Vec<String>,
    /// Per folder.
    pub around: BTreeMap<String, AroundReads>,
    /// Lines and files.
    pub counts: LineCounts,
    /// Earliest and latest timestamp of a counted call.
    pub period: Option<(String, String)>,
    /// The filter the report was made with.
    pub server: String,
}

/// One transcript line, only the parts read here (serde skips the rest).
#[derive(Debug, Deserialize)]
struct Line {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    timestamp: Option<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    message: Option<Message>,
}

#[derive(Debug, Deserialize)]
struct Message {
    /// A string (a prompt) or content blocks.
    #[serde(default)]
    content: Value,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        #[serde(default)]
        content: Value,
        #[serde(default)]
        is_error: Option<bool>,
    },
}

/// A call seen in the transcript, waiting for (or matched with) its result.
#[derive(Debug, Clone)]
struct Call {
    kind: CallKind,
    timestamp: Option<String>,
    /// `tool + input`, to find the earlier answer an `unchanged` replaced.
    key: String,
}

#[derive(Debug, Clone)]
enum CallKind {
    /// A mark-mcp tool (its short name).
    Mark(String),
    /// A markdown read around mark-mcp, in this folder.
    Around { folder: PathBuf, search: bool },
}

/// A result seen before its call.
#[derive(Debug, Clone)]
struct Answer {
    text: String,
    is_error: bool,
}

/// The state of one transcript file: calls and results are matched within it.
#[derive(Debug, Default)]
struct FileScan {
    calls: HashMap<String, Call>,
    early_results: HashMap<String, Answer>,
    answered: HashSet<String>,
    /// Calls not counted (other tools, before `--since`): their results are
    /// dropped.
    ignored: HashSet<String>,
    /// Characters of the latest non-`unchanged` answer per call key.
    last_answer: HashMap<String, usize>,
}

/// Counts lines into a report. Pure: give it lines, read the report.
#[derive(Debug)]
pub struct Tally {
    filter: Filter,
    report: Report,
    file: FileScan,
}

impl Tally {
    /// An empty tally.
    pub fn new(filter: Filter) -> Tally {
        let report = Report {
            server: filter.server.clone(),
            ..Report::default()
        };
        Tally {
            filter,
            report,
            file: FileScan::default(),
        }
    }

    /// Starts a new transcript file (calls and results match within one).
    pub fn start_file(&mut self, subagent: bool) {
        self.end_file();
        self.report.counts.files += 1;
        if subagent {
            self.report.counts.subagent_files += 1;
        }
    }

    fn end_file(&mut self) {
        let file = std::mem::take(&mut self.file);
        self.report.counts.results_without_call += file.early_results.len();
        self.report.counts.calls_without_result += file
            .calls
            .keys()
            .filter(|id| !file.answered.contains(*id))
            .count();
    }

    /// Adds one line (without its newline).
    pub fn add_line(&mut self, bytes: &[u8]) {
        self.report.counts.lines += 1;
        let Ok(line) = serde_json::from_slice::<Line>(bytes) else {
            self.report.counts.skipped += 1;
            return;
        };
        if line.kind != "assistant" && line.kind != "user" {
            return;
        }
        let Some(Value::Array(blocks)) = line.message.map(|m| m.content) else {
            return;
        };
        for block in blocks {
            let is_call_or_result = matches!(
                block.get("type").and_then(Value::as_str),
                Some("tool_use" | "tool_result")
            );
            if !is_call_or_result {
                continue;
            }
            match serde_json::from_value::<Block>(block) {
                Ok(Block::ToolUse { id, name, input }) => {
                    self.add_call(id, &name, &input, &line.timestamp, &line.cwd)
                }
                Ok(Block::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                }) => {
                    let answer = Answer {
                        text: seen_text(&content),
                        is_error: is_error.unwrap_or(false),
                    };
                    self.add_result(tool_use_id, answer);
                }
                Err(_) => self.report.counts.skipped += 1,
            }
        }
    }

    fn add_call(
        &mut self,
        id: String,
        name: &str,
        input: &Value,
        timestamp: &Option<String>,
        cwd: &Option<String>,
    ) {
        if self.file.calls.contains_key(&id) || self.file.ignored.contains(&id) {
            return;
        }
        let before_since = matches!((&self.filter.since, timestamp),
            (Some(since), Some(ts)) if ts.as_str() < since.as_str());
        let cwd = Path::new(cwd.as_deref().unwrap_or("/"));
        let kind = match mark_tool(name, &self.filter.server) {
            Some(tool) => Some(CallKind::Mark(tool.to_string())),
            None => around_read(name, input, cwd)
                .map(|(folder, search)| CallKind::Around { folder, search }),
        };
        let Some(kind) = kind.filter(|_| !before_since) else {
            self.file.early_results.remove(&id);
            self.file.ignored.insert(id);
            return;
        };
        let call = Call {
            kind,
            timestamp: timestamp.clone(),
            key: format!("{name} {input}"),
        };
        if let Some(answer) = self.file.early_results.remove(&id) {
            self.file.answered.insert(id.clone());
            self.count(&call, &answer);
        }
        self.file.calls.insert(id, call);
    }

    fn add_result(&mut self, id: String, answer: Answer) {
        if self.file.answered.contains(&id) || self.file.ignored.contains(&id) {
            return;
        }
        match self.file.calls.get(&id).cloned() {
            Some(call) => {
                self.file.answered.insert(id);
                self.count(&call, &answer);
            }
            None => {
                self.file.early_results.insert(id, answer);
            }
        }
    }

    fn count(&mut self, call: &Call, answer: &Answer) {
        let chars = answer.text.chars().count();
        let tokens = markdown_slice::estimate_tokens(&answer.text);
        if let Some(ts) = &call.timestamp {
            let period = self
                .report
                .period
                .get_or_insert_with(|| (ts.clone(), ts.clone()));
            if *ts < period.0 {
                period.0 = ts.clone();
            }
            if *ts > period.1 {
                period.1 = ts.clone();
            }
        }
        match &call.kind {
            CallKind::Mark(tool) => {
                let t = self.report.tools.entry(tool.clone()).or_default();
                if answer.is_error && not_connected(&answer.text) {
                    t.not_connected += 1;
                    return;
                }
                t.calls += 1;
                t.errors += usize::from(answer.is_error);
                t.not_inline += usize::from(not_inline(&answer.text));
                t.result_chars.push(chars);
                t.est_tokens += tokens;
                if answer.text.starts_with("status: unchanged") {
                    t.unchanged += 1;
                    let earlier = self.file.last_answer.get(&call.key).copied().unwrap_or(0);
                    t.unchanged_saved_chars += earlier.saturating_sub(chars);
                } else {
                    self.file.last_answer.insert(call.key.clone(), chars);
                }
            }
            CallKind::Around { folder, search } => {
                let Some(shown) = shown_folder(folder, self.filter.root.as_deref()) else {
                    return;
                };
                let a = self.report.around.entry(shown).or_default();
                if *search {
                    a.searches += 1;
                } else {
                    a.reads += 1;
                }
                a.chars += chars;
                a.est_tokens += tokens;
            }
        }
    }

    /// The finished report.
    pub fn finish(mut self) -> Report {
        self.end_file();
        self.report.never_called = self
            .filter
            .tools
            .iter()
            .filter(|t| self.report.tools.get(*t).is_none_or(|u| u.calls == 0))
            .cloned()
            .collect();
        self.report
    }
}

/// `mark_fetch` for `mcp__NAME__mark_fetch` or `mcp__plugin_P_NAME__mark_fetch`.
fn mark_tool<'a>(name: &'a str, server: &str) -> Option<&'a str> {
    let rest = name.strip_prefix("mcp__")?;
    let (srv, tool) = rest.rsplit_once("__")?;
    let plugin_server = srv
        .strip_prefix("plugin_")
        .and_then(|s| s.strip_suffix(server))
        .is_some_and(|p| p.ends_with('_'));
    (srv == server || plugin_server).then_some(tool)
}

/// The text the model saw in a `tool_result`: a string, or the text blocks.
fn seen_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Whether Claude Code answered the call itself because the server was not
/// connected (`Error: No such tool available: mcp__…`, in a
/// `<tool_use_error>` or bare).
fn not_connected(text: &str) -> bool {
    let text = text.trim_start();
    let text = text.strip_prefix("<tool_use_error>").unwrap_or(text);
    text.starts_with("Error: No such tool available")
}

/// Whether the client replaced the result: saved to a file with a preview,
/// or the token-limit error.
fn not_inline(text: &str) -> bool {
    text.starts_with("<persisted-output>")
        || (text.starts_with("Error: result (") && text.contains("exceeds maximum allowed tokens"))
}

fn is_markdown(s: &str) -> bool {
    let s = s.to_ascii_lowercase();
    s.contains(".md") || s.contains(".markdown")
}

/// A markdown read that went around mark-mcp: its folder, and whether it was
/// a search (else a whole-file read).
fn around_read(name: &str, input: &Value, cwd: &Path) -> Option<(PathBuf, bool)> {
    let field = |k: &str| input.get(k).and_then(Value::as_str);
    match name {
        "Read" => {
            let file = field("file_path")?;
            let lower = file.to_ascii_lowercase();
            (lower.ends_with(".md") || lower.ends_with(".markdown"))
                .then(|| (parent(&cwd.join(file)), false))
        }
        "Grep" => {
            let path = field("path");
            let targets = path.is_some_and(is_markdown)
                || field("glob").is_some_and(is_markdown)
                || matches!(field("type"), Some("md" | "markdown"));
            targets.then(|| {
                let p = cwd.join(path.unwrap_or("."));
                let folder = if path.is_some_and(is_markdown) {
                    parent(&p)
                } else {
                    p
                };
                (normalize(&folder), true)
            })
        }
        "Bash" => shell_read(field("command")?, cwd),
        _ => None,
    }
}

/// A shell command that reads or searches markdown (a program such as grep,
/// rg, cat or find, and `.md` or a markdown type in its words): the folder of
/// its first path argument, else the working directory; and whether it is a
/// search (a searcher among its programs) rather than a read (`cat x.md`).
fn shell_read(command: &str, cwd: &Path) -> Option<(PathBuf, bool)> {
    let words: Vec<&str> = command
        .split(|c: char| c.is_whitespace() || matches!(c, '|' | ';' | '&' | '(' | ')'))
        .map(|w| w.trim_matches(|c| c == '\'' || c == '"'))
        .filter(|w| !w.is_empty())
        .collect();
    let runs = |programs: &[&str]| {
        words.iter().any(|w| {
            let program = w.rsplit('/').next().unwrap_or(w);
            programs.contains(&program)
        })
    };
    let search = runs(&SHELL_SEARCHERS);
    let reads = search || runs(&SHELL_PRINTERS);
    let markdown = words.iter().any(|w| is_markdown(w))
        || words
            .windows(2)
            .any(|p| matches!(p[0], "-t" | "--type") && matches!(p[1], "md" | "markdown"))
        || words.contains(&"--type=md");
    if !reads || !markdown {
        return None;
    }
    let path = words
        .iter()
        .find(|w| **w == "." || w.starts_with('/') || w.starts_with("./") || w.starts_with("../"));
    let folder = match path {
        Some(p) => {
            let p = cwd.join(p);
            if is_markdown(&p.to_string_lossy()) || p.to_string_lossy().contains('*') {
                parent(&p)
            } else {
                normalize(&p)
            }
        }
        None => normalize(cwd),
    };
    Some((folder, search))
}

fn parent(p: &Path) -> PathBuf {
    normalize(p.parent().unwrap_or(Path::new("/")))
}

/// `a/./b/../c` → `a/c`, without touching the disk (the paths are the
/// agent's, on a machine that may not be this one).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// The folder as shown: relative to `root` (only folders under it), else as is.
fn shown_folder(folder: &Path, root: Option<&Path>) -> Option<String> {
    match root {
        None => Some(folder.display().to_string()),
        Some(root) => {
            let rel = folder.strip_prefix(root).ok()?;
            let s = rel.display().to_string();
            Some(if s.is_empty() { ".".into() } else { s })
        }
    }
}

/// Checks a `--since` value: `YYYY-MM-DD`.
pub fn check_since(since: &str) -> Result<(), String> {
    let b = since.as_bytes();
    let shape = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if shape {
        Ok(())
    } else {
        Err(format!(
            "`{since}` is not a date: give --since as YYYY-MM-DD, e.g. 2026-11-01"
        ))
    }
}

/// The transcript files under `dir` (`*.jsonl`, subagents included), sorted.
fn transcript_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|e| {
            format!(
                "could not read the transcripts folder {}: {e}; give --transcripts DIR",
                folder.display()
            )
        })?;
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => folders.push(path),
                Ok(t) if t.is_file() && path.extension().is_some_and(|e| e == "jsonl") => {
                    out.push(path)
                }
                _ => {}
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Whether a file was last changed before `since` (it then holds no call on
/// or after it).
fn modified_before(path: &Path, since: &str) -> bool {
    let Ok(modified) = std::fs::metadata(path).and_then(|m| m.modified()) else {
        return false;
    };
    let Ok(age) = modified.duration_since(std::time::UNIX_EPOCH) else {
        return false;
    };
    day_of(age.as_secs()).as_str() < since
}

/// `YYYY-MM-DD` (UTC) of a Unix time (the civil-from-days algorithm).
fn day_of(unix_secs: u64) -> String {
    let days = (unix_secs / 86_400) as i64 + 719_468;
    let era = days.div_euclid(146_097);
    let doe = days - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Reads every transcript under `dir` into a report; progress goes to
/// stderr when it is a terminal.
pub fn scan(dir: &Path, filter: Filter) -> Result<Report, String> {
    let files = transcript_files(dir)?;
    let since = filter.since.clone();
    let mut tally = Tally::new(filter);
    let progress = std::io::stderr().is_terminal();
    let mut buf = Vec::new();
    for (n, path) in files.iter().enumerate() {
        if progress {
            eprint!("\rmark-mcp usage: file {}/{}", n + 1, files.len());
        }
        if since.as_deref().is_some_and(|s| modified_before(path, s)) {
            tally.report.counts.files_before_since += 1;
            continue;
        }
        let subagent = path
            .parent()
            .is_some_and(|p| p.file_name().is_some_and(|n| n == "subagents"));
        tally.start_file(subagent);
        if let Err(e) = read_lines(path, &mut buf, &mut tally) {
            tally
                .report
                .counts
                .unreadable_files
                .push(format!("{}: {e}", path.display()));
        }
    }
    if progress {
        eprintln!();
    }
    Ok(tally.finish())
}

/// Streams one file's lines into the tally.
fn read_lines(path: &Path, buf: &mut Vec<u8>, tally: &mut Tally) -> std::io::Result<()> {
    let mut reader = std::io::BufReader::new(std::fs::File::open(path)?);
    loop {
        buf.clear();
        let n = reader
            .by_ref()
            .take(MAX_LINE_BYTES)
            .read_until(b'\n', buf)?;
        if n == 0 {
            return Ok(());
        }
        if buf.last() != Some(&b'\n') && n as u64 == MAX_LINE_BYTES {
            // Too long: skip to the end of the line and count it skipped.
            tally.report.counts.lines += 1;
            tally.report.counts.skipped += 1;
            skip_line(&mut reader)?;
            continue;
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if !line.iter().all(u8::is_ascii_whitespace) {
            tally.add_line(line);
        }
    }
}

fn skip_line(reader: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(());
        }
        match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => {
                reader.consume(i + 1);
                return Ok(());
            }
            None => {
                let len = chunk.len();
                reader.consume(len);
            }
        }
    }
}

/// The day of a transcript timestamp as written: its first 10 characters
/// (`2026-11-20` of `2026-11-20T10:00:00Z`), whatever they are.
fn day_part(timestamp: &str) -> String {
    timestamp.chars().take(10).collect()
}

/// A median as a table shows it: `1,234`, or `1,234.5` between two values.
fn median_text(median: f64) -> String {
    let whole = thousands(median.trunc() as usize);
    if median.fract() == 0.0 {
        whole
    } else {
        format!("{whole}.5")
    }
}

/// `12,345`.
fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl Report {
    /// The markdown form: a heading line, the tools table, the reads around
    /// mark-mcp, and what was skipped.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let c = &self.counts;
        let period = match &self.period {
            Some((from, to)) => format!(", {} to {}", day_part(from), day_part(to)),
            None => String::new(),
        };
        out.push_str(&format!(
            "# mark-mcp usage (server `{}`): {} transcripts ({} subagent){period}\n\n",
            self.server, c.files, c.subagent_files
        ));
        out.push_str("Characters are what the model saw; tokens are an estimate (markdown-slice's estimate_tokens), not a tokenizer count.\n\n");
        out.push_str("| tool | calls | errors | not connected | not inline | unchanged | chars seen | ~tokens (est.) | median chars | largest chars |\n");
        out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (name, t) in &self.tools {
            out.push_str(&format!(
                "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                t.calls,
                t.errors,
                t.not_connected,
                t.not_inline,
                t.unchanged,
                thousands(t.chars()),
                thousands(t.est_tokens),
                median_text(t.median()),
                thousands(t.largest()),
            ));
        }
        if self.tools.is_empty() {
            out.push_str("| (no calls) | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |\n");
        }
        out.push('\n');
        if self.tools.values().any(|t| t.not_connected > 0) {
            out.push_str("Not connected: calls Claude Code answered itself with `No such tool available` (mark-mcp was not connected); not counted as calls or errors.\n");
        }
        if !self.never_called.is_empty() {
            out.push_str(&format!(
                "Never called: {}.\n",
                self.never_called.join(", ")
            ));
        }
        let unchanged: usize = self.tools.values().map(|t| t.unchanged).sum();
        let saved: usize = self.tools.values().map(|t| t.unchanged_saved_chars).sum();
        out.push_str(&format!(
            "Unchanged answers: {unchanged}, at least {} characters not sent again.\n\n",
            thousands(saved)
        ));
        out.push_str("## Markdown read around mark-mcp (built-in Read of .md, Grep and shell searches on markdown)\n\n");
        if self.around.is_empty() {
            out.push_str("None.\n\n");
        } else {
            out.push_str("| folder | reads | searches | chars seen | ~tokens (est.) |\n");
            out.push_str("|---|---:|---:|---:|---:|\n");
            for (folder, a) in &self.around {
                out.push_str(&format!(
                    "| {folder} | {} | {} | {} | {} |\n",
                    a.reads,
                    a.searches,
                    thousands(a.chars),
                    thousands(a.est_tokens)
                ));
            }
            out.push('\n');
        }
        out.push_str(&format!(
            "Lines: {} read, {} skipped (not JSON or of an unknown shape); {} results without their call, {} calls without a result",
            thousands(c.lines),
            c.skipped,
            c.results_without_call,
            c.calls_without_result
        ));
        if c.files_before_since > 0 {
            out.push_str(&format!(
                "; {} files last changed before --since left unread",
                c.files_before_since
            ));
        }
        out.push_str(".\n");
        for f in &c.unreadable_files {
            out.push_str(&format!("Could not read {f}.\n"));
        }
        out
    }

    /// The `--json` form: the same figures as fields.
    pub fn to_json(&self) -> Value {
        let tools: serde_json::Map<String, Value> = self
            .tools
            .iter()
            .map(|(name, t)| {
                (
                    name.clone(),
                    json!({
                        "calls": t.calls,
                        "errors": t.errors,
                        "not_connected": t.not_connected,
                        "not_inline": t.not_inline,
                        "unchanged": t.unchanged,
                        "unchanged_saved_chars": t.unchanged_saved_chars,
                        "chars": t.chars(),
                        "est_tokens": t.est_tokens,
                        "median_chars": t.median(),
                        "largest_chars": t.largest(),
                    }),
                )
            })
            .collect();
        let around: serde_json::Map<String, Value> = self
            .around
            .iter()
            .map(|(folder, a)| {
                (
                    folder.clone(),
                    json!({"reads": a.reads, "searches": a.searches, "chars": a.chars, "est_tokens": a.est_tokens}),
                )
            })
            .collect();
        let c = &self.counts;
        json!({
            "server": self.server,
            "period": self.period.as_ref().map(|(a, b)| json!({"from": a, "to": b})),
            "tools": tools,
            "never_called": self.never_called,
            "around_mark_mcp": around,
            "files": c.files,
            "subagent_files": c.subagent_files,
            "files_before_since": c.files_before_since,
            "lines": c.lines,
            "skipped_lines": c.skipped,
            "results_without_call": c.results_without_call,
            "calls_without_result": c.calls_without_result,
            "unreadable_files": c.unreadable_files,
        })
    }
}

/// `~/.claude/projects`, Claude Code's transcripts folder.
pub fn default_transcripts() -> Result<PathBuf, String> {
    std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".claude").join("projects"))
        .ok_or_else(|| "HOME is not set; give --transcripts DIR".to_string())
}

/// The `usage` verb: prints the report; the error is one sentence.
pub fn run(
    args: &UsageArgs,
    root: Option<&Path>,
    tools: Vec<String>,
    json: bool,
) -> Result<(), String> {
    if let Some(since) = &args.since {
        check_since(since)?;
    }
    let dir = match &args.transcripts {
        Some(d) => d.clone(),
        None => default_transcripts()?,
    };
    let root = match root {
        Some(r) => Some(normalize(&std::path::absolute(r).map_err(|e| {
            format!("could not resolve --root {}: {e}", r.display())
        })?)),
        None => None,
    };
    let filter = Filter {
        server: args.server.clone(),
        root,
        since: args.since.clone(),
        tools,
    };
    let report = scan(&dir, filter)?;
    let text = if json || args.json {
        format!("{}\n", report.to_json())
    } else {
        report.to_markdown()
    };
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .map_err(|e| format!("could not write the report: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter() -> Filter {
        Filter {
            server: "mark".into(),
            root: None,
            since: None,
            tools: vec!["mark_fetch".into(), "mark_list".into()],
        }
    }

    fn call(id: &str, name: &str, input: Value) -> Vec<u8> {
        json!({"type": "assistant", "timestamp": "2026-11-20T10:00:00Z", "cwd": "/w",
               "message": {"content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}})
        .to_string()
        .into_bytes()
    }

    fn result(id: &str, text: &str) -> Vec<u8> {
        json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": id,
               "content": [{"type": "text", "text": text}]}]}})
        .to_string()
        .into_bytes()
    }

    #[test]
    fn tool_names_plain_and_in_a_plugin() {
        assert_eq!(
            mark_tool("mcp__mark__mark_fetch", "mark"),
            Some("mark_fetch")
        );
        assert_eq!(
            mark_tool("mcp__plugin_mark_mark__mark_fetch", "mark"),
            Some("mark_fetch")
        );
        assert_eq!(mark_tool("mcp__other__mark_fetch", "mark"), None);
        assert_eq!(mark_tool("mcp__plugin_x_remark__f", "mark"), None);
        assert_eq!(mark_tool("Read", "mark"), None);
    }

    #[test]
    fn a_result_before_its_call_is_counted_once() {
        let mut t = Tally::new(filter());
        t.start_file(false);
        t.add_line(&result("a", "status: ok\n\nhello"));
        t.add_line(&call("a", "mcp__mark__mark_fetch", json!({"url": "/x.md"})));
        t.add_line(&result("a", "status: ok\n\nhello"));
        let r = t.finish();
        assert_eq!(r.tools["mark_fetch"].calls, 1);
        assert_eq!(r.counts.results_without_call, 0);
        assert_eq!(r.never_called, vec!["mark_list".to_string()]);
    }

    #[test]
    fn unchanged_counts_what_the_earlier_answer_cost() {
        let mut t = Tally::new(filter());
        t.start_file(false);
        let input = json!({"url": "/x.md"});
        t.add_line(&call("a", "mcp__mark__mark_fetch", input.clone()));
        t.add_line(&result("a", &"x".repeat(1000)));
        t.add_line(&call("b", "mcp__mark__mark_fetch", input));
        t.add_line(&result("b", "status: unchanged\n\nunchanged since v1"));
        let f = &t.finish().tools["mark_fetch"];
        assert_eq!((f.calls, f.unchanged), (2, 1));
        assert_eq!(f.unchanged_saved_chars, 1000 - 37);
    }

    #[test]
    fn bad_lines_are_counted_and_skipped() {
        let mut t = Tally::new(filter());
        t.start_file(false);
        t.add_line(b"not json");
        t.add_line(br#"{"type":"user","message":{"content":[{"type":"tool_result"}]}}"#);
        t.add_line(br#"{"type":"future-kind"}"#);
        let r = t.finish();
        assert_eq!((r.counts.lines, r.counts.skipped), (3, 2));
    }

    #[test]
    fn markdown_reads_around_mark_mcp_by_folder() {
        let cwd = Path::new("/w");
        let read = |name, input: Value| around_read(name, &input, cwd);
        assert_eq!(
            read("Read", json!({"file_path": "/n/a/b.md"})),
            Some((PathBuf::from("/n/a"), false))
        );
        assert_eq!(read("Read", json!({"file_path": "/n/a/b.rs"})), None);
        assert_eq!(
            read(
                "Grep",
                json!({"pattern": "x", "path": "notes", "glob": "*.md"})
            ),
            Some((PathBuf::from("/w/notes"), true))
        );
        assert_eq!(
            read("Grep", json!({"pattern": "x", "type": "md"})),
            Some((PathBuf::from("/w"), true))
        );
        assert_eq!(read("Grep", json!({"pattern": "x", "glob": "*.rs"})), None);
        assert_eq!(
            read(
                "Bash",
                json!({"command": "grep -rn x /n/shared --include=*.md"})
            ),
            Some((PathBuf::from("/n/shared"), true))
        );
        assert_eq!(
            read("Bash", json!({"command": "rg -t md phase"})),
            Some((PathBuf::from("/w"), true))
        );
        assert_eq!(
            read(
                "Bash",
                json!({"command": "cat ./docs/../notes/a.md | head"})
            ),
            Some((PathBuf::from("/w/notes"), false)),
            "printing a file is a read"
        );
        assert_eq!(
            read("Bash", json!({"command": "sed -n 1,40p /n/a.md"})),
            Some((PathBuf::from("/n"), false))
        );
        assert_eq!(
            read("Bash", json!({"command": "cat /n/a.md | grep -n phase"})),
            Some((PathBuf::from("/n"), true)),
            "a search among its programs makes it a search"
        );
        assert_eq!(read("Bash", json!({"command": "cargo test"})), None);
        assert_eq!(read("Bash", json!({"command": "git add README.md"})), None);
    }

    #[test]
    fn folders_under_root_are_shown_relative() {
        let root = Path::new("/n");
        assert_eq!(
            shown_folder(Path::new("/n/a"), Some(root)),
            Some("a".into())
        );
        assert_eq!(shown_folder(Path::new("/n"), Some(root)), Some(".".into()));
        assert_eq!(shown_folder(Path::new("/etc"), Some(root)), None);
    }

    #[test]
    fn not_inline_results() {
        assert!(not_inline("<persisted-output>\nOutput too large"));
        assert!(not_inline(
            "Error: result (60,612 characters) exceeds maximum allowed tokens. Failed"
        ));
        assert!(!not_inline("status: ok\n\nError: result ("));
    }

    #[test]
    fn since_filters_calls_and_checks_its_form() {
        let mut t = Tally::new(Filter {
            since: Some("2026-11-21".into()),
            ..filter()
        });
        t.start_file(false);
        t.add_line(&call("a", "mcp__mark__mark_fetch", json!({})));
        t.add_line(&result("a", "status: ok"));
        let r = t.finish();
        assert!(r.tools.is_empty());
        assert_eq!(r.counts.results_without_call, 0);
        assert!(check_since("2026-11-01").is_ok());
        assert!(check_since("1 Nov").is_err());
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_two_middle_values() {
        let sizes = |v: &[usize]| ToolUsage {
            result_chars: v.to_vec(),
            ..ToolUsage::default()
        };
        assert_eq!(sizes(&[]).median(), 0.0);
        assert_eq!(sizes(&[7]).median(), 7.0);
        assert_eq!(sizes(&[10, 1, 4]).median(), 4.0);
        assert_eq!(sizes(&[1, 10, 4, 2]).median(), 3.0);
        assert_eq!(sizes(&[1, 2]).median(), 1.5);
        assert_eq!(median_text(1500.5), "1,500.5");
        assert_eq!(median_text(3.0), "3");
    }

    #[test]
    fn calls_answered_no_such_tool_are_counted_apart_as_not_connected() {
        let mut t = Tally::new(filter());
        t.start_file(false);
        let error = |id: &str, text: &str| {
            json!({"type": "user", "message": {"content": [{"type": "tool_result",
                   "tool_use_id": id, "content": text, "is_error": true}]}})
            .to_string()
            .into_bytes()
        };
        t.add_line(&call("a", "mcp__mark__mark_fetch", json!({"url": "/x.md"})));
        t.add_line(&error(
            "a",
            "<tool_use_error>Error: No such tool available: mcp__mark__mark_fetch</tool_use_error>",
        ));
        t.add_line(&call("b", "mcp__mark__mark_list", json!({})));
        t.add_line(&error(
            "b",
            "Error: No such tool available: mcp__mark__mark_list",
        ));
        t.add_line(&call("c", "mcp__mark__mark_fetch", json!({"url": "/y.md"})));
        t.add_line(&error("c", "status: error\n\nsection #nope not found"));
        let r = t.finish();
        let fetch = &r.tools["mark_fetch"];
        assert_eq!((fetch.calls, fetch.errors, fetch.not_connected), (1, 1, 1));
        assert_eq!(
            fetch.result_chars.len(),
            1,
            "not-connected answers have no size"
        );
        assert_eq!(r.tools["mark_list"].not_connected, 1);
        assert_eq!(r.never_called, ["mark_list"], "never reached mark-mcp");
        let text = r.to_markdown();
        assert!(text.contains("| mark_fetch | 1 | 1 | 1 |"), "{text}");
        assert!(text.contains("Not connected: "), "{text}");
        assert_eq!(r.to_json()["tools"]["mark_list"]["not_connected"], 1);
    }

    #[test]
    fn a_timestamp_with_a_multibyte_character_is_shown_without_a_panic() {
        let mut t = Tally::new(filter());
        t.start_file(false);
        let mut line: Value =
            serde_json::from_slice(&call("a", "mcp__mark__mark_fetch", json!({}))).unwrap();
        line["timestamp"] = json!("2026-01-0é1T00:00:00Z");
        t.add_line(line.to_string().as_bytes());
        t.add_line(&result("a", "status: ok"));
        let text = t.finish().to_markdown();
        assert!(text.contains(", 2026-01-0é to 2026-01-0é"), "{text}");
        assert_eq!(day_part("2026"), "2026");
    }

    #[test]
    fn days_of_unix_times() {
        assert_eq!(day_of(0), "1970-01-01");
        assert_eq!(day_of(1_796_083_200), "2026-12-01");
    }
}
