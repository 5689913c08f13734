//! One pass of a plan over every question, and the rows that accumulate
//! passes over runs.

use crate::BenchError;
use crate::questions::{Evidence, Question};
use crate::report::StrategyFigures;
use crate::server::BenchServer;
use crate::session::{McpSession, ServerCommand, ToolCall};
use crate::strategy::{Plan, QuestionOutcome, ask};
use mark_testkit::LoggedRequest;
use std::time::{Duration, Instant};

/// One pass of one strategy over every question: outcomes, the calls made
/// per question (kept by the warm session, which replays them), the server
/// requests logged meanwhile, and the wall time spent in the questions'
/// tool calls (process start-up excluded).
#[derive(Default)]
pub(crate) struct Pass {
    pub(crate) outcomes: Vec<QuestionOutcome>,
    pub(crate) calls: Vec<Vec<ToolCall>>,
    pub(crate) requests: Option<Vec<LoggedRequest>>,
    pub(crate) wall: Duration,
}

/// Strategies 1–3: every question in a fresh mark-mcp session, as a new
/// conversation would start one, so no question profits from another's
/// reads (or is told `unchanged` about text it never saw).
pub(crate) async fn cold_pass(
    command: &ServerCommand,
    server: Option<&BenchServer>,
    plan: &Plan,
    questions: &[Question],
) -> Result<Pass, BenchError> {
    let before = match server {
        Some(s) => s.settled_requests().await.len(),
        None => 0,
    };
    let mut pass = Pass::default();
    for q in questions {
        let mut session = McpSession::start(command).await?;
        let started = Instant::now();
        let asked = ask(&mut session, plan, q, Evidence::default()).await;
        pass.wall += started.elapsed();
        session.close().await;
        pass.outcomes.push(asked?.0);
    }
    if let Some(s) = server {
        pass.requests = Some(s.settled_requests().await.split_off(before));
    }
    Ok(pass)
}

/// Accumulates the passes of one row over runs.
pub(crate) struct Row {
    pub(crate) label: String,
    first: Option<Pass>,
    walls: Vec<Duration>,
}

impl Row {
    pub(crate) fn new(label: &str) -> Row {
        Row {
            label: label.to_string(),
            first: None,
            walls: Vec::new(),
        }
    }

    pub(crate) fn add(&mut self, pass: Pass) {
        self.walls.push(pass.wall);
        if self.first.is_none() {
            self.first = Some(pass);
        }
    }

    pub(crate) fn figures(mut self) -> Option<StrategyFigures> {
        let first = self.first?;
        let mut f = StrategyFigures::from_outcomes(&self.label, first.outcomes, &mut self.walls);
        if let Some(requests) = &first.requests {
            f.requests = Some(requests.len());
            f.not_modified = Some(
                requests
                    .iter()
                    .filter(|r| r.status == "not-modified")
                    .count(),
            );
            for r in requests {
                *f.requests_by_verb.entry(r.verb.clone()).or_default() += 1;
            }
        }
        Some(f)
    }
}
