"""Figures 12 and 13: what the namespace layer costs a loop tick and an `automaton --sandbox`
session, against the same work under Landlock alone, on this machine, in the same run.

Figure 12: one tick (`automaton-loop --mode tick`, as bench_tick.py: an existing worktree, the
scripted no-op harness, `echo "1 passed, 1 failed"` as the verifier) of a loop with
`"isolation": "namespaces"` (the default: its agent processes run in user+mount namespaces, the
verifier in a network namespace too, all beneath Landlock) against a loop of the same project
with `"isolation": "landlock-only"` run as on a machine without user namespaces (Landlock alone
around every agent process). Target: <= 1.2x.
Figure 13: `automaton --sandbox -- true` in a project with the default config against one whose
sealed `.automaton/config.json` says `"isolation": "landlock-only"`, run the same way.
Target: <= 1.2x.

Where user namespaces work, automaton uses them whatever "isolation" says ("landlock-only" only
lets it run where they do not), so the landlock-only side starts through
bench/_isolation_switch.py, which makes that one process see no namespaces; the namespace side
starts through the same file without the switch, so both pay the same interpreter start. Before
timing, both paths are checked: a session's `readlink /proc/self/ns/user` differs from this
process's only on the namespace side, and only the landlock-only tick prints the switch's
marker in its Landlock-only warning. The namespace side also pays the probe of the namespace
layer (a child that enters them, once per process): it is part of what the layer costs, and
printed on its own. Each pair is interleaved with the order rotating. Linux only, with user
namespaces; elsewhere the script says so and exits 1.
The repository has 2,000 files (200 with --quick).
Run: .venv/bin/python bench/bench_isolation_cost.py [--quick] [--reps N]
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import _common as c
from _isolation_switch import MARKER

TARGET = 1.2
SWITCH = str(Path(__file__).resolve().with_name("_isolation_switch.py"))
VERIFY = {"command": ["echo", "1 passed, 1 failed"], "score": "summary"}


def entry(mode: str, module: str, *argv: str) -> list[str]:
    """argv running automaton entry point `module` with `argv` through the switch in `mode`."""
    return [sys.executable, SWITCH, mode, module, *argv]


def ticker(project: Path, name: str, mode: str) -> Callable[[], c.Sample]:
    """One timed tick of loop `name` in `mode` (checked: it ran in its worktree and scored, and
    took the path `mode` names)."""
    argv = entry(mode, "automaton.runner.cli", "--mode", "tick", "--loop", name, "--quiet", "--json")

    def checked() -> c.Sample:
        done: dict[str, bytes] = {}

        def work() -> None:
            proc = c.run(argv, cwd=project)
            done.update(out=proc.stdout, err=proc.stderr)

        sample = c.measure(work)
        out, err = done["out"].decode(), done["err"].decode()
        data = json.loads(out.strip().splitlines()[-1])
        if not data.get("ran") or not data.get("worktree_branch") or (data.get("verdict") or {}).get("score") != 0.5:
            raise c.BenchError(f"tick of {name} did not run and score in its worktree: {data}")
        if (MARKER in out + err) != (mode == "landlock-only"):
            raise c.BenchError(f"tick of {name} ({mode}) did not take the {mode} path: {(out + err)[-400:]}")
        return sample

    return checked


def session(project: Path, mode: str, argv: list[str]) -> list[str]:
    return entry(mode, "automaton.cli.main", "--sandbox", "--project", str(project), "--", *argv)


def check_sessions(projects: dict[str, Path], outside: Path) -> None:
    """The namespace side runs its command in a user namespace of its own, the landlock-only
    side in this process's, and still under Landlock: its write to `outside` (a path beside
    the projects) is refused."""
    mine = os.readlink("/proc/self/ns/user")
    for mode, project in projects.items():
        seen = c.run(session(project, mode, ["readlink", "/proc/self/ns/user"]), cwd=project).stdout.decode().strip()
        if (seen != mine) != (mode == "namespaces"):
            raise c.BenchError(f"--sandbox ({mode}) ran in user namespace {seen} (this process: {mine})")
    project = projects["landlock-only"]
    said = c.run(session(project, "landlock-only", ["touch", str(outside)]), cwd=project, expect=(0, 1)).stderr
    if outside.exists() or b"Permission denied" not in said:
        raise c.BenchError(f"--sandbox (landlock-only) wrote {outside}: Landlock is not in force")


def probe_cost(reps: int) -> float:
    """Median seconds of the namespace layer's probe (`sandbox._probe_namespaces`), in process."""
    import automaton.sandbox as sb

    return c.median([c.measure(sb._probe_namespaces).wall for _ in range(reps)])


def make_projects(tmp: Path, files: int) -> tuple[Path, dict[str, Path]]:
    """The tick project (loops "ns" and "ll") and the two session projects."""
    over = {"roles": {"verify": VERIFY}, "brakes": {"score_plateau_window": 1000}}
    project = c.init_repo(tmp / "proj", files=files)
    c.write_template(project, "bench-ns", c.loop_json("x", **over))
    c.write_template(project, "bench-ll", c.loop_json("x", isolation="landlock-only", **over))
    c.create_loop(project, "ns", "bench-ns")
    c.create_loop(project, "ll", "bench-ll")
    sessions = {"namespaces": c.init_repo(tmp / "session-ns"), "landlock-only": c.init_repo(tmp / "session-ll")}
    config = sessions["landlock-only"] / ".automaton" / "config.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('{"schema_version": 1, "isolation": "landlock-only"}\n', encoding="utf-8")
    c.run([c.exe("automaton"), "--approve", "--config", "--yes", "--project", str(config.parent.parent)],
          cwd=config.parent.parent, env=c.bench_env(AUTOMATON_APPROVER="bench"))  # sealing it is a human act
    return project, sessions


def main() -> int:
    ns = c.args(__doc__)
    files = 200 if ns.quick else 2_000
    reps = ns.reps or (3 if ns.quick else 30)
    from automaton.sandbox import available, namespaces_work

    found = available()
    if not found.ok or not namespaces_work():
        raise c.BenchError(f"no namespaces here: {found.detail}; {found.isolation_detail}")
    with c.workspace("isolation-cost", ns.keep) as tmp:
        project, sessions = make_projects(tmp, files)
        ticks = {mode: ticker(project, loop, mode) for mode, loop in (("namespaces", "ns"), ("landlock-only", "ll"))}
        for tick in ticks.values():  # the first tick makes the worktree: untimed, and checks the path
            tick()
        check_sessions(sessions, tmp / "outside.txt")
        cases: dict[str, Callable[[], c.Sample]] = {f"tick, {mode}": tick for mode, tick in ticks.items()}
        for mode, folder in sessions.items():
            cases[f"--sandbox -- true, {mode}"] = (lambda argv, cwd: lambda: c.timed(argv, cwd=cwd))(
                session(folder, mode, ["true"]), folder)
        times = c.interleave(cases, reps, warmup=1)
        probe = probe_cost(max(reps, 10))
    for name, xs in times.items():
        print(f"  {name:36} {c.spread(xs)}")
    print(f"  the namespace layer's probe, in this process (once per automaton process that confines): {c.ms(probe)}")
    for num, what, title in ((12, "tick", f"tick ({files} files) with \"isolation\": \"namespaces\" vs landlock-only"),
                             (13, "--sandbox -- true", "automaton --sandbox -- true, namespaces vs landlock-only")):
        sub, base = times[f"{what}, namespaces"], times[f"{what}, landlock-only"]
        added = c.wall(sub) - c.wall(base)
        c.figure(num, title, c.wall(sub) / c.wall(base), TARGET,
                 f"namespaces {c.ms(c.wall(sub))} vs landlock-only {c.ms(c.wall(base))} ({added * 1000:+.1f} ms;"
                 f" cpu ratio {c.cpu(sub) / c.cpu(base):.2f}x); the namespace probe alone (once per process)"
                 f" {c.ms(probe)};"
                 f" Landlock ABI {found.abi}; medians of {reps} interleaved runs")
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except c.BenchError as exc:
        print(f"bench_isolation_cost: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
