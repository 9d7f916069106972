"""SIGKILL at each point of a logged write: the log and its anchor stay consistent.

A real subprocess writes through the real code (a task transition, a loop state update) with
one step replaced by a SIGKILL of itself: before the line is appended, between the append and
the anchor's write, between the anchor's temp file and its rename, and between the rename and
the keyed mark. After each: a lockless reader sees no false "tampered", the next locked
command succeeds and leaves the anchor at the log's head, and `--audit` is clean.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from automaton.core.names import TaskRef
from automaton.store import anchor, chainlog, tasks
from automaton.store import loops as store
from automaton.store.layout import Project
from tests.helpers import run_cli
from tests.reliability.kit import LOOP, PY, TASK, loop_dir, setup_project

POINTS = ("before_append", "before_anchor", "before_rename", "before_mark")

WORKER = f"LOOP, TASK = {LOOP!r}, {TASK!r}\n" + r"""
import os, signal, sys
from pathlib import Path
from automaton.store import anchor, chainlog
from automaton.store import key as keys
from automaton.store.layout import Project
point, kind, root = sys.argv[1], sys.argv[2], sys.argv[3]
def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)
if point == "before_append":
    chainlog.append_line = die
elif point == "before_anchor":
    anchor.write = die
elif point == "before_rename":
    real = os.replace
    def replace(src, dst):
        if str(dst).endswith(anchor.SUFFIX):
            die()
        return real(src, dst)
    os.replace = replace
elif point == "before_mark":
    keys.mark_keyed = die
project = Project(Path(root))
if kind == "task":
    from automaton.commands.tasks import transition
    transition(project, TASK, "human_intervention")
else:
    from automaton.store import loops
    def bump(s):
        from dataclasses import replace
        from automaton.core.loopstate import Event, LogEvent
        return replace(s, iteration_count=s.iteration_count + 1), LogEvent(Event.TICK, {"n": "next"})

    loops.update_state(project, LOOP, bump)
print("not killed", flush=True)
"""


def _kill(point: str, kind: str, root: Path) -> None:
    done = subprocess.run([PY, "-c", WORKER, point, kind, str(root)], capture_output=True, text=True,
                          env=dict(os.environ), timeout=60, check=False)
    assert done.returncode == -signal.SIGKILL, done.stdout + done.stderr


def _log(project: Project, kind: str) -> Path:
    return project.task_dir(TaskRef.parse(TASK)) / tasks.LOG if kind == "task" else loop_dir(project) / store.LOG_FILE


@pytest.mark.parametrize("kind", ["task", "loop"])
@pytest.mark.parametrize("point", POINTS)
def test_a_kill_at_any_point_leaves_log_and_anchor_consistent(tmp_path: Path, point: str, kind: str) -> None:
    project = setup_project(tmp_path / "proj", tmp_path / "record")
    log = _log(project, kind)
    before = len(log.read_text().splitlines())
    _kill(point, kind, project.root)
    lines = len(log.read_text().splitlines())
    assert lines == before + (point != "before_append")
    found = anchor.read(log)
    assert found is not None
    assert found.count == (lines if point in ("before_mark",) else before)
    check = chainlog.read_chain(log)  # one line ahead at most: accepted by a lockless reader
    assert check.ok, check.error
    if kind == "task":
        assert tasks.load(project, TaskRef.parse(TASK)).tamper == ""
        nxt = run_cli("--phase", "--task", TASK, "--project", str(project.root))
    else:
        assert store.inspect(project, LOOP).tamper == ""
        nxt = run_cli("--check-gate", LOOP, "--project", str(project.root))
    assert nxt.code == 0, nxt.err
    after = anchor.read(log)  # the locked command rolled a lagging anchor forward
    if kind == "loop":
        assert after is not None and after.count == len(log.read_text().splitlines())
    assert not [n for n in os.listdir(anchor.file_of(log).parent) if not n.startswith(".") and "." in n
                and not n.endswith(anchor.SUFFIX)]
    assert run_cli("--audit", "--project", str(project.root)).code == 0
