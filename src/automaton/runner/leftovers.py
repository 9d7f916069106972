"""Agent processes left running by a tick that died (its runner killed with SIGKILL).

`proc.run_streaming` stops a harness's process group when the call returns, and when a runner
killed with SIGKILL (an agent's `kill -9 $PPID`) returns nothing, the harness dies with it (the
kernel's parent-death signal) and so does its group (a watcher): what can remain is a process
that left the group (setsid), or a harness whose watcher was killed. Every process a tick
starts carries `AUTOMATON_LOOP_DIR=<loop folder>` in its environment (inherited by its
children), so the next tick of the loop, holding the loop's tick lock (no other tick of it can
be running on this machine), finds them in `/proc/<pid>/environ` and kills their process groups
before it starts; a `--state-remote` tick too, before it judges the remote's claim. Linux only
(`/proc`); elsewhere nothing is found.
Sources: proc(5) "/proc/[pid]/environ", "/proc/[pid]/stat" (field 4: ppid).
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

MARK = "AUTOMATON_LOOP_DIR"
_PROC = Path("/proc")


def marker(loop_dir: Path) -> dict[str, str]:
    """The environment entry every process of a tick of the loop in `loop_dir` carries."""
    return {MARK: str(loop_dir)}


def _parent(pid: int) -> int | None:
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _ancestors() -> set[int]:
    """This process and its ancestors (never killed: a runner started from inside an agent)."""
    seen = {os.getpid()}
    pid: int | None = os.getppid()
    while pid is not None and pid > 1 and pid not in seen:
        seen.add(pid)
        pid = _parent(pid)
    return seen


def find(loop_dir: Path) -> list[int]:
    """pids whose environment carries `AUTOMATON_LOOP_DIR=<loop_dir>`, this process and its
    ancestors excepted; [] without /proc."""
    if not (_PROC / "self").is_dir():
        return []
    want = f"{MARK}={loop_dir}".encode()
    skip = _ancestors()
    found: list[int] = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        try:
            env = (entry / "environ").read_bytes()
        except OSError:
            continue
        if want in env.split(b"\0"):
            found.append(int(entry.name))
    return sorted(found)


def kill_leftovers(loop_dir: Path) -> list[int]:
    """SIGKILL every leftover process of the loop and its process group (but never a group of
    this process or of its ancestors); returns the pids found. Call it holding the tick lock."""
    pids = find(loop_dir)
    if not pids:
        return []
    protected: set[int] = set()
    for pid in _ancestors():
        with contextlib.suppress(OSError):
            protected.add(os.getpgid(pid))
    groups: set[int] = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            groups.add(os.getpgid(pid))
    for group in sorted(groups - protected):
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return pids
