//! The agent manifest generated when the root has no
//! `.well-known/agent-manifest.md` of its own.

use crate::engine::MAX_LIST_PAGE;
use crate::store::StoreMode;

/// A markdown page describing this server for agents.
pub(crate) fn generate(name: &str, mode: StoreMode, max_document_bytes: usize) -> String {
    let (store, writes) = match mode {
        StoreMode::Versioned => (
            "versioned (every document is a chain of immutable versions)",
            "- PUBLISH /path: a new version (token with `publish`; `expected-version` guards against lost updates)\n\
             - APPEND /path: add text to the current version (`expected-version` required)\n\
             - ARCHIVE /path: flag the current version archived\n",
        ),
        StoreMode::Flat => (
            "flat, read-only (every `.md` file is a document at version 1)",
            "",
        ),
    };
    format!(
        "# {name}\n\n\
         A Mark Protocol server (`mark://`, QUIC, ALPN `mark`) holding a markdown knowledge base.\n\n\
         ## Verbs\n\n\
         - FETCH /path: a document; `/path/vN` for version N; `/sha256-<hex>` by content hash; conditional with `if-none-match`\n\
         - LIST /dir/: a folder, paged (`page-size`, `cursor`)\n\
         - VERSIONS /path: the history, with its hash chain checked\n\
         - LOOKUP /scope: ranked search (`query`, `filter`, `limit`, `match`, `terms: any`)\n\
         {writes}\n\
         ## Capabilities\n\n\
         - lookup-match: catalog, body\n\
         - lookup-terms: all, any\n\
         - store: {store}\n\
         - max-document-bytes: {max_document_bytes}\n\
         - list-page-size: {MAX_LIST_PAGE}\n\n\
         ## How to read\n\n\
         Start with LOOKUP or LIST, then FETCH the documents you need; use `if-none-match` with the etag you hold.\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_capabilities() {
        let m = generate("kb", StoreMode::Flat, 10);
        assert!(m.starts_with("# kb\n"));
        assert!(m.contains(
            "## Capabilities\n\n- lookup-match: catalog, body\n- lookup-terms: all, any\n"
        ));
        assert!(!m.contains("PUBLISH"));
        assert!(generate("kb", StoreMode::Versioned, 10).contains("PUBLISH"));
    }
}
