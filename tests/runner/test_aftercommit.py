"""The runner's commit never meets a repository the agent nested in its worktree: the tick
halts `drift_detected` (`nested repository: <path>`) before `git add`, and no program that
repository's config names ever runs."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from automaton.runner.tick import tick
from automaton.store import loops
from tests.helpers import git, run_cli
from tests.runner.loopkit import make_loop

PY = sys.executable


def nesting_agent(marker: Path, pointer: bool = False) -> str:
    """An agent that makes `src/vendor/x` a repository of its own with one commit, then gives
    it a clean filter that writes `marker` and a dirty file: git entering it runs the filter.
    `pointer`: the nested `.git` is a file naming a git folder outside the worktree."""
    clean = f"{PY} -c \"import pathlib, sys; pathlib.Path({str(marker)!r}).write_text('ran'); " \
            "sys.stdout.write(sys.stdin.read())\""
    sep = "['--separate-git-dir', str(pathlib.Path.home() / 'elsewhere.git')]" if pointer else "[]"
    return ("import os, pathlib, subprocess\n"
            "d = pathlib.Path('src/vendor/x'); d.mkdir(parents=True)\n"
            "env = dict(os.environ, GIT_AUTHOR_NAME='a', GIT_AUTHOR_EMAIL='a@b', GIT_COMMITTER_NAME='a',"
            " GIT_COMMITTER_EMAIL='a@b')\n"
            "g = lambda *a: subprocess.run(['git', '-C', str(d), *a], check=True, env=env)\n"
            f"g('init', '-q', *{sep})\n"
            "(d / '.gitattributes').write_text('* filter=evil\\n'); (d / 'f.txt').write_text('one\\n')\n"
            "g('add', '-A'); g('commit', '-q', '-m', 'nested')\n"
            f"g('config', 'filter.evil.clean', {clean!r})\n"
            "(d / 'f.txt').write_text('dirty\\n')\n"
            "pathlib.Path('src/ok.txt').write_text('in scope\\n')\n")


def _nested_tick(project: Path, tmp_path: Path, pointer: bool) -> None:
    marker = tmp_path / "filter-ran"
    proj = make_loop(project, harness={"name": "command", "command": [PY, "-c", nesting_agent(marker, pointer)],
                                       "args": []},
                     sandbox="off", roles={"verify": {"command": [PY, "-c", "print('1 passed')"], "score": "summary"}},
                     blast_radius={"file_scope": ["src/**"]})
    out = tick(proj, "demo")
    assert not marker.exists()  # the nested repository's filter never ran
    assert out.data is not None and out.data["ran"] is True, out.lines
    assert out.data["halt"] == "drift_detected: nested repository: src/vendor/x", out.data
    assert out.data["commit"] is None  # nothing was committed: git add never saw it
    state = loops.read_state(proj, "demo")
    assert (state.status, state.halt_detail) == ("halted", "nested repository: src/vendor/x")
    worktree = Path(out.data["worktree"])
    assert "src/vendor" not in git(worktree, "ls-files", "-s")
    assert not marker.exists()  # the nested repository's filter never ran
    # A human cannot approve it away: the approval is refused while the repository is there.
    res = run_cli("--approve", "--loop", "demo", "--project", str(proj.root), tty=True)
    assert res.code == 1 and "nested repository in its worktree: src/vendor/x" in res.err, res.err
    assert loops.read_state(proj, "demo").status == "halted"
    nested_git = worktree / "src" / "vendor" / "x" / ".git"
    nested_git.unlink() if nested_git.is_file() else shutil.rmtree(nested_git)
    res = run_cli("--approve", "--loop", "demo", "--project", str(proj.root), tty=True)
    assert res.code == 0, res.err
    assert not marker.exists()


def test_a_nested_repository_halts_the_tick_before_the_commit(project: Path, tmp_path: Path, approver: str) -> None:
    _nested_tick(project, tmp_path, pointer=False)


def test_a_nested_git_pointer_file_halts_the_tick_too(project: Path, tmp_path: Path, approver: str) -> None:
    _nested_tick(project, tmp_path, pointer=True)


POINTER_AGENT = ("import pathlib, subprocess\n"
                 "fake = pathlib.Path('src/.fg').resolve()\n"
                 "subprocess.run(['git', 'init', '-q', '--bare', str(fake)], check=True)\n"
                 "subprocess.run(['git', '--git-dir', str(fake), 'config', 'core.bare', 'false'], check=True)\n"
                 "pathlib.Path('.git').write_text(f'gitdir: {fake}\\n')\n")


def test_a_rewritten_worktree_pointer_is_never_read_through_by_the_gate_nor_approved_away(
        project: Path, approver: str) -> None:
    """Fails on the old code: a human's approval resumed the loop with the pointer still
    rewritten, and the next gate ran git through the agent's git folder ("on master, not
    loop/demo"). The refusal's reason comes from the gate's own drift facts, which check the
    pointer before any git runs in the worktree."""
    proj = make_loop(project, harness={"name": "command", "command": [PY, "-c", POINTER_AGENT], "args": []},
                     sandbox="off", roles={"verify": {"command": [PY, "-c", "print('1 passed')"], "score": "summary"}},
                     blast_radius={"file_scope": ["src/**"]})
    out = tick(proj, "demo")
    assert out.data is not None and str(out.data["halt"]).startswith("drift_detected: worktree_lost: "), out.data
    worktree = Path(out.data["worktree"])
    res = run_cli("--approve", "--loop", "demo", "--project", str(proj.root), tty=True)
    assert res.code == 1 and "worktree_lost: " in res.err and f"rm -rf {worktree}" in res.err, res.err
    assert loops.read_state(proj, "demo").status == "halted"
    shutil.rmtree(worktree)
    git(proj.root, "worktree", "prune")
    res = run_cli("--approve", "--loop", "demo", "--project", str(proj.root), tty=True)
    assert res.code == 0, res.err
    assert loops.read_state(proj, "demo").status == "running"
