"""`runner.confine`: a tick in the main checkout (a loop without a worktree) is never granted a
committed link out of the project, and says so once per tick."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

from automaton.runner import confine
from automaton.runner.tick import tick
from automaton.store import loops as store
from tests.helpers import git
from tests.runner.loopkit import make_loop

VERIFY = {"implement": {"prompt": "implement.md"},
          "verify": {"command": [sys.executable, "-c", "print('1 failed, 1 passed')"], "score": "summary"},
          "orchestrate": {"builtin": True}}


def test_a_tick_in_the_main_checkout_never_writes_through_a_committed_link(project: Path, tmp_path: Path) -> None:
    rc = Path(os.environ["HOME"]) / ".bashrc"
    rc.write_text("# rc\n")
    (project / "shellrc").symlink_to(rc)
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("x = 1\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "a link out")
    agent = tmp_path / "agent.py"
    agent.write_text(textwrap.dedent("""\
        for rel in ("shellrc", "src/app.py"):
            try:
                with open(rel, "a") as fh:
                    fh.write("agent was here\\n")
                print("written", rel)
            except OSError as exc:
                print("denied", rel, exc.errno)
        """))
    proj = make_loop(project, blast_radius={"use_worktree": False}, roles=VERIFY,
                     harness={"name": "command", "command": [sys.executable, str(agent)], "args": []})
    out = tick(proj, "demo")
    assert out.data is not None and out.data.get("ran") is not False, out.lines
    log = (proj.loop_dir(store.LoopName("demo")) / "runs" / "1" / "implement.log").read_text()
    assert "denied shellrc 13" in log and "written src/app.py" in log, log
    assert rc.read_text() == "# rc\n"
    assert any("not writable: shellrc (links out of the project" in w for w in out.warnings), out.warnings


def test_left_out_is_quiet_in_a_worktree_and_with_nothing_left_out(project: Path) -> None:
    proj = make_loop(project, blast_radius={"use_worktree": False})
    cfg = store.Loop.resolve(proj, "demo").read_config()
    assert confine.left_out(cfg, proj.root, in_worktree=False) is None
    (project / "notes").symlink_to("/etc")
    line = confine.left_out(cfg, proj.root, in_worktree=False)
    assert line == "loop demo: not writable: notes (links out of the project to /etc); the agent still reads them"
    assert confine.left_out(cfg, proj.root, in_worktree=True) is None
