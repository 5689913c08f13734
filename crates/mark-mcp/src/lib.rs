//! mark-mcp (in progress)
