"""The typed loop state: micro-USD arithmetic, pure transitions, the gate's pure decision."""

from __future__ import annotations

import textwrap
from dataclasses import FrozenInstanceError, replace
from pathlib import Path

import pytest

from automaton.core import loopstate
from automaton.core.gates import CONFIG_CHANGED, STATE_TAMPERED, DriftFacts, GateResult, TaskFacts, VramFacts
from automaton.core.loopconfig import LoopConfig, state_json, validate_state
from automaton.core.loopgate import decide
from automaton.core.loopstate import Event, LoopState, Verdict, initial_state, micro_to_usd, usd_to_micro
from tests.core.test_gates import SEAL, config


def fresh() -> LoopState:
    return initial_state("demo", None, SEAL, "2026-01-01T00:00:00Z")


@pytest.mark.parametrize("usd", [0.0, 0.1, 0.125, 0.333333, 1.458333, 1.508333, 2.458333, 99_999.999999])
def test_micro_usd_round_trips_every_six_place_amount(usd: float) -> None:
    assert micro_to_usd(usd_to_micro(usd)) == usd == round(usd, 6)


def test_micro_usd_takes_the_nearest_micro_dollar() -> None:
    assert usd_to_micro(0.3333333) == 333_333 and usd_to_micro(0.0000005) == 0 and usd_to_micro(0.0000015) == 2
    assert usd_to_micro(0.1) + usd_to_micro(0.2) == usd_to_micro(0.3)  # no float drift in a sum


def test_a_verdicts_halt_request_is_not_kept_in_the_state() -> None:
    """`Verdict.halt` (a verify run asking for a human_intervention halt) is the tick's to act on:
    the state keeps the verdict as `.state.loop` holds it, so a state read back equals the one written."""
    s, _ = loopstate.reserve(fresh(), 1.0, "t1")
    asked = Verdict(0.5, False, False, "1/2 passed", "stream", halt="tests_removed: tests/test_a.py::test_a")
    s2, _ = loopstate.settle(s, counted_usd=0.5, reserved_usd=1.0, verdict=asked, window=2, complete=False,
                             now="t2", fields={"n": 1})
    assert s2.last_verdict == replace(asked, halt=None) and "halt" not in asked.to_dict()
    assert validate_state(state_json(s2), "test") == s2


def test_a_state_is_immutable_and_its_invariants_are_named() -> None:
    s = fresh()
    with pytest.raises(FrozenInstanceError):
        s.status = "halted"  # type: ignore[misc]
    assert s.problem() is None
    assert replace(s, status="halted").problem() == ("halt_reason", "set exactly when status is 'halted'")
    assert replace(s, iteration_count=1, iterations_at_approval=2).problem() == (
        "iterations_at_approval", "at most iteration_count")
    assert replace(s, spent_micro_usd=1, spent_micro_usd_at_approval=2).problem() == (
        "spent_usd_at_approval", "at most spent_usd")


def test_reserve_then_settle_charges_the_counted_cost_and_gives_back_the_rest() -> None:
    s, ev = loopstate.reserve(fresh(), 1.0, "t1")
    assert (s.iteration_count, s.spent_micro_usd, s.last_tick_at) == (1, 1_000_000, "t1")
    assert (ev.event, dict(ev.fields)) == (Event.TICK_START, {"n": 1, "reserved_usd": "1.0"})
    verdict = Verdict(0.5, False, False, "1/2 passed", "summary")
    s2, ev2 = loopstate.settle(s, counted_usd=0.125, reserved_usd=1.0, verdict=verdict, window=2, complete=False,
                               now="t2", fields={"n": 1})
    assert (s2.spent_micro_usd, s2.score_history, s2.last_verdict) == (125_000, (0.5,), verdict)
    assert (ev2.event, ev2.refund_micro_usd, ev2.refund_iterations) == (Event.TICK, 875_000, 0)
    s3, _ = loopstate.settle(s2, counted_usd=1.0, reserved_usd=1.0, window=2, complete=True, now="t3", fields={},
                             verdict=Verdict(0.75, True, True, "done", "summary"))
    s4, _ = loopstate.settle(s3, counted_usd=1.0, reserved_usd=1.0, window=2, complete=False, now="t4", fields={},
                             verdict=Verdict(None, False, False, "no score", "none"))
    assert s3.score_history == (0.5, 0.75) and s3.status == "complete" and s4.score_history == (0.5, 0.75)


def test_a_deferral_never_undercuts_an_approval_made_while_the_tick_ran() -> None:
    s, _ = loopstate.reserve(fresh(), 1.0, "t")
    approved = replace(s, iterations_at_approval=1, spent_micro_usd_at_approval=1_000_000)
    back, ev = loopstate.defer(approved, refund_usd=0.75, now="t", fields={"n": 1})
    assert (back.iteration_count, back.spent_micro_usd) == (1, 1_000_000)  # marks hold
    assert (ev.event, ev.refund_micro_usd, ev.refund_iterations) == (Event.TICK_DEFERRED, 750_000, 1)
    free, _ = loopstate.defer(s, refund_usd=0.75, now="t", fields={})
    assert (free.iteration_count, free.spent_micro_usd) == (0, 250_000)


def test_halt_approve_rearm_and_status_changes() -> None:
    s = replace(fresh(), iteration_count=3, spent_micro_usd=2_500_000, score_history=(0.1, 0.1),
                accepted_drift=("a.md@1", "plain.md", "b.md@2"), worktree_fallback="no git")
    halted, ev = loopstate.halt(s, "drift_detected", "out of scope: a.md", {"reason": "drift_detected"})
    assert (halted.status, halted.halt_reason, ev.event) == ("halted", "drift_detected", Event.HALT)
    ok, ev = loopstate.approve(halted, config_sha256="ff" * 32, task=None, accepted=["a.md@9"], resumed=1,
                               fields={"by": "h"})
    assert (ok.status, ok.halt_reason, ok.halt_detail, ok.resumed_count, ev.event) == (
        "running", None, None, 1, Event.APPROVED)
    assert (ok.iterations_at_approval, ok.spent_micro_usd_at_approval, ok.score_history) == (3, 2_500_000, ())
    assert ok.accepted_drift == ("a.md@9", "b.md@2") and ok.worktree_fallback is None
    assert ok.config_sha256 == "ff" * 32 and ok.problem() is None
    with pytest.raises(ValueError, match="only a complete loop"):
        loopstate.rearm(ok, {})
    done = loopstate.completed(ok)
    again, ev = loopstate.rearm(replace(done, iteration_count=5), {})
    assert (again.status, again.iterations_at_approval, ev.event) == ("running", 5, Event.REARMED)
    paused, ev = loopstate.set_status(again, "paused", {})
    assert (paused.status, ev.event) == ("paused", Event.PAUSED)
    with pytest.raises(ValueError):
        loopstate.set_status(halted, "running", {})  # only an approval clears a halt


def test_the_codec_is_the_inverse_of_the_parser() -> None:
    s = replace(fresh(), spent_micro_usd=1_508_333, spent_micro_usd_at_approval=1_458_333, iteration_count=4,
                iterations_at_approval=3, last_verdict=Verdict(0.75, False, False, "3/4", "summary"),
                score_history=(0.75,), accepted_drift=("x@1",), base_commit="abc1234", worktree_path="/w",
                worktree_branch="loop/demo")
    data = state_json(s)
    assert (data["spent_usd"], data["spent_usd_at_approval"]) == (1.508333, 1.458333)
    assert validate_state(data, "s") == s


class Facts:
    """GateCheckFacts answering from fields; `asked` records what `decide` looked at."""

    def __init__(self, cfg: LoopConfig, *, unsealed: str | None = None, error: str | None = None) -> None:
        self.cfg, self.unsealed, self.error, self.asked = cfg, unsealed, error, []  # type: list[str]

    def config_sha256(self) -> str:
        return self.cfg.sha256

    def config(self) -> LoopConfig:
        return self.cfg

    def vram(self, kv_kib_per_token: float | None) -> VramFacts:
        return VramFacts(eligible=True)

    def task(self) -> TaskFacts | None:
        return None

    def drift(self) -> DriftFacts:
        return DriftFacts()

    def unsealed_project_config(self) -> str | None:
        self.asked.append("project")
        return self.unsealed

    def deferral(self, harness: str, passed: GateResult) -> GateResult:
        self.asked.append("deferral")
        return passed

    def config_error(self) -> str | None:
        self.asked.append("config_error")
        return self.error


def test_decide_is_pure_and_names_the_halt_it_wants_applied() -> None:
    cfg = config()
    facts = Facts(cfg)
    ok = decide(fresh(), "", facts)
    assert ok.result.ok and ok.halt_step() is None and facts.asked == ["project", "deferral"]
    tampered = decide(fresh(), "edited", Facts(cfg))
    step = tampered.halt_step()
    assert step is not None and tampered.result.detail == f"{STATE_TAMPERED}: edited"
    new, ev = step(fresh())
    assert (new.status, new.halt_detail, dict(ev.fields)) == (
        "halted", f"{STATE_TAMPERED}: edited", {"reason": "human_intervention", "detail": STATE_TAMPERED})
    unsealed = decide(fresh(), "", Facts(cfg, unsealed=".automaton/config.json"))
    assert unsealed.result.detail == f"{CONFIG_CHANGED}: .automaton/config.json"
    changed = decide(replace(fresh(), config_sha256="00" * 32), "", Facts(cfg, error="loop.json: bad"))
    assert (changed.result.halt, changed.result.detail, changed.invalid) == (
        "human_intervention", f"{CONFIG_CHANGED}: loop.json: bad", "loop.json: bad")
    spent = decide(replace(fresh(), iteration_count=99), "", Facts(cfg))
    step = spent.halt_step()
    assert step is not None and dict(step(fresh())[1].fields)["gate"] == "iterations"


def test_a_misspelt_event_or_transition_fails_the_type_checker(tmp_path: Path) -> None:
    """`mypy --strict` refuses an event outside the closed list and a transition called with a
    misspelt argument (a string dispatch would have taken both)."""
    api = pytest.importorskip("mypy.api")
    snippet = tmp_path / "misspelt.py"
    snippet.write_text(textwrap.dedent("""
        from automaton.core import loopstate
        from automaton.core.loopstate import Event, LogEvent, initial_state

        LogEvent(Event.TIKC)
        loopstate.halt(initial_state("x", None, "", ""), "drift_detectd", None, {})
        loopstate.reserve(initial_state("x", None, "", ""), reserved_usd=1.0, now="t", extra=1)
    """))
    out, _, code = api.run(["--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(snippet)])
    assert code == 1
    assert '"type[Event]" has no attribute "TIKC"' in out
    assert 'misspelt.py:6: error' in out and "Literal['drift_detectd']" in out, out
    assert 'Unexpected keyword argument "extra"' in out, out


def test_a_rearm_starts_a_fresh_allowance_and_an_empty_plateau_window() -> None:
    """The budget since approval counts from the spend at the rearm, and the plateau gate sees
    no score of the run before it; the log line carries the caller's fields."""
    done = replace(fresh(), status="complete", iteration_count=5, iterations_at_approval=1,
                   spent_micro_usd=4_000_000, spent_micro_usd_at_approval=1_000_000, score_history=(0.9, 0.9))
    again, ev = loopstate.rearm(done, {"by": "human"})
    assert (again.spent_micro_usd_at_approval, again.iterations_at_approval, again.score_history) == (4_000_000, 5, ())
    assert dict(ev.fields) == {"by": "human"}


def test_a_tick_that_spent_its_whole_reservation_or_more_gives_nothing_back() -> None:
    s, _ = loopstate.reserve(fresh(), 1.0, "t1")
    verdict = Verdict(0.5, False, False, "1/2 passed", "summary")
    for counted in (1.0, 1.5):
        s2, ev = loopstate.settle(s, counted_usd=counted, reserved_usd=1.0, verdict=verdict, window=2, complete=False,
                                  now="t2", fields={"n": 1})
        assert ev.refund_micro_usd == 0 and s2.spent_micro_usd == usd_to_micro(counted) and s2.last_tick_at == "t2"
        assert dict(ev.fields) == {"n": 1}


def test_a_deferral_records_its_time_and_fields() -> None:
    s, _ = loopstate.reserve(fresh(), 1.0, "t1")
    back, ev = loopstate.defer(s, refund_usd=0.25, now="t2", fields={"n": 1, "reason": "usage_limit"})
    assert back.last_tick_at == "t2" and dict(ev.fields) == {"n": 1, "reason": "usage_limit"}


def test_an_approval_replaces_accepted_drift_of_paths_that_hold_an_at_sign() -> None:
    """`path@blob`: the blob follows the LAST `@`, so a path with `@` in it (a scoped npm package,
    say) is replaced by its new approval, not kept beside it."""
    s = replace(fresh(), status="halted", halt_reason="drift_detected", current_task="t-1",
                accepted_drift=("node_modules/@scope/x.js@1", "a.md@2"))
    ok, ev = loopstate.approve(s, config_sha256="ff" * 32, task=None, accepted=["node_modules/@scope/x.js@3"],
                               resumed=1, fields={"by": "h"})
    assert ok.accepted_drift == ("a.md@2", "node_modules/@scope/x.js@3")
    assert ok.current_task == "t-1" and dict(ev.fields) == {"by": "h"}
    bound, _ = loopstate.approve(s, config_sha256="ff" * 32, task="t-2", accepted=[], resumed=0, fields={})
    assert bound.current_task == "t-2"


def test_a_reseal_changes_the_seal_only_and_logs_its_fields() -> None:
    s = replace(fresh(), status="paused", iteration_count=2, spent_micro_usd=7)
    sealed, ev = loopstate.reseal(s, "ee" * 32, {"by": "human"})
    assert sealed == replace(s, config_sha256="ee" * 32) and sealed.config_sha256 != s.config_sha256
    assert (ev.event, dict(ev.fields)) == (Event.RESEALED, {"by": "human"})
