"""The Claude Code plugin through the real Claude Code CLI (pinned in run.sh),
installed the way the README tells a user, with scripted_model.py standing
in for the model on 127.0.0.1.

Usage: claude_code_check.py MARK_MCP_BINARY WORKSPACE
Prints one line per check and a final `claude-code: N passed, M failed`.

`claude plugin validate` runs on the plugin and its marketplace. Then, HOME a
temporary folder and `mark-mcp` on the PATH (as after `cargo install`), the
README's own commands set the plugin up:

    claude plugin marketplace add <clone>
    claude plugin install mark@mark-mcp --config source=<folder>

serving ../shared/corpora/nodejs-api, with no `pin` stored (as every normal
install leaves it). One `claude -p` session (stream-json input, so a user's
`/clear` can be sent between turns) plays a script of tool calls: lookup,
explore, fetch, a re-read (unchanged), a compaction, the re-read again, then
fs.md with `mode: full` page after page; then the user's `/clear`, and the
re-read once more. The compaction is a real one: the scripted model reports
990,000 input tokens for one turn, so Claude Code compacts by itself (it asks
the model for a summary, then runs SessionStart hooks with source `compact`),
in the same process with the same running mark-mcp. The checks read what
reached the model from the recorded requests.

Two more set-ups, each one short session:
- the interactive `/plugin configure` form's stored result, by
  `claude plugin configure --values-stdin` with `pin` left empty (the form
  and this command store the same: `source` only);
- the plugin plus `claude mcp add` of the same source ("one or the other"
  in the README): what happens is printed and checked as documented (both
  servers connect, six mark schemas load, only the plugin's is reset by
  the hook).
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
CORE = ("mark_explore", "mark_fetch", "mark_lookup")
results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} claude-code: {name}" + ("" if ok else f": {str(detail)[:600]}"))


def main_script():
    """The model's turns of the main session (one list across user messages)."""
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
    # After the user's /clear: the index again, then once more.
    steps += [{"tool": fetch, "input": {"url": "/index.md"}},
              {"tool": fetch, "input": {"url": "/index.md"}},
              {"text": "Done again."}]
    return steps


def tool_results(requests):
    """(tool name, input, result text) per tool call, as the model saw them,
    in the order the calls were made (a call seen in several requests once)."""
    uses, seen, order = {}, {}, []
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
                    if b["tool_use_id"] not in seen:
                        order.append(b["tool_use_id"])
                    seen[b["tool_use_id"]] = text
    return [(uses.get(i, ("?", {}))[0], uses.get(i, ("?", {}))[1], seen[i]) for i in order]


class Claude:
    """The pinned Claude Code CLI with HOME a scratch folder and mark-mcp on
    the PATH."""

    def __init__(self, here, tmp, binary):
        self.exe = str(here / "node_modules" / ".bin" / "claude")
        self.here = here
        home = tmp / "home"
        (home / ".claude").mkdir(parents=True)
        bindir = tmp / "bin"
        bindir.mkdir()
        (bindir / "mark-mcp").symlink_to(binary)
        self.env = dict(os.environ, HOME=str(home), PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
                        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", RUST_LOG="warn")
        self.home, self.tmp = home, tmp
        self.work = tmp / "work"
        self.work.mkdir()

    def run(self, *args, stdin=None):
        return subprocess.run([self.exe, *args], env=self.env, input=stdin, capture_output=True,
                              text=True, timeout=120, cwd=self.work)

    def stored_options(self):
        settings = json.loads((self.home / ".claude" / "settings.json").read_text())
        return settings.get("pluginConfigs", {}).get("mark@mark-mcp", {}).get("options", {})

    def session(self, name, steps, messages):
        """Runs one `claude -p` session over stream-json input: each user
        message is sent once the previous one has its result. Returns
        (return code, stderr, recorded requests, stream-json events)."""
        script, log, port_file = (self.tmp / f"{name}.steps.json", self.tmp / f"{name}.requests.jsonl",
                                  self.tmp / f"{name}.port")
        script.write_text(json.dumps(steps))
        model = subprocess.Popen([sys.executable, str(self.here / "scripted_model.py"), "--script", str(script),
                                  "--log", str(log), "--port-file", str(port_file)], stderr=subprocess.DEVNULL)
        events = []
        try:
            deadline = time.monotonic() + 10
            while not (port_file.exists() and port_file.read_text()) and time.monotonic() < deadline:
                time.sleep(0.05)
            env = dict(self.env, ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port_file.read_text()}",
                       ANTHROPIC_API_KEY="sk-ant-scripted")
            proc = subprocess.Popen([self.exe, "-p", "--input-format", "stream-json", "--output-format",
                                     "stream-json", "--verbose", "--allowedTools", "mcp__plugin_mark_mark mcp__mark"],
                                    cwd=self.work, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            started = time.monotonic()
            for message in messages:
                proc.stdin.write(json.dumps({"type": "user", "message": {"role": "user", "content": message}}) + "\n")
                proc.stdin.flush()
                for line in proc.stdout:
                    event = json.loads(line) if line.startswith("{") else {}
                    events.append(event)
                    if event.get("type") == "result" or time.monotonic() - started > 300:
                        break
            proc.stdin.close()
            events += [json.loads(x) for x in proc.stdout.read().splitlines() if x.startswith("{")]
            rc = proc.wait(timeout=60)
            err = proc.stderr.read()
        finally:
            model.terminate()
            model.wait(timeout=10)
        requests = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
        return rc, err, requests, events


def card_in(request):
    return "SessionStart hook additional context: Knowledge base served by mark-mcp" in json.dumps(request["body"])


def main():
    binary, workspace = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    here = Path(__file__).resolve().parent
    plugin = workspace / "integrations" / "claude-code" / "mark"
    corpus = (workspace / ".." / "shared" / "corpora" / "nodejs-api").resolve()
    with tempfile.TemporaryDirectory() as tmp:
        claude = Claude(here, Path(tmp), binary)

        for folder in (plugin, workspace):
            v = claude.run("plugin", "validate", str(folder))
            warned = "warning" in (v.stdout + v.stderr).lower()
            check(f"claude plugin validate {folder.relative_to(workspace) or '.'} passes with no warnings",
                  v.returncode == 0 and "Validation passed" in v.stdout and not warned, v.stdout + v.stderr)

        # The README's install commands, as a user runs them.
        added = claude.run("plugin", "marketplace", "add", str(workspace))
        installed = claude.run("plugin", "install", "mark@mark-mcp", "--config", f"source={corpus}")
        check("claude plugin marketplace add / install --config source=… succeed",
              added.returncode == 0 and installed.returncode == 0,
              added.stdout + added.stderr + installed.stdout + installed.stderr)
        check("the install stores source and no pin (as every normal install)",
              claude.stored_options() == {"source": str(corpus)}, claude.stored_options())

        rc, err, requests, events = claude.session(
            "main", main_script(),
            ["What does the knowledge base say about fs.readFile?", "/clear", "Read the index again."])
        check("claude -p ran to the end", rc == 0, err[-600:])
        hooks = [e.get("hook_name") for e in events if e.get("subtype") == "hook_response"]
        failed_hooks = [e for e in events if e.get("subtype") == "hook_response" and e.get("exit_code") not in (0, None)]
        print(f"     claude-code: SessionStart hooks that ran: {hooks}")
        check("the hook ran at startup, after the compaction and after /clear, and never failed",
              {"SessionStart:startup", "SessionStart:compact", "SessionStart:clear"} <= set(hooks)
              and not failed_hooks and "isn't set" not in err, (hooks, failed_hooks, err[-300:]))

        turns = [r for r in requests if r["kind"] == "turn"]
        first = json.dumps(turns[0]["body"]) if turns else ""
        check("the root card reached the model in the first request",
              bool(turns) and card_in(turns[0]) and "/documentation.md" in first, first[:400])
        check("the card says nothing about backlinks it did not wait for",
              "crawl still running" not in first, re.findall(r"Backlinks[^\\]*", first)[:1])
        tools = [t["name"] for t in turns[0]["body"].get("tools", [])] if turns else []
        loaded = sorted(t for t in tools if t.startswith(PREFIX))
        print(f"     claude-code: mark tools loaded up front: {loaded}")
        check("mark_lookup, mark_fetch, mark_explore are loaded up front (not deferred)",
              loaded == sorted(PREFIX + n for n in CORE), tools)
        check("the mark skill is listed to the model", "- mark:mark: Read the user's markdown" in first,
              first[:300])

        calls = tool_results(requests)
        searches = [c for c in calls if c[0] == "ToolSearch"]
        check("no ToolSearch call", not searches, searches)
        by_tool = {n: [c for c in calls if c[0] == PREFIX + n] for n in CORE}
        check("mark_lookup went through to mark-mcp",
              any(t.startswith("status: ok") for _, _, t in by_tool["mark_lookup"]), by_tool["mark_lookup"])
        check("mark_explore went through to mark-mcp",
              any(t.startswith("status: ok") for _, _, t in by_tool["mark_explore"]), by_tool["mark_explore"])

        index = [t for _, i, t in by_tool["mark_fetch"] if i.get("url") == "/index.md"]
        statuses = [t.split("\n", 1)[0] for t in index]
        print(f"     claude-code: /index.md re-reads: {statuses}")
        check("a compaction happened", any(r["kind"] == "compact" for r in requests), [r["kind"] for r in requests])
        check("before it, a re-read answered unchanged",
              len(index) == 5 and index[0].startswith("status: ok") and index[1].startswith("status: unchanged"),
              statuses)
        check("after the compaction, the re-read delivered the text again",
              len(index) == 5 and index[2].startswith("status: ok") and "mode: full" in index[2], statuses)
        check("after /clear, the re-read delivered the text again, and the next one is unchanged",
              len(index) == 5 and index[3].startswith("status: ok") and "mode: full" in index[3]
              and index[4].startswith("status: unchanged"), statuses)
        after_clear = [r for r in turns if "Read the index again." in json.dumps(r["body"])]
        check("after /clear the model got the root card again", bool(after_clear) and card_in(after_clear[0]),
              len(after_clear))

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
        data = claude.home / ".claude" / "plugins" / "data"
        left = sorted(p.name for p in data.rglob("context-reset/*"))
        check("no reset marker is left behind (each reset took its marker)",
              not any(n.endswith(".reset") for n in left), left)

        # The interactive form's stored result: pin left empty stores source only.
        configured = claude.run("plugin", "configure", "mark@mark-mcp", "--values-stdin",
                                stdin=json.dumps({"source": str(corpus), "pin": ""}))
        check("configure --values-stdin with an empty pin stores source only (as the form does)",
              configured.returncode == 0 and claude.stored_options() == {"source": str(corpus)},
              (configured.stdout + configured.stderr, claude.stored_options()))
        fetch = PREFIX + "mark_fetch"
        rc, err, requests, events = claude.session(
            "configured", [{"tool": fetch, "input": {"url": "/index.md"}}, {"text": "Done."}], ["Read the index."])
        turns = [r for r in requests if r["kind"] == "turn"]
        check("after configure, the root card reached the model", rc == 0 and bool(turns) and card_in(turns[0]),
              err[-300:])

        # Installed twice over: the plugin plus `claude mcp add` of the same source.
        added = claude.run("mcp", "add", "--scope", "user", "mark", "--", "mark-mcp", "--source", str(corpus))
        steps = [{"tool": fetch, "input": {"url": "/index.md"}},
                 {"tool": "mcp__mark__mark_fetch", "input": {"url": "/index.md"}},
                 {"tool": fetch, "input": {"url": "/index.md"}, "input_tokens": 990_000},
                 {"tool": fetch, "input": {"url": "/index.md"}},
                 {"tool": "mcp__mark__mark_fetch", "input": {"url": "/index.md"}},
                 {"text": "Done."}]
        rc, err, requests, events = claude.session("twice", steps, ["Read the index."])
        turns = [r for r in requests if r["kind"] == "turn"]
        tools = [t["name"] for t in turns[0]["body"].get("tools", [])] if turns else []
        loaded = sorted(t for t in tools if "mark_" in t and t.startswith("mcp__"))
        statuses = [(n.split("__")[1], t.split("\n", 1)[0]) for n, _, t in tool_results(requests)]
        print(f"     claude-code: installed twice: {len(loaded)} mark schemas up front {loaded}")
        print(f"     claude-code: installed twice: /index.md by server: {statuses}")
        check("installed twice: both servers answer, six mark schemas load, two dedup memories, "
              "and only the plugin's server is reset by the hook (as the README says)",
              added.returncode == 0 and rc == 0 and len(loaded) == 6
              and [s for _, s in statuses] == ["status: ok", "status: ok", "status: unchanged",
                                               "status: ok", "status: unchanged"],
              (added.stderr, loaded, statuses))
    failed = results.count(False)
    print(f"claude-code: {len(results) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
