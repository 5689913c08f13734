//! The command line: start-up options (source, knobs) and the verbs, each a
//! thin adapter over the same library function as its MCP tool, with the
//! same parameter names and the same text output.

use crate::crawl::CrawlSettings;
use crate::envelope::ToolText;
use crate::explore::{ExploreParams, explore};
use crate::fetch::{FetchParams, fetch};
use crate::list::{ListParams, list};
use crate::lookup::{LookupParams, lookup};
use crate::session::{Loaded, Session};
use crate::settings::{Settings, parse_bytes, parse_duration, parse_page_bytes};
use crate::usage::UsageArgs;
use crate::versions::{VersionsParams, versions};
use crate::write::{AppendParams, ArchiveParams, PublishParams, append, archive, publish};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use link_graph::CrawlLimits;
use markdown_slice::{Document, OutlineOptions, Part};
use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// mark-mcp: markdown knowledge for AI agents, from a Mark server or a local
/// folder, with outlines, sections and dedup. With no verb it serves MCP over
/// stdio; with a verb it runs that one call and prints the result.
#[derive(Debug, Parser)]
#[command(
    name = "mark-mcp",
    version,
    about = "Markdown knowledge for AI agents over MCP: outlines, sections and dedup, from a Mark server (--host) or a local folder (--root). Without a verb it serves MCP on stdio.",
    long_about = None
)]
pub struct Cli {
    /// Where the knowledge is: a folder (as --root) or a mark:// URL (as --host).
    #[arg(long, global = true, value_name = "DIR|mark://HOST[:PORT]", conflicts_with_all = ["root", "host"])]
    pub source: Option<String>,
    /// Serve a local folder of markdown (a versioned store is known by its .mark-store marker).
    #[arg(long, global = true, value_name = "DIR", conflicts_with = "host")]
    pub root: Option<PathBuf>,
    /// Read from a Mark server: `mark://HOST[:PORT]`.
    #[arg(long, global = true, value_name = "mark://HOST[:PORT]")]
    pub host: Option<String>,
    /// Accept any server certificate (development servers only).
    #[arg(long, global = true, conflicts_with_all = ["pin", "ca"])]
    pub insecure: bool,
    /// Trust exactly one server certificate: sha256:HEX of its DER bytes ('' for none).
    #[arg(long, global = true, value_name = "sha256:HEX", conflicts_with = "ca")]
    pub pin: Option<String>,
    /// Trust the CA certificates in this PEM file instead of the system roots.
    #[arg(long, global = true, value_name = "PEM")]
    pub ca: Option<PathBuf>,
    /// Bodies (and sections) at or above this size come as an outline.
    #[arg(long, global = true, default_value = "8192", value_name = "BYTES", value_parser = parse_bytes)]
    pub outline_threshold: usize,
    /// Memory for cached documents (64MiB, 1MB, or bytes).
    #[arg(long, global = true, default_value = "64MiB", value_name = "BYTES", value_parser = parse_bytes)]
    pub cache_bytes: usize,
    /// Markdown whose search index (--root) is built in memory at each
    /// start; over it the index is kept in --index-dir and a later process
    /// reads only what changed (0: always kept).
    #[arg(long, global = true, default_value = "1MiB", value_name = "BYTES", value_parser = parse_bytes)]
    pub index_ram_bytes: usize,
    /// Cache folder for kept search indexes, one folder per source, shared
    /// with mark-server (default: ~/.cache/mark, or under $XDG_CACHE_HOME;
    /// '' keeps none).
    #[arg(long, global = true, value_name = "DIR", value_parser = mark_store::lookup::IndexStorage::parse_folder)]
    pub index_dir: Option<PathBuf>,
    /// Serve a cached document without asking the source if validated this recently (or at all while its change feed is healthy).
    #[arg(long, global = true, default_value = "5s", value_name = "DURATION", value_parser = parse_duration)]
    pub fresh_for: Duration,
    /// Forget what was delivered after this long (clients compact context).
    #[arg(long, global = true, default_value = "30m", value_name = "DURATION", value_parser = parse_duration)]
    pub dedup_ttl: Duration,
    /// Longest text (document, section or page) in one result; longer bodies
    /// come in pages. The envelope, notes and page line have 4000 bytes more,
    /// so a result is at most 48000 bytes by default. At least 2000.
    #[arg(long, global = true, default_value = "44000", value_name = "BYTES", value_parser = parse_page_bytes)]
    pub page_bytes: usize,
    /// Crawl the source for the link graph at start (a --root folder always is).
    #[arg(long, global = true)]
    pub crawl: bool,
    /// Documents one crawl of a server fetches at most (default 5000); a
    /// --root folder, cheap to scan, is bounded by bytes and time unless set.
    #[arg(long, global = true, value_name = "N")]
    pub crawl_docs: Option<usize>,
    /// Body bytes one crawl reads at most.
    #[arg(long, global = true, default_value = "64MiB", value_name = "BYTES", value_parser = parse_bytes)]
    pub crawl_bytes: usize,
    /// Memory the link graph holds at most (its paths and links).
    #[arg(long, global = true, default_value = "32MiB", value_name = "BYTES", value_parser = parse_bytes)]
    pub graph_bytes: usize,
    /// Time after which a crawl sends no new request.
    #[arg(long, global = true, default_value = "60s", value_name = "DURATION", value_parser = parse_duration)]
    pub crawl_time: Duration,
    /// How long a card waits for an unfinished crawl (it goes on in the background).
    #[arg(long, global = true, default_value = "10s", value_name = "DURATION", value_parser = parse_duration)]
    pub crawl_wait: Duration,
    /// Age after which a card crawls the source again (conditional FETCHes:
    /// cheap); an older graph's age shows on the card.
    #[arg(long, global = true, default_value = "60s", value_name = "DURATION", value_parser = parse_duration)]
    pub graph_fresh_for: Duration,
    /// Crawl requests in flight at once.
    #[arg(long, global = true, default_value = "16", value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub crawl_concurrency: u16,
    /// Longest wait for one request: a Mark server's answer (--host), or a
    /// read of the folder (--root; a stalled file system then fails).
    #[arg(long, global = true, default_value = "15s", value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Largest answer taken from a Mark server (--host), in bytes (k, M suffixes).
    #[arg(long, global = true, default_value = "16MiB", value_name = "BYTES", value_parser = parse_bytes)]
    pub max_response_bytes: usize,
    /// Offer the write tools (mark_publish, mark_append, mark_archive).
    #[arg(long, global = true)]
    pub write: bool,
    /// File holding the auth token, or demarkus' token store (~/.mark/tokens.toml: the host's entry); else MARK_TOKEN, else DEMARKUS_AUTH; '' for none.
    #[arg(long, global = true, value_name = "FILE", value_parser = clap::builder::TypedValueParser::map(clap::builder::OsStringValueParser::new(), PathBuf::from))]
    pub token_file: Option<PathBuf>,
    /// Print a verb's result as a JSON object (before the verb).
    #[arg(long)]
    pub json: bool,
    /// One call to run; none serves MCP over stdio.
    #[command(subcommand)]
    pub verb: Option<Verb>,
}

/// The verbs: one per tool, plus `open`.
#[derive(Debug, Subcommand)]
pub enum Verb {
    /// Read a document, an outline or sections (mark_fetch).
    Fetch(FetchParams),
    /// A card: outline, opening, links, backlinks, siblings (mark_explore).
    Explore(ExploreParams),
    /// Search the catalog (mark_lookup).
    Lookup(LookupParams),
    /// List a folder (mark_list).
    List(ListParams),
    /// A document's history (mark_versions).
    Versions(VersionsParams),
    /// Write a new version (mark_publish).
    Publish(PublishParams),
    /// Append to a document (mark_append).
    Append(AppendParams),
    /// Archive a document (mark_archive).
    Archive(ArchiveParams),
    /// Read a document as a person: a URL, a /path of the source, or a file.
    Open(OpenArgs),
    /// Claude Code hooks (see integrations/claude-code).
    Hook {
        /// Which hook.
        #[command(subcommand)]
        hook: HookCommand,
    },
    /// Every tool with why it is a tool, its annotations, its verb and its
    /// bytes in tools/list (needs no --root or --host).
    Tools {
        /// Print JSON instead of a markdown table.
        #[arg(long)]
        json: bool,
    },
    /// What agents did with mark-mcp, from Claude Code transcripts: calls,
    /// result sizes, unchanged answers, markdown read around mark-mcp
    /// (--root DIR: only reads under it).
    Usage(UsageArgs),
    /// The search index kept for --root between sessions: its folder, size,
    /// documents and last update (--clear removes it).
    Index {
        /// Remove it (the next lookup builds it again).
        #[arg(long)]
        clear: bool,
    },
    /// Print the source's changes as they come, one line each (`changed
    /// /path`), heard as a session hears them (a server's WATCH, file events
    /// under --root); Ctrl-C ends it. Fails at once when the source has no
    /// change feed.
    Watch,
    /// Serve the bundled knowledge base over QUIC on 127.0.0.1 inside this
    /// process and run a short orientation through an MCP client (needs no
    /// --root or --host, and no files beside the binary).
    Demo,
}

/// The hooks of `hook`.
#[derive(Debug, Clone, Copy, Subcommand)]
pub enum HookCommand {
    /// SessionStart: print Claude Code's hook JSON with the root document's
    /// card (/index.md, else /README.md, else the root listing); after a
    /// compaction or clear, also tell this session's mark-mcp to forget what
    /// it delivered. Reads the hook's JSON on stdin; without --source and
    /// --pin it takes the plugin's options from CLAUDE_PLUGIN_OPTION_SOURCE
    /// and CLAUDE_PLUGIN_OPTION_PIN. Ends within 5 s whatever the source does.
    SessionStart,
}

/// Where the knowledge is, from `--source`, `--root` or `--host`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceChoice {
    /// A local folder.
    Folder(PathBuf),
    /// A Mark server, `mark://HOST[:PORT]`.
    Server(String),
}

/// Arguments of `open`.
#[derive(Debug, clap::Args)]
pub struct OpenArgs {
    /// A file path, /path or mark:// URL, with #anchor for one section.
    pub target: String,
    /// Show the outline (of the document or the section) instead of the text.
    #[arg(long)]
    pub outline: bool,
}

impl Cli {
    /// The command line as parsed: the options are global (given before or
    /// after the verb), but `usage`, which reads transcripts and no source,
    /// shows in its help only its own options and `--root` (its filter).
    pub fn command_line() -> clap::Command {
        let command = Cli::command();
        // Given to `usage` before clap copies the global options into each
        // verb, so the copy it keeps is this one: the same option, hidden
        // (or, for `--root`, with usage's own help).
        let own_copies: Vec<clap::Arg> = command
            .get_arguments()
            .filter(|a| a.is_global_set())
            .map(|a| match a.get_id().as_str() {
                "root" => a
                    .clone()
                    .help("List only the markdown reads under this folder"),
                _ => a.clone().hide(true),
            })
            .collect();
        command.mut_subcommand("usage", |usage| usage.args(own_copies))
    }

    /// Parses the process's arguments with [`Cli::command_line`] (exits
    /// with clap's message on an error, or after `--help`).
    pub fn parse_args() -> Cli {
        Cli::command_line()
            .try_get_matches()
            .and_then(|mut matches| Cli::from_arg_matches_mut(&mut matches))
            .unwrap_or_else(|e| {
                // `--help` and `--version` print to stdout and exit 0.
                if !e.use_stderr() {
                    e.exit()
                }
                let _ = e.print();
                std::process::exit(USAGE_ERROR.into())
            })
    }

    /// The source the options name: `--source` (a `mark://` URL or a
    /// folder, `~/` meaning the home folder), else `--root` or `--host`.
    pub fn source_choice(&self) -> Option<SourceChoice> {
        if let Some(src) = self.source.as_deref().map(str::trim)
            && !src.is_empty()
        {
            return Some(if src.starts_with("mark://") {
                SourceChoice::Server(src.to_string())
            } else {
                SourceChoice::Folder(home_expanded(src))
            });
        }
        match (&self.root, &self.host) {
            (Some(root), _) => Some(SourceChoice::Folder(root.clone())),
            (None, Some(host)) => Some(SourceChoice::Server(host.clone())),
            (None, None) => None,
        }
    }

    /// The session settings from the options.
    pub fn settings(&self) -> Settings {
        Settings {
            outline_threshold: self.outline_threshold,
            cache_bytes: self.cache_bytes,
            fresh_for: self.fresh_for,
            dedup_ttl: self.dedup_ttl,
            page_bytes: self.page_bytes,
            crawl: CrawlSettings {
                limits: CrawlLimits {
                    max_documents: self.crawl_docs.unwrap_or(match self.source_choice() {
                        Some(SourceChoice::Folder(_)) => usize::MAX,
                        _ => SERVER_CRAWL_DOCS,
                    }),
                    max_bytes: self.crawl_bytes as u64,
                    time_budget: self.crawl_time,
                    max_in_flight: usize::from(self.crawl_concurrency),
                },
                // A folder is listed whole: `--crawl-bytes` and `--crawl-time` bound it.
                max_listings: match self.source_choice() {
                    Some(SourceChoice::Folder(_)) => usize::MAX,
                    _ => link_graph::DEFAULT_MAX_LISTINGS,
                },
                // A hook answers within its deadline, whatever the size of the source.
                wait: if matches!(self.verb, Some(Verb::Hook { .. })) {
                    crate::hook::HOOK_CRAWL_WAIT
                } else {
                    self.crawl_wait
                },
                fresh_for: self.graph_fresh_for,
                graph_bytes: self.graph_bytes,
                at_start: self.crawl
                    || matches!(self.source_choice(), Some(SourceChoice::Folder(_))),
            },
        }
    }
}

/// Documents one crawl of a Mark server fetches at most, by default.
const SERVER_CRAWL_DOCS: usize = 5_000;

/// `~/notes` as a path in the home folder (a plugin setting is not
/// expanded by a shell); any other text as it is.
fn home_expanded(src: &str) -> PathBuf {
    match (src.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(src),
    }
}

/// Reads `-` as standard input, anything else as given.
fn body_arg(body: String) -> Result<String, ToolText> {
    if body != "-" {
        return Ok(body);
    }
    let mut s = String::new();
    std::io::stdin()
        .read_to_string(&mut s)
        .map_err(|e| ToolText::error(format!("could not read the body from stdin: {e}")))?;
    Ok(s)
}

impl Verb {
    /// The name of a verb that writes to the source, `None` for a read.
    fn write_name(&self) -> Option<&'static str> {
        match self {
            Verb::Publish(_) => Some("publish"),
            Verb::Append(_) => Some("append"),
            Verb::Archive(_) => Some("archive"),
            _ => None,
        }
    }
}

/// Runs one verb that needs a source (every verb but `open` on a file).
/// `write` is `--write`: one rule for both faces and every source, as the
/// MCP server offers its write tools only with it.
pub async fn run(session: &Session, verb: Verb, write: bool) -> ToolText {
    if !write && let Some(name) = verb.write_name() {
        return ToolText::error(format!(
            "{name} writes to the source, and writes need --write: run `mark-mcp --write … {name} …`"
        ));
    }
    let now = Instant::now();
    match verb {
        Verb::Fetch(p) => fetch(session, p, now).await,
        Verb::Explore(p) => explore(session, p, now).await,
        Verb::Lookup(p) => lookup(session, p, now).await,
        Verb::List(p) => list(session, p).await,
        Verb::Versions(p) => versions(session, p).await,
        Verb::Publish(mut p) => match body_arg(std::mem::take(&mut p.body)) {
            Ok(body) => publish(session, PublishParams { body, ..p }, now).await,
            Err(t) => t,
        },
        Verb::Append(mut p) => match body_arg(std::mem::take(&mut p.body)) {
            Ok(body) => append(session, AppendParams { body, ..p }, now).await,
            Err(t) => t,
        },
        Verb::Archive(p) => archive(session, p, now).await,
        Verb::Open(a) => open_from_source(session, &a, now).await,
        Verb::Hook {
            hook: HookCommand::SessionStart,
        } => crate::hook::session_start(session, &crate::hook::stdin_event(), now).await,
        // They start their own server: `main` runs them before any source.
        Verb::Demo | Verb::Tools { .. } | Verb::Usage(_) | Verb::Index { .. } | Verb::Watch => {
            ToolText::error(
                "demo, tools, usage, index and watch are not one-shot reads; run them as `mark-mcp demo`, `mark-mcp tools`, `mark-mcp usage`, `mark-mcp --root DIR index` or `mark-mcp --root DIR watch`.",
            )
        }
    }
}

/// The exit status of a command line the parser refuses (an unknown
/// option, a missing argument): `EX_USAGE` of sysexits.h, apart from every
/// verb's result.
pub const USAGE_ERROR: u8 = 64;

/// The exit status of a verb's result, the one rule of the README's "Exit
/// codes" (MCP's `isError` is true exactly when it is 1): 0 when the call
/// did what was asked (`unchanged` and a write preview included); 1 for a
/// tool error, a write that was asked to apply and did not among them; 2 for
/// a read the source answered with a status other than ok (`not-found`,
/// `unauthorized`, `server-error`, …). A command line the parser refuses
/// exits [`USAGE_ERROR`] before any verb runs.
pub fn exit_code(result: &ToolText) -> u8 {
    const DID_WHAT_WAS_ASKED: [&str; 4] = ["ok", "unchanged", "preview", "created"];
    if result.is_error {
        1
    } else if DID_WHAT_WAS_ASKED.contains(&result.status.as_str()) {
        0
    } else {
        2
    }
}

/// `open` on a plain file: no source needed.
pub fn open_file(args: &OpenArgs) -> Option<Result<String, String>> {
    let (path, fragment) = split_fragment(&args.target);
    if args.target.starts_with("mark://") || !std::path::Path::new(path).is_file() {
        return None;
    }
    let text = match std::fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(_) => return Some(Err(format!("{path} is not UTF-8 text"))),
        },
        Err(e) => return Some(Err(format!("could not read {path}: {e}"))),
    };
    Some(render_open(
        &Document::parse(text.as_str()),
        path,
        fragment,
        args.outline,
    ))
}

async fn open_from_source(session: &Session, args: &OpenArgs, now: Instant) -> ToolText {
    let target = match session.resolve(&args.target) {
        Ok(t) => t,
        Err(e) => return ToolText::error(e),
    };
    let cached = match session.load(&target.path, now).await {
        Loaded::Doc(d) => d,
        Loaded::Answer(t) => return t,
    };
    match render_open(
        &cached.doc,
        &target.path,
        target.fragment.as_deref(),
        args.outline,
    ) {
        Ok(text) => ToolText::new("ok").with_text(text),
        Err(e) => ToolText::error(e),
    }
}

fn split_fragment(target: &str) -> (&str, Option<&str>) {
    match target.rsplit_once('#') {
        Some((p, f)) if !f.is_empty() => (p, Some(f)),
        Some((p, _)) => (p, None),
        None => (target, None),
    }
}

/// The reader's view: the text, one section, or an outline.
fn render_open<S: AsRef<str>>(
    doc: &Document<S>,
    name: &str,
    fragment: Option<&str>,
    outline: bool,
) -> Result<String, String> {
    let opts = OutlineOptions::default();
    let part = match fragment {
        None => None,
        Some(a) => Some(
            doc.find_part(a)
                .map_err(|miss| crate::fetch::miss_message(name, a, &miss))?,
        ),
    };
    Ok(match (part, outline) {
        (None, false) => doc.source().to_string(),
        (None, true) => doc.outline(&opts).to_string(),
        (Some(Part::Section(h)), true) => doc.section_outline(h, &opts).to_string(),
        // A block has no outline: it is shown whole.
        (Some(p), _) => doc.source().get(p.range()).unwrap_or("").to_string(),
    })
}

/// Prints a result: the plain text, or the JSON object with `--json`.
pub fn print(t: &ToolText, json: bool) {
    if json {
        println!("{}", t.to_json());
    } else {
        print!("{}", t.render());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        let mut matches = Cli::command_line().try_get_matches_from(args)?;
        Cli::from_arg_matches_mut(&mut matches)
    }

    #[test]
    fn page_bytes_under_the_floor_are_refused() {
        let err = parse(&[
            "mark-mcp",
            "--root",
            "/kb",
            "--page-bytes",
            "0",
            "fetch",
            "/a.md",
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("under the floor of 2000 bytes"), "{err}");
        assert!(parse(&["mark-mcp", "--page-bytes", "1999", "tools"]).is_err());
        let cli = parse(&["mark-mcp", "--page-bytes", "2000", "tools"]).unwrap();
        assert_eq!(cli.page_bytes, crate::settings::MIN_PAGE_BYTES);
        assert_eq!(parse(&["mark-mcp", "tools"]).unwrap().page_bytes, 44_000);
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command_line().debug_assert();
    }

    #[test]
    fn usage_help_shows_only_the_options_usage_reads() {
        let mut command = Cli::command_line();
        // As `--help` sees it: the global options copied into each verb.
        command.build();
        let help = command
            .find_subcommand_mut("usage")
            .expect("usage is a verb")
            .render_help()
            .to_string();
        for own in ["--transcripts", "--server", "--since", "--json", "--root"] {
            assert!(help.contains(own), "{own} missing: {help}");
        }
        for server in [
            "--host",
            "--source",
            "--page-bytes",
            "--fresh-for",
            "--write",
            "--pin",
        ] {
            assert!(!help.contains(server), "{server} shown: {help}");
        }
        // The other verbs still show them.
        let fetch = command
            .find_subcommand_mut("fetch")
            .expect("fetch is a verb")
            .render_help()
            .to_string();
        assert!(
            fetch.contains("--source") && fetch.contains("--page-bytes"),
            "{fetch}"
        );
    }

    #[test]
    fn source_options_go_before_or_after_the_verb() {
        for args in [
            &["mark-mcp", "--source", "/kb", "fetch", "/a.md"][..],
            &["mark-mcp", "fetch", "/a.md", "--source", "/kb"],
            &[
                "mark-mcp",
                "--root",
                "/kb",
                "--page-bytes",
                "9000",
                "fetch",
                "/a.md",
            ],
        ] {
            let cli = parse(args).unwrap();
            assert_eq!(
                cli.source_choice(),
                Some(SourceChoice::Folder(PathBuf::from("/kb"))),
                "{args:?}"
            );
            assert!(matches!(cli.verb, Some(Verb::Fetch(_))));
        }
        let cli = parse(&["mark-mcp", "usage", "--root", "/n", "--since", "2026-11-01"]).unwrap();
        assert_eq!(cli.root, Some(PathBuf::from("/n")));
        let cli = parse(&["mark-mcp", "--root", "/n", "usage"]).unwrap();
        assert_eq!(cli.root, Some(PathBuf::from("/n")));
    }

    #[test]
    fn a_folder_crawl_has_no_document_count_bound_unless_set() {
        let limits = |args: &[&str]| Cli::parse_from(args).settings().crawl.limits;
        let folder = limits(&["mark-mcp", "--root", "/tmp/vault"]);
        assert_eq!(folder.max_documents, usize::MAX);
        let set = limits(&["mark-mcp", "--root", "/tmp/vault", "--crawl-docs", "7"]);
        assert_eq!(set.max_documents, 7);
        let server = limits(&["mark-mcp", "--host", "docs.example.org"]);
        assert_eq!(server.max_documents, SERVER_CRAWL_DOCS);
    }

    #[test]
    fn a_folder_crawl_lists_every_folder_and_a_server_crawl_has_a_listing_cap() {
        let listings = |args: &[&str]| Cli::parse_from(args).settings().crawl.max_listings;
        assert_eq!(listings(&["mark-mcp", "--root", "/tmp/vault"]), usize::MAX);
        let server = listings(&["mark-mcp", "--host", "docs.example.org"]);
        assert_eq!(server, link_graph::DEFAULT_MAX_LISTINGS);
    }
}
