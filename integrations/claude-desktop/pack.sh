#!/usr/bin/env bash
# Builds the Claude Desktop bundle (an MCP bundle for @anthropic-ai/mcpb):
#   bash integrations/claude-desktop/pack.sh [MARK_MCP_BINARY] [OUT.mcpb]
# The binary (default target/release/mark-mcp: build it first with
# `cargo build --release -p mark-mcp`) goes into server/ of a staging folder
# beside manifest.json, without its debug symbols. A bundle runs only where
# its binary does, so the manifest's platforms and description are set to
# the machine this runs on (macOS, Linux or Windows, and its CPU).
# The packer is `mcpb`: tests/clients/node_modules/.bin/mcpb (run.sh installs
# it), else `mcpb` on the PATH, else this script installs the pinned version
# into target/mcpb-tool with npm (needs Node.js and npm).
set -euo pipefail
MCPB_VERSION="2.1.2"
here="$(cd "$(dirname "$0")" && pwd)"
workspace="$(cd "$here/../.." && pwd)"
binary="${1:-$workspace/target/release/mark-mcp}"
out="${2:-$workspace/target/mark-mcp.mcpb}"

if [ ! -f "$binary" ]; then
  echo "pack.sh: no mark-mcp binary at $binary; build it with 'cargo build --release -p mark-mcp' or name one: pack.sh BINARY [OUT]" >&2
  exit 1
fi

mcpb="$workspace/tests/clients/node_modules/.bin/mcpb"
if [ ! -x "$mcpb" ]; then
  if command -v mcpb >/dev/null 2>&1; then
    mcpb="mcpb"
  else
    tool="$workspace/target/mcpb-tool"
    mcpb="$tool/node_modules/.bin/mcpb"
    if [ ! -x "$mcpb" ]; then
      if ! command -v npm >/dev/null 2>&1; then
        echo "pack.sh: needs the mcpb packer (npm install -g @anthropic-ai/mcpb@$MCPB_VERSION), or Node.js with npm to install it here; npm is not on the PATH." >&2
        exit 1
      fi
      echo "pack.sh: installing @anthropic-ai/mcpb@$MCPB_VERSION into $tool" >&2
      npm install --no-save --no-audit --no-fund --silent --prefix "$tool" "@anthropic-ai/mcpb@$MCPB_VERSION" >&2
    fi
  fi
fi

case "$(uname -s)" in
  Darwin) platform="darwin"; name="macOS" ;;
  Linux) platform="linux"; name="Linux" ;;
  MINGW* | MSYS* | CYGWIN*) platform="win32"; name="Windows" ;;
  *) echo "pack.sh: $(uname -s) is not a platform MCP bundles know (darwin, linux, win32)" >&2; exit 1 ;;
esac
arch="$(uname -m)"

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/server"
node - "$here/manifest.json" "$stage/manifest.json" "$platform" "$name $arch" <<'JS'
const fs = require("fs");
const [from, to, platform, built] = process.argv.slice(2);
const m = JSON.parse(fs.readFileSync(from, "utf8"));
m.compatibility.platforms = [platform];
m.long_description = m.long_description.replace(/This bundle holds .*$/, `This bundle holds the ${built} build of mark-mcp (server/mark-mcp) and runs only there.`);
fs.writeFileSync(to, JSON.stringify(m, null, 2) + "\n");
JS
if command -v strip >/dev/null 2>&1; then
  strip -o "$stage/server/mark-mcp" "$binary"
else
  cp "$binary" "$stage/server/mark-mcp"
fi
"$mcpb" validate "$stage/manifest.json"
"$mcpb" pack "$stage" "$out"
