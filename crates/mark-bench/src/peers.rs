//! Peer MCP servers side by side (filled in next).
