"""A tick put off by the agent's usage limit: no verdict, the iteration given back, only what
was spent charged, and every loop on the same agent account waiting until the limit resets.

When any role's harness reports a `UsageLimit` (the provider refused the work: Claude Code's
"usage limit reached", Codex's "You've hit your usage limit", Gemini's RESOURCE_EXHAUSTED; see
`automaton.harnesses._limits`), the tick skips the roles still to come and settles with ONE
locked update logged `TICK_DEFERRED n=… refund_usd=… cost=… until=…`: iteration_count goes back
down by this tick's one iteration and spent_usd by `refund_usd` = the reservation − the counted
cost (unknown costs counted at max_tick_usd, as for every tick), which `store.looplog` accepts
only as the closing of this tick's own `TICK_START`. Only a refusal that changed nothing is put
off: a tick whose worktree changed (a commit was made, the worktree is gone, or the change could
not be ruled out: `runner.aftercommit.After.changed`) is an ordinary tick, verified and counted,
a limited role's $0 counted as unknown cost (`Watch.unpriced`): otherwise an agent that prints
a usage limit after its edits would work for free and uncounted (red team). The account
deferral (`store.deferrals`) then holds the gate of every loop using the same harness on this
machine until the reset time the agent reported, or a backoff; the loop's notify hears
`deferred` once. The tick's folder is kept as `runs/<n>.deferred-<UTC>`, so
the next tick, which takes the same number, starts in an empty `runs/<n>`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from automaton import harnesses, notify
from automaton.core import loopstate
from automaton.core.errors import ExitCode
from automaton.core.loopconfig import LoopConfig
from automaton.core.loopstate import LoopState
from automaton.core.outcome import Outcome
from automaton.harnesses import HarnessRequest, HarnessResult, Invocation, UsageLimit, versions
from automaton.runner.ledger import reserved_usd, tick_cost
from automaton.store import deferrals
from automaton.store.chainlog import utc_now
from automaton.store.loops import Loop

TICK_DEFERRED = "TICK_DEFERRED"


class Watch:
    """A harness that runs `adapter` and keeps the first usage limit any of its runs reported
    (`limit`), so the tick can stop before the next role."""

    def __init__(self, adapter: harnesses.Harness) -> None:
        self.adapter = adapter
        self.limit: UsageLimit | None = None
        self.limited: set[str] = set()  # the roles whose run reported a usage limit

    def invocation(self, req: HarnessRequest) -> Invocation:
        return self.adapter.invocation(req)

    def run(self, req: HarnessRequest) -> HarnessResult:
        res = self.adapter.run(req)
        if res.usage_limit is not None:
            self.limited.add(req.role)
            if self.limit is None:
                self.limit = res.usage_limit
        return res

    def unpriced(self, costs: dict[str, float | None]) -> dict[str, float | None]:
        """For a tick that is counted: the roles that reported a usage limit with a cost of $0
        mapped to None (unknown, counted at max_tick_usd). A limited run's $0 rests on its own
        output showing no model work (`harnesses.claude.worked`, `harnesses.codex.worked`),
        which the agent can shape; a tick whose work changed the worktree did work."""
        return {role: None for role in self.limited if costs.get(role) == 0.0}


@dataclass(frozen=True)
class Deferred:
    """What `settle` did: the new state, the account deferral, the tick's kept folder, and
    the USD counted (`counted`, `known`: whether every role's cost was reported)."""

    state: LoopState
    account: deferrals.Deferral
    folder: Path
    counted: float
    known: bool

    @property
    def line(self) -> str:
        d = self.account
        how = "as the agent reported" if d.source == "reported" else f"backoff, deferral {d.streak} in a row"
        return f"deferred until {d.until_iso} ({how}): {d.reason}"


def settle(loop: Loop, cfg: LoopConfig, n: int, folder: Path, limit: UsageLimit,
           costs: dict[str, float | None], commit_sha: str | None) -> Deferred:
    """Record the account deferral, then ONE locked update closing this tick's reservation with
    `TICK_DEFERRED` (see the module docstring), notify `deferred`, and keep the tick's folder.
    The iteration is given back only down to the approval mark, spent_usd only down to its
    mark (an approval made while the tick ran is never undercut). Raises what
    `Loop.update_state` raises (StateTampered, CorruptState)."""
    reserved = reserved_usd(cfg)
    counted, known = tick_cost(costs, cfg.brakes.max_tick_usd)
    refund = max(0.0, reserved - counted)
    project, name = loop.project, loop.name
    account = deferrals.record(cfg.harness.name, limit.reset_epoch, limit.message, name)
    (folder / "cost.json").write_text(json.dumps({"by_role": costs, "known": known, "counted_usd": counted},
                                                 indent=2) + "\n", encoding="utf-8")
    (folder / "deferred.json").write_text(json.dumps(
        {"harness": cfg.harness.name, "until": account.until_iso, "source": account.source,
         "streak": account.streak, "message": limit.message, "reported_reset_epoch": limit.reset_epoch},
        indent=2) + "\n", encoding="utf-8")

    # refund_usd and cost exactly as the floats (repr round-trips): the ledger check compares them.
    fields: dict[str, object] = {"n": n, "refund_usd": repr(refund), "cost": repr(counted), "cost_known": known,
                                 "harness": cfg.harness.name, "until": account.until_iso,
                                 "source": account.source}
    if commit_sha:
        fields["commit"] = commit_sha[:12]
    new = loop.update_state(partial(loopstate.defer, refund_usd=refund, now=utc_now(), fields=fields))

    body = notify.payload(project, name, "deferred", new, reason="usage_limit", detail=limit.message,
                          until=account.until_iso, harness=cfg.harness.name)
    notify.notify_logged(project, name, "deferred", body, once=f"deferred:{account.until_iso}")
    return Deferred(new, account, _keep(folder), counted, known)


def _keep(folder: Path) -> Path:
    """Rename `runs/<n>` to `runs/<n>.deferred-<UTC>` (never a number: no later tick reuses or
    removes it); the folder itself when it cannot be renamed."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target, k = folder.with_name(f"{folder.name}.deferred-{stamp}"), 1
    while os.path.lexists(target):
        target, k = folder.with_name(f"{folder.name}.deferred-{stamp}-{k}"), k + 1
    try:
        folder.rename(target)
    except OSError:
        return folder
    return target


def outcome(d: Deferred, name: str, n: int, cfg: LoopConfig, commit: str | None, worktree: Path,
            warnings: list[str]) -> Outcome:
    """The tick's Outcome (exit 0: a tick ran and was put off); data as a tick's, with `verdict`
    None, `deferred` {until (ISO UTC), harness, source, streak, message} and
    `iteration_counted` False, and `agent_version` (the CLI's installed version, or None) as a
    tick's. Also written to the kept folder as tick.json."""
    a = d.account
    line = (f"tick {n} of loop {name}: deferred until {a.until_iso} ({cfg.harness.name} usage limit), cost"
            f" ${d.counted:.4f}{'' if d.known else ' (unknown costs counted at max_tick_usd)'}, iteration not"
            f" counted, status {d.state.status}")
    data: dict[str, Any] = {
        "ran": True, "skipped": None, "iteration": n, "iteration_counted": False, "verdict": None,
        "cost_usd": d.counted, "cost_known": d.known, "status": d.state.status, "halt": None,
        "deferred": {"until": a.until_iso, "harness": cfg.harness.name, "source": a.source, "streak": a.streak,
                     "message": a.reason},
        "worktree": str(worktree), "sandbox": cfg.sandbox, "commit": commit, "run_dir": str(d.folder),
        # The CLI that reported the limit, as installed (read from its package, never asked of it).
        "agent_version": versions.installed(cfg.harness.name)}
    (d.folder / "tick.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return Outcome(ExitCode.OK, [line], data, [*warnings, f"loop {name}: {d.line}"])
