"""The errors of automaton's git queries, and the one helper that turns a failed git call
into one of them (never into an empty answer)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from automaton.git import run_git

COMMIT_ID = re.compile(r"^[0-9a-fA-F]{7,64}$")
FULL_COMMIT_ID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?\Z")  # a whole SHA-1 or SHA-256 object id, as git prints it


class GitMissing(Exception):
    """git is not installed: the drift gate is skipped with a warning."""


class DriftError(Exception):
    """git is installed but the answer cannot be computed: the caller halts, never "0 files"."""


def first_line(text: str) -> str:
    """The first non-blank line of `text`, stripped ("no message" when there is none)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else "no message"


def git_text(repo: Path, args: Sequence[str], *, stdin: str = "", env: Mapping[str, str] | None = None) -> str:
    """stdout of a hardened `git -C repo args…` (surrogateescape-decoded); `env` as `run_git`
    takes it. Raises GitMissing (exit 127) or DriftError naming the command, the folder and
    git's first error line."""
    done = run_git(repo, args, stdin=stdin, env=env)
    if done.code == 127:
        raise GitMissing(f"git is not installed ({first_line(done.err)})")
    if done.code != 0:
        raise DriftError(f"git {' '.join(args[:2])} failed in {repo} (exit {done.code}): {first_line(done.err)}")
    return done.out


def nul_fields(text: str) -> list[str]:
    """The non-empty fields of NUL-separated git output."""
    return [f for f in text.split("\0") if f]


# (resolved repository, full commit id) pairs this process found to be a commit: an object id
# names its content for good, so the answer cannot change (a tick asks it of the same base
# commit up to four times). Names that are not full ids (HEAD, branches) are asked every time.
_COMMITS: set[tuple[str, str]] = set()


def require_commit(repo: Path, rev: str, what: str) -> str:
    """The full id of commit `rev` in `repo`. Raises DriftError naming `what` when `rev` is
    not a commit there (GitMissing without git)."""
    known = (os.path.realpath(repo), rev) if FULL_COMMIT_ID.match(rev) else None
    if known is not None and known in _COMMITS:
        return rev
    try:
        found = git_text(repo, ["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"]).strip()
    except DriftError:
        found = ""
    if not found:
        raise DriftError(f"{what} {rev} is not a commit of the repository {repo}")
    if known is not None and found == rev:
        _COMMITS.add(known)
    return found


def require_commit_id(value: str | None, what: str) -> str:
    """`value` when it spells a commit id (7–64 hex digits); DriftError otherwise (a branch
    name is never accepted where a recorded commit is meant)."""
    if not COMMIT_ID.match(value or ""):
        raise DriftError(f"{what} {value!r} is not a commit id")
    return str(value)
