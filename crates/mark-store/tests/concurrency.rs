//! Many writers on one document: no version is ever lost, overwritten or
//! numbered twice. Two engines over one root stand in for two processes, so
//! the exclusive create on disk is exercised, not only the in-process lock.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use mark_proto::{Request, Status, Verb};
use mark_store::{Engine, StoreMode, TokenStore};
use std::collections::BTreeMap;
use std::sync::Arc;
use support::{Store, at};

const THREADS: usize = 8;

/// Two engines over the same store.
fn engines(s: &Store) -> [Arc<Engine>; 2] {
    let open = || {
        let tokens = TokenStore::load(&s.tokens.path().join("tokens.toml")).unwrap();
        Arc::new(Engine::open(s.dir.path(), StoreMode::Versioned, Some(tokens)).unwrap())
    };
    [open(), open()]
}

/// Checks that every acknowledged version is on disk with exactly its
/// content, that numbers run 1..=N without reuse, and that the chain holds.
fn check_store(s: &Store, acknowledged: &BTreeMap<u64, String>) {
    let total = support::assert_acknowledged_versions(s, acknowledged);
    assert_eq!(
        total as usize,
        acknowledged.len(),
        "every version on disk was acknowledged once"
    );
    assert_eq!(
        acknowledged.keys().copied().collect::<Vec<_>>(),
        (1..=total).collect::<Vec<_>>()
    );
}

#[test]
fn concurrent_publishes_without_expected_version_all_land() {
    let s = Store::new();
    let engines = engines(&s);
    let per_thread = 20;
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let engine = engines[t % 2].clone();
            let token = s.token.clone();
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                for i in 0..per_thread {
                    let body = format!("thread {t} write {i}\n");
                    let r = engine.handle(
                        &Request::new(Verb::Publish, "/doc.md")
                            .with_meta("auth", &token)
                            .with_body(body.clone()),
                        at(0),
                    );
                    assert_eq!(r.status, Status::Created, "{}", r.error_message());
                    mine.push((r.meta("version").unwrap().parse::<u64>().unwrap(), body));
                }
                mine
            })
        })
        .collect();
    let mut acknowledged = BTreeMap::new();
    for h in handles {
        for (n, body) in h.join().unwrap() {
            assert!(
                acknowledged.insert(n, body).is_none(),
                "version {n} acknowledged twice"
            );
        }
    }
    assert_eq!(acknowledged.len(), THREADS * per_thread);
    check_store(&s, &acknowledged);
}

#[test]
fn concurrent_publishes_with_expected_version_have_one_winner_per_version() {
    let s = Store::new();
    let engines = engines(&s);
    let rounds = 15;
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let engine = engines[t % 2].clone();
            let token = s.token.clone();
            std::thread::spawn(move || {
                let mut won = Vec::new();
                let mut conflicts = 0;
                for i in 0..rounds {
                    let current = engine.handle(&Request::new(Verb::Fetch, "/doc.md"), at(0));
                    let seen: u64 = current.meta("version").map_or(0, |v| v.parse().unwrap());
                    let body = format!("thread {t} round {i} over v{seen}\n");
                    let req = Request::new(Verb::Publish, "/doc.md")
                        .with_meta("auth", &token)
                        .with_meta("expected-version", seen.to_string())
                        .with_body(body.clone());
                    let r = engine.handle(&req, at(0));
                    match &r.status {
                        Status::Created => {
                            let n: u64 = r.meta("version").unwrap().parse().unwrap();
                            assert_eq!(n, seen + 1, "a win is always the next version");
                            won.push((n, body));
                        }
                        Status::Conflict => {
                            assert_eq!(r.meta("your-version"), Some(seen.to_string().as_str()));
                            assert!(
                                r.meta("server-version").unwrap().parse::<u64>().unwrap() > seen
                            );
                            conflicts += 1;
                        }
                        other => panic!("unexpected {other}: {}", r.error_message()),
                    }
                }
                (won, conflicts)
            })
        })
        .collect();
    let mut acknowledged = BTreeMap::new();
    let mut attempts = 0;
    for h in handles {
        let (won, conflicts) = h.join().unwrap();
        attempts += won.len() + conflicts;
        for (n, body) in won {
            assert!(
                acknowledged.insert(n, body).is_none(),
                "two winners for version {n}"
            );
        }
    }
    assert_eq!(attempts, THREADS * rounds);
    assert!(!acknowledged.is_empty());
    check_store(&s, &acknowledged);
}

#[test]
fn concurrent_appends_keep_every_acknowledged_line() {
    let s = Store::new();
    assert_eq!(s.publish("/doc.md", "start").status, Status::Created);
    let engines = engines(&s);
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let engine = engines[t % 2].clone();
            let token = s.token.clone();
            std::thread::spawn(move || {
                let mut lines = Vec::new();
                for i in 0..10 {
                    // Retry on conflict, as a client must: fetch, then append again.
                    loop {
                        let current = engine.handle(&Request::new(Verb::Fetch, "/doc.md"), at(0));
                        let line = format!("t{t}-{i}");
                        let req = Request::new(Verb::Append, "/doc.md")
                            .with_meta("auth", &token)
                            .with_meta("expected-version", current.meta("version").unwrap())
                            .with_body(line.clone());
                        let r = engine.handle(&req, at(0));
                        if r.status == Status::Created {
                            lines.push(line);
                            break;
                        }
                        assert_eq!(r.status, Status::Conflict);
                    }
                }
                lines
            })
        })
        .collect();
    let mut all: Vec<String> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let text = s.text("/doc.md");
    let mut found: Vec<String> = text.lines().skip(1).map(str::to_string).collect();
    all.sort();
    found.sort();
    assert_eq!(found, all, "each acknowledged line exactly once");
    assert_eq!(
        s.handle(Request::new(Verb::Versions, "/doc.md"))
            .meta("total"),
        Some((1 + THREADS * 10).to_string().as_str())
    );
}
