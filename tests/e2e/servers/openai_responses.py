"""The OpenAI Responses API (`POST /v1/responses`, `stream: true`) as a scripted server.

Event shapes: platform.openai.com/docs/api-reference/responses-streaming (response.created,
response.output_item.added/done, response.output_text.delta, response.function_call_arguments.delta,
response.completed with `usage`). Codex (a custom `model_providers.<id>` with
`wire_api = "responses"`) sends the whole conversation again, or only the new items with
`previous_response_id`: every response gets its own id, and both forms are answered alike.

A step is one model call:
- `{"text": "..."}`: an assistant message;
- `{"calls": [{"name": "shell", "arguments": {...}}], "text"?: "..."}`: function calls
  (`arguments` is sent as JSON text, in two deltas);
- `{"status": 429, "body": {...}, "headers"?: {...}}`: an HTTP error with that JSON body
  (the real shapes are in `rate_limited` and `usage_limit` below; add `"repeat": true` for a
  provider that keeps refusing, `base.ScriptedServer`);
- `"usage"`: the `usage` object of `response.completed` (default: `USAGE`).
"""

from __future__ import annotations

import json
import time
from typing import Any

from tests.e2e.servers.base import Answer, Request, ScriptedServer, json_answer, sse

SSE_HEADERS = {"content-type": "text/event-stream"}

USAGE = {"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 200}, "output_tokens": 300,
         "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 1500}


def rate_limited(message: str = "Rate limit reached for gpt-5 in organization org-test on tokens per min (TPM):"
                 " Limit 30000, Used 30000, Requested 1200. Please try again in 2s.") -> dict[str, Any]:
    """A 429 as the OpenAI API sends one (`error.type` "tokens", `code` "rate_limit_exceeded")."""
    return {"status": 429, "headers": {"retry-after": "0"},
            "body": {"error": {"message": message, "type": "tokens", "param": None, "code": "rate_limit_exceeded"}}}


def usage_limit(resets_in_s: int = 3600, plan: str = "plus") -> dict[str, Any]:
    """A 429 `usage_limit_reached` as ChatGPT-backed Codex receives it (`resets_at` epoch seconds,
    `resets_in_seconds`; codex-rs `ErrorResponse` / `UsageLimitReachedError`)."""
    return {"status": 429, "body": {"error": {
        "type": "usage_limit_reached", "message": "The usage limit has been reached", "plan_type": plan,
        "resets_at": int(time.time()) + resets_in_s, "resets_in_seconds": resets_in_s}}}


class ResponsesServer(ScriptedServer):
    """Answers `POST …/responses` from the script; anything else 404s (`side_answer`)."""

    def scripted(self, request: Request) -> bool:
        return request.method == "POST" and request.path.rstrip("/").endswith("/responses")

    def render(self, request: Request, step: dict[str, Any], index: int) -> Answer:
        if "status" in step:
            return json_answer(int(step["status"]), step.get("body", {}), step.get("headers"))
        rid = f"resp_{index:04d}"
        model = request.body.get("model", "gpt-5") if isinstance(request.body, dict) else "gpt-5"
        base = {"id": rid, "object": "response", "created_at": int(time.time()), "model": model}
        out: list[bytes] = [sse("response.created", {"type": "response.created",
                                                     "response": {**base, "status": "in_progress", "output": []}})]
        output: list[dict[str, Any]] = []
        if step.get("text"):
            output.append(_message(out, len(output), f"msg_{index}", str(step["text"])))
        for i, call in enumerate(step.get("calls", [])):
            output.append(_call(out, len(output), f"fc_{index}_{i}", call))
        done = {**base, "status": "completed", "output": output, "usage": step.get("usage", USAGE)}
        out.append(sse("response.completed", {"type": "response.completed", "response": done}))
        return Answer(200, SSE_HEADERS, chunks=out)


def _event(out: list[bytes], data: dict[str, Any]) -> None:
    out.append(sse(str(data["type"]), data))


def _message(out: list[bytes], index: int, item_id: str, text: str) -> dict[str, Any]:
    item = {"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []}
    _event(out, {"type": "response.output_item.added", "output_index": index, "item": item})
    part = {"type": "output_text", "text": "", "annotations": []}
    _event(out, {"type": "response.content_part.added", "item_id": item_id, "output_index": index,
                 "content_index": 0, "part": part})
    half = len(text) // 2
    for delta in (text[:half], text[half:]):
        _event(out, {"type": "response.output_text.delta", "item_id": item_id, "output_index": index,
                     "content_index": 0, "delta": delta})
    _event(out, {"type": "response.output_text.done", "item_id": item_id, "output_index": index,
                 "content_index": 0, "text": text})
    full = {**item, "status": "completed", "content": [{**part, "text": text}]}
    _event(out, {"type": "response.output_item.done", "output_index": index, "item": full})
    return full


def _call(out: list[bytes], index: int, item_id: str, call: dict[str, Any]) -> dict[str, Any]:
    args = call["arguments"] if isinstance(call["arguments"], str) else json.dumps(call["arguments"])
    item = {"type": "function_call", "id": item_id, "call_id": call.get("call_id", f"call_{item_id}"),
            "name": call["name"], "arguments": "", "status": "in_progress"}
    _event(out, {"type": "response.output_item.added", "output_index": index, "item": item})
    half = len(args) // 2
    for delta in (args[:half], args[half:]):
        _event(out, {"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": index,
                     "delta": delta})
    _event(out, {"type": "response.function_call_arguments.done", "item_id": item_id, "output_index": index,
                 "arguments": args})
    full = {**item, "arguments": args, "status": "completed"}
    _event(out, {"type": "response.output_item.done", "output_index": index, "item": full})
    return full
