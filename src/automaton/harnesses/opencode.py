"""OpenCode: `opencode run --format json MESSAGE` (JSON lines on stdout).

Sources: github.com/anomalyco/opencode `packages/opencode/src/cli/cmd/run.ts` and
`session/message-v2.ts` StepFinishPart: events `{type, timestamp,
sessionID, part?}` of types `step_start`, `text` (`part.text`), `tool_use`, `step_finish`
(`part.cost` in USD, `part.tokens` {input, output, reasoning, cache: {read, write}}), `error`.
The run's cost is the sum of every `step_finish.part.cost`. `--auto` is needed in current
versions for edits to be approved headless; it is the user's choice (harness.args).
"""

from __future__ import annotations

from typing import Any

from automaton.harnesses import HarnessRequest, HarnessResult, Invocation
from automaton.harnesses._cli import count, json_lines, number, run_cli, sub, tail

EXECUTABLE = "opencode"


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


def parse(stdout: str, stderr: str, code: int) -> HarnessResult:
    """Sum step costs and tokens; final text is the last `text` part; `error` events fail."""
    tokens: dict[str, int] = {}
    costs: list[float] = []
    text, error = "", None
    for ev in json_lines(stdout):
        part = sub(ev, "part")
        kind = ev.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            text = part["text"]
        elif kind == "step_finish":
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
    if error is None and code != 0:
        error = f"opencode exited {code}: {tail(stderr, 200)}".strip().rstrip(":")
    return HarnessResult(code, text, sum(costs) if costs else None, tokens, error)


def run(req: HarnessRequest) -> HarnessResult:
    """Run OpenCode in `req.cwd`; transcript is the JSONL event stream."""
    return run_cli(req, invocation(req), parse, silent=True)
