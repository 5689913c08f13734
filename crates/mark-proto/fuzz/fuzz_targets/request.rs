//! The request parser on arbitrary bytes, as a server receives them: no
//! panic, and what parses re-encodes to bytes that parse to the same request.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mark_proto::Request;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(req) = Request::parse(bytes)
        && let Ok(again) = req.encode()
    {
        assert_eq!(Request::parse(&again).ok(), Some(req));
    }
});
