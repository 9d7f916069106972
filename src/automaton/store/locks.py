"""Kernel file locks: released when the holding process dies, never PID files.

An exclusive `flock(2)` on the lock file (`msvcrt.locking` of its first byte on Windows), taken
directly: importing the `filelock` package cost about 30 ms of every command that locks, a
tick's give-up path included (bench/bench_race.py), for the same kernel lock. As with
filelock: the lock file and its missing parent folders are created, never removed (waiters
must share one inode), and a lock is per open file, so one process taking the same lock twice
waits for itself; nothing here nests a lock.
"""

from __future__ import annotations

import errno
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from automaton.core.errors import AutomatonError, BadInput, ExitCode

TYPE_CHECKING = False  # typing and collections.abc stay off the command paths that lock
if TYPE_CHECKING:
    from collections.abc import Iterator

# A state read-modify-write takes milliseconds; a minute of waiting means something is stuck.
STATE_LOCK_TIMEOUT_S = 60.0
# Seconds between tries while waiting: from 1 ms, doubling up to 10 ms. flock(2) has no
# timeout, so a waiter polls; a short first wait matters when many processes queue for a lock
# held for milliseconds (twenty ticks giving up at once each log one line under the state
# lock), and 10 ms keeps a long wait cheap.
FIRST_POLL_S, MAX_POLL_S = 0.001, 0.01


class Busy(AutomatonError):
    """The lock is held by another process (a tick in progress, or a stuck writer)."""

    code = ExitCode.REFUSED


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EDEADLK):
                return False
            raise
        return True

    def _unlock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):  # held (EACCES: some filesystems)
                return False
            raise
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


@contextmanager
def locked(lock_path: Path, *, timeout_s: float = STATE_LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the lock at `lock_path` (created if missing). `timeout_s=0`: do not wait.

    Raises Busy (exit 1) when the lock cannot be taken within `timeout_s` seconds, and BadInput
    (exit 2) when the filesystem cannot lock files at all (a brake never runs unlocked).
    """
    fd = _acquire(lock_path, timeout_s)
    try:
        yield
    finally:
        try:
            _unlock(fd)
        finally:
            os.close(fd)


def _acquire(lock_path: Path, timeout_s: float) -> int:
    """An open descriptor of `lock_path` holding the lock (see `locked`)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    deadline = time.monotonic() + timeout_s
    pause = FIRST_POLL_S
    try:
        while True:
            try:
                if _try_lock(fd):
                    return fd
            except OSError as exc:
                if exc.errno in (errno.ENOSYS, errno.ENOLCK, errno.EOPNOTSUPP):
                    raise BadInput(f"{lock_path}: this filesystem cannot lock files ({exc.strerror}); keep the"
                                   " project on a local disk") from None
                raise
            left = deadline - time.monotonic()
            if left <= 0:
                raise Busy(f"{lock_path} is held by another automaton process; try again")
            time.sleep(min(pause, left))
            pause = min(pause * 2, MAX_POLL_S)
    except BaseException:
        os.close(fd)
        raise
