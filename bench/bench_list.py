"""Figure 8: `automaton --loop-list --json` over 500 loops against reading the loops' state
files, measured in the same run. Target: <= 3x.

The baseline (`READ`, run on the same interpreter as a process of its own) reads, for every
loop folder, `.state.loop` (and parses its JSON), `.state.log` and `loop.json` (and parses its
JSON): the files a listing has to read, and nothing else (automaton also verifies each log
line's mac and chain, checks the state against the log's last line and validates loop.json).
Loops are made through `store.loops.create` as in figure 3 (`os.fsync` skipped while
generating only).
Run: .venv/bin/python bench/bench_list.py [--quick] [--reps N]
"""

from __future__ import annotations

import json

import _common as c
from bench_audit import project_with

TARGET = 3.0
READ = """
import json, os, sys
loops = os.path.join(sys.argv[1], ".automaton", "loops")
for name in sorted(os.listdir(loops)):
    folder = os.path.join(loops, name)
    for file, parse in ((".state.loop", True), (".state.log", False), ("loop.json", True)):
        with open(os.path.join(folder, file), "rb") as fh:
            data = fh.read()
        if parse:
            json.loads(data)
"""


def main() -> int:
    ns = c.args(__doc__)
    loops = 50 if ns.quick else 500
    reps = ns.reps or (3 if ns.quick else 15)
    with c.workspace("list", ns.keep) as tmp:
        project = project_with(tmp / "proj", 0, loops)
        argv = [c.exe("automaton"), "--loop-list", "--json", "--project", str(project)]
        rows = json.loads(c.run(argv, cwd=project).stdout.decode().strip().splitlines()[-1])["loops"]
        if len(rows) != loops or any(r["flag"] for r in rows):
            flagged = [r["flag"] for r in rows if r["flag"]][:2]
            raise c.BenchError(f"--loop-list shows {len(rows)} loops, flagged: {flagged}")
        cases = {
            "read the state files": lambda: c.timed([*c.python_script(READ), str(project)]),
            "--loop-list": lambda: c.timed(argv, cwd=project),
        }
        times = c.interleave(cases, reps)
        profile = c.import_profile("automaton.cli.main", argv[1:], cwd=project)
    for name, xs in times.items():
        print(f"  {name:21} {c.spread(xs)}")
    print(f"  profile of --loop-list: {profile}")
    subject, baseline = times["--loop-list"], times["read the state files"]
    c.figure(8, f"--loop-list of {loops} loops vs reading their state files", c.wall(subject) / c.wall(baseline),
             TARGET, f"loop-list {c.ms(c.wall(subject))} vs reading {c.ms(c.wall(baseline))} (cpu ratio"
             f" {c.cpu(subject) / c.cpu(baseline):.2f}x); medians of {reps} interleaved runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
