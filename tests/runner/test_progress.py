"""Progress display: rich on a terminal, plain lines when not a terminal or NO_COLOR."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from automaton.runner.progress import Progress, tail_lines


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_non_tty_gives_plain_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = io.StringIO()
    p = Progress(stream=out)
    assert not p.rich
    log = tmp_path / "x.log"
    log.write_text("line\n")
    with p.phase("tick 1: implement", log):
        pass
    with p.phase("tick 1: gates"):
        pass
    p.note("tick 1 of loop x: score 0.50")
    lines = out.getvalue().splitlines()
    assert lines[0] == "tick 1: implement ..."
    assert lines[1].startswith("tick 1: implement: done (") and lines[2].startswith("tick 1: gates: done (")
    assert lines[3] == "tick 1 of loop x: score 0.50"
    assert "\x1b[" not in out.getvalue()


def test_no_color_on_a_terminal_gives_plain_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    out = Tty()
    p = Progress(stream=out)
    assert not p.rich
    with p.phase("verify"):
        pass
    assert out.getvalue().startswith("verify: done (") and "\x1b[" not in out.getvalue()


def test_terminal_gets_the_rich_display(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    out = Tty()
    p = Progress(stream=out)
    assert p.rich
    with p.phase("implement"):
        pass
    assert "✓" in out.getvalue() and "implement" in out.getvalue()


def test_disabled_progress_prints_nothing() -> None:
    out = io.StringIO()
    p = Progress(stream=out, enabled=False)
    with p.phase("x"):
        p.note("y")
    assert out.getvalue() == ""


def test_tail_lines_reads_the_end_of_a_big_file(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    log.write_text("".join(f"line {i}\n" for i in range(100000)))
    assert tail_lines(log, 3) == ["line 99997", "line 99998", "line 99999"]
    assert tail_lines(tmp_path / "missing") == [] and tail_lines(None) == []


class _Gone(io.StringIO):
    """A stream whose reader has gone: every write fails as on a closed pipe."""

    def write(self, s: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_stream_ends_the_display_never_the_tick() -> None:
    show = Progress(stream=_Gone())
    ran = []
    with show.phase("loop x tick 1: implement", Path("nowhere.log")):
        ran.append("implement")
    show.note("halted: commit_failed")  # between a HALT and the settling record once
    with show.phase("loop x tick 1: verify"):
        ran.append("verify")
    assert ran == ["implement", "verify"] and not show.enabled


def test_a_tick_summary_shows_once_on_a_terminal(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # stdout (the result) and the progress display on one terminal: the summary line once.
    import os
    import sys

    from automaton.runner.tick import TickOptions, tick
    from tests.runner.loopkit import make_loop

    proj = make_loop(project, harness={"name": "command", "command": [sys.executable, "-c", "print('done')"],
                                       "args": []}, sandbox="off",
                     roles={"implement": {"prompt": "implement.md"},
                            "verify": {"command": [sys.executable, "-c", "print('1 passed')"], "score": "summary"},
                            "orchestrate": {"builtin": True}})
    monkeypatch.setenv("NO_COLOR", "1")
    master, slave = os.openpty()
    with open(slave, "w", closefd=True) as term, open(os.dup(slave), "w") as out:
        monkeypatch.setattr(sys, "stdout", out)
        outcome = tick(proj, "demo", TickOptions(progress=Progress(term)))
        print(*outcome.lines, sep="\n", file=out, flush=True)
        term.flush()
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every end of the slave is closed
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    assert shown.decode().count("tick 1 of loop demo: score") == 1, shown.decode()
