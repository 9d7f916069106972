"""Run the benchmarks (`make bench`) and print their figures; see BENCHMARKS.md.

    .venv/bin/python bench/run_all.py [--quick] [--only N ...]

Each script runs in its own process (one after the other, so they do not load the machine
for each other) and prints its `FIGURE n ...` line(s), each with its target and "met" or
"MISSED"; this prints the machine and its load, every script's output as it comes, and the
figure lines again at the end, in figure order, then one PASS/MISS line per target with its
measured ratio, how many targets were met, and the targets of issue 22's "Done means" with
the figure that measures each (`DONE_MEANS`). Exit 0 when
every script ran (a missed target is reported, not an error), 1 when one failed or printed
no figure.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import _common as c

HERE = Path(__file__).resolve().parent
# script -> the figures it prints (bench_tick.py measures the tick and its sandbox together;
# bench_isolation_cost.py the namespace layer in a tick and in a --sandbox session).
# A new benchmark is one more line here; tests/test_bench_smoke.py reads this table.
SCRIPTS = {
    "bench_hook.py": (1,),
    "bench_gate.py": (2,),
    "bench_audit.py": (3,),
    "bench_tick.py": (4, 7),
    "bench_race.py": (5,),
    "bench_sandbox.py": (6,),
    "bench_list.py": (8,),
    "bench_dashboard.py": (9, 10),
    "bench_isolation.py": (11,),
    "bench_isolation_cost.py": (12, 13),
    "bench_tick_targets.py": (14, 15, 16),
}
FIGURES = sorted(n for nums in SCRIPTS.values() for n in nums)


def load() -> str:
    """The load averages (1, 5, 15 min) and the core count, for the record."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load unknown"
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def verdicts(figures: dict[int, str]) -> list[str]:
    """One `PASS|MISS  figure N  <ratio> (target <= T)  <title>` line per figure with a target."""
    out = []
    for num, line in sorted(figures.items()):
        found = re.match(rf"{c.FIGURE_PREFIX} {num} (.*?): ([\d.]+)(x| s| ms|)"
                         r" \(target <= ([\d.]+)(?:x| s| ms|): (met|MISSED)\)", line)
        if found:
            title, value, unit, target, verdict = found.groups()
            out.append(f"{'PASS' if verdict == 'met' else 'MISS'}  figure {num:2}  {value}{unit}"
                       f" (target <= {target}{unit})  {title}")
    return out


# The targets of issue 22's "Done means", each the figure that measures it (same run).
DONE_MEANS = {
    14: "steady tick <= 2x its process floor",
    15: "a tick at 1,000 log lines <= 1.1x one at 50",
    16: "first tick <= 2x git worktree add + commit",
    1: "hook <= 1.5x the bare interpreter",
    2: "--check-gate at 20k files <= 1.5x its own git calls",
}


def done_means(figures: dict[int, str]) -> list[str]:
    """One `PASS|MISS  <target>  (figure N: <ratio>)` line per DONE_MEANS target, in its order;
    `NOT RUN` for a figure this run did not print."""
    found = {int(line.split()[2]): line for line in verdicts(figures)}
    out = []
    for num, target in DONE_MEANS.items():
        line = found.get(num)
        if line is None:
            out.append(f"NOT RUN  {target}  (figure {num})")
        else:
            out.append(f"{line[:4]}  {target}  (figure {num}: {line.split()[3]})")
    return out


def main() -> int:
    p = argparse.ArgumentParser(description="Run the automaton benchmarks.")
    p.add_argument("--quick", action="store_true", help="smoke run: few repetitions, small inputs")
    p.add_argument("--only", type=int, nargs="+", choices=FIGURES, help="run only the scripts of these figures")
    ns = p.parse_args()
    info = c.machine()
    print(f"machine: nproc={info['nproc']}, CPU {info['cpu']}, Python {info['python']}, {info['os']}, {info['git']}")
    print(f"mode: {'quick (smoke run, not for the record)' if ns.quick else 'full'}; {load()}", flush=True)
    figures: dict[int, str] = {}
    failed: list[str] = []
    started = time.perf_counter()
    for script, nums in SCRIPTS.items():
        if ns.only and not set(nums) & set(ns.only):
            continue
        print(f"\n== {', '.join(map(str, nums))}: {script} ({load()})", flush=True)
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, str(HERE / script), *(["--quick"] if ns.quick else [])],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=HERE.parent)
        assert proc.stdout is not None
        for line in proc.stdout:
            print(line, end="", flush=True)
            for num in nums:
                if line.startswith(f"{c.FIGURE_PREFIX} {num} "):
                    figures[num] = line.rstrip("\n")
        code = proc.wait()
        print(f"   ({script}: exit {code}, {time.perf_counter() - t0:.0f} s)", flush=True)
        missing = [n for n in nums if n not in figures]
        if code != 0 or missing:
            failed.append(f"{script} (exit {code}{f', no figure {missing}' if missing else ''})")
    print(f"\n== summary ({time.perf_counter() - started:.0f} s; {load()})")
    for num in sorted(figures):
        print(figures[num])
    met = sum(1 for line in figures.values() if "target" in line and ": met)" in line)
    with_target = sum(1 for line in figures.values() if "target" in line)
    print("\n".join(verdicts(figures)))
    print(f"targets met: {met} of {with_target}")
    print("issue 22, done means (this run):")
    print("\n".join(f"  {line}" for line in done_means(figures)))
    for bad in failed:
        print(f"FAILED: {bad}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
