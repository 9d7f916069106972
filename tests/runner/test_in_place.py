"""A loop without a worktree (`--create-loop … --no-worktree`, `blast_radius.use_worktree`
false) ticks in the main checkout: its first tick records the base commit, each tick commits
there, the verifier scores that commit, and the drift gate still halts a change out of scope."""

from __future__ import annotations

import sys
from pathlib import Path

from automaton.store import loops as store
from automaton.store.layout import Project
from tests.helpers import git, run_cli
from tests.runner.loopkit import make_loop

PY = sys.executable
VERIFY = {"implement": {"prompt": "implement.md"}, "orchestrate": {"builtin": True},
          "verify": {"command": [PY, "-c", "import pathlib;print(pathlib.Path('src/score.txt').read_text())"],
                     "score": "summary"}}


def step(path: str, text: str) -> dict[str, object]:
    return {"actions": [{"write": path, "content": text}], "text": "did it", "cost_usd": 0.1}


def _tick(project: Path) -> tuple[int, str]:
    res = run_cli("--mode", "tick", "--loop", "demo", "--project", str(project), "--json", "--quiet",
                  entry="automaton-loop")
    return res.code, res.out + res.err


def test_an_in_place_tick_commits_in_the_checkout_and_is_scored_on_that_commit(project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "score.txt").write_text("0 passed, 1 failed\n")
    git(project, "add", "src")
    git(project, "commit", "-q", "-m", "src")
    p = make_loop(project, script={"implement": [step("src/score.txt", "1 passed, 1 failed")]}, sandbox="off",
                  roles=VERIFY, blast_radius={"use_worktree": False})
    base = git(project, "rev-parse", "HEAD").strip()
    code, out = _tick(project)
    assert code == 0, out
    assert git(project, "log", "-1", "--format=%s").strip() == "automaton: tick 1"  # today: nothing committed
    assert git(project, "show", "--name-only", "--format=", "HEAD").split() == ["src/score.txt"]  # not .automaton/
    state = store.read_state(p, "demo")
    assert state.base_commit == base and state.worktree_path is None
    assert state.last_verdict is not None and state.last_verdict.score == 0.5
    assert not (p.loop_dir(store.LoopName("demo")) / "worktree").exists()
    assert run_cli("--check-gate", "demo", "--project", str(project)).code == 0


def test_an_in_place_change_out_of_scope_halts_drift(project: Path) -> None:
    p = make_loop(project, script={"implement": [step("README.md", "rewritten by the agent\n")]}, sandbox="off",
                  roles=VERIFY, blast_radius={"use_worktree": False})
    code, out = _tick(project)
    assert code == 0, out
    state = store.read_state(p, "demo")
    assert state.status == "halted" and state.halt_reason == "drift_detected", out  # today: no gate saw it
    assert "README.md" in str(state.halt_detail)


def test_create_loop_no_worktree_writes_use_worktree_false_and_waits_for_a_human(project: Path) -> None:
    res = run_cli("--create-loop", "demo", "--from-template", "ci-triage", "--no-worktree", "--project",
                  str(project), "--json")
    assert res.code == 0, res.err
    cfg = store.Loop.resolve(Project(project.resolve()), "demo").read_config()
    assert cfg.blast_radius.use_worktree is False
    assert any("use_worktree false" in why for why in res.json["first_approval"])
    bad = run_cli("--install-schedule", "demo", "--no-worktree", "--project", str(project))
    assert bad.code == 2 and "--no-worktree does not go with --install-schedule" in bad.err
