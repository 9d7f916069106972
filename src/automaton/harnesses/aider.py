"""Aider scripted run: `aider --message PROMPT --yes-always --analytics-log FILE`.

Sources: github.com/Aider-AI/aider `aider/args.py` (`--message`, `--yes-always` — `--yes`
was renamed in commit d4fe0b18a —, `--no-auto-commits`, `--analytics-log`),
`aider/analytics.py` (the log file gets one JSON object per line, `{"event", "properties",
…}`, even with remote analytics off) and `aider/coders/base_coder.py` (`message_send`
properties `prompt_tokens`, `completion_tokens`, `total_tokens`, `cost`, `total_cost`).
The runner commits each tick itself, so aider's own commits are off.
"""

from __future__ import annotations

from pathlib import Path

from automaton.core import jsontext
from automaton.harnesses import HarnessRequest, HarnessResult, Invocation
from automaton.harnesses._cli import count, number, read_text, run_cli, sub, tail

EXECUTABLE = "aider"


def analytics_log(req: HarnessRequest) -> Path:
    """Where aider writes its analytics JSONL for this role: `runs/<n>/<role>.aider.jsonl`."""
    return req.run_dir / f"{req.role}.aider.jsonl"


def invocation(req: HarnessRequest) -> Invocation:
    """argv: `aider --message P --yes-always --no-auto-commits --analytics-log F [--model M] ARGS…`."""
    argv = [EXECUTABLE, "--message", req.prompt, "--yes-always", "--no-auto-commits",
            "--analytics-log", str(analytics_log(req))]
    if req.model:
        argv += ["--model", req.model]
    return Invocation(argv=[*argv, *req.args])


def cost_from_log(text: str) -> tuple[float | None, dict[str, int]]:
    """(USD, tokens) from the `message_send` events of an analytics log.

    USD is the sum of each event's `cost` (falling back to the last `total_cost`); None when
    no event carries a cost."""
    costs: list[float] = []
    last_total: float | None = None
    tokens: dict[str, int] = {}
    for line in text.splitlines():
        try:
            ev = jsontext.loads(line)
        except ValueError:
            continue
        if not isinstance(ev, dict) or ev.get("event") != "message_send":
            continue
        props = sub(ev, "properties")
        if (c := number(props.get("cost"))) is not None:
            costs.append(c)
        if (t := number(props.get("total_cost"))) is not None:
            last_total = t
        for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
            if key in props:
                tokens[key] = tokens.get(key, 0) + count(props[key])
    if costs:
        return sum(costs), tokens
    return last_total, tokens


def run(req: HarnessRequest) -> HarnessResult:
    """Run aider in `req.cwd`; final text is the tail of its stdout, cost from the log."""
    log = analytics_log(req)

    def parse(stdout: str, stderr: str, code: int) -> HarnessResult:
        cost, tokens = cost_from_log(read_text(log))
        error = None if code == 0 else f"aider exited {code}: {tail(stderr, 200)}".strip().rstrip(":")
        return HarnessResult(code, tail(stdout), cost, tokens, error)

    return run_cli(req, invocation(req), parse)
