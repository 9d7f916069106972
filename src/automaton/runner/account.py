"""The tick's two account-ledger writes: reserve before any agent runs, settle after.

`reserve` runs after the loop's gates passed and before the loop's own reservation
(`runner.ledger.reserve`): a reached account cap refuses the tick (`deferred: account_cap`,
naming the next window's start) before the loop's iteration is counted, and notifies once per
window for the whole account (`store.account`'s `CAP_REACHED` line says who was first).
`settle` writes the tick's real charge. A tick that dies between the two leaves its
reservation open, counted at its reserved amount (`core.account`).

`reservation_micro` is the one adapter to the per-loop reservation rule: the account reserves
exactly what the loop's gate reserves for the tick, so the two walls agree.

Which ledger: this machine's (`store.account`, the default), or the `Book` the tick was given:
a loop whose state lives in a git remote reserves in the remote's account ledger
(`commands.remote_account.Remote`), never in both, so a spend is counted once.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, Protocol

from automaton import notify
from automaton.core import gates
from automaton.core.account import REASON, Refusal, iso
from automaton.core.errors import AutomatonError, ExitCode
from automaton.core.loopconfig import LoopConfig
from automaton.core.loopstate import usd_to_micro
from automaton.core.outcome import Outcome
from automaton.store import account as store
from automaton.store.loops import Loop

ROLES_PER_TICK = 3  # implement, verify, orchestrate: each may run up to harness.timeout_s
TTL_MARGIN_S = 600  # seconds past the roles' timeouts for the runner's own steps (git, the export)

# The clock of the account windows (UTC epoch seconds). Tests replace it to move to the next
# window without sleeping; nothing an agent controls reaches it.
clock: Callable[[], float] = time.time


class Book(Protocol):
    """An account ledger a tick reserves in and settles to: `store.account`'s `reserve` and
    `settle` (micro-USD, UTC epoch seconds), with their errors."""

    def reserve(self, project: str, loop: str, micro: int, ttl_s: int, now: int) -> store.Reserved | store.Refused:
        """Reserve `micro` for a tick of `loop`, or the refusal of a reached cap."""

    def settle(self, rid: str, charged: int, now: int) -> None:
        """Settle reservation `rid` at `charged`."""


class _Local:
    """This machine's account ledger (`store.account`)."""

    def reserve(self, project: str, loop: str, micro: int, ttl_s: int, now: int) -> store.Reserved | store.Refused:
        return store.reserve(project, loop, micro, ttl_s, now)

    def settle(self, rid: str, charged: int, now: int) -> None:
        store.settle(rid, charged, now)


LOCAL: Book = _Local()


def ttl_s(cfg: LoopConfig) -> int:
    """Seconds after which an unsettled reservation of this loop is shown as abandoned: the
    longest a tick's roles may run, plus a margin."""
    return ROLES_PER_TICK * cfg.harness.timeout_s + TTL_MARGIN_S


def reserve(loop: Loop, cfg: LoopConfig, book: Book = LOCAL) -> store.Reserved | Outcome:
    """Reserve the tick's amount in the account ledger `book`; the tick's refusal Outcome (exit 1,
    data {ran: false, reason: "deferred", deferred: {reason: account_cap, until, caps}})
    when a cap is reached. Raises BadInput (exit 2) for a bad caps file or ledger."""
    now = int(clock())
    got = book.reserve(str(loop.project.root), loop.name, gates.reservation_micro(cfg), ttl_s(cfg), now)
    if isinstance(got, store.Reserved):
        return got
    return _refused(loop, got.refusal, got.first)


def _refused(loop: Loop, refusal: Refusal, first: bool) -> Outcome:
    until = iso(refusal.until)
    line = f"tick not run: deferred: {refusal.line()}"
    caps = [{"kind": u.window.kind, "cap_micro_usd": u.cap, "used_micro_usd": u.used} for u in refusal.reached]
    data: dict[str, Any] = {"ran": False, "reason": "deferred",
                            "deferred": {"reason": REASON, "until": until, "caps": caps}}
    warnings: list[str] = []
    if first:  # once per window for the account: the first loop to meet the cap tells its human
        body = notify.payload(loop.project, loop.name, "deferred", None, reason=REASON, detail=refusal.line(),
                              until=until, next_step="automaton --spend",
                              message=f"automaton: the account's spending cap is reached; every loop waits until"
                                      f" {until}")
        failed = notify.notify_logged(loop.project, loop.name, "deferred", body, once=f"{REASON}:{until}")
        if failed is not None:
            warnings.append(failed)
    return Outcome(ExitCode.REFUSED, [line], data, warnings)


def settle(held: store.Reserved, out: Outcome, book: Book = LOCAL) -> str | None:
    """Settle `held` at the tick's counted cost (`cost_usd` of its Outcome's data, USD; a tick
    that ran without one is charged its reservation). Returns None, or the warning line when
    the ledger could not be written: the tick has run and is recorded in its loop, and its
    reservation stays counted whole (never less than it cost), so this never raises."""
    cost = (out.data or {}).get("cost_usd")
    # Only a finite, non-negative number is a cost; anything else (a bool, NaN) counts whole.
    charged = held.micro
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and math.isfinite(cost) and cost >= 0:
        charged = usd_to_micro(float(cost))
    try:
        book.settle(held.rid, charged, int(clock()))
    except AutomatonError as exc:
        return f"account ledger not settled (the tick stays counted at its reservation): {exc.message}"
    return None
