"""runner.confine: each role's policy masks and hides the credential stores; the verify command gets no network."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from automaton.core.sandbox import Policy
from automaton.runner import confine
from automaton.runner import verify as verify_mod
from automaton.runner.tick import tick
from automaton.store import loops as store
from tests.commands.test_can_edit_config import write_config
from tests.helpers import git
from tests.runner.loopkit import make_loop


def test_role_policy_masks_and_hides_the_existing_stores(project: Path, forbid_real_home: Path,
                                                         tmp_path: Path) -> None:
    home = forbid_real_home
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("k")
    (home / ".git-credentials").write_text("c")
    proj = make_loop(project)
    cfg = store.Loop.resolve(proj, "demo").read_config()
    policy = confine.role_policy(cfg, project, tmp_path, project_root=project, in_worktree=True, label="t",
                                 harness="claude")
    assert policy is not None
    assert set(policy.masked) == {home / ".ssh", home / ".git-credentials"}
    assert set(policy.masked) <= set(policy.hidden)  # enforced by Landlock until the mount namespace is
    assert home / ".config" / "automaton" in policy.hidden
    assert policy.network is True
    quiet = confine.role_policy(cfg, project, tmp_path, project_root=project, in_worktree=True, label="t",
                                harness="command", network=False)
    assert quiet is not None and quiet.network is False


def test_every_tick_names_an_unhidden_store_and_the_verify_command_runs_offline(
        project: Path, forbid_real_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (forbid_real_home / ".netrc").write_text("machine x password y\n")
    roles = {"implement": {"prompt": "implement.md"},
             "verify": {"command": [sys.executable, "-c", "print('1 passed')"], "score": "summary"},
             "orchestrate": {"builtin": True}}
    proj = make_loop(project, roles=roles)
    write_config(project, {"schema_version": 1, "sandbox": {"unhide": ["~/.netrc"]}})
    seen: list[Policy | None] = []
    real = verify_mod.run_streaming

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("sandbox"))
        return real(*args, **kwargs)

    monkeypatch.setattr(verify_mod, "run_streaming", spy)
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["ran"], out.lines
    assert ("loop demo: sandbox: ~/.netrc is readable to agents: .automaton/config.json unhides it"
            " (sealed by a human)") in out.warnings
    assert len(seen) == 1 and seen[0] is not None and seen[0].network is False
    assert forbid_real_home / ".netrc" not in seen[0].hidden


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
    # EROFS (30) from the read-only mounts of the namespace layer, EACCES (13) from Landlock alone.
    assert ("denied shellrc 30" in log or "denied shellrc 13" in log) and "written src/app.py" in log, log
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
