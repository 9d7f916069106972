"""Figure 3: `automaton --audit` over 5,000 tasks and 500 loops, and how it grows.

The figure is the growth ratio time(5,000 tasks + 500 loops) / time(500 tasks + 50 loops)
against the ideal 10x of a linear scan (lower is better; < 10x only because the fixed cost
of starting the process is shared). The marginal ratio subtracts the audit of an empty project
(interpreter start + imports) from both sides. A second series grows loops alone: 50, 500 and
5,000 loops (no tasks).

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
    reps = ns.reps or (3 if ns.quick else 5)
    small, big = (500 // scale, 50 // scale), (5000 // scale, 500 // scale)
    loop_series = [5, 50] if ns.quick else [50, 500, 5000]
    with c.workspace("audit", ns.keep) as tmp:
        sizes = {"empty": (0, 0), "small": small, "big": big}
        sizes.update({f"{n} loops": (0, n) for n in loop_series})
        cases = {}
        for key, (t, n) in sizes.items():
            cases[key] = audit_case(project_with(tmp / key.replace(" ", "-"), t, n), t, n)
        times = c.interleave(cases, reps, warmup=1)
    for key, xs in times.items():
        t, n = sizes[key]
        print(f"  {key:10} {t:5d} tasks {n:5d} loops: {c.spread(xs)}")
    empty, t_small, t_big = (c.wall(times[k]) for k in ("empty", "small", "big"))
    growth = t_big / t_small
    # Meaningless when the small audit is within noise of the empty one (quick runs).
    marginal = f"{(t_big - empty) / (t_small - empty):.2f}x" if t_small - empty > 0.05 * empty else "n/a"
    series = [c.wall(times[f"{n} loops"]) for n in loop_series]
    steps = ", ".join(f"{a}->{b} loops {series[i + 1] / series[i]:.2f}x"
                      for i, (a, b) in enumerate(itertools.pairwise(loop_series)))
    c.figure(3, f"--audit growth {small[0]}+{small[1]} -> {big[0]} tasks+{big[1]} loops (ideal linear 10x)",
             growth, 10.0, f"{big[0]} tasks + {big[1]} loops: {t_big:.2f} s, {small[0]} + {small[1]}: {t_small:.2f} s,"
             f" empty project {empty:.2f} s; marginal growth (minus empty) {marginal}; loops alone: {steps};"
             f" medians of {reps} interleaved runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
