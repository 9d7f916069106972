"""The tick's two ledger writes: the reservation before any agent runs, and the settling record.

`reserve` (`TICK_START n=… reserved_usd=…`): ONE locked update counts the iteration and charges
the tick's reservation (`reserved_usd`: `core.gates.reservation_micro`, `max_tick_usd` per role
that runs the agent) before any harness starts. `record` (`TICK n=…`): ONE locked update settles it to
the counted cost (`tick_cost`), with the verdict and the score window. A tick put off by the
agent's usage limit settles with `TICK_DEFERRED` instead (`runner.deferral`).
"""

from __future__ import annotations

import math
from functools import partial

from automaton.core import loopstate
from automaton.core.gates import reservation_micro
from automaton.core.loopconfig import LoopConfig
from automaton.core.loopstate import LoopState, micro_to_usd
from automaton.core.scores import score_field
from automaton.core.verdicts import Verdict
from automaton.harnesses import HarnessResult
from automaton.store.chainlog import utc_now
from automaton.store.loops import Loop


def reserved_usd(cfg: LoopConfig) -> float:
    """USD one tick of `cfg` reserves: its worst-case charge (`core.gates.reservation_micro`),
    which the budget gate checked that what is left covers."""
    return micro_to_usd(reservation_micro(cfg))


def reserve(loop: Loop, cfg: LoopConfig) -> LoopState:
    """Before any harness: ONE locked update counts the iteration and charges `reserved_usd`
    (logged `TICK_START n=… reserved_usd=…`, `core.loopstate.reserve`); returns the new state
    (its iteration_count is n)."""
    n = loop.read_state().iteration_count + 1
    new = loop.update_state(partial(loopstate.reserve, reserved_usd=reserved_usd(cfg), now=utc_now()))
    if new.iteration_count != n:  # impossible under the tick lock; never mis-number runs/<n>
        raise RuntimeError(f"loop {loop.name}: iteration moved under the tick lock ({n} -> {new.iteration_count})")
    return new


def tick_cost(costs: dict[str, float | None], max_tick_usd: float) -> tuple[float, bool]:
    """(USD counted against the budget, whether every role's cost was known).

    An unknown cost is never $0 (the budget gate counts on it): each role whose cost could not
    be read counts at `max_tick_usd`, on top of what the known roles reported, so a tick with a
    known expensive role and an unknown one is never counted below what it is known to have spent.
    A negative or non-finite reported cost is unknown too.
    """
    # A negative or non-finite "cost" is not a reading: counted as unknown (a refund would lower spent_usd).
    readable = [c for c in costs.values() if c is not None and math.isfinite(c) and c >= 0]
    unknown = len(costs) - len(readable)
    known_sum = sum(readable)
    return round(known_sum + unknown * max_tick_usd, 6), unknown == 0


def record(loop: Loop, cfg: LoopConfig, n: int, verdict: Verdict, counted: float, known: bool,
           complete: bool, impl: HarnessResult, commit_sha: str | None, *, halted: bool = False) -> LoopState:
    """Tick step 13 (docs/architecture.md, "Settle"): ONE locked read-modify-write settling the
    reservation (spent_usd += counted − `reserved_usd`; the iteration was counted by `reserve`),
    the verdict and the score window.
    `halted`: the tick halted after its commit (logged `halted=True`: its missing score is not
    the verifier's, see `runner.unscored`)."""
    window = cfg.brakes.score_plateau_window
    reserved = reserved_usd(cfg)
    # Never complete on a loop.json other than the one the tick started with, which its gates
    # checked against the seal (an agent without the sandbox may have rewritten it since): the
    # loop stays running and its next gate halts it `config_changed`, where a complete loop
    # would never be gated again.
    complete = complete and loop.config_sha256() == cfg.sha256

    score = score_field(verdict.score)
    fields: dict[str, object] = {"n": n, "score": score, "cost": f"{counted:.4f}",
                                 "cost_known": known, "complete": complete}
    if impl.timed_out:
        fields["timed_out"] = True
    if commit_sha:
        fields["commit"] = commit_sha[:12]
    if halted:
        fields["halted"] = True
    return loop.update_state(partial(loopstate.settle, counted_usd=counted, reserved_usd=reserved, verdict=verdict,
                                     window=window, complete=complete, now=utc_now(), fields=fields))
