//! The `mark://` URL parser on arbitrary text: no panic, and what parses
//! displays as text that parses to the same URL, and its origin parses to the
//! same host and port. Text after the first newline (which no URL contains)
//! is joined to the parsed URL as a path and fragment, with the same checks.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mark_proto::MarkUrl;

fn check_stable(url: &MarkUrl) {
    assert_eq!(MarkUrl::parse(&url.to_string()).as_ref().ok(), Some(url));
    let origin = MarkUrl::parse(&url.origin()).expect("an origin parses");
    assert_eq!((origin.host(), origin.port()), (url.host(), url.port()));
}

fuzz_target!(|text: &str| {
    let (base, joined) = match text.split_once('\n') {
        Some((base, joined)) => (base, Some(joined)),
        None => (text, None),
    };
    let Ok(url) = MarkUrl::parse(base) else {
        return;
    };
    check_stable(&url);
    let _ = url.decoded_path();
    assert!(url.path().starts_with(url.doc_path()));
    if let Some(joined) = joined
        && let Ok(other) = url.join(joined)
    {
        assert_eq!((other.host(), other.port()), (url.host(), url.port()));
        check_stable(&other);
    }
});
