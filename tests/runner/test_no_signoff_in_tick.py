"""A process started by a tick (here: the verify command running agent-written code) carries
the tick's marker, so a sign-off from it is refused even with AUTOMATON_APPROVER set."""

from __future__ import annotations

import sys
from pathlib import Path

from automaton.commands import tasks
from automaton.runner.tick import tick
from automaton.store.layout import Project
from tests.runner.loopkit import make_loop

AUTOMATON = str(Path(sys.executable).parent / "automaton")


def test_verify_step_cannot_focus_or_approve(project: Path) -> None:
    proj = Project(project.resolve())
    tasks.create_task(proj, "t")
    code = (
        "import os, subprocess, sys\n"
        f"r = subprocess.run([{AUTOMATON!r}, '--focus', 't', '--project', {str(project)!r}],"
        " env=dict(os.environ, AUTOMATON_APPROVER='agent'), capture_output=True, text=True)\n"
        "print(r.stderr.strip())\n"
        "print('1 passed' if r.returncode == 1 else '1 failed')\n"
    )
    make_loop(project, roles={"implement": {"prompt": "implement.md"},
                              "verify": {"command": [sys.executable, "-c", code], "score": "summary"},
                              "orchestrate": {"builtin": True}})
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None
    log = (Path(out.data["run_dir"]) / "verify.log").read_text()
    assert "this shell belongs to an agent (AUTOMATON_LOOP_DIR is set)" in log
    assert out.data["verdict"]["score"] == 1.0
    assert not (project / ".automaton" / "focus").exists()
