//! mark-server binary
fn main() {}
