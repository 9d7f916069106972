"""Write targets that name a file through another name: `/dev/fd/N`, `/proc/self/fd/N`,
`/proc/<pid>/cwd/…`, `/proc/self/root/…`, symlinks that lead into `/proc` or `/dev`, and
regular files with more than one hard link.

Why they cannot simply be resolved: the resolver (`resolve.real`) follows symlinks in the hook's
own process, and `/proc/self` is the hook, not the agent's shell; `/proc/<pid>/cwd` is whatever
directory another process is in; `/dev/fd/N` is whatever that process opened as descriptor N.
None of them names a stable file, and a hard-linked file's other names are nowhere to be seen
(a `.state` linked into `src/` earlier looks like any source file), so a write through one is
denied, with two exceptions the shell analysis handles before asking the policy: the standard
streams (descriptors 0-2, `/dev/stdout`, `/dev/null`, …: `sinks`) and a descriptor the same line
opened with a redirection it has already judged. Linux proc(5) "/proc/pid/cwd", "/proc/pid/fd/", "/proc/pid/root";
bash(1) "REDIRECTION" (`/dev/fd/fd`, `/dev/stdout`, …).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

SINKS = frozenset({"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty"})
_STD_FD = re.compile(r"^/(?:dev/fd|proc/(?:self|thread-self|[0-9]+)/fd)/([0-9]+)$")
_ALIAS_ROOTS = ("/proc", "/dev")
MAX_LINKS = 40


def fd_number(target: str) -> int | None:
    """N for `/dev/fd/N` or `/proc/{self,thread-self,PID}/fd/N`, else None."""
    found = _STD_FD.match(target)
    return int(found.group(1)) if found else None


def sink(target: str) -> bool:
    """A standard stream or the null device (writes there reach no file)."""
    number = fd_number(target)
    return target.lower() in SINKS or (number is not None and number <= 2)


def _under(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in _ALIAS_ROOTS)


def alias_reason(raw: str, cwd: Path) -> str | None:
    """Why `raw` (relative to `cwd`) names a file only through `/proc` or `/dev`, or None.

    Follows the path one component at a time as the kernel does (a symlink's target replaces
    it, `..` climbs from the resolved directory), so a link anywhere on the way that points into
    `/proc` or `/dev` is found. A missing component ends the walk (nothing more to follow)."""
    if os.name == "nt":
        return None
    path = os.path.expanduser(raw)
    if not os.path.isabs(path):
        path = os.path.join(cwd, path)
    todo = path.split("/")
    resolved = "/"
    links = 0
    while todo:
        part = todo.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            resolved = os.path.dirname(resolved)
            continue
        step = os.path.join(resolved, part)
        if _under(step):
            shown = raw if step == os.path.normpath(path) else f"{raw} (through {step})"
            return (f"{shown} is a process or device path: it names whatever another process has open,"
                    " so automaton denies writes through it")
        try:
            target = os.readlink(step)
        except OSError:
            resolved = step
            continue
        links += 1
        if links > MAX_LINKS:
            return f"{raw}: too many symbolic links"
        if os.path.isabs(target):
            resolved = "/"
        todo = target.split("/") + todo
    return _hard_link(raw, resolved)


def _hard_link(raw: str, resolved: str) -> str | None:
    """A regular file with more than one name: writing it writes every other name too, and no
    path tells which (a `.state` hard-linked into `src/` earlier looks like any source file)."""
    try:
        info = os.lstat(resolved)
    except OSError:
        return None
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        return (f"{raw} has {info.st_nlink} hard links: writing it writes every other name of the file,"
                " which automaton cannot see; remove the extra links first")
    return None
