//! Every way out of the root answers `not-found`, in both modes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use mark_proto::{Request, Status, Verb};
use mark_store::{Engine, StoreMode};
use support::{Store, at, ok};

/// Paths that try to leave the root or reach what is not served.
const ESCAPES: &[&str] = &[
    "/../secret.md",
    "/../../etc/passwd",
    "/docs/../../secret.md",
    "/./docs/a.md",
    "/%2e%2e/secret.md",
    "/%2E%2E/secret.md",
    "/docs/%2e%2e/%2e%2e/secret.md",
    "/docs%2f..%2f..%2fsecret.md",
    "/docs%2fa.md",
    "/docs%5ca.md",
    "/..%5csecret.md",
    "/docs\\a.md",
    "/a.md%00",
    "/a%00.md",
    "//etc/passwd",
    "/docs//a.md",
    "/%2fetc/passwd",
    "/out/secret.md",
    "/link.md",
];

fn outside_with_secret() -> tempfile::TempDir {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.md"), "secret").unwrap();
    outside
}

#[test]
fn flat_mode_refuses_every_escape() {
    let outside = outside_with_secret();
    let (dir, engine) = support::flat(&[("docs/a.md", "a"), ("a.md", "root")]);
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.md"), dir.path().join("link.md"))
            .unwrap();
    }
    // Place a file the `/..` forms would reach if they were followed.
    std::fs::write(dir.path().parent().unwrap().join("secret.md"), "secret").ok();
    for path in ESCAPES {
        for verb in [Verb::Fetch, Verb::List, Verb::Versions] {
            let r = engine.handle(&Request::new(verb, *path), at(0));
            assert_eq!(r.status, Status::NotFound, "{verb} {path}");
            assert!(!String::from_utf8_lossy(&r.body).contains("secret\n") && r.body != b"secret");
        }
    }
    // The walk behind LIST and LOOKUP does not follow the symlinks either.
    let list = engine.handle(&Request::new(Verb::List, "/"), at(0));
    assert_eq!(list.text().unwrap(), "\n- [a.md](a.md)\n- [docs/](docs/)\n");
    let lookup = engine.handle(
        &Request::new(Verb::Lookup, "/").with_meta("query", "secret"),
        at(0),
    );
    assert_eq!(lookup.meta("matches"), Some("0"));
    // A symlink that stays inside the root is fine.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(dir.path().join("a.md"), dir.path().join("alias.md")).unwrap();
        assert_eq!(
            engine
                .handle(&Request::new(Verb::Fetch, "/alias.md"), at(0))
                .status,
            Status::Ok
        );
    }
}

/// #14.15: in flat mode a symlink inside the root that points at a hidden
/// file or into a hidden folder is not served, listed or searched.
#[cfg(unix)]
#[test]
fn flat_mode_refuses_a_symlink_to_a_hidden_file() {
    let (dir, engine) = support::flat(&[("a.md", "root")]);
    std::fs::write(dir.path().join(".secret.md"), "hidden words\n").unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join(".git/notes.md"), "hidden words\n").unwrap();
    std::os::unix::fs::symlink(dir.path().join(".secret.md"), dir.path().join("s.md")).unwrap();
    std::os::unix::fs::symlink(dir.path().join(".git/notes.md"), dir.path().join("g.md")).unwrap();
    for path in ["/s.md", "/g.md"] {
        let r = engine.handle(&Request::new(Verb::Fetch, path), at(0));
        assert_eq!(r.status, Status::NotFound, "{path}");
    }
    let list = engine.handle(&Request::new(Verb::List, "/"), at(0));
    assert_eq!(list.text().unwrap(), "\n- [a.md](a.md)\n");
    let lookup = engine.handle(
        &Request::new(Verb::Lookup, "/").with_meta("query", "hidden"),
        at(0),
    );
    assert_eq!(lookup.meta("matches"), Some("0"));
}

/// #14.15: the containment check is made on the file opened, so a symlink
/// swapped between an inside document and an outside secret while it is
/// read never serves the secret.
#[cfg(unix)]
#[test]
fn flat_mode_never_serves_a_symlink_swapped_during_the_read() {
    let outside = outside_with_secret();
    let (dir, engine) = support::flat(&[("inside.md", "inside")]);
    let link = dir.path().join("swap.md");
    let (inside, secret) = (
        dir.path().join("inside.md"),
        outside.path().join("secret.md"),
    );
    std::os::unix::fs::symlink(&inside, &link).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, link, dir) = (stop.clone(), link.clone(), dir.path().to_path_buf());
        std::thread::spawn(move || {
            let temp = dir.join("swap.tmp");
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let target = if i.is_multiple_of(2) {
                    &secret
                } else {
                    &inside
                };
                let _ = std::fs::remove_file(&temp);
                std::os::unix::fs::symlink(target, &temp).unwrap();
                std::fs::rename(&temp, &link).unwrap();
                i += 1;
            }
        })
    };
    let mut served = 0;
    for _ in 0..3000 {
        let r = engine.handle(&Request::new(Verb::Fetch, "/swap.md"), at(0));
        assert_ne!(r.body, b"secret", "served the file outside the root");
        served += usize::from(r.status == Status::Ok);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(served > 0, "the inside target was never served");
}

#[test]
fn versioned_mode_refuses_every_escape_for_reads_and_writes() {
    let outside = outside_with_secret();
    let s = Store::new();
    ok(&s.publish("/docs/a.md", "a"));
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.path(), s.dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.md"),
            s.dir.path().join("link.md"),
        )
        .unwrap();
    }
    for path in ESCAPES {
        for verb in [Verb::Fetch, Verb::List, Verb::Versions] {
            assert_eq!(
                s.handle(Request::new(verb, *path)).status,
                Status::NotFound,
                "{verb} {path}"
            );
        }
        let w = s.publish(path, "pwned");
        assert!(
            matches!(w.status, Status::NotFound),
            "PUBLISH {path}: {}",
            w.status
        );
    }
    // Nothing was written outside the root.
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
    // Double encoding is decoded once: a literal folder named `%2e%2e` inside the root.
    assert_eq!(s.fetch("/%252e%252e/secret.md").status, Status::NotFound);
    ok(&s.publish("/%252e%252e/secret.md", "inside"));
    assert!(s.dir.path().join("%2e%2e/versions/secret.md.v1").is_file());
    assert_eq!(s.text("/%252e%252e/secret.md"), "inside");
}

#[test]
fn a_symlinked_versions_folder_is_not_served() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("x.md.v1"),
        "---\nversion: 1\n---\nsecret",
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    mark_store::mark(dir.path()).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.path(), dir.path().join("versions")).unwrap();
    let engine = Engine::open(dir.path(), StoreMode::Versioned, None).unwrap();
    assert_eq!(
        engine
            .handle(&Request::new(Verb::Fetch, "/x.md"), at(0))
            .status,
        Status::NotFound
    );
}
