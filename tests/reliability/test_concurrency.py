"""Sixteen processes mutating one loop and one task at once: zero lost updates.

Every read-modify-write happens under the loop's / task's kernel lock, so the counters add up
exactly and the task's log is one unbroken sequence of moves, each from where the last one
arrived, with exactly as many moves as the processes report having made.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from automaton.core.chain import parse_line
from automaton.store import loops as store
from automaton.store import tasks
from tests.reliability.kit import LOOP, PY, TASK, chain_ok, leftovers, loop_dir, setup_project

PROCS = 16
ROUNDS = 8
COST = 0.25

WORKER = f"COST, LOOP, TASK, ROUNDS = {COST!r}, {LOOP!r}, {TASK!r}, {ROUNDS!r}\n" + r"""
import json, sys, pathlib, time
from automaton.store.layout import Project
from automaton.store import loops
from automaton.commands.tasks import transition, approve
from automaton.core.errors import Refused
from automaton.core.loopstate import Event, LogEvent
root, go = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
project = Project(root)
while not go.exists():
    time.sleep(0.005)
made = {"bumps": 0, "logs": 0, "moves": 0, "refused": 0}
def bump(s):
    from dataclasses import replace
    from automaton.core.loopstate import Event, LogEvent, usd_to_micro
    return (replace(s, iteration_count=s.iteration_count + 1,
                    spent_micro_usd=s.spent_micro_usd + usd_to_micro(COST)),
            LogEvent(Event.TICK, {"n": "next"}))

for i in range(ROUNDS):
    loops.update_state(project, LOOP, bump)
    made["bumps"] += 1
    loops.log_event(project, LOOP, LogEvent(Event.SKIPPED, {"reason": "busy"}))
    made["logs"] += 1
    # Race on the task: every process tries both moves; exactly one of each racing pair wins.
    for attempt in (lambda: transition(project, TASK, "human_intervention"),
                    lambda: approve(project, TASK, to="research")):
        try:
            attempt()
            made["moves"] += 1
        except Refused:
            made["refused"] += 1
print(json.dumps(made))
"""


def test_sixteen_processes_lose_no_update(project: Path, tmp_path: Path) -> None:
    proj = setup_project(project, tmp_path / "agent.runs", bound=False)
    go = tmp_path / "go"
    env = dict(os.environ, AUTOMATON_APPROVER="race-test")
    procs = [subprocess.Popen([PY, "-c", WORKER, str(proj.root), str(go)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(PROCS)]
    go.write_text("go")  # release them together
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        reports.append(json.loads(out.strip().splitlines()[-1]))

    bumps = sum(r["bumps"] for r in reports)
    moves = sum(r["moves"] for r in reports)
    assert bumps == PROCS * ROUNDS
    assert sum(r["moves"] + r["refused"] for r in reports) == PROCS * ROUNDS * 2

    state = store.read_state(proj, LOOP)
    assert state.iteration_count == bumps
    assert state.spent_usd == pytest.approx(COST * bumps, abs=1e-9)
    lines = [parse_line(line) for line in chain_ok(loop_dir(proj) / store.LOG_FILE)]
    ticks = [p for p in lines if p is not None and p.event == "TICK"]
    assert [int(t.fields["iterations"]) for t in ticks] == list(range(1, bumps + 1))
    assert sum(1 for p in lines if p is not None and p.event == "SKIPPED") == PROCS * ROUNDS

    task_lines = [parse_line(line) for line in chain_ok(proj.tasks_dir / TASK / tasks.LOG)]
    made = [p for p in task_lines if p is not None and p.event in ("TRANSITION", "APPROVED")
            and p.fields.get("from") in ("research", "human_intervention")]
    assert len(made) == moves >= 2
    prev = "research"
    for move in made:
        assert move.fields["from"] == prev and move.state == move.fields["to"] != prev
        prev = move.state
    assert leftovers(proj.root) == []
