"""Role prompts of a tick: the loop's prompt file plus the tick's context (see docs/architecture.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from automaton.core.errors import BadInput
from automaton.core.loopconfig import LoopConfig
from automaton.core.loopstate import Verdict
from automaton.core.scores import score_text

VERIFY_CONTRACT = (
    "End your reply with one JSON object on its own line: "
    '{"score": <0..1>, "passed": <true|false>, "done": <true|false>, "summary": "<one line>"}. '
    "A reply without a score counts as unscored, never as a pass."
)
ORCHESTRATE_CONTRACT = 'End your reply with one JSON object: {"decision": "continue" | "complete", "reason": "…"}.'


@dataclass(frozen=True)
class TickContext:
    """What every role prompt is told: task (or None), iteration (1-based), the brake
    allowance left (iterations, USD or None for a local harness), the last verdict (dict or
    None), the file scope patterns, and the worktree the agent works in."""

    task: str | None
    iteration: int
    iterations_left: int
    budget_left_usd: float | None
    last_verdict: Verdict | None
    file_scope: list[str]
    workdir: Path


def read_prompt(loop_dir: Path, name: str) -> str:
    """The prompt file `name` of the loop folder; BadInput naming it when unreadable."""
    path = loop_dir / name
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot read the role prompt ({exc.__class__.__name__}); "
                       "fix roles.*.prompt in loop.json") from None


def context_block(ctx: TickContext) -> str:
    """The '## Tick context' section appended to every role prompt."""
    if ctx.last_verdict is None:
        last = "none yet (first iteration)"
    else:
        score = ctx.last_verdict.score
        last = f"score {score_text(score)}: {ctx.last_verdict.summary}"
    budget = "local model (no USD budget)" if ctx.budget_left_usd is None else f"${ctx.budget_left_usd:.2f}"
    scope = ", ".join(ctx.file_scope) if ctx.file_scope else "(none)"
    lines = [
        "## Tick context (automaton)",
        f"- Task: {ctx.task or '(no task bound)'}",
        f"- Iteration: {ctx.iteration} ({ctx.iterations_left} left before a human must approve more)",
        f"- Budget left: {budget}",
        f"- Last verdict: {last}",
        f"- File scope (edit only these; anything else halts the loop): {scope}",
        f"- Working directory: {ctx.workdir}",
    ]
    return "\n".join(lines) + "\n"


def implement_prompt(cfg: LoopConfig, loop_dir: Path, ctx: TickContext) -> str:
    """The implement role's prompt file followed by the tick context."""
    body = read_prompt(loop_dir, cfg.roles.implement.prompt)
    return f"{body.rstrip()}\n\n{context_block(ctx)}"


def verify_prompt(cfg: LoopConfig, loop_dir: Path, ctx: TickContext) -> str:
    """The verify role's prompt (when verification is by an agent) plus the verdict contract."""
    name = cfg.roles.verify.prompt
    body = read_prompt(loop_dir, name) if name else "Check the work of the last iteration."
    return f"{body.rstrip()}\n\n{context_block(ctx)}\n{VERIFY_CONTRACT}\n"


def orchestrate_prompt(cfg: LoopConfig, loop_dir: Path, ctx: TickContext, verdict: dict[str, Any]) -> str:
    """The orchestrate role's prompt (non-builtin orchestration) plus this tick's verdict."""
    name = cfg.roles.orchestrate.prompt
    body = read_prompt(loop_dir, name) if name else "Decide whether the loop is done."
    return (f"{body.rstrip()}\n\n{context_block(ctx)}\nThis iteration's verdict: "
            f"{json.dumps(verdict)}\n\n{ORCHESTRATE_CONTRACT}\n")
