//! The product binary carries no test code: `mark-mcp demo` runs from a copy
//! of the binary alone, in a folder with nothing else in it, and no product
//! crate depends on the test support or the benchmark (checked over
//! `cargo metadata`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Crates that hold test support or benchmarks (`publish = false`).
const TEST_ONLY: &[&str] = &["mark-testkit", "mark-bench"];

#[test]
fn demo_runs_from_a_lone_copy_of_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("mark-mcp");
    std::fs::copy(env!("CARGO_BIN_EXE_mark-mcp"), &copy).unwrap();
    let mut child = Command::new(&copy)
        .arg("demo")
        .current_dir(dir.path())
        // No workspace to fall back on: no cargo, no mark-server on PATH.
        .env("PATH", "")
        .env_remove("CARGO")
        .env_remove("MARK_SERVER_BIN")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "demo did not finish in 90 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "demo failed: {stderr}\n{stdout}");
    assert!(
        stdout.contains("served over QUIC at mark://127.0.0.1:"),
        "{stdout}"
    );
    assert!(stdout.contains("result tokens (estimate)"), "{stdout}");
    assert!(
        stdout.contains("unchanged"),
        "the repeated fetch answers unchanged: {stdout}"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        leftovers,
        vec!["mark-mcp"],
        "demo wrote nothing beside the binary"
    );
}

#[test]
fn no_product_crate_depends_on_test_support_or_the_benchmark() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .arg("--manifest-path")
        .arg(&workspace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut products = 0;
    for package in metadata["packages"].as_array().unwrap() {
        let name = package["name"].as_str().unwrap();
        // `publish = false` shows as an empty list of registries.
        if package["publish"].as_array().is_some_and(Vec::is_empty) {
            assert!(
                TEST_ONLY.contains(&name),
                "{name} is publish = false but not test-only"
            );
            continue;
        }
        products += 1;
        for dep in package["dependencies"].as_array().unwrap() {
            let dep_name = dep["name"].as_str().unwrap();
            // Normal and build dependencies (optional ones included) ship; dev ones do not.
            let ships = dep["kind"].as_str() != Some("dev");
            assert!(
                !(ships && TEST_ONLY.contains(&dep_name)),
                "product crate {name} depends on {dep_name} (kind {}, optional {}): test support and benchmarks stay out of the product",
                dep["kind"],
                dep["optional"]
            );
        }
    }
    assert!(products >= 7, "found {products} product crates");
}
