#!/usr/bin/env bash
# Real third-party MCP clients against the real mark-mcp binary: the official
# MCP Python SDK and the MCP Inspector CLI, both pinned. Installs them
# (idempotent, quiet) into tests/clients/.venv and tests/clients/node_modules
# (both git-ignored), runs both checks, prints `N passed, M failed` and exits
# non-zero on any failure. Needs python3 (with venv) and npm; builds
# target/debug/mark-mcp first (MARK_MCP_BIN names another binary instead).
set -uo pipefail

PYTHON_SDK_VERSION="2.3.0"
INSPECTOR_VERSION="2.12.0"
CLAUDE_CODE_VERSION="2.1.328"
MCPB_VERSION="2.1.2"

here="$(cd "$(dirname "$0")" && pwd)"
workspace="$(cd "$here/../.." && pwd)"
binary="${MARK_MCP_BIN:-$workspace/target/debug/mark-mcp}"
fixture="$workspace/crates/mark-mcp/soul"

for tool in python3 npm npx node; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "tests/clients needs $tool (python3 with venv, and Node.js with npm); it is not on PATH." >&2
    echo "0 passed, 1 failed"
    exit 1
  fi
done

# Build (a no-op when up to date) so the checks never run a stale binary.
if [ -z "${MARK_MCP_BIN:-}" ]; then
  (cd "$workspace" && cargo build -q -p mark-mcp --bin mark-mcp) || {
    echo "could not build mark-mcp" >&2
    echo "0 passed, 1 failed"
    exit 1
  }
fi

install_python() {
  local venv="$here/.venv"
  if [ -x "$venv/bin/python" ] &&
    [ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" = "$PYTHON_SDK_VERSION" ]; then
    return 0
  fi
  python3 -m venv "$venv" &&
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "mcp==$PYTHON_SDK_VERSION"
}

# One npm install for every Node package (a later `npm install --no-save`
# would remove what an earlier one added).
NODE_PACKAGES=(
  "@modelcontextprotocol/inspector@$INSPECTOR_VERSION"
  "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION"
  "@anthropic-ai/mcpb@$MCPB_VERSION"
)
install_node() {
  local spec name version installed all=1
  for spec in "${NODE_PACKAGES[@]}"; do
    name="${spec%@*}"
    version="${spec##*@}"
    installed="$here/node_modules/$name/package.json"
    if [ ! -f "$installed" ] || [ "$(node -p "require('$installed').version" 2>/dev/null)" != "$version" ]; then
      all=0
    fi
  done
  [ "$all" -eq 1 ] && return 0
  (cd "$here" && npm install --no-save --no-audit --no-fund --silent --prefix . "${NODE_PACKAGES[@]}")
}

passed=0
failed=0
# Adds the counts of a check's last line (`NAME: N passed, M failed`).
tally() {
  local line="$1"
  local p f
  p="$(sed -n 's/.*: \([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\1/p' <<<"$line")"
  f="$(sed -n 's/.*: \([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\2/p' <<<"$line")"
  passed=$((passed + ${p:-0}))
  failed=$((failed + ${f:-1}))
}

run_check() {
  local out rc
  out="$("$@" 2>&1)"
  rc=$?
  printf '%s\n' "$out"
  tally "$(tail -n 1 <<<"$out")"
  # A non-zero exit with no failure counted (a crash) still counts as one.
  if [ "$rc" -ne 0 ] && [ "$(tail -n 1 <<<"$out" | sed -n 's/.* \([0-9][0-9]*\) failed$/\1/p')" = "0" ]; then
    failed=$((failed + 1))
  fi
}

# The Claude Desktop bundle: `mcpb validate` on the manifest, `mcpb pack`
# with this binary (Linux), and the packed file lists server/mark-mcp.
mcpb_check() {
  local out bundle ok=0 bad=0
  bundle="$(mktemp -d)/mark-mcp.mcpb"
  if out="$("$here/node_modules/.bin/mcpb" validate "$workspace/integrations/claude-desktop/manifest.json" 2>&1)"; then
    echo "ok   mcpb: validate: $out"; ok=$((ok + 1))
  else
    echo "FAIL mcpb: validate: $out"; bad=$((bad + 1))
  fi
  if bash "$workspace/integrations/claude-desktop/pack.sh" "$binary" "$bundle" >/dev/null 2>&1 &&
    python3 -c 'import sys, zipfile; sys.exit("server/mark-mcp" not in zipfile.ZipFile(sys.argv[1]).namelist())' "$bundle"; then
    echo "ok   mcpb: pack builds a bundle holding server/mark-mcp ($(du -h "$bundle" | cut -f1))"; ok=$((ok + 1))
  else
    echo "FAIL mcpb: pack"; bad=$((bad + 1))
  fi
  rm -rf "$(dirname "$bundle")"
  echo "mcpb: $ok passed, $bad failed"
}

if install_python; then
  run_check "$here/.venv/bin/python" "$here/python_sdk_check.py" "$binary" "$fixture"
else
  echo "FAIL could not install the MCP Python SDK mcp==$PYTHON_SDK_VERSION into $here/.venv"
  failed=$((failed + 1))
fi

if install_node; then
  run_check node "$here/inspector_check.mjs" "$binary" "$fixture"
  run_check python3 "$here/claude_code_check.py" "$binary" "$workspace"
  run_check mcpb_check
else
  echo "FAIL could not install ${NODE_PACKAGES[*]} into $here/node_modules"
  failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
