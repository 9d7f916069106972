"""The repository's filter drivers are read once per window in which no agent process lives
(`git.harden.probe_once`): a driver the agent plants while it runs is still emptied in the
runner's commit, and the commit with its checks reads the config once per repository."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from automaton.git import harden
from automaton.runner import aftercommit
from automaton.runner.tick import tick
from tests.helpers import git
from tests.runner.loopkit import make_loop

PY = sys.executable


def planting_agent(marker: Path) -> str:
    """An agent that defines a filter driver whose clean command would write `marker`, asks for
    it in `.gitattributes` and changes a file, so the runner's `git add` meets it."""
    clean = f"{PY} -c \"import pathlib, sys; pathlib.Path({str(marker)!r}).write_text('ran'); " \
            "sys.stdout.write(sys.stdin.read())\""
    return ("import pathlib, subprocess\n"
            f"subprocess.run(['git', 'config', 'filter.evil.clean', {clean!r}], check=True)\n"
            "subprocess.run(['git', 'config', 'filter.evil.required', 'true'], check=True)\n"
            "pathlib.Path('.gitattributes').write_text('* filter=evil\\n')\n"
            "pathlib.Path('src').mkdir(exist_ok=True)\n"
            "pathlib.Path('src/a.txt').write_text('changed by the agent\\n')\n")


def test_a_filter_planted_while_the_agent_runs_never_runs_in_the_commit(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "filter-ran"
    # Unconfined (the kernel keeps every .git read-only to a sandboxed agent: tests/redteam S05):
    # here the agent can write the repository's config, the case the probe must still catch.
    proj = make_loop(project, harness={"name": "command", "command": [PY, "-c", planting_agent(marker)], "args": []},
                     sandbox="off", roles={"verify": {"command": [PY, "-c", "print('1 passed')"],
                                                      "score": "summary"}},
                     blast_radius={"file_scope": ["src/**", ".gitattributes"]})
    probes: list[str] = []
    real_probe, real_settle = harden._probe, aftercommit.settle

    def counted(repo: str, env: dict[str, str], timeout_s: float) -> list[str]:
        probes.append(repo)
        return real_probe(repo, env, timeout_s)

    windows: list[list[str]] = []

    def settle(*args: Any, **kwargs: Any) -> aftercommit.After:
        start = len(probes)
        try:
            return real_settle(*args, **kwargs)
        finally:
            windows.append(probes[start:])

    monkeypatch.setattr(harden, "_probe", counted)
    monkeypatch.setattr(aftercommit, "settle", settle)
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["commit"], out.lines
    assert not marker.exists()  # the clean command never ran, in the commit nor in any check
    worktree = Path(out.data["worktree"])
    assert git(worktree, "show", "HEAD:src/a.txt") == "changed by the agent\n"
    assert "filter.evil.clean" in git(project, "config", "--get-regexp", "^filter")  # it was planted
    # The commit and the checks on it (drift, protected paths) read each repository's config
    # once, after the agent ended: before the window the commit alone read it twice.
    [window] = windows
    assert window and len(window) == len(set(window)), window
