// Drives the real mark-mcp binary with the MCP Inspector CLI (pinned in
// run.sh, run with `npx --no-install`) against crates/mark-mcp/soul. Every call is
// its own session (the Inspector CLI runs one method per process), so there is
// no dedup check here; the Python check covers that.
//
// Usage: node inspector_check.mjs MARK_MCP_BINARY FIXTURE_ROOT
// Prints one line per check and a final `inspector: N passed, M failed`;
// exits 1 on any failure.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const [binary, root] = process.argv.slice(2);
if (!binary || !root) {
  console.error("usage: node inspector_check.mjs MARK_MCP_BINARY FIXTURE_ROOT");
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
// The Inspector keeps a server catalog; keep it out of $HOME.
const scratch = mkdtempSync(join(tmpdir(), "mark-inspector-"));
const env = { ...process.env, MCP_CATALOG_PATH: join(scratch, "mcp.json"), RUST_LOG: "warn" };

const SMALL = "/people/jonas-muller.md";
const LARGE = "/projects/lantern/roadmap.md";
const SECTION = "phase-10--alert-routing-by-ownership";

let passed = 0;
let failed = 0;
function check(name, ok, detail = "") {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? "ok  " : "FAIL"} inspector: ${name}${ok ? "" : `: ${String(detail).slice(0, 400)}`}`);
}

/** Runs one Inspector CLI method; its JSON output (or the failure). */
function inspector(...args) {
  try {
    const out = execFileSync(
      "npx",
      ["--no-install", "@modelcontextprotocol/inspector", "--cli", binary, "--root", root, ...args],
      { cwd: here, env, encoding: "utf8", timeout: 60_000, stdio: ["ignore", "pipe", "pipe"] },
    );
    return { json: JSON.parse(out) };
  } catch (e) {
    // A tool error exits non-zero but still prints the result on stdout.
    let json;
    try {
      json = JSON.parse(e.stdout ?? "");
    } catch {
      json = undefined;
    }
    return { json, status: e.status, error: `${e.message}\n${e.stdout ?? ""}${e.stderr ?? ""}` };
  }
}

function callText(result) {
  return (result.json?.content ?? []).map((c) => c.text ?? "").join("");
}
function field(text, key) {
  const head = text.split("\n\n")[0];
  const line = head.split("\n").find((l) => l.startsWith(`${key}: `));
  return line === undefined ? undefined : line.slice(key.length + 2);
}
function body(text) {
  const i = text.indexOf("\n\n");
  return i < 0 ? "" : text.slice(i + 2);
}
function tool(name, args) {
  const pairs = Object.entries(args).map(([k, v]) => `${k}=${v}`);
  return inspector("--method", "tools/call", "--tool-name", name, "--tool-arg", ...pairs);
}

try {
  const list = inspector("--method", "tools/list");
  const tools = list.json?.tools ?? [];
  const names = tools.map((t) => t.name);
  check(
    "tools/list has the read tools",
    ["mark_fetch", "mark_lookup", "mark_list", "mark_versions"].every((n) => names.includes(n)),
    list.error ?? names,
  );
  const bad = tools.filter((t) => t.inputSchema?.type !== "object").map((t) => t.name);
  check("every inputSchema has type object", tools.length > 0 && bad.length === 0, bad);

  let r = tool("mark_fetch", { url: SMALL });
  let t = callText(r);
  check(
    "small fetch comes whole",
    r.json?.isError === false && field(t, "mode") === "full" && body(t).includes("# Jonas Müller"),
    r.error ?? t,
  );

  r = tool("mark_fetch", { url: LARGE });
  t = callText(r);
  check(
    "large fetch is an outline with anchors",
    field(t, "mode") === "outline" && body(t).includes(`#${SECTION}`),
    r.error ?? t,
  );

  r = tool("mark_fetch", { url: `${LARGE}#${SECTION}` });
  t = callText(r);
  check(
    "a section comes alone",
    field(t, "mode") === "section" && body(t).startsWith("## Phase 10") && !body(t).includes("## Phase 9"),
    r.error ?? t,
  );

  r = tool("mark_fetch", { url: `${SMALL}#no-such-section` });
  t = callText(r);
  check(
    "an unknown anchor is a tool error naming the nearest",
    r.status !== 0 && r.json?.isError === true && t.includes("not found") && t.includes("nearest"),
    r.error ?? t,
  );

  r = inspector("--method", "resources/read", "--uri", `mark://local${SMALL}#owns`);
  const contents = r.json?.contents?.[0];
  check(
    "a resource read gives the section as markdown",
    contents?.mimeType === "text/markdown" && contents.text.startsWith("## Owns"),
    r.error ?? JSON.stringify(r.json),
  );

  r = inspector("--method", "prompts/get", "--prompt-name", "orient", "--prompt-args", "url=/index.md");
  const ptext = (r.json?.messages ?? []).map((m) => m.content?.text ?? "").join(" ");
  check(
    "the orient prompt names the document and the tools",
    ptext.includes("/index.md") && ptext.includes("mark_"),
    r.error ?? JSON.stringify(r.json),
  );
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

console.log(`inspector: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
