"""The six gates as pure rules: order, first failure wins, lazy facts, plateau/drift edge cases."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from automaton.core.gates import (
    DriftFacts,
    TaskFacts,
    VramFacts,
    gate_score_plateau,
    out_of_scope,
    remaining,
    run_gates,
)
from automaton.core.loopconfig import Brakes, LoopConfig, initial_state, parse_config, state_json, validate_state
from automaton.core.loopstate import LoopState
from tests.core.test_loopconfig import DEFAULTS, cfg

SEAL = "ab" * 32


def config(**patch: Any) -> LoopConfig:
    return parse_config(cfg(**patch), "loop.json", DEFAULTS, SEAL)


@dataclass
class Facts:
    """A scripted GateFacts that records which facts were asked for."""

    cfg: LoopConfig = field(default_factory=config)
    sha: str = SEAL
    task_facts: TaskFacts | None = None
    drift_facts: DriftFacts = field(default_factory=DriftFacts)
    vram_facts: VramFacts = field(default_factory=lambda: VramFacts(True, 32000))
    asked: list[str] = field(default_factory=list)

    def config_sha256(self) -> str:
        self.asked.append("sha")
        return self.sha

    def config(self) -> LoopConfig:
        self.asked.append("config")
        return self.cfg

    def vram(self, kv_kib_per_token: float | None) -> VramFacts:
        self.asked.append("vram")
        return self.vram_facts

    def task(self) -> TaskFacts | None:
        self.asked.append("task")
        return self.task_facts

    def drift(self) -> DriftFacts:
        self.asked.append("drift")
        return self.drift_facts


def state(**patch: Any) -> LoopState:
    """A new loop's state with `patch` (file keys, USD as floats) applied, parsed as a file is."""
    return validate_state({**state_json(initial_state("demo", None, SEAL, "t")), **patch}, "test")


def test_clean_loop_passes_every_gate_and_asks_every_fact() -> None:
    facts = Facts()
    result, cfg_read = run_gates(state(), facts)
    assert result.ok and result.reason == "ok" and result.halt is None and cfg_read is facts.cfg
    assert facts.asked == ["sha", "config", "task", "drift"]  # no VRAM probe for a remote harness


@pytest.mark.parametrize(("status", "reason"), [("paused", "paused"), ("complete", "complete")])
def test_gate1_not_running_is_not_ok_without_a_new_halt(status: str, reason: str) -> None:
    facts = Facts()
    result, _ = run_gates(state(status=status), facts)
    assert (result.ok, result.reason, result.halt) == (False, reason, None)
    assert facts.asked == []  # nothing else is looked at


def test_gate1_halted_reports_the_existing_reason() -> None:
    result, _ = run_gates(state(status="halted", halt_reason="drift_detected"), Facts())
    assert (result.ok, result.reason, result.halt) == (False, "halted:drift_detected", None)


def test_a_config_parsed_from_other_bytes_than_the_sealed_hash_halts() -> None:
    """loop.json rewritten between the gate's hash of it and its parse: the brakes used must be
    the sealed ones, so the parsed config's own hash is checked against the seal too."""
    facts = Facts(cfg=parse_config(cfg(), "loop.json", DEFAULTS, "cd" * 32))
    result, used = run_gates(state(), facts)
    assert (result.halt, result.detail) == ("human_intervention", "config_changed") and used is None


def test_changed_config_halts_human_intervention_before_brakes_are_read() -> None:
    facts = Facts(sha="cd" * 32)
    result, _ = run_gates(state(iteration_count=99), facts)
    assert (result.halt, result.detail, result.reason) == ("human_intervention", "config_changed",
                                                           "halted:human_intervention")
    assert facts.asked == ["sha"]


def test_iterations_since_approval_count_not_the_total() -> None:
    brakes = {"brakes__max_iterations": 3}
    result, _ = run_gates(state(iteration_count=5, iterations_at_approval=3), Facts(cfg=config(**brakes)))
    assert result.ok
    result, _ = run_gates(state(iteration_count=6, iterations_at_approval=3), Facts(cfg=config(**brakes)))
    assert result.halt == "iterations_exhausted"


def test_first_failure_wins_iterations_before_budget_before_plateau() -> None:
    s = state(iteration_count=25, spent_usd=99.0, score_history=[0.1] * 5)
    facts = Facts()
    result, _ = run_gates(s, facts)
    assert result.halt == "iterations_exhausted" and "task" not in facts.asked and "drift" not in facts.asked


def test_budget_spent_since_approval() -> None:
    assert run_gates(state(spent_usd=8.0), Facts())[0].ok  # $2 left covers a tick's $2 reservation
    assert run_gates(state(spent_usd=10.0), Facts())[0].halt == "budget_exhausted"
    assert run_gates(state(spent_usd=15.0, spent_usd_at_approval=10.0), Facts())[0].ok


def test_a_tick_starts_only_when_what_is_left_covers_its_reservation() -> None:
    """README "Budgets", the worked example: max_budget_usd 5, max_tick_usd 2, one agent role.
    Ticks start at $5 and $3 left; at $1 left the tick's $2 worst case does not fit: halt with
    what is left, so spent never passes $5 (on the old gate a third tick ran: $6 of $5)."""
    five = Facts(cfg=config(brakes__max_budget_usd=5.0, brakes__max_tick_usd=2.0))
    assert run_gates(state(spent_usd=0.0), five)[0].ok
    assert run_gates(state(spent_usd=2.0), five)[0].ok
    third, _ = run_gates(state(spent_usd=4.0), five)
    assert (third.ok, third.halt, third.gate) == (False, "budget_exhausted", "budget")
    assert third.detail == "spent $4.0000 of $5.00; $1.0000 left, a tick reserves $2.0000"


@pytest.mark.parametrize(("roles", "n"), [
    ({}, 1),
    ({"roles__verify": {"prompt": "verify.md", "score": "agent"}}, 2),
    ({"roles__verify": {"prompt": "verify.md", "score": "agent"},
      "roles__orchestrate": {"builtin": False, "prompt": "orchestrate.md"}}, 3),
])
def test_the_reservation_is_max_tick_usd_per_agent_role(roles: dict[str, Any], n: int) -> None:
    from automaton.core.gates import agent_roles, reservation_micro

    c = config(brakes__max_tick_usd=0.5, **roles)
    assert agent_roles(c) == n and reservation_micro(c) == n * 500_000
    # every role's cost may be unknown and is then counted at max_tick_usd: the gate wants all of it
    left_short, _ = run_gates(state(spent_usd=10.0 - n * 0.5 + 0.000001), Facts(cfg=c))
    assert left_short.halt == "budget_exhausted"
    assert run_gates(state(spent_usd=10.0 - n * 0.5), Facts(cfg=c))[0].ok


def test_local_harness_asks_the_vram_probe() -> None:
    local = config(harness__local=True, brakes__max_budget_usd=None)
    facts = Facts(cfg=local, vram_facts=VramFacts(False, 8000))
    result, _ = run_gates(state(), facts)
    assert result.halt == "budget_exhausted" and "vram" in facts.asked and "8000" in (result.detail or "")
    ok, _ = run_gates(state(), Facts(cfg=local))
    assert ok.ok
    unknown, _ = run_gates(state(), Facts(cfg=local, vram_facts=VramFacts(error="no probe")))
    assert (unknown.ok, unknown.halt, unknown.reason) == (False, None, "budget_unknown")
    assert remaining(state(), local.brakes)[1] is None


@pytest.mark.parametrize(("phase", "halt", "reason"), [
    ("human_intervention", "human_intervention", "halted:human_intervention"),
    ("design:awaiting_approval", None, "waiting:approval"),
    ("implement", None, "ok"),
    (None, None, "task_untracked"),
])
def test_task_phase_gate(phase: str | None, halt: str | None, reason: str) -> None:
    result, _ = run_gates(state(), Facts(task_facts=TaskFacts("t", phase)))
    assert (result.halt, result.reason) == (halt, reason)
    assert result.ok == (reason == "ok")


def test_tampered_task_is_not_ok_without_halt() -> None:
    result, _ = run_gates(state(), Facts(task_facts=TaskFacts("t", "implement", "edited")))
    assert (result.ok, result.halt, result.reason) == (False, None, "task_tampered")


def test_drift_outside_scope_minus_accepted() -> None:
    blobs = (("README.md", "aa11"), ("docs/x.md", "bb22"))
    drift = DriftFacts(("src/a.py", "README.md", "docs/x.md", "tests/t.py"), blobs=blobs)
    result, _ = run_gates(state(accepted_drift=["docs/x.md@bb22"]), Facts(drift_facts=drift))
    assert result.halt == "drift_detected" and result.out_of_scope_files == ("README.md",)
    assert run_gates(state(accepted_drift=["README.md@aa11", "docs/x.md@bb22"]), Facts(drift_facts=drift))[0].ok
    # accepted at other content, or by bare name (older states): not accepted
    result, _ = run_gates(state(accepted_drift=["README.md@ffff", "docs/x.md"]), Facts(drift_facts=drift))
    assert result.out_of_scope_files == ("README.md", "docs/x.md")


def test_drift_skipped_is_a_warning_and_drift_error_halts() -> None:
    result, _ = run_gates(state(), Facts(drift_facts=DriftFacts(skipped="no git")))
    assert result.ok and result.warnings == ("drift gate skipped: no git",)
    result, _ = run_gates(state(), Facts(drift_facts=DriftFacts(error="diff failed")))
    assert result.halt == "drift_detected" and "diff failed" in (result.detail or "")
    assert result.out_of_scope_files == ()


def test_out_of_scope_uses_gitignore_patterns_with_negation() -> None:
    files = ["src/a.py", "src/secret.py", "srcx/a.py", "tests/deep/t.py"]
    assert out_of_scope(files, ["src/**", "!src/secret.py", "tests/"], []) == ["src/secret.py", "srcx/a.py"]


B = Brakes(max_iterations=9, max_budget_usd=1.0, max_tick_usd=1.0, score_plateau_window=3,
           plateau_epsilon=0.05, target_score=0.9)


@pytest.mark.parametrize(("history", "halts"), [
    ([0.5, 0.5], False),  # window not full
    ([0.5, 0.52, 0.5], True),  # flat within epsilon, below target
    ([0.5, 0.6, 0.5], False),  # spread above epsilon
    ([0.95, 0.95, 0.95], False),  # flat at/above target is success, not failure
    ([0.1, 0.9, 0.5, 0.52, 0.5], True),  # only the last window counts
])
def test_plateau_only_when_window_full_flat_and_below_target(history: list[float], halts: bool) -> None:
    result = gate_score_plateau(history, B)
    assert (result is not None and result.halt == "verifier_failed") == halts


def test_a_deferred_account_refuses_without_a_halt() -> None:
    from automaton.core.gates import gate_deferred

    assert gate_deferred("claude", None) is None
    got = gate_deferred("claude", "2026-05-01T15:01:00Z", "Claude AI usage limit reached|1777647600")
    assert got is not None and (got.ok, got.halt, got.gate) == (False, None, "deferred")
    assert got.reason == "deferred:2026-05-01T15:01:00Z"
    assert got.detail is not None and "every loop using claude here waits until 2026-05-01T15:01:00Z" in got.detail
