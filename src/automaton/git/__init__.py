"""Every git call goes through this package (DESIGN §10): drift queries and worktree management."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from automaton.proc import Captured, run_capture

GIT_TIMEOUT_S = 120.0


def run_git(repo: Path, args: Sequence[str], *, timeout_s: float = GIT_TIMEOUT_S) -> Captured:
    """`git -C repo args…`; code 127 when git is missing. Never raises for git's own failure."""
    return run_capture(["git", "-C", str(repo), *args], timeout_s=timeout_s)
