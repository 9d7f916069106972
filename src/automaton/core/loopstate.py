"""A loop's state as a typed, immutable value, and the pure transitions between states.

`LoopState` is `.state.loop` parsed and validated once, at the store boundary
(`core.loopconfig.validate_state` reads it, `state_json` writes it back; the file format never
changes: docs/architecture.md#loop-files). Everything else reads its attributes.

Money is integer micro-USD (1 USD = 1_000_000 micro-USD). The files keep USD as JSON numbers
rounded to 6 places, so `usd_to_micro` (nearest micro-USD, halves to even: the rule `round(x, 6)`
always applied to these files) and `micro_to_usd` are exact inverses on every value a file
holds. Amounts from outside (a harness's reported cost, loop.json's `max_tick_usd`) are
converted with the same rule, once, where they enter.

A transition takes a state and the facts it needs and returns `(new state, LogEvent)`: the
event (one of `Event`, the closed list of a loop log's events, so a misspelt event fails the
type checker) and its fields, plus how far the counters may go down on that line (a tick
giving back its reservation). The store (`store.loops.Loop.update_state`, `Session.commit`)
writes the new state and appends the event as one crash-safe unit. Transitions raise
ValueError for a state they cannot apply to (a bug in the caller, never bad input).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

TYPE_CHECKING = False  # the loop store's readers (--loop-list, a tick that gives up) never import typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Literal

    Status = Literal["running", "halted", "paused", "complete"]
    Death = Literal["iterations_exhausted", "budget_exhausted", "human_intervention", "drift_detected",
                    "verifier_failed"]

MICRO = 1_000_000  # micro-USD in one USD
SCHEMA_VERSION = 1


def usd_to_micro(usd: float) -> int:
    """USD (a finite float) as integer micro-USD: the nearest, halves to even (as `round(usd, 6)`)."""
    return round(usd * MICRO)


def micro_to_usd(micro: int) -> float:
    """Integer micro-USD as USD (float): the float nearest to the 6-place decimal, as written in files."""
    return micro / MICRO


class Event(Enum):
    """The closed list of events a loop's `.state.log` holds; any other event was written by someone else."""

    CREATED = "CREATED"
    TICK_START = "TICK_START"
    TICK = "TICK"
    TICK_DEFERRED = "TICK_DEFERRED"
    HALT = "HALT"
    APPROVED = "APPROVED"
    RESEALED = "RESEALED"
    PAUSED = "PAUSED"
    RESUMED = "RESUMED"
    WORKTREE = "WORKTREE"
    WARNING = "WARNING"
    SKIPPED = "SKIPPED"
    INSTALLED = "INSTALLED"
    UNINSTALLED = "UNINSTALLED"
    REARMED = "REARMED"
    REMOVED = "REMOVED"
    ROLLBACK_ACCEPTED = "ROLLBACK_ACCEPTED"


@dataclass(frozen=True)
class LogEvent:
    """One line to append to a loop's log: `event` with `fields` (the store adds the counters,
    the state token and the chain). `refund_micro_usd` (only on the TICK or TICK_DEFERRED that
    closes a TICK_START reservation): how far spent may go down on this line;
    `refund_iterations` (0 or 1, only on a TICK_DEFERRED): how far iteration_count may."""

    event: Event
    fields: Mapping[str, object] = field(default_factory=dict)
    refund_micro_usd: int = 0
    refund_iterations: int = 0


@dataclass(frozen=True)
class Verdict:
    """A verify role's verdict (`last_verdict` in `.state.loop`). score: fraction 0..1 or None
    (unscored: never 0, never a pass); passed: everything the verifier checked passed; done:
    the verifier says the loop's goal is reached; summary: one line; source: "junit" |
    "summary" | "stream" | "agent" | "none"; halt: the detail of the `human_intervention` halt
    this verify run calls for (`tests_removed: …`, `verdict_mismatch: …`, `holdout_changed: …`),
    None for none; not part of `to_dict`, never kept in `.state.loop`."""

    score: float | None
    passed: bool
    done: bool
    summary: str
    source: str = "none"
    halt: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of `last_verdict` (keys score, passed, done, summary, source)."""
        return {"score": self.score, "passed": self.passed, "done": self.done,
                "summary": self.summary, "source": self.source}


@dataclass(frozen=True)
class LoopState:
    """`.state.loop`, validated. Field names are the file's keys, except the two USD amounts,
    which are integer micro-USD here (`spent_micro_usd`, `spent_micro_usd_at_approval`; the file
    keeps `spent_usd`, `spent_usd_at_approval` in USD). Invariants (`problem` names the first
    broken one): status `halted` exactly when `halt_reason` is set; counters >= 0; the approval
    marks never above the counters."""

    schema_version: int
    name: str
    status: Status
    halt_reason: Death | None
    iteration_count: int
    resumed_count: int
    last_tick_at: str | None  # ISO-8601 UTC
    last_verdict: Verdict | None
    score_history: tuple[float, ...]  # the plateau window's scores, 0..1, oldest first
    current_task: str | None
    worktree_branch: str | None
    worktree_path: str | None
    started_at: str  # ISO-8601 UTC
    spent_micro_usd: int
    iterations_at_approval: int
    spent_micro_usd_at_approval: int
    accepted_drift: tuple[str, ...]  # `path@<blob>` entries (core.gates.accepted_entry)
    base_commit: str | None
    config_sha256: str  # SHA-256 hex of the sealed loop.json
    worktree_fallback: str | None
    halt_detail: str | None

    @property
    def spent_usd(self) -> float:
        """USD spent since the loop was created (for display and the log's `spent_usd=`)."""
        return micro_to_usd(self.spent_micro_usd)

    @property
    def spent_usd_at_approval(self) -> float:
        return micro_to_usd(self.spent_micro_usd_at_approval)

    def used(self) -> tuple[int, int]:
        """(iterations, micro-USD) spent since the last approval."""
        return (self.iteration_count - self.iterations_at_approval,
                self.spent_micro_usd - self.spent_micro_usd_at_approval)

    def problem(self) -> tuple[str, str] | None:
        """The first broken invariant as (key, what it must be), None when the state is sound."""
        if (self.status == "halted") != (self.halt_reason is not None):
            return "halt_reason", "set exactly when status is 'halted'"
        for key in ("iteration_count", "resumed_count", "iterations_at_approval", "spent_micro_usd",
                    "spent_micro_usd_at_approval"):
            if getattr(self, key) < 0:
                return key, "a number >= 0"
        if self.iterations_at_approval > self.iteration_count:
            return "iterations_at_approval", "at most iteration_count"
        if self.spent_micro_usd_at_approval > self.spent_micro_usd:
            return "spent_usd_at_approval", "at most spent_usd"
        return None


def initial_state(name: str, task: str | None, config_sha256: str, started_at: str) -> LoopState:
    """A new loop's state: status `running`, every counter 0, nothing recorded yet."""
    return LoopState(SCHEMA_VERSION, name, "running", None, 0, 0, None, None, (), task, None, None, started_at,
                     0, 0, 0, (), None, config_sha256, None, None)


# ---- transitions ----------------------------------------------------------------------------

def reserve(state: LoopState, reserved_usd: float, now: str) -> tuple[LoopState, LogEvent]:
    """Before a tick's agents run: count the iteration and charge `reserved_usd` (USD, loop.json
    `max_tick_usd`) up front; `TICK_START n=<the new iteration_count> reserved_usd=<repr>`.
    reserved_usd exactly as the float (repr round-trips): the log check gives back no more."""
    new = replace(state, iteration_count=state.iteration_count + 1,
                  spent_micro_usd=state.spent_micro_usd + usd_to_micro(reserved_usd), last_tick_at=now)
    return new, LogEvent(Event.TICK_START, {"n": new.iteration_count, "reserved_usd": repr(reserved_usd)})


def settle(state: LoopState, *, counted_usd: float, reserved_usd: float, verdict: Verdict, window: int,
           complete: bool, now: str, fields: Mapping[str, object]) -> tuple[LoopState, LogEvent]:
    """Close a tick's reservation: spent += counted − reserved (floored at 0), the verdict
    recorded, a score appended to the plateau window (its last `window` scores; an unscored
    verdict feeds nothing), and a running loop `complete` when `complete`. `TICK` with
    `fields`; gives back at most the reservation."""
    counted, reserved = usd_to_micro(counted_usd), usd_to_micro(reserved_usd)
    history = state.score_history
    if verdict.score is not None:
        history = (*history, verdict.score)[-window:]
    new = replace(state, spent_micro_usd=max(0, state.spent_micro_usd + counted - reserved), last_tick_at=now,
                  last_verdict=replace(verdict, halt=None), score_history=history)  # as the file keeps it
    if complete and new.status == "running":
        new = completed(new)
    return new, LogEvent(Event.TICK, dict(fields), refund_micro_usd=max(0, reserved - counted))


def completed(state: LoopState) -> LoopState:
    """A running loop that reached its goal: status `complete` (ValueError for any other status)."""
    if state.status != "running":
        raise ValueError(f"only a running loop completes, not a {state.status} one")
    return replace(state, status="complete")


def defer(state: LoopState, *, refund_usd: float, now: str,
          fields: Mapping[str, object]) -> tuple[LoopState, LogEvent]:
    """Close a tick put off by the agent's usage limit: its iteration given back (never below
    the approval mark) and `refund_usd` of its reservation (never below the spend mark: an
    approval made while the tick ran is never undercut). `TICK_DEFERRED` with `fields`."""
    refund = usd_to_micro(refund_usd)
    iterations = state.iteration_count - 1 if state.iteration_count - 1 >= state.iterations_at_approval \
        else state.iteration_count
    new = replace(state, iteration_count=iterations, last_tick_at=now,
                  spent_micro_usd=max(state.spent_micro_usd_at_approval, state.spent_micro_usd - refund))
    return new, LogEvent(Event.TICK_DEFERRED, dict(fields), refund_micro_usd=refund, refund_iterations=1)


def halt(state: LoopState, reason: Death, detail: str | None,
         fields: Mapping[str, object]) -> tuple[LoopState, LogEvent]:
    """Halt with one of the five deaths and `detail` (halt_detail); `HALT` with `fields`."""
    return (replace(state, status="halted", halt_reason=reason, halt_detail=detail),
            LogEvent(Event.HALT, dict(fields)))


def approve(state: LoopState, *, config_sha256: str, task: str | None, accepted: list[str], resumed: int,
            fields: Mapping[str, object]) -> tuple[LoopState, LogEvent]:
    """A human's approval: running with a fresh allowance (approval marks at the counters, the
    plateau window emptied), loop.json re-sealed (`config_sha256`), `resumed` (0 or 1) added to
    resumed_count, worktree_fallback cleared, current_task bound to loop.json's `task` when set,
    and `accepted` (`path@blob` entries) replacing the accepted_drift entries of the same paths
    (plain-path entries of older states are dropped). `APPROVED` with `fields`."""
    replaced = {e.rpartition("@")[0] for e in accepted}
    kept = (e for e in state.accepted_drift if "@" in e and e.rpartition("@")[0] not in replaced)
    new = replace(state, status="running", halt_reason=None, halt_detail=None,
                  resumed_count=state.resumed_count + resumed, iterations_at_approval=state.iteration_count,
                  spent_micro_usd_at_approval=state.spent_micro_usd, score_history=(),
                  config_sha256=config_sha256, worktree_fallback=None, current_task=task or state.current_task,
                  accepted_drift=tuple(sorted({*kept, *accepted})))
    return new, LogEvent(Event.APPROVED, dict(fields))


def rearm(state: LoopState, fields: Mapping[str, object]) -> tuple[LoopState, LogEvent]:
    """A complete loop running again with a fresh allowance (approval marks at the counters,
    the plateau window emptied); `REARMED` with `fields`. ValueError unless complete."""
    if state.status != "complete":
        raise ValueError(f"only a complete loop is re-armed, not a {state.status} one")
    new = replace(state, status="running", iterations_at_approval=state.iteration_count,
                  spent_micro_usd_at_approval=state.spent_micro_usd, score_history=())
    return new, LogEvent(Event.REARMED, dict(fields))


def set_status(state: LoopState, want: Status, fields: Mapping[str, object]) -> tuple[LoopState, LogEvent]:
    """Pause (`paused`, logged PAUSED) or resume (`running`, logged RESUMED) a loop that is
    neither halted nor complete (ValueError otherwise: only an approval clears a halt)."""
    if state.status in ("halted", "complete") or want not in ("paused", "running"):
        raise ValueError(f"a {state.status} loop is not paused or resumed")
    return replace(state, status=want), LogEvent(Event.PAUSED if want == "paused" else Event.RESUMED, dict(fields))


def reseal(state: LoopState, config_sha256: str, fields: Mapping[str, object]) -> tuple[LoopState, LogEvent]:
    """A human seals an edited loop.json; status and counters unchanged. `RESEALED` with `fields`."""
    return replace(state, config_sha256=config_sha256), LogEvent(Event.RESEALED, dict(fields))


def record_worktree(state: LoopState, *, path: str | None, branch: str | None, base_commit: str | None,
                    fallback: str | None, event: LogEvent) -> tuple[LoopState, LogEvent]:
    """Where the tick runs: the worktree (`WORKTREE`) or the main checkout with why
    (`WARNING reason=worktree_fallback`), as `event` says."""
    return (replace(state, worktree_path=path, worktree_branch=branch, base_commit=base_commit,
                    worktree_fallback=fallback), event)
