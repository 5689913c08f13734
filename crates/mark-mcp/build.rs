//! Embeds the bundled knowledge base (`soul/`) for `mark-mcp demo`: writes
//! `$OUT_DIR/soul_files.rs`, a list of `(path, include_str!(file))` pairs in
//! path order, so the installed binary needs no files beside it.

use std::path::{Path, PathBuf};

fn main() {
    let root =
        Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo")).join("soul");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(&root, &mut files);
    files.sort();
    let mut out = String::from("&[\n");
    for file in &files {
        let relative = file.strip_prefix(&root).expect("under the root");
        let name = relative.to_string_lossy().replace('\\', "/");
        println!("cargo:rerun-if-changed={}", file.display());
        out.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            file.display().to_string()
        ));
    }
    out.push_str("]\n");
    let dest =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo")).join("soul_files.rs");
    std::fs::write(dest, out).expect("writing soul_files.rs");
}

/// Every markdown and TOML file under `dir`, folders included.
fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "md" || e == "toml") {
            files.push(path);
        }
    }
}
