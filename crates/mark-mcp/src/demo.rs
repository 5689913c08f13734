//! `mark-mcp demo`: needs nothing but this binary. The bundled knowledge
//! base (`soul/`, embedded at build time) is written to a temporary folder,
//! served over real QUIC on 127.0.0.1 from inside this process (mark-server's
//! listener as a library, a self-signed certificate the client pins), and a
//! short orientation runs through rmcp's client against this crate's MCP
//! server, one session. Tokens are markdown-slice's `estimate_tokens`, the
//! product's documented estimate; the exact o200k figures are the
//! benchmark's (`mark-bench orientation`).

use crate::server::MarkServer;
use crate::session::Session;
use crate::settings::Settings;
use crate::sources::RemoteSource;
use mark_client::{Client, ClientConfig, Trust};
use mark_proto::MarkUrl;
use mark_store::{Engine, StoreMode};
use markdown_slice::estimate_tokens;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ContentBlock};
use serde_json::{Value, json};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// The knowledge base's files, `(path under soul/, text)` in path order.
const SOUL: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/soul_files.rs"));

/// One call of the scenario: the tool, its `url`, and the whole document
/// a plain file reader would have returned for it.
struct Step {
    tool: &'static str,
    url: &'static str,
    document: &'static str,
}

/// Where is Tidewatch now? Orient on the hub, read the one section it links
/// to, then ask again (the session answers `unchanged`).
const SCENARIO: &[Step] = &[
    Step {
        tool: "mark_explore",
        url: "/projects/tidewatch/index.md",
        document: "projects/tidewatch/index.md",
    },
    Step {
        tool: "mark_fetch",
        url: "/projects/tidewatch/roadmap.md#phase-8--backpressure-and-replay",
        document: "projects/tidewatch/roadmap.md",
    },
    Step {
        tool: "mark_fetch",
        url: "/projects/tidewatch/roadmap.md#phase-8--backpressure-and-replay",
        document: "projects/tidewatch/roadmap.md",
    },
];

/// How long the whole scenario may take before the demo gives up.
const DEMO_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs the demo and prints its table; failures are one sentence on stderr.
pub async fn demo() -> ExitCode {
    match tokio::time::timeout(DEMO_TIMEOUT, run()).await {
        Ok(Ok(report)) => {
            print!("{report}");
            ExitCode::SUCCESS
        }
        Ok(Err(e)) => {
            eprintln!("mark-mcp demo: {e}");
            ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!(
                "mark-mcp demo: the scenario did not finish within {DEMO_TIMEOUT:?}; run it again with RUST_LOG=debug to see where it waits."
            );
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<String, String> {
    let folder = tempfile::tempdir().map_err(|e| format!("cannot make a temporary folder: {e}"))?;
    write_knowledge_base(folder.path())?;
    let engine = Engine::open(folder.path(), StoreMode::Flat, None)
        .map_err(|e| format!("cannot open the bundled knowledge base: {e}"))?;
    let limits = mark_server::Limits {
        max_request: mark_server::Limits::request_cap(mark_store::DEFAULT_MAX_DOCUMENT_BYTES),
        stream_timeout: Duration::from_secs(10),
        max_connections: 4,
        max_streams: 64,
        rate: None,
    };
    let listen = "127.0.0.1:0".parse().map_err(|e| format!("{e}"))?;
    let server = mark_server::serve_in_background(Arc::new(engine), listen, limits)
        .map_err(|e| format!("cannot serve on 127.0.0.1: {e}"))?;
    let result = scenario(&server).await;
    server.stop().await;
    result
}

/// Writes the embedded files under `dir`.
fn write_knowledge_base(dir: &Path) -> Result<(), String> {
    for (name, text) in SOUL {
        let path = dir.join(name);
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, text));
        written.map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

async fn scenario(server: &mark_server::BackgroundServer) -> Result<String, String> {
    let url = MarkUrl::parse(&format!("mark://127.0.0.1:{}", server.addr.port()))
        .map_err(|e| e.to_string())?;
    let client = Client::new(ClientConfig {
        trust: Trust::Pin(server.fingerprint),
        ..Default::default()
    })
    .map_err(|e| e.to_string())?;
    let session = Arc::new(Session::new(
        Arc::new(RemoteSource::new(url.clone(), client)),
        Settings::default(),
    ));
    // The MCP server and rmcp's client, joined by an in-memory pipe.
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let mcp_server = tokio::spawn(async move {
        let (read, write) = tokio::io::split(server_io);
        if let Ok(running) = MarkServer::new(session, false)
            .serve_over(read, write)
            .await
        {
            let _ = running.waiting().await;
        }
    });
    let mcp = ().serve(client_io).await.map_err(|e| format!("the MCP handshake failed: {e}"))?;

    let documents = SOUL.iter().filter(|(n, _)| n.ends_with(".md")).count();
    let mut out = format!(
        "mark-mcp demo: {documents} bundled documents served over QUIC at {} (self-signed certificate, pinned sha256:{}), one MCP session through rmcp's client.\n\n\
         | step | call | result tokens (estimate) | whole document (estimate) | first line |\n|---:|---|---:|---:|---|\n",
        url.origin(),
        hex::encode(server.fingerprint)
    );
    let (mut spent, mut whole) = (0, 0);
    for (i, step) in SCENARIO.iter().enumerate() {
        let text = call(&mcp, step.tool, json!({ "url": step.url })).await?;
        let document = SOUL
            .iter()
            .find(|(n, _)| *n == step.document)
            .map_or(0, |(_, t)| estimate_tokens(t));
        let tokens = estimate_tokens(&text);
        spent += tokens;
        whole += document;
        let first = text.lines().next().unwrap_or("").replace('|', "\\|");
        out.push_str(&format!(
            "| {} | {} {} | {tokens} | {document} | {first} |\n",
            i + 1,
            step.tool,
            step.url
        ));
    }
    out.push_str(&format!(
        "| | total | **{spent}** | **{whole}** | |\n\n\
         Tokens are markdown-slice's estimate_tokens (an estimate, not a model's tokenizer); `whole document` is what reading each file whole would have cost. \
         Exact o200k figures over 30 questions: `mark-bench orientation` in the workspace.\n\n\
         Next: `mark-mcp --root DIR explore /index.md` on your own notes, then fetch a `#section` it names; \
         `claude mcp add mark -- mark-mcp --root /path/to/notes` gives an agent the same tools.\n"
    ));
    let _ = mcp.cancel().await;
    let _ = mcp_server.await;
    Ok(out)
}

/// One tool call; a tool error stops the demo with its text.
async fn call(
    mcp: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    tool: &'static str,
    args: Value,
) -> Result<String, String> {
    let Value::Object(args) = args else {
        return Err(format!("{tool}: arguments must be an object"));
    };
    let result = mcp
        .call_tool(CallToolRequestParams::new(tool).with_arguments(args))
        .await
        .map_err(|e| format!("{tool} failed: {e}"))?;
    let text: String = result
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .map(|t| t.text.as_str())
        .collect();
    if result.is_error == Some(true) {
        return Err(format!("{tool} answered an error: {text}"));
    }
    Ok(text)
}
