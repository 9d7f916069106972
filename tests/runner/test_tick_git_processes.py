"""How many git processes a steady tick starts (issue 22, "one tick, one reading"): a `git`
first on PATH (outside the project, as the runner requires) logs every start, then runs git.

A steady tick: the loop's worktree exists, the agent changes nothing, verify is trivial. Its
git work is one reading of the worktree for the gate (before the agent) and one for the commit
and the checks after it (after the agent), each one config read (filter drivers and
core.excludesFile together) plus rev-parse, diff-tree, diff-index, status and ls-files; the
worktree check (rev-parse, worktree list); the verifier's kept export (cat-file, ls-tree).
Before the shared reading the same tick started 22."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from automaton.runner.tick import tick
from tests.runner.loopkit import make_loop

STEADY_TICK_GIT = 16  # the upper bound this test holds the runner to
PY = sys.executable


def git_shim(folder: Path, log: Path) -> None:
    """`folder/git`: appends its arguments (one line) to `log`, then execs the real git."""
    real = shutil.which("git")
    assert real is not None
    folder.mkdir()
    (folder / "git").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{real}" "$@"\n')
    (folder / "git").chmod(0o755)


def subcommands(lines: list[str]) -> list[str]:
    """The git subcommand of each logged argument line (after `-C dir` and `-c k=v`)."""
    found = []
    for line in lines:
        words, i = line.split(" "), 0
        while i < len(words) and words[i].startswith("-"):
            i += 2 if words[i] in ("-C", "-c") else 1
        found.append(words[i] if i < len(words) else "")
    return found


def test_a_steady_tick_starts_at_most_its_bound_of_git_processes(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "src").mkdir()
    (project / "src" / "a.py").write_text("A = 1\n")
    proj = make_loop(project, roles={"verify": {"command": [PY, "-c", "print('1 passed, 1 failed')"],
                                                "score": "summary"}},
                     brakes={"score_plateau_window": 100})
    first = tick(proj, "demo")  # makes the worktree: not a steady tick
    assert first.code == 0 and first.data is not None and first.data["ran"], first.lines
    log = tmp_path / "git-starts.log"
    git_shim(tmp_path / "gitshim", log)
    monkeypatch.delenv("AUTOMATON_GIT", raising=False)
    monkeypatch.setenv("PATH", f"{tmp_path / 'gitshim'}{os.pathsep}{os.environ['PATH']}")
    log.write_text("")
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["ran"] and out.data["commit"] is None, out.lines
    assert out.data["verdict"]["score"] == 0.5 and out.data["halt"] is None
    lines = [line for line in log.read_text().splitlines() if line]
    subs = subcommands(lines)
    assert lines and len(lines) <= STEADY_TICK_GIT, "\n".join(lines)
    # One config read per window in which no agent runs (the gate; the commit and its checks),
    # one status per reading of the worktree, and nothing staged when nothing changed.
    assert subs.count("config") <= 2 and subs.count("status") == 2 and "add" not in subs, subs
