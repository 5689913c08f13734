//! The `mark-mcp` binary (the MCP server and CLI land with the sources).
fn main() {}
