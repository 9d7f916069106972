"""Protected paths: files the verifier's verdict depends on, which a tick may not change.

The verifier runs on an export of the tick's commit (`automaton.git.export`) in which every
protected path holds the base commit's version; a tick whose commit changed one halts
`drift_detected` (detail `protected`): `protected_changes` lists them.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from pathlib import Path

from automaton.core.scope import Scope
from automaton.git.drift import committed_paths
from automaton.git.errors import DriftError

# Test configuration that changes what a Python verify command runs or how it scores, wherever
# it sits in the tree.
DEFAULT_PROTECTED: tuple[str, ...] = (
    "conftest.py", "**/conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "noxfile.py",
)
_SPECIAL = set("*?[]!#\\")


def protected_spec(protected: Iterable[str]) -> Scope:
    """`protected` (gitignore patterns) as one spec (`core.scope`: pathspec's answers, pathspec
    imported only for patterns that are not plain). Raises DriftError for a pattern pathspec
    cannot read (the caller halts rather than protect less than configured)."""
    try:
        return Scope(protected)
    except (ValueError, TypeError) as exc:
        raise DriftError(f"invalid protected pattern: {exc}") from None


def _escape(rel: str) -> str:
    """`rel` as a gitignore pattern that matches exactly that path."""
    out = "".join("\\" + c if c in _SPECIAL else c for c in rel)
    return out[:-1] + "\\ " if out.endswith(" ") else out


def _relative(arg: str, root: Path | None) -> str | None:
    """The repository-relative posix path `arg` names, or None (an option, `..`, the root)."""
    text = arg.split("::", 1)[0]  # a pytest node id: tests/test_x.py::test_a
    if not text or text.startswith("-") or any(ord(c) < 32 for c in text):
        return None
    if os.path.isabs(text):
        if root is None:
            return None
        try:
            text = os.path.relpath(os.path.realpath(text), os.path.realpath(root))
        except ValueError:  # another drive
            return None
    rel = posixpath.normpath(text.replace(os.sep, "/"))
    if rel in (".", "") or rel == ".." or rel.startswith("../"):
        return None
    return rel


def default_protected(verify_argv: list[str], root: Path | None = None) -> list[str]:
    """DEFAULT_PROTECTED plus one pattern per element of `verify_argv` that names a path of
    the repository: `<dir>/**` for a folder, the path itself for a file (`pytest tests/` →
    `tests/**`; `tests/test_x.py::test_a` → `tests/test_x.py`). Options (`-q`, `--x=y`) and
    the repository root itself (`pytest .`: protecting everything would halt every tick) never
    count. `root`: the repository; with it only paths that exist there count, folders and
    files told apart; without it every other element counts except a first one without a `/`
    (the program, found on PATH), as an anchored pattern that covers a file or a folder.
    """
    found = list(DEFAULT_PROTECTED)
    for i, arg in enumerate(verify_argv):
        rel = _relative(arg, root)
        if rel is None:
            continue
        if root is None:
            if i == 0 and "/" not in arg:
                continue
            pattern = "/" + _escape(rel)
        else:
            full = root / rel
            if full.is_dir() and not full.is_symlink():
                pattern = _escape(rel) + "/**"
            elif os.path.lexists(full):
                pattern = _escape(rel) if "/" in rel else "/" + _escape(rel)
            else:
                continue
        if pattern not in found:
            found.append(pattern)
    return found


def protected_changes(repo: Path, base_commit: str, commit: str, protected: Iterable[str]) -> list[str]:
    """Sorted paths matching `protected` (gitignore patterns) that differ between the trees of
    `base_commit` and `commit` (added, removed, changed, or a mode change). Raises
    GitMissing, or DriftError when either is not a commit, a pattern is invalid or git fails."""
    spec = protected_spec(protected)
    return [p for p in committed_paths(repo, base_commit, commit) if spec.match_file(p)]
