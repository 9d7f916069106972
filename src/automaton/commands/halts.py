"""Halting a loop from inside a tick: `halt_now` for a check made after the agent ran, and
`stop_schedule` for every halt.

The pre-tick halts are written by the gate (`commands.loop_gate.check`), under the same state
lock that read the facts. A tick's later checks (the commit drifted, a protected path changed,
the agent could not start, the verifier keeps giving no score) halt through `halt_now`, which
never overwrites what a human or the gate recorded meanwhile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from automaton import notify
from automaton.core import loopstate
from automaton.core.loopstate import Event, LogEvent
from automaton.store.loops import Loop

if TYPE_CHECKING:  # Death is a Literal core.loopstate defines for the type checker only
    from automaton.core.loopstate import Death


def halt_now(loop: Loop, reason: Death, detail: str, gate: str, fields: dict[str, object] | None = None) -> None:
    """Halt a running loop at once (`reason`: one of the five deaths) with `detail`, logged
    `HALT reason=… detail=… gate=…` plus `fields`; the schedule is disabled best-effort. A loop
    that is no longer running (halted meanwhile, paused, complete) keeps its status, and the
    line is logged as a WARNING instead, so nothing recorded is overwritten. A halt is sent to
    loop.json `notify` (a failure is logged `WARNING reason=notify_failed`)."""
    halted = False
    with loop.session() as s:
        extra = {"reason": reason, "detail": detail, "gate": gate, **(fields or {})}
        if s.rec.tamper or s.rec.state.status != "running":
            s.log(LogEvent(Event.WARNING, extra))
        else:
            new = s.commit(*loopstate.halt(s.rec.state, reason, detail, extra))
            halted = True
    if halted:
        stop_schedule(loop)
        notify.notify_logged(loop.project, loop.name, "halt",
                             notify.payload(loop.project, loop.name, "halt", new, reason=reason, gate=gate))


def stop_schedule(loop: Loop) -> str | None:
    """Stop the loop's OS unit firing after a halt: a warning line, or None when done or when no
    schedule is installed; never raises, logs nothing (the caller may hold the state lock)."""
    from automaton.commands.schedule import disable_best_effort  # lazy: only a halt needs the schedulers

    return disable_best_effort(loop.project, loop.name)
