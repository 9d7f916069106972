"""The loop store: fail-closed reads, tamper evidence, crash roll-forward, locked updates, concurrency."""

from __future__ import annotations

import json
import multiprocessing
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from automaton.core.chain import verify_text
from automaton.core.errors import AutomatonError, BadInput, CorruptState
from automaton.core.loopconfig import validate_state
from automaton.core.loopstate import Event, LogEvent, LoopState
from automaton.core.names import TaskRef
from automaton.store import chainlog, loops
from automaton.store.key import load_key
from automaton.store.layout import Project
from automaton.store.looplog import counters
from tests.core.test_loopconfig import DESIGN_EXAMPLE
from tests.helpers import approve_first, patched, via_json


def make_loop(root: Path, name: str = "demo", *, task: str | None = None, **patch: Any) -> Project:
    """Create loop `name` from a project template `t-<name>` whose loop.json is the
    README's example (`DESIGN_EXAMPLE`) with `patch` applied per section (e.g. brakes={"max_iterations": 2})."""
    from automaton.commands.loops import create_loop

    data = json.loads(json.dumps(DESIGN_EXAMPLE))
    for section, values in patch.items():
        if isinstance(values, dict):
            data[section].update(values)
        else:
            data[section] = values
    tdir = root / ".automaton" / "templates" / "loops" / f"t-{name}"
    tdir.mkdir(parents=True, exist_ok=True)
    (tdir / "loop.json").write_text(json.dumps(data))
    (tdir / "implement.md").write_text("do the work\n")
    project = Project(root.resolve())
    create_loop(project, name, f"t-{name}", task)
    approve_first(root, name)  # a project template's loop waits for a human's first approval
    return project


def state_file(project: Project, name: str = "demo") -> Path:
    return project.loop_dir(loops.LoopName(name)) / loops.STATE_FILE


def log_text(project: Project, name: str = "demo") -> str:
    return (project.loop_dir(loops.LoopName(name)) / loops.LOG_FILE).read_text()


def test_created_state_is_sealed_by_its_log(project: Path) -> None:
    p = make_loop(project)
    rec = loops.inspect(p, "demo")
    assert rec.tamper == "" and rec.state.status == "running"
    assert rec.chain.last_state == loops.state_token(state_file(p).read_bytes())
    assert rec.chain.lines[0].event == "CREATED" and rec.chain.lines[0].fields["iterations"] == "0"


@pytest.mark.parametrize("content", [b"", b"{", b"{}", b'{"schema_version": 1}', b"[]", b"\xff\xfe",
                                     b'{"schema_version": 99}'])
def test_every_bad_state_read_fails_closed_naming_the_file(project: Path, content: bytes) -> None:
    p = make_loop(project)
    state_file(p).write_bytes(content)
    with pytest.raises(CorruptState) as err:
        loops.read_state(p, "demo")
    assert str(state_file(p)) in err.value.message
    with pytest.raises(CorruptState):  # a write never replaces it with defaults either
        loops.update_state(p, "demo", via_json("TICK", {}, lambda s: None))
    assert state_file(p).read_bytes() == content


def test_wrong_types_fail_closed(project: Path) -> None:
    p = make_loop(project)
    data = json.loads(state_file(p).read_text())
    data["iteration_count"] = "3"
    state_file(p).write_text(json.dumps(data))
    with pytest.raises(CorruptState, match="iteration_count"):
        loops.read_state(p, "demo")


def test_valid_but_edited_state_is_tampered(project: Path) -> None:
    p = make_loop(project)
    data = json.loads(state_file(p).read_text())
    data["iteration_count"] = 0
    data["status"] = "running"
    data["accepted_drift"] = ["README.md"]
    state_file(p).write_text(json.dumps(data))
    with pytest.raises(loops.StateTampered, match="edited outside automaton"):
        loops.read_state(p, "demo")
    with pytest.raises(loops.StateTampered):
        loops.update_state(p, "demo", via_json("TICK", {}, lambda s: s.update(iteration_count=1)))


def test_update_state_is_one_locked_write_plus_one_chained_line(project: Path) -> None:
    p = make_loop(project)

    def tick(s: dict[str, Any]) -> None:
        s["iteration_count"] += 1
        s["spent_usd"] += 0.5

    new = loops.update_state(p, "demo", via_json("TICK", {"n": 1, "score": 0.5}, tick))
    assert new.iteration_count == 1 and loops.read_state(p, "demo") == new
    check = verify_text(log_text(p), load_key(create=False))
    assert check.ok and [line.event for line in check.lines] == ["CREATED", "APPROVED", "TICK"]  # first approval
    last = check.lines[-1]
    assert last.fields["iterations"] == "1" and last.fields["spent_usd"] == "0.5" and last.fields["n"] == "1"


def test_counters_never_decrease_and_invalid_states_are_never_written(project: Path) -> None:
    p = make_loop(project)
    loops.update_state(p, "demo", via_json("TICK", {}, lambda s: s.update(iteration_count=3)))
    before = state_file(p).read_bytes()
    with pytest.raises(ValueError, match="may not decrease"):
        loops.update_state(p, "demo", via_json("TICK", {}, lambda s: s.update(iteration_count=0)))
    with pytest.raises(ValueError, match="halt_reason must be set exactly when status is 'halted'"):
        loops.update_state(p, "demo", lambda s: (replace(s, status="halted"), LogEvent(Event.HALT)))
    assert state_file(p).read_bytes() == before and len(verify_text(log_text(p), load_key(create=False)).lines) == 3


def test_interrupted_commit_rolls_forward(project: Path) -> None:
    p = make_loop(project)
    folder = p.loop_dir(loops.LoopName("demo"))
    new = patched(loops.read_state(p, "demo"), iteration_count=7)
    data = loops.encode_state(new)
    from automaton.store.atomic import write_tmp

    write_tmp(folder / loops.STATE_FILE, data)  # crash after steps 1 and 2 of chainlog.commit
    chainlog.append_event(folder / loops.LOG_FILE, "TICK", {}, loops.state_token(data))
    assert loops.read_state(p, "demo").iteration_count == 7
    assert state_file(p).read_bytes() == data and not (folder / ".state.loop.tmp").exists()


def test_unlogged_temp_file_is_discarded(project: Path) -> None:
    p = make_loop(project)
    folder = p.loop_dir(loops.LoopName("demo"))
    (folder / ".state.loop.tmp").write_text("{}")  # crash before the log line: never happened
    loops.update_state(p, "demo", via_json("TICK", {}, lambda s: s.update(iteration_count=1)))
    assert loops.read_state(p, "demo").iteration_count == 1 and not (folder / ".state.loop.tmp").exists()


def test_log_event_keeps_the_sealed_token(project: Path) -> None:
    p = make_loop(project)
    loops.log_event(p, "demo", LogEvent(Event.SKIPPED, {"reason": "busy"}))
    check = verify_text(log_text(p), load_key(create=False))
    assert check.ok and check.lines[-1].event == "SKIPPED" and check.lines[-1].fields["reason"] == "busy"
    assert loops.inspect(p, "demo").tamper == ""


def test_untampered_counters_take_the_log_when_the_file_lowers_them(project: Path) -> None:
    p = make_loop(project)
    loops.update_state(p, "demo", via_json("TICK", {}, lambda s: s.update(iteration_count=9, spent_usd=4.0,
                                                                   iterations_at_approval=2)))
    rec = loops.inspect(p, "demo")
    forged = patched(rec.state, iteration_count=0, spent_usd=0.0, iterations_at_approval=0)
    got = loops.untampered_counters(forged, rec.chain.lines)
    assert (got.iteration_count, got.spent_usd, got.iterations_at_approval) == (9, 4.0, 0)
    raised = patched(rec.state, iterations_at_approval=9, spent_usd_at_approval=4.0)
    got = loops.untampered_counters(raised, rec.chain.lines)
    assert (got.iterations_at_approval, got.spent_usd_at_approval) == (2, 0.0)


def test_require_tracked_untracked_and_unknown(project: Path) -> None:
    p = Project(project.resolve())
    with pytest.raises(BadInput, match="unknown loop"):
        loops.require_tracked(p, "ghost")
    (p.loops_dir / "bare").mkdir(parents=True)
    with pytest.raises(BadInput, match="Run --upgrade-loops to bootstrap"):
        loops.require_tracked(p, "bare")
    with pytest.raises(BadInput, match="invalid loop name"):
        loops.require_tracked(p, "../x")


def test_read_config_validates_every_read(project: Path) -> None:
    p = make_loop(project)
    path = p.loop_dir(loops.LoopName("demo")) / loops.CONFIG_FILE
    data = json.loads(path.read_text())
    data["brakes"]["max_iteration"] = 1000
    path.write_text(json.dumps(data))
    with pytest.raises(BadInput, match=r"unknown key 'brakes\.max_iteration'"):
        loops.read_config(p, "demo")


def test_halted_owners_lists_only_halted_loops_bound_to_the_task(project: Path) -> None:
    from automaton.commands.tasks import create_task

    p = Project(project.resolve())
    create_task(p, "other")
    create_task(p, "fix-it2")
    make_loop(project, "a", task="other")
    make_loop(project, "b", task="fix-it2")
    loops.update_state(p, "a", via_json("HALT", {}, lambda s: s.update(status="halted", halt_reason="verifier_failed")))
    assert loops.halted_owners(p, TaskRef.parse("other")) == [("a", "verifier_failed")]
    assert loops.halted_owners(p, TaskRef.parse("fix-it2")) == []


def test_add_excludes_is_idempotent(tmp_path: Path) -> None:
    f = tmp_path / "info" / "exclude"
    f.parent.mkdir()
    f.write_text("*.pyc")  # a foreign line without a newline stays intact
    assert loops.add_excludes(f, ["/a/", "/b"], "# hdr") == ["/a/", "/b"]
    assert loops.add_excludes(f, ["/a/", "/b"], "# hdr") == []
    assert f.read_text() == "*.pyc\n# hdr\n/a/\n/b\n"


# ---- concurrency: many processes, one loop --------------------------------------------------

OPS_PER_WORKER = 12


def _worker(root: str, seed: int) -> dict[str, int]:
    """Mixed mutations of loop `demo`; returns how many log lines this worker caused."""
    os.environ["AUTOMATON_APPROVER"] = f"worker-{seed}"
    from automaton.commands import loops as uc

    project = Project(Path(root))
    done = {"lines": 0, "ticks": 0, "approvals": 0}
    for i in range(OPS_PER_WORKER):
        loops.update_state(project, "demo", via_json("TICK", {"n": i},
                           lambda s: s.update(iteration_count=s["iteration_count"] + 1,
                                              spent_usd=s["spent_usd"] + 0.25)))
        done["lines"] += 1
        done["ticks"] += 1
        op = (seed + i) % 4
        try:
            if op == 0:
                out = uc.check_gate(project, "demo")
                done["lines"] += 1 if out.data and out.data["halted_now"] else 0
            elif op == 1:
                out = uc.pause_loop(project, "demo")
                done["lines"] += 0 if out.lines[0].endswith("already paused") else 1
            elif op == 2:
                out = uc.resume_loop(project, "demo")
                done["lines"] += 0 if out.lines[0].endswith("already running") else 1
            else:
                uc.approve_loop(project, "demo")
                done["lines"] += 1
                done["approvals"] += 1
        except AutomatonError:
            pass  # refused by a rule (e.g. approve while running): nothing written
        rec = loops.inspect(project, "demo")  # a reader never sees a torn or tampered file
        assert rec.tamper == ""
    return done


def test_many_processes_lose_no_update_and_keep_the_chain(project: Path) -> None:
    p = make_loop(project, brakes={"max_iterations": 5, "max_budget_usd": 1000.0})
    workers = 6
    ctx = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    with ctx.Pool(workers) as pool:
        results = pool.starmap(_worker, [(str(p.root), n) for n in range(workers)])
    state = loops.read_state(p, "demo")
    ticks = sum(r["ticks"] for r in results)
    assert state.iteration_count == ticks == workers * OPS_PER_WORKER
    assert state.spent_usd == pytest.approx(0.25 * ticks)
    assert state.resumed_count == sum(r["approvals"] for r in results)
    check = verify_text(log_text(p), load_key(create=False))
    assert check.ok, check.error
    assert len(check.lines) == 2 + sum(r["lines"] for r in results)  # CREATED, first APPROVED
    assert check.last_state == loops.state_token(state_file(p).read_bytes())
    validate_state(json.loads(state_file(p).read_text()), "final")
    assert sum(r["approvals"] for r in results) > 0  # the mix really exercised halt + approve


# ---- brake review: counters checked against the log, deleted and corrupt states -------------

def _forge(p: Project, event: str, fields: dict[str, object], state: LoopState | None = None) -> None:
    """Append a correctly CHAINED and KEYED line (a forger who even holds the key: the ledger
    checks stand on their own); with `state`, also write that state so the line's token seals it."""
    from automaton.core.chain import format_line, line_hash, parse_line

    folder = p.loop_dir(loops.LoopName("demo"))
    text = (folder / loops.LOG_FILE).read_text()
    last = text.splitlines()[-1]
    token = parse_line(last).state  # type: ignore[union-attr]
    if state is not None:
        data = loops.encode_state(state)
        (folder / loops.STATE_FILE).write_bytes(data)
        token = loops.state_token(data)
    line = format_line("2026-01-01T00:00:00Z", event, fields, token, line_hash(last), load_key(create=False))
    (folder / loops.LOG_FILE).write_text(text + line + "\n")


def _counted(state: LoopState) -> dict[str, object]:
    return {loops.COUNTERS[key]: value for key, value in counters(state).items()}


def test_a_chained_line_that_lowers_the_counters_is_tampering(project: Path) -> None:
    from automaton.commands.loops import check_gate

    p = make_loop(project)
    high = loops.update_state(p, "demo", via_json("TICK", {"n": 5},
                                                  lambda s: s.update(iteration_count=5, spent_usd=3.0)))
    low = patched(high, iteration_count=1, spent_usd=0.5)
    _forge(p, "TICK", {"n": 6, **_counted(low)}, low)
    with pytest.raises(loops.StateTampered, match="iterations goes down"):
        loops.read_state(p, "demo")
    out = check_gate(p, "demo")
    assert out.code == 1 and out.data is not None and out.data["reason"] == "state_tampered"
    s = loops.read_state(p, "demo")  # re-sealed: clean again, with the counters the forger lowered
    assert (s.iteration_count, s.spent_usd, s.status) == (5, 3.0, "halted")


def test_a_state_below_its_logged_counters_is_tampering(project: Path) -> None:
    p = make_loop(project)
    s = loops.update_state(p, "demo", via_json("TICK", {"n": 2}, lambda s: s.update(iteration_count=2, spent_usd=1.0)))
    _forge(p, "TICK", {"n": 3, **_counted(patched(s, iteration_count=9))}, s)  # the line says 9, the file 2
    with pytest.raises(loops.StateTampered, match="iteration_count 2 is lower than its log's 9"):
        loops.read_state(p, "demo")


def test_an_unknown_event_is_tampering(project: Path) -> None:
    p = make_loop(project)
    s = loops.read_state(p, "demo")
    _forge(p, "RESET", {"by": "agent", **_counted(s)})
    with pytest.raises(loops.StateTampered, match="unknown event"):
        loops.read_state(p, "demo")
    # and the code never writes one: an event is a member of core.loopstate.Event (the type checker
    # refuses any other), which is the closed list the log check reads
    assert "RESET" not in Event.__members__ and {e.value for e in Event} == loops.EVENTS


def test_approval_marks_never_go_down_outside_an_approval(project: Path) -> None:
    p = make_loop(project)
    s = loops.update_state(p, "demo", via_json("APPROVED", {}, lambda s: s.update(
        iteration_count=4, spent_usd=2.0, iterations_at_approval=4, spent_usd_at_approval=2.0)))
    lowered = patched(s, iterations_at_approval=0)  # 4 fresh iterations for free
    _forge(p, "TICK", {"n": 5, **_counted(lowered)}, lowered)
    with pytest.raises(loops.StateTampered, match="iterations_at_approval goes down"):
        loops.read_state(p, "demo")


def test_a_tick_gives_back_at_most_its_reservation(project: Path) -> None:
    p = make_loop(project)

    def reserve(s: dict[str, Any]) -> None:
        s.update(iteration_count=s["iteration_count"] + 1, spent_usd=s["spent_usd"] + 1.0)

    loops.update_state(p, "demo", via_json("TICK_START", {"n": 1, "reserved_usd": 1.0}, reserve))
    with pytest.raises(ValueError, match="may not decrease"):  # more than reserved: a bug
        loops.update_state(p, "demo", via_json("TICK", {"n": 1}, lambda s: s.update(spent_usd=0.0), refund_usd=0.5))
    s = loops.update_state(p, "demo", via_json("TICK", {"n": 1}, lambda s: s.update(spent_usd=0.25), refund_usd=0.75))
    assert loops.read_state(p, "demo").spent_usd == 0.25 == s.spent_usd
    loops.update_state(p, "demo", via_json("TICK_START", {"n": 2, "reserved_usd": 1.0}, reserve))
    over = patched(loops.read_state(p, "demo"), spent_usd=0.0)  # gives back 1.25 of a 1.0 reservation
    _forge(p, "TICK", {"n": 2, **_counted(over)}, over)
    with pytest.raises(loops.StateTampered, match="spent_usd goes down"):
        loops.read_state(p, "demo")


def _reserve_one(p: Project, n: int, reserved: float = 1.0) -> LoopState:
    def reserve(s: dict[str, Any]) -> None:
        s.update(iteration_count=s["iteration_count"] + 1, spent_usd=round(s["spent_usd"] + reserved, 6))

    return loops.update_state(p, "demo", via_json("TICK_START", {"n": n, "reserved_usd": repr(reserved)}, reserve))


def _defer(s: dict[str, Any], refund: float) -> None:
    s.update(iteration_count=s["iteration_count"] - 1, spent_usd=round(s["spent_usd"] - refund, 6))


def test_a_deferred_tick_gives_back_its_iteration_and_what_it_did_not_spend(project: Path) -> None:
    p = make_loop(project)
    _reserve_one(p, 1)
    s = loops.update_state(p, "demo", via_json("TICK", {"n": 1}, lambda s: s.update(spent_usd=0.5), refund_usd=0.5))
    assert (s.iteration_count, s.spent_usd) == (1, 0.5)
    _reserve_one(p, 2)
    s = loops.update_state(p, "demo", via_json("TICK_DEFERRED", {"n": 2, "refund_usd": repr(0.75), "cost": repr(0.25)},
                           lambda s: _defer(s, 0.75), refund_usd=0.75, refund_iterations=1))
    assert (s.iteration_count, s.spent_usd) == (1, 0.75)  # tick 2 not counted, its $0.25 charged
    rec = loops.inspect(p, "demo")
    assert rec.tamper == "" and rec.chain.lines[-1].event == "TICK_DEFERRED"
    _reserve_one(p, 2)  # the next tick takes the same number: the ledger accepts it
    loops.update_state(p, "demo", via_json("TICK", {"n": 2}, lambda s: s.update(spent_usd=1.0), refund_usd=0.75))
    assert loops.inspect(p, "demo").tamper == "" and loops.read_state(p, "demo").iteration_count == 2


def test_only_a_deferred_tick_gives_back_an_iteration(project: Path) -> None:
    p = make_loop(project)
    _reserve_one(p, 1)
    _reserve_one(p, 2)
    with pytest.raises(ValueError, match="only a TICK_DEFERRED"):
        loops.update_state(p, "demo", via_json("TICK", {"n": 1}, lambda s: _defer(s, 0.0), refund_iterations=1))
    with pytest.raises(ValueError, match="may not decrease"):  # two iterations: a bug
        loops.update_state(p, "demo", via_json("TICK_DEFERRED", {"n": 2, "refund_usd": "0.0", "cost": "1.0"},
                           lambda s: s.update(iteration_count=s["iteration_count"] - 2), refund_iterations=1))


@pytest.mark.parametrize(("fields", "drop_iterations", "drop_usd", "finding"), [
    # gives back more than the reservation
    ({"refund_usd": "2.0", "cost": "0.0"}, 1, 2.0, "gives back at most its reservation minus its cost"),
    # claims $0.25 spent, gives back the whole reservation
    ({"refund_usd": "1.0", "cost": "0.25"}, 1, 1.0, "gives back at most its reservation minus its cost"),
    # a negative cost to make room for a bigger refund
    ({"refund_usd": "1.5", "cost": "-0.5"}, 1, 1.5, "gives back at most its reservation minus its cost"),
    # a refund that says 0.5 but lowers spent_usd by 1.0
    ({"refund_usd": "0.5", "cost": "0.5"}, 1, 1.0, "spent_usd goes down"),
    # two iterations for one tick
    ({"refund_usd": "0.5", "cost": "0.5"}, 2, 0.5, "iterations goes down"),
    # no refund_usd at all
    ({"cost": "0.5"}, 1, 0.5, "gives back at most"),
])
def test_a_forged_deferral_that_gives_back_more_is_tampering(project: Path, fields: dict[str, str],
                                                            drop_iterations: int, drop_usd: float,
                                                            finding: str) -> None:
    p = make_loop(project)
    loops.update_state(p, "demo", via_json("TICK", {"n": 3}, lambda s: s.update(iteration_count=3, spent_usd=3.0)))
    held = _reserve_one(p, 4)
    forged = patched(held, iteration_count=held.iteration_count - drop_iterations,
                     spent_usd=round(held.spent_usd - drop_usd, 6))
    _forge(p, "TICK_DEFERRED", {"n": 4, **fields, **_counted(forged)}, forged)
    with pytest.raises(loops.StateTampered, match=finding):
        loops.read_state(p, "demo")


def test_a_deferral_closes_only_its_own_open_reservation(project: Path) -> None:
    p = make_loop(project)
    loops.update_state(p, "demo", via_json("TICK", {"n": 3}, lambda s: s.update(iteration_count=3, spent_usd=3.0)))
    s = loops.read_state(p, "demo")
    no_start = patched(s, iteration_count=2, spent_usd=2.0)  # no TICK_START: nothing to give back
    _forge(p, "TICK_DEFERRED", {"n": 3, "refund_usd": "1.0", "cost": "0.0", **_counted(no_start)}, no_start)
    with pytest.raises(loops.StateTampered, match="iterations goes down"):
        loops.read_state(p, "demo")


def test_a_second_deferral_of_the_same_tick_is_tampering(project: Path) -> None:
    p = make_loop(project)
    loops.update_state(p, "demo", via_json("TICK", {"n": 3}, lambda s: s.update(iteration_count=3, spent_usd=3.0)))
    _reserve_one(p, 4)
    once = loops.update_state(p, "demo", via_json("TICK_DEFERRED", {"n": 4, "refund_usd": "1.0", "cost": "0.0"},
                              lambda s: _defer(s, 1.0), refund_usd=1.0, refund_iterations=1))
    twice = patched(once, iteration_count=once.iteration_count - 1, spent_usd=once.spent_usd - 1.0)
    _forge(p, "TICK_DEFERRED", {"n": 4, "refund_usd": "1.0", "cost": "0.0", **_counted(twice)}, twice)
    with pytest.raises(loops.StateTampered, match="goes down"):
        loops.read_state(p, "demo")


def test_a_deleted_state_with_its_log_is_tampering_and_a_human_rebuilds_it(project: Path, approver: str) -> None:
    from automaton.commands.loops import approve_loop

    p = make_loop(project)
    loops.update_state(p, "demo", via_json("TICK", {"n": 7}, lambda s: s.update(iteration_count=7, spent_usd=4.5)))
    state_file(p).unlink()
    assert loops.require_tracked(p, "demo") == "demo"  # not UNTRACKED: its log proves it was tracked
    with pytest.raises(loops.StateTampered, match=r"state deleted.*--approve --loop demo"):
        loops.read_state(p, "demo")
    with pytest.raises(BadInput, match="already exists"):
        make_loop(project)
    out = approve_loop(p, "demo")
    assert out.code == 0
    s = loops.read_state(p, "demo")
    assert (s.iteration_count, s.spent_usd, s.status, s.resumed_count) == (7, 4.5, "running", 1)
    assert (s.iterations_at_approval, s.spent_usd_at_approval) == (7, 4.5)  # a fresh allowance


def test_a_corrupt_state_names_the_next_step_and_a_human_restores_it(project: Path, approver: str) -> None:
    from automaton.commands.loops import approve_loop

    p = make_loop(project)
    loops.update_state(p, "demo", via_json("TICK", {"n": 3}, lambda s: s.update(iteration_count=3, spent_usd=1.5)))
    state_file(p).write_bytes(b"{ half")
    with pytest.raises(CorruptState, match=r"not valid JSON.*a human restores it from its intact log with:"
                                           r" automaton --approve --loop demo"):
        loops.read_state(p, "demo")
    assert approve_loop(p, "demo").code == 0
    assert loops.read_state(p, "demo").iteration_count == 3
    assert (state_file(p).parent / ".state.loop.broken").read_bytes() == b"{ half"  # kept as evidence


def test_untracked_hint_only_for_a_folder_with_neither_file(project: Path) -> None:
    p = make_loop(project)
    (state_file(p).parent / loops.LOG_FILE).unlink()
    state_file(p).unlink()
    with pytest.raises(BadInput, match=r"UNTRACKED.*Run --upgrade-loops to bootstrap"):
        loops.require_tracked(p, "demo")


def test_unlistable_loops_folder_fails_closed_for_task_owners(project: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """An `.automaton/loops/` that exists but cannot be listed is not "no loops" (fail closed)."""
    p = make_loop(project)
    real_iterdir = Path.iterdir

    def iterdir(self: Path) -> Any:
        if self == p.loops_dir:
            raise PermissionError(13, "Permission denied")
        return real_iterdir(self)

    monkeypatch.setattr(Path, "iterdir", iterdir)
    with pytest.raises(CorruptState, match="cannot list loops"):
        loops.halted_owners(p, TaskRef.parse("fix-ci"))


def test_missing_loops_folder_lists_no_loops(project: Path) -> None:
    assert loops.list_loops(Project.at(str(project))) == []


# ---- keyed logs ------------------------------------------------------------------------------

def _unkeyed(p: Project, *, forget_marks: bool) -> None:
    """Rewrite the loop's log as unkeyed lines with a recomputed chain (what automaton wrote
    before keys existed, or a forger without the key); `forget_marks`: as if automaton had never
    keyed it either (a project from before keys)."""
    import shutil

    from automaton.core.chain import GENESIS, line_hash, parse_line
    from automaton.store import key

    log = p.loop_dir(loops.LoopName("demo")) / loops.LOG_FILE
    prev, text = GENESIS, ""
    for raw in log.read_text().splitlines():
        line = parse_line(raw)
        assert line is not None
        body = line.body.replace(f"prev={line.prev}", f"prev={prev}")
        text, prev = text + body + "\n", line_hash(body)
    log.write_text(text)
    if forget_marks:
        shutil.rmtree(key.key_path().parent / "keyed")


def test_a_forged_unkeyed_line_is_tampering_and_the_gate_keeps_the_counters(project: Path) -> None:
    from automaton.commands.loops import check_gate
    from automaton.core.chain import format_line, line_hash

    p = make_loop(project)
    high = loops.update_state(p, "demo", via_json("TICK", {"n": 3},
                                                  lambda s: s.update(iteration_count=3, spent_usd=2.0)))
    low = patched(high, iteration_count=0)
    data = loops.encode_state(low)
    text = log_text(p)
    forged = format_line("2026-01-01T00:00:00Z", "TICK", {"n": 4, **_counted(low)}, loops.state_token(data),
                         line_hash(text.splitlines()[-1]))
    (p.loop_dir(loops.LoopName("demo")) / loops.LOG_FILE).write_text(text + forged + "\n")
    state_file(p).write_bytes(data)
    with pytest.raises(loops.StateTampered, match="line 4 has no mac"):
        loops.read_state(p, "demo")
    out = check_gate(p, "demo")
    assert out.code == 1 and out.data is not None and out.data["reason"] == "state_tampered"
    s = loops.read_state(p, "demo")
    assert (s.iteration_count, s.status) == (3, "halted")
    assert verify_text(log_text(p), load_key(create=False)).lines[-1].mac  # the re-seal is keyed


def test_a_legacy_loop_log_reads_is_flagged_and_the_next_write_keys_it(project: Path) -> None:
    from automaton.commands.loop_views import audit_section

    p = make_loop(project)
    _unkeyed(p, forget_marks=True)
    rec = loops.inspect(p, "demo")
    assert rec.tamper == "" and rec.chain.legacy
    (row,) = audit_section(p)[1]
    assert str(row["flag"]).startswith("UNKEYED (legacy):") and "next tick keys it" in str(row["flag"])
    loops.update_state(p, "demo", via_json("TICK", {"n": 1}, lambda s: s.update(iteration_count=1)))
    rec = loops.inspect(p, "demo")
    assert rec.tamper == "" and not rec.chain.legacy and rec.chain.lines[0].mac == ""
    assert audit_section(p)[1][0]["flag"] is None


def test_a_keyed_loop_log_replaced_by_an_unkeyed_one_is_tampering_until_a_human_reseals(
        project: Path, approver: str) -> None:
    from automaton.commands.loops import approve_loop

    p = make_loop(project)
    loops.update_state(p, "demo", via_json("TICK", {"n": 1}, lambda s: s.update(iteration_count=1)))
    _unkeyed(p, forget_marks=False)
    with pytest.raises(loops.StateTampered, match="the whole log was replaced"):
        loops.read_state(p, "demo")
    assert approve_loop(p, "demo").code == 0
    folder = p.loop_dir(loops.LoopName("demo"))
    assert (folder / ".state.log.broken").is_file()  # the replaced log is kept as evidence
    rec = loops.inspect(p, "demo")
    assert rec.tamper == "" and rec.state.iteration_count == 1 and all(line.mac for line in rec.chain.lines)


# ---- resolving a loop ------------------------------------------------------------------------

def test_resolve_names_what_sits_where_the_loop_folder_should_be(project: Path) -> None:
    """Loop.resolve looks closer only when the folder or its state is not what it should be:
    every case it refuses still gets its own message."""
    p = make_loop(project)
    p.loops_dir.joinpath("afile").write_text("x")
    with pytest.raises(BadInput, match="is a file where the folder of loop 'afile' should be"):
        loops.Loop.resolve(p, "afile")
    p.loops_dir.joinpath("gone").symlink_to(project / "nowhere")
    with pytest.raises(BadInput, match="is a dangling symlink where the folder of loop 'gone'"):
        loops.Loop.resolve(p, "gone")
    with pytest.raises(BadInput, match="unknown loop 'ghost' \\(no folder"):
        loops.Loop.resolve(p, "ghost")
    state = state_file(p)
    state.unlink()
    state.mkdir()
    with pytest.raises(CorruptState, match="not a regular file"):
        loops.Loop.resolve(p, "demo")
    state.rmdir()
    state.symlink_to(project / "nowhere")
    with pytest.raises(CorruptState, match="not a regular file"):
        loops.Loop.resolve(p, "demo")
    state.unlink()
    assert loops.Loop.resolve(p, "demo").name == "demo"  # its log says it was tracked: a deletion
    (state.parent / loops.LOG_FILE).unlink()
    with pytest.raises(BadInput, match="UNTRACKED"):
        loops.Loop.resolve(p, "demo")


def test_a_resolved_loop_is_a_frozen_dataclass(project: Path) -> None:
    from dataclasses import FrozenInstanceError, replace

    p = make_loop(project)
    one, two = loops.Loop.resolve(p, "demo"), loops.Loop.resolve(p, "demo")
    assert one == two and hash(one) == hash(two) and {one: 1}[two] == 1
    assert repr(one) == f"Loop(project={p!r}, name='demo', dir={p.loop_dir(loops.LoopName('demo'))!r})"
    with pytest.raises(FrozenInstanceError):
        one.name = loops.LoopName("other")  # type: ignore[misc]
    assert replace(one, name=loops.LoopName("x")).name == "x"
    rec = one.inspect()
    assert rec == one.inspect() and rec.tamper == "" and not rec.rebuilt
    with pytest.raises(TypeError):
        hash(rec)  # a mutable record is unhashable, as a dataclass with eq is


def test_utc_now_is_the_datetime_stamp_it_replaced() -> None:
    from datetime import UTC, datetime

    before = datetime.now(UTC).replace(microsecond=0)
    stamp = chainlog.utc_now()
    after = datetime.now(UTC)
    assert before <= datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC) <= after


def test_loop_dir_in_the_verify_command_is_the_folder_of_the_machine_reading_it(tmp_path: Path) -> None:
    """loop.json's `{loop_dir}` names the loop folder where the reader keeps it: a clone at another
    path (a state remote's runner) runs its own copy, and the sealed bytes name no machine's path."""
    doc = json.loads(json.dumps(DESIGN_EXAMPLE))
    doc["roles"]["verify"] = {"command": ["python3", "{loop_dir}/scorer.py", "lint", "--at={loop_dir}"],
                              "score": "agent"}
    data = (json.dumps(doc) + "\n").encode()
    cfg = loops.parse_config_bytes(data, "loop.json")
    for folder in (tmp_path / "a" / ".automaton" / "loops" / "x", tmp_path / "elsewhere" / "x"):
        got = loops.with_loop_dir(cfg, folder)
        assert got.roles.verify.command == ["python3", f"{folder}/scorer.py", "lint", f"--at={folder}"]
        assert got.sha256 == cfg.sha256  # the seal is of the bytes, token and all
    assert cfg.roles.verify.command == ["python3", "{loop_dir}/scorer.py", "lint", "--at={loop_dir}"]
    plain = loops.parse_config_bytes((json.dumps(DESIGN_EXAMPLE) + "\n").encode(), "loop.json")
    assert loops.with_loop_dir(plain, tmp_path) is plain  # nothing to put in: the same config
