"""The Anthropic Messages API (`POST /v1/messages`) as a scripted server, streaming and not.

Shapes (docs.anthropic.com "Streaming Messages", "Errors"; checked against Claude Code 2.1.x):
a streamed answer is `message_start` {message: {id, type: "message", role, model, content: [],
stop_reason: null, usage}}, per block `content_block_start` (a `text` block, or a `tool_use`
block {id, name, input: {}}), `content_block_delta` (`text_delta` {text} or `input_json_delta`
{partial_json}), `content_block_stop`, then `message_delta` {delta: {stop_reason,
stop_sequence}, usage: {output_tokens}} and `message_stop`. Errors are
`{"type": "error", "error": {"type", "message"}, "request_id"}`: 429 `rate_limit_error` with a
`retry-after` header (seconds), 529 `overloaded_error`, 400 `invalid_request_error` for a
prompt that is too long and for a spend limit ("You have reached your specified API usage
limits. You will regain access on YYYY-MM-DD at HH:MM UTC."), and a subscription's usage limit
as a 429 with `anthropic-ratelimit-unified-status: rejected` and
`anthropic-ratelimit-unified-reset: <epoch>` (the headers Claude Code reads for "usage limit
reached|<epoch>").

Steps:
- `{"text": "..."}`: a final answer (stop_reason `end_turn`);
- `{"tool_use": {"name": "Write", "input": {...}}, "text": "optional text first"}` or
  `{"tool_uses": [{...}, {...}]}`: tool calls (stop_reason `tool_use`);
- `{"error": "rate_limit" | "overloaded" | "usage_limit" | "spend_limit" | "context_too_long",
  "retry_after": 1, "reset_epoch": 1790000000}`: an error answer;
- any step may carry `"usage": {"input_tokens": N, "output_tokens": M}`.

A subagent runs beside its parent (Claude Code 2.x launches `Agent` calls in the background), so
its turns have a lane of their own: a conversation whose first user message holds the text
`[lane:NAME]` (put it in the `Agent` prompt) plays `lanes[NAME]`.

Only requests that offer tools consume steps (the agent's own turns, a subagent's included):
Claude Code's side requests (a session title, a quota probe) get a short text, and
`/v1/messages/count_tokens` gets a token count.
"""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime
from typing import Any

from tests.e2e.servers.base import Answer, Request, ScriptedServer, json_answer, sse

MODEL = "claude-sonnet-4-5"
LANE = re.compile(r"\[lane:([A-Za-z0-9_-]+)\]")


def error_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_scripted"}


def error_answer(step: dict[str, Any]) -> Answer:
    """The provider's answer for an `error` step (see the module docstring)."""
    kind = step["error"]
    retry = str(step.get("retry_after", 1))
    reset = int(step.get("reset_epoch", time.time() + 3600))
    if kind == "rate_limit":
        return json_answer(429, error_body("rate_limit_error", "Number of request tokens has exceeded your"
                                           " per-minute rate limit"), {"retry-after": retry})
    if kind == "overloaded":
        return json_answer(529, error_body("overloaded_error", "Overloaded"))
    if kind == "usage_limit":
        headers = {"anthropic-ratelimit-unified-status": "rejected",
                   "anthropic-ratelimit-unified-reset": str(reset),
                   "anthropic-ratelimit-unified-representative-claim": "five_hour", "retry-after": retry}
        return json_answer(429, error_body("rate_limit_error", "This request would exceed your account's rate"
                                           " limit. Please try again later."), headers)
    if kind == "spend_limit":
        when = datetime.fromtimestamp(reset, UTC).strftime("%Y-%m-%d at %H:%M")
        return json_answer(400, error_body("invalid_request_error", "You have reached your specified API usage"
                                           f" limits. You will regain access on {when} UTC."))
    if kind == "context_too_long":
        return json_answer(400, error_body("invalid_request_error", "prompt is too long: 210000 tokens > 200000"
                                           " maximum"))
    raise ValueError(f"unknown error step {kind!r}")


class AnthropicServer(ScriptedServer):
    """`ANTHROPIC_BASE_URL` for Claude Code: answers `/v1/messages` from the script."""

    def scripted(self, request: Request) -> bool:
        body = request.body if isinstance(request.body, dict) else {}
        return (request.method == "POST" and request.path.split("?")[0] == "/v1/messages"
                and bool(body.get("tools")))

    def lane(self, request: Request) -> str:
        body = request.body if isinstance(request.body, dict) else {}
        messages = body.get("messages") or [{}]
        first = messages[0] if isinstance(messages[0], dict) else {}
        content = first.get("content")
        texts = [content] if isinstance(content, str) else [
            str(b.get("text", "")) for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
        found = next((m for t in texts for m in LANE.finditer(t)), None) if first.get("role") == "user" else None
        return found.group(1) if found else "main"

    def side_answer(self, request: Request) -> Answer:
        path = request.path.split("?")[0]
        if path == "/v1/messages/count_tokens":
            return json_answer(200, {"input_tokens": 100})
        if request.method == "POST" and path == "/v1/messages":
            return self.render(request, {"text": "Scripted session"}, -1)
        return json_answer(404, error_body("not_found_error", f"{request.method} {path}"))

    def render(self, request: Request, step: dict[str, Any], index: int) -> Answer:
        if "error" in step:
            return error_answer(step)
        body = request.body if isinstance(request.body, dict) else {}
        blocks = _blocks(step, index)
        usage = {"input_tokens": 10, "output_tokens": 5, **step.get("usage", {})}
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        message = {"id": f"msg_scripted_{index}", "type": "message", "role": "assistant",
                   "model": str(body.get("model") or MODEL), "content": blocks, "stop_reason": stop,
                   "stop_sequence": None,
                   "usage": {"input_tokens": usage["input_tokens"], "output_tokens": usage["output_tokens"],
                             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
        if not body.get("stream"):
            return json_answer(200, message, {"request-id": "req_scripted"})
        return Answer(200, {"content-type": "text/event-stream", "request-id": "req_scripted"},
                      chunks=_stream(message, usage))


def _blocks(step: dict[str, Any], index: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if step.get("text"):
        blocks.append({"type": "text", "text": str(step["text"])})
    calls = list(step.get("tool_uses") or ([step["tool_use"]] if "tool_use" in step else []))
    for n, call in enumerate(calls):
        blocks.append({"type": "tool_use", "id": call.get("id") or f"toolu_scripted_{index}_{n}",
                       "name": call["name"], "input": call.get("input", {})})
    return blocks or [{"type": "text", "text": "Done."}]


def _stream(message: dict[str, Any], usage: dict[str, int]) -> list[bytes]:
    start = {**message, "content": [], "stop_reason": None,
             "usage": {**message["usage"], "output_tokens": 1}}
    chunks = [sse("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            chunks.append(sse("content_block_start", {"type": "content_block_start", "index": i,
                                                      "content_block": {"type": "text", "text": ""}}))
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            chunks.append(sse("content_block_start", {"type": "content_block_start", "index": i,
                                                      "content_block": {**block, "input": {}}}))
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        chunks.append(sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}))
        chunks.append(sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    chunks.append(sse("message_delta", {"type": "message_delta",
                                        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                        "usage": {"output_tokens": usage["output_tokens"]}}))
    chunks.append(sse("message_stop", {"type": "message_stop"}))
    return chunks
