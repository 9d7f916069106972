"""The per-loop worktree, with real git in tmp_path (tick step 6 in docs/architecture.md)."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from automaton.core.errors import Refused
from automaton.git.worktree import ensure_worktree
from automaton.runner.tick import tick
from automaton.runner.worktree import ensure_for_tick
from automaton.store import loops as store
from automaton.store.layout import Project
from tests.helpers import calls, git, run_cli, via_json
from tests.runner.loopkit import make_loop

REAL_GIT = shutil.which("git") or "/usr/bin/git"
VERIFY = {"roles": {"implement": {"prompt": "implement.md"},
                    "verify": {"command": [sys.executable, "-c", "print('1 failed, 1 passed')"], "score": "summary"},
                    "orchestrate": {"builtin": True}}}
WRITE_SRC = {"implement": [{"actions": [{"write": "src/one.py", "content": "one = 1\n"}], "text": "t1",
                            "cost_usd": 0.1},
                           {"actions": [{"write": "src/two.py", "content": "two = 2\n"}], "text": "t2",
                            "cost_usd": 0.1}]}


def wrap_git(fake_bin: Any, fail_add: bool = False) -> None:
    """A `git` first on PATH that records argv and runs the real git (optionally failing `worktree add`)."""
    fake_bin("git", f"""
        args = sys.argv[1:]
        if {fail_add!r} and "worktree" in args and "add" in args:
            sys.stderr.write("fatal: simulated worktree add failure\\n")
            sys.exit(128)
        os.execv({REAL_GIT!r}, [{REAL_GIT!r}] + args)
        """)


def add_calls(fake_bin: Any) -> list[list[str]]:
    return [c for c in calls(fake_bin.dir, "git") if "worktree" in c and "add" in c]


def loop_dir(project: Project, name: str = "demo") -> Path:
    return project.loop_dir(store.require_tracked(project, name))


def state(project: Project, name: str = "demo") -> dict[str, Any]:
    return store.read_state(project, name)


def log_events(project: Project, name: str = "demo") -> list[str]:
    return [line.split(" ")[1] for line in (loop_dir(project, name) / ".state.log").read_text().splitlines()]


# ---- ensure_worktree: create, reuse, opt out -----------------------------------------------

def test_ensure_worktree_creates_worktree(project: Path, tmp_path: Path) -> None:
    loop = tmp_path / "loopdir"
    loop.mkdir()
    res = ensure_worktree(project, loop, "demo")
    assert res.fallback is None and res.created
    assert res.path == loop / "worktree" and (res.path / "README.md").is_file()
    assert res.branch == "loop/demo"
    assert res.base_commit == git(project, "rev-parse", "HEAD").strip()
    assert git(res.path, "rev-parse", "--abbrev-ref", "HEAD").strip() == "loop/demo"
    assert str(res.path) in git(project, "worktree", "list", "--porcelain")


def test_ensure_worktree_reuses_existing(project: Path, tmp_path: Path, fake_bin: Any) -> None:
    loop = tmp_path / "loopdir"
    loop.mkdir()
    first = ensure_worktree(project, loop, "demo")
    (first.path / "work.txt").write_text("in progress")
    wrap_git(fake_bin)
    again = ensure_worktree(project, loop, "demo", recorded_path=str(first.path), recorded_base=first.base_commit)
    assert again.path == first.path and not again.created and again.fallback is None
    assert again.base_commit == first.base_commit
    assert (again.path / "work.txt").read_text() == "in progress"
    assert add_calls(fake_bin) == []


def test_ensure_worktree_use_worktree_false_returns_project_root(project: Path, tmp_path: Path,
                                                                 fake_bin: Any) -> None:
    wrap_git(fake_bin)
    res = ensure_worktree(project, tmp_path, "demo", use_worktree=False)
    assert res.path == project and res.branch is None and res.fallback is None
    assert calls(fake_bin.dir, "git") == []  # no git calls at all
    proj = make_loop(project, blast_radius={"use_worktree": False}, script=WRITE_SRC, **VERIFY)
    before = state(proj)
    got = ensure_for_tick(store.Loop.resolve(proj, "demo"), store.read_config(proj, "demo"), before)
    assert got.path == proj.root and got.branch is None
    # The first tick in place records the checkout's HEAD as its base (drift and commits measure
    # from it), and nothing else; a later tick changes nothing.
    head = git(project, "rev-parse", "HEAD").strip()
    after = state(proj)
    assert got.base_commit == head and after == replace(before, base_commit=head)
    ensure_for_tick(store.Loop.resolve(proj, "demo"), store.read_config(proj, "demo"), after)
    assert state(proj) == after


def test_ensure_worktree_missing_field_defaults_true(project: Path) -> None:
    proj = make_loop(project, script=WRITE_SRC, **VERIFY)
    cfg_path = loop_dir(proj) / "loop.json"
    data = json.loads(cfg_path.read_text())
    del data["blast_radius"]["use_worktree"]
    cfg = store.parse_config_bytes(json.dumps(data).encode(), str(cfg_path))
    assert cfg.blast_radius.use_worktree is True
    res = ensure_for_tick(store.Loop.resolve(proj, "demo"), cfg, state(proj))
    assert res.path == loop_dir(proj) / "worktree" and res.path.is_dir()


# ---- fallback to the main checkout ---------------------------------------------------------

def test_ensure_worktree_falls_back_when_not_git_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    plain = tmp_path / "plain"
    plain.mkdir()
    res = ensure_worktree(plain, plain / "loop", "demo")
    assert res.path == plain and res.branch is None
    assert res.fallback is not None and "not a git repository" in res.fallback
    assert not (plain / "loop" / "worktree").exists()


def test_ensure_worktree_falls_back_when_git_missing(project: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    res = ensure_worktree(project, tmp_path / "loop", "demo")
    assert res.path == project and res.fallback == "git not found on PATH"


def test_ensure_worktree_falls_back_when_worktree_add_fails(project: Path, tmp_path: Path, fake_bin: Any) -> None:
    wrap_git(fake_bin, fail_add=True)
    res = ensure_worktree(project, tmp_path / "loop", "demo")
    assert res.path == project and res.branch is None
    assert res.fallback is not None and "simulated worktree add failure" in res.fallback
    assert len(add_calls(fake_bin)) >= 1


def test_failed_worktree_add_in_a_repository_refuses_the_tick(project: Path, fake_bin: Any) -> None:
    """Departure from the fallback of a failed `git worktree add`: in a repository, running in
    the main checkout would drop the drift and protected-path checks, so the tick refuses
    (exit 2, nothing charged, nothing run) and says how to fix it. A project without git still
    falls back (test_tick_falls_back_to_project_root_when_no_git)."""
    from automaton.core.errors import BadInput

    proj = make_loop(project, script=WRITE_SRC, **VERIFY)
    wrap_git(fake_bin, fail_add=True)
    with pytest.raises(BadInput, match="simulated"):
        ensure_for_tick(store.Loop.resolve(proj, "demo"), store.read_config(proj, "demo"), state(proj))
    out = run_cli("--mode", "tick", "--loop", "demo", "--project", str(proj.root), entry="automaton-loop")
    assert out.code == 2 and "the tick did not run" in out.err and "Traceback" not in out.err
    s = state(proj)
    assert (s.iteration_count, s.spent_usd, s.worktree_fallback) == (0, 0.0, None)
    assert not (project / "src" / "one.py").exists()


# ---- through a tick ------------------------------------------------------------------------

def test_tick_creates_worktree_on_first_tick(project: Path) -> None:
    proj = make_loop(project, script=WRITE_SRC, **VERIFY)
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["ran"]
    s = state(proj)
    wt = loop_dir(proj) / "worktree"
    assert s.worktree_path == str(wt) and s.worktree_branch == "loop/demo"
    assert s.base_commit == git(project, "rev-parse", "HEAD").strip()
    assert (wt / "src" / "one.py").is_file() and not (project / "src" / "one.py").exists()
    assert git(wt, "log", "-1", "--format=%s").strip() == "automaton: tick 1"
    assert s.iteration_count == 1


def test_tick_reuses_worktree_on_second_tick(project: Path) -> None:
    proj = make_loop(project, script=WRITE_SRC, **VERIFY)
    assert tick(proj, "demo").code == 0
    first = state(proj).worktree_path
    assert tick(proj, "demo").code == 0
    s = state(proj)
    assert s.worktree_path == first and s.iteration_count == 2
    assert log_events(proj).count("WORKTREE") == 1
    wt = Path(first)
    assert (wt / "src" / "one.py").is_file() and (wt / "src" / "two.py").is_file()


def test_tick_falls_back_to_project_root_when_no_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    plain = tmp_path / "plain"
    (plain / "src").mkdir(parents=True)  # in the main checkout the sandbox opens existing top-level entries only
    proj = make_loop(plain, script=WRITE_SRC, **VERIFY)
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["worktree_fallback"]
    assert (plain / "src" / "one.py").is_file()  # the agent worked in the project root
    s = state(proj)
    assert s.worktree_path is None and "not a git repository" in s.worktree_fallback
    assert s.iteration_count == 1 and "WARNING" in log_events(proj)


# ---- the branch already exists -------------------------------------------------------------

def test_ensure_worktree_reuses_existing_branch(project: Path, tmp_path: Path) -> None:
    git(project, "branch", "loop/demo")
    git(project, "checkout", "-q", "loop/demo")
    (project / "earlier.txt").write_text("from an earlier worktree")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "earlier work")
    tip = git(project, "rev-parse", "HEAD").strip()
    git(project, "checkout", "-q", "main")
    res = ensure_worktree(project, tmp_path / "loop", "demo")
    assert res.fallback is None and res.created and res.branch == "loop/demo"
    assert git(res.path, "rev-parse", "HEAD").strip() == tip
    assert (res.path / "earlier.txt").is_file()
    assert res.base_commit == git(project, "rev-parse", "main").strip()  # merge base, not the tip


def test_ensure_worktree_falls_back_when_branch_checkout_fails(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    git(project, "worktree", "add", "-q", "-b", "loop/demo", str(other))
    res = ensure_worktree(project, tmp_path / "loop", "demo")
    assert res.path == project and res.branch is None
    assert res.fallback == f"branch loop/demo is checked out at {other.resolve()}"


# ---- state consistency: a recorded worktree that is gone -----------------------------------

def test_ensure_worktree_clears_stale_worktree_path(project: Path) -> None:
    """A recorded worktree that is gone is re-created; when a
    foreign folder blocks the re-creation the loop halts instead of lifting its blast radius
    into the main checkout (the folder is never deleted)."""
    proj = make_loop(project, script=WRITE_SRC, **VERIFY)
    store.update_state(proj, "demo", via_json("WORKTREE", {"path": "gone"},
                       lambda s: s.update(worktree_path=str(project / "gone"), worktree_branch="loop/demo")))
    blocker = loop_dir(proj) / "worktree"
    blocker.mkdir()
    (blocker / "keep.txt").write_text("not automaton's")
    with pytest.raises(Refused, match="not a git worktree"):
        ensure_for_tick(store.Loop.resolve(proj, "demo"), store.read_config(proj, "demo"), state(proj))
    s = state(proj)
    assert s.status == "halted" and s.halt_reason == "drift_detected"
    assert s.halt_detail.startswith("worktree_lost: ")
    assert (blocker / "keep.txt").read_text() == "not automaton's"  # never deleted
    shutil.rmtree(blocker)  # truly gone: re-created, no fallback
    store.update_state(proj, "demo", via_json("APPROVED", {}, lambda s: s.update(status="running", halt_reason=None,
                                                                         halt_detail=None)))
    res = ensure_for_tick(store.Loop.resolve(proj, "demo"), store.read_config(proj, "demo"), state(proj))
    assert res.cleared_stale and res.created and res.fallback is None
    assert state(proj).worktree_path == str(blocker)


def test_ensure_worktree_recreates_after_deletion(project: Path) -> None:
    proj = make_loop(project, script=WRITE_SRC, **VERIFY)
    assert tick(proj, "demo").code == 0
    wt = Path(state(proj).worktree_path)
    shutil.rmtree(wt)  # registered with git but missing on disk
    res = ensure_for_tick(store.Loop.resolve(proj, "demo"), store.read_config(proj, "demo"), state(proj))
    assert res.path == wt and res.created and res.cleared_stale and res.fallback is None
    assert (wt / "src" / "one.py").is_file()  # tick 1's commit on loop/demo came back
    assert state(proj).worktree_path == str(wt)


# ---- paths ---------------------------------------------------------------------------------

def test_worktree_path_uses_pathlib(project: Path, tmp_path: Path, fake_bin: Any) -> None:
    wrap_git(fake_bin)
    loop = tmp_path / "some dir" / "loop"
    loop.mkdir(parents=True)
    res = ensure_worktree(project, loop, "demo")
    (argv,) = add_calls(fake_bin)
    path_args = [a for a in argv if a.endswith("worktree") and a != "worktree"]
    assert path_args == [str(Path(loop) / "worktree")]
    assert Path(path_args[0]).is_absolute() and res.path == Path(path_args[0])


# ---- regressions ---------------------------------------------------------------------------

def test_existing_loop_with_worktree_path_ticks_unchanged(project: Path, fake_bin: Any) -> None:
    proj = make_loop(project, script=WRITE_SRC, **VERIFY)
    assert tick(proj, "demo").code == 0
    before = state(proj)
    wrap_git(fake_bin)
    out = tick(proj, "demo")
    assert out.code == 0
    after = state(proj)
    assert add_calls(fake_bin) == []
    for key in ("worktree_path", "worktree_branch", "base_commit", "worktree_fallback"):
        assert getattr(after, key) == getattr(before, key)
    assert after.iteration_count == 2



def test_a_loop_that_had_a_worktree_halts_when_the_repository_disappears(project: Path) -> None:
    """A broken or moved .git after the first tick is not the "not a repo" fallback: falling
    back would run the agent in the main checkout with the drift gate skipped."""
    proj = make_loop(project, script=WRITE_SRC, **VERIFY)
    assert tick(proj, "demo").code == 0
    shutil.rmtree(loop_dir(proj) / "worktree")  # nothing left in the worktree for the drift gate
    (project / ".git").rename(project / ".git-moved")
    # the worktree step alone refuses to fall back ...
    with pytest.raises(Refused, match="the tick did not run in the main checkout"):
        ensure_for_tick(store.Loop.resolve(proj, "demo"), store.read_config(proj, "demo"), state(proj))
    assert state(proj).halt_detail.startswith("worktree_lost")


def test_the_gate_halts_when_worktree_and_branch_are_both_gone(project: Path) -> None:
    """Committed drift on loop/<name> must not vanish with the branch: no "0 files" then."""
    from automaton.commands.loops import check_gate

    proj = make_loop(project, script=WRITE_SRC, **VERIFY)
    assert tick(proj, "demo").code == 0
    shutil.rmtree(loop_dir(proj) / "worktree")
    git(project, "worktree", "prune")
    git(project, "branch", "-D", "loop/demo")
    out = check_gate(proj, "demo")
    assert out.code == 1 and out.data is not None
    assert out.data["halt_reason"] == "drift_detected"
    assert "cannot be read" in state(proj).halt_detail
