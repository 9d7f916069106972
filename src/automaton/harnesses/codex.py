"""OpenAI Codex CLI: `codex exec --json` (JSON lines on stdout).

Sources: developers.openai.com/codex/noninteractive and /codex/cli/reference;
github.com/openai/codex `codex-rs/exec/src/exec_events.rs` (events `thread.started`
{thread_id}, `turn.completed` {usage: input_tokens, cached_input_tokens, output_tokens},
`turn.failed` {error.message}, `item.completed` {item: {type: "agent_message", text}},
`error` {message}); openai/codex issue #5276 shows a real `turn.completed` line. Exit code
reflects session health, not the task: `turn.failed` has been seen with exit 0, so it is
treated as a failure here. Codex prints no USD cost: cost comes from
PRICES_PER_MTOK below for a known model, else None (the tick then counts max_tick_usd).

An `error` event is also Codex's retry notice ("Reconnecting... 1/5 (exceeded retry limit,
last status: 429 Too Many Requests)", codex-cli 0.171.0, recorded in tests/e2e/recorded): one
that a later `turn.completed` got past is no error of the run, and neither is a `turn.failed`
before it (one exec runs one turn: its last turn event decides).

Usage limits (`usage_limit`, reset times read by `_limits`): a failed run whose `turn.failed`
or `error` event, or stderr, says "You've hit your usage limit. … try again at 12:16 PM." (the
`error` + `turn.failed` pair quoted in link-assistant/hive-mind issue #719), "… or try again in
5 days 22 hours 11 minutes." (openai/codex #3899), "usage_limit_reached" with `resets_at`
(earendil-works/pi #4172) or "429 Too Many Requests". Only a failed run counts: Codex also
prints `error` events for retries that later succeed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from automaton.harnesses import HarnessRequest, HarnessResult, Invocation
from automaton.harnesses._cli import Parser, count, has_flag, json_lines, run_cli, tail
from automaton.harnesses._limits import detect
from automaton.harnesses._unavailable import Refusal

EXECUTABLE = "codex"

# Codex's "not logged in": `codex login status` prints "Not logged in"; `codex exec --json`
# without credentials retries, then ends with `turn.failed` {"message": "unexpected status 401
# Unauthorized: Missing bearer or basic authentication in header, …"} and exit 1 (reproduced
# with codex-cli 0.155.1 in github.com/Papillon6814/lita docs/pm/2026-09-22-codex-errors.md;
# older builds: "exceeded retry limit, last status: 401 Unauthorized", openai/codex #7362).
REFUSALS = (
    Refusal("codex is not logged in for this run",
            "log in as the user the ticks run as (codex login), or give the tick's environment CODEX_API_KEY",
            needles=("Not logged in", "401 Unauthorized")),
)

# Lines of a failed run's error events or stderr that mean a usage or rate limit (case-insensitive).
LIMIT_NEEDLES = ("usage limit", "usage_limit_reached", "rate limit", "rate_limit", "429 Too Many Requests")

# USD per million tokens: (input, cached input, output), from openai.com/api/pricing
# (published list prices, 2025). A model not listed gives cost None, never $0.
PRICES_PER_MTOK: dict[str, tuple[float, float, float]] = {
    "gpt-5": (1.25, 0.125, 10.0),
    "gpt-5-codex": (1.25, 0.125, 10.0),
    "gpt-5-mini": (0.25, 0.025, 2.0),
    "gpt-5-nano": (0.05, 0.005, 0.4),
}


# The flags by which the user's args choose Codex's own sandbox mode (or turn it off).
OWN_SANDBOX_FLAGS = ("-s", "--sandbox", "--dangerously-bypass-approvals-and-sandbox")


def invocation(req: HarnessRequest) -> Invocation:
    """argv: `codex exec --json [--sandbox MODE] [-m M] ARGS… -` with the prompt on stdin.

    exec's default sandbox is read-only; a tick must edit. Unless the user's args pick a
    sandbox, MODE is `danger-full-access` when automaton's kernel sandbox confines the run
    (`req.sandbox`), else `workspace-write`. Codex's own Linux sandbox cannot start inside
    automaton's: its helper mounts (bubblewrap, and `mkdir /tmp/codex-daemon-<uid>` first),
    which the namespace and Landlock layers refuse, so every shell command of a
    `workspace-write` run failed with "error building bubblewrap command: Read-only file
    system (os error 30)" (codex-cli 0.171.0, recorded in tests/e2e). Inside automaton's
    sandbox the kernel is what holds the writes either way.
    """
    argv = [EXECUTABLE, "exec", "--json"]
    if not has_flag(req.args, *OWN_SANDBOX_FLAGS):
        argv += ["--sandbox", "workspace-write" if req.sandbox is None else "danger-full-access"]
    if req.model:
        argv += ["--model", req.model]
    argv += [*req.args, "-"]
    return Invocation(argv=argv, stdin=req.prompt)


def price(model: str | None, tokens: dict[str, int]) -> float | None:
    """USD for `tokens` under `model`, or None when the model's price is not in the table."""
    if model is None or model not in PRICES_PER_MTOK:
        return None
    p_in, p_cached, p_out = PRICES_PER_MTOK[model]
    cached = tokens.get("cached_input_tokens", 0)
    fresh = max(tokens.get("input_tokens", 0) - cached, 0)  # cached is a subset of input
    return (fresh * p_in + cached * p_cached + tokens.get("output_tokens", 0) * p_out) / 1e6


# The events that end a `codex exec` run (one exec runs one turn): its output must end with one.
FINAL_EVENTS = ("turn.completed", "turn.failed")


def worked(events: list[dict[str, Any]]) -> bool:
    """Whether Codex's own events show model work: a completed turn, or an item started or
    completed other than Codex's own `error` notices (a command, a file change, a message).
    The 429 storm (`exceeded retry limit, last status: 429`, recorded in
    tests/e2e/recorded/codex-0.171.0/rate-limit-429.jsonl) shows none."""
    for ev in events:
        kind = ev.get("type")
        if kind == "turn.completed":
            return True
        item = ev.get("item")
        if kind in ("item.started", "item.completed", "item.updated") and \
                not (isinstance(item, dict) and item.get("type") == "error"):
            return True
    return False


TURNS = "turn events, one exec runs one turn"


def not_its_own(events: list[dict[str, Any]]) -> str | None:
    """Why Codex's events may end with another process's rather than its own (one line), or
    None: more than one final turn event (a real exec prints one), or none last."""
    finals = sum(1 for ev in events if ev.get("type") in FINAL_EVENTS)
    if finals > 1:
        return f"codex's output holds {finals} {TURNS}: its cost is unknown"
    if events and events[-1].get("type") not in FINAL_EVENTS:
        return "codex's output does not end with a turn event"
    return None


@dataclass
class _Read:
    """What a Codex event stream says, read event by event (`take`): the summed `tokens`, the
    last agent message `text`, the `error` line, what Codex itself `said` as errors (never a
    tool's output), and whether the turn failed."""

    tokens: dict[str, int] = field(default_factory=dict)
    text: str = ""
    error: str | None = None
    said: list[str] = field(default_factory=list)
    turn_failed: bool = False

    def take(self, ev: dict[str, Any]) -> None:
        kind = ev.get("type")
        if kind == "turn.completed" and isinstance(ev.get("usage"), dict):
            for key, value in ev["usage"].items():
                self.tokens[key] = self.tokens.get(key, 0) + count(value)
            # The last turn event decides: the turn got past the `error` events before it
            # (retries), and one exec runs one turn, so a `turn.failed` before it was not codex's.
            self.error, self.turn_failed = None, False
            self.said.clear()
        elif kind == "turn.failed":
            err = ev.get("error")
            msg = err.get("message") if isinstance(err, dict) else err
            self.error = f"codex turn failed: {msg}"
            self.said.append(str(msg))
            self.turn_failed = True
        elif kind == "error":
            self.said.append(str(ev.get("message")))
            if self.error is None:
                self.error = f"codex error: {ev.get('message')}"
        elif kind == "item.completed" and isinstance(ev.get("item"), dict):
            item = ev["item"]
            if item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                self.text = item["text"]


def parse_for(model: str | None) -> Parser:
    """A parser bound to `model` (for the price table). Output that does not end with a final
    turn event (`FINAL_EVENTS`) is not a finished run's, and output with more than one holds
    one that another process wrote on Codex's stdout (one exec runs one turn): either way its
    cost is unknown and no limit is read from its events (`not_its_own`). A usage limit whose
    events show no model work (`worked`) costs $0: Codex reports no cost and the provider
    refused the work."""

    def parse(stdout: str, stderr: str, code: int) -> HarnessResult:
        events = json_lines(stdout)
        got = _Read()
        for ev in events:
            got.take(ev)
        tokens, text, error, said, turn_failed = got.tokens, got.text, got.error, got.said, got.turn_failed
        if error is None and code != 0:
            error = f"codex exited {code}: {tail(stderr, 200)}".strip().rstrip(":")
        final = events[-1].get("type") if events else None
        why = not_its_own(events)
        if why is not None:
            return HarnessResult(code, text, None, tokens, why if error is None or TURNS in why else error)
        cost = price(model, tokens) if tokens and final == "turn.completed" else None
        failed = error is not None and (code != 0 or turn_failed)
        limit = detect([*reversed(said), tail(stderr)], LIMIT_NEEDLES) if failed else None
        if limit is not None and not worked(events):
            cost = 0.0
        return HarnessResult(code, text, cost, tokens, error, usage_limit=limit)

    return parse


def run(req: HarnessRequest) -> HarnessResult:
    """Run Codex in `req.cwd`; transcript is the JSONL event stream."""
    return run_cli(req, invocation(req), parse_for(req.model), REFUSALS, silent=True)
