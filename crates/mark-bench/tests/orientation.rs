//! Runs the orientation benchmark for real: `mark-server` imports and serves
//! crates/mark-mcp/soul on 127.0.0.1, the real `mark-mcp` binary answers over
//! stdio, once per strategy.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mark_bench::{OrientationOptions, render_table, run_orientation};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The workspace binary `name`, as `cargo nextest run --workspace` built it
/// (built only when missing; see `mark_testkit::workspace_binary`).
fn binary(name: &str) -> PathBuf {
    mark_testkit::workspace_binary(name).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orientation_benchmark_runs_over_the_real_binaries() {
    let kb = workspace().join("crates/mark-mcp/soul");
    let opts = OrientationOptions {
        questions: kb.join("questions.toml"),
        kb,
        runs: 1,
        mark_mcp_bin: binary("mark-mcp"),
        mark_server_bin: binary("mark-server"),
        read: None,
        budget: None,
        peers_dir: None,
    };
    let report = run_orientation(opts).await.unwrap();
    let table = render_table(&report);
    println!("{table}");

    let plain = report.strategy("plain agent").unwrap();
    let full = report.strategy("1.").unwrap();
    let section = report.strategy("2.").unwrap();
    assert!(
        plain.outcomes.iter().all(|o| o.calls <= 3),
        "at most 3 calls"
    );
    for s in [plain, full, section] {
        assert!(s.skipped.is_none(), "{} was skipped", s.label);
        assert_eq!(s.questions, 30);
        assert!(s.answered > 0, "{} answered nothing", s.label);
        assert!(
            s.tokens > 0 && s.result_bytes > s.tokens,
            "{}: {} tokens, {} bytes",
            s.label,
            s.tokens,
            s.result_bytes
        );
        assert!(
            s.calls_mean >= 1.0,
            "{}: every question makes at least one call",
            s.label
        );
        assert!(
            s.requests.unwrap() > 0,
            "{}: mark-server logged no request",
            s.label
        );
        // Token totals are the sum of the per-question figures.
        assert_eq!(s.tokens, s.outcomes.iter().map(|o| o.tokens).sum::<usize>());
        assert_eq!(s.answered + s.unanswered.len(), s.questions);
        for o in &s.outcomes {
            assert_eq!(o.answered, o.missing.is_empty(), "{}: {}", s.label, o.id);
            assert_eq!(o.calls, o.trace.len());
        }
    }
    // What the product recommends (one lookup whose passages answer)
    // costs less than reading whole documents. (Strategy 2's section reads
    // are not compared: its lookups carry passages too, and once the
    // search lands, full-chain reads few and small bundled documents.)
    assert!(
        plain.tokens < full.tokens,
        "the plain agent ({}) should cost fewer tokens than full documents ({})",
        plain.tokens,
        full.tokens
    );
    // Explore-based rows either ran or say exactly why not.
    for s in report
        .strategies
        .iter()
        .filter(|s| s.label.starts_with('3') || s.label.starts_with('4'))
    {
        match &s.skipped {
            Some(why) => assert_eq!(why, "mark_explore not available"),
            None => assert!(s.tokens > 0 || s.label.contains("2nd pass")),
        }
    }
    // When the warm session ran, its second pass must show the savings.
    if let (Some(first), Some(second)) = (
        report
            .strategies
            .iter()
            .find(|s| s.label.contains("1st pass") && s.skipped.is_none()),
        report
            .strategies
            .iter()
            .find(|s| s.label.contains("2nd pass") && s.skipped.is_none()),
    ) {
        assert!(
            second.tokens < first.tokens,
            "warm 2nd pass {} vs 1st {}",
            second.tokens,
            first.tokens
        );
        assert!(second.requests < first.requests);
    }
    let json = serde_json::to_value(&report).unwrap();
    // For looking into a run: the raw figures, traces included.
    if let Some(path) = std::env::var_os("MARK_BENCH_JSON") {
        std::fs::write(path, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    }
    assert!(
        json["tokenizer"]
            .as_str()
            .unwrap()
            .contains("proxy for Claude")
    );
}
