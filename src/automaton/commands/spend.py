"""`--spend [--since DATE]`: what every loop of this user on this machine spent, by day, loop
and project, read from the account ledger (`store.account`), and the account caps beside it.

`account_view` is the account's caps and what each current window has used: `--loop-status`
and the dashboard show it beside the loop's own budget. Read-only: nothing here writes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from automaton.core import account as core
from automaton.core.account import iso, usd
from automaton.core.errors import AutomatonError, BadInput
from automaton.core.outcome import Outcome
from automaton.store import account as store
from automaton.store.layout import Project
from automaton.store.loops import ARCHIVE_DIR

DEFAULT_DAYS = 30  # days shown without --since


@dataclass(frozen=True)
class Source:
    """A ledger to show: the caps that hold (None: none set), its entries, and `where` it was
    read (the caps file's path, or a state remote's ref)."""

    caps: core.Caps | None
    entries: list[core.Entry]
    where: str


def _local() -> Source:
    """This machine's caps file and account ledger; raises as `store.account.read_caps` and
    `read_ledger`."""
    where = str(store.caps_path())
    return Source(store.read_caps(), store.read_ledger().entries, where)


def _remote(project: Project, remote: str) -> Source:
    """A state remote's account ledger and the caps that hold for a tick here (commands.remote_account)."""
    # lazy: --audit loads this module (commands.reports -> doctor_checks -> loop_status); the
    # remote's plumbing (remote_state, git.remote: 8 modules) is for --spend --state-remote only
    from automaton.commands import remote_account

    caps, entries, where = remote_account.spend_source(project, remote)
    return Source(caps, entries, where)


def _micro_usd(micro: int | None) -> float | None:
    return None if micro is None else micro / core.MICRO


def account_view(now: int | None = None, source: Source | None = None) -> dict[str, Any]:
    """The account caps at `now` (UTC epoch seconds; default: the clock), JSON-ready:
    {caps_file (path), caps_set (bool: the file exists), error (one line, or null),
     windows: [{kind ("day"|"week"|"month"), start, end (ISO UTC), cap_usd (USD|null: no cap),
                used_usd (USD: settled charges plus unsettled reservations made in the window),
                left_usd (USD|null), cap_micro_usd, used_micro_usd}],
     days: [{day (YYYY-MM-DD), used_usd}] (the last DEFAULT_DAYS days that have spend)}.
    Never raises: a caps file or ledger that cannot be read is `error` (the next tick refuses
    for it), with the windows empty. `source`: a ledger read already (a state remote's) instead
    of this machine's, `caps_file` then naming where it was read."""
    at = int(time.time()) if now is None else now
    view: dict[str, Any] = {"caps_file": None, "caps_set": False, "error": None, "windows": [], "days": []}
    try:
        if source is None:  # this machine's, step by step: what was read before an error is shown
            view["caps_file"] = str(store.caps_path())
            caps = store.read_caps()
            view["caps_set"] = caps is not None
            source = Source(caps, store.read_ledger().entries, view["caps_file"])
    except AutomatonError as exc:
        view["error"] = exc.message
        return view
    view["caps_file"], view["caps_set"] = source.where, source.caps is not None
    for use in core.uses(source.caps or core.Caps(), source.entries, at):
        view["windows"].append({"kind": use.window.kind, "start": iso(use.window.start), "end": iso(use.window.end),
                                "cap_usd": _micro_usd(use.cap), "used_usd": _micro_usd(use.used),
                                "left_usd": _micro_usd(use.left), "cap_micro_usd": use.cap,
                                "used_micro_usd": use.used})
    by_day: dict[str, int] = {}
    for row in core.spend_rows(source.entries, at - DEFAULT_DAYS * 86400):
        by_day[row.day] = by_day.get(row.day, 0) + row.micro
    view["days"] = [{"day": d, "used_usd": m / core.MICRO} for d, m in sorted(by_day.items())]
    return view


def account_line(view: dict[str, Any]) -> str:
    """One line of `account_view` for a person: `account caps: day $2.00 of $3.00 ($1.00 left),
    week $2.00 (no cap), month $2.00 (no cap)`; the error, or that no caps file is set."""
    if view["error"]:
        return f"account caps: cannot be read: {view['error']}"
    parts = []
    for w in view["windows"]:
        used = usd(w["used_micro_usd"])
        cap = w["cap_micro_usd"]
        parts.append(f"{w['kind']} {used} (no cap)" if cap is None else
                     f"{w['kind']} {used} of {usd(cap)} ({usd(max(0, cap - w['used_micro_usd']))} left)")
    head = "account caps" if view["caps_set"] else f"account (no caps: {view['caps_file']} absent)"
    return f"{head}: {', '.join(parts)}"


def _removed(project: str, loop: str) -> bool:
    """Whether `--remove-loop` took loop `loop` of the project at `project` down: no loop folder,
    and its archive (`.automaton/loops/.archive/<loop>-<UTC>/`) is there."""
    loops_dir = Path(project) / ".automaton" / "loops"
    if (loops_dir / loop).is_dir():
        return False
    try:
        return any(p.name.startswith(f"{loop}-") and p.is_dir() for p in (loops_dir / ARCHIVE_DIR).iterdir())
    except OSError:
        return False


def parse_since(text: str | None, now: int) -> int:
    """`--since DATE` (YYYY-MM-DD, a UTC day) as UTC epoch seconds; DEFAULT_DAYS days before
    `now` when None. BadInput (exit 2) naming the value otherwise."""
    if text is None:
        return now - DEFAULT_DAYS * 86400
    try:
        day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise BadInput(f"--since {text!r}: not a date; give a UTC day as YYYY-MM-DD (e.g. 2026-12-01)") from None
    return int(day.timestamp())


def spend(since: str | None = None, now: int | None = None, *, loop: str | None = None,
          remote: tuple[Project, str] | None = None) -> Outcome:
    """`--spend [--since DATE] [--loop NAME] [--json]`: spend by UTC day, then project and loop,
    from the account ledger (`loop`: only the rows of loops named NAME, in any project; `data.loop`
    says which, null for all). data: {since (YYYY-MM-DD), total_usd, total_micro_usd, rows: [{day,
    project (root path), loop, used_usd, micro_usd, ticks, unsettled (ticks whose reservation
    is still counted whole: running, or died unsettled), abandoned (those of them past their
    tick's timeout: the tick died)}], account (`account_view`)}.
    `remote` (project, REMOTE): the account ledger of that state remote (`--spend --state-remote
    REMOTE`, fetched: `commands.remote_account`) instead of this machine's.
    Exit 0; exit 2 (BadInput) for a bad DATE, a bad caps file, or a ledger that does not
    verify (CorruptState), each naming the value or the file; exit 1 when the remote cannot
    be reached."""
    at = int(time.time()) if now is None else now
    start = parse_since(since, at)
    # a bad caps file or ledger is the user's to hear about here, exit 2
    source = _local() if remote is None else _remote(*remote)
    caps = source.caps
    rows = [r for r in core.spend_rows(source.entries, start, at) if loop is None or r.loop == loop]
    total = sum(r.micro for r in rows)
    view = account_view(at, source)
    data: dict[str, Any] = {
        "since": core.day_of(start), "loop": loop, "total_usd": total / core.MICRO, "total_micro_usd": total,
        "rows": [{"day": r.day, "project": r.project, "loop": r.loop, "used_usd": r.micro / core.MICRO,
                  "micro_usd": r.micro, "ticks": r.ticks, "unsettled": r.unsettled, "abandoned": r.abandoned,
                  "removed": _removed(r.project, r.loop)}
                 for r in rows],
        "account": view,
    }
    of = "" if remote is None else f" in the account ledger of {remote[1]}"
    lines = [f"spend since {data['since']} (UTC days){'' if loop is None else f' of loop {loop}'}{of}: {usd(total)}"
             " in all"]
    lines.extend(_row_lines(rows))
    if not rows:
        lines.append("  no ticks recorded" + ("" if loop is None else f" for a loop named {loop}"))
    lines.append(f"  {account_line(view)}")
    if caps is None and remote is not None:
        lines.append(f"  to cap every runner of {remote[1]}: write the caps to {store.caps_path()}, then run"
                     f" automaton --publish-caps --state-remote {remote[1]}")
    elif caps is None:
        lines.append(f"  to cap every loop: write {{\"day_usd\": 3, \"week_usd\": 15, \"month_usd\": 50}}"
                     f" (any of them) to {store.caps_path()}")
    return Outcome(lines=lines, data=data)


def _row_lines(rows: list[core.SpendRow]) -> list[str]:
    """A day's total line before its first row, then one line per row (sorted by day)."""
    lines: list[str] = []
    day = None
    for r in rows:
        if r.day != day:
            day = r.day
            lines.append(f"  {day}: {usd(sum(x.micro for x in rows if x.day == day))}")
        held = f", {r.unsettled} unsettled: counted whole" if r.unsettled else ""
        held += f" ({r.abandoned} abandoned: the tick died)" if r.abandoned else ""
        name = f"{r.loop} (removed)" if _removed(r.project, r.loop) else r.loop
        lines.append(f"    {usd(r.micro):>12}  {name} in {r.project} ({r.ticks} tick{'s' * (r.ticks != 1)}{held})")
    return lines

