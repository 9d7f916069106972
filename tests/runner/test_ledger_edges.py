"""The tick's ledger at its edges: what one tick reserves, counts and gives back.

Through `runner.ledger` on a real loop store (loop.json, keyed log): the reservation counts
the iteration and charges `max_tick_usd` before any agent runs; the settlement counts the
tick at what it cost (an unknown, negative or non-finite cost at the cap) and never below 0.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from automaton.core.loopstate import LoopState
from automaton.core.verdicts import Verdict
from automaton.harnesses import HarnessResult
from automaton.runner import ledger
from automaton.store.layout import Project
from automaton.store.loops import Loop
from tests.commands.loopkit import log_lines, loop_with

CAP = 2.0


# --- tick_cost: (USD counted, every cost known)

@pytest.mark.parametrize(("costs", "counted", "known"), [
    ({}, 0.0, True),
    ({"implement": 0.0}, 0.0, True),  # a free run is a reading, not an unknown
    ({"implement": 0.25, "verify": 0.5}, 0.75, True),
    ({"implement": None}, CAP, False),
    ({"implement": 1.5, "verify": None}, 1.5 + CAP, False),  # known + the cap for the unknown one
    ({"implement": None, "verify": None}, 2 * CAP, False),
    ({"implement": -0.5}, CAP, False),  # a refund is not a reading
    ({"implement": -0.0}, 0.0, True),
    ({"implement": math.inf}, CAP, False),
    ({"implement": math.nan, "verify": 0.125}, 0.125 + CAP, False),
    ({"implement": 0.1234564}, 0.123456, True),  # to the micro-dollar
    ({"implement": 0.1234566}, 0.123457, True),
])
def test_tick_cost(costs: dict[str, float | None], counted: float, known: bool) -> None:
    assert ledger.tick_cost(costs, CAP) == (counted, known)


# --- reserve and record on a real loop

@pytest.fixture
def loop(project: Path, approver: str) -> Loop:
    loop_with(project, "demo", brakes={"max_tick_usd": CAP, "max_budget_usd": 10.0, "score_plateau_window": 2})
    return Loop.resolve(Project(project.resolve()), "demo")


def impl(timed_out: bool = False) -> HarnessResult:
    return HarnessResult(exit_status=0, final_text="", cost_usd=None, timed_out=timed_out)


def settle(loop: Loop, n: int, counted: float, *, score: float | None = 0.5, complete: bool = False,
           timed_out: bool = False, commit: str | None = None, halted: bool = False) -> LoopState:
    verdict = Verdict(score, score == 1.0, complete, "s", "junit")
    return ledger.record(loop, loop.read_config(), n, verdict, counted, counted <= CAP, complete, impl(timed_out),
                         commit, halted=halted)


def test_reserve_counts_the_iteration_and_charges_the_cap(loop: Loop) -> None:
    before = loop.read_state()
    new = ledger.reserve(loop, loop.read_config())
    assert new.iteration_count == before.iteration_count + 1
    assert new.spent_usd == round(before.spent_usd + CAP, 6)
    assert loop.read_state().spent_usd == new.spent_usd
    assert log_lines(loop.project)[-1].split(" ")[1:4] == ["TICK_START", f"n={new.iteration_count}",
                                                         f"reserved_usd={CAP!r}"]


@pytest.mark.parametrize(("counted", "spent"), [(0.0, 0.0), (0.75, 0.75), (CAP, CAP), (CAP + 1.5, CAP + 1.5)])
def test_record_settles_the_reservation_to_the_counted_cost(loop: Loop, counted: float, spent: float) -> None:
    n = ledger.reserve(loop, loop.read_config()).iteration_count
    new = settle(loop, n, counted)
    assert new.spent_usd == spent and new.iteration_count == n
    assert list(new.score_history) == [0.5] and new.status == "running"


def test_the_score_window_keeps_the_last_scores_and_skips_unscored_ticks(loop: Loop) -> None:
    for score in (0.25, None, 0.5, 0.75):
        n = ledger.reserve(loop, loop.read_config()).iteration_count
        new = settle(loop, n, 0.5, score=score)
    assert list(new.score_history) == [0.5, 0.75]  # window 2
    assert new.last_verdict is not None and new.last_verdict.score == 0.75


def test_a_complete_verdict_completes_a_running_loop_only_on_the_sealed_config(loop: Loop) -> None:
    n = ledger.reserve(loop, loop.read_config()).iteration_count
    cfg = loop.read_config()
    loop.config_file.write_text(loop.config_file.read_text().replace('"max_iterations": 25', '"max_iterations": 26'))
    verdict = Verdict(1.0, True, True, "s", "junit")
    new = ledger.record(loop, cfg, n, verdict, 0.5, True, True, impl(), None)
    assert new.status == "running"  # loop.json changed under the tick: the next gate halts it
    assert "complete=False" in log_lines(loop.project)[-1]


def test_a_complete_verdict_on_the_sealed_config_completes(loop: Loop) -> None:
    n = ledger.reserve(loop, loop.read_config()).iteration_count
    new = settle(loop, n, 0.5, score=1.0, complete=True)
    assert new.status == "complete"
    assert "complete=True" in log_lines(loop.project)[-1]


def test_the_settling_line_says_what_happened(loop: Loop) -> None:
    n = ledger.reserve(loop, loop.read_config()).iteration_count
    settle(loop, n, 0.5, score=None, timed_out=True, commit="0123456789abcdef", halted=True)
    line = log_lines(loop.project)[-1]
    for field in (f"n={n}", "score=null", "cost=0.5000", "cost_known=True", "complete=False", "timed_out=True",
                  "commit=0123456789ab", "halted=True"):
        assert f" {field}" in line, (field, line)
    n = ledger.reserve(loop, loop.read_config()).iteration_count
    settle(loop, n, 0.5, score=0.25)
    line = log_lines(loop.project)[-1]
    assert " score=0.2500" in line
    assert "timed_out" not in line and "commit=" not in line and "halted" not in line


STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def test_spent_usd_is_kept_to_the_micro_dollar(project: Path, approver: str) -> None:
    loop_with(project, "odd", brakes={"max_tick_usd": 0.3333333, "max_budget_usd": 10.0})
    odd = Loop.resolve(Project(project.resolve()), "odd")
    new = ledger.reserve(odd, odd.read_config())
    assert new.spent_usd == 0.333333 and STAMP.match(new.last_tick_at)
    settled = ledger.record(odd, odd.read_config(), new.iteration_count, Verdict(0.5, False, False, "s"),
                            0.1111111, True, False, impl(), None)
    assert settled.spent_usd == 0.111111 and STAMP.match(settled.last_tick_at)


def test_a_settling_line_is_not_marked_halted_unless_asked(loop: Loop) -> None:
    n = ledger.reserve(loop, loop.read_config()).iteration_count
    ledger.record(loop, loop.read_config(), n, Verdict(0.5, False, False, "s"), 0.5, True, False, impl(),
                  "0123456789abcdef")
    line = log_lines(loop.project)[-1]
    assert "halted" not in line and re.search(r" commit=0123456789ab( |$)", line), line


def test_the_logged_score_is_cut_never_rounded(loop: Loop) -> None:
    n = ledger.reserve(loop, loop.read_config()).iteration_count
    settle(loop, n, 0.5, score=0.97949)
    assert " score=0.9794" in log_lines(loop.project)[-1]
