"""A loop log's counters at their edges (`store.looplog`): how far a line may lower them, and
what a state file or a rebuilt state may claim. A forged log that lowers the money spent or
the iterations used reopens the budget and iteration gates; each case is one step either side
of what a real tick may write."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from automaton.core.chain import GENESIS, LogLine, format_line, parse_line
from automaton.core.loopstate import LoopState, initial_state, usd_to_micro
from automaton.core.names import LoopName
from automaton.store import looplog
from automaton.store.looplog import (
    counters,
    log_finding,
    logged_counters,
    rebuilt_state,
    state_below_log,
    untampered_counters,
)

LOG = Path("/p/.automaton/loops/demo/.state.log")
TS = "2026-12-01T00:00:00Z"


def counted(*, iteration_count: int, spent_usd: float, iterations_at_approval: int, spent_usd_at_approval: float,
            resumed_count: int) -> LoopState:
    """A loop state holding these counters (USD as the file keeps them), as a state file may
    claim them: built directly, so a tampered file's marks above its counters are expressible."""
    return replace(initial_state("demo", None, "a" * 64, TS), iteration_count=iteration_count,
                   spent_micro_usd=usd_to_micro(spent_usd), iterations_at_approval=iterations_at_approval,
                   spent_micro_usd_at_approval=usd_to_micro(spent_usd_at_approval), resumed_count=resumed_count)


def line(event: str, *, it: int = 0, usd: float = 0.0, it_ok: int = 0, usd_ok: float = 0.0, resumed: int = 0,
         **fields: object) -> LogLine:
    counters = {"iterations": it, "spent_usd": f"{usd:.6f}", "iterations_at_approval": it_ok,
                "spent_usd_at_approval": f"{usd_ok:.6f}", "resumed": resumed}
    parsed = parse_line(format_line(TS, event, {**fields, **counters}, "s", GENESIS))
    assert parsed is not None
    return parsed


def tick(n: int, before: float, after: float, reserved: float = 2.0) -> list[LogLine]:
    """A TICK_START reserving `reserved` on top of `before`, settled by a TICK at `after`."""
    return [line("TICK_START", it=n, usd=before + reserved, n=n, reserved_usd=reserved),
            line("TICK", it=n, usd=after, n=n)]


def deferred(refund: float, cost: float, *, it: int = 0, usd: float | None = None) -> list[LogLine]:
    """A TICK_START n=1 reserving 2 from 1.0 spent, put off: gives back `refund`, charges `cost`."""
    after = 3.0 - refund if usd is None else usd
    return [line("CREATED", usd=1.0), line("TICK_START", it=1, usd=3.0, n=1, reserved_usd=2.0),
            line("TICK_DEFERRED", it=it, usd=after, n=1, refund_usd=refund, cost=cost)]


# --- a TICK gives back at most its own reservation

@pytest.mark.parametrize(("after", "forged"), [
    (1.0, False),  # the whole reservation back: the tick cost nothing
    (1.0 - 0.0000005, False),  # within the micro-dollar rounding slack
    (0.999998, True),  # two micro-dollars more than was reserved
    (0.5, True),
])
def test_a_tick_settles_at_most_its_reservation_back(after: float, forged: bool) -> None:
    lines = [line("CREATED", usd=1.0), *tick(1, 1.0, after)]
    found = log_finding(lines, LOG)
    assert bool(found) == forged, found
    if forged:
        assert found.startswith(f"{LOG}: line 3 (TICK): spent_usd goes down (3 -> {after:g})")
        assert found.endswith("counters are never lowered, the log was forged")


def test_a_tick_closing_another_ticks_reservation_gives_nothing_back() -> None:
    lines = [line("CREATED", usd=1.0), line("TICK_START", it=1, usd=3.0, n=1, reserved_usd=2.0),
             line("TICK", it=1, usd=1.0, n=2)]
    assert "spent_usd goes down" in log_finding(lines, LOG)


def test_a_reservation_is_given_back_once() -> None:
    lines = [line("CREATED", usd=1.0), *tick(1, 1.0, 1.0), line("TICK", it=1, usd=0.0, n=1)]
    assert "line 4 (TICK): spent_usd goes down" in log_finding(lines, LOG)


def test_a_tick_never_lowers_below_its_own_tick_start() -> None:
    lines = [line("CREATED", usd=1.0), line("TICK_START", it=1, usd=3.0, n=1, reserved_usd=2.0),
             line("WARNING", it=1, usd=3.0, reason="x"), line("TICK", it=0, usd=3.0, n=1)]
    assert "line 4 (TICK): iterations goes down (1 -> 0)" in log_finding(lines, LOG)


@pytest.mark.parametrize(("event", "forged"), [("HALT", True), ("PAUSED", True), ("APPROVED", False),
                                                ("REARMED", False), ("RESEALED", False)])
def test_approval_marks_go_down_only_on_a_human_act(event: str, forged: bool) -> None:
    lines = [line("CREATED", it=5, usd=4.0, it_ok=5, usd_ok=4.0), line(event, it=5, usd=4.0, it_ok=3, usd_ok=4.0)]
    found = log_finding(lines, LOG)
    assert bool(found) == forged, found
    if forged:
        assert "iterations_at_approval goes down (5 -> 3)" in found


@pytest.mark.parametrize("key", ["it", "usd", "resumed"])
def test_growing_counters_never_go_down_on_other_lines(key: str) -> None:
    lines = [line("CREATED", **{key: 2}), line("PAUSED", **{key: 1})]
    assert "goes down (2 -> 1)" in log_finding(lines, LOG)
    assert log_finding([line("CREATED", **{key: 2}), line("PAUSED", **{key: 2})], LOG) == ""


def test_an_event_automaton_never_writes_is_a_forgery() -> None:
    assert log_finding([line("CREATED"), line("REFUND")], LOG) == (
        f"{LOG}: line 2 (REFUND): unknown event: it was not written by automaton")


# --- a TICK_DEFERRED gives back its iteration and its refund, at most reservation - cost

@pytest.mark.parametrize(("refund", "cost", "forged"), [
    (2.0, 0.0, False), (1.5, 0.5, False), (0.0, 2.0, False),
    (1.5 + 0.00001, 0.5, True), (-0.5, 0.0, True), (1.0, -0.5, True), (2.5, 0.0, True),
])
def test_a_deferred_tick_refunds_at_most_its_reservation_minus_its_cost(refund: float, cost: float,
                                                                         forged: bool) -> None:
    found = log_finding(deferred(refund, cost), LOG)
    assert bool(found) == forged, found
    if forged:
        assert found.startswith(f"{LOG}: line 3 (TICK_DEFERRED): refund_usd=")
        assert "of a 2 reservation: a deferred tick gives back at most its reservation minus its cost" in found


def test_a_deferred_tick_gives_back_one_iteration_not_two() -> None:
    assert log_finding(deferred(2.0, 0.0, it=0), LOG) == ""
    lines = [line("CREATED", it=1, usd=1.0), line("TICK_START", it=2, usd=3.0, n=2, reserved_usd=2.0),
             line("TICK_DEFERRED", it=0, usd=1.0, n=2, refund_usd=2.0, cost=0.0)]
    assert "iterations goes down (2 -> 0)" in log_finding(lines, LOG)


def test_a_deferred_tick_may_not_refund_more_than_it_says() -> None:
    assert "spent_usd goes down" in log_finding(deferred(1.0, 0.0, usd=1.0), LOG)


def test_a_deferred_tick_without_numbers_is_forged() -> None:
    lines = [line("CREATED", usd=1.0), line("TICK_START", it=1, usd=3.0, n=1, reserved_usd=2.0),
             line("TICK_DEFERRED", it=0, usd=3.0, n=1, refund_usd="x", cost=0.0)]
    assert "refund_usd=x cost=0.0" in log_finding(lines, LOG)


# --- a re-seal starts the checks over, from at least the highest value before it

def test_a_reseal_must_keep_the_highest_counters_logged_before_it() -> None:
    before = [line("CREATED", it=4, usd=3.0), line("PAUSED", it=4, usd=3.0)]
    ok = line("HALT", it=4, usd=3.0, tamper="state")
    assert log_finding([*before, ok], LOG) == ""
    low = line("HALT", it=3, usd=3.0, tamper="state")
    assert "line 3 (HALT): iterations goes down (4 -> 3)" in log_finding([*before, low], LOG)
    plain = line("HALT", it=4, usd=3.0)  # not a re-seal: checked against the line before
    assert log_finding([*before, plain, line("PAUSED", it=3, usd=3.0)], LOG) != ""


def test_what_came_before_the_last_reseal_is_vouched_for() -> None:
    forged_then = [line("CREATED", it=4), line("PAUSED", it=1)]
    reseal = line("APPROVED", it=4, tamper="state")
    assert log_finding([*forged_then, reseal, line("PAUSED", it=4)], LOG) == ""


# --- a state file against its log

@pytest.mark.parametrize(("spent", "below"), [(3.0, False), (3.0 - 0.0000005, False), (2.99999, True)])
def test_a_state_below_its_logs_last_counters_was_written_outside_automaton(spent: float, below: bool) -> None:
    lines = [line("CREATED", it=2, usd=3.5), line("TICK", it=2, usd=3.0, n=2)]  # the last line counts
    state = counted(iteration_count=2, spent_usd=spent, iterations_at_approval=0, spent_usd_at_approval=0.0,
             resumed_count=0)
    found = state_below_log(state, lines, Path("/p/.state.loop"))
    assert bool(found) == below, found
    if below:
        assert found == (f"/p/.state.loop: spent_usd {spent} is lower than its log's 3:"
                         " counters are never lowered, it was written outside automaton")


def test_untampered_counters_take_the_highest_growing_and_the_lowest_marks() -> None:
    state = counted(iteration_count=1, spent_usd=0.5, resumed_count=0, iterations_at_approval=9,
             spent_usd_at_approval=9.0)
    lines = [line("CREATED", it=3, usd=2.5, resumed=1, it_ok=0, usd_ok=0.0),
             line("APPROVED", it=3, usd=2.5, resumed=1, it_ok=2, usd_ok=1.5)]
    got = untampered_counters(state, lines)
    assert counters(got) == {"iteration_count": 3, "spent_usd": 2.5, "resumed_count": 1, "iterations_at_approval": 2,
                             "spent_usd_at_approval": 1.5}
    assert isinstance(got.iteration_count, int) and isinstance(got.iterations_at_approval, int)


def test_a_rebuilt_state_is_halted_with_the_logs_counters_and_runs(tmp_path: Path) -> None:
    (tmp_path / "runs" / "7").mkdir(parents=True)
    (tmp_path / "runs" / "notes").mkdir()
    lines = [line("CREATED", task="t1"), *tick(1, 0.0, 1.25),
             line("WORKTREE", it=1, usd=1.25, path="/w", branch="loop/demo", base="a" * 40)]
    state = rebuilt_state(LoopName("demo"), lines, tmp_path)
    assert (state.status, state.halt_reason) == ("halted", "human_intervention")
    assert state.halt_detail == "state_tampered: .state.loop rebuilt from .state.log"
    assert state.spent_usd == 1.25 and state.iteration_count == 7  # runs/7 exists
    assert (state.worktree_path, state.worktree_branch, state.base_commit) == ("/w", "loop/demo", "a" * 40)
    assert state.current_task == "t1" and state.started_at == TS


def bare(event: str, **fields: object) -> LogLine:
    """A line without counters (a WARNING, an INSTALLED ...)."""
    parsed = parse_line(format_line(TS, event, dict(fields), "s", GENESIS))
    assert parsed is not None
    return parsed


def test_a_counter_that_is_not_a_finite_number_is_no_reading() -> None:
    assert "spent_usd" not in logged_counters(line("CREATED", usd=math.inf))
    assert "spent_usd" not in logged_counters(line("CREATED", usd=math.nan))
    assert logged_counters(line("CREATED", it=2, usd=1.5))["spent_usd"] == 1.5
    assert logged_counters(bare("WARNING", reason="x")) == {}


def test_a_tamper_field_reseals_only_on_halt_or_approved() -> None:
    assert "iterations goes down (4 -> 1)" in log_finding([line("CREATED", it=4), line("PAUSED", it=1, tamper="x")],
                                                           LOG)
    assert log_finding([line("CREATED", it=4), line("APPROVED", it=4, tamper="x"), line("PAUSED", it=4)], LOG) == ""


def test_a_reservation_without_an_amount_gives_nothing_back() -> None:
    lines = [line("CREATED", usd=1.0), line("TICK_START", it=1, usd=3.0, n=1), line("TICK", it=1, usd=2.5, n=1)]
    assert "line 3 (TICK): spent_usd goes down (3 -> 2.5)" in log_finding(lines, LOG)


def test_a_state_exactly_at_the_rounding_slack_is_not_below() -> None:
    lines = [line("CREATED", it=2, usd=3.0)]
    state = counted(iteration_count=2, spent_usd=3.0 - 0.000001, iterations_at_approval=0,
             spent_usd_at_approval=0.0, resumed_count=0)
    assert state_below_log(state, lines, Path("/p/.state.loop")) == ""
    assert state_below_log(state, [], Path("/p/.state.loop")) == ""  # an empty log says nothing


def test_the_last_line_with_counters_is_the_one_a_state_answers_to() -> None:
    lines = [line("CREATED", it=2, usd=3.0), bare("WARNING", reason="x")]
    state = counted(iteration_count=2, spent_usd=1.0, iterations_at_approval=0, spent_usd_at_approval=0.0,
             resumed_count=0)
    assert "spent_usd 1.0 is lower than its log's 3" in state_below_log(state, lines, Path("/p/.state.loop"))


def test_untampered_counters_read_past_lines_without_counters() -> None:
    state = counted(iteration_count=0, spent_usd=0.0, resumed_count=0, iterations_at_approval=9,
             spent_usd_at_approval=9.0)
    lines = [line("CREATED", it=1), bare("WARNING", reason="x"), line("APPROVED", it=3, usd=1.0, it_ok=3, usd_ok=1.0)]
    got = untampered_counters(state, lines)
    assert (got.iteration_count, got.spent_usd, got.iterations_at_approval) == (3, 1.0, 3)


def test_a_reseal_answers_to_the_highest_value_not_the_last() -> None:
    before = [line("CREATED", it=5, usd=3.0), line("HALT", it=4, usd=3.0, tamper="state"), line("PAUSED", it=4)]
    # the first re-seal vouched for the lower line before it; the last one must reach the highest ever logged
    lines = [line("CREATED", it=5), line("PAUSED", it=4), line("HALT", it=4, tamper="state")]
    assert "line 3 (HALT): iterations goes down (5 -> 4)" in log_finding(lines, LOG)
    assert log_finding(before[:2], LOG) != ""


def test_a_line_missing_one_counter_is_still_checked_on_the_others() -> None:
    lines = [line("CREATED", usd=3.0), bare("PAUSED", spent_usd="1.000000")]
    assert "line 2 (PAUSED): spent_usd goes down (3 -> 1)" in log_finding(lines, LOG)
    state = counted(iteration_count=0, spent_usd=0.0, resumed_count=0, iterations_at_approval=0,
             spent_usd_at_approval=0.0)
    assert untampered_counters(state, [line("CREATED", usd=1.0), bare("PAUSED", spent_usd="5.0")]).spent_usd == 5.0


def test_a_deferred_refund_exactly_at_its_bound_is_allowed() -> None:
    assert log_finding(deferred(1.5 + 0.000001, 0.5), LOG) == ""


def test_a_rebuilt_state_reads_its_task_and_worktree_only_from_the_lines_that_carry_them(tmp_path: Path) -> None:
    created = line("CREATED", task="null")
    fallback = bare("WARNING", reason="worktree_fallback", detail="no git")
    other = bare("WARNING", reason="disk", detail="full")
    wt = bare("WORKTREE", path="/w", branch="loop/demo", base="not-a-commit")
    state = rebuilt_state(LoopName("demo"), [created, wt, other], tmp_path)
    assert state.current_task is None and state.worktree_path == "/w" and state.base_commit is None
    assert state.config_sha256 == ""  # no seal: the config gate halts it until a human re-seals
    state = rebuilt_state(LoopName("demo"), [created, wt, fallback], tmp_path)
    assert (state.worktree_path, state.worktree_branch, state.worktree_fallback) == (None, None, "no git")
    state = rebuilt_state(LoopName("demo"), [line("PAUSED", task="t1"), line("CREATED", task="t2")], tmp_path)
    assert state.current_task is None  # the task is read from a first CREATED line only
    state = rebuilt_state(LoopName("demo"), [line("CREATED", task="../x")], tmp_path)
    assert state.current_task is None  # not a task name
    empty = rebuilt_state(LoopName("demo"), [], tmp_path)
    assert (empty.iteration_count, empty.status) == (0, "halted") and empty.started_at.endswith("Z")


# --- each edge a surviving mutant found (`make mutate`, group ledger)

def test_a_reservation_is_matched_by_its_n_an_absent_n_included() -> None:
    # `n` is the key that pairs a TICK_START with the line closing it; a line without one
    # pairs only with another line without one, never with a numbered reservation.
    lines = [line("CREATED", usd=1.0), line("TICK_START", it=1, usd=3.0, reserved_usd=2.0),
             line("TICK", it=1, usd=1.0)]
    assert log_finding(lines, LOG) == ""
    numbered = [line("CREATED", usd=1.0), line("TICK_START", it=1, usd=3.0, n=1, reserved_usd=2.0),
                line("TICK", it=1, usd=1.0)]
    assert "line 3 (TICK): spent_usd goes down (3 -> 1)" in log_finding(numbered, LOG)
    unclosed = [line("CREATED", usd=1.0), line("TICK_START", it=1, usd=3.0, reserved_usd=2.0),
                line("TICK", it=1, usd=1.0, n=1)]
    assert "line 3 (TICK): spent_usd goes down (3 -> 1)" in log_finding(unclosed, LOG)


def test_a_tick_closed_after_another_tick_still_answers_to_its_own_tick_start() -> None:
    # The line before may be lower than the tick's own TICK_START (another tick gave back more
    # than it added): the closing line is held to both floors.
    lines = [line("CREATED", usd=1.0), line("TICK_START", it=1, usd=3.0, n=1, reserved_usd=2.0),
             line("TICK_START", it=2, usd=4.0, n=2, reserved_usd=3.0), line("TICK", it=2, usd=1.0, n=2)]
    assert log_finding(lines, LOG) == ""
    found = log_finding([*lines, line("TICK", it=2, usd=1.0, n=1)], LOG)
    assert found == ""  # at its own floor, 3 - 2
    found = log_finding([*lines, line("TICK", it=2, usd=0.5, n=1)], LOG)
    assert found.startswith(f"{LOG}: line 5 (TICK): spent_usd goes down (1 -> 0.5)"), found


def test_a_counter_lowered_by_exactly_the_rounding_slack_is_not_lowered() -> None:
    # 3.0 - 1e-6 is the float 2.999999 exactly: the slack is inclusive
    assert 3.0 - 0.000001 == 2.999999
    assert log_finding([line("CREATED", usd=3.0), line("PAUSED", usd=2.999999)], LOG) == ""
    assert "spent_usd goes down" in log_finding([line("CREATED", usd=3.0), line("PAUSED", usd=2.999998)], LOG)


def test_lines_appended_after_a_clean_check_are_still_checked_against_the_last_one() -> None:
    # the second call folds only the appended line, from the counters the first one ended at
    looplog._FOLDS.clear()
    clean = [line("CREATED", it=2, usd=3.0), line("PAUSED", it=2, usd=3.0)]
    assert log_finding(clean, LOG) == ""
    assert str(LOG) in looplog._FOLDS
    found = log_finding([*clean, line("PAUSED", it=2, usd=1.0)], LOG)
    assert found.startswith(f"{LOG}: line 3 (PAUSED): spent_usd goes down (3 -> 1)"), found


def test_untampered_counters_skip_only_the_counter_that_is_no_number() -> None:
    state = counted(iteration_count=0, spent_usd=0.0, resumed_count=0, iterations_at_approval=0,
                    spent_usd_at_approval=0.0)
    lines = [line("CREATED", usd=1.0), bare("PAUSED", iterations="inf", spent_usd="5.0")]
    got = untampered_counters(state, lines)
    assert (got.iteration_count, got.spent_usd) == (0, 5.0)
