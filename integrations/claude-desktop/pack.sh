#!/usr/bin/env bash
# Builds the Claude Desktop bundle (an MCP bundle for @anthropic-ai/mcpb):
#   bash integrations/claude-desktop/pack.sh [MARK_MCP_BINARY] [OUT.mcpb]
# The binary (default target/release/mark-mcp, the Linux build) goes into
# server/ of a staging folder beside manifest.json, without its debug symbols.
# Needs mcpb: tests/clients/node_modules/.bin/mcpb (run.sh installs it) or
# on the PATH.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
workspace="$(cd "$here/../.." && pwd)"
binary="${1:-$workspace/target/release/mark-mcp}"
out="${2:-$workspace/target/mark-mcp.mcpb}"
mcpb="$workspace/tests/clients/node_modules/.bin/mcpb"
[ -x "$mcpb" ] || mcpb="mcpb"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/server"
cp "$here/manifest.json" "$stage/"
if command -v strip >/dev/null 2>&1; then
  strip -o "$stage/server/mark-mcp" "$binary"
else
  cp "$binary" "$stage/server/mark-mcp"
fi
"$mcpb" validate "$stage/manifest.json"
"$mcpb" pack "$stage" "$out"
