"""`schedule.log`: what a scheduled tick writes, one time-stamped line each (README.md#schedules).

A scheduler appends the runner's stdout and stderr to one file: cron's `>> schedule.log 2>&1`
(`schedulers.cron.command`), launchd's `StandardOutPath` and `StandardErrorPath` naming the
same file (`schedulers.launchd`). Seen from the runner, both streams are then the same
regular file (same device and inode, fstat(2)). There, and only there (never with `--json`,
whose last line a program parses), each line the runner writes starts with the ISO-8601 UTC
time (`2026-12-06T09:15:00Z `), and a line one stream says again after the other said it
(the tick's summary, shown as progress on stderr and as the result on stdout) is written once;
the same line in a later tick is written again.
A log that cannot be written (a full disk) loses the rest of its lines, never the tick.
"""

from __future__ import annotations

import io
import os
import stat
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (runner/progress.py says why)
if TYPE_CHECKING:
    from typing import IO

# Prefixes the runner puts before the same message on its two streams (runner/cli.py `_emit`
# and `_error`, runner/progress.py notes): a line is "the same" without them.
_PREFIXES = ("automaton-loop: ", "warning: ")


def stamp(now: float | None = None) -> str:
    """`now` (epoch seconds, default the clock) as `YYYY-MM-DDTHH:MM:SSZ` (UTC)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))


def same_file(a: IO[str], b: IO[str]) -> bool:
    """Whether streams `a` and `b` write one regular file (a scheduler's log); False for a
    terminal, a pipe, two files, or a stream without a descriptor (tests' StringIO)."""
    try:
        sa, sb = os.fstat(a.fileno()), os.fstat(b.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False
    return stat.S_ISREG(sa.st_mode) and (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _key(line: str) -> str:
    text = line.strip()
    for prefix in _PREFIXES:
        text = text.removeprefix(prefix)
    return text


class _Log:
    """The one file both streams write, through one buffer (so stdout and stderr lines keep
    their order) with each line time-stamped; `unmatched[s]` holds what stream `s` (is stdout)
    wrote that the other stream has not said again yet."""

    def __init__(self, sink: IO[str]) -> None:
        self.sink = sink
        self.unmatched: dict[bool, list[str]] = {False: [], True: []}
        self.partial = {False: "", True: ""}  # per stream (is stdout): text after its last newline
        self.lost = False  # the log could not be written (disk full, closed): the rest is dropped

    def write(self, text: str, from_stdout: bool) -> None:
        pending = self.partial[from_stdout] + text
        *lines, self.partial[from_stdout] = pending.split("\n")
        for line in lines:
            self._line(line, from_stdout)
        self.flush()

    def flush(self) -> None:
        if not self.lost:
            try:
                self.sink.flush()
            except (OSError, ValueError):  # a log that cannot be written never changes what a tick does
                self.lost = True

    def _line(self, line: str, from_stdout: bool) -> None:
        key = _key(line)
        said = self.unmatched[not from_stdout]
        if key and key in said:  # the other stream's line said again: written once
            said.remove(key)
            return
        if key:
            self.unmatched[from_stdout].append(key)
        if self.lost:
            return
        try:
            self.sink.write(f"{stamp()} {line}\n")
        except (OSError, ValueError):  # as in flush
            self.lost = True

    def close(self) -> None:
        for from_stdout in (False, True):
            if self.partial[from_stdout]:
                self._line(self.partial[from_stdout], from_stdout)
                self.partial[from_stdout] = ""
        self.flush()


class _Stream(io.TextIOBase):
    """sys.stdout or sys.stderr while the log is stamped: writes go to `_Log`."""

    def __init__(self, log: _Log, from_stdout: bool) -> None:
        super().__init__()
        self._log, self._from_stdout = log, from_stdout

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        self._log.write(text, self._from_stdout)
        return len(text)

    def flush(self) -> None:
        self._log.flush()


@contextmanager
def stamped(enabled: bool = True) -> Iterator[bool]:
    """For the block, time-stamp and de-duplicate what the runner writes when its stdout and
    stderr are one file (a scheduler's log); yields whether it does. `enabled=False` (`--json`)
    leaves the streams alone. The streams are put back afterwards."""
    out, err = sys.stdout, sys.stderr
    if not enabled or not same_file(out, err):
        yield False
        return
    log = _Log(err)
    sys.stdout, sys.stderr = _Stream(log, True), _Stream(log, False)
    try:
        yield True
    finally:
        sys.stdout, sys.stderr = out, err
        log.close()
