//! Why a capability is an MCP tool and not only a CLI verb. The CLI is where
//! capabilities live; a tool costs every agent bytes in `tools/list` on every
//! session, so each registered tool names its reasons, from this fixed list,
//! beside its registration (server.rs). `mark-mcp tools` prints them.

use serde_json::{Value, json};

/// The reasons a capability is also a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// R1: clients such as Claude Desktop cannot run commands.
    NoShell,
    /// R2: it reads a server other than the project the agent works in.
    AnotherSource,
    /// R3: a crawl or a job the agent waits on or polls.
    LongRunningState,
    /// R4: a structured, bounded record the agent would otherwise parse out
    /// of large output.
    BoundedResult,
    /// R5: a narrow action a client can auto-approve, where the shell form
    /// would need a broad permission.
    PermissionBoundary,
}

impl Reason {
    /// `R1` … `R5`.
    pub fn code(self) -> &'static str {
        match self {
            Reason::NoShell => "R1",
            Reason::AnotherSource => "R2",
            Reason::LongRunningState => "R3",
            Reason::BoundedResult => "R4",
            Reason::PermissionBoundary => "R5",
        }
    }

    /// The short name.
    pub fn label(self) -> &'static str {
        match self {
            Reason::NoShell => "no shell",
            Reason::AnotherSource => "another source",
            Reason::LongRunningState => "long-running state",
            Reason::BoundedResult => "structured bounded result",
            Reason::PermissionBoundary => "permission boundary",
        }
    }
}

/// One tool as `mark-mcp tools` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCard {
    /// `mark_fetch`.
    pub name: String,
    /// `read`, or `write` (offered only with `--write`).
    pub group: &'static str,
    /// Why it is a tool.
    pub reasons: &'static [Reason],
    /// `read-only`, `destructive`, `idempotent`, `open world` (and their negations).
    pub annotations: Vec<&'static str>,
    /// The CLI equivalent: `mark-mcp fetch`.
    pub verb: String,
    /// Bytes of its entry in `tools/list` (compact JSON).
    pub list_bytes: usize,
}

/// The annotation hints in words (absent hints take MCP's defaults).
pub fn annotation_words(a: Option<&rmcp::model::ToolAnnotations>) -> Vec<&'static str> {
    let hint = |h: Option<bool>, default: bool| h.unwrap_or(default);
    let (ro, de, id, ow) = match a {
        Some(a) => (
            hint(a.read_only_hint, false),
            hint(a.destructive_hint, true),
            hint(a.idempotent_hint, false),
            hint(a.open_world_hint, true),
        ),
        None => (false, true, false, true),
    };
    vec![
        if ro { "read-only" } else { "writes" },
        if de { "destructive" } else { "not destructive" },
        if id { "idempotent" } else { "not idempotent" },
        if ow { "open world" } else { "closed world" },
    ]
}

fn reason_text(reasons: &[Reason]) -> String {
    reasons
        .iter()
        .map(|r| format!("{} {}", r.code(), r.label()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The markdown table of `mark-mcp tools`, with the total per group.
pub fn to_markdown(cards: &[ToolCard]) -> String {
    let mut out = String::from(
        "| tool | group | reasons | annotations | CLI | tools/list bytes |\n|---|---|---|---|---|---:|\n",
    );
    for c in cards {
        out.push_str(&format!(
            "| {} | {} | {} | {} | `{}` | {} |\n",
            c.name,
            c.group,
            reason_text(c.reasons),
            c.annotations.join(", "),
            c.verb,
            c.list_bytes
        ));
    }
    for group in ["read", "write"] {
        let bytes: usize = cards
            .iter()
            .filter(|c| c.group == group)
            .map(|c| c.list_bytes)
            .sum();
        out.push_str(&format!("\n{group} tools: {bytes} bytes in tools/list"));
    }
    out.push_str(" (offered only with --write)\n");
    out
}

/// The `--json` form.
pub fn to_json(cards: &[ToolCard]) -> Value {
    Value::Array(
        cards
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "group": c.group,
                    "reasons": c.reasons.iter().map(|r| json!({"code": r.code(), "label": r.label()})).collect::<Vec<_>>(),
                    "annotations": c.annotations,
                    "cli": c.verb,
                    "tools_list_bytes": c.list_bytes,
                })
            })
            .collect(),
    )
}
