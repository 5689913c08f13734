//! Arbitrary requests never make the engine fail: every answer is a
//! protocol status other than `server-error`, and it encodes for the wire.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use mark_proto::{Request, Status, Verb};
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
