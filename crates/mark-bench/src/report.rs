//! The figures of a benchmark run: per-strategy aggregates, the targets
//! checked against them, a markdown table and JSON.

use crate::strategy::QuestionOutcome;
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;
use std::time::Duration;

/// Says what the token column counts.
pub const TOKENIZER_NOTE: &str = "tokens: o200k_base (tiktoken-rs), a proxy for Claude's tokenizer, counted over the text of every tool result";

/// Serializes a duration as whole microseconds.
pub fn ser_micros<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// One strategy's figures over every question.
#[derive(Debug, Clone, Serialize)]
pub struct StrategyFigures {
    /// The row's label.
    pub label: String,
    /// Why the strategy did not run (then every figure is empty).
    pub skipped: Option<String>,
    /// Questions asked.
    pub questions: usize,
    /// Questions whose facts all appeared.
    pub answered: usize,
    /// Ids of the questions not answered.
    pub unanswered: Vec<String>,
    /// Mean tool calls per question (until the evidence, or until the plan
    /// ran out for unanswered questions).
    pub calls_mean: f64,
    /// Most tool calls one question took.
    pub calls_max: usize,
    /// o200k tokens of every tool result, all questions.
    pub tokens: usize,
    /// UTF-8 bytes of every tool result, all questions.
    pub result_bytes: usize,
    /// Mark Protocol requests the server logged during the pass (`None` when
    /// no mark-server was involved).
    pub requests: Option<usize>,
    /// Of those, answered `not-modified` (no body moved).
    pub not_modified: Option<usize>,
    /// Those requests by verb (`FETCH`, `LIST`, `LOOKUP` …).
    pub requests_by_verb: BTreeMap<String, usize>,
    /// Wall time of the pass (all questions), median over runs.
    #[serde(serialize_with = "ser_micros")]
    pub wall_median: Duration,
    /// Per-question figures (of the first run).
    pub outcomes: Vec<QuestionOutcome>,
}

impl StrategyFigures {
    /// A row for a strategy that could not run.
    pub fn skipped(label: &str, why: &str, questions: usize) -> StrategyFigures {
        StrategyFigures {
            label: label.to_string(),
            skipped: Some(why.to_string()),
            questions,
            answered: 0,
            unanswered: Vec::new(),
            calls_mean: 0.0,
            calls_max: 0,
            tokens: 0,
            result_bytes: 0,
            requests: None,
            not_modified: None,
            requests_by_verb: BTreeMap::new(),
            wall_median: Duration::ZERO,
            outcomes: Vec::new(),
        }
    }

    /// The table cells `answered | calls mean | calls max | tokens | bytes`.
    pub fn cells(&self) -> String {
        format!(
            "{}/{} | {:.2} | {} | {} | {}",
            self.answered,
            self.questions,
            self.calls_mean,
            self.calls_max,
            self.tokens,
            self.result_bytes
        )
    }

    /// Aggregates per-question outcomes.
    pub fn from_outcomes(
        label: &str,
        outcomes: Vec<QuestionOutcome>,
        walls: &mut [Duration],
    ) -> StrategyFigures {
        let questions = outcomes.len();
        let answered = outcomes.iter().filter(|o| o.answered).count();
        let calls: usize = outcomes.iter().map(|o| o.calls).sum();
        StrategyFigures {
            label: label.to_string(),
            skipped: None,
            questions,
            answered,
            unanswered: outcomes
                .iter()
                .filter(|o| !o.answered)
                .map(|o| o.id.clone())
                .collect(),
            calls_mean: if questions == 0 {
                0.0
            } else {
                calls as f64 / questions as f64
            },
            calls_max: outcomes.iter().map(|o| o.calls).max().unwrap_or(0),
            tokens: outcomes.iter().map(|o| o.tokens).sum(),
            result_bytes: outcomes.iter().map(|o| o.bytes).sum(),
            requests: None,
            not_modified: None,
            requests_by_verb: BTreeMap::new(),
            wall_median: median(walls),
            outcomes,
        }
    }
}

/// The median of `walls` (the lower middle for an even count); zero when empty.
pub fn median(walls: &mut [Duration]) -> Duration {
    walls.sort();
    match walls.len() {
        0 => Duration::ZERO,
        n => walls[(n - 1) / 2],
    }
}

/// A target from the design, checked against the figures.
#[derive(Debug, Clone, Serialize)]
pub struct TargetCheck {
    /// What the target asks.
    pub target: String,
    /// What was measured.
    pub measured: String,
    /// `Some(true)` met, `Some(false)` missed, `None` not measurable (skipped).
    pub met: Option<bool>,
}

/// The result of [`crate::run_orientation`].
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// What the token figures count.
    pub tokenizer: String,
    /// What the request and byte figures count.
    pub counted: String,
    /// The knowledge base.
    pub kb: String,
    /// The o200k tokens of the questions' answer sections, all questions:
    /// what a reader that returns exactly each answer's section would cost.
    pub answer_tokens: usize,
    /// Runs (wall time is the median over them; other figures are from the first).
    pub runs: usize,
    /// One row per strategy.
    pub strategies: Vec<StrategyFigures>,
    /// The targets.
    pub targets: Vec<TargetCheck>,
}

impl Report {
    /// The figures of the strategy whose label starts with `prefix` (`"1."`).
    pub fn strategy(&self, prefix: &str) -> Option<&StrategyFigures> {
        self.strategies.iter().find(|s| s.label.starts_with(prefix))
    }
}

/// `a / b` as a percentage, or `None` when `b` is 0.
pub fn percent(a: usize, b: usize) -> Option<f64> {
    (b > 0).then(|| a as f64 * 100.0 / b as f64)
}

/// A markdown table of strategy rows (the figures columns only).
pub fn render_rows(rows: &[StrategyFigures]) -> String {
    let mut out = String::from(
        "| strategy | answered | calls mean | calls max | result tokens (o200k) | result bytes | protocol requests | wall (median) |\n|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        if let Some(why) = &r.skipped {
            out.push_str(&format!(
                "| {} | skipped: {why} | – | – | – | – | – | – |\n",
                r.label
            ));
            continue;
        }
        let requests = match (r.requests, r.not_modified) {
            (Some(n), Some(nm)) if nm > 0 => format!("{n} ({nm} not-modified)"),
            (Some(n), _) => n.to_string(),
            (None, _) => "–".into(),
        };
        out.push_str(&format!(
            "| {} | {} | {requests} | {:.0} ms |\n",
            r.label,
            r.cells(),
            r.wall_median.as_secs_f64() * 1000.0
        ));
    }
    out
}

/// One `Not answered by …: ids` line per row that missed questions.
pub fn render_unanswered(rows: &[StrategyFigures]) -> String {
    rows.iter()
        .filter(|r| !r.unanswered.is_empty())
        .map(|r| {
            format!(
                "\nNot answered by {}: {}\n",
                r.label,
                r.unanswered.join(", ")
            )
        })
        .collect()
}

/// The report as markdown: the table, the unanswered questions, the targets
/// and what is counted.
pub fn render_table(report: &Report) -> String {
    let mut out = render_rows(&report.strategies);
    out.push_str(&render_unanswered(&report.strategies));
    out.push_str("\n| target | measured | met |\n|---|---|---|\n");
    for t in &report.targets {
        let met = match t.met {
            Some(true) => "yes",
            Some(false) => "no",
            None => "not measured",
        };
        out.push_str(&format!("| {} | {} | {met} |\n", t.target, t.measured));
    }
    out.push_str(&format!(
        "\n{} questions on {}, {} run(s); the answer sections' own tokens: {}; {}; {}.\n",
        report.strategies.first().map_or(0, |s| s.questions),
        report.kb,
        report.runs,
        report.answer_tokens,
        report.tokenizer,
        report.counted
    ));
    out
}

/// One line per knowledge base: the plain agent's answers, calls and tokens,
/// and its tokens as a multiple of the answer sections' own tokens.
pub fn render_sets(reports: &[Report]) -> String {
    let mut out = String::from(
        "| knowledge | plain agent | calls mean | result tokens | answer sections' tokens | multiple |\n|---|---|---|---|---|---|\n",
    );
    for r in reports {
        let Some(p) = r.strategy("plain agent").filter(|p| p.skipped.is_none()) else {
            out.push_str(&format!(
                "| {} | not run | – | – | {} | – |\n",
                r.kb, r.answer_tokens
            ));
            continue;
        };
        out.push_str(&format!(
            "| {} | {}/{} | {:.2} | {} | {} | {} |\n",
            r.kb,
            p.answered,
            p.questions,
            p.calls_mean,
            p.tokens,
            r.answer_tokens,
            multiple(p.tokens, r.answer_tokens).map_or("–".into(), |m| format!("{m:.2}×"))
        ));
    }
    out
}

/// `a / b`, or `None` when `b` is 0.
pub fn multiple(a: usize, b: usize) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(id: &str, answered: bool, calls: usize, tokens: usize) -> QuestionOutcome {
        QuestionOutcome {
            id: id.into(),
            answered,
            calls,
            tokens,
            bytes: tokens * 4,
            tool_errors: 0,
            missing: Vec::new(),
            trace: Vec::new(),
        }
    }

    #[test]
    fn aggregates_and_renders() {
        let mut walls = vec![
            Duration::from_millis(30),
            Duration::from_millis(10),
            Duration::from_millis(20),
        ];
        let mut row = StrategyFigures::from_outcomes(
            "2. lookup → section",
            vec![outcome("a", true, 2, 100), outcome("b", false, 5, 300)],
            &mut walls,
        );
        row.requests = Some(7);
        row.not_modified = Some(2);
        assert_eq!(row.answered, 1);
        assert_eq!(row.unanswered, vec!["b".to_string()]);
        assert!((row.calls_mean - 3.5).abs() < 1e-9);
        assert_eq!(row.calls_max, 5);
        assert_eq!(row.tokens, 400);
        assert_eq!(row.wall_median, Duration::from_millis(20));
        let report = Report {
            tokenizer: TOKENIZER_NOTE.into(),
            counted: "requests: logged".into(),
            kb: "crates/mark-mcp/soul".into(),
            answer_tokens: 200,
            runs: 3,
            strategies: vec![
                row,
                StrategyFigures::skipped("3. explore → section", "mark_explore not available", 2),
            ],
            targets: vec![TargetCheck {
                target: "t".into(),
                measured: "m".into(),
                met: None,
            }],
        };
        let table = render_table(&report);
        assert!(
            table.contains(
                "| 2. lookup → section | 1/2 | 3.50 | 5 | 400 | 1600 | 7 (2 not-modified) | 20 ms |"
            ),
            "{table}"
        );
        assert!(table.contains("skipped: mark_explore not available"));
        assert!(table.contains("Not answered by 2. lookup → section: b"));
        assert!(table.contains("| t | m | not measured |"));
        assert!(
            serde_json::to_string(&report)
                .unwrap()
                .contains("\"wall_median\":20000")
        );
        assert!(
            table.contains("the answer sections' own tokens: 200;"),
            "{table}"
        );
        assert_eq!(multiple(300, 200), Some(1.5));
        assert_eq!(percent(15, 100), Some(15.0));
        assert_eq!(percent(1, 0), None);
    }
}
