"""The gates at the edges of their own arithmetic: exactly at a bound, one step either side.

Each case is a verdict a human or the tick reads (ok, reason, which gate, which halt, the
detail line naming the numbers), through `run_gates` or the gate function itself; the
mutation run (`make mutate`, tests/mutation) checks that a shifted bound fails here.
"""

from __future__ import annotations

import pytest

from automaton.core.gates import (
    DriftFacts,
    TaskFacts,
    VramFacts,
    accepted_entry,
    accepted_paths,
    gate_budget,
    gate_deferred,
    gate_score_plateau,
    remaining,
    run_gates,
)
from automaton.core.loopconfig import Brakes
from tests.core.test_gates import SEAL, Facts, config, state

PLATEAU = Brakes(max_iterations=9, max_budget_usd=1.0, max_tick_usd=1.0, score_plateau_window=3,
                 plateau_epsilon=0.25, target_score=0.5)


def verdict(s: dict[str, object], facts: Facts) -> tuple[bool, str, str, str | None]:
    result, _ = run_gates(s, facts)
    return result.ok, result.reason, result.gate, result.halt


# --- gate 6, plateau: "a full window whose max - min <= epsilon and whose last score < target"

def test_a_flat_window_exactly_at_target_score_is_success_not_a_plateau() -> None:
    """README: a score equal to target_score completes; the plateau gate halts only below it."""
    assert gate_score_plateau([0.5, 0.5, 0.5], PLATEAU) is None
    below = gate_score_plateau([0.5, 0.5, 0.4375], PLATEAU)
    assert below is not None and (below.ok, below.halt, below.gate) == (False, "verifier_failed", "plateau")


def test_only_the_last_score_is_held_against_the_target() -> None:
    # last at target: success whatever came before; the one before at target does not save it
    assert gate_score_plateau([0.375, 0.375, 0.5], PLATEAU) is None
    late = gate_score_plateau([0.375, 0.5, 0.375], PLATEAU)
    assert late is not None and late.halt == "verifier_failed"
    early = gate_score_plateau([0.5, 0.375, 0.375], PLATEAU)
    assert early is not None and early.halt == "verifier_failed"


def test_a_spread_exactly_at_epsilon_is_flat_and_just_above_is_not() -> None:
    # binary fractions: 0.375 - 0.125 is exactly 0.25 in floating point
    flat = gate_score_plateau([0.125, 0.375, 0.25], PLATEAU)
    assert flat is not None and flat.halt == "verifier_failed"
    assert flat.detail == "last 3 scores flat (spread 0.25 <= 0.25) below target 0.5"
    assert gate_score_plateau([0.125, 0.375 + 2**-20, 0.25], PLATEAU) is None


def test_the_window_is_the_last_scores_and_must_be_full() -> None:
    assert gate_score_plateau([0.25, 0.25], PLATEAU) is None
    assert gate_score_plateau([0.0, 0.25, 0.25, 0.25], PLATEAU) is not None  # the 0.0 is outside the window
    assert gate_score_plateau([0.25, 0.25, 0.25, 0.0], PLATEAU) is not None


def test_the_plateau_gate_reads_the_state_score_history_through_run_gates() -> None:
    brakes = {"brakes__target_score": 0.5, "brakes__score_plateau_window": 3, "brakes__plateau_epsilon": 0.25}
    flat = state(score_history=[0.25, 0.25, 0.25])
    assert verdict(flat, Facts(cfg=config(**brakes))) == (False, "halted:verifier_failed", "plateau", "verifier_failed")
    at_target = state(score_history=[0.5, 0.5, 0.5])
    assert verdict(at_target, Facts(cfg=config(**brakes))) == (True, "ok", "all", None)


# --- gate 2, iterations: used since approval >= max_iterations

@pytest.mark.parametrize(("used", "halts"), [(2, False), (3, True), (4, True)])
def test_iterations_halt_exactly_at_the_limit(used: int, halts: bool) -> None:
    facts = Facts(cfg=config(brakes__max_iterations=3))
    result, _ = run_gates(state(iteration_count=10 + used, iterations_at_approval=10), facts)
    if not halts:
        assert (result.ok, result.gate) == (True, "all")
        return
    assert (result.ok, result.reason, result.gate, result.halt) == (
        False, "halted:iterations_exhausted", "iterations", "iterations_exhausted")
    assert result.detail == f"{used} of 3 iterations used"


# --- gate 3, budget: USD used since approval >= max_budget_usd

@pytest.mark.parametrize(("spent", "halts"), [(8.0, False), (10.0, True), (10.5, True)])
def test_budget_halts_exactly_at_the_limit(spent: float, halts: bool) -> None:
    facts = Facts(cfg=config(brakes__max_budget_usd=10.0))
    result, _ = run_gates(state(spent_usd=5.0 + spent, spent_usd_at_approval=5.0), facts)
    if not halts:
        assert result.ok
        return
    assert (result.ok, result.reason, result.gate, result.halt) == (
        False, "halted:budget_exhausted", "budget", "budget_exhausted")
    assert result.detail == f"spent ${spent:.4f} of $10.00"


def test_a_local_harness_probe_is_asked_with_the_configured_kv_size() -> None:
    asked: list[float | None] = []

    class Probe(Facts):
        def vram(self, kv_kib_per_token: float | None) -> VramFacts:
            asked.append(kv_kib_per_token)
            return self.vram_facts

    local = config(harness__local=True, harness__kv_kib_per_token=96.0, brakes__max_budget_usd=None)
    assert verdict(state(), Probe(cfg=local)) == (True, "ok", "all", None)
    assert asked == [96.0]


def test_a_local_harness_probe_answers_are_budget_gate_verdicts() -> None:
    local = config(harness__local=True, brakes__max_budget_usd=None)
    small, _ = run_gates(state(), Facts(cfg=local, vram_facts=VramFacts(False, 8000)))
    assert (small.ok, small.gate, small.halt) == (False, "budget", "budget_exhausted")
    assert small.detail == "local model context 8000 tokens < 16000 (VRAM probe)"
    failed, _ = run_gates(state(), Facts(cfg=local, vram_facts=VramFacts(error="nvidia-smi: not found")))
    assert (failed.ok, failed.reason, failed.gate, failed.halt) == (False, "budget_unknown", "budget", None)
    assert failed.detail == "VRAM probe failed: nvidia-smi: not found"


# --- what is left: floored at 0, USD to the micro-dollar

def test_remaining_counts_since_approval_and_floors_at_zero() -> None:
    brakes = config(brakes__max_iterations=5, brakes__max_budget_usd=10.0).brakes
    s = state(iteration_count=7, iterations_at_approval=4, spent_usd=12.25, spent_usd_at_approval=4.0)
    assert remaining(s, brakes) == (2, 1.75)
    over = state(iteration_count=20, iterations_at_approval=4, spent_usd=30.0, spent_usd_at_approval=4.0)
    assert remaining(over, brakes) == (0, 0.0)
    sub_micro = state(spent_usd=9.9999996, spent_usd_at_approval=0.0)
    assert remaining(sub_micro, brakes)[1] == 0.0  # rounded to the micro-dollar: 0.4 of one is none


# --- gates 1, 1b, 4, 5 and the deferral: which gate answered, and the line a human reads

def test_a_halted_loop_keeps_its_reason_and_detail_at_the_status_gate() -> None:
    s = state(status="halted", halt_reason="budget_exhausted", halt_detail="spent $10.0000 of $10.00")
    result, _ = run_gates(s, Facts())
    assert (result.ok, result.reason, result.gate, result.halt) == (False, "halted:budget_exhausted", "status", None)
    assert result.detail == "spent $10.0000 of $10.00"
    paused, _ = run_gates(state(status="paused"), Facts())
    assert (paused.reason, paused.gate) == ("paused", "status")


def test_a_changed_loop_json_halts_at_the_config_gate() -> None:
    assert verdict(state(), Facts(sha="cd" * 32)) == (False, "halted:human_intervention", "config",
                                                      "human_intervention")
    assert verdict(state(config_sha256=SEAL), Facts(sha=SEAL)) == (True, "ok", "all", None)


@pytest.mark.parametrize(("task", "reason", "halt", "detail"), [
    (TaskFacts("t1", "implement", "state hash mismatch"), "task_tampered", None, "task t1: state hash mismatch"),
    (TaskFacts("t1", None), "task_untracked", None, "task t1 has no .state: run automaton --phase --task t1"),
    (TaskFacts("t1", "human_intervention"), "halted:human_intervention", "human_intervention",
     "task t1 is at human_intervention"),
    (TaskFacts("t1", "design:awaiting_approval"), "waiting:approval", None, "task t1 is at design:awaiting_approval"),
])
def test_the_task_gate_names_itself_and_the_task(task: TaskFacts, reason: str, halt: str | None, detail: str) -> None:
    result, _ = run_gates(state(), Facts(task_facts=task))
    assert (result.ok, result.reason, result.gate, result.halt, result.detail) == (False, reason, "task", halt, detail)


def _names(n: int) -> tuple[str, ...]:
    return tuple(f"out/f{i:02d}.txt" for i in range(n))


@pytest.mark.parametrize(("n", "suffix"), [(10, ""), (11, " (+1 more)"), (13, " (+3 more)")])
def test_drift_names_ten_files_and_counts_the_rest(n: int, suffix: str) -> None:
    files = _names(n)
    facts = Facts(cfg=config(blast_radius__file_scope=["src/**"]), drift_facts=DriftFacts(files))
    result, _ = run_gates(state(), facts)
    assert (result.ok, result.reason, result.gate, result.halt) == (
        False, "halted:drift_detected", "drift", "drift_detected")
    assert result.detail == "out of scope: " + ", ".join(files[:10]) + suffix
    assert result.out_of_scope_files == files  # every file, not only the ten shown


@pytest.mark.parametrize(("n", "suffix"), [(1, ""), (10, ""), (12, " (+2 more)")])
def test_a_nested_repository_halts_drift_whatever_the_scope(n: int, suffix: str) -> None:
    nested = tuple(f"vendor/r{i:02d}" for i in range(n))
    facts = Facts(cfg=config(blast_radius__file_scope=["**"]), drift_facts=DriftFacts(("vendor/r00",), nested=nested))
    result, _ = run_gates(state(accepted_drift=["vendor/r00@deleted"]), facts)
    assert (result.ok, result.reason, result.gate, result.halt) == (
        False, "halted:drift_detected", "drift", "drift_detected")
    assert result.detail == "nested repository: " + ", ".join(nested[:10]) + suffix


def test_a_drift_that_could_not_be_computed_halts_at_the_drift_gate() -> None:
    result, _ = run_gates(state(), Facts(drift_facts=DriftFacts(error="git diff: exit 128")))
    assert (result.gate, result.halt, result.detail) == ("drift", "drift_detected",
                                                         "drift could not be computed: git diff: exit 128")


def test_a_deferral_names_the_agent_line_only_when_there_is_one() -> None:
    got = gate_deferred("codex", "2026-05-01T15:01:00Z")
    assert got is not None
    assert got.detail == "codex usage limit: every loop using codex here waits until 2026-05-01T15:01:00Z"
    said = gate_deferred("codex", "2026-05-01T15:01:00Z", "rate limited")
    assert said is not None and said.detail is not None and said.detail.startswith("codex usage limit (rate limited):")


def test_accepted_paths_are_the_paths_of_path_at_blob_entries() -> None:
    """The drift gate hashes exactly these paths; a path left out is never accepted."""
    entries = ["src/b.py@aa11", "docs/x@y.md@bb22", "src/b.py@cc33", "README.md", "a@deleted"]
    assert accepted_paths(entries) == ["a", "docs/x@y.md", "src/b.py"]
    assert accepted_paths([]) == []
    assert accepted_entry("docs/x@y.md", "bb22") == "docs/x@y.md@bb22"
    assert accepted_paths([accepted_entry("docs/x@y.md", "bb22")]) == ["docs/x@y.md"]


@pytest.mark.parametrize(("spent", "reserve", "halts", "says_left"), [
    (1.0, 0, True, False),  # nothing left, even for a tick that reserves nothing
    (0.999999, 0, False, False),  # one micro-USD left
    (0.999999, 1, False, False),  # ... covers a reservation of one
    (0.999999, 2, True, True),  # ... not one of two: what is left is named
])
def test_the_budget_gate_at_one_micro_usd(spent: float, reserve: int, halts: bool, says_left: bool) -> None:
    result = gate_budget(state(spent_usd=spent), PLATEAU, None, reserve)
    assert (result is not None) == halts
    if result is not None:
        assert (result.reason, result.halt) == ("halted:budget_exhausted", "budget_exhausted")
        assert ("left, a tick reserves" in result.detail) == says_left, result.detail
