//! The persisted LOOKUP index (issue 29): a later engine on the same
//! folder reads the index the last one committed, re-reads only what
//! changed, answers byte for byte as a fresh build, shares the index with
//! another engine, rebuilds what it cannot trust and never writes inside
//! the root.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mark_proto::{Request, Status, Verb};
use mark_store::lookup::IndexStorage;
use mark_store::{Engine, StoreMode};
use sha2::Digest;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

const QUERIES: [&[(&str, &str)]; 6] = [
    &[("query", "opening paragraph")],
    &[
        ("query", "topic field notes"),
        ("terms", "any"),
        ("limit", "50"),
    ],
    &[("query", "part text"), ("match", "body"), ("limit", "40")],
    &[
        ("query", "heron harbour tide"),
        ("terms", "any"),
        ("match", "body"),
        ("limit", "50"),
        ("columns", "lacks, bytes"),
    ],
    &[("query", "*"), ("filter", "tag=area-3")],
    &[("query", "draft"), ("filter", "modified-after=2000-01-01")],
];

/// Every query's whole response, as bytes on the wire.
fn answers(engine: &Engine) -> Vec<String> {
    QUERIES
        .iter()
        .map(|meta| {
            let mut req = Request::new(Verb::Lookup, "/");
            for (k, v) in meta.iter() {
                req = req.with_meta(*k, *v);
            }
            let resp = engine.handle(&req, SystemTime::now());
            assert_eq!(
                resp.status,
                Status::Ok,
                "{meta:?}: {}",
                resp.error_message()
            );
            String::from_utf8(resp.encode().unwrap()).unwrap()
        })
        .collect()
}

/// An engine over `root` with its index persisted under `cache` (or in
/// RAM without one), re-checking the folder at every LOOKUP.
fn engine(root: &Path, cache: Option<&Path>) -> Engine {
    let engine = Engine::open(root, StoreMode::Flat, None).unwrap();
    engine.set_index_recheck(Duration::ZERO);
    engine.set_index_storage(cache.map(|c| IndexStorage {
        folder: c.to_path_buf(),
        ram_bytes: 0,
    }));
    engine
}

/// What a fresh build in RAM answers over `root` now.
fn fresh(root: &Path) -> Vec<String> {
    answers(&engine(root, None))
}

/// The one source folder under `cache`.
fn source_folder(cache: &Path) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(cache)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found.into_iter().next().unwrap()
}

/// The catalog files of the source folder under `cache`.
fn catalogs(cache: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(source_folder(cache))
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.starts_with("catalog-"))
        .collect();
    names.sort();
    names
}

/// Each file under `root` (hidden ones too) with the SHA-256 of its bytes.
fn hashes(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.insert(path, hex::encode(sha2::Sha256::digest(&bytes)));
            }
        }
    }
    out
}

fn note(root: &Path, i: usize) -> PathBuf {
    root.join(format!(
        "Area {:02}/{}.md",
        i % 40,
        mark_testkit::vault_note_name(i)
    ))
}

/// Edits between two sessions: notes changed, one removed, one added, one
/// touched with the same bytes.
fn edit(root: &Path, round: usize) {
    for i in [3 + round, 17, 40 + round] {
        let text = std::fs::read_to_string(note(root, i)).unwrap();
        std::fs::write(
            note(root, i),
            format!("{text}\n## Heron {round}\n\nA heron on the harbour at tide {round}.\n"),
        )
        .unwrap();
    }
    let _ = std::fs::remove_file(note(root, 50 + round));
    std::fs::write(
        root.join(format!("Area 01/new {round}.md")),
        format!("# New {round}\n\nThe tide came in over the harbour wall.\n"),
    )
    .unwrap();
    let same = std::fs::read(note(root, 5)).unwrap();
    std::fs::write(note(root, 5), same).unwrap();
}

#[test]
fn a_later_engine_reads_the_persisted_index_and_answers_as_a_fresh_build() {
    let root = tempfile::tempdir().unwrap();
    mark_testkit::write_vault(root.path(), 80).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let before = hashes(root.path());

    let first = answers(&engine(root.path(), Some(cache.path())));
    assert_eq!(first, fresh(root.path()));
    let folder = source_folder(cache.path());
    let committed = catalogs(cache.path());
    assert_eq!(committed.len(), 1, "{committed:?}");
    assert!(folder.join("source.txt").is_file());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&folder).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "private to the user");
    }

    // Nothing changed: nothing is read again, nothing committed.
    assert_eq!(answers(&engine(root.path(), Some(cache.path()))), first);
    assert_eq!(
        catalogs(cache.path()),
        committed,
        "no commit without a change"
    );
    assert_eq!(
        hashes(root.path()),
        before,
        "nothing written inside the root"
    );

    for round in 0..3 {
        edit(root.path(), round);
        let later = answers(&engine(root.path(), Some(cache.path())));
        assert_eq!(later, fresh(root.path()), "round {round}");
        assert!(later[3].contains("heron"), "the edits are found");
    }
    assert!(
        catalogs(cache.path()).len() <= 2,
        "old catalogs are removed"
    );
}

#[test]
fn two_engines_share_one_index_and_catch_up_with_each_other() {
    let root = tempfile::tempdir().unwrap();
    mark_testkit::write_vault(root.path(), 60).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let (a, b) = (
        engine(root.path(), Some(cache.path())),
        engine(root.path(), Some(cache.path())),
    );
    assert_eq!(answers(&a), fresh(root.path()));
    assert_eq!(answers(&b), fresh(root.path()), "b reads what a committed");
    edit(root.path(), 0);
    assert_eq!(answers(&b), fresh(root.path()), "b updates");
    assert_eq!(answers(&a), fresh(root.path()), "a reads b's update");
    edit(root.path(), 1);
    assert_eq!(answers(&a), fresh(root.path()));
    assert_eq!(answers(&b), fresh(root.path()));
}

#[test]
fn an_index_it_cannot_trust_is_rebuilt_and_a_cache_it_cannot_write_leaves_it_in_ram() {
    let root = tempfile::tempdir().unwrap();
    mark_testkit::write_vault(root.path(), 40).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let expected = fresh(root.path());
    assert_eq!(answers(&engine(root.path(), Some(cache.path()))), expected);
    let folder = source_folder(cache.path());

    // A damaged catalog file.
    let catalog = folder.join(&catalogs(cache.path())[0]);
    let mut bytes = std::fs::read(&catalog).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x55;
    std::fs::write(&catalog, bytes).unwrap();
    assert_eq!(answers(&engine(root.path(), Some(cache.path()))), expected);

    // A catalog file gone (removed by hand).
    std::fs::remove_file(folder.join(&catalogs(cache.path())[0])).unwrap();
    assert_eq!(answers(&engine(root.path(), Some(cache.path()))), expected);

    // A half-written meta file.
    std::fs::write(folder.join("meta.json"), "{\"segments\": [").unwrap();
    assert_eq!(answers(&engine(root.path(), Some(cache.path()))), expected);
    assert_eq!(
        answers(&engine(root.path(), Some(cache.path()))),
        expected,
        "and the rebuilt one is read"
    );

    // A cache folder that cannot be made (a file is in the way).
    let blocked = cache.path().join("a-file");
    std::fs::write(&blocked, "not a folder").unwrap();
    assert_eq!(answers(&engine(root.path(), Some(&blocked))), expected);
}
