//! Where the shared Node.js corpus lives; used by the corpus test and the benchmark.

use std::path::PathBuf;

/// `$MARK_CORPORA/nodejs-api`, else `../shared/corpora/nodejs-api` relative to the
/// workspace root. Panics, saying so, when the folder is missing.
pub fn node_corpus_dir() -> PathBuf {
    let root = std::env::var_os("MARK_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora")
        });
    let dir = root.join("nodejs-api");
    assert!(
        dir.is_dir(),
        "the Node.js corpus is missing: expected {} (set MARK_CORPORA to the folder holding nodejs-api/)",
        dir.display()
    );
    dir
}

/// Every `.md` file of the corpus as `(file name, text)`, sorted by name.
pub fn node_corpus_files() -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(node_corpus_dir())
        .expect("the corpus folder is readable")
        .map(|entry| entry.expect("a folder entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .map(|path| {
            let name = path
                .file_name()
                .expect("a file name")
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&path).expect("a UTF-8 markdown file");
            (name, text)
        })
        .collect();
    files.sort();
    files
}
