"""The runner's side of an agent's output: its pipes, copied into files by reader threads.

The agent never holds the transcript files: it writes into pipes, and only this process
writes the files. So a sandboxed agent cannot seek back, truncate or rewrite what its cost
is parsed from; it can only append to its own stream. A file keeps at most `cap` bytes:
past that, the oldest output is dropped and the TAIL is kept (a harness reports its cost
and result last). The tail is kept by compaction: when the file reaches 2 × cap bytes its
last cap bytes are copied to the front and the file is cut there, so memory stays at one
read chunk, disk at 2 × cap per stream, and the work stays linear in the output.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from pathlib import Path
from types import TracebackType

CHUNK = 64 * 1024
_POLL_MS = 100  # how often a reader looks at its stop flag while the pipe is quiet
_COPY = 1024 * 1024


class Sink:
    """A file written from the start (truncated on open) that keeps its last `cap` bytes.
    `dropped`: bytes dropped from the front so far. Thread-safe. ValueError for cap < 1."""

    def __init__(self, path: Path, cap: int) -> None:
        if cap < 1:
            raise ValueError(f"output cap must be at least 1 byte, not {cap}")
        self._fh = open(path, "w+b", buffering=0)  # noqa: SIM115 - closed by close(); unbuffered for `tail -f`
        self._cap, self._size, self.dropped = cap, 0, 0
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        """Append `data`; OSError (a full disk) is the caller's to handle."""
        with self._lock:
            view = memoryview(data)
            while view:
                n = self._fh.write(view) or 0
                view = view[n:]
                self._size += n
            if self._size >= 2 * self._cap:
                self._keep_tail()

    def _keep_tail(self) -> None:
        start, pos = self._size - self._cap, 0
        while pos < self._cap:
            self._fh.seek(start + pos)
            chunk = self._fh.read(min(_COPY, self._cap - pos))
            if not chunk:  # cut short by someone else: keep what there is
                break
            self._fh.seek(pos)
            self._fh.write(chunk)
            pos += len(chunk)
        self._fh.truncate(pos)
        self._fh.seek(pos)
        self.dropped += self._size - pos
        self._size = pos

    def close(self) -> None:
        """Cut the file to its last `cap` bytes and close it."""
        with self._lock:
            if not self._fh.closed:
                with contextlib.suppress(OSError):
                    if self._size > self._cap:
                        self._keep_tail()
                self._fh.close()

    def __enter__(self) -> Sink:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class Pump:
    """A daemon thread copying pipe `fd` (read end; closed by the thread) into `sink` until
    end of file, or until `finish` gives up on it."""

    def __init__(self, fd: int, sink: Sink) -> None:
        self._fd, self._sink = fd, sink
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"pump-{fd}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        poller = select.poll() if hasattr(select, "poll") else None
        if poller is not None:
            poller.register(self._fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        try:
            while not self._stop.is_set():
                if poller is not None and not poller.poll(_POLL_MS):
                    continue
                data = os.read(self._fd, CHUNK)
                if not data:
                    return
                # A full disk loses output but keeps draining, so the agent never blocks.
                with contextlib.suppress(OSError):
                    self._sink.write(data)
        except OSError:
            return
        finally:
            os.close(self._fd)


def finish(pumps: list[Pump], wait_s: float) -> None:
    """Wait up to `wait_s` seconds (in all) for every pump to reach end of file, then stop
    the rest: a process outside this one's reach (handed the pipe over a socket) may hold a
    write end forever. Its later output is lost; closing the read end gives it SIGPIPE."""
    deadline = time.monotonic() + wait_s
    for pump in pumps:
        pump._thread.join(max(0.0, deadline - time.monotonic()))
    for pump in pumps:
        pump._stop.set()
        pump._thread.join(1.0)  # a poll round; without poll (Windows) a blocked read stays behind
