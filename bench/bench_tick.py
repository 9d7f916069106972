"""Figure 4: one tick (`automaton-loop --mode tick`) with the scripted no-op harness (it replays an
empty script: no file changes, $0) and a no-op verifier (`true`), against doing the tick's git
work directly: `git worktree add -b BRANCH PATH HEAD` + `git commit --allow-empty` in it. Target: <= 2x.

Each timed tick is the first tick of a fresh loop (made with `automaton --create-loop`), so it
creates its worktree like the baseline does. The figure is for a repo of 2,000 files; a
200-file repo is measured too, because the checkout (the baseline's cost) grows with the repo
and the tick's own fixed cost does not. The tick also takes the
loop's lock, runs the six gates, records the worktree, writes the run folder (prompt, verdict,
cost, tick.json) and makes one locked state update with its chained log line.
Run: .venv/bin/python bench/bench_tick.py [--quick] [--reps N]
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import _common as c

TARGET = 2.0


def sizes_run(tmp: Path, files: int, reps: int, warmup: int) -> dict[str, list[c.Sample]]:
    """Interleaved samples of a fresh loop's first tick, the direct git work and the imports,
    in a repo of `files` files."""
    runner = c.exe("automaton-loop")
    project = c.init_repo(tmp / f"proj-{files}", files=files)
    c.write_template(project, "bench-tick", c.loop_json("x"))
    fresh = itertools.count()

    def tick() -> c.Sample:
        name = f"tick-{next(fresh):03d}"
        c.create_loop(project, name, "bench-tick")  # untimed: the loop exists before its tick
        argv = [runner, "--mode", "tick", "--loop", name, "--quiet", "--json"]
        holder: dict[str, bytes] = {}
        sample = c.measure(lambda: holder.update(out=c.run(argv, cwd=project).stdout))
        data = json.loads(holder["out"].decode().strip().splitlines()[-1])
        if not data.get("ran") or data.get("iteration") != 1 or not data.get("worktree_branch"):
            raise c.BenchError(f"tick of {name} did not run in a worktree: {data}")
        return sample

    def direct() -> c.Sample:
        i = next(fresh)
        path = tmp / f"direct-{files}-{i:03d}"

        def work() -> None:
            c.run(["git", "worktree", "add", "-q", "-b", f"direct/{i}", str(path), "HEAD"], cwd=project)
            c.run(["git", "commit", "-q", "--allow-empty", "-m", f"tick {i}"], cwd=path)

        return c.measure(work)

    imports = [sys.executable, "-c", "import automaton.runner.cli, automaton.runner.tick"]
    cases = {"git worktree add + commit": direct, "automaton-loop tick": tick,
             "imports only": lambda: c.timed(imports, cwd=project)}
    return c.interleave(cases, reps, warmup=warmup)


def main() -> int:
    ns = c.args(__doc__)
    big, small = (200, 20) if ns.quick else (2_000, 200)
    reps = ns.reps or (3 if ns.quick else 10)
    warmup = 1 if ns.quick else 2
    ratios: dict[int, float] = {}
    with c.workspace("tick", ns.keep) as tmp:
        for files in (small, big):
            times = sizes_run(tmp, files, reps, warmup)
            subject, baseline = times["automaton-loop tick"], times["git worktree add + commit"]
            ratios[files] = c.wall(subject) / c.wall(baseline)
            print(f"  repo of {files} files:")
            for name, xs in times.items():
                print(f"    {name:25} {c.spread(xs)}")
            print(f"    overhead of the tick over its git work: {c.ms(c.wall(subject) - c.wall(baseline))}"
                  f" (interpreter start + runner imports: {c.ms(c.wall(times['imports only']))})")
    c.figure(4, f"one no-op tick vs git worktree add + commit ({big} files)", ratios[big], TARGET,
             f"tick {c.ms(c.wall(subject))} vs git {c.ms(c.wall(baseline))} (cpu ratio"
             f" {c.cpu(subject) / c.cpu(baseline):.2f}x); in a repo of {small} files {ratios[small]:.2f}x"
             f" (the git work shrinks, the tick's fixed cost does not); medians of {reps} interleaved runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
