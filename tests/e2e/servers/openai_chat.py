"""The OpenAI Chat Completions API (`POST /v1/chat/completions`, `stream: true`) as a scripted
server: what OpenCode speaks to a custom provider built on `@ai-sdk/openai-compatible`
(opencode.ai/docs/providers, "Custom provider").

Chunks (platform.openai.com/docs/api-reference/chat-streaming): `chat.completion.chunk` objects
whose `choices[0].delta` carries `content` or `tool_calls` [{index, id, type: "function",
function: {name, arguments}}], then `finish_reason` ("stop" / "tool_calls"), a last chunk with
`usage` {prompt_tokens, completion_tokens, total_tokens}, and `data: [DONE]`.

A step: `{"text": "..."}`, `{"calls": [{"name": "bash", "arguments": {...}}]}`, or
`{"status": 429, "body": {...}, "headers": {...}}` (`rate_limited`, `out_of_credits`).
"""

from __future__ import annotations

import json
import time
from typing import Any

from tests.e2e.servers.base import Answer, Request, ScriptedServer, json_answer, sse

TITLE = "Scripted session"
USAGE = {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050}


def rate_limited() -> dict[str, Any]:
    """A 429 as the OpenAI API sends one."""
    return {"status": 429, "body": {"error": {"message": "Rate limit reached for requests", "type": "requests",
                                              "param": None, "code": "rate_limit_exceeded"}}}


def out_of_credits() -> dict[str, Any]:
    """A 402 as OpenRouter sends one when the account's credits are used up
    (openrouter.ai/docs/api-reference/errors: 402 "Your account or API key has insufficient credits")."""
    return {"status": 402, "body": {"error": {"code": 402, "message": "Insufficient credits. Add more using"
                                              " https://openrouter.ai/settings/credits"}}}


class ChatServer(ScriptedServer):
    """Model calls that offer tools consume the script; OpenCode's helper calls without tools
    (the session title) get `TITLE` and consume nothing."""

    def scripted(self, request: Request) -> bool:
        return _chat(request) and isinstance(request.body, dict) and bool(request.body.get("tools"))

    def side_answer(self, request: Request) -> Answer:
        if _chat(request):
            return self.render(request, {"text": TITLE, "usage": {"prompt_tokens": 0, "completion_tokens": 0,
                                                                   "total_tokens": 0}}, 0)
        return json_answer(404, {"error": {"message": f"not scripted: {request.method} {request.path}"}})

    def render(self, request: Request, step: dict[str, Any], index: int) -> Answer:
        if "status" in step:
            return json_answer(int(step["status"]), step.get("body", {}), step.get("headers"))
        model = request.body.get("model", "m") if isinstance(request.body, dict) else "m"
        base = {"id": f"chatcmpl-{index}", "object": "chat.completion.chunk", "created": int(time.time()),
                "model": model}
        out: list[bytes] = []

        def chunk(delta: dict[str, Any], finish: str | None = None) -> None:
            out.append(sse(None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}))

        chunk({"role": "assistant", "content": ""})
        if step.get("text"):
            chunk({"content": str(step["text"])})
        for i, call in enumerate(step.get("calls", [])):
            args = call["arguments"] if isinstance(call["arguments"], str) else json.dumps(call["arguments"])
            chunk({"tool_calls": [{"index": i, "id": f"call_{index}_{i}", "type": "function",
                                   "function": {"name": call["name"], "arguments": ""}}]})
            chunk({"tool_calls": [{"index": i, "function": {"arguments": args}}]})
        chunk({}, "tool_calls" if step.get("calls") else "stop")
        out.append(sse(None, {**base, "choices": [], "usage": step.get("usage", USAGE)}))
        out.append(b"data: [DONE]\n\n")
        return Answer(200, {"content-type": "text/event-stream"}, chunks=out)


def _chat(request: Request) -> bool:
    return request.method == "POST" and request.path.rstrip("/").endswith("/chat/completions")
