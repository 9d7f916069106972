"""Nothing an agent starts outlives its run: this process adopts orphans and kills them.

A child that calls setsid() and double-forks leaves its process group and loses its parent;
the kernel hands such orphans to the nearest ancestor marked "child subreaper" instead of
init (prctl(2) PR_SET_CHILD_SUBREAPER). With this process so marked, every process the run
started stays a descendant of it, found through the parent links of /proc/<pid>/stat
(proc(5): field 4, ppid). Linux only; elsewhere nothing is found (a macOS daemon that left
the group survives).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Collection
from dataclasses import dataclass

from automaton.sandbox._libc import PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG, prctl

PROC = "/proc"
# Upper bound (seconds) on kill_descendants: a process stuck in the kernel (state D) takes
# its SIGKILL only when it leaves the kernel.
KILL_BOUND_S = 3.0
_subreaper = False


def become_subreaper() -> bool:
    """Mark this process as child subreaper (once; Linux). True when it is one."""
    global _subreaper
    if not _subreaper and sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            prctl(PR_SET_CHILD_SUBREAPER, 1, "prctl(PR_SET_CHILD_SUBREAPER)")
            _subreaper = True
    return _subreaper


def die_with_parent(parent: int) -> None:
    """In a forked child, before exec (a `preexec_fn`): have the kernel SIGKILL this process
    when the thread that forked it ends (prctl(2) PR_SET_PDEATHSIG; kept across execve(2)
    unless the program is set-user-ID or has file capabilities, which no_new_privs rules out
    in the sandbox), so a role never outlives a runner killed with SIGKILL. `parent`: the pid
    of the runner, read before the fork; when the child's parent is no longer it, the runner
    died between fork and this call (the kernel then sent nothing): OSError, and the child
    never execs. The C library must be loaded already (`become_subreaper` does: no dlopen
    after fork). No-op off Linux."""
    if not sys.platform.startswith("linux"):
        return
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL, "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:
        raise OSError(0, "the runner ended before its role started")


# The watcher of `watch_group`: a shell outside every sandbox, in its own session (a Ctrl-C to the
# runner's terminal group must not end it first), reading a pipe only this process holds open.
_WATCHER = ("/bin/sh", "-c", 'read -r _; kill -s KILL -- -"$1" 2>/dev/null', "automaton-group-watch")


@dataclass(frozen=True)
class Watch:
    """A running `watch_group` watcher: its process and the write end this process holds."""

    process: subprocess.Popen[bytes]
    fd: int


def watch_group(pgid: int) -> Watch | None:
    """Start a watcher that SIGKILLs process group `pgid` (a role's: the agent and every
    descendant that did not leave the group) once this process is gone, however it ended: the
    watcher blocks reading a pipe whose only write end this process holds (non-inheritable), so
    the kernel's closing of that end at this process's death wakes it. PR_SET_PDEATHSIG
    (`die_with_parent`) kills only the direct child; its descendants carry no such signal.
    `unwatch` it when the run ended normally. None where it cannot be started (no /bin/sh) or
    off POSIX: then only the direct child dies with the runner."""
    if os.name != "posix":
        return None
    read_end, write_end = os.pipe()
    try:
        process = subprocess.Popen([*_WATCHER, str(pgid)], stdin=read_end, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True, cwd="/")
    except (OSError, subprocess.SubprocessError):
        os.close(write_end)
        return None
    finally:
        os.close(read_end)
    return Watch(process, write_end)


def unwatch(watch: Watch | None) -> None:
    """End a watcher without letting it act (killed before its pipe closes), and reap it."""
    if watch is None:
        return
    with contextlib.suppress(OSError):
        watch.process.kill()
    watch.process.wait()
    os.close(watch.fd)


def _table() -> dict[int, tuple[int, str]]:
    """pid -> (ppid, state letter) of every process in /proc; {} without /proc."""
    out: dict[int, tuple[int, str]] = {}
    try:
        names = os.listdir(PROC)
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:  # os.open/os.read: a file object per process cost twice the reading (hundreds per run)
            fd = os.open(f"{PROC}/{name}/stat", os.O_RDONLY)
            try:
                data = os.read(fd, 4096)
            finally:
                os.close(fd)
            fields = data.rsplit(b")", 1)[1].split()
            out[int(name)] = (int(fields[1]), fields[0].decode("ascii", "replace"))
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    return out


def descendants(exclude: Collection[int] = (), table: dict[int, tuple[int, str]] | None = None) \
        -> dict[int, tuple[int, str]]:
    """Every descendant of this process: pid -> (ppid, state). A pid in `exclude` is left
    out together with everything beneath it (its children are its own business). `table`: a
    process table the caller read already (`_table`), else read here."""
    table = _table() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: dict[int, tuple[int, str]] = {}
    todo = [os.getpid()]
    while todo:
        for kid in children.get(todo.pop(), ()):
            if kid not in exclude and kid not in found:
                found[kid] = table[kid]
                todo.append(kid)
    return found


def kill_descendants(exclude: Collection[int]) -> list[int]:
    """SIGKILL every descendant of this process not in `exclude` (nor beneath one), again
    and again until none is left or KILL_BOUND_S passed, reaping those that became this
    process's own children (orphans adopted as subreaper). Returns the pids signalled.

    `exclude` names the descendants that existed before a run started, so that the other
    children of this process survive it. Processes started meanwhile by another thread
    (not excluded) are killed too: one agent run at a time per process.
    """
    me, killed = os.getpid(), []
    deadline = time.monotonic() + KILL_BOUND_S
    while True:
        found = descendants(exclude)
        for pid, (ppid, state) in found.items():
            if state not in "ZX":
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                    if pid not in killed:
                        killed.append(pid)
            if ppid == me:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
        if not found or time.monotonic() > deadline:
            return killed
        time.sleep(0.005)


def survivors(exclude: Collection[int] = ()) -> list[int] | None:
    """The live descendants of this process not in `exclude` (nor beneath one): what a run
    left alive although `kill_descendants` had its turn (a process stuck in the kernel past
    KILL_BOUND_S). Zombies count as gone. None when /proc cannot be read: then nothing can be
    said, and a caller that needs "none left" must take it as "some"."""
    table = _table()
    if not table:  # this process itself is always listed where /proc can be read
        return None
    return [pid for pid, (_, state) in descendants(exclude, table).items() if state not in "ZX"]
