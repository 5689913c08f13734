//! The crawl planner driven over a real mark-store engine (flat mode, in process) serving the
//! nodejs-api corpus: a synchronous reference driver, LIST paged, FETCH conditional.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Instant, SystemTime};

use link_graph::{CrawlLimits, CrawlOutcome, CrawlPlan, CrawlStep, LinkGraph, StopReason};
use mark_proto::{Request, Status, Verb, list};
use mark_store::{Engine, StoreMode};
use markdown_slice::Document;

/// Sends one step to the engine and reports the result to the plan and the graph: what
/// mark-mcp's async driver does per step, minus the concurrency.
fn run_step(engine: &Engine, plan: &mut CrawlPlan, graph: &mut LinkGraph, step: CrawlStep) {
    match &step {
        CrawlStep::List { dir, cursor } => {
            let mut request = Request::new(Verb::List, dir.as_str()).with_meta("page-size", "10");
            if let Some(cursor) = cursor {
                request = request.with_meta("cursor", cursor.as_str());
            }
            let response = engine.handle(&request, SystemTime::now());
            let entries = match (&response.status, list::parse(&response.body)) {
                (&Status::Ok, Ok(entries)) => entries,
                _ => return plan.on_failed(&step).unwrap(),
            };
            let next = (response.meta("complete") == Some("false"))
                .then(|| response.meta("next-cursor").map(str::to_owned))
                .flatten();
            for path in plan.on_listed(dir, entries, next).unwrap() {
                graph.note_discovered(&path).unwrap();
            }
        }
        CrawlStep::Fetch { path } => {
            let mut request = Request::new(Verb::Fetch, path.as_str());
            if let Some(etag) = graph.etag(path) {
                request = request.with_meta("if-none-match", etag);
            }
            let response = engine.handle(&request, SystemTime::now());
            match response.status {
                Status::Ok => {
                    let (Some(etag), Ok(text)) =
                        (response.meta("etag"), std::str::from_utf8(&response.body))
                    else {
                        return plan.on_failed(&step).unwrap();
                    };
                    graph
                        .index_document(path, etag, &Document::parse(text))
                        .unwrap();
                    plan.on_fetched(path, response.body.len() as u64).unwrap();
                }
                Status::NotModified => plan.on_fetched(path, 0).unwrap(),
                Status::NotFound | Status::Archived => {
                    graph.remove(path);
                    plan.on_fetched(path, 0).unwrap();
                }
                _ => plan.on_failed(&step).unwrap(),
            }
        }
    }
}

/// Crawls until the plan is finished; marks the graph complete if the crawl was. Like
/// mark-mcp's driver, it starts every step the plan hands out before reporting any, so
/// fetches go out while listings are still in flight.
fn crawl(engine: &Engine, graph: &mut LinkGraph, limits: CrawlLimits) -> CrawlOutcome {
    let mut plan = CrawlPlan::new("/", limits, Instant::now()).unwrap();
    loop {
        let started: Vec<CrawlStep> =
            std::iter::from_fn(|| plan.next_step(Instant::now())).collect();
        if started.is_empty() {
            break;
        }
        for step in started {
            run_step(engine, &mut plan, graph, step);
        }
    }
    assert!(plan.is_finished());
    let outcome = plan.outcome();
    if outcome.complete {
        graph.mark_complete();
    }
    outcome
}

fn engine() -> Engine {
    Engine::open(&common::nodejs_api_dir(), StoreMode::Flat, None).unwrap()
}

#[test]
fn a_full_crawl_indexes_every_document_and_says_complete() {
    let engine = engine();
    let mut graph = LinkGraph::new();
    let outcome = crawl(&engine, &mut graph, CrawlLimits::default());
    assert_eq!(
        (
            outcome.documents,
            outcome.failures,
            outcome.stopped,
            outcome.complete
        ),
        (64, 0, None, true)
    );
    assert_eq!(outcome.listings, 7, "64 entries in pages of 10");
    assert!(
        outcome.bytes > 3_000_000,
        "the corpus is 3.2 MB: {}",
        outcome.bytes
    );
    let coverage = graph.coverage();
    assert_eq!(
        (coverage.indexed, coverage.known, coverage.complete),
        (64, Some(64), true)
    );
    let errors = graph.backlinks("/errors.md");
    assert_eq!(
        errors
            .iter()
            .map(|b| &b.source)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        22
    );

    // A second crawl costs no body bytes: every FETCH is conditional and answers not-modified.
    let again = crawl(&engine, &mut graph, CrawlLimits::default());
    assert_eq!(
        (again.documents, again.bytes, again.complete),
        (64, 0, true)
    );
    assert_eq!(graph.backlinks("/errors.md"), errors);
}

#[test]
fn a_bounded_crawl_says_how_partial_the_graph_is() {
    let engine = engine();
    let mut graph = LinkGraph::new();
    let limits = CrawlLimits {
        max_documents: 10,
        ..CrawlLimits::default()
    };
    let outcome = crawl(&engine, &mut graph, limits);
    assert_eq!(
        (outcome.documents, outcome.stopped, outcome.complete),
        (10, Some(StopReason::Documents(10)), false)
    );
    assert_eq!(
        outcome.listings, 7,
        "the pages are all listed after the document bound"
    );
    let coverage = graph.coverage();
    assert_eq!(coverage.to_string(), "graph partial: 10 of ≥64 documents");
    let count = graph.backlinks("/errors.md").len();
    assert_eq!(
        coverage.backlinks_note(count),
        format!("({count} so far; graph partial: 10 of ≥64 documents)")
    );
}
