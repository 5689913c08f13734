//! A recorded MCP client session with any stdio MCP server, over rmcp's
//! client: every tool call's name, arguments, result text, `isError`,
//! o200k tokens, bytes and wall time.

use crate::BenchError;
use crate::tokens::o200k_tokens;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde::Serialize;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

/// How long a server has to start and complete the MCP handshake (npx may
/// start slowly).
pub const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one tool call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How much of a server's stderr is kept for error messages.
const STDERR_TAIL: usize = 4096;

/// How to start a stdio MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerCommand {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Working directory (inherited when `None`).
    pub cwd: Option<PathBuf>,
}

impl ServerCommand {
    /// `program args…` with no extra environment.
    pub fn new(
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> ServerCommand {
        ServerCommand {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            cwd: None,
        }
    }

    /// The command line, for messages.
    pub fn display(&self) -> String {
        let mut s = self.program.display().to_string();
        for a in &self.args {
            s.push(' ');
            s.push_str(a);
        }
        s
    }
}

/// One recorded tool call.
#[derive(Debug, Clone, Serialize)]
pub struct ToolCall {
    /// The tool's name.
    pub name: String,
    /// The arguments sent.
    pub args: Value,
    /// The text the model would read: the result's text blocks joined (or,
    /// when there are none, the structured content as JSON).
    pub text: String,
    /// The result's `isError`.
    pub is_error: bool,
    /// o200k tokens of `text`.
    pub tokens: usize,
    /// UTF-8 bytes of `text`.
    pub bytes: usize,
    /// Wall time from sending the request to reading the result.
    #[serde(serialize_with = "crate::report::ser_micros")]
    pub wall: Duration,
}

/// A running MCP server with a client session and the record of its calls.
pub struct McpSession {
    client: RunningService<RoleClient, ()>,
    tools: Vec<String>,
    /// Each tool's input schema `properties`, by tool name.
    params: Vec<(String, Value)>,
    command: String,
    stderr_tail: Arc<Mutex<String>>,
    calls: Vec<ToolCall>,
    pid: Option<u32>,
}

impl std::fmt::Debug for McpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSession")
            .field("command", &self.command)
            .field("tools", &self.tools)
            .field("calls", &self.calls.len())
            .finish_non_exhaustive()
    }
}

impl McpSession {
    /// Starts the server, completes the MCP handshake and lists its tools.
    pub async fn start(command: &ServerCommand) -> Result<McpSession, BenchError> {
        let shown = command.display();
        let mut cmd = tokio::process::Command::new(&command.program);
        cmd.args(&command.args);
        for (k, v) in &command.env {
            cmd.env(k, v);
        }
        if let Some(dir) = &command.cwd {
            cmd.current_dir(dir);
        }
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| BenchError::Io {
                what: format!("starting `{shown}`"),
                source,
            })?;
        let pid = transport.id();
        let stderr_tail = Arc::new(Mutex::new(String::new()));
        if let Some(mut stderr) = stderr {
            let tail = Arc::clone(&stderr_tail);
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    let mut t = tail.lock().unwrap_or_else(PoisonError::into_inner);
                    t.push_str(&String::from_utf8_lossy(&buf[..n]));
                    if t.len() > STDERR_TAIL {
                        let cut = t.ceil_char_boundary(t.len() - STDERR_TAIL);
                        t.drain(..cut);
                    }
                }
            });
        }
        let started = tokio::time::timeout(START_TIMEOUT, ().serve(transport)).await;
        let tail = || {
            stderr_tail
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        };
        let client = match started {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                return Err(BenchError::Mcp {
                    command: shown,
                    why: format!("the MCP handshake failed: {e}; stderr: {}", tail()),
                });
            }
            Err(_) => {
                return Err(BenchError::Mcp {
                    command: shown,
                    why: format!(
                        "no MCP handshake within {START_TIMEOUT:?}; stderr: {}",
                        tail()
                    ),
                });
            }
        };
        let listed = match tokio::time::timeout(CALL_TIMEOUT, client.list_all_tools()).await {
            Ok(Ok(tools)) => tools,
            Ok(Err(e)) => {
                return Err(BenchError::Mcp {
                    command: shown,
                    why: format!("tools/list failed: {e}"),
                });
            }
            Err(_) => {
                return Err(BenchError::Mcp {
                    command: shown,
                    why: format!("tools/list gave no answer within {CALL_TIMEOUT:?}"),
                });
            }
        };
        let tools = listed.iter().map(|t| t.name.to_string()).collect();
        let params = listed
            .iter()
            .map(|t| {
                let properties = t.input_schema.get("properties").cloned();
                (t.name.to_string(), properties.unwrap_or(Value::Null))
            })
            .collect();
        Ok(McpSession {
            client,
            tools,
            params,
            command: shown,
            stderr_tail,
            calls: Vec::new(),
            pid,
        })
    }

    /// The server process's id (while it runs), for reading its memory.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The tool names from `tools/list`.
    pub fn tools(&self) -> &[String] {
        &self.tools
    }

    /// Whether the server offers `tool`.
    pub fn has_tool(&self, tool: &str) -> bool {
        self.tools.iter().any(|t| t == tool)
    }

    /// The schema of `tool`'s parameter `param` (`None` when the tool
    /// does not take it).
    pub fn param(&self, tool: &str, param: &str) -> Option<&Value> {
        self.params
            .iter()
            .find(|(t, _)| t == tool)
            .and_then(|(_, props)| props.get(param))
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> &[ToolCall] {
        &self.calls
    }

    /// Calls `tool` with `args` (a JSON object) and records the call. A tool
    /// error (`isError`) is a recorded result, not an `Err`; `Err` means the
    /// protocol or the process failed.
    pub async fn call(&mut self, tool: &str, args: Value) -> Result<ToolCall, BenchError> {
        let arguments: Map<String, Value> = match &args {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let started = Instant::now();
        let outcome = tokio::time::timeout(CALL_TIMEOUT, self.client.call_tool(params)).await;
        let wall = started.elapsed();
        let result = match outcome {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                return Err(BenchError::Mcp {
                    command: self.command.clone(),
                    why: format!("{tool} failed: {e}; stderr: {}", self.stderr()),
                });
            }
            Err(_) => {
                return Err(BenchError::Mcp {
                    command: self.command.clone(),
                    why: format!("{tool} gave no answer within {CALL_TIMEOUT:?}"),
                });
            }
        };
        let text = result_text(&result);
        let call = ToolCall {
            name: tool.to_string(),
            args,
            tokens: o200k_tokens(&text),
            bytes: text.len(),
            is_error: result.is_error.unwrap_or(false),
            text,
            wall,
        };
        self.calls.push(call.clone());
        Ok(call)
    }

    /// Calls `tool` and returns its wall time when the result is no tool
    /// error and holds `expect`; else an `Err` with what it returned (a
    /// benchmark times only the answers it meant to).
    pub async fn timed_call(
        &mut self,
        tool: &str,
        args: Value,
        expect: &str,
    ) -> Result<Duration, BenchError> {
        let call = self.call(tool, args).await?;
        if call.is_error || !call.text.contains(expect) {
            return Err(BenchError::Mcp {
                command: self.command.clone(),
                why: format!("{tool}: expected `{expect}` in\n{}", call.text),
            });
        }
        Ok(call.wall)
    }

    fn stderr(&self) -> String {
        self.stderr_tail
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Ends the session (the server process is stopped).
    pub async fn close(self) {
        // The child is killed when the transport drops, whatever close says.
        let _ = tokio::time::timeout(Duration::from_secs(5), self.client.cancel()).await;
    }
}

/// What the model reads of a result: its text blocks, else its structured
/// content as JSON.
fn result_text(result: &CallToolResult) -> String {
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .map(|t| t.text.as_str())
        .collect();
    if texts.is_empty() {
        result
            .structured_content
            .as_ref()
            .map(Value::to_string)
            .unwrap_or_default()
    } else {
        texts.join("\n")
    }
}

/// Resident memory of process `pid` from `/proc/PID/status` (Linux): VmRSS
/// and VmHWM (its peak), in KiB; `None` where there is no `/proc` or no
/// such process.
pub fn resident_kib(pid: u32) -> Option<(u64, u64)> {
    Some((
        proc_status_kib(pid, "VmRSS:")?,
        proc_status_kib(pid, "VmHWM:")?,
    ))
}

/// One field of `/proc/PID/status` in KiB (`VmRSS:`, `RssAnon:`, …);
/// `None` where there is no such process or field.
pub fn proc_status_kib(pid: u32, name: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
