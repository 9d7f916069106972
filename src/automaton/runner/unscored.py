"""`brakes.max_unscored`: a verifier that keeps giving no score halts the loop.

An unscored tick (the verify command printed nothing readable, crashed, timed out, could not be
exported …) never feeds the plateau window, so without this brake a broken verifier would let
the loop spend its whole allowance judged by nothing. The streak is read from the loop's log,
not kept in `.state.loop`: the `TICK` lines since the last approval (APPROVED, REARMED,
RESEALED or a re-seal), counted back to the last scored one. A tick that halted after its
commit (logged `halted=True`: harness unavailable, commit failed, drift, a protected path) is
not the verifier's failure and is skipped; so is a tick put off by a usage limit
(`TICK_DEFERRED`, no verdict at all).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from automaton.commands.halts import halt_now
from automaton.core.chain import LogLine
from automaton.core.loopconfig import LoopConfig
from automaton.store.looplog import MARK_EVENTS
from automaton.store.loops import Loop

if TYPE_CHECKING:  # Death is a Literal core.loopstate defines for the type checker only
    from automaton.core.loopstate import Death

REASON: Death = "verifier_failed"


def streak(lines: list[LogLine]) -> int:
    """Unscored ticks in a row at the end of `lines` (see the module docstring)."""
    count = 0
    for line in reversed(lines):
        if line.event in MARK_EVENTS or "tamper" in line.fields:
            break
        if line.event != "TICK" or line.fields.get("halted") == "True":
            continue
        if line.fields.get("score") not in (None, "null"):
            break
        count += 1
    return count


def detail(count: int, name: str) -> str:
    return (f"unscored: {count} ticks in a row without a score; check the verify command with"
            f" automaton --doctor --loop {name}")


def check(loop: Loop, cfg: LoopConfig) -> str | None:
    """After a tick's record: halt a running loop `verifier_failed` when its last
    `brakes.max_unscored` ticks (or more) had no score. Returns the halt (`reason: detail`) or
    None. A tampered or no longer running loop is left to the gate."""
    rec = loop.inspect()
    if rec.tamper or rec.state.status != "running":
        return None
    count = streak(rec.chain.lines)
    if count < cfg.brakes.max_unscored:
        return None
    why = detail(count, loop.name)
    halt_now(loop, REASON, why, "unscored", {"unscored": count})
    return f"{REASON}: {why}"
