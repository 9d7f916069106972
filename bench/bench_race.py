"""Figure 5: twenty ticks of one loop started at the same moment. Twenty real
`automaton-loop --mode tick` processes wait on a barrier file (a small Python wrapper polls for
it, then exec()s the runner, so all twenty interpreters start together); exactly one may run
the tick, the other nineteen must give up (exit 0, `SKIPPED reason=busy` in the loop log).

The figure: the median time from the release to the exit of the ticks that gave up, in
seconds. Target: <= 0.5 s. Also reported: how many ran (must be 1, else the script fails),
the maximum, and twenty bare interpreters (`python -c "import json, argparse, pathlib"`)
released by the same barrier in the same run, the floor of twenty Python processes starting
at once on this machine.
The tick's verifier sleeps a few seconds (a stand-in for a real agent, which runs for minutes)
so the tick is still running when the last of the twenty reaches the lock; a process arriving
after a finished tick would rightly run the next tick, which is not a race.
Run: .venv/bin/python bench/bench_race.py [--quick] [--rounds N]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import _common as c

PROCS = 20
TARGET_S = 0.5
# Runs in each of the twenty processes: say ready, wait for the barrier, become the command.
WRAPPER = """import os, sys, time
open(sys.argv[1], "w").close()
while not os.path.exists(sys.argv[2]):
    time.sleep(0.0005)
os.execv(sys.argv[3], sys.argv[3:])
"""


def release(folder: Path, argv: list[str], cwd: Path) -> list[tuple[float, int, bytes]]:
    """Start PROCS copies of `argv` behind a barrier, release them at once, return
    (seconds from the release to exit, exit code, stdout) of each."""
    folder.mkdir(parents=True)
    barrier = folder / "go"
    procs, outs = [], []
    for i in range(PROCS):
        out = (folder / f"out-{i}").open("wb")
        outs.append(out)
        procs.append(subprocess.Popen([sys.executable, "-c", WRAPPER, str(folder / f"ready-{i}"), str(barrier), *argv],
                                      cwd=cwd, env=c.bench_env(), stdout=out, stderr=subprocess.DEVNULL))
    deadline = time.monotonic() + 120
    while sum(1 for i in range(PROCS) if (folder / f"ready-{i}").exists()) < PROCS:
        if time.monotonic() > deadline:
            raise c.BenchError("the twenty processes did not get ready within 120 s")
        time.sleep(0.005)
    ended = [0.0] * PROCS

    def wait(i: int) -> None:
        procs[i].wait()
        ended[i] = time.monotonic()

    threads = [threading.Thread(target=wait, args=(i,)) for i in range(PROCS)]
    for t in threads:
        t.start()
    t0 = time.monotonic()
    barrier.touch()
    for t in threads:
        t.join()
    for out in outs:
        out.close()
    return [(ended[i] - t0, procs[i].returncode, (folder / f"out-{i}").read_bytes()) for i in range(PROCS)]


def last_json(raw: bytes) -> dict[str, object]:
    lines = raw.decode("utf-8", "replace").strip().splitlines()
    return json.loads(lines[-1]) if lines else {}


def check_loop(project: Path, name: str) -> int:
    """The loop after a race: iteration_count, with the state/log tamper check passing."""
    from automaton.store import loops
    from automaton.store.layout import Project

    rec = loops.inspect(Project(project), name)
    if rec.tamper:
        raise c.BenchError(f"loop {name} reads as tampered after the race: {rec.tamper}")
    log = (project / ".automaton" / "loops" / name / loops.LOG_FILE).read_text()
    skipped = sum(1 for line in log.splitlines() if " SKIPPED " in line)
    if skipped != PROCS - rec.state.iteration_count:
        raise c.BenchError(f"loop {name}: {skipped} SKIPPED lines for {rec.state.iteration_count} ticks")
    return rec.state.iteration_count


def uncontended(project: Path, runner: str, reps: int) -> dict[str, list[c.Sample]]:
    """A single tick that finds the loop's lock held (by this process), against a bare interpreter."""
    from automaton.store import loops
    from automaton.store.layout import Project
    from automaton.store.locks import locked

    name = "race-alone"
    c.create_loop(project, name, "bench-race")
    argv = [runner, "--mode", "tick", "--loop", name, "--quiet", "--json"]

    def skipped() -> c.Sample:
        holder: dict[str, bytes] = {}
        sample = c.measure(lambda: holder.update(out=c.run(argv, cwd=project).stdout))
        if last_json(holder["out"]).get("skipped") != "busy":
            raise c.BenchError(f"a tick ran although the lock was held: {holder['out'][-300:]!r}")
        return sample

    with locked(loops.tick_lock_path(Project(project), name), timeout_s=0):
        times = c.interleave({"tick, lock held": skipped,
                              "bare interpreter": lambda: c.timed([sys.executable, "-c",
                                                                   "import json, argparse, pathlib"])}, reps)
        print(f"  profile of a give-up: {c.import_profile('automaton.runner.cli', argv[1:], cwd=project)}")
    return times


def main() -> int:
    ns = c.args(__doc__, lambda p: p.add_argument("--rounds", type=int, default=None, help="races to run"))
    rounds = ns.rounds or (1 if ns.quick else 3)
    hold_s = 4 if ns.quick else 6
    runner = c.exe("automaton-loop")
    ran: list[int] = []
    gave_up: list[float] = []
    bare: list[float] = []
    with c.workspace("race", ns.keep) as tmp:
        project = c.init_repo(tmp / "proj", files=200)
        c.write_template(project, "bench-race", c.loop_json(
            "x", roles={"verify": {"command": ["sleep", str(hold_s)], "score": "summary"}}))
        for r in range(rounds):  # interleaved: a race, then the bare-interpreter release
            name = f"race-{r}"
            c.create_loop(project, name, "bench-race")
            results = release(tmp / f"race-{r}", [runner, "--mode", "tick", "--loop", name, "--quiet", "--json"],
                              project)
            bad = [code for _, code, _ in results if code != 0]
            if bad:
                raise c.BenchError(f"round {r}: tick processes exited {bad} (expected 0: ran or skipped busy)")
            outcomes = [(s, last_json(out)) for s, _, out in results]
            ran.append(sum(1 for _, d in outcomes if d.get("ran") is True))
            gave_up += [s for s, d in outcomes if d.get("skipped") == "busy"]
            if check_loop(project, name) != ran[-1]:
                raise c.BenchError(f"round {r}: {ran[-1]} processes say they ran, the loop counts otherwise")
            bare_argv = [sys.executable, "-c", "import json, argparse, pathlib"]
            bare += [s for s, _, _ in release(tmp / f"bare-{r}", bare_argv, project)]
        alone = uncontended(project, runner, 3 if ns.quick else 10)
    med, top, base = statistics.median(gave_up), max(gave_up), statistics.median(bare)
    print(f"  ticks that ran per round: {ran} (of {PROCS} started together)")
    print(f"  gave up (busy): median {med:.2f} s, max {top:.2f} s, n={len(gave_up)}")
    print(f"  bare interpreters released alike: median {base:.2f} s, max {max(bare):.2f} s, n={len(bare)}")
    skip, bare1 = alone["tick, lock held"], alone["bare interpreter"]
    print(f"  one tick giving up alone (lock held by this process): {c.spread(skip)};"
          f" bare interpreter {c.spread(bare1)} -> {c.wall(skip) / c.wall(bare1):.2f}x")
    verdict = "met" if all(n == 1 for n in ran) else "MISSED"
    c.figure(5, f"a skipped tick in a storm of {PROCS}: median time to exit", med, TARGET_S,
             f"ran {max(ran)} per race (must be 1: {verdict}, {rounds} races); the others gave up in median"
             f" {med:.2f} s, max {top:.2f} s; {PROCS} bare interpreters released alike {base:.2f} s median"
             f" ({med / base:.2f}x); one give-up alone {c.ms(c.wall(skip))} ({c.wall(skip) / c.wall(bare1):.2f}x a"
             " bare interpreter)", unit=" s")
    return 0 if verdict == "met" else 1


if __name__ == "__main__":
    raise SystemExit(main())
