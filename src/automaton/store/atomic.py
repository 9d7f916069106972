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


_READ = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)


def open_regular(path: str | Path) -> int:
    """A read-only descriptor of the regular file at `path` (symlinks followed), opened without
    blocking: an agent can put a FIFO where a state file, log or artifact goes, and a reader that
    waited on it would never answer (a hook that does not answer lets the tool call through).
    Raises OSError as `os.open` does, IsADirectoryError for a folder, and OSError EINVAL ("not a
    regular file") for a FIFO, device or socket. The caller closes the descriptor."""
    import stat

    fd = os.open(path, _READ)
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if stat.S_ISREG(mode):
        return fd
    os.close(fd)
    import errno

    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    raise OSError(errno.EINVAL, "not a regular file", str(path))


def read_all(path: str | Path) -> bytes:
    """The bytes of the regular file `path` (a plain string too: the audit names thousands of
    files, and a `Path` for each costs more than reading it), read with os.open/os.read, which
    cost half of what `open()` costs. Raises OSError as `open_regular` does (a FIFO or device is
    an error, never waited on)."""
    fd = open_regular(path)
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
    None: missing, unreadable, a folder, a FIFO or a device (`open_regular`; looked at with
    `stat` first, so a device is not even opened unless swapped in between)."""
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        fd = open_regular(path)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
    try:
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_left(path: Path, limit: int) -> bytes | None:
    """The first `limit` bytes of a file a confined run left at `path` (in a folder of its own
    that the runner made for it), or None: missing, a link (never followed: it could point at
    the record key or an SSH key, which the runner would then copy where agents read), a
    second name of a file (a hard link), or anything but a regular file (a FIFO would block)."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):  # ELOOP for a link; ValueError: a NUL in the path
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            return None
        chunks: list[bytes] = []
        while limit > 0 and (chunk := os.read(fd, min(limit, 1 << 20))):
            chunks.append(chunk)
            limit -= len(chunk)
        return b"".join(chunks)
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
    # A new file, never what sits at the temp name (a writer holds the lock, so any leftover was
    # recovered or is stale): opening a FIFO an agent put there would wait for a reader forever.
    try:  # noqa: SIM105 - not contextlib.suppress: this module is on the hook path
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        try:  # noqa: SIM105 - a half-written temp file helps nobody on a full disk
            os.unlink(tmp)
        except OSError:
            pass
        raise named(exc, path) from None
    return tmp


def named(exc: OSError, path: Path) -> OSError:
    """`exc` naming `path` when it names no file (os.write and os.fsync name none): a full
    disk is then reported as the file it could not write (core.errors.environment_failure)."""
    if exc.filename is not None:
        return exc
    return type(exc)(exc.errno, exc.strerror, str(path))


def publish(tmp: Path, path: Path) -> None:
    """Rename the fsynced temp file over `path` and fsync the directory. An OSError names
    `path`, the file that could not be replaced (os.replace names the temp file first), unless
    the temp file is what is missing."""
    try:
        os.replace(tmp, path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, str(path)) from None
    fsync_dir(path.parent)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` atomically: readers see the old or the new file, never a mix.
    When the rename fails the temp file is removed: nothing is left half-written."""
    tmp = write_tmp(path, data)
    try:
        publish(tmp, path)
    except OSError:
        try:  # noqa: SIM105 - not contextlib.suppress: this module is on the hook path
            os.unlink(tmp)
        except OSError:
            pass
        raise


def probe_replace(path: Path) -> None:
    """PermissionError (EPERM) naming `path` when a rename over it would be refused for a flag
    of the file itself: immutable or append-only (Linux `chattr +i`/`+a`, BSD and macOS
    `chflags uchg`/`uappnd`). Such a file refuses to be opened for writing with EPERM, which is
    what is tried; nothing is written and the descriptor is closed at once. Anything else
    passes: a missing file (a first write), EACCES (mode bits, which a rename over the file
    does not need), a link or a FIFO without a reader; `publish` names what still fails. Lets
    a writer whose log line must come before the rename refuse with nothing written."""
    flags = os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        import errno

        if exc.errno == errno.EPERM:
            raise named(exc, path) from None
        return
    os.close(fd)


def append_line(path: Path, line: str) -> None:
    """Append one whole line with a single write() and fsync it."""
    if "\n" in line:
        raise ValueError("a log line may not contain a newline")
    # Without blocking, and only onto a regular file: a FIFO in place of a log must not hang
    # the writer (nor take the line).
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NONBLOCK", 0), 0o644)
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            import errno

            raise OSError(errno.EINVAL, "not a regular file", str(path))
        try:
            os.write(fd, (line + "\n").encode("utf-8"))
            os.fsync(fd)
        except OSError as exc:
            raise named(exc, path) from None
    finally:
        os.close(fd)
