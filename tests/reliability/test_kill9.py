"""SIGKILL at random moments during 1,000 real state writes (atomic, locked).

Real subprocesses write through the real code (`commands.tasks.transition` / `approve` for a
task, `store.loops.update_state` for a loop) in a tight loop and are killed with SIGKILL at a
random delay. After every kill: a lockless reader never sees a torn file or a false
"tampered", the next command succeeds, no `*.tmp` is left behind, and the chain verifies.
At the end the logs prove that no write was lost or doubled: loop counters are consecutive and
the task's transitions alternate, each line leaving from where the previous one arrived.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from automaton.core.chain import LogLine, parse_line
from automaton.core.names import TaskRef
from automaton.store import loops as store
from automaton.store import tasks
from automaton.store.layout import Project
from tests.helpers import run_cli
from tests.reliability.kit import LOOP, PY, TASK, chain_ok, leftovers, loop_dir, setup_project

TOTAL_WRITES = 1000
COST = 0.5  # USD per loop write: exact in binary, so the sum is exact

WORKER = f"COST, LOOP, TASK = {COST!r}, {LOOP!r}, {TASK!r}\n" + r"""
import sys
from automaton.store.layout import Project
from automaton.store import loops
from automaton.commands.tasks import transition, approve
from automaton.store import tasks
from automaton.core.names import TaskRef
kind, root = sys.argv[1], sys.argv[2]
project = Project(__import__("pathlib").Path(root))
print("ready", flush=True)
def bump(s):
    from dataclasses import replace
    from automaton.core.loopstate import Event, LogEvent, usd_to_micro
    return (replace(s, iteration_count=s.iteration_count + 1,
                    spent_micro_usd=s.spent_micro_usd + usd_to_micro(COST)),
            LogEvent(Event.TICK, {"n": "next"}))

while True:
    if kind == "loop":
        loops.update_state(project, LOOP, bump)
    else:
        phase = tasks.load(project, TaskRef.parse(TASK)).phase
        if phase == "research":
            transition(project, TASK, "human_intervention")
        else:
            approve(project, TASK, to="research")
    print("w", flush=True)
"""


def _kill_one(kind: str, root: Path, rng: random.Random) -> int:
    """Start a writer, SIGKILL it after a random delay; returns the writes it acknowledged."""
    env = dict(os.environ, AUTOMATON_APPROVER="kill9-test")
    proc = subprocess.Popen([PY, "-c", WORKER, kind, str(root)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    ready = proc.stdout.readline()
    assert ready == "ready\n", proc.communicate()
    time.sleep(rng.uniform(0.0, 0.3))
    proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, f"the writer died on its own: {err}"
    assert "Traceback" not in err, err
    return out.count("w\n")


def _check_loop(project: Project, acked: int) -> int:
    rec = store.inspect(project, LOOP)  # a lockless reader first: never a false "tampered"
    assert rec.tamper == "", rec.tamper
    assert acked <= rec.state.iteration_count <= acked + 1
    gate = run_cli("--check-gate", LOOP, "--json", "--project", str(project.root))
    assert gate.code == 0, gate.err
    assert leftovers(project.root) == []
    lines = chain_ok(loop_dir(project) / store.LOG_FILE)
    data = (loop_dir(project) / store.STATE_FILE).read_bytes()
    last = parse_line(lines[-1])
    assert last is not None and last.state == store.state_token(data)
    return int(store.read_state(project, LOOP).iteration_count)


def _check_task(project: Project) -> str:
    rec = tasks.load(project, TaskRef.parse(TASK))
    assert rec.tamper == "", rec.tamper
    assert rec.phase in ("research", "human_intervention")
    phase = run_cli("--phase", "--task", TASK, "--json", "--project", str(project.root))
    assert phase.code == 0, phase.err
    assert phase.json["phase"] == rec.phase
    assert leftovers(project.root) == []
    chain_ok(project.tasks_dir / TASK / tasks.LOG)
    return str(rec.phase)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_sigkill_during_1000_state_writes_never_tears_or_loses_a_write(project: Path, tmp_path: Path) -> None:
    proj = setup_project(project, tmp_path / "agent.runs", bound=False)
    rng = random.Random(20260101)
    counted = {"loop": 0, "task": 0}
    acked = {"loop": 0, "task": 0}
    kills = 0
    while counted["loop"] + counted["task"] < TOTAL_WRITES:
        kind = "loop" if counted["loop"] <= counted["task"] else "task"
        got = _kill_one(kind, proj.root, rng)
        kills += 1
        acked[kind] += got
        if kind == "loop":
            counted["loop"] = _check_loop(proj, acked["loop"])
            acked["loop"] = counted["loop"]  # a kill after the rename but before the ack counts too
        else:
            _check_task(proj)
            counted["task"] = len(_task_moves(proj))
    assert kills >= 20, "too few kills to mean anything"

    # Loop: every write is one TICK line whose counters are exactly the previous ones plus one.
    lines = chain_ok(loop_dir(proj) / store.LOG_FILE)
    ticks = [p for p in map(parse_line, lines) if p is not None and p.event == "TICK"]
    assert [int(t.fields["iterations"]) for t in ticks] == list(range(1, len(ticks) + 1))
    state = store.read_state(proj, LOOP)
    assert state.iteration_count == len(ticks)
    assert state.spent_usd == pytest.approx(COST * len(ticks), abs=1e-9)

    # Task: the moves alternate, each leaving the phase the previous one arrived at.
    moves = _task_moves(proj)
    prev = "research"
    for move in moves:
        assert move.fields["from"] == prev and move.state == move.fields["to"] != prev
        prev = move.state
    assert tasks.load(proj, TaskRef.parse(TASK)).phase == prev
    assert len(ticks) + len(moves) >= TOTAL_WRITES


def _task_moves(project: Project) -> list[LogLine]:
    lines = chain_ok(project.tasks_dir / TASK / tasks.LOG)
    parsed = [parse_line(line) for line in lines]
    return [p for p in parsed if p is not None and p.event in ("TRANSITION", "APPROVED")
            and p.fields.get("from") in ("research", "human_intervention")]
