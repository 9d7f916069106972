"""What the pre-tick gate says beyond the brakes: a deferred account, and the next step.

`deferral_gate` runs after every brake passed: while the agent account of the loop's harness is
deferred on this machine (`store.deferrals`, set by a tick the agent's usage limit stopped) the
tick is refused, reason `deferred:<ISO UTC>`, without a halt. `next_step` is the one line every
refusal of `--check-gate` ends with: what a human does next (or that nothing needs doing).
"""

from __future__ import annotations

from dataclasses import replace

from automaton.core.gates import DEFERRED, FIRST_APPROVAL, WAITING, GateResult, gate_deferred
from automaton.core.loopconfig import LoopConfig
from automaton.core.loopstate import LoopState
from automaton.store import deferrals


def deferral_gate(harness: str, passed: GateResult) -> GateResult:
    """`passed` (every gate ok), or the refusal `deferred:<until>` while the account of
    `harness` on this machine is deferred (`store.deferrals`); warnings are kept."""
    found = deferrals.read(harness)
    if found is None or not found.active():
        return passed
    refused = gate_deferred(harness, found.until_iso, found.reason)
    return replace(refused, warnings=passed.warnings) if refused is not None else passed


PENDING_STEP = ("free the space (or fix the write) named above; the next tick records the halt and does not run,"
                " then a human runs automaton --approve --loop {loop}")


def pending_line(detail: str) -> str:
    """The view's line for a halt a tick could not record (`Loop.pending_io_halt`)."""
    return f"  pending halt: human_intervention: {detail} (a tick could not record it; the next tick does)"


def next_step(loop: str, reason: str, state: LoopState, task: str | None, config: LoopConfig | None) -> str:
    """The one thing a human (or nobody) does next after a refusal with `reason`."""
    if reason == "paused":
        return f"automaton --resume-loop {loop}"
    if reason == "complete":
        return f"automaton --rearm-loop {loop} (more work) or automaton --remove-loop {loop} (done)"
    if reason == WAITING:
        return f"a human reviews task {task} and signs it off: automaton --approve --task {task}"
    if reason == "budget_unknown":
        return (f"make the VRAM probe work (automaton --doctor --loop {loop} shows it); the next tick"
                " asks it again, nothing else to approve")
    if reason == "task_tampered":
        return f"a human checks task {task} and re-seals it: automaton --approve --task {task} --to PHASE"
    if reason == "task_untracked":
        return f"automaton --phase --task {task} (records the task's phase), then the next tick runs"
    if reason.startswith(f"{DEFERRED}:"):
        until, where = reason.partition(":")[2], deferrals.path(config.harness.name) if config else None
        sooner = f" (to retry sooner, remove {where})" if where is not None else ""
        return f"none: the first tick after {until} runs{sooner}"
    death = str(state.halt_reason or reason.removeprefix("halted:"))
    if death == "verifier_failed":
        return (f"check the verify command with automaton --doctor --loop {loop}, then a human runs"
                f" automaton --approve --loop {loop}")
    if str(state.halt_detail or "").startswith(FIRST_APPROVAL):
        return (f"a human reads the whole loop.json and approves it: automaton --approve --loop {loop}"
                " (no tick runs before)")
    if death in ("iterations_exhausted", "budget_exhausted"):
        return f"a human reviews the work and grants a fresh allowance: automaton --approve --loop {loop}"
    return f"a human fixes the cause above, then runs automaton --approve --loop {loop}"
