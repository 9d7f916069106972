"""The OpenAI Chat Completions API (`POST /v1/chat/completions`, `stream: true`) as a scripted
server: what OpenCode speaks to a custom provider built on `@ai-sdk/openai-compatible`
(opencode.ai/docs/providers, "Custom provider").

Chunks (platform.openai.com/docs/api-reference/chat-streaming): `chat.completion.chunk` objects
whose `choices[0].delta` carries `content` or `tool_calls` [{index, id, type: "function",
function: {name, arguments}}], then `finish_reason` ("stop" / "tool_calls"), a last chunk with
`usage` {prompt_tokens, completion_tokens, total_tokens}, and `data: [DONE]`.

A step: `{"text": "..."}`, `{"calls": [{"name": "bash", "arguments": {...}}]}`, or
`{"status": 429, "body": {...}}`.
"""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.e2e.servers.base import Recorded, ScriptedServer, send_json, sse, start_sse

TITLE = "Scripted session"
USAGE = {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050}


def rate_limited() -> dict[str, Any]:
    """A 429 as the OpenAI API sends one."""
    return {"status": 429, "body": {"error": {"message": "Rate limit reached for requests", "type": "requests",
                                              "param": None, "code": "rate_limit_exceeded"}}}


class ChatServer(ScriptedServer):
    """Model calls that offer tools consume the script; OpenCode's helper calls without tools
    (the session title) get `TITLE` and consume nothing."""

    def accepts(self, rec: Recorded) -> bool:
        return rec.path.rstrip("/").endswith("/chat/completions") and isinstance(rec.body, dict) \
            and bool(rec.body.get("tools"))

    def get(self, h: BaseHTTPRequestHandler, rec: Recorded) -> None:
        if rec.path.rstrip("/").endswith("/chat/completions"):
            self.respond(h, {"text": TITLE, "usage": {"prompt_tokens": 0, "completion_tokens": 0,
                                                      "total_tokens": 0}}, rec)
        else:
            send_json(h, 404, {"error": {"message": f"not scripted: {rec.method} {rec.path}"}})

    def respond(self, h: BaseHTTPRequestHandler, step: dict[str, Any], rec: Recorded) -> None:
        if "status" in step:
            send_json(h, int(step["status"]), step.get("body", {}))
            return
        model = rec.body.get("model", "m") if isinstance(rec.body, dict) else "m"
        base = {"id": f"chatcmpl-{self.served}", "object": "chat.completion.chunk", "created": int(time.time()),
                "model": model}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> None:
            sse(h, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

        start_sse(h)
        chunk({"role": "assistant", "content": ""})
        if step.get("text"):
            chunk({"content": str(step["text"])})
        for i, call in enumerate(step.get("calls", [])):
            args = call["arguments"] if isinstance(call["arguments"], str) else json.dumps(call["arguments"])
            chunk({"tool_calls": [{"index": i, "id": f"call_{self.served}_{i}", "type": "function",
                                   "function": {"name": call["name"], "arguments": ""}}]})
            chunk({"tool_calls": [{"index": i, "function": {"arguments": args}}]})
        chunk({}, "tool_calls" if step.get("calls") else "stop")
        sse(h, {**base, "choices": [], "usage": step.get("usage", USAGE)})
        sse(h, "[DONE]")
