"""A stale `index.lock` left by a crashed git: cleared only when provably stale.

git creates `<git dir>/index.lock` while it writes the index and deletes it when done; a git
killed meanwhile leaves it behind and every later `git add` fails with "File exists". The lock
is cleared only when it is older than STALE_LOCK_S seconds and no process named git has its
working folder or a command-line argument inside the repository (read from /proc). Where
/proc cannot be read (macOS, a hardened kernel) nothing is cleared.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

STALE_LOCK_S = 5.0
PROC = Path("/proc")


def _inside(path: str, roots: list[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _is_git(pid_dir: Path) -> bool:
    comm = (pid_dir / "comm").read_text(encoding="utf-8", errors="replace").strip()
    return comm == "git" or comm.startswith("git-")


def _touches(pid_dir: Path, roots: list[str]) -> bool:
    """Whether this git process works in one of `roots`: its cwd, or an argument that names a
    path (`--git-dir=…` too), lies inside. One whose cwd cannot be read counts (fail closed)."""
    try:
        cwd = os.path.realpath(os.readlink(pid_dir / "cwd"))
    except FileNotFoundError:
        raise  # it ended (a zombie has no cwd either): it writes nothing
    except OSError:
        return True  # another user's git: we cannot see where it works
    if _inside(cwd, roots):
        return True
    args = (pid_dir / "cmdline").read_bytes().split(b"\0")
    paths = [os.fsdecode(raw).split("=", 1)[-1] for raw in args[1:] if os.sep.encode() in raw]
    return any(_inside(os.path.realpath(os.path.join(cwd, p)), roots) for p in paths)


def git_running_in(roots: Iterable[Path], proc: Path | None = None) -> bool | None:
    """True when a process named `git`/`git-*` works inside one of `roots` (its cwd, or a
    path among its arguments, resolved); None when /proc cannot be listed."""
    proc = PROC if proc is None else proc
    where = [os.path.realpath(r) for r in roots]
    try:
        pids = [p for p in proc.iterdir() if p.name.isdigit()]
    except OSError:
        return None
    if not pids:
        return None  # a /proc with no processes is not a real one
    for pid_dir in pids:
        try:
            if _is_git(pid_dir) and _touches(pid_dir, where):
                return True
        except (FileNotFoundError, ProcessLookupError):
            continue  # it ended while we looked
        except OSError:
            return True  # a git process we cannot inspect: it may be ours
    return False


@dataclass(frozen=True)
class LockCheck:
    """`cleared`: the stale lock was removed; `why`: why a lock that exists was kept (None
    when there is no lock or it was cleared)."""

    cleared: bool
    why: str | None = None


def clear_stale_lock(lock: Path, roots: Iterable[Path], *, now: float | None = None,
                     proc: Path | None = None) -> LockCheck:
    """Remove `lock` when it is older than STALE_LOCK_S seconds and no git runs in `roots`."""
    try:
        age = (time.time() if now is None else now) - os.lstat(lock).st_mtime
    except FileNotFoundError:
        return LockCheck(False)
    except OSError as exc:
        return LockCheck(False, f"cannot read {lock}: {exc.strerror}")
    if age < STALE_LOCK_S:
        return LockCheck(False, f"it is {max(age, 0.0):.0f} s old: a git may be writing it")
    running = git_running_in(roots, proc)
    if running is None:
        return LockCheck(False, "the process list (/proc) cannot be read, so a running git cannot be ruled out")
    if running:
        return LockCheck(False, "a git process is running in the repository")
    try:
        os.unlink(lock)
    except FileNotFoundError:
        pass  # its git finished meanwhile
    except OSError as exc:
        return LockCheck(False, f"cannot remove it: {exc.strerror}")
    return LockCheck(True)
