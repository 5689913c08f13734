//! Shared by the integration tests: where the corpora are.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

/// `$MARK_CORPORA/nodejs-api`, else `../shared/corpora/nodejs-api` beside the workspace;
/// fails loudly when missing.
pub fn nodejs_api_dir() -> PathBuf {
    let corpora = std::env::var_os("MARK_CORPORA").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora"),
        PathBuf::from,
    );
    let dir = corpora.join("nodejs-api");
    assert!(
        dir.is_dir(),
        "corpus missing: {} (set MARK_CORPORA to the folder holding nodejs-api/)",
        dir.display()
    );
    dir
}
