#!/usr/bin/env bash
# Side-by-side benchmark: mark-mcp and two peer MCP servers over the same
# files, through the same rmcp client harness (crates/mark-bench), tokens
# counted the same way (o200k, a proxy for Claude's tokenizer).
#
#   bench/peers/run.sh            # 3 runs per row
#   RUNS=1 bench/peers/run.sh     # quicker
#
# Installs the pinned peers into bench/peers/node_modules (git-ignored),
# builds mark-mcp and mark-bench in release, runs, prints one markdown
# table and writes it to bench/peers/RESULTS.md (raw figures as JSON in
# target/mark-bench-peers.json). Needs node/npm and network access to the
# npm registry. Not part of CI.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
runs="${RUNS:-3}"
corpus="${MARK_CORPORA:-$root/../shared/corpora}/nodejs-api"

fs_pkg="@modelcontextprotocol/server-filesystem"
fs_version="2026.8.31"
vault_pkg="@bitbonsai/mcpvault"
vault_version="0.16.0"

if [[ ! -f "$corpus/fs.md" ]]; then
    echo "run.sh: $corpus/fs.md not found; set MARK_CORPORA to the shared corpora folder" >&2
    exit 1
fi

echo "== installing $fs_pkg@$fs_version and $vault_pkg@$vault_version into $here/node_modules" >&2
(cd "$here" && npm install --no-audit --no-fund --save-exact "$fs_pkg@$fs_version" "$vault_pkg@$vault_version" >&2)
for pair in "$fs_pkg:$fs_version" "$vault_pkg:$vault_version"; do
    pkg="${pair%%:*}"
    want="${pair##*:}"
    got="$(node -p "JSON.parse(require('fs').readFileSync('$here/node_modules/$pkg/package.json', 'utf8')).version")"
    if [[ "$got" != "$want" ]]; then
        echo "run.sh: $pkg is $got after the install, not the pinned $want" >&2
        exit 1
    fi
done

echo "== building mark-mcp and mark-bench (release)" >&2
(cd "$root" && cargo build --release -p mark-mcp --bin mark-mcp -p mark-bench --bin mark-bench >&2)

table="$(mktemp)"
trap 'rm -f "$table"' EXIT
echo "== running ($runs run(s) per row)" >&2
(cd "$root" && target/release/mark-bench peers \
    --kb crates/mark-mcp/soul \
    --questions crates/mark-mcp/soul/questions.toml \
    --corpus "$corpus" \
    --peers-dir bench/peers \
    --mark-mcp target/release/mark-mcp \
    --runs "$runs" \
    --out "$table" \
    --json target/mark-bench-peers.json >&2)

{
    echo "# mark-mcp and peer MCP servers, side by side"
    echo
    echo "Written by \`bench/peers/run.sh\` on $(date -u +%Y-%m-%d) at commit $(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet -- crates || echo ' (with uncommitted changes)'); node $(node --version); $fs_pkg@$fs_version, $vault_pkg@$vault_version; release builds; $(nproc) cores. How each server is driven: bench/peers/README.md."
    echo
    cat "$table"
} > "$here/RESULTS.md"
cat "$here/RESULTS.md"
