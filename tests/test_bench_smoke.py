"""`make bench` smoke run: every benchmark script runs with --quick and prints its figure line.

Only that they run and report is checked; the figures themselves are timings and are never
asserted (no timed tests, STYLE/preamble).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


def expected_figures() -> list[int]:
    """The figures run_all.py runs (its SCRIPTS table: a new benchmark is one line there)."""
    sys.path.insert(0, str(BENCH))
    try:
        import run_all
    finally:
        sys.path.remove(str(BENCH))
    return list(run_all.FIGURES)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_every_benchmark_runs_quick_and_prints_its_figure() -> None:
    done = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--quick"],
                          capture_output=True, text=True, timeout=590, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    summary = done.stdout.split("== summary", 1)[1]
    figures = re.findall(r"^FIGURE (\d+) .*?: (\d+\.\d\d)(?:x| s| ms) \(target <= [\d.]+(?:x| s| ms): (?:met|MISSED)\)",
                         summary, flags=re.MULTILINE)
    expected = expected_figures()
    assert [int(n) for n, _ in figures] == expected, summary
    assert all(float(value) > 0 for _, value in figures)
    assert "ran 1 per race (must be 1: met" in summary
    assert re.search(rf"^targets met: \d+ of {len(expected)}$", summary, flags=re.MULTILINE), summary
    verdicts = re.findall(r"^(?:PASS|MISS)  figure +(\d+)  \d+\.\d\d", summary, flags=re.MULTILINE)
    assert [int(n) for n in verdicts] == expected, summary


def test_the_summary_names_each_target_pass_or_miss_with_its_ratio() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import run_all
    finally:
        sys.path.remove(str(BENCH))
    lines = run_all.verdicts({
        15: "FIGURE 15 tick with a 1000-line log vs a 50-line log: 1.09x (target <= 1.1x: met); 662 ms vs 607 ms",
        14: "FIGURE 14 steady tick vs its process floor: 2.30x (target <= 2x: MISSED); tick 673 ms",
        9: "FIGURE 9 dashboard page: 0.12 s (target <= 0.5 s: met); detail",
        3: "FIGURE 3 a figure without a target: 1.00x; detail",
    })
    assert lines == ["PASS  figure  9  0.12 s (target <= 0.5 s)  dashboard page",
                     "MISS  figure 14  2.30x (target <= 2x)  steady tick vs its process floor",
                     "PASS  figure 15  1.09x (target <= 1.1x)  tick with a 1000-line log vs a 50-line log"]


def test_the_summary_names_the_issue_targets_from_the_same_run() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import run_all
    finally:
        sys.path.remove(str(BENCH))
    lines = run_all.done_means({
        14: "FIGURE 14 steady tick vs its process floor: 2.30x (target <= 2x: MISSED); tick 673 ms",
        1: "FIGURE 1 hook path vs bare interpreter: 1.40x (target <= 1.5x: met); detail",
    })
    assert lines[0] == "MISS  steady tick <= 2x its process floor  (figure 14: 2.30x)"
    assert lines[3] == "PASS  hook <= 1.5x the bare interpreter  (figure 1: 1.40x)"
    assert lines[1] == "NOT RUN  a tick at 1,000 log lines <= 1.1x one at 50  (figure 15)"
    assert len(lines) == 5
