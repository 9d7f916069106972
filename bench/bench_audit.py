"""Figure 3: `automaton --audit` over 5,000 tasks and 500 loops against the read-and-hash floor,
measured in the same run, and how the audit grows. Target: <= 2x the floor, and linear.

The floor (`FLOOR`, run on the same interpreter as a process of its own) reads what the audit
must read and hashes what it must hash, and nothing else: for every task folder it lists the
folder, reads `.state` and `.state.log` and checks every log line (HMAC-SHA256 under the key
and the SHA-256 that links the next line, both with hashlib's C code); for every loop it reads
and parses `.state.loop` and `loop.json`, hashes both (their seals), and checks `.state.log`
alike. It reports nothing and validates nothing else (automaton also checks every line's
shape, the phase, the state against the log's last line, the counters and loop.json's schema).

Linear: the audit of 500 tasks + 50 loops is timed too. With the audit of an empty project
(the fixed cost of starting the process) taken off both sides, ten times the data costs
`marginal` times the time: 10x for a strictly linear cost, 100x for a quadratic one. The
criterion is marginal <= 15x (the time per task and loop at most 1.5 times what it is at a
tenth of the data: caches hold less of 5,000 folders than of 500). A second series grows loops
alone: 50, 500 and 5,000 loops.

Tasks are written directly through the store (`store.chainlog.commit`: `.state` + a chained
`.state.log` with CREATED and TRANSITION lines, exactly what the CLI writes) and loops through
`store.loops.create` (loop.json, role prompt, sealed `.state.loop` + CREATED), not through
5,000 CLI calls; `os.fsync` is skipped while generating (only generation, never the audit).
Run: .venv/bin/python bench/bench_audit.py [--quick] [--reps N]
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable
from pathlib import Path

import _common as c


def make_tasks(project: Path, n: int) -> None:
    """`n` tasks at phase research, each with the two chained log lines the CLI would write."""
    from automaton.store import chainlog

    tasks = project / "tasks"
    tasks.mkdir(exist_ok=True)
    for i in range(n):
        name = f"task-{i:05d}"
        folder = tasks / name
        folder.mkdir()
        state, log = folder / ".state", folder / ".state.log"
        chainlog.commit(state, log, b"new\n", "new", "CREATED", {"task": name})
        chainlog.commit(state, log, b"research\n", "research", "TRANSITION", {"task": name, "from": "new",
                                                                             "to": "research"})


def make_loops(project: Path, n: int) -> None:
    """`n` running loops (scripted harness), each sealed like `--create-loop` seals it."""
    from automaton.core.loopconfig import initial_state
    from automaton.core.names import LoopName
    from automaton.store import loops
    from automaton.store.chainlog import utc_now
    from automaton.store.layout import Project

    proj = Project(project)
    for i in range(n):
        name = LoopName.of(f"loop-{i:05d}")
        data = (json.dumps(c.loop_json(name), indent=2) + "\n").encode()
        config = loops.parse_config_bytes(data, f"bench loop {name}")
        files = {loops.CONFIG_FILE: data, "implement.md": b"Do nothing.\n"}
        loops.create(proj, name, files, initial_state(name, None, config.sha256, utc_now()),
                     {"loop": name, "template": "bench", "task": None})


def project_with(root: Path, tasks: int, loops: int) -> Path:
    project = c.init_repo(root)
    real_fsync = os.fsync
    os.fsync = lambda fd: None  # generation only: the audit below runs in its own process
    try:
        make_tasks(project, tasks)
        make_loops(project, loops)
    finally:
        os.fsync = real_fsync
    return project


FLOOR = """
import hashlib, hmac, json, os, sys
root = sys.argv[1]
with open(os.path.expanduser("~/.config/automaton/key"), "rb") as fh:
    key = bytes.fromhex(fh.read()[:64].decode())

def check_log(path):
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return
    for line in data.split(b"\\n")[:-1]:
        body = line.rpartition(b" mac=")[0]
        hmac.new(key, body, hashlib.sha256).hexdigest()
        hashlib.sha256(line).hexdigest()

tasks = os.path.join(root, "tasks")
for name in sorted(os.listdir(tasks)) if os.path.isdir(tasks) else []:
    folder = os.path.join(tasks, name)
    if name.startswith(".") or not os.path.isdir(folder):
        continue
    os.listdir(folder)
    with open(os.path.join(folder, ".state"), "rb") as fh:
        fh.read()
    check_log(os.path.join(folder, ".state.log"))
loops = os.path.join(root, ".automaton", "loops")
for name in sorted(os.listdir(loops)) if os.path.isdir(loops) else []:
    folder = os.path.join(loops, name)
    for file in (".state.loop", "loop.json"):
        with open(os.path.join(folder, file), "rb") as fh:
            data = fh.read()
        hashlib.sha256(data).hexdigest()
        json.loads(data)
    check_log(os.path.join(folder, ".state.log"))
"""


def audit_case(project: Path, tasks: int, loops: int) -> Callable[[], c.Sample]:
    argv = [c.exe("automaton"), "--audit", "--json", "--project", str(project)]
    report = json.loads(c.run(argv, cwd=project).stdout.decode().strip().splitlines()[-1])
    if not report["ok"] or len(report["tasks"]) != tasks or len(report["loops"]) != loops:
        raise c.BenchError(f"audit of {tasks} tasks / {loops} loops reported ok={report['ok']},"
                           f" {len(report['tasks'])} tasks, {len(report['loops'])} loops")
    return lambda: c.timed(argv, cwd=project)


def main() -> int:
    ns = c.args(__doc__)
    scale = 10 if ns.quick else 1
    reps = ns.reps or (3 if ns.quick else 9)
    small, big = (500 // scale, 50 // scale), (5000 // scale, 500 // scale)
    loop_series = [5, 50] if ns.quick else [50, 500, 5000]
    with c.workspace("audit", ns.keep) as tmp:
        sizes = {"empty": (0, 0), "small": small, "big": big}
        sizes.update({f"{n} loops": (0, n) for n in loop_series})
        cases: dict[str, Callable[[], c.Sample]] = {}
        for key, (t, n) in sizes.items():
            cases[key] = audit_case(project_with(tmp / key.replace(" ", "-"), t, n), t, n)
        cases["floor (big)"] = lambda: c.timed([*c.python_script(FLOOR), str(tmp / "big")])
        times = c.interleave(cases, reps, warmup=1)
    for key, xs in times.items():
        t, n = sizes.get(key, big)
        print(f"  {key:12} {t:5d} tasks {n:5d} loops: {c.spread(xs)}")
    empty, t_small, t_big, floor = (c.wall(times[k]) for k in ("empty", "small", "big", "floor (big)"))
    growth = t_big / t_small
    # Meaningless when the small audit is within noise of the empty one (quick runs).
    marginal = (t_big - empty) / (t_small - empty) if t_small - empty > 0.05 * empty else None
    linear = (marginal if marginal is not None else growth) <= 15.0  # see the module docstring
    series = [c.wall(times[f"{n} loops"]) for n in loop_series]
    steps = ", ".join(f"{a}->{b} loops {series[i + 1] / series[i]:.2f}x"
                      for i, (a, b) in enumerate(itertools.pairwise(loop_series)))
    c.figure(3, f"--audit of {big[0]} tasks + {big[1]} loops vs the read-and-hash floor", t_big / floor, 2.0,
             f"audit {t_big:.2f} s vs floor {floor:.2f} s"
             f" (cpu ratio {c.cpu(times['big']) / c.cpu(times['floor (big)']):.2f}x);"
             f" linear (marginal <= 15x): {'met' if linear else 'MISSED'} ({small[0]} + {small[1]}: {t_small:.2f} s,"
             f" growth {growth:.2f}x for 10x the data, marginal {'n/a' if marginal is None else f'{marginal:.2f}x'}"
             f" minus the empty project's {empty:.2f} s; loops alone: {steps}); medians of {reps} interleaved runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
