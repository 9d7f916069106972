"""A loop's `.state.log` read as a ledger: the counters each line carries, the checks that a
hash-valid log was still written by automaton, and a state rebuilt from it.

Every state line carries the counters (`iterations`, `spent_usd`, `iterations_at_approval`,
`spent_usd_at_approval`, `resumed`). They never go down, with two bounded exceptions, both
closing the reservation a tick made up front (`TICK_START n=… reserved_usd=…`): the `TICK n=…`
line may give back at most that reservation, and a `TICK_DEFERRED n=… refund_usd=… cost=…`
line (the tick was put off by the agent's usage limit) gives back that tick's iteration and
`refund_usd`, which is at most the reservation minus the `cost` it charges; nothing else.
Approval marks move only on APPROVED, REARMED, RESEALED and re-seal lines (a line with a
`tamper` field). The events form a closed list; REMOVED is written only as the last line of a
log that `--remove-loop` archived.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

from automaton.core import jsontext
from automaton.core.chain import Lines, LogLine
from automaton.core.errors import BadInput
from automaton.core.loopconfig import COMMIT_HEX
from automaton.core.loopstate import Event, LoopState, initial_state, usd_to_micro
from automaton.core.names import LoopName, TaskRef
from automaton.store.chainlog import Verified, save_checkpoint, utc_now

STATE_FILE = ".state.loop"
LOG_FILE = ".state.log"
# state key -> log field: written on every state line so the log can rebuild the counters.
COUNTERS = {"iteration_count": "iterations", "spent_usd": "spent_usd", "iterations_at_approval":
            "iterations_at_approval", "spent_usd_at_approval": "spent_usd_at_approval", "resumed_count": "resumed"}
_COUNTS = ("iteration_count", "spent_usd", "resumed_count")  # only grow (bar a tick's refund)
_MARKS = ("iterations_at_approval", "spent_usd_at_approval")  # set by approvals and re-seals
# The closed list of events this code writes to a loop log (docs/architecture.md#loop-files);
# any other event in a log was written by someone else.
EVENTS = frozenset(e.value for e in Event)
# The events that close a TICK_START reservation.
CLOSING = ("TICK", "TICK_DEFERRED")
# Human acts that hand out a fresh allowance: the approval marks may move on these lines.
MARK_EVENTS = ("APPROVED", "RESEALED", "REARMED")
EPS_USD = 1e-6  # USD rounding slack (spent_usd is rounded to 6 places)


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def counters(state: LoopState) -> dict[str, float]:
    """The counters of `state` as the log carries them (state key -> value; USD as floats)."""
    return {"iteration_count": state.iteration_count, "spent_usd": state.spent_usd,
            "iterations_at_approval": state.iterations_at_approval,
            "spent_usd_at_approval": state.spent_usd_at_approval, "resumed_count": state.resumed_count}


def with_counters(state: LoopState, values: dict[str, float]) -> LoopState:
    """`state` with the counters in `values` (state key -> value as logged) replaced."""
    def pick(key: str, now: float) -> float:
        return values.get(key, now)

    return replace(state, iteration_count=int(pick("iteration_count", state.iteration_count)),
                   resumed_count=int(pick("resumed_count", state.resumed_count)),
                   iterations_at_approval=int(pick("iterations_at_approval", state.iterations_at_approval)),
                   spent_micro_usd=usd_to_micro(pick("spent_usd", state.spent_usd)),
                   spent_micro_usd_at_approval=usd_to_micro(pick("spent_usd_at_approval",
                                                                 state.spent_usd_at_approval)))


def logged_counters(line: LogLine) -> dict[str, float]:
    """The counters a log line carries (state key -> value); {} for a line without them."""
    out: dict[str, float] = {}
    for key, log_key in COUNTERS.items():
        value = _number(line.fields.get(log_key))
        if value is not None:
            out[key] = value
    return out


def _is_reseal(line: LogLine) -> bool:
    """A line that re-sealed a tampered state (its counters are the maximum of everything before)."""
    return "tamper" in line.fields and line.event in ("HALT", "APPROVED")


def log_finding(lines: list[LogLine], log_file: Path) -> str:
    """Why a hash-valid loop log was still not written by automaton ("" when it was).

    Checked from the last re-seal on (what came before was vouched for by it): every event is
    one of EVENTS; the growing counters never go down from one line to the next, except on the
    line that closes an open `TICK_START` of the same `n` (see `_give_back`); the approval
    marks never go down except on MARK_EVENTS / re-seal lines; a re-seal line's growing
    counters are at least the highest value logged before it.
    """
    memo_key = str(log_file)
    seen = _FOLDS.pop(memo_key, None)
    high: dict[str, float] = {}
    if seen is not None and _extends(seen[0], lines):
        # Only the lines appended since this process checked the same line objects (the chain
        # reader hands out the lines it verified before: `store.chainlog`) are folded in; a
        # new re-seal among them moves the start, so that is checked from scratch.
        done, start, prev, reserved = len(seen[0]), seen[1], seen[2], seen[3]
    elif (restored := _restored(lines)) is not None:  # another process folded the checkpoint's prefix
        done, start, prev, reserved = restored
    else:
        start = max((i for i, line in enumerate(lines) if _is_reseal(line)), default=0)
        for line in lines[:start]:
            for key, value in logged_counters(line).items():
                high[key] = max(high.get(key, value), value)
        done, prev, reserved = start, {}, {}  # reserved: n -> (reserved_usd, TICK_START's counters)
    found = _fold(lines, log_file, done, start, high, prev, reserved)
    if not found:
        _FOLDS[memo_key] = (lines.lazy_copy() if isinstance(lines, Lines) else list(lines), start, prev, reserved)
        while len(_FOLDS) > _FOLDS_SIZE:
            _FOLDS.pop(next(iter(_FOLDS), memo_key), None)
        save_checkpoint(lines, json.dumps([start, prev, reserved], separators=(",", ":"), allow_nan=False))
    return found


_Reserved = dict[str, tuple[float, dict[str, float]]]  # n -> (reserved_usd, TICK_START's counters)


def _restored(lines: list[LogLine]) -> tuple[int, int, dict[str, float], _Reserved] | None:
    """(lines folded, last re-seal's index, counters, open reservations) from the keyed checkpoint
    `lines` were read from, None without one (or with a re-seal after it: checked from scratch)."""
    seen = lines.mark if isinstance(lines, Lines) else None
    start_mark = seen.start if isinstance(seen, Verified) else None
    if start_mark is None or not start_mark.fold or start_mark.count > len(lines):
        return None
    if any(_is_reseal(lines[i]) for i in range(start_mark.count, len(lines))):
        return None
    try:
        start, prev, reserved = jsontext.loads(start_mark.fold)
        prev = {str(k): float(v) for k, v in prev.items()}
        reserved = {str(n): (float(r[0]), {str(k): float(v) for k, v in r[1].items()}) for n, r in reserved.items()}
        return start_mark.count, int(start), prev, reserved
    except (ValueError, TypeError, AttributeError, IndexError):  # keyed, so ours; still checked, never a crash
        return None


# log_file -> (the lines last found clean, the index of their last re-seal, the fold's counters
# after them, its open reservations): a tick checks its loop's log on every read of the state.
_FOLDS: dict[str, tuple[list[LogLine], int, dict[str, float], dict[str, tuple[float, dict[str, float]]]]] = {}
_FOLDS_SIZE = 8


def _extends(old: list[LogLine], lines: list[LogLine]) -> bool:
    """`lines` starts with the very objects of `old` and holds no re-seal after them."""
    if isinstance(old, Lines) and isinstance(lines, Lines):
        same = old.shares_start(lines)
    else:
        same = len(old) <= len(lines) and all(a is b for a, b in zip(old, lines[:len(old)], strict=True))
    return same and not any(_is_reseal(lines[i]) for i in range(len(old), len(lines)))


def _fold(lines: list[LogLine], log_file: Path, done: int, start: int, high: dict[str, float],
          prev: dict[str, float], reserved: dict[str, tuple[float, dict[str, float]]]) -> str:
    """`log_finding` of `lines[done:]`, with the fold's state after `lines[:done]` (`prev`,
    `reserved`, updated in place) and the last re-seal at index `start` (`high`: the highest
    counters before it)."""
    for n, line in enumerate(lines[done:], start=done + 1):
        where = f"{log_file}: line {n} ({line.event})"
        if line.event not in EVENTS:
            return f"{where}: unknown event: it was not written by automaton"
        values = logged_counters(line)
        if line.event == "TICK_START":
            reserved[line.fields.get("n", "")] = (_number(line.fields.get("reserved_usd")) or 0.0, values)
        held = reserved.pop(line.fields.get("n", ""), None) if line.event in CLOSING else None
        back = _give_back(line, held)
        if isinstance(back, str):
            return f"{where}: {back}"
        floor = high if n == start + 1 and _is_reseal(line) else prev
        for key in (*_COUNTS, *_MARKS):
            if key not in values or key not in floor:
                continue
            if key in _MARKS and (line.event in MARK_EVENTS or _is_reseal(line)):
                continue
            slack = back.get(key, 0.0) + EPS_USD
            lowest = [floor[key] - slack] + ([held[1][key] - slack] if held is not None and key in held[1] else [])
            if values[key] < max(lowest):
                return (f"{where}: {COUNTERS[key]} goes down ({floor[key]:g} -> {values[key]:g}):"
                        " counters are never lowered, the log was forged")
        prev.update(values)
    return ""


def _give_back(line: LogLine, held: tuple[float, dict[str, float]] | None) -> dict[str, float] | str:
    """How far each counter may go down on `line` (state key -> amount), or why the line is forged.

    `held`: the open reservation `line` closes ((reserved_usd, the TICK_START's counters)), None
    when it closes none: then nothing may go down. A `TICK` gives back at most `reserved_usd` of
    spent_usd. A `TICK_DEFERRED` gives back exactly one iteration (that tick's) and its
    `refund_usd`, which must be a number in 0..reserved_usd − `cost` (the cost it charges, a
    number >= 0); the floors are also checked against its own TICK_START's counters."""
    if held is None:
        return {}
    reserved_usd = held[0]
    if line.event == "TICK":
        return {"spent_usd": reserved_usd}
    refund, cost = _number(line.fields.get("refund_usd")), _number(line.fields.get("cost"))
    if refund is None or cost is None or refund < 0 or cost < 0 or refund > reserved_usd - cost + EPS_USD:
        return (f"refund_usd={line.fields.get('refund_usd')} cost={line.fields.get('cost')} of a"
                f" {reserved_usd:g} reservation: a deferred tick gives back at most its reservation minus"
                " its cost, the log was forged")
    return {"spent_usd": refund, "iteration_count": 1.0}


def state_below_log(state: LoopState, lines: list[LogLine], state_file: Path) -> str:
    """A state whose counters are lower than its log's last logged ones ("" when not)."""
    last: dict[str, float] = {}
    restored = _restored(lines)
    stop = restored[0] if restored is not None else 0
    for i in range(len(lines) - 1, stop - 1, -1):  # the last line that carries counters (each parsed once)
        last = logged_counters(lines[i])
        if last:
            break
    if not last and restored is not None:  # none since the checkpoint: its fold holds the last ones
        last = dict(restored[2])
    have = counters(state)
    for key, value in last.items():
        if have[key] < value - EPS_USD:
            return (f"{state_file}: {key} {have[key]} is lower than its log's {value:g}:"
                    " counters are never lowered, it was written outside automaton")
    return ""


def rebuilt_state(loop: LoopName, lines: list[LogLine], folder: Path) -> LoopState:
    """A `.state.loop` rebuilt from its log (a deleted or unreadable state): halted
    (human_intervention), counters from the log's last line (iterations at least the highest
    `runs/<n>`), task/started_at from CREATED, worktree fields from the last WORKTREE line."""
    first = lines[0] if lines else None
    task = first.fields.get("task") if first is not None and first.event == "CREATED" else None
    try:
        task = str(TaskRef.parse(task)) if task not in (None, "null") else None
    except BadInput:
        task = None
    state = initial_state(loop, task, "", first.ts if first is not None else utc_now())
    for line in lines:
        state = with_counters(state, logged_counters(line))
        if line.event == "WORKTREE":
            base = line.fields.get("base")
            state = replace(state, worktree_path=line.fields.get("path"), worktree_branch=line.fields.get("branch"),
                            base_commit=base if base and COMMIT_HEX.match(base) else state.base_commit)
        elif line.event == "WARNING" and line.fields.get("reason") == "worktree_fallback":
            state = replace(state, worktree_path=None, worktree_branch=None,
                            worktree_fallback=line.fields.get("detail"))
    runs = [int(p.name) for p in _iterdir(folder / "runs") if p.name.isdigit()]
    return replace(state, iteration_count=max([state.iteration_count, *runs]), status="halted",
                   halt_reason="human_intervention",
                   halt_detail=f"state_tampered: {STATE_FILE} rebuilt from {LOG_FILE}")


def _iterdir(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError:
        return []


def untampered_counters(state: LoopState, lines: list[LogLine]) -> LoopState:
    """`state` with counters no tampered file can lower: the growing counters are the largest of
    the file and every logged value; the approval marks the smallest of the file and the last
    logged value."""
    out = counters(state)
    last: dict[str, float] = {}
    for line in lines:
        for key, log_key in COUNTERS.items():
            try:
                value = float(line.fields[log_key])
            except (KeyError, ValueError):
                continue
            if not math.isfinite(value):
                continue
            last[key] = value
            if key in _COUNTS:
                out[key] = max(out[key], value)
    for key in _MARKS:
        if key in last:
            out[key] = min(out[key], last[key])
    return with_counters(state, out)
