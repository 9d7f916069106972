"""schedule.log: a scheduled tick's lines are time-stamped and its summary is written once."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

from automaton.runner import schedlog
from tests.runner.loopkit import make_loop

PY = sys.executable
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ")


def _scheduled_tick(project: Path, log: Path) -> int:
    """The runner as cron runs it: stdout and stderr appended to one file (`>> log 2>&1`)."""
    exe = str(Path(PY).parent / "automaton-loop")
    with open(log, "a", encoding="utf-8") as fh:
        done = subprocess.run([exe, "--mode", "tick", "--loop", "demo", "--project", str(project)],
                              stdout=fh, stderr=subprocess.STDOUT, text=True, timeout=180, check=False)
    return done.returncode


def test_each_tick_writes_one_summary_and_every_line_starts_with_a_utc_time(project: Path) -> None:
    step = {"actions": [{"write": "src/score.txt", "content": "1 passed, 1 failed"}], "text": "did it",
            "cost_usd": 0.1}
    make_loop(project, script={"implement": [step, step]}, sandbox="off",
              roles={"implement": {"prompt": "implement.md"}, "orchestrate": {"builtin": True},
                     "verify": {"command": [PY, "-c", "import pathlib;print(pathlib.Path('src/score.txt')"
                                                    ".read_text())"], "score": "summary"}})
    log = project / "schedule.log"
    assert _scheduled_tick(project, log) == 0, log.read_text()
    assert _scheduled_tick(project, log) == 0, log.read_text()
    lines = log.read_text().splitlines()
    assert lines and all(STAMP.match(line) for line in lines), lines
    summaries = [line for line in lines if " of loop demo: score " in line]
    assert len(summaries) == 2, lines  # one per tick, not once as progress and again as the result
    assert "tick 1 of loop demo" in summaries[0] and "tick 2 of loop demo" in summaries[1]
    # The first gate ran before the tick made the worktree: its "no worktree yet" was stale.
    assert not [line for line in lines if "no worktree yet" in line], lines


def test_a_terminal_or_two_files_or_json_are_left_alone(tmp_path: Path) -> None:
    a, b = open(tmp_path / "a", "w"), open(tmp_path / "b", "w")  # noqa: SIM115
    try:
        assert not schedlog.same_file(a, b)
        assert not schedlog.same_file(io.StringIO(), io.StringIO())
        with open(tmp_path / "a", "a") as again:
            assert schedlog.same_file(a, again)  # two descriptors of one file: launchd's two paths
    finally:
        a.close()
        b.close()
    assert schedlog.stamp(0) == "1970-01-01T00:00:00Z"


def test_lines_of_both_streams_keep_their_order_and_repeats_are_dropped() -> None:
    sink = io.StringIO()
    log = schedlog._Log(sink)
    log.write("loop demo: gates: done\n", from_stdout=False)
    log.write("tick 1 of loop demo: score 0.5000\n", from_stdout=False)
    log.write("automaton-loop: warning: low disk\n", from_stdout=False)
    log.write("tick 1 of loop demo: score 0.5000\nwarning: low disk\nnew", from_stdout=True)
    log.close()
    got = [STAMP.sub("", line) for line in sink.getvalue().splitlines()]
    assert got == ["loop demo: gates: done", "tick 1 of loop demo: score 0.5000", "automaton-loop: warning: low disk",
                   "new"]


def test_the_same_warning_in_a_later_tick_is_written_again() -> None:
    """Only a line one stream says after the other is dropped: `--mode run` warns each tick."""
    sink = io.StringIO()
    log = schedlog._Log(sink)
    for n in (1, 2):
        log.write("automaton-loop: warning: running in the main checkout\n", from_stdout=False)
        log.write(f"tick {n} of loop demo: score 0.50\n", from_stdout=False)
        log.write(f"tick {n} of loop demo: score 0.50\n", from_stdout=True)
    log.close()
    got = [STAMP.sub("", line) for line in sink.getvalue().splitlines()]
    assert got == ["automaton-loop: warning: running in the main checkout", "tick 1 of loop demo: score 0.50",
                   "automaton-loop: warning: running in the main checkout", "tick 2 of loop demo: score 0.50"]


def test_a_log_that_cannot_be_written_loses_lines_never_the_tick() -> None:
    class Full(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

    log = schedlog._Log(Full())
    log.write("tick 1 of loop demo: score 0.5000\n", from_stdout=True)  # no exception
    log.close()
    assert log.lost
