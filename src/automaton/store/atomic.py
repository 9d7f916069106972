"""Atomic file writes: temp file in the same directory, fsync, replace, fsync dir."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """fsync a directory so a rename in it survives a crash (no-op where unsupported)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # not contextlib.suppress: this module is on the hook path, which imports little
        pass
    finally:
        os.close(fd)


def read_all(path: str | Path) -> bytes:
    """The bytes of `path` (a plain string too: the audit names thousands of files, and a `Path`
    for each costs more than reading it), read with os.open/os.read, which cost half of what
    `open()` costs (the audit reads three small files of every task). Raises OSError as `open()` does, and
    IsADirectoryError for a folder (raised by the read)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def read_regular(path: str | Path, limit: int) -> bytes | None:
    """The first `limit` bytes of `path` when it is a regular file (symlinks followed), else
    None: missing, unreadable, a folder, a FIFO or a device. Opened without blocking, and its
    type checked again once open, so a FIFO swapped in where a small file should be cannot hang
    the reader."""
    import stat

    try:  # looked at first: a device is not opened (a tape rewinds) unless swapped in between
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                     | getattr(os, "O_BINARY", 0))
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
    try:
        return os.read(fd, limit) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError:
        return None
    finally:
        os.close(fd)


def tmp_path(path: Path) -> Path:
    """The fixed temp name used for `path` (`.state` -> `.state.tmp`).

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
    """Append one whole line with a single write() and fsync it."""
    if "\n" in line:
        raise ValueError("a log line may not contain a newline")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (line + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
