//! Arbitrary requests never make the engine fail: every answer is a
//! protocol status other than `server-error`, and it encodes for the wire;
//! arbitrary markdown is indexed and searched without a panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use mark_proto::{Request, Status, Verb};
use mark_store::lookup::DocumentIndex;
use proptest::prelude::*;
use support::{Store, at, ok};

fn verb() -> impl Strategy<Value = Verb> {
    proptest::sample::select(Verb::ALL.to_vec())
}

fn meta_key() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(vec![
        "page-size",
        "cursor",
        "include-archived",
        "query",
        "filter",
        "limit",
        "match",
        "expected-version",
        "if-none-match",
        "if-modified-since",
        "auth",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn no_request_makes_a_server_error(
        verb in verb(),
        path in "/[a-z0-9.%/\\\\év*-]{0,30}",
        meta in proptest::collection::vec((meta_key(), "[ -~é]{0,20}"), 0..4),
        body in "[ -~\n]{0,40}",
        with_token in any::<bool>(),
    ) {
        let s = Store::new();
        ok(&s.publish("/a.md", "# A\n\nsome words\n"));
        ok(&s.publish("/dir/b.md", "# B\n\n## Sub\n\nmore words\n"));
        let mut req = Request::new(verb, path).with_body(body);
        for (k, v) in meta {
            req = req.with_meta(k, v);
        }
        if with_token {
            req = req.with_meta("auth", &s.token);
        }
        let resp = s.engine.handle(&req, at(0));
        prop_assert_ne!(&resp.status, &Status::ServerError, "{:?} -> {}", req, resp.error_message());
        prop_assert!(!matches!(resp.status, Status::Other(_)));
        prop_assert!(resp.encode().is_ok());
    }
}

/// Pieces of markdown that LOOKUP's parsing must take apart without a
/// panic: tables, links in them at every distance from the row's start,
/// two-byte characters right before a cell.
fn markdown_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("| a | b |\n|---|---|\n".to_string()),
        (0usize..60, 100usize..140).prop_map(|(wide, narrow)| format!(
            "| {}|{}[x](o.md#s) |\n",
            "é".repeat(wide),
            "a".repeat(narrow)
        )),
        "[ -~é]{0,150}".prop_map(|t| format!("| {t} | [x](o.md#s) |\n")),
        "[a-zé \n]{0,200}",
        Just("[l](o.md#s) ".to_string()),
        Just("\n\n".to_string()),
        Just("# H\n\n".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_markdown_is_indexed_and_searched(
        pieces in proptest::collection::vec(markdown_piece(), 0..12),
    ) {
        let text = pieces.concat();
        let mut index = DocumentIndex::new();
        index.insert("/d.md", text.as_bytes(), None).unwrap();
        index.insert("/o.md", b"# S\n\nxx aa\n", None).unwrap();
        for query in ["xx", "aa bb hh", "éé"] {
            let resp = index.lookup(
                &Request::new(Verb::Lookup, "/")
                    .with_meta("query", query)
                    .with_meta("terms", "any")
                    .with_meta("match", "body"),
            );
            prop_assert_eq!(&resp.status, &Status::Ok, "{}", resp.error_message());
        }
    }
}
