"""Kernel file locks (filelock): released when the holding process dies, never PID files."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from automaton.core.errors import AutomatonError, ExitCode

# A state read-modify-write takes milliseconds; a minute of waiting means something is stuck.
STATE_LOCK_TIMEOUT_S = 60.0


class Busy(AutomatonError):
    """The lock is held by another process (a tick in progress, or a stuck writer)."""

    code = ExitCode.REFUSED


@contextmanager
def locked(lock_path: Path, *, timeout_s: float = STATE_LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the lock at `lock_path` (created if missing). `timeout_s=0`: do not wait.

    Raises Busy (exit 1) when the lock cannot be taken within `timeout_s` seconds.
    """
    lock = FileLock(str(lock_path), timeout=timeout_s)
    try:
        lock.acquire(timeout=timeout_s, blocking=timeout_s != 0)
    except Timeout as exc:
        raise Busy(f"{lock_path} is held by another automaton process; try again") from exc
    try:
        yield
    finally:
        lock.release()
