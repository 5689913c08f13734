//! The response parser on arbitrary bytes, as a client receives them: no
//! panic, what parses re-encodes to itself, and the body goes through what a
//! client does with it (the LIST, VERSIONS and LOOKUP body parsers, the error
//! message), with LIST and VERSIONS bodies written back and re-read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mark_proto::{Response, list, lookup, versions};

fuzz_target!(|bytes: &[u8]| {
    let Ok(resp) = Response::parse(bytes) else {
        return;
    };
    // A response whose metadata held `status` twice cannot be re-encoded.
    if let Ok(again) = resp.encode() {
        assert_eq!(Response::parse(&again).ok(), Some(resp.clone()));
    }
    let body = resp.body.as_slice();
    if let Ok(entries) = list::parse(body) {
        assert_eq!(
            list::parse(list::write(&entries).as_bytes()).ok(),
            Some(entries)
        );
    }
    if let Ok(entries) = versions::parse(body)
        && let Ok(text) = versions::write(&entries)
    {
        assert_eq!(versions::parse(text.as_bytes()).ok(), Some(entries));
    }
    let _ = lookup::parse(body);
    let _ = resp.error_message();
    let _ = resp.text();
});
