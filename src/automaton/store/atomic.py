"""Atomic file writes (DESIGN §3): temp file in the same directory, fsync, replace, fsync dir."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """fsync a directory so a rename in it survives a crash (no-op where unsupported)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def tmp_path(path: Path) -> Path:
    """The fixed temp name used for `path` (seed 003 §1: `.state` -> `.state.tmp`).

    A fixed name is safe because every writer holds the file's lock; a leftover one is
    recovered or removed by the next locked command.
    """
    return path.with_name(path.name + ".tmp")


def write_tmp(path: Path, data: bytes) -> Path:
    """Write and fsync `data` to the temp file beside `path`; return the temp path."""
    tmp = tmp_path(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    return tmp


def publish(tmp: Path, path: Path) -> None:
    """Rename the fsynced temp file over `path` and fsync the directory."""
    os.replace(tmp, path)
    fsync_dir(path.parent)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` atomically: readers see the old or the new file, never a mix."""
    publish(write_tmp(path, data), path)


def append_line(path: Path, line: str) -> None:
    """Append one whole line with a single write() (DESIGN §3) and fsync it."""
    if "\n" in line:
        raise ValueError("a log line may not contain a newline")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (line + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
