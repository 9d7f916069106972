"""Step 7 of a tick: the orchestrator's decision, and a task transition it asks for.

The builtin orchestrator completes the loop when the verdict is done or reaches target_score;
an orchestrate prompt decides otherwise, and a phase transition it asks for goes through the
same enforced task API a human uses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from automaton import harnesses
from automaton.commands.tasks import transition
from automaton.core.errors import AutomatonError
from automaton.core.loopconfig import LoopConfig
from automaton.core.verdicts import Verdict, json_objects
from automaton.runner import prompts
from automaton.store.layout import Project


def decide(cfg: LoopConfig, adapter: harnesses.Harness, request: Any, loop_dir: Path,
                 ctx: prompts.TickContext, verdict: Verdict, costs: dict[str, float | None]) -> tuple[bool, str]:
    """Step 7. Builtin: complete when the verdict is done or its score reaches target_score.
    Otherwise the orchestrate prompt's last JSON object with a `decision` key:
    `{"decision": "complete"|"continue", "transition": PHASE?}`; an unreadable decision
    continues (the brakes still bound the loop). A `transition` is applied to the loop's task
    later, through the enforced task API (see `apply_transition`)."""
    reached = verdict.score is not None and verdict.score >= cfg.brakes.target_score
    if verdict.source in ("junit", "summary", "stream") and not verdict.passed:
        # A verify command that failed (non-zero exit) never completes a loop, whatever its counts
        # say: the code under test runs in the verifier's process and can rewrite the JUnit file.
        reached = False
    if cfg.roles.orchestrate.builtin:
        return (verdict.done or reached), ("complete" if (verdict.done or reached) else "continue")
    res = adapter.run(request("orchestrate", prompts.orchestrate_prompt(cfg, loop_dir, ctx, verdict.to_dict())))
    costs["orchestrate"] = res.cost_usd
    decision = "continue"
    for obj in reversed(json_objects(res.final_text)):
        if obj.get("decision") in ("complete", "continue"):
            decision = str(obj["decision"])
            if isinstance(obj.get("transition"), str):
                decision += f" transition={obj['transition']}"
            break
    return decision.startswith("complete"), decision


def apply_transition(project: Project, task: str | None, decision: str) -> tuple[str | None, str | None]:
    """Apply an orchestrator's `transition=PHASE` to the loop's task through the same enforced
    task API a human uses (`commands.tasks.transition`: sign-offs, artifacts, forbidden files,
    a halted owner loop all apply). Returns (phase asked, result line); a refusal is recorded, never forced."""
    _, _, phase = decision.partition(" transition=")
    if not phase:
        return None, None
    if not task:
        return phase, "refused: the loop has no task to transition"

    try:
        out = transition(project, task, phase)
    except AutomatonError as exc:
        return phase, f"refused: {exc.message}"
    return phase, "; ".join(out.lines)
