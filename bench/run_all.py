"""Run the five benchmarks (`make bench`) and print their figures; see BENCHMARKS.md.

    .venv/bin/python bench/run_all.py [--quick] [--only N ...]

Each script runs in its own process (one after the other, so they do not load the machine
for each other) and prints one `FIGURE n ...` line; this prints the machine, every script's
output as it comes, and the five figure lines again at the end. Exit 0 when every script
ran (a missed target is reported, not an error), 1 when one failed or printed no figure.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import _common as c

HERE = Path(__file__).resolve().parent
SCRIPTS = {
    1: "bench_hook.py",
    2: "bench_gate.py",
    3: "bench_audit.py",
    4: "bench_tick.py",
    5: "bench_race.py",
    6: "bench_sandbox.py",
}


def main() -> int:
    p = argparse.ArgumentParser(description="Run the automaton benchmarks.")
    p.add_argument("--quick", action="store_true", help="smoke run: few repetitions, small inputs")
    p.add_argument("--only", type=int, nargs="+", choices=sorted(SCRIPTS), help="run only these figures")
    ns = p.parse_args()
    info = c.machine()
    print(f"machine: nproc={info['nproc']}, CPU {info['cpu']}, Python {info['python']}, {info['os']}, {info['git']}")
    print(f"mode: {'quick (smoke run, not for the record)' if ns.quick else 'full'}", flush=True)
    figures: dict[int, str] = {}
    failed: list[str] = []
    started = time.perf_counter()
    for num in ns.only or sorted(SCRIPTS):
        script = SCRIPTS[num]
        print(f"\n== {num}: {script}", flush=True)
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, str(HERE / script), *(["--quick"] if ns.quick else [])],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=HERE.parent)
        assert proc.stdout is not None
        for line in proc.stdout:
            print(line, end="", flush=True)
            if line.startswith(f"{c.FIGURE_PREFIX} {num} "):
                figures[num] = line.rstrip("\n")
        code = proc.wait()
        print(f"   ({script}: exit {code}, {time.perf_counter() - t0:.0f} s)", flush=True)
        if code != 0 or num not in figures:
            failed.append(f"{script} (exit {code}{'' if num in figures else ', no figure line'})")
    print(f"\n== summary ({time.perf_counter() - started:.0f} s)")
    for num in sorted(figures):
        print(figures[num])
    for bad in failed:
        print(f"FAILED: {bad}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
