"""OpenCode: `opencode run --format json MESSAGE` (JSON lines on stdout).

Sources: github.com/anomalyco/opencode `packages/opencode/src/cli/cmd/run.ts` and
`session/message-v2.ts` StepFinishPart: events `{type, timestamp,
sessionID, part?}` of types `step_start`, `text` (`part.text`), `tool_use`, `step_finish`
(`part.cost` in USD, `part.tokens` {input, output, reasoning, cache: {read, write}}), `error`.
The run's cost is the sum of every `step_finish.part.cost`. `--auto` is needed in current
versions for edits to be approved headless; it is the user's choice (harness.args).

Usage limits, as opencode 1.18.33 reports them (recorded in tests/e2e): a provider's answer it
does not retry ends the run with exit 1 and one `error` event, `error` {name: "APIError",
data: {message, statusCode, isRetryable, responseHeaders, responseBody}}; a usage limit is
such an event with status 402 or 429, or whose message or body names a limit (`LIMIT_NEEDLES`), the
reset read from its `retry-after` header (seconds or an HTTP date) or its text (`_limits`).
A 429 it may retry (`isRetryable`) it retries without end, printing nothing (measured: six
requests in 60 s): such a run ends at the tick's timeout, its cost unknown. A limit before
any `step_finish` costs $0 (the provider refused before any model work).
"""

from __future__ import annotations

from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

from automaton.harnesses import HarnessRequest, HarnessResult, Invocation, UsageLimit
from automaton.harnesses._cli import count, json_lines, number, run_cli, sub, tail
from automaton.harnesses._limits import detect

EXECUTABLE = "opencode"
# Lines of an `error` event that mean a usage or rate limit (case-insensitive): OpenAI's
# insufficient_quota and rate_limit_exceeded, Anthropic's rate_limit_error, OpenCode Zen's
# FreeUsageLimitError / GoUsageLimitError ("… usage limit reached. It will reset in …").
LIMIT_NEEDLES = ("usage limit", "rate limit", "rate_limit", "insufficient_quota", "exceeded your current quota",
                 "Insufficient credits", "Too Many Requests", "FreeUsageLimitError", "GoUsageLimitError",
                 "Free usage exceeded", "RESOURCE_EXHAUSTED")
# Statuses that are a limit whatever the message says: 429, and 402 (a provider's "Payment
# Required": credits or spend cap used up, e.g. OpenRouter's "Insufficient credits").
LIMIT_STATUSES = (402, 429)


def invocation(req: HarnessRequest) -> Invocation:
    """argv: `opencode run --format json [-m provider/model] ARGS… PROMPT`."""
    argv = [EXECUTABLE, "run", "--format", "json"]
    if req.model:
        argv += ["-m", req.model]
    return Invocation(argv=[*argv, *req.args, req.prompt])


def _error_text(err: Any) -> str:
    if isinstance(err, dict):
        data = sub(err, "data")
        return str(data.get("message") or err.get("message") or err.get("name") or err)
    return str(err)


def _retry_after(headers: dict[str, Any]) -> str | None:
    """A `retry-after` header (seconds, or an HTTP date) as a line `_limits` reads, or None."""
    value = headers.get("retry-after")
    if not isinstance(value, str) or not value.strip():
        return None
    if value.strip().replace(".", "", 1).isdigit():
        return f"retry after {value.strip()}s"
    try:
        when: datetime = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return f"resets_at: {int(when.timestamp())}" if when.tzinfo is not None else None


def _limit(err: Any) -> UsageLimit | None:
    """The usage limit one `error` event's `error` reports (see the module docstring), or None."""
    data = sub(err, "data") if isinstance(err, dict) else {}
    message = _error_text(err)
    body = data.get("responseBody") if isinstance(data.get("responseBody"), str) else ""
    said = [message, str(body)[:2000], _retry_after(sub(data, "responseHeaders")) or ""]
    status = data.get("statusCode")
    forced = f"opencode error {status}: {message}" if status in LIMIT_STATUSES else None
    return detect(said, LIMIT_NEEDLES, forced=forced)


def parse(stdout: str, stderr: str, code: int) -> HarnessResult:
    """Sum step costs and tokens; final text is the last `text` part; `error` events fail, and
    the last one is read for a usage limit."""
    tokens: dict[str, int] = {}
    costs: list[float] = []
    text, error = "", None
    limit: UsageLimit | None = None
    steps = 0
    for ev in json_lines(stdout):
        part = sub(ev, "part")
        kind = ev.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            text = part["text"]
        elif kind == "step_finish":
            steps += 1
            if (c := number(part.get("cost"))) is not None:
                costs.append(c)
            raw = sub(part, "tokens")
            for key, value in raw.items():
                if key == "cache" and isinstance(value, dict):
                    for kind_, n in value.items():
                        tokens[f"cache_{kind_}"] = tokens.get(f"cache_{kind_}", 0) + count(n)
                else:
                    tokens[key] = tokens.get(key, 0) + count(value)
        elif kind == "error":
            error = f"opencode error: {_error_text(ev.get('error'))}"
            limit = _limit(ev.get("error"))
    if error is None and code != 0:
        error = f"opencode exited {code}: {tail(stderr, 200)}".strip().rstrip(":")
    cost = sum(costs) if costs else None
    if limit is not None and steps == 0:
        cost = 0.0
    return HarnessResult(code, text, cost, tokens, error, usage_limit=limit)


def run(req: HarnessRequest) -> HarnessResult:
    """Run OpenCode in `req.cwd`; transcript is the JSONL event stream."""
    return run_cli(req, invocation(req), parse, silent=True)
