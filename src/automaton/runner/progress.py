"""What a tick shows while it runs: phase, elapsed time, harness output tail (rich on a
terminal; plain lines when the stream is not a terminal or NO_COLOR is set)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# typing.TYPE_CHECKING without importing typing (mypy reads the name): the give-up path of a
# tick in a storm loads this module, and typing was a tenth of its time there.
TYPE_CHECKING = False
if TYPE_CHECKING:  # rich is imported only where it draws: a tick under cron never does
    from typing import IO

    from rich.console import Console, RenderableType

TAIL_LINES = 6
TAIL_BYTES = 8192


def tail_lines(path: Path | None, n: int = TAIL_LINES) -> list[str]:
    """The last `n` lines of `path` (read from its last few KiB); [] when missing."""
    if path is None:
        return []
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(size - TAIL_BYTES, 0))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return [line[:200] for line in text.splitlines()[-n:]]


def fancy(stream: IO[str]) -> bool:
    """Rich output only on a terminal and without NO_COLOR (no-color.org: any non-empty value)."""
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class _PhaseView:
    """Re-rendered by rich.Live on every refresh: spinner, phase, elapsed seconds, output tail."""

    def __init__(self, label: str, tail: Path | None) -> None:
        from rich.spinner import Spinner

        self.label, self.tail, self.started = label, tail, time.monotonic()
        self.spinner = Spinner("dots")

    def __rich__(self) -> RenderableType:
        from rich.console import Group
        from rich.text import Text

        elapsed = time.monotonic() - self.started
        self.spinner.text = Text.assemble((self.label, "bold"), f"  {elapsed:5.1f}s")
        lines = [Text(f"  │ {line}", style="dim") for line in tail_lines(self.tail)]
        return Group(self.spinner, *lines)


def same_file(a: IO[str] | None, b: IO[str] | None) -> bool:
    """Whether two streams write to one file or terminal (same device and inode); False when
    either has no file descriptor."""
    try:
        sa, sb = os.fstat(a.fileno()), os.fstat(b.fileno())  # type: ignore[union-attr]
    except (AttributeError, OSError, ValueError):  # io.StringIO has no descriptor (UnsupportedOperation)
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


class Progress:
    """Progress of one loop's ticks on `stream` (default stderr, so stdout stays for results)."""

    def __init__(self, stream: IO[str] | None = None, *, enabled: bool = True) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.rich = enabled and fancy(self.stream)
        self.console: Console | None = None
        if self.rich:
            from rich.console import Console

            self.console = Console(file=self.stream, highlight=False)

    def _say(self, text: str) -> None:
        """Write one line; a stream that is gone (a closed pipe: `… 2>&1 | head -1`, a closed
        terminal) ends the display, never the tick: a write error here once killed a tick
        between its HALT line and its settling record."""
        if not self.enabled:
            return
        try:
            if self.console is not None:
                self.console.print(text, markup=False)
            else:
                print(text, file=self.stream, flush=True)
        except (OSError, ValueError):  # ValueError: the stream was closed under us
            self.enabled = False

    def note(self, text: str) -> None:
        """One line of information (a phase result, a warning)."""
        self._say(text)

    def result(self, text: str) -> None:
        """A line the command also prints on stdout as its result (a tick's summary, why it did
        not run): shown here only when stdout is not where this display goes, so a terminal
        (or one file for both) shows it once."""
        if not same_file(self.stream, sys.stdout):
            self._say(text)

    @contextmanager
    def phase(self, label: str, tail: Path | None = None) -> Iterator[None]:
        """Show `label` while the block runs; on a terminal with a live tail of `tail`."""
        if not self.enabled:
            yield
            return
        started = time.monotonic()
        if self.console is None:  # plain lines: a start line only for phases that run a process
            if tail is not None:
                self._say(f"{label} ...")
            yield
            self._say(f"{label}: done ({time.monotonic() - started:.1f}s)")
            return
        from rich.live import Live

        live = Live(_PhaseView(label, tail), console=self.console, refresh_per_second=8, transient=True)
        try:
            live.start()
        except (OSError, ValueError):  # the terminal is gone: run the phase without a display
            self.enabled = False
            yield
            return
        try:
            yield
        finally:
            try:
                live.stop()
            except (OSError, ValueError):
                self.enabled = False
        if self.enabled:
            try:
                self.console.print(f"[green]✓[/] {label} [dim]({time.monotonic() - started:.1f}s)[/]")
            except (OSError, ValueError):
                self.enabled = False


QUIET = Progress(enabled=False)
