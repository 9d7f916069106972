"""Every git call goes through this package: drift queries, worktree management, commits and
the verifier's clean export. `run_git` is the one place that starts git, hardened as
`automaton.git.harden` describes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from automaton.git.harden import run_hardened
from automaton.proc import Captured

GIT_TIMEOUT_S = 120.0


def run_git(repo: Path, args: Sequence[str], *, timeout_s: float = GIT_TIMEOUT_S, stdin: str = "",
            user_config: bool = False, env: Mapping[str, str] | None = None) -> Captured:
    """`git -C repo args…`, hardened; never raises for git's own failure.

    Output is decoded as UTF-8 with surrogateescape (`out.encode("utf-8", "surrogateescape")`
    gives git's bytes back; odd file names never raise). `stdin` is fed to git (empty by
    default: git never reads the caller's terminal). `user_config=True` lets git read the
    user's system and global config as well: only for reading settings (the identity), never
    for a call that writes or runs anything. Code 127: git is missing; 124: it ran longer than
    `timeout_s` seconds; 2 with a message: the repository's config cannot be neutralised.
    `env` sets identity and date variables, or automaton's own index file (`harden.KEPT_ENV`,
    `harden.CALLER_ENV`; ValueError otherwise).
    """
    return run_hardened(str(repo), args, timeout_s=timeout_s, stdin=stdin, user_config=user_config,
                        extra_env=env)
