"""The bound on the verifier's kept exports, across every loop of this user.

Each loop keeps one export of its last commit (`runner/verify.py` `kept_export`, a folder
under `store.layout.kept_exports_dir()`), about the size of its repository. After each refresh
the export's size in bytes is recorded beside it (`<folder>.size`, one decimal integer). A tick
keeps its loop's export only while the recorded sizes of every kept export, its own included,
stay within `AUTOMATON_EXPORTS_MAX_MB` (MiB, default `DEFAULT_MAX_MB`; 0 keeps none); past that
it exports into its private temp folder, removed after the run (what every tick does where no
export may be kept), and says so in one line. `--remove-loop` deletes the export and its size.

The sizes are bookkeeping, not a brake: a wrong one only makes a tick keep or not keep its
export (the export itself is checked file by file before every use: `git.export.refresh_export`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from automaton.store.layout import SIZE_SUFFIX, kept_export_marks

SETTING = "AUTOMATON_EXPORTS_MAX_MB"
DEFAULT_MAX_MB = 4096
_MIB = 1 << 20


def limit_bytes() -> int | str:
    """The bound in bytes, from `AUTOMATON_EXPORTS_MAX_MB` (a whole number of MiB >= 0), or the
    one line saying why its value is not one (a tick then keeps no export: never a failure
    half-way through a tick that has committed)."""
    text = os.environ.get(SETTING, "").strip()
    if not text:
        return DEFAULT_MAX_MB * _MIB
    if not text.isascii() or not text.isdigit():
        return (f"{SETTING}={text!r} is not a whole number of MiB (>= 0): this tick exports into its temp"
                f" folder instead; set it to e.g. {DEFAULT_MAX_MB}, or unset it for the default")
    return int(text) * _MIB


def size_file(folder: Path) -> Path:
    """Where the recorded size of the kept export `folder` lives."""
    return kept_export_marks(folder)[1]


def recorded(folder: Path) -> int:
    """The recorded size in bytes of the kept export `folder`; 0 when none, unreadable or not a
    regular file (opened without blocking: a FIFO in its place must not hang the tick)."""
    try:
        fd = os.open(size_file(folder), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            data = os.read(fd, 64) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
        finally:
            os.close(fd)
        text = data.decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return 0
    return int(text) if text.isdigit() else 0


def record(folder: Path, size: int) -> None:
    """Record that the kept export `folder` holds `size` bytes (best effort: a size that cannot
    be written is counted as 0)."""
    with contextlib.suppress(OSError):
        size_file(folder).write_text(f"{size}\n", encoding="ascii")


def over_bound(folder: Path) -> str | None:
    """None when the kept export `folder` may be kept: the recorded sizes of every kept export
    in its parent folder (its own last size included) are within `limit_bytes()`. Else the one
    line a tick shows, naming the folder and the setting (or the setting's bad value)."""
    limit = limit_bytes()
    if isinstance(limit, str):
        return limit
    total = recorded(folder)
    try:
        names = os.listdir(folder.parent)
    except OSError:
        names = []
    for name in names:
        if name.endswith(SIZE_SUFFIX) and name != size_file(folder).name:
            total += recorded(folder.parent / name[: -len(SIZE_SUFFIX)])
    if total <= limit and limit > 0:
        return None
    return (f"the verifier's kept exports in {folder.parent} hold {total / _MIB:.0f} MiB, over"
            f" {SETTING}={limit // _MIB}: this tick exports into its temp folder instead (raise {SETTING},"
            " or remove loops you no longer run: automaton --remove-loop NAME)")
