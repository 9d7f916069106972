"""A tick that meets a full disk, an exceeded quota, a read-only file system or a permission
refusal on automaton's own files (`core.errors.environment_errno`) halts its loop
`human_intervention` with detail `io_error: …`, durably, and notifies (loop.json `notify`,
event `halt`).

Durably: the halt is written at once (`commands.halts.halt_now`, which also notifies). When
that write fails too (the disk is still full), a pending marker `io_error.pending` is left in
the loop folder: its text when a few bytes still fit, else an empty file (a new empty file
needs an inode, not a data block, so it is created on a file system whose blocks are all used).
The next tick records the pending halt before anything else and does not run; while the halt
cannot be written, every tick fails the same way (exit 1), so the loop never carries on as if
nothing happened once space is freed. Nothing is marked on a read-only file system, where no
tick can write its reservation either.
"""

from __future__ import annotations

import os

from automaton.commands.halts import halt_now
from automaton.core.errors import AutomatonError, EnvironmentFailure, ExitCode, environment_failure, one_line
from automaton.core.outcome import Outcome
from automaton.store.loops import IO_DETAIL_MAX, IO_PENDING, Loop

PENDING = IO_PENDING
REASON = "io_error"
_MAX_DETAIL = IO_DETAIL_MAX


def on_error(loop: Loop, exc: OSError | EnvironmentFailure) -> EnvironmentFailure:
    """The tick (holding its lock) met `exc`, an environment error (an OSError, or one already
    named, e.g. by the worktree's git on a full disk): halt the loop now, or leave the halt
    pending for the next tick. Returns the error the runner exits with (exit 1): the path, the
    fix and the halt."""
    if isinstance(exc, EnvironmentFailure):
        failure = exc
    else:
        failure = environment_failure(exc, str(loop.dir)) or EnvironmentFailure(one_line(str(exc)))
    detail = f"{REASON}: {failure.message}"[:_MAX_DETAIL]
    try:
        halt_now(loop, "human_intervention", detail, "tick")
    except (OSError, AutomatonError):  # e.g. the anchor's write on the same full disk (a BadInput)
        _leave_pending(loop, detail)
        return EnvironmentFailure(f"loop {loop.name}: {failure.message}; the tick stopped and its halt"
                                  f" (human_intervention: {REASON}) is recorded by the next tick")
    return EnvironmentFailure(f"loop {loop.name}: {failure.message}; the loop halted human_intervention: {REASON}"
                              f" (once that is fixed a human runs automaton --approve --loop {loop.name})")


def _leave_pending(loop: Loop, detail: str) -> None:
    try:
        fd = os.open(loop.dir / PENDING, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError:  # read-only or gone: the next tick meets the same error at its reservation
        return
    try:
        os.write(fd, detail.encode("utf-8"))
    except OSError:  # the empty marker stands for the halt
        pass
    finally:
        os.close(fd)


def record_pending(loop: Loop) -> Outcome | None:
    """Before a tick's gates: record the halt an earlier tick could not write (`PENDING`) and
    refuse the tick (exit 1); None when no halt is pending. An OSError recording it propagates
    (the caller's `on_error` keeps it pending)."""
    detail = loop.pending_io_halt()
    if detail is None:
        return None
    halt_now(loop, "human_intervention", detail, "tick", {"pending": True})
    os.unlink(loop.dir / PENDING)
    line = f"tick not run: loop {loop.name} halted human_intervention: {detail}"
    return Outcome(ExitCode.REFUSED, [line], {"ran": False, "reason": "human_intervention", "detail": detail})
