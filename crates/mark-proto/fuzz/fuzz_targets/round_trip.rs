//! Metadata values of any text survive encoding: a response carrying the
//! input as a value and as a body parses back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mark_proto::{Response, Status};

fuzz_target!(|text: &str| {
    let resp = Response::new(Status::Ok)
        .with_meta("value", text)
        .with_body(text.as_bytes().to_vec());
    let bytes = resp.encode().expect("a valid key and any value encode");
    assert_eq!(
        Response::parse(&bytes).expect("what was encoded parses"),
        resp
    );
});
