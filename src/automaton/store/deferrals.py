"""Per-account deferrals: an agent's usage limit holds every loop that uses the same agent here.

One file per harness, `~/.config/automaton/deferrals/<harness>.json`, written by the runner
when an agent reports a usage or rate limit, read by the gate of every loop (of every project
of this user on this machine) using that harness. The harness NAME is the account key: two
loops with harness `claude` are taken to share one account, even if one of them sets another
API key in its environment; a deferral then holds both until it ends (over-cautious, never a
wasted tick). The folder lies in `~/.config/automaton`, which the kernel sandbox hides from
every agent, so no agent can lift or extend a deferral.

File: {"harness": str, "until": UTC epoch seconds, "until_iso": ISO-8601 UTC, "streak":
consecutive deferrals (int >= 1), "source": "reported" (the agent said when) | "backoff",
"reason": the agent's line, "loop": the loop that hit it, "set_at": epoch seconds}.

When: the reset time the agent reported plus RESET_MARGIN_S, at most MAX_DEFER_S ahead; with
none (or one already past), a backoff of BACKOFF_S doubled per consecutive deferral up to
MAX_BACKOFF_S. A tick of that harness that started after the deferral was recorded and ends
without a limit clears the file (the streak starts over). A file that cannot be read holds
ticks until its mtime + MAX_BACKOFF_S (fail closed, bounded), and its `reason` says to remove
it to retry sooner.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import time
from datetime import UTC, datetime
from pathlib import Path

from automaton.core import jsontext
from automaton.core.errors import BadInput, one_line
from automaton.store.atomic import atomic_write
from automaton.store.locks import Busy, locked

BACKOFF_S = 15 * 60  # seconds of the first deferral without a reset time
MAX_BACKOFF_S = 6 * 3600  # seconds: the longest backoff
RESET_MARGIN_S = 60  # seconds added to a reported reset time (clocks differ; a limit lifts late)
MAX_DEFER_S = 8 * 86400  # seconds: the furthest ahead any deferral reaches (a weekly limit fits)
SOURCES = ("reported", "backoff")


@dataclasses.dataclass(frozen=True)
class Deferral:
    """A recorded deferral (see the module docstring); `until` in UTC epoch seconds."""

    harness: str
    until: float
    streak: int
    source: str
    reason: str
    loop: str | None = None
    set_at: float = 0.0

    @property
    def until_iso(self) -> str:
        return iso(self.until)

    def active(self, now: float | None = None) -> bool:
        return self.until > (time.time() if now is None else now)


def iso(epoch: float) -> str:
    """UTC epoch seconds as ISO-8601 UTC to the second: 2026-05-01T15:00:00Z."""
    return datetime.fromtimestamp(math.ceil(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def folder() -> Path:
    """`~/.config/automaton/deferrals`. BadInput (exit 2) when the home folder cannot be found."""
    try:
        return Path.home() / ".config" / "automaton" / "deferrals"
    except RuntimeError:
        raise BadInput("cannot find the home folder for automaton's deferrals: set HOME") from None


def path(harness: str) -> Path:
    """The deferral file of `harness` (a loop.json harness name: [a-z0-9_-], a safe file name)."""
    return folder() / f"{harness}.json"


def read(harness: str, now: float | None = None) -> Deferral | None:
    """The recorded deferral of `harness` (active or ended), None when there is none. An
    unreadable file is a deferral until its mtime + MAX_BACKOFF_S; an `until` further than
    MAX_DEFER_S ahead of `now` is cut to that."""
    at = time.time() if now is None else now
    where = path(harness)
    try:
        raw = where.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return _unreadable(where, harness, at, exc.strerror or str(exc))
    try:
        doc = jsontext.loads(raw)
        until, streak = float(doc["until"]), int(doc["streak"])
        source, reason = str(doc["source"]), str(doc["reason"])
        loop = doc.get("loop")
        if not math.isfinite(until) or streak < 1 or source not in SOURCES:
            raise ValueError("out of range")
    except (ValueError, TypeError, KeyError) as exc:
        return _unreadable(where, harness, at, f"not a deferral record ({exc})")
    return Deferral(harness, min(until, at + MAX_DEFER_S), streak, source, reason,
                    loop if isinstance(loop, str) else None, float(doc.get("set_at") or 0.0))


def _unreadable(where: Path, harness: str, now: float, why: str) -> Deferral:
    try:
        since = where.stat().st_mtime
    except OSError:
        since = now
    return Deferral(harness, min(since + MAX_BACKOFF_S, now + MAX_BACKOFF_S), 1, "backoff",
                    one_line(f"{where} cannot be read ({why}); remove it to retry sooner"))


def backoff_s(streak: int) -> float:
    """Seconds of the `streak`-th consecutive deferral without a reset time: 15 min, 30 min,
    1 h, 2 h, 4 h, then 6 h."""
    return float(min(BACKOFF_S * 2 ** max(0, min(streak, 32) - 1), MAX_BACKOFF_S))


def record(harness: str, reset_epoch: float | None, reason: str, loop: str | None,
           now: float | None = None) -> Deferral:
    """Write the deferral of `harness` after a usage limit and return it. `reset_epoch`: when the
    agent said the limit resets (UTC epoch seconds) or None; a time not after `now` is a backoff
    (a stale message is never "no limit"). The streak is one more than the recorded one."""
    at = time.time() if now is None else now
    where = path(harness)
    where.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with locked(where.with_suffix(".lock")):
        before = read(harness, at)
        streak = (before.streak + 1) if before is not None else 1
        if reset_epoch is not None and math.isfinite(reset_epoch) and reset_epoch > at:
            until, source = min(reset_epoch + RESET_MARGIN_S, at + MAX_DEFER_S), "reported"
        else:
            until, source = at + backoff_s(streak), "backoff"
        found = Deferral(harness, until, streak, source, one_line(reason)[:300], loop, at)
        doc = {"harness": harness, "until": until, "until_iso": found.until_iso, "streak": streak,
               "source": source, "reason": found.reason, "loop": loop, "set_at": at}
        atomic_write(where, (json.dumps(doc, indent=2) + "\n").encode("utf-8"))
    return found


def clear(harness: str, *, started_at: float) -> None:
    """A tick of `harness` that started at `started_at` (epoch seconds) ended without a usage
    limit: remove the deferral recorded before it started (one recorded meanwhile, by a tick
    of another loop that did hit the limit, stays). Best effort: never raises."""
    where = path(harness)
    if not os.path.lexists(where):
        return
    with contextlib.suppress(OSError, Busy), locked(where.with_suffix(".lock")):
        found = read(harness, started_at)
        if found is None or found.set_at <= started_at:
            where.unlink(missing_ok=True)
