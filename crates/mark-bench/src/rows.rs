//! The row-cost benchmark (#13): o200k tokens per row of `mark_lookup`
//! results in body mode (`limit: 10`) for [`QUERIES`] API names spread
//! evenly over the Node corpus's (the ranking benchmark's API-name set),
//! for this mark-mcp and a baseline mark-mcp (an older build, by path), in
//! one run, each in a session of its own over `--root`.
//!
//! A row is a result line starting with `/`, or `| /` (the markdown table
//! mark-mcp wrote before #13); each is counted on its own. The sections
//! that `read` appends are not rows: both binaries get the same arguments
//! (`query`, `match`, `limit`), whatever their defaults.

use crate::{BenchError, McpSession, ServerCommand, o200k_tokens};
use serde::Serialize;
use serde_json::json;
use std::path::{Path, PathBuf};

/// Queries per run.
pub const QUERIES: usize = 20;
/// Rows asked per query.
const LIMIT: u64 = 10;
/// This mark-mcp's tokens per row, at most this share of the baseline's.
pub const TARGET: f64 = 55.0;

/// One binary's rows over the queries.
#[derive(Debug, Clone, Serialize)]
pub struct RowCost {
    /// Shown in the table.
    pub label: String,
    /// The executable.
    pub binary: PathBuf,
    /// Rows returned over all queries.
    pub rows: usize,
    /// Their o200k tokens.
    pub tokens: usize,
}

impl RowCost {
    /// Mean tokens per row.
    pub fn per_row(&self) -> f64 {
        self.tokens as f64 / self.rows.max(1) as f64
    }
}

/// The run: the queries and each binary's cost, this one first.
#[derive(Debug, Clone, Serialize)]
pub struct RowCostReport {
    /// The corpus's distinct API names, the queries picked from.
    pub names: usize,
    /// The queries, in the order asked.
    pub queries: Vec<String>,
    /// This mark-mcp, then the baseline.
    pub costs: Vec<RowCost>,
}

/// Every [`step`]-th of `names`, starting at the first.
fn spread(names: &[String]) -> Vec<String> {
    names
        .iter()
        .step_by(step(names.len()))
        .take(QUERIES)
        .cloned()
        .collect()
}

fn step(names: usize) -> usize {
    (names / QUERIES).max(1)
}

/// The rows of one `mark_lookup` result text.
fn rows(text: &str) -> impl Iterator<Item = &str> {
    crate::reading::lookup_rows_part(text)
        .lines()
        .filter(|l| l.starts_with('/') || l.starts_with("| /"))
}

/// Runs the queries on `corpus` with each of `binaries` (label, path).
pub async fn run_row_cost(
    corpus: &Path,
    binaries: &[(String, PathBuf)],
) -> Result<RowCostReport, BenchError> {
    let names = crate::ranking::api_names(corpus)?;
    let queries = spread(&names);
    let mut costs = Vec::with_capacity(binaries.len());
    for (label, binary) in binaries {
        let root = corpus.display().to_string();
        let mut session = McpSession::start(&ServerCommand::new(binary, ["--root", &root])).await?;
        let mut cost = RowCost {
            label: label.clone(),
            binary: binary.clone(),
            rows: 0,
            tokens: 0,
        };
        for q in &queries {
            let call = session
                .call(
                    "mark_lookup",
                    json!({"query": q, "match": "body", "limit": LIMIT}),
                )
                .await?;
            if call.is_error {
                return Err(BenchError::Mcp {
                    command: binary.display().to_string(),
                    why: format!("mark_lookup {q}: {}", call.text),
                });
            }
            for row in rows(&call.text) {
                cost.rows += 1;
                cost.tokens += o200k_tokens(row);
            }
        }
        session.close().await;
        costs.push(cost);
    }
    Ok(RowCostReport {
        names: names.len(),
        queries,
        costs,
    })
}

/// The markdown table, and the share against the baseline with the target.
pub fn render_row_cost(report: &RowCostReport) -> String {
    let mut out =
        String::from("| mark-mcp | rows | tokens | tokens per row |\n|---|---|---|---|\n");
    for c in &report.costs {
        out.push_str(&format!(
            "| {} (`{}`) | {} | {} | {:.1} |\n",
            c.label,
            c.binary.display(),
            c.rows,
            c.tokens,
            c.per_row()
        ));
    }
    if let [this, baseline, ..] = report.costs.as_slice() {
        let share = 100.0 * this.per_row() / baseline.per_row().max(f64::MIN_POSITIVE);
        out.push_str(&format!(
            "\nTokens per row: {share:.1} % of the baseline's (target ≤ {TARGET:.0} %: {}).\n",
            if share <= TARGET { "met" } else { "not met" }
        ));
    }
    out.push_str(&format!(
        "\n{} queries (body, limit {LIMIT}), every {}-th of the corpus's {} API names (sorted): {}. Tokens: o200k_base (tiktoken-rs), each row counted on its own.\n",
        report.queries.len(),
        step(report.names),
        report.names,
        report.queries.join(", ")
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_spread_over_the_names() {
        let names: Vec<String> = (0..45).map(|i| format!("n{i}")).collect();
        let picked = spread(&names);
        assert_eq!(picked.len(), QUERIES);
        assert_eq!((picked[0].as_str(), picked[1].as_str()), ("n0", "n2"));
        assert_eq!(spread(&names[..3]).len(), 3, "fewer names than queries");
    }

    #[test]
    fn rows_are_lines_and_table_rows_not_reads() {
        let text = "status: ok\n\n/a.md#x · A · s\n| /b.md#y | 0.50 | B |  | s |\n\n=== read /a.md#x ===\n```js\n// code\n```\n";
        assert_eq!(rows(text).count(), 2);
    }
}
