//! Command line: serving (the default), `import` and `token generate`.

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use mark_server::{Handler, Limits, Rate, ServerIdentity};
use mark_store::lookup::IndexStorage;
use mark_store::{Engine, Op, RootKind, StoreMode, TokenStore};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// A Mark Protocol server over QUIC (markdown over `mark://`).
#[derive(Debug, Parser)]
#[command(
    name = "mark-server",
    version,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "Once ready it prints one line to stdout: `listening <addr> fingerprint sha256:<hex>`.\n\
                  Logs go to stderr (RUST_LOG, default info); each request is one line `request VERB /path -> status`."
)]
pub struct Cli {
    #[command(flatten)]
    serve: ServeArgs,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// The store to serve: a versioned store (made by `import`; an empty
    /// folder becomes one at its first write), or any folder of markdown
    /// with --flat.
    #[arg(long, required = true, value_name = "DIR")]
    root: Option<PathBuf>,
    /// UDP address to listen on; port 0 picks a free port (the real one is printed).
    #[arg(long, default_value = "127.0.0.1:6309", value_name = "ADDR")]
    listen: SocketAddr,
    /// Token file (see `token generate`). Without it every write is refused
    /// and every read is public.
    #[arg(long, value_name = "FILE")]
    tokens: Option<PathBuf>,
    /// Certificate chain (PEM). Without --cert/--key a self-signed
    /// certificate for localhost, 127.0.0.1 and the listen IP is made at start.
    #[arg(long, requires = "key", value_name = "PEM")]
    cert: Option<PathBuf>,
    /// Private key of --cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, requires = "cert", value_name = "PEM")]
    key: Option<PathBuf>,
    /// Serve a plain folder read-only: every `.md` file is a document.
    #[arg(long)]
    flat: bool,
    /// Time a stream has to send its whole request (and later to take the
    /// whole response), in milliseconds.
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    stream_timeout_ms: u64,
    /// Connections served at once; more are refused.
    #[arg(long, default_value_t = 1024, value_name = "N")]
    max_connections: usize,
    /// Concurrent request streams per connection.
    #[arg(long, default_value_t = 256, value_name = "N")]
    max_streams: u32,
    /// WATCH streams open at once on the whole server; more are answered
    /// `unavailable`.
    #[arg(long, default_value_t = 4096, value_name = "N")]
    max_watches: usize,
    /// WATCH streams open at once on one connection; must stay below
    /// --max-streams, so a watching client can still send requests
    /// (default: 16, or one less than --max-streams when that is lower).
    #[arg(long, value_name = "N")]
    max_watches_per_connection: Option<usize>,
    /// While a watch is open, how often the store is re-checked for
    /// changes made outside this server (files saved under --flat, another
    /// process writing the store), in milliseconds. Writes through this
    /// server reach watches at once. The walk is the one LOOKUP's index
    /// re-check makes (every document's stamp), so it is as often.
    #[arg(long, default_value_t = 5000, value_name = "MS")]
    watch_recheck_ms: u64,
    /// Test mode: idle time before a watch heartbeat, in milliseconds.
    #[arg(long, hide = true, default_value_t = 20_000, value_name = "MS")]
    watch_heartbeat_ms: u64,
    /// Test mode: changes kept for watches that resume or lag.
    #[arg(long, hide = true, default_value_t = mark_server::watch::DEFAULT_BACKLOG, value_name = "N")]
    watch_backlog: usize,
    /// Test mode: answer WATCH as servers from before WATCH (a demarkus
    /// server), in its bytes: `server-error` with the body
    /// `\n# Server error\n\nbad request\n`.
    #[arg(long, hide = true)]
    no_watch: bool,
    /// Largest document a PUBLISH or APPEND may store, in bytes. A request
    /// may be this plus the request line and metadata limits; more is cut
    /// off with `too-large`.
    #[arg(long, default_value_t = mark_store::DEFAULT_MAX_DOCUMENT_BYTES, value_name = "BYTES")]
    max_document_bytes: usize,
    /// Markdown (bytes) whose LOOKUP index is built in memory at each
    /// start; over it the index is kept in --index-dir and a restart reads
    /// only what changed (0: always kept).
    #[arg(long, default_value_t = IndexStorage::DEFAULT_RAM_BYTES, value_name = "BYTES")]
    index_ram_bytes: u64,
    /// Cache folder for kept LOOKUP indexes, one folder per source, shared
    /// with mark-mcp (default: ~/.cache/mark, or under $XDG_CACHE_HOME;
    /// '' keeps none).
    #[arg(long, value_name = "DIR", value_parser = IndexStorage::parse_folder)]
    index_dir: Option<PathBuf>,
    /// Test mode: answer LIST as servers from before LIST paging (a March
    /// 2026 demarkus server): paging keys ignored, no `complete` and no
    /// `next-cursor` in the answer.
    #[arg(long, hide = true)]
    unpaged_list: bool,
    /// Test mode: answer LOOKUP as servers that rank all-words only (before
    /// `terms: any`): the key is not read and not echoed.
    #[arg(long, hide = true)]
    all_words_lookup: bool,
    /// Test mode: answer LOOKUP as servers from before LOOKUP (a March
    /// 2026 demarkus server), in its bytes: `server-error` with the body
    /// `\n# Server error\n\nbad request\n`.
    #[arg(long, hide = true, conflicts_with = "all_words_lookup")]
    no_lookup: bool,
    /// Test mode: answer LIST as a server whose paging loops: every page is
    /// the folder's first, with `complete: false` and the same
    /// `next-cursor`, whatever cursor was sent.
    #[arg(long, hide = true, conflicts_with = "unpaged_list")]
    looping_list: bool,
    /// Test mode: limit each client address to RATE requests per second
    /// (`50/s`), after a burst of --rate-burst, as a demarkus server does
    /// (50/s, burst 100, with --max-streams 10): a stream over the rate is
    /// closed without a byte and its slot is never freed.
    #[arg(long, hide = true, value_name = "RATE", value_parser = Rate::parse_per_second)]
    rate_limit: Option<f64>,
    /// Test mode: the burst of --rate-limit (default: twice the rate per second).
    #[arg(long, hide = true, requires = "rate_limit", value_name = "N")]
    rate_burst: Option<f64>,
    /// Test mode: a FETCH of this path holds its engine call for an hour
    /// before answering, as a read on a hung file system would.
    #[arg(long, hide = true, value_name = "PATH")]
    stalled_path: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Turn a folder of markdown into a new versioned store (each file
    /// becomes v1), or with --mark DIR mark a store written before stores
    /// had a marker.
    Import {
        /// The folder of markdown files.
        #[arg(required_unless_present = "mark", conflicts_with = "mark")]
        src: Option<PathBuf>,
        /// The store to create (must not exist, be empty, or be a store).
        #[arg(required_unless_present = "mark")]
        dest: Option<PathBuf>,
        /// Mark DIR (an older store with versions/ folders and no
        /// .mark-store marker) as a versioned store; refused when plain
        /// documents in it would no longer be served.
        #[arg(long, value_name = "DIR")]
        mark: Option<PathBuf>,
        /// The document limit the store will be served with: larger files
        /// are imported with a warning (writes to them would be refused).
        #[arg(long, default_value_t = mark_store::DEFAULT_MAX_DOCUMENT_BYTES, value_name = "BYTES")]
        max_document_bytes: usize,
    },
    /// Manage capability tokens.
    Token {
        #[command(subcommand)]
        action: TokenCommand,
    },
}

#[derive(Debug, Subcommand)]
enum TokenCommand {
    /// Make a new token: prints the raw token once to stdout and stores only its hash.
    Generate {
        /// Comma-separated path globs (`*` = one segment, `**` = any depth), e.g. `/**`.
        #[arg(long, value_name = "GLOBS")]
        paths: String,
        /// Comma-separated operations: `read`, `publish`.
        #[arg(long, value_name = "OPS")]
        ops: String,
        /// Expiry time, RFC 3339 (e.g. 2027-01-01T00:00:00Z).
        #[arg(long, value_name = "RFC3339")]
        expires: Option<String>,
        /// The token file to add it to (created if missing).
        #[arg(long, value_name = "FILE")]
        tokens: PathBuf,
    },
}

/// Runs what the command line asks for.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Some(Command::Import {
            mark: Some(dir), ..
        }) => {
            mark_store::mark(&dir)?;
            tracing::info!("marked {} as a versioned store", dir.display());
            Ok(())
        }
        Some(Command::Import {
            src: Some(src),
            dest: Some(dest),
            max_document_bytes,
            ..
        }) => {
            let report = mark_store::import(&src, &dest, SystemTime::now(), max_document_bytes)
                .with_context(|| format!("importing {} into {}", src.display(), dest.display()))?;
            for skipped in &report.skipped {
                tracing::warn!("skipped {skipped}");
            }
            for (doc, len) in &report.over_limit {
                tracing::warn!(
                    "{doc} is {len} bytes, over the {max_document_bytes}-byte document limit: it is served, but a publish or append to it is refused as too large unless the server runs with --max-document-bytes {len} or more"
                );
            }
            tracing::info!(
                "imported {} documents into {} ({} unchanged, {} skipped)",
                report.imported,
                dest.display(),
                report.unchanged,
                report.skipped.len()
            );
            Ok(())
        }
        Some(Command::Token {
            action:
                TokenCommand::Generate {
                    paths,
                    ops,
                    expires,
                    tokens,
                },
        }) => generate_token(&paths, &ops, expires.as_deref(), &tokens),
        Some(Command::Import { .. }) => bail!("import needs SRC DEST, or --mark DIR"),
        None => serve(cli.serve),
    }
}

fn generate_token(
    paths: &str,
    ops: &str,
    expires: Option<&str>,
    tokens: &std::path::Path,
) -> anyhow::Result<()> {
    let expires_at = expires
        .map(|s| {
            time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
                .map(SystemTime::from)
                // The parser's own words ("a character literal was not
                // valid") do not say what to type.
                .map_err(|_| {
                    anyhow::anyhow!(
                        "--expires `{s}` is not an RFC 3339 time: give a four-digit year, month, day, `T`, hours, minutes, seconds and a zone, e.g. 2027-01-01T00:00:00Z"
                    )
                })
        })
        .transpose()?;
    if let (Some(at), Some(text)) = (expires_at, expires)
        && at <= SystemTime::now()
    {
        bail!(
            "--expires `{text}` is already past, so the token would never work; give a time in the future"
        );
    }
    let globs = split_list(paths);
    let operations = split_list(ops)
        .iter()
        .map(|o| {
            Op::parse(o).with_context(|| {
                format!("unknown operation `{o}` in --ops; use read, publish or read,publish")
            })
        })
        .collect::<anyhow::Result<Vec<Op>>>()?;
    if globs.is_empty() || operations.is_empty() {
        bail!("--paths and --ops each need at least one entry");
    }
    let raw = mark_store::generate_token(&globs, &operations, expires_at, tokens)
        .with_context(|| format!("adding a token to {}", tokens.display()))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{raw}")?;
    out.flush()?;
    Ok(())
}

fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect()
}

/// LIST as an older server answers it (`--unpaged-list`): the paging keys
/// are not read, the answer says nothing of completeness.
fn list_unpaged(
    engine: &Engine,
    request: &mark_proto::Request,
    now: SystemTime,
) -> mark_proto::Response {
    let mut request = request.clone();
    request.metadata.remove("page-size");
    request.metadata.remove("cursor");
    let mut response = engine.handle(&request, now);
    response.metadata.remove("complete");
    response.metadata.remove("next-cursor");
    response
}

/// The `next-cursor` every page of `--looping-list` gives.
const LOOPING_CURSOR: &str = "again";

/// LIST as a server whose paging loops answers it (`--looping-list`): the
/// cursor is not read, and every page says there is more, at the same cursor.
fn list_looping(
    engine: &Engine,
    request: &mark_proto::Request,
    now: SystemTime,
) -> mark_proto::Response {
    let mut request = request.clone();
    request.metadata.remove("cursor");
    let mut response = engine.handle(&request, now);
    if response.status == mark_proto::Status::Ok {
        response.metadata.insert("complete", "false");
        response.metadata.insert("next-cursor", LOOPING_CURSOR);
    }
    response
}

/// LOOKUP as an all-words server answers it (`--all-words-lookup`): `terms`
/// and `columns` are not read, and not echoed.
fn lookup_all_words(
    engine: &Engine,
    request: &mark_proto::Request,
    now: SystemTime,
) -> mark_proto::Response {
    let mut request = request.clone();
    for ours in ["terms", "columns"] {
        request.metadata.remove(ours);
    }
    let mut response = engine.handle(&request, now);
    for ours in ["terms", "columns"] {
        response.metadata.remove(ours);
    }
    response
}

/// A verb a server does not know (LOOKUP with `--no-lookup`, WATCH with
/// `--no-watch`), answered byte for byte as a demarkus server before it
/// writes it: `server-error`, no other metadata, and demarkus' error body
/// (`writeError`: a blank line, `# ` and the status as a title, a blank
/// line, the message, a line end).
fn unknown_verb() -> mark_proto::Response {
    mark_proto::Response::new(mark_proto::Status::ServerError)
        .with_body("\n# Server error\n\nbad request\n")
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let root = args.root.context("--root is required")?;
    let tokens = args
        .tokens
        .as_deref()
        .map(TokenStore::load)
        .transpose()
        .context("loading the token file")?;
    if let (Some(path), Some(store)) = (&args.tokens, &tokens) {
        tracing::info!("token file {}: {}", path.display(), store.layouts());
    }
    let below_streams = (args.max_streams as usize).saturating_sub(1);
    let max_watches_per_connection = match args.max_watches_per_connection {
        Some(n) if n > below_streams => bail!(
            "--max-watches-per-connection {n} must be below --max-streams {}, so a watching client can still send requests; lower it or raise --max-streams",
            args.max_streams
        ),
        Some(n) => n,
        None => DEFAULT_WATCHES_PER_CONNECTION.min(below_streams),
    };
    let mode = serve_mode(&root, args.flat)?;
    let engine = Engine::open(&root, mode, tokens)
        .with_context(|| format!("opening {}", root.display()))?
        .with_max_document_bytes(args.max_document_bytes);
    engine.set_index_storage(IndexStorage::in_folder_or_cache(
        args.index_dir,
        args.index_ram_bytes,
    ));
    let engine = Arc::new(engine);
    let watches = (!args.no_watch).then(|| {
        mark_server::Watches::new(
            Arc::clone(&engine),
            mark_server::WatchConfig {
                max_watches: args.max_watches,
                max_per_connection: max_watches_per_connection,
                recheck: Duration::from_millis(args.watch_recheck_ms.max(1)),
                heartbeat: Duration::from_millis(args.watch_heartbeat_ms.max(1)),
                backlog: args.watch_backlog,
            },
        )
    });
    let no_watch = args.no_watch;
    let identity = match (&args.cert, &args.key) {
        (Some(cert), Some(key)) => ServerIdentity::load(cert, key)?,
        _ => ServerIdentity::self_signed(args.listen.ip())?,
    };
    let fingerprint = identity.fingerprint_text();
    let limits = Limits {
        max_request: Limits::request_cap(args.max_document_bytes),
        stream_timeout: Duration::from_millis(args.stream_timeout_ms),
        max_connections: args.max_connections,
        max_streams: args.max_streams,
        rate: args.rate_limit.map(|per_second| Rate {
            per_second,
            burst: args.rate_burst.unwrap_or(2.0 * per_second).max(1.0),
        }),
    };
    let (unpaged_list, looping_list, all_words_lookup, no_lookup) = (
        args.unpaged_list,
        args.looping_list,
        args.all_words_lookup,
        args.no_lookup,
    );
    let stalled_path = args.stalled_path;
    let handler: Handler = Arc::new(move |request, now| {
        if request.verb == mark_proto::Verb::Fetch
            && stalled_path.as_deref() == Some(request.path.as_str())
        {
            std::thread::sleep(STALL);
        }
        if unpaged_list && request.verb == mark_proto::Verb::List {
            return list_unpaged(&engine, request, now);
        }
        if looping_list && request.verb == mark_proto::Verb::List {
            return list_looping(&engine, request, now);
        }
        if (no_lookup && request.verb == mark_proto::Verb::Lookup)
            || (no_watch && request.verb == mark_proto::Verb::Watch)
        {
            return unknown_verb();
        }
        if all_words_lookup && request.verb == mark_proto::Verb::Lookup {
            return lookup_all_words(&engine, request, now);
        }
        engine.handle(request, now)
    });

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let served = runtime.block_on(async move {
        let endpoint = mark_server::endpoint(args.listen, identity, &limits)?;
        let addr = endpoint.local_addr().context("reading the bound address")?;
        let shutdown = shutdown_signal()?;
        tracing::info!(root = %root.display(), "serving on {addr}, certificate {fingerprint}");
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening {addr} fingerprint {fingerprint}")?;
        out.flush()?;
        drop(out);
        mark_server::serve(endpoint, handler, limits, watches, shutdown).await;
        Ok(())
    });
    // Engine calls still blocked (a hung file system) are not waited for:
    // the shutdown's grace period was their time, and the process exits.
    runtime.shutdown_background();
    served
}

/// Watches one connection may hold unless `--max-watches-per-connection` says.
const DEFAULT_WATCHES_PER_CONNECTION: usize = 16;

/// How long `--stalled-path` holds a FETCH.
const STALL: Duration = Duration::from_secs(3600);

/// The mode `--root` is served in. Without --flat the root must be a
/// marked store or an empty folder: serving a plain folder as a store would
/// show none of its documents, and its first write would add `versions/`.
fn serve_mode(root: &std::path::Path, flat: bool) -> anyhow::Result<StoreMode> {
    let kind = RootKind::of(root)
        .with_context(|| format!("the root {} cannot be read", root.display()))?;
    let shown = root.display();
    match (kind, flat) {
        (RootKind::UnmarkedStore, true) => {
            tracing::warn!(
                "{shown} has versions/ folders like a store of an older mark-server but no .mark-store marker; it is served as a plain folder. To serve it as a store, mark it with `mark-server import --mark {shown}`"
            );
            Ok(StoreMode::Flat)
        }
        (_, true) => Ok(StoreMode::Flat),
        (RootKind::Store | RootKind::Empty, false) => Ok(StoreMode::Versioned),
        (RootKind::UnmarkedStore, false) => bail!(
            "{shown} has versions/ folders but no .mark-store marker, so it is not known to be a versioned store; mark it with `mark-server import --mark {shown}`, or serve it read-only as a plain folder with --flat"
        ),
        (RootKind::Folder, false) => bail!(
            "{shown} is a plain folder, not a versioned store (no .mark-store marker) nor empty; serve it read-only with --flat, or make a store from it with `mark-server import {shown} NEW_STORE`"
        ),
    }
}

/// Installs the SIGINT and SIGTERM handlers now (so a signal that comes
/// right after the `listening` line is not lost to the default action) and
/// returns a future that resolves on the first of them.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).context("watching SIGTERM")?;
        let mut int = signal(SignalKind::interrupt()).context("watching SIGINT")?;
        Ok(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn serve_needs_root_but_subcommands_do_not() {
        assert!(Cli::try_parse_from(["mark-server"]).is_err());
        let cli = Cli::try_parse_from([
            "mark-server",
            "--root",
            "/r",
            "--listen",
            "127.0.0.1:0",
            "--flat",
        ])
        .unwrap();
        assert!(cli.serve.flat && cli.command.is_none());
        let cli = Cli::try_parse_from(["mark-server", "import", "a", "b"]).unwrap();
        assert!(matches!(cli.command, Some(Command::Import { .. })));
        let cli = Cli::try_parse_from(["mark-server", "import", "--mark", "d"]).unwrap();
        assert!(matches!(
            cli.command,
            Some(Command::Import { mark: Some(_), .. })
        ));
        assert!(Cli::try_parse_from(["mark-server", "import", "a"]).is_err());
        assert!(Cli::try_parse_from(["mark-server", "import", "--mark", "d", "a", "b"]).is_err());
        let cli = Cli::try_parse_from([
            "mark-server",
            "token",
            "generate",
            "--paths",
            "/**",
            "--ops",
            "read,publish",
            "--tokens",
            "t.toml",
        ])
        .unwrap();
        assert!(matches!(cli.command, Some(Command::Token { .. })));
        assert!(Cli::try_parse_from(["mark-server", "--root", "/r", "--cert", "c.pem"]).is_err());
    }

    #[test]
    fn lists_split_on_commas_and_drop_blanks() {
        assert_eq!(split_list(" read, publish,,"), vec!["read", "publish"]);
    }
}
