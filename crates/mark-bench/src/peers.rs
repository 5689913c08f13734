//! mark-mcp side by side with real peer MCP servers over the same files,
//! through the same rmcp client harness and the same token count:
//! `@modelcontextprotocol/server-filesystem` and `@bitbonsai/mcpvault`,
//! started with `npx --no-install` from the folder they are installed in
//! (`bench/peers/run.sh` installs them, pinned).
//!
//! Two tasks: the orientation questions over the knowledge base (each
//! server with its best honest plan, see [`Plan`]), and one section of a
//! large document — `fs.readFile(path[, options], callback)` in the Node.js
//! API's `fs.md` — with each server's cheapest way to that section.

use crate::BenchError;
use crate::pass::{Row, cold_pass};
use crate::questions::{Evidence, Question, load_questions};
use crate::report::{StrategyFigures, TOKENIZER_NOTE, median, render_unanswered};
use crate::session::{McpSession, ServerCommand};
use crate::strategy::{Plan, Strategy};
use serde::Serialize;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The peer packages, pinned.
pub const FILESYSTEM_PACKAGE: &str = "@modelcontextprotocol/server-filesystem@2026.8.31";
/// The peer packages, pinned.
pub const MCPVAULT_PACKAGE: &str = "@bitbonsai/mcpvault@0.16.0";

/// The section of the single-section task: its anchor and heading text.
pub const SECTION_ANCHOR: &str = "fsreadfilepath-options-callback";
/// The heading of the single-section task, as written (without backticks).
pub const SECTION_HEADING: &str = "fs.readFile(path[, options], callback)";
/// Text from the start and the end of that section: delivered means both appear.
pub const SECTION_FACTS: [&str; 2] = [
    "Asynchronously reads the entire contents of a file.",
    "provides more information and a detailed analysis on the performance of `fs.readFile()`",
];

/// Options of [`run_peers`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeersOptions {
    /// The knowledge base folder.
    pub kb: PathBuf,
    /// The questions file.
    pub questions: PathBuf,
    /// The Node.js API corpus folder (holding `fs.md`).
    pub corpus: PathBuf,
    /// The folder the peers are installed in (`node_modules` inside).
    pub peers_dir: PathBuf,
    /// The `mark-mcp` executable.
    pub mark_mcp_bin: PathBuf,
    /// Runs per row (wall time is the median; other figures from the first).
    pub runs: usize,
}

/// One server of the side-by-side and what its `tools/list` said.
#[derive(Debug, Clone, Serialize)]
pub struct PeerServer {
    /// Short name.
    pub name: String,
    /// The command line over the knowledge base.
    pub command: String,
    /// Tool names, or empty when it did not start.
    pub tools: Vec<String>,
    /// Why it could not be used, if so.
    pub error: Option<String>,
}

/// One server's cost for the single-section task.
#[derive(Debug, Clone, Serialize)]
pub struct SectionTask {
    /// The server and how it reached the section.
    pub label: String,
    /// Tool calls made.
    pub calls: usize,
    /// o200k tokens of the results.
    pub tokens: usize,
    /// UTF-8 bytes of the results.
    pub bytes: usize,
    /// Whether the whole section (its first and last paragraphs) came back.
    pub complete: bool,
    /// Wall time of the calls, median over runs.
    #[serde(serialize_with = "crate::report::ser_micros")]
    pub wall_median: Duration,
    /// `tool target` per call.
    pub trace: Vec<String>,
    /// Why it could not run, if so.
    pub error: Option<String>,
}

impl SectionTask {
    /// A row for a server that could not do the task.
    fn failed(label: &str, why: String) -> SectionTask {
        SectionTask {
            label: label.to_string(),
            calls: 0,
            tokens: 0,
            bytes: 0,
            complete: false,
            wall_median: Duration::ZERO,
            trace: Vec::new(),
            error: Some(why),
        }
    }
}

/// The result of [`run_peers`].
#[derive(Debug, Clone, Serialize)]
pub struct PeersReport {
    /// What the token figures count.
    pub tokenizer: String,
    /// The servers and their tools.
    pub servers: Vec<PeerServer>,
    /// The orientation questions, one row per server plan.
    pub questions: Vec<StrategyFigures>,
    /// The single-section task, one row per server.
    pub section_task: Vec<SectionTask>,
    /// Runs per row.
    pub runs: usize,
}

/// server-filesystem over `root`.
fn filesystem_command(peers_dir: &Path, root: &str) -> ServerCommand {
    npx(peers_dir, "mcp-server-filesystem", vec![root.to_string()])
}

/// mcpvault over `root`, read-only.
fn vault_command(peers_dir: &Path, root: &str) -> ServerCommand {
    npx(
        peers_dir,
        "mcpvault",
        vec![root.to_string(), "--read-only".to_string()],
    )
}

fn npx(peers_dir: &Path, bin: &str, args: Vec<String>) -> ServerCommand {
    let mut all = vec!["--no-install".to_string(), bin.to_string()];
    all.extend(args);
    let mut c = ServerCommand::new("npx", all);
    c.cwd = Some(peers_dir.to_path_buf());
    c
}

fn absolute(path: &Path) -> Result<PathBuf, BenchError> {
    std::fs::canonicalize(path).map_err(|source| BenchError::Io {
        what: format!("resolving {}", path.display()),
        source,
    })
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

/// Lists a server's tools; an error becomes the server's `error`.
async fn probe(name: &str, command: &ServerCommand) -> PeerServer {
    let (tools, error) = match McpSession::start(command).await {
        Ok(s) => {
            let tools = s.tools().to_vec();
            s.close().await;
            (tools, None)
        }
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    PeerServer {
        name: name.to_string(),
        command: command.display(),
        tools,
        error,
    }
}

/// Runs a plan over every question `runs` times, a fresh session per question.
async fn question_row(
    label: &str,
    command: &ServerCommand,
    plan: &Plan,
    questions: &[Question],
    runs: usize,
) -> StrategyFigures {
    let mut row = Row::new(label);
    for _ in 0..runs {
        match cold_pass(command, None, plan, questions).await {
            Ok(pass) => row.add(pass),
            Err(e) => return StrategyFigures::skipped(label, &e.to_string(), questions.len()),
        }
    }
    row.figures()
        .unwrap_or_else(|| StrategyFigures::skipped(label, "no run", questions.len()))
}

/// The tool calls of one server's way to the section.
fn section_calls(name: &str, corpus: &str) -> Vec<(&'static str, serde_json::Value)> {
    match name {
        "mark-mcp" => vec![(
            "mark_fetch",
            json!({ "url": format!("/fs.md#{SECTION_ANCHOR}") }),
        )],
        "server-filesystem" => vec![(
            "read_text_file",
            json!({ "path": format!("{corpus}/fs.md") }),
        )],
        // mcpvault's outline comes first; the line range is chosen from it.
        _ => vec![("get_note_outline", json!({ "path": "fs.md" }))],
    }
}

/// Runs the single-section task on one server, `runs` times.
async fn section_task(
    label: &str,
    name: &str,
    command: &ServerCommand,
    corpus: &str,
    runs: usize,
) -> SectionTask {
    let mut walls = Vec::new();
    let mut first: Option<SectionTask> = None;
    for _ in 0..runs {
        match section_once(label, name, command, corpus).await {
            Ok((task, wall)) => {
                walls.push(wall);
                first.get_or_insert(task);
            }
            Err(e) => {
                return SectionTask::failed(label, e.to_string());
            }
        }
    }
    let mut task = first.unwrap_or_else(|| SectionTask::failed(label, "no run".into()));
    task.wall_median = median(&mut walls);
    task
}

async fn section_once(
    label: &str,
    name: &str,
    command: &ServerCommand,
    corpus: &str,
) -> Result<(SectionTask, Duration), BenchError> {
    let mut session = McpSession::start(command).await?;
    let started = Instant::now();
    let result = async {
        for (tool, args) in section_calls(name, corpus) {
            let call = session.call(tool, args).await?;
            if tool == "get_note_outline" {
                let (start, end) =
                    vault_range_of(&call.text, SECTION_HEADING).ok_or_else(|| BenchError::Mcp {
                        command: command.display(),
                        why: format!("its outline of fs.md has no heading `{SECTION_HEADING}`"),
                    })?;
                session
                    .call(
                        "read_note_lines",
                        json!({ "path": "fs.md", "startLine": start, "endLine": end }),
                    )
                    .await?;
            }
        }
        Ok::<(), BenchError>(())
    }
    .await;
    let wall = started.elapsed();
    let calls = session.calls().to_vec();
    session.close().await;
    result?;
    let mut evidence = Evidence::default();
    for c in &calls {
        evidence.add(&c.text);
    }
    let mut facts: Vec<String> = SECTION_FACTS.iter().map(|f| f.to_string()).collect();
    facts.push(SECTION_HEADING.to_string());
    Ok((
        SectionTask {
            label: label.to_string(),
            calls: calls.len(),
            tokens: calls.iter().map(|c| c.tokens).sum(),
            bytes: calls.iter().map(|c| c.bytes).sum(),
            complete: evidence.holds_all(&facts),
            wall_median: wall,
            trace: calls
                .iter()
                .map(|c| format!("{} {}", c.name, c.args))
                .collect(),
            error: None,
        },
        wall,
    ))
}

/// The line range of the section under the heading whose text (backticks
/// removed) is `heading`, from mcpvault's outline JSON.
fn vault_range_of(outline: &str, heading: &str) -> Option<(u64, u64)> {
    #[derive(serde::Deserialize)]
    struct H {
        level: u32,
        text: String,
        line: u64,
    }
    let hs: Vec<H> = serde_json::from_str(outline).ok()?;
    let i = hs.iter().position(|h| h.text.replace('`', "") == heading)?;
    let end = hs[i + 1..]
        .iter()
        .find(|n| n.level <= hs[i].level)
        .map_or(u64::from(u32::MAX), |n| n.line.saturating_sub(1));
    Some((hs[i].line, end))
}

/// Runs the side-by-side: the orientation questions over `kb` and the
/// single-section task over `corpus`, on mark-mcp (`--root`, the local
/// folder: the peers read local files too) and on each peer.
pub async fn run_peers(opts: PeersOptions) -> Result<PeersReport, BenchError> {
    let questions = load_questions(&opts.questions)?;
    let runs = opts.runs.max(1);
    let kb = absolute(&opts.kb)?;
    let corpus = absolute(&opts.corpus)?;
    let peers_dir = absolute(&opts.peers_dir)?;
    let kb_s = display(&kb);
    let corpus_s = display(&corpus);

    let mark = |root: &str| {
        let mut c =
            ServerCommand::new(&opts.mark_mcp_bin, ["--root".to_string(), root.to_string()]);
        c.env.push(("RUST_LOG".into(), "warn".into()));
        c
    };
    let filesystem = |root: &str| filesystem_command(&peers_dir, root);
    let vault = |root: &str| vault_command(&peers_dir, root);

    let servers = vec![
        probe("mark-mcp", &mark(&kb_s)).await,
        probe(
            &format!("server-filesystem ({FILESYSTEM_PACKAGE})"),
            &filesystem(&kb_s),
        )
        .await,
        probe(&format!("mcpvault ({MCPVAULT_PACKAGE})"), &vault(&kb_s)).await,
    ];
    let unusable = |i: usize| servers[i].error.clone();

    let mut rows = Vec::new();
    let n = questions.len();
    match unusable(0) {
        Some(why) => rows.push(StrategyFigures::skipped("mark-mcp", &why, n)),
        None => {
            for s in [
                Strategy::PlainAgent,
                Strategy::FullChain,
                Strategy::LookupSection,
                Strategy::ExploreSection,
            ] {
                let label = format!("mark-mcp {}", s.label());
                if servers[0].tools.iter().any(|t| t == s.needs_tool()) {
                    rows.push(
                        question_row(&label, &mark(&kb_s), &Plan::Mark(s), &questions, runs).await,
                    );
                } else {
                    rows.push(StrategyFigures::skipped(
                        &label,
                        &format!("{} not available", s.needs_tool()),
                        n,
                    ));
                }
            }
        }
    }
    rows.extend(
        peer_rows(
            &servers[1..],
            &filesystem(&kb_s),
            &vault(&kb_s),
            &kb_s,
            &questions,
            runs,
        )
        .await,
    );

    let mut section = Vec::new();
    let tasks: [(&str, &str, ServerCommand); 3] = [
        (
            "mark-mcp: mark_fetch /fs.md#anchor",
            "mark-mcp",
            mark(&corpus_s),
        ),
        (
            "server-filesystem: read_text_file fs.md",
            "server-filesystem",
            filesystem(&corpus_s),
        ),
        (
            "mcpvault: get_note_outline, read_note_lines",
            "mcpvault",
            vault(&corpus_s),
        ),
    ];
    for (i, (label, name, command)) in tasks.iter().enumerate() {
        section.push(match unusable(i) {
            Some(why) => SectionTask::failed(label, why),
            None => section_task(label, name, command, &corpus_s, runs).await,
        });
    }
    Ok(PeersReport {
        tokenizer: TOKENIZER_NOTE.into(),
        servers,
        questions: rows,
        section_task: section,
        runs,
    })
}

/// The peers' rows over the questions: server-filesystem and mcpvault,
/// each with its own search tool (see [`Plan`]); `probed` are the two
/// servers as [`probe`] found them (a server that did not start is a
/// skipped row).
async fn peer_rows(
    probed: &[PeerServer],
    filesystem: &ServerCommand,
    vault: &ServerCommand,
    kb: &str,
    questions: &[Question],
    runs: usize,
) -> Vec<StrategyFigures> {
    let n = questions.len();
    let plans = [
        (
            "server-filesystem: search_files, read_text_file whole (name overlap), links one step",
            filesystem,
            Plan::FilesystemRead {
                root: kb.to_string(),
            },
        ),
        (
            "mcpvault: search_notes, get_note_outline, read_note_lines",
            vault,
            Plan::VaultSections,
        ),
    ];
    let mut rows = Vec::new();
    for ((label, command, plan), server) in plans.into_iter().zip(probed) {
        rows.push(match &server.error {
            Some(why) => StrategyFigures::skipped(label, why, n),
            None => question_row(label, command, &plan, questions, runs).await,
        });
    }
    rows
}

/// The peers' rows for the orientation benchmark (`orientation
/// --peers-dir`): the same questions over `kb` in the same run as
/// mark-mcp's strategies.
pub async fn orientation_peer_rows(
    peers_dir: &Path,
    kb: &Path,
    questions: &[Question],
    runs: usize,
) -> Result<Vec<StrategyFigures>, BenchError> {
    let kb = display(&absolute(kb)?);
    let peers_dir = absolute(peers_dir)?;
    let filesystem = filesystem_command(&peers_dir, &kb);
    let vault = vault_command(&peers_dir, &kb);
    let probed = [
        probe(
            &format!("server-filesystem ({FILESYSTEM_PACKAGE})"),
            &filesystem,
        )
        .await,
        probe(&format!("mcpvault ({MCPVAULT_PACKAGE})"), &vault).await,
    ];
    Ok(peer_rows(&probed, &filesystem, &vault, &kb, questions, runs).await)
}

/// The side-by-side as markdown: one table (the questions, then the
/// single-section task), the unanswered questions, the servers' tools and
/// what is counted.
pub fn render_peers(report: &PeersReport) -> String {
    let n = report.questions.first().map_or(0, |r| r.questions);
    let mut out = String::from(
        "| task | server: plan | answered | calls mean | calls max | result tokens (o200k) | result bytes | wall (median) |\n|---|---|---|---|---|---|---|---|\n",
    );
    for r in &report.questions {
        let task = format!("{n} orientation questions");
        match &r.skipped {
            Some(why) => out.push_str(&format!(
                "| {task} | {} | skipped: {why} | – | – | – | – | – |\n",
                r.label
            )),
            None => out.push_str(&format!(
                "| {task} | {} | {} | {:.0} ms |\n",
                r.label,
                r.cells(),
                r.wall_median.as_secs_f64() * 1000.0
            )),
        }
    }
    for t in &report.section_task {
        let task = "one section of fs.md";
        match &t.error {
            Some(why) => out.push_str(&format!(
                "| {task} | {} | failed: {why} | – | – | – | – | – |\n",
                t.label
            )),
            None => out.push_str(&format!(
                "| {task} | {} | {} | {} | {} | {} | {} | {:.0} ms |\n",
                t.label,
                if t.complete {
                    "whole section"
                } else {
                    "section incomplete"
                },
                t.calls,
                t.calls,
                t.tokens,
                t.bytes,
                t.wall_median.as_secs_f64() * 1000.0
            )),
        }
    }
    out.push_str(&render_unanswered(&report.questions));
    out.push_str("\nServers:\n\n");
    for s in &report.servers {
        match &s.error {
            Some(why) => out.push_str(&format!("- {}: did not start: {why}\n", s.name)),
            None => out.push_str(&format!(
                "- {}: `{}`; tools: {}\n",
                s.name,
                s.command,
                s.tools.join(", ")
            )),
        }
    }
    out.push_str(&format!(
        "\nQuestions: crates/mark-mcp/soul, every server on the same files, every question in a fresh session. Section task: `{SECTION_HEADING}` in the Node.js API's fs.md (254 KB); \"whole section\" means its first and last paragraphs came back. {} run(s) per row; wall: median of the time spent in tool calls (process start-up excluded); other figures from the first run; {}. No protocol requests here: every server reads local files.\n",
        report.runs, report.tokenizer
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_one_table_with_failures_spelled_out() {
        let report = PeersReport {
            tokenizer: TOKENIZER_NOTE.into(),
            servers: vec![PeerServer {
                name: "mcpvault".into(),
                command: "npx --no-install mcpvault kb".into(),
                tools: Vec::new(),
                error: Some("no MCP handshake".into()),
            }],
            questions: vec![StrategyFigures::skipped(
                "mcpvault: plan",
                "no MCP handshake",
                30,
            )],
            section_task: vec![SectionTask::failed(
                "mcpvault: outline",
                "no MCP handshake".into(),
            )],
            runs: 1,
        };
        let md = render_peers(&report);
        assert!(
            md.contains(
                "| 30 orientation questions | mcpvault: plan | skipped: no MCP handshake |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| one section of fs.md | mcpvault: outline | failed: no MCP handshake |"),
            "{md}"
        );
        assert!(md.contains("- mcpvault: did not start: no MCP handshake"));
        assert_eq!(
            md.lines().filter(|l| l.starts_with("|---")).count(),
            1,
            "one table"
        );
    }

    #[test]
    fn vault_range_finds_the_heading_without_backticks() {
        let outline = r#"[{"level":2,"text":"Callback API","line":3000},{"level":3,"text":"`fs.readFile(path[, options], callback)`","line":3565},{"level":4,"text":"File descriptors","line":3679},{"level":3,"text":"`fs.readlink(path[, options], callback)`","line":3711}]"#;
        assert_eq!(vault_range_of(outline, SECTION_HEADING), Some((3565, 3710)));
        assert_eq!(vault_range_of(outline, "absent"), None);
        assert_eq!(vault_range_of("not json", SECTION_HEADING), None);
    }
}
