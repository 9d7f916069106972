"""The loop log's ledger check (`log_finding`) folded over only the lines appended since the
same process last found the log clean: the same answer as a check of every line."""

from __future__ import annotations

from pathlib import Path

import pytest

from automaton.core.chain import LogLine
from automaton.store import looplog
from automaton.store.looplog import log_finding

LOG = Path("demo/.state.log")


def line(event: str, iterations: int, spent: float, **extra: str) -> LogLine:
    fields = {"iterations": str(iterations), "spent_usd": str(spent), "iterations_at_approval": "0",
              "spent_usd_at_approval": "0", "resumed": "0", **extra}
    return LogLine("2026-01-01T00:00:00Z", event, fields, "sha256:x", "0" * 64, f"{event} {iterations} {spent}")


def clean_log() -> list[LogLine]:
    lines = [line("CREATED", 0, 0.0)]
    for n in range(1, 6):
        lines += [line("TICK_START", n, n * 1.0, n=str(n), reserved_usd="1"), line("TICK", n, n * 1.0 - 0.5, n=str(n))]
    return lines


def fresh(lines: list[LogLine]) -> str:
    looplog._FOLDS.clear()
    return log_finding(lines, LOG)


@pytest.mark.parametrize("appended", [
    [line("TICK", 4, 9.0)],  # iterations go down
    [line("TICK_START", 6, 6.0, n="6", reserved_usd="1"), line("TICK", 6, 4.0, n="6")],  # gives back more than reserved
    [line("FORGED", 6, 6.0)],  # an event automaton never writes
    [line("HALT", 1, 1.0, tamper="x")],  # a re-seal below the highest logged counters
    [line("HALT", 9, 9.0, tamper="x"), line("TICK", 8, 9.0)],  # a later re-seal moves the start
    [line("HALT", 9, 9.0, tamper="x"), line("TICK", 9, 9.5)],
    [line("WARNING", 5, 4.5)],
])
def test_a_check_continued_after_a_clean_one_answers_as_a_whole_check(appended: list[LogLine]) -> None:
    lines = clean_log()
    assert fresh(lines) == ""
    whole = [*lines, *appended]
    continued = log_finding(whole, LOG)  # continues from the clean check of `lines`
    assert continued == fresh(whole)


def test_a_lowered_counter_appended_after_a_clean_check_is_found_at_its_line() -> None:
    lines = clean_log()
    assert fresh(lines) == ""
    for step in range(3):  # clean lines appended and checked one by one
        lines = [*lines, line("WARNING", 5, 4.5 + step)]
        assert log_finding(lines, LOG) == ""
    found = log_finding([*lines, line("TICK", 5, 1.0)], LOG)
    assert "line 15 (TICK): spent_usd goes down (6.5 -> 1)" in found


def test_other_line_objects_are_checked_from_the_start() -> None:
    lines = clean_log()
    assert fresh(lines) == ""
    forged = [*lines[:3], line("TICK", 0, 0.0, n="1"), *lines[4:]]  # same length, other objects
    assert "goes down" in log_finding(forged, LOG)
