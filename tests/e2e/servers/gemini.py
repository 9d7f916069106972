"""The Gemini API (`generativelanguage.googleapis.com` v1beta) as a scripted server.

Gemini CLI takes a base URL from `GOOGLE_GEMINI_BASE_URL` (its auth type then is "gateway"; read
in @google/gemini-cli 0.61.0's bundle, `getAuthTypeFromEnv`) and any `GEMINI_API_KEY`. The turn
is `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`, answered with server-sent
events, each a `GenerateContentResponse` (ai.google.dev/api/generate-content): `candidates[0]`
`.content.parts` (`text`, or `functionCall` {name, args}), `finishReason`, and `usageMetadata`
{promptTokenCount, candidatesTokenCount, totalTokenCount} on the last chunk.

A step: `{"text": "..."}`, `{"calls": [{"name": "run_shell_command", "args": {...}}]}`, or
`{"status": 429, "body": {...}}` (`quota_exceeded` is the real RESOURCE_EXHAUSTED shape; add
`"repeat": true` for a provider that keeps refusing).
Non-streamed `:generateContent` calls (the CLI's own helpers) and `:countTokens` do not consume
steps: they get a fixed short answer.
"""

from __future__ import annotations

import json
from typing import Any

from tests.e2e.servers.base import Answer, Request, ScriptedServer, json_answer, sse

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


def rate_limited(retry_s: int = 1) -> dict[str, Any]:
    """A 429 RESOURCE_EXHAUSTED for a per-minute quota (a rate limit, not the daily quota), with
    the RetryInfo the API sends."""
    step = quota_exceeded(retry_s)
    violation = step["body"]["error"]["details"][0]["violations"][0]
    violation.update(quotaId="GenerateRequestsPerMinutePerProjectPerModel-FreeTier", quotaValue="5",
                     quotaMetric="generativelanguage.googleapis.com/generate_content_free_tier_requests")
    return step


class GeminiServer(ScriptedServer):
    def scripted(self, request: Request) -> bool:
        return request.method == "POST" and ":streamGenerateContent" in request.path

    def side_answer(self, request: Request) -> Answer:
        if ":countTokens" in request.path:
            return json_answer(200, {"totalTokens": 100})
        if ":generateContent" in request.path:
            return json_answer(200, _response({"text": ROUTED}, final=True))
        return json_answer(404, {"error": {"code": 404, "message": f"not scripted: {request.path}",
                                           "status": "NOT_FOUND"}})

    def render(self, request: Request, step: dict[str, Any], index: int) -> Answer:
        if "status" in step:
            return json_answer(int(step["status"]), step.get("body", {}))
        return Answer(200, {"content-type": "text/event-stream"}, chunks=[sse(None, _response(step, final=True))])


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
