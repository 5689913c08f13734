#!/usr/bin/env python3
"""A scripted stand-in for the Anthropic Messages API, for driving the real
Claude Code CLI without a model (it stands in for the model, nothing else).

    python3 scripted_model.py --script steps.json --log requests.jsonl --port-file PORT

It listens on 127.0.0.1 (a free port, written to --port-file once it is
listening) and answers `POST /v1/messages` (streamed as SSE when asked) and
`POST /v1/messages/count_tokens`. Every request body is appended to --log as
one JSON line: {"n": N, "kind": "turn"|"compact"|"side", "body": {...}}.

The script is a JSON list of steps, played one per model turn (a request
that offers tools); when it runs out the model says "done" and ends:
  {"tool": "NAME", "input": {...}}        call one tool
  {"tools": [{"tool":..., "input":...}]}  call several in one turn
  {"text": "..."}                         answer in text and end the turn
  a call may add "from_last": {"PARAM": "REGEX"}: PARAM is set to the
                                          regex's first group in the last
                                          tool result (a cursor it named);
                                          the step is skipped when it is not
                                          there
  any step may add "input_tokens": N      the usage reported for that turn
                                          (a large N makes Claude Code
                                          compact its context: see below)
A compaction request (Claude Code asking for a summary of the conversation)
is answered with a short summary and does not consume a step; other requests
without tools (titles, topics) get a short text answer.
"""

import argparse
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMPACT_MARKERS = ("summary of the conversation", "create a detailed summary")


def last_user_text(body):
    """The text of the last user message (for telling a compaction apart)."""
    for message in reversed(body.get("messages", [])):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def last_tool_result(body):
    """The text of the last tool result in the conversation."""
    for message in reversed(body.get("messages", [])):
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in reversed(content):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, list):
                    return "".join(b.get("text", "") for b in inner if isinstance(b, dict))
                return inner or ""
    return ""


def resolve(call, body):
    """The call's input with its from_last parameters filled in, or None."""
    arguments = dict(call.get("input", {}))
    for param, pattern in call.get("from_last", {}).items():
        found = re.search(pattern, last_tool_result(body))
        if not found:
            return None
        arguments[param] = found.group(1)
    return arguments


def classify(body):
    text = last_user_text(body).lower()
    if any(m in text for m in COMPACT_MARKERS):
        return "compact"
    return "turn" if body.get("tools") else "side"


class Model:
    def __init__(self, steps, log_path):
        self.steps = steps
        self.step = 0
        self.count = 0
        self.lock = threading.Lock()
        self.log_path = log_path

    def answer(self, body):
        """(kind, content blocks, stop_reason, input_tokens) for one request."""
        kind = classify(body)
        with self.lock:
            self.count += 1
            with open(self.log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps({"n": self.count, "kind": kind, "body": body}) + "\n")
            if kind == "compact":
                summary = "<summary>The user asked to read documents with the mark tools; "
                summary += "the context was compacted, so no document text is held any more.</summary>"
                return kind, [{"type": "text", "text": summary}], "end_turn", 100
            if kind == "side":
                return kind, [{"type": "text", "text": "mark session"}], "end_turn", 10
            while True:
                step = self.steps[self.step] if self.step < len(self.steps) else {"text": "done"}
                self.step += 1
                if "text" in step:
                    break
                calls = [dict(c, input=resolve(c, body)) for c in (step.get("tools") or [step])]
                calls = [c for c in calls if c["input"] is not None]
                if calls:
                    break
            n = self.count
        tokens = step.get("input_tokens", 1000)
        if "text" in step:
            return kind, [{"type": "text", "text": step["text"]}], "end_turn", tokens
        blocks = [
            {"type": "tool_use", "id": f"toolu_{n:04d}_{i}", "name": c["tool"], "input": c.get("input", {})}
            for i, c in enumerate(calls)
        ]
        return kind, blocks, "tool_use", tokens


def sse(event, data):
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def stream_events(message_id, model, blocks, stop_reason, tokens):
    usage = {"input_tokens": tokens, "output_tokens": 0,
             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    yield sse("message_start", {"type": "message_start", "message": {
        "id": message_id, "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}})
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            yield sse("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {"type": "text", "text": ""}})
            yield sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "text_delta", "text": block["text"]}})
        else:
            start = dict(block, input={})
            yield sse("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": start})
            yield sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
        yield sse("content_block_stop", {"type": "content_block_stop", "index": i})
    yield sse("message_delta", {"type": "message_delta",
                                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                "usage": {"output_tokens": 10}})
    yield sse("message_stop", {"type": "message_stop"})


def make_handler(model_state):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply_json(self, status, obj):
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_HEAD(self):
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_GET(self):
            self.reply_json(200, {})

        def do_POST(self):
            length = int(self.headers.get("content-length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                return self.reply_json(400, {"type": "error", "error": {
                    "type": "invalid_request_error", "message": "not JSON"}})
            path = self.path.split("?")[0]
            if path.endswith("/count_tokens"):
                return self.reply_json(200, {"input_tokens": 1000})
            if not path.endswith("/v1/messages"):
                return self.reply_json(404, {"type": "error", "error": {
                    "type": "not_found_error", "message": path}})
            kind, blocks, stop_reason, tokens = model_state.answer(body)
            message_id = f"msg_{model_state.count:04d}"
            name = body.get("model", "claude-scripted")
            if not body.get("stream"):
                return self.reply_json(200, {
                    "id": message_id, "type": "message", "role": "assistant", "model": name,
                    "content": blocks, "stop_reason": stop_reason, "stop_sequence": None,
                    "usage": {"input_tokens": tokens, "output_tokens": 10}})
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            for chunk in stream_events(message_id, name, blocks, stop_reason, tokens):
                self.wfile.write(chunk)
            self.wfile.flush()
            self.close_connection = True

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--script", required=True, help="JSON file: the list of steps")
    parser.add_argument("--log", required=True, help="JSONL file every request is appended to")
    parser.add_argument("--port-file", required=True, help="written with the port once listening")
    args = parser.parse_args()
    with open(args.script, encoding="utf-8") as f:
        steps = json.load(f)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(Model(steps, args.log)))
    with open(args.port_file, "w", encoding="utf-8") as f:
        f.write(str(server.server_address[1]))
    print(f"scripted model on 127.0.0.1:{server.server_address[1]}", file=sys.stderr)
    server.serve_forever()


if __name__ == "__main__":
    main()
