"""Drives the real mark-mcp binary with the official MCP Python SDK (pinned in
run.sh) over stdio, in one session, against crates/mark-mcp/soul.

Usage: python_sdk_check.py MARK_MCP_BINARY FIXTURE_ROOT
Prints one line per check and a final `python-sdk: N passed, M failed`;
exits 1 on any failure.
"""

import asyncio
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SMALL = "/people/jonas-muller.md"
LARGE = "/projects/lantern/roadmap.md"
SECTION = "phase-10--alert-routing-by-ownership"

results: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str = "") -> None:
    results.append((name, ok, detail))
    print(f"{'ok  ' if ok else 'FAIL'} python-sdk: {name}" + ("" if ok else f": {detail[:400]}"))


def text_of(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def field(text: str, key: str) -> str | None:
    head = text.split("\n\n", 1)[0]
    for line in head.splitlines():
        if line.startswith(key + ": "):
            return line[len(key) + 2 :]
    return None


def body(text: str) -> str:
    return text.split("\n\n", 1)[1] if "\n\n" in text else ""


async def run(binary: str, root: str) -> None:
    params = StdioServerParameters(command=binary, args=["--root", root], env={"RUST_LOG": "warn"})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check("initialize names the server", "mark" in init.server_info.name.lower(), str(init.server_info))

            tools = (await session.list_tools()).tools
            names = {t.name for t in tools}
            check(
                "tools/list has the read tools",
                {"mark_fetch", "mark_lookup", "mark_list", "mark_versions"} <= names,
                str(sorted(names)),
            )
            bad = [t.name for t in tools if t.input_schema.get("type") != "object"]
            check("every inputSchema has type object", not bad, str(bad))

            # Claude Code loads these up front; the read group's tools/list,
            # serialized as the SDK sends it, stays under 4 KB with them.
            listed = await session.list_tools()
            size = len(listed.model_dump_json(by_alias=True, exclude_none=True).encode())
            print(f"     python-sdk: read group tools/list is {size} bytes")
            check("read group tools/list is under 4 KB", size < 4096, f"{size} bytes")
            always = sorted(t.name for t in tools if (t.meta or {}).get("anthropic/alwaysLoad") is True)
            check(
                "mark_lookup, mark_fetch, mark_explore are always loaded, the rest deferred",
                always == ["mark_explore", "mark_fetch", "mark_lookup"],
                str(always),
            )

            r = await session.call_tool("mark_fetch", {"url": SMALL})
            t = text_of(r)
            check(
                "small fetch comes whole",
                not r.is_error and field(t, "mode") == "full" and "# Jonas Müller" in body(t),
                t[:300],
            )

            r = await session.call_tool("mark_fetch", {"url": LARGE})
            t = text_of(r)
            check(
                "large fetch is an outline with anchors",
                not r.is_error and field(t, "mode") == "outline" and f"#{SECTION}" in body(t),
                t[:300],
            )

            r = await session.call_tool("mark_fetch", {"url": f"{LARGE}#{SECTION}"})
            t = text_of(r)
            check(
                "a section comes alone",
                not r.is_error
                and field(t, "mode") == "section"
                and body(t).startswith("## Phase 10")
                and "## Phase 9" not in body(t),
                t[:300],
            )

            r = await session.call_tool("mark_fetch", {"url": SMALL})
            t = text_of(r)
            check(
                "an unchanged re-read is one line",
                field(t, "status") == "unchanged" and len(body(t).strip().splitlines()) == 1,
                t[:300],
            )

            r = await session.call_tool("mark_fetch", {"url": f"{SMALL}#no-such-section"})
            t = text_of(r)
            check(
                "an unknown anchor is a tool error naming the nearest",
                r.is_error is True and "not found" in t and "nearest" in t,
                t[:300],
            )

            res = await session.read_resource(f"mark://local{SMALL}#owns")
            contents = res.contents[0]
            check(
                "a resource read gives the section as markdown",
                getattr(contents, "mime_type", None) == "text/markdown"
                and contents.text.startswith("## Owns"),
                str(contents)[:300],
            )

            prompts = {p.name for p in (await session.list_prompts()).prompts}
            check("prompts/list has orient, recall, whats-new", {"orient", "recall", "whats-new"} <= prompts, str(prompts))
            p = await session.get_prompt("orient", {"url": "/index.md"})
            ptext = " ".join(getattr(m.content, "text", "") for m in p.messages)
            check("the orient prompt names the document and the tools", "/index.md" in ptext and "mark_" in ptext, ptext[:300])


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        asyncio.run(asyncio.wait_for(run(sys.argv[1], sys.argv[2]), timeout=120))
    except Exception as e:  # a crash or hang of the session is a failure, with its reason
        check("the session ran to the end", False, f"{type(e).__name__}: {e}")
    passed = sum(1 for _, ok, _ in results if ok)
    failed = len(results) - passed
    print(f"python-sdk: {passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
