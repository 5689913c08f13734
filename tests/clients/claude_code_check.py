"""The Claude Code plugin through the real Claude Code CLI (pinned in run.sh),
with scripted_model.py standing in for the model on 127.0.0.1.

Usage: claude_code_check.py MARK_MCP_BINARY WORKSPACE
Prints one line per check and a final `claude-code: N passed, M failed`.

`claude plugin validate` runs on the plugin and its marketplace. Then one
`claude -p` session, HOME a temporary folder, with the plugin from
integrations/claude-code/mark (`--plugin-dir`; its `source` option set in
the user settings' `pluginConfigs`) serving ../shared/corpora/nodejs-api,
plays a script of tool calls: lookup, fetch, a re-read (unchanged), a
compaction, the re-read again, then fs.md with `mode: full` page after page.
The compaction is a real one: the scripted model reports 990,000 input
tokens for one turn, so Claude Code compacts its context by itself (it asks
the model for a summary, then runs SessionStart hooks with source
`compact`), all in the same process with the same running mark-mcp.
The checks read what reached the model from the recorded requests.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PREFIX = "mcp__plugin_mark_mark__"
BOUND = 48_000
results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} claude-code: {name}" + ("" if ok else f": {str(detail)[:600]}"))


def script():
    fetch = PREFIX + "mark_fetch"
    steps = [
        {"tool": PREFIX + "mark_lookup", "input": {"query": "readFile"}},
        {"tool": PREFIX + "mark_explore", "input": {"url": "/fs.md"}},
        {"tool": fetch, "input": {"url": "/index.md"}},
        # The same text again: unchanged. This turn's usage makes Claude Code compact.
        {"tool": fetch, "input": {"url": "/index.md"}, "input_tokens": 990_000},
        {"tool": fetch, "input": {"url": "/index.md"}},
        {"tool": fetch, "input": {"url": "/fs.md", "mode": "full"}},
    ]
    for _ in range(12):
        steps.append({"tool": fetch, "input": {"url": "/fs.md", "mode": "full"},
                      "from_last": {"cursor": r'cursor "([^"]+)"'}})
    steps.append({"text": "Done."})
    return steps


def tool_results(requests):
    """tool_use id -> (tool name, input, result text), as the model saw them."""
    uses, seen = {}, {}
    for r in requests:
        for m in r["body"].get("messages", []):
            if not isinstance(m.get("content"), list):
                continue
            for b in m["content"]:
                if b.get("type") == "tool_use":
                    uses[b["id"]] = (b["name"], b.get("input", {}))
                elif b.get("type") == "tool_result":
                    c = b.get("content")
                    text = "".join(x.get("text", "") for x in c) if isinstance(c, list) else (c or "")
                    seen[b["tool_use_id"]] = text
    order = sorted(seen, key=lambda i: i)
    return [(uses.get(i, ("?", {}))[0], uses.get(i, ("?", {}))[1], seen[i]) for i in order]


def main():
    binary, workspace = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    here = Path(__file__).resolve().parent
    claude = here / "node_modules" / ".bin" / "claude"
    plugin = workspace / "integrations" / "claude-code" / "mark"
    corpus = (workspace / ".." / "shared" / "corpora" / "nodejs-api").resolve()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        home = tmp / "home"
        (home / ".claude").mkdir(parents=True)
        env = dict(os.environ, HOME=str(home))

        for folder in (plugin, plugin.parent):
            v = subprocess.run([str(claude), "plugin", "validate", str(folder)], env=env,
                               capture_output=True, text=True, timeout=60)
            check(f"claude plugin validate {folder.relative_to(workspace)}",
                  v.returncode == 0 and "Validation passed" in v.stdout, v.stdout + v.stderr)

        # The plugin runs `mark-mcp` from the PATH, as after `cargo install`.
        bindir = tmp / "bin"
        bindir.mkdir()
        (bindir / "mark-mcp").symlink_to(binary)
        settings = {"pluginConfigs": {"mark@inline": {"options": {"source": str(corpus), "pin": ""}}}}
        (home / ".claude" / "settings.json").write_text(json.dumps(settings))
        (tmp / "steps.json").write_text(json.dumps(script()))
        log, port_file = tmp / "requests.jsonl", tmp / "port"
        model = subprocess.Popen([sys.executable, str(here / "scripted_model.py"), "--script",
                                  str(tmp / "steps.json"), "--log", str(log), "--port-file", str(port_file)],
                                 stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while not (port_file.exists() and port_file.read_text()) and time.monotonic() < deadline:
                time.sleep(0.05)
            port = port_file.read_text()
            run_env = dict(env, PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}",
                           ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}", ANTHROPIC_API_KEY="sk-ant-scripted",
                           CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", RUST_LOG="warn")
            work = tmp / "work"
            work.mkdir()
            run = subprocess.run([str(claude), "-p", "What does the knowledge base say about fs.readFile?",
                                  "--plugin-dir", str(plugin), "--allowedTools", "mcp__plugin_mark_mark",
                                  "--output-format", "stream-json", "--verbose"],
                                 cwd=work, env=run_env, capture_output=True, text=True, timeout=300)
        finally:
            model.terminate()
            model.wait(timeout=10)
        check("claude -p ran to the end", run.returncode == 0, run.stderr[-600:])
        requests = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        turns = [r for r in requests if r["kind"] == "turn"]
        first = json.dumps(turns[0]["body"]) if turns else ""
        check("the SessionStart card reached the model",
              "SessionStart" in first and "Knowledge base served by mark-mcp" in first and "/documentation.md" in first,
              first[:400])

        tools = [t["name"] for t in turns[0]["body"].get("tools", [])] if turns else []
        loaded = sorted(t for t in tools if t.startswith(PREFIX))
        print(f"     claude-code: mark tools loaded up front: {loaded}")
        check("mark_lookup, mark_fetch, mark_explore are loaded up front (not deferred)",
              loaded == sorted(PREFIX + n for n in ("mark_explore", "mark_fetch", "mark_lookup")), tools)
        deferred = re.findall(r"mcp__plugin_mark_mark__\w+", first.split("deferred tools are now available", 1)[-1][:3000])
        print(f"     claude-code: deferred mark tools: {sorted(set(deferred))}")

        calls = tool_results(requests)
        searches = [c for c in calls if c[0] == "ToolSearch"]
        check("no ToolSearch call", not searches, searches)
        names = sorted({c[0] for c in calls})
        print(f"     claude-code: tools called: {names}")
        by_tool = {n: [c for c in calls if c[0] == PREFIX + n] for n in ("mark_lookup", "mark_explore", "mark_fetch")}
        check("mark_lookup went through to mark-mcp",
              any(t.startswith("status: ok") for _, _, t in by_tool["mark_lookup"]), by_tool["mark_lookup"])
        check("mark_explore went through to mark-mcp",
              any(t.startswith("status: ok") for _, _, t in by_tool["mark_explore"]), by_tool["mark_explore"])

        index = [t for _, i, t in by_tool["mark_fetch"] if i.get("url") == "/index.md"]
        compacted = [r for r in requests if r["kind"] == "compact"]
        check("a compaction happened", bool(compacted), [r["kind"] for r in requests])
        check("before it, a re-read answered unchanged",
              len(index) == 3 and index[0].startswith("status: ok") and index[1].startswith("status: unchanged"),
              [t[:80] for t in index])
        check("after it, the re-read delivered the text again, not unchanged",
              len(index) == 3 and index[2].startswith("status: ok") and "mode: full" in index[2],
              [t[:80] for t in index])

        pages = [t for _, i, t in by_tool["mark_fetch"] if i.get("url") == "/fs.md" and i.get("mode") == "full"]
        sizes = [len(t) for t in pages]
        print(f"     claude-code: fs.md mode full, {len(pages)} results inline, characters: {sizes}")
        inline = all(not t.startswith("<persisted-output>") and "exceeds maximum" not in t for t in pages)
        check("fs.md mode: full reached the model inline, every page", bool(pages) and inline,
              [t[:120] for t in pages])
        check(f"every page is within {BOUND} bytes", all(len(t.encode()) <= BOUND for t in pages), sizes)
        last = pages[-1] if pages else ""
        total = re.search(r"page: \d+ of (\d+)", pages[0]) if pages else None
        check("page after page to the last",
              total is not None and len(pages) == int(total.group(1)) and "the last]" in last,
              [re.findall(r"page: .*", t)[:1] for t in pages])
    failed = results.count(False)
    print(f"claude-code: {len(results) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
