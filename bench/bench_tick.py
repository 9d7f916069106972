"""Figures 4 and 7: one tick (`automaton-loop --mode tick`) of a loop whose worktree exists,
with the scripted no-op harness (it replays an empty script: no file changes, $0, but runs as
a real process like an agent CLI) and a trivial verifier (`echo "1 passed, 1 failed"`, so
every tick is scored 0.5 and the loop keeps running).

Figure 4: the tick (kernel sandbox on, the default) against the git work of a tick done
directly in a worktree of the same repository: `git add -A` + `git commit --allow-empty`.
Target: <= 3x. Figure 7: the same tick with the kernel sandbox against the same tick of a
loop with `"sandbox": "off"`. Target: <= 1.2x. All three interleaved in one run.

What the tick adds to its git work is measured in the same run and printed: interpreter start
+ the runner's imports, and the export the verifier runs in, called in this process the way the
tick calls it: `git.export.refresh_export` of the worktree's HEAD into a folder an earlier call
left (every file read and compared with its blob; what the tick does where it keeps the export,
runner/verify.py). For comparison, a full export into an empty folder (`export_tree`, what every
tick did before, and still does where no export may be kept) and its floor (writing files of
the same names and sizes with os.open/os.write). And the sandbox (figure 7). And the floor
under any tick of this design (`floor_of`): the processes a tick has to start, run directly one
after another, which shows how much of the ratio is automaton's own work and how much is
starting an interpreter and an agent at all.
The repository has 2,000 files (200 with --quick).
Run: .venv/bin/python bench/bench_tick.py [--quick] [--reps N]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import _common as c

TARGET, SANDBOX_TARGET = 3.0, 1.2
VERIFY = {"command": ["echo", "1 passed, 1 failed"], "score": "summary"}
# What a tick imports before it does anything: the "imports only" case of figures 4 and 14.
IMPORTS = [sys.executable, "-c", "import automaton.runner.cli, automaton.runner.tick"]


def ticker(project: Path, name: str) -> Callable[[], c.Sample]:
    """One timed tick of loop `name` (checked: it ran, in the loop's worktree, and scored)."""
    argv = [c.exe("automaton-loop"), "--mode", "tick", "--loop", name, "--quiet", "--json"]

    def tick() -> c.Sample:
        holder: dict[str, bytes] = {}
        sample = c.measure(lambda: holder.update(out=c.run(argv, cwd=project).stdout))
        data = json.loads(holder["out"].decode().strip().splitlines()[-1])
        if not data.get("ran") or not data.get("worktree_branch") or (data.get("verdict") or {}).get("score") != 0.5:
            raise c.BenchError(f"tick of {name} did not run and score in its worktree: {data}")
        return sample

    return tick


def exporter(project: Path, name: str, tmp: Path, kept: bool) -> Callable[[], c.Sample]:
    """The export a tick's verifier runs in, done in this process with the tick's own call:
    `kept`: refresh_export into one folder kept between calls (as a tick where it keeps the
    export); else export_tree into a new empty folder, removed afterwards."""
    from automaton.git.export import export_tree, refresh_export
    from automaton.runner.verify import protected_patterns
    from automaton.store import loops
    from automaton.store.layout import Project

    proj = Project(project)
    state = loops.read_state(proj, name)
    cfg = loops.read_config(proj, name)
    wt = Path(str(state.worktree_path))
    counter = itertools.count()
    folder = tmp / "kept-export"

    def work() -> None:
        protected = protected_patterns(cfg, wt)
        if kept:
            done = refresh_export(wt, "HEAD", folder, protected=protected, base_commit=state.base_commit)
            if done.kept != done.files:
                raise c.BenchError(f"the kept export rewrote {done.files - done.kept} of {done.files} files")
            return
        dest = tmp / f"export-{next(counter)}"
        export_tree(wt, "HEAD", dest, protected=protected, base_commit=state.base_commit)
        shutil.rmtree(dest)

    if kept:  # the first call writes every file: untimed, as a loop's first tick
        refresh_export(wt, "HEAD", folder, protected=protected_patterns(cfg, wt), base_commit=state.base_commit)
    return lambda: c.measure(work)


def file_writer(project: Path, tmp: Path) -> Callable[[], c.Sample]:
    """The floor of the clean export: write the files of HEAD's tree (same names, same sizes)
    into an empty folder with os.open/os.write, in this process."""
    names = [n for n in c.git(project, "ls-files", "-z").split("\0") if n]
    sizes = {n: (project / n).stat().st_size for n in names}
    counter = itertools.count()

    def work() -> None:
        dest = tmp / f"files-{next(counter)}"
        for name in names:
            path = dest / name
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, b"x" * sizes[name])
            os.close(fd)
        shutil.rmtree(dest)

    return lambda: c.measure(work)


def floor_of(project: Path, direct: Path) -> Callable[[], c.Sample]:
    """The processes a tick cannot do without, run directly one after the other (FLOOR_STEPS):
    the runner's own interpreter start (the bare interpreter of figure 1's baseline), the
    no-op agent (the scripted replay process the tick runs, unconfined), the git work of the
    baseline, one `git status` of the worktree (a drift check's one walk of it; a tick makes
    two), and the verify command. Not included: the runner's imports, the gates' other git
    calls, the export, the sandbox, the state writes with fsync."""
    from automaton.harnesses import scripted

    script = project / ".automaton" / "loops" / "on" / "script.json"
    replay = str(Path(scripted.__file__).with_name("_replay.py"))
    steps = [
        [sys.executable, "-c", "import json, argparse, pathlib"],
        [sys.executable, "-P", "-S", replay, str(script), "implement", "1000000"],
        ["git", "add", "-A"],
        ["git", "commit", "-q", "--allow-empty", "-m", "tick"],
        ["git", "status", "--porcelain", "-z", "--untracked-files=all"],
        [*VERIFY["command"]],
    ]
    return lambda: c.measure(lambda: [c.run(argv, cwd=direct) for argv in steps])


def sizes(ns: argparse.Namespace, full_reps: int) -> tuple[int, int]:
    """(files in the repository, timed runs per case) for `ns` (`--quick`, `--reps`)."""
    return (200 if ns.quick else 2_000), ns.reps or (3 if ns.quick else full_reps)


def prepare(tmp: Path, files: int, loops: dict[str, str]) -> tuple[Path, Path]:
    """(project, direct) under `tmp`: a repository of `files` files with the templates
    `bench-on` (sandbox on) and `bench-off` (sandbox off), each loop of `loops` (name ->
    template) created and ticked once (the first tick makes the worktree: untimed), and a
    plain worktree `direct` for the baselines run by hand."""
    over = {"roles": {"verify": VERIFY}, "brakes": {"score_plateau_window": 1000}}
    project = c.init_repo(tmp / "proj", files=files)
    c.write_template(project, "bench-on", c.loop_json("x", **over))
    c.write_template(project, "bench-off", c.loop_json("x", sandbox="off", **over))
    for name, template in loops.items():
        c.create_loop(project, name, template)
        ticker(project, name)()
    direct = tmp / "direct"
    c.git(project, "worktree", "add", "-q", "-b", "direct", str(direct), "HEAD")
    return project, direct


def main() -> int:
    ns = c.args(__doc__)
    files, reps = sizes(ns, 12)
    with c.workspace("tick", ns.keep) as tmp:
        project, direct = prepare(tmp, files, {"on": "bench-on", "off": "bench-off"})
        floor = floor_of(project, direct)
        cases = {
            "git add -A + commit": lambda: c.measure(lambda: (
                c.run(["git", "add", "-A"], cwd=direct),
                c.run(["git", "commit", "-q", "--allow-empty", "-m", "tick"], cwd=direct))),
            "tick, sandbox on": ticker(project, "on"),
            "tick, sandbox off": ticker(project, "off"),
            "export (kept folder)": exporter(project, "on", tmp, kept=True),
            "full export": exporter(project, "on", tmp, kept=False),
            "write the files": file_writer(project, tmp),
            "imports only": lambda: c.timed(IMPORTS, cwd=project),
            "the tick's processes": floor,
        }
        times = c.interleave(cases, reps, warmup=1)
    for name, xs in times.items():
        print(f"  {name:20} {c.spread(xs)}")
    base, on, off = times["git add -A + commit"], times["tick, sandbox on"], times["tick, sandbox off"]
    export, imported = c.wall(times["export (kept folder)"]), c.wall(times["imports only"])
    full, written = c.wall(times["full export"]), c.wall(times["write the files"])
    print(f"  what the tick adds to its git work ({c.ms(c.wall(on) - c.wall(base))}): interpreter start + runner"
          f" imports {c.ms(imported)}, the export {c.ms(export)}, the sandbox {c.ms(c.wall(on) - c.wall(off))};"
          f" the rest (gates, the harness and verifier processes, state writes with fsync, the run folder)"
          f" {c.ms(c.wall(on) - c.wall(base) - imported - export - (c.wall(on) - c.wall(off)))}")
    floor_s = c.wall(times["the tick's processes"])
    print(f"  the tick's processes run directly (runner interpreter, no-op agent, git add -A + commit, git status,"
          f" verify command): {c.ms(floor_s)} = {floor_s / c.wall(base):.2f}x the baseline; the target"
          f" ({TARGET:g}x the baseline) is {c.ms(TARGET * c.wall(base))}")
    c.figure(4, f"one tick on an existing worktree ({files} files) vs git add -A + git commit",
             c.wall(on) / c.wall(base), TARGET,
             f"tick {c.ms(c.wall(on))} vs git {c.ms(c.wall(base))} (cpu ratio {c.cpu(on) / c.cpu(base):.2f}x);"
             f" of which the export {c.ms(export)} (kept folder, every file compared; a full export"
             f" {c.ms(full)}, writing its {files} files alone {c.ms(written)}) and interpreter start + imports"
             f" {c.ms(imported)}; without the export and the imports"
             f" {(c.wall(on) - export - imported) / c.wall(base):.2f}x; the tick's processes alone, run directly,"
             f" {c.ms(floor_s)} ({floor_s / c.wall(base):.2f}x; the tick {c.wall(on) / floor_s:.2f}x them);"
             f" medians of {reps} interleaved runs")
    c.figure(7, "tick with the kernel sandbox vs \"sandbox\": \"off\"", c.wall(on) / c.wall(off), SANDBOX_TARGET,
             f"sandbox on {c.ms(c.wall(on))} vs off {c.ms(c.wall(off))} (cpu ratio {c.cpu(on) / c.cpu(off):.2f}x);"
             f" medians of {reps} interleaved runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
