"""The Gemini API (`generativelanguage.googleapis.com` v1beta) as a scripted server.

Gemini CLI takes a base URL from `GOOGLE_GEMINI_BASE_URL` (its auth type then is "gateway"; read
in @google/gemini-cli 0.61.0's bundle, `getAuthTypeFromEnv`) and any `GEMINI_API_KEY`. The turn
is `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`, answered with server-sent
events, each a `GenerateContentResponse` (ai.google.dev/api/generate-content): `candidates[0]`
`.content.parts` (`text`, or `functionCall` {name, args}), `finishReason`, and `usageMetadata`
{promptTokenCount, candidatesTokenCount, totalTokenCount} on the last chunk.

A step: `{"text": "..."}`, `{"calls": [{"name": "run_shell_command", "args": {...}}]}`, or
`{"status": 429, "body": {...}}` (`quota_exceeded` is the real RESOURCE_EXHAUSTED shape).
Non-streamed `:generateContent` calls (the CLI's own helpers) and `:countTokens` do not consume
steps: they get a fixed short answer.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.e2e.servers.base import Recorded, ScriptedServer, send_json, sse, start_sse

# What the CLI's model router (a non-streamed call with a JSON schema) is told: use the main model.
ROUTED = json.dumps({"reasoning": "scripted", "model_choice": "pro", "complexity_reasoning": "scripted",
                     "complexity_score": 90})
USAGE = {"promptTokenCount": 1000, "candidatesTokenCount": 50, "totalTokenCount": 1050}


def quota_exceeded(retry_s: int = 60) -> dict[str, Any]:
    """A 429 RESOURCE_EXHAUSTED as the Gemini API sends one (google.rpc.Status with QuotaFailure
    and RetryInfo details)."""
    return {"status": 429, "body": {"error": {
        "code": 429, "status": "RESOURCE_EXHAUSTED",
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
                "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                "quotaDimensions": {"location": "global", "model": "gemini-2.5-pro"}, "quotaValue": "50"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_s}s"}]}}}


class GeminiServer(ScriptedServer):
    def accepts(self, rec: Recorded) -> bool:
        return ":streamGenerateContent" in rec.path

    def get(self, h: BaseHTTPRequestHandler, rec: Recorded) -> None:
        if ":countTokens" in rec.path:
            send_json(h, 200, {"totalTokens": 100})
        elif ":generateContent" in rec.path:
            send_json(h, 200, _response({"text": ROUTED}, final=True))
        else:
            send_json(h, 404, {"error": {"code": 404, "message": f"not scripted: {rec.path}", "status": "NOT_FOUND"}})

    def respond(self, h: BaseHTTPRequestHandler, step: dict[str, Any], rec: Recorded) -> None:
        if "status" in step:
            send_json(h, int(step["status"]), step.get("body", {}))
            return
        start_sse(h)
        sse(h, _response(step, final=True))


def _response(step: dict[str, Any], *, final: bool) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if step.get("text"):
        parts.append({"text": str(step["text"])})
    for call in step.get("calls", []):
        parts.append({"functionCall": {"name": call["name"], "args": call.get("args", {})}})
    out: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0,
                                           **({"finishReason": "STOP"} if final else {})}],
                           "modelVersion": "gemini-2.5-pro"}
    if final:
        out["usageMetadata"] = step.get("usage", USAGE)
    return out
