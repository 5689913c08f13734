//! Every parser of mark-proto on arbitrary bytes: no panic, and whatever
//! parses re-encodes to bytes that parse to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mark_proto::{MarkUrl, Request, Response, list, lookup, versions};

fuzz_target!(|bytes: &[u8]| {
    if let Ok(req) = Request::parse(bytes)
        && let Ok(again) = req.encode()
    {
        assert_eq!(Request::parse(&again).ok(), Some(req));
    }
    if let Ok(resp) = Response::parse(bytes) {
        // A response whose metadata held `status` twice cannot be re-encoded.
        if let Ok(again) = resp.encode() {
            assert_eq!(Response::parse(&again).ok(), Some(resp));
        }
    }
    if let Ok(entries) = list::parse(bytes) {
        assert_eq!(
            list::parse(list::write(&entries).as_bytes()).ok(),
            Some(entries)
        );
    }
    if let Ok(entries) = versions::parse(bytes)
        && let Ok(text) = versions::write(&entries)
    {
        assert_eq!(versions::parse(text.as_bytes()).ok(), Some(entries));
    }
    let _ = lookup::parse(bytes);
    if let Ok(text) = std::str::from_utf8(bytes)
        && let Ok(url) = MarkUrl::parse(text)
    {
        assert_eq!(MarkUrl::parse(&url.to_string()).ok(), Some(url));
    }
});
