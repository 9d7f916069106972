"""Figures 14-16: what one tick costs against what it cannot avoid, all in one run.

Figure 14, the steady tick against its process floor: one tick (`automaton-loop --mode tick`,
kernel sandbox on, the scripted no-op harness, a trivial verifier) of a loop whose worktree
exists, against the processes a tick has to start, run directly one after another (the
runner's interpreter, the no-op agent, `git add -A` + `git commit`, one `git status`, the
verify command: `bench_tick.floor_of`). Target: <= 2x. Also printed: the what-if of a
resident tick runner (one interpreter that stays up between ticks): the tick minus the
interpreter start and the runner's imports, measured in the same run.

Figure 15, a tick of a loop whose log has 1,000 lines against a tick of one whose log has 50
(both loops alike otherwise; the lines are `WARNING` lines appended through the store, keyed
and anchored as every line is). Target: <= 1.1x: a tick's cost does not grow with its log.

Also printed with figure 14: how many git processes one steady tick starts (a `git` first on
PATH that logs each start), what they cost run again directly one after another (`git_replay`),
and the what-if of a resident runner that starts none of them either (git read in-process, say).

Figure 16, what the first tick of a new loop adds to a steady tick (it makes the loop's
worktree, automaton's own index of it and the verifier's first export) against `git worktree
add` + `git commit` of a new branch of the same repository, the git work that first tick
stands for. Target: <= 2x. Also printed: the whole first tick against the same baseline, and
the what-if of a first tick that writes no copy of the tree for the verifier: what the first
tick adds minus a full export of the same commit into an empty folder (`export_tree`, timed
in this process in the same run).

The repository has 2,000 files (200 with --quick).
Run: .venv/bin/python bench/bench_tick_targets.py [--quick] [--reps N]
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import _common as c
from bench_tick import IMPORTS, exporter, floor_of, prepare, sizes, ticker

from automaton.core.loopstate import Event, LogEvent

FLOOR_TARGET, LOG_TARGET, FIRST_TARGET = 2.0, 1.1, 2.0
SHORT, LONG = 50, 1_000


def log_lines(project: Path, name: str) -> int:
    """How many lines the log of loop `name` has."""
    return (project / ".automaton" / "loops" / name / ".state.log").read_bytes().count(b"\n")


def grow_log(project: Path, name: str, lines: int) -> None:
    """Append keyed WARNING lines to the log of loop `name` (through the store, under its lock,
    anchored as every line is) until it has `lines` lines."""
    from automaton.store.layout import Project
    from automaton.store.loops import Loop

    loop = Loop.resolve(Project(project), name)
    for i in range(max(0, lines - log_lines(project, name))):
        padding = {"reason": "bench_padding", "detail": f"line {i} of a long-lived loop's log"}
        loop.log_event(LogEvent(Event.WARNING, padding))


def first_ticker(project: Path, template: str) -> Callable[[], c.Sample]:
    """The first tick of a new loop (made untimed before each run: `create_loop`)."""
    counter = itertools.count()

    def run() -> c.Sample:
        name = f"first{next(counter)}"
        c.create_loop(project, name, template)
        return ticker(project, name)()

    return run


def git_processes(project: Path, name: str, tmp: Path) -> list[tuple[list[str], str]]:
    """The git processes one steady tick of loop `name` starts, as (argv, GIT_INDEX_FILE or ""):
    a `git` first on PATH (outside the project, as the runner requires: proc.pinned_programs)
    logs each start, then runs git."""
    real = shutil.which("git")
    if real is None:
        raise c.BenchError("git is not on PATH")
    shim, log = tmp / "git-shim", tmp / "git-starts.log"
    shim.mkdir(exist_ok=True)
    (shim / "git").write_text(f'#!/bin/sh\n{{ printf "%s\\0" "$GIT_INDEX_FILE" "$@"; printf "\\n\\0"; }}'
                              f' >> "{log}"\nexec "{real}" "$@"\n')
    (shim / "git").chmod(0o755)
    log.write_text("")
    env = c.bench_env(PATH=f"{shim}{os.pathsep}{os.environ.get('PATH', '')}")
    c.run([c.exe("automaton-loop"), "--mode", "tick", "--loop", name, "--quiet", "--json"], cwd=project, env=env)
    calls = []
    for record in log.read_bytes().decode("utf-8", "surrogateescape").split("\n\0"):
        fields = record.split("\0")[:-1]
        if fields:
            calls.append((["git", *fields[1:]], fields[0]))
    return calls


def git_replay(calls: list[tuple[list[str], str]]) -> Callable[[], c.Sample]:
    """The tick's git processes (`git_processes`) run again directly, one after another, each
    with the index file it had (what-if: the tick without them). Commands that would change
    something are left out (`commit`; `add` and `read-tree` find nothing to do in a steady tick)."""
    kept = [(argv, index) for argv, index in calls if "commit" not in argv]

    def work() -> None:
        for argv, index in kept:
            c.run(argv, env=c.bench_env(GIT_INDEX_FILE=index) if index else None, expect=(0, 1))

    return lambda: c.measure(work)


def worktree_baseline(project: Path, tmp: Path) -> Callable[[], c.Sample]:
    """`git worktree add -b <new branch> <new folder> HEAD` + `git commit --allow-empty` there."""
    counter = itertools.count()

    def run() -> c.Sample:
        i = next(counter)
        where = tmp / f"wt-{i}"
        return c.measure(lambda: (
            c.run(["git", "worktree", "add", "-q", "-b", f"direct-{i}", str(where), "HEAD"], cwd=project),
            c.run(["git", "commit", "-q", "--allow-empty", "-m", "tick"], cwd=where)))

    return run


def main() -> int:
    ns = c.args(__doc__)
    files, reps = sizes(ns, 9)
    with c.workspace("ticktargets", ns.keep) as tmp:
        project, direct = prepare(tmp, files, dict.fromkeys(("on", "short", "long"), "bench-on"))
        grow_log(project, "short", SHORT)
        grow_log(project, "long", LONG)
        cases = {
            "steady tick": ticker(project, "on"),
            "the tick's processes": floor_of(project, direct),
            "imports only": lambda: c.timed(IMPORTS, cwd=project),
            f"tick, {SHORT}-line log": ticker(project, "short"),
            f"tick, {LONG}-line log": ticker(project, "long"),
            "first tick": first_ticker(project, "bench-on"),
            "worktree add + commit": worktree_baseline(project, tmp),
            "full export": exporter(project, "on", tmp, kept=False),
        }
        calls = git_processes(project, "on", tmp)
        cases["the tick's git, replayed"] = git_replay(calls)
        times = c.interleave(cases, reps, warmup=1)
        short_n, long_n = log_lines(project, "short"), log_lines(project, "long")
        started = len(calls)
    for name, xs in times.items():
        print(f"  {name:24} {c.spread(xs)}")
    tick, floor = c.wall(times["steady tick"]), c.wall(times["the tick's processes"])
    floor_cpu = c.cpu(times["the tick's processes"])
    imported = c.wall(times["imports only"])
    resident = tick - imported
    replayed = c.wall(times["the tick's git, replayed"])
    c.figure(14, f"steady tick ({files} files, sandbox on) vs its process floor", tick / floor, FLOOR_TARGET,
             f"tick {c.ms(tick)} vs the tick's processes run directly {c.ms(floor)} (cpu ratio"
             f" {c.cpu(times['steady tick']) / floor_cpu:.2f}x); what-if of a resident tick"
             f" runner (the tick without its interpreter start and imports, {c.ms(imported)}): {c.ms(resident)}"
             f" = {resident / floor:.2f}x; {started} git processes per tick (the floor starts 3), run"
             f" directly {c.ms(replayed)}: a resident runner that also started no git process of its own"
             f" {c.ms(resident - replayed)} = {(resident - replayed) / floor:.2f}x; medians of {reps}"
             " interleaved runs")
    short, long = c.wall(times[f"tick, {SHORT}-line log"]), c.wall(times[f"tick, {LONG}-line log"])
    c.figure(15, f"tick with a {LONG}-line log vs a {SHORT}-line log", long / short, LOG_TARGET,
             f"{c.ms(long)} vs {c.ms(short)} (logs of {long_n} and {short_n} lines after the run; cpu ratio"
             f" {c.cpu(times[f'tick, {LONG}-line log']) / c.cpu(times[f'tick, {SHORT}-line log']):.2f}x);"
             f" medians of {reps} interleaved runs")
    first, base = c.wall(times["first tick"]), c.wall(times["worktree add + commit"])
    export = c.wall(times["full export"])
    c.figure(16, f"what the first tick adds to a steady tick ({files} files) vs git worktree add + commit",
             (first - tick) / base, FIRST_TARGET,
             f"first tick {c.ms(first)} - steady tick {c.ms(tick)} = {c.ms(first - tick)} vs {c.ms(base)} (cpu"
             f" {c.ms(c.cpu(times['first tick']) - c.cpu(times['steady tick']))} vs"
             f" {c.ms(c.cpu(times['worktree add + commit']))}); the whole"
             f" first tick {first / base:.2f}x the baseline; what-if of a first tick that writes no copy"
             f" of the tree for the verifier (the full export, {c.ms(export)} in-process, taken off):"
             f" {(first - tick - export) / base:.2f}x; medians of {reps} interleaved runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
