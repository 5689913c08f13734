//! Property tests: everything written parses back to itself, and no parser
//! panics on any input.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use mark_proto::list::{self, ListEntry};
use mark_proto::lookup::{self, LookupRow, LookupTable, MatchMode};
use mark_proto::versions::{self, VersionEntry};
use mark_proto::{MarkUrl, Metadata, Request, Response, Status, Verb};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    ProptestConfig::with_cases(256)
}

fn verb() -> impl Strategy<Value = Verb> {
    prop::sample::select(Verb::ALL.to_vec())
}

fn status() -> impl Strategy<Value = Status> {
    prop_oneof![
        prop::sample::select(vec![
            "ok",
            "created",
            "not-modified",
            "not-found",
            "archived",
            "unauthorized",
            "not-permitted",
            "server-error",
            "conflict",
            "bad-request",
            "too-large",
            "unavailable",
        ])
        .prop_map(Status::parse),
        "[a-z][a-z-]{0,15}".prop_map(|s| Status::parse(&s)),
    ]
}

/// A request path: `/` then anything but white space and control characters.
fn wire_path() -> impl Strategy<Value = String> {
    "/[^\\s\\p{Cc}]{0,40}"
}

/// Metadata with valid keys and values of any characters.
fn metadata() -> impl Strategy<Value = Metadata> {
    prop::collection::vec(("[a-z][a-z0-9_.-]{0,15}", any::<String>()), 0..6)
        .prop_map(|pairs| pairs.into_iter().collect())
}

/// Text without control characters and without surrounding white space.
fn cell_text(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[^\\p{{Cc}}]{{0,{max}}}"))
        .unwrap()
        .prop_map(|s| s.trim().to_string())
}

fn rfc3339() -> impl Strategy<Value = String> {
    (
        1970u32..2100,
        1u32..=12,
        1u32..=28,
        0u32..24,
        0u32..60,
        0u32..60,
        prop::option::of(0u32..1000),
        prop::bool::ANY,
    )
        .prop_map(|(y, mo, d, h, mi, s, frac, utc)| {
            let frac = frac.map(|f| format!(".{f:03}")).unwrap_or_default();
            let zone = if utc {
                "Z".to_string()
            } else {
                "+02:00".to_string()
            };
            format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}{frac}{zone}")
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn requests_round_trip(verb in verb(), path in wire_path(), meta in metadata(), body in prop::collection::vec(any::<u8>(), 0..200)) {
        let req = Request { verb, path, metadata: meta, body };
        let bytes = req.encode().unwrap();
        prop_assert_eq!(Request::parse(&bytes).unwrap(), req);
    }

    #[test]
    fn frontmatter_bodies_round_trip(path in wire_path(), rest in any::<String>()) {
        let req = Request::new(Verb::Publish, path).with_body(format!("---\n{rest}"));
        prop_assert_eq!(Request::parse(&req.encode().unwrap()).unwrap(), req);
    }

    #[test]
    fn responses_round_trip(status in status(), meta in metadata(), body in prop::collection::vec(any::<u8>(), 0..200)) {
        let mut meta = meta;
        meta.remove("status");
        let resp = Response { status, metadata: meta, body };
        let bytes = resp.encode().unwrap();
        prop_assert_eq!(Response::parse(&bytes).unwrap(), resp);
    }

    #[test]
    fn error_bodies_round_trip(status in status(), message in any::<String>()) {
        let resp = Response::error_for(status.clone(), &message);
        let parsed = Response::parse(&resp.encode().unwrap()).unwrap();
        prop_assert_eq!(&parsed.status, &status);
        prop_assert_eq!(parsed.error_message(), message.trim());
    }

    #[test]
    fn urls_round_trip(
        host in prop_oneof![
            "[a-z]([a-z0-9-]{0,10}[a-z0-9])?(\\.[a-z][a-z0-9]{0,7}){0,3}",
            any::<[u8; 4]>().prop_map(|o| std::net::Ipv4Addr::from(o).to_string()),
            any::<[u16; 8]>().prop_map(|s| std::net::Ipv6Addr::from(s).to_string()),
        ],
        port in 1u16..,
        segments in prop::collection::vec("([A-Za-z0-9._~-]|%[0-9A-F]{2}|é){1,12}", 0..4),
        version in prop::option::of(1u64..),
        fragment in prop::option::of("[a-z0-9-]{1,20}"),
    ) {
        let mut path = format!("/{}", segments.join("/"));
        if let Some(v) = version {
            if path == "/" { path.push_str("doc.md"); }
            path.push_str(&format!("/v{v}"));
        }
        let pf = match &fragment { Some(f) => format!("{path}#{f}"), None => path.clone() };
        let url = MarkUrl::new(&host, port, &pf).unwrap();
        prop_assert_eq!(url.host(), host.as_str());
        prop_assert_eq!(url.port(), port);
        prop_assert_eq!(url.path(), path.as_str());
        prop_assert_eq!(url.version(), version);
        prop_assert_eq!(url.fragment(), fragment.as_deref());
        prop_assert_eq!(MarkUrl::parse(&url.to_string()).unwrap(), url);
    }

    #[test]
    fn lists_round_trip(entries in prop::collection::vec((any::<String>().prop_filter("non-empty", |s| !s.is_empty()), any::<bool>()), 0..8)) {
        let entries: Vec<ListEntry> = entries.into_iter().map(|(name, is_dir)| ListEntry { name, is_dir }).collect();
        prop_assert_eq!(list::parse(list::write(&entries).as_bytes()).unwrap(), entries);
    }

    #[test]
    fn versions_round_trip(entries in prop::collection::vec((wire_path(), 1u64.., rfc3339()), 0..6)) {
        let entries: Vec<VersionEntry> = entries.into_iter().map(|(p, v, m)| VersionEntry::new(p, v, m)).collect();
        prop_assert_eq!(versions::parse(versions::write(&entries).unwrap().as_bytes()).unwrap(), entries);
    }

    #[test]
    fn lookup_tables_round_trip(
        body_mode in any::<bool>(),
        bytes_column in any::<bool>(),
        lacks_column in any::<bool>(),
        rows in prop::collection::vec((
            "/[^\\s\\p{Cc}]{0,30}",
            prop::option::of("[a-z0-9_-]{1,20}"),
            0u32..=10_000,
            cell_text(40),
            prop::collection::vec(cell_text(12).prop_filter("a tag is non-empty and holds no comma", |t| !t.is_empty() && !t.contains(',')), 0..4),
            cell_text(80),
            prop::collection::vec("[a-z0-9_]{2,10}", 0..3),
            prop::option::of(any::<u64>()),
        ), 0..6),
    ) {
        let mode = if body_mode { MatchMode::Body } else { MatchMode::Catalog };
        let rows: Vec<LookupRow> = rows
            .into_iter()
            .map(|(path, anchor, hundredths, title, tags, snippet, lacks, bytes)| LookupRow {
                path,
                anchor,
                importance: f64::from(hundredths) / 100.0,
                title,
                tags,
                snippet: body_mode.then_some(snippet),
                bytes: bytes.filter(|_| bytes_column),
                lacks: if lacks_column { lacks } else { Vec::new() },
            })
            .collect();
        let table = LookupTable { mode, rows, bytes_column, lacks_column };
        prop_assert_eq!(lookup::parse(lookup::write(&table).as_bytes()).unwrap(), table);
    }

    #[test]
    fn parsers_never_panic_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = Request::parse(&bytes);
        let _ = Response::parse(&bytes);
        let _ = list::parse(&bytes);
        let _ = versions::parse(&bytes);
        let _ = lookup::parse(&bytes);
        let _ = MarkUrl::parse(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn parsers_never_panic_on_near_misses(pieces in prop::collection::vec(prop::sample::select(vec![
        "---\n", "---", "\r\n", "\n", "status: ok\n", "k: \"", "\\", "\\x", "\\u12", "'", "''", ": ", "|", "|-\n", ">+\n", "  ", "\t",
        "# ", "- [", "](", ")", " - ", "/v", "0", "1", "%", "%zz", "é", "mark://", "[", "]", ":", "@", "?", "#", "/", "---|", "| Path | Importance | Title | Tags |\n",
        "FETCH ", "LIST /", "2026-02-17T10:00:00Z",
    ]), 0..40)) {
        let text: String = pieces.concat();
        let _ = Request::parse(text.as_bytes());
        let _ = Response::parse(text.as_bytes());
        let _ = Response::parse(format!("---\n{text}").as_bytes());
        let _ = list::parse(text.as_bytes());
        let _ = versions::parse(text.as_bytes());
        let _ = lookup::parse(text.as_bytes());
        let _ = MarkUrl::parse(&text);
        let _ = MarkUrl::parse(&format!("mark://{text}"));
    }
}
