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
