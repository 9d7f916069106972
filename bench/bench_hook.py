"""Figure 1: the hook path. `automaton --hook claude` on a typical Write and a typical Bash
payload, each as a real process of the installed console script, against
`python3 -c "import json, argparse, pathlib"` on the same interpreter (the floor of any Python
hook), measured in the same run. Target: <= 1.5x (the worse of the two).

The task in scope is `AUTOMATON_TASK=t` at phase `research`. The Write creates
tasks/t/SPEC.md (allowed: the hook reads the task's state, verifies its keyed log, hashes the
artifacts an approval binds and applies the path policy). The Bash runs the project's tests
through a pipe (allowed after the shell analysis finds no write target). An Edit the policy
denies, `--can-edit`, and a Write by an agent in a loop's worktree (the hook before every edit
of an unattended loop: it also reads the loop's state, log and loop.json and matches its
`file_scope`, `src/**`) are timed too, for information.

Also printed: where the hook's time goes, from `python -X importtime` of one hook call (self
time of the modules it imports beyond the baseline's, `_common.import_profile`) and the
decision itself timed in-process with everything imported.
Run: .venv/bin/python bench/bench_hook.py [--quick] [--reps N]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import _common as c

TARGET = 1.5
BASELINE = [sys.executable, "-c", "import json, argparse, pathlib"]
BASH_COMMAND = "python -m pytest tests/ -q 2>&1 | tail -n 20"


def payload(project: Path, tool: str, tool_input: dict[str, str]) -> bytes:
    """A Claude Code PreToolUse payload (the shape its hooks documentation gives)."""
    return json.dumps({
        "session_id": "bench", "transcript_path": "/dev/null", "cwd": str(project), "hook_event_name": "PreToolUse",
        "permission_mode": "default", "tool_name": tool, "tool_input": tool_input,
    }).encode()


def decision_ms(project: Path, data: bytes, env: dict[str, str]) -> float:
    """Median ms of `automaton.hooks.run` in-process, everything already imported (20 calls)."""
    code = ("import os, sys, time, statistics\n"
            "from automaton.hooks import run\n"
            "data = sys.stdin.read()\n"
            "run('claude', data, None)\n"
            "times = []\n"
            "for _ in range(20):\n"
            "    t0 = time.perf_counter(); run('claude', data, None); times.append(time.perf_counter() - t0)\n"
            "print(statistics.median(times) * 1000)\n")
    return float(c.run([sys.executable, "-c", code], cwd=project, env=env, stdin=data).stdout.decode().strip())


def main() -> int:
    ns = c.args(__doc__)
    reps = ns.reps or (5 if ns.quick else 60)
    automaton = c.exe("automaton")
    with c.workspace("hook", ns.keep) as tmp:
        project = c.init_repo(tmp / "proj")
        c.run([automaton, "--create-task", "t"], cwd=project)
        c.run([automaton, "--transition", "research", "--task", "t"], cwd=project)
        env = c.bench_env(AUTOMATON_TASK="t")
        write = payload(project, "Write", {"file_path": str(project / "tasks" / "t" / "SPEC.md"),
                                           "content": "# Spec\n\nWhat the task must achieve.\n"})
        bash = payload(project, "Bash", {"command": BASH_COMMAND, "description": "run the tests"})
        deny = payload(project, "Edit", {"file_path": str(project / "src" / "x.py"), "old_string": "a",
                                         "new_string": "b"})
        hook = [automaton, "--hook", "claude"]
        can_edit = [automaton, "--can-edit", "--task", "t", "--file", "tasks/t/SPEC.md"]
        # Prove each case does what it claims before timing it.
        for allowed in (write, bash):
            done = c.run(hook, cwd=project, env=env, stdin=allowed)
            if done.stderr or done.stdout:
                raise c.BenchError(f"an allowed hook call printed something: {done.stderr[-300:]!r}")
        if b"denied" not in c.run(hook, cwd=project, env=env, stdin=deny, expect=(2,)).stderr:
            raise c.BenchError("the Edit of src/x.py was not denied")
        c.run(can_edit, cwd=project, env=env)
        c.write_template(project, "bench-hook", c.loop_json("x"))
        c.create_loop(project, "wt", "bench-hook")
        c.run([c.exe("automaton-loop"), "--mode", "tick", "--loop", "wt", "--quiet"], cwd=project)  # makes the worktree
        tree = project / ".automaton" / "loops" / "wt" / "worktree"
        in_tree = payload(tree, "Write", {"file_path": str(tree / "src" / "new.py"), "content": "x = 1\n"})
        done = c.run(hook, cwd=tree, env=env, stdin=in_tree)
        if done.stderr or done.stdout:
            raise c.BenchError(f"the Write in the loop worktree was not allowed: {done.stderr[-300:]!r}")
        outside = payload(tree, "Write", {"file_path": str(tree / "docs" / "x.md"), "content": "x\n"})
        if b"file_scope" not in c.run(hook, cwd=tree, env=env, stdin=outside, expect=(2,)).stderr:
            raise c.BenchError("a Write outside the loop's file_scope was not denied by the loop's rules")
        cases = {
            "baseline": lambda: c.timed(BASELINE, env=env),
            "hook Write": lambda: c.timed(hook, cwd=project, env=env, stdin=write),
            "hook Bash": lambda: c.timed(hook, cwd=project, env=env, stdin=bash),
            "hook Edit denied": lambda: c.timed(hook, cwd=project, env=env, stdin=deny, expect=(2,)),
            "can-edit": lambda: c.timed(can_edit, cwd=project, env=env),
            "hook Write, worktree": lambda: c.timed(hook, cwd=tree, env=env, stdin=in_tree),
        }
        times = c.interleave(cases, reps)
        profiles = {name: c.import_profile("automaton.cli.main", ["--hook", "claude"], cwd=project, env=env, stdin=data)
                    for name, data in (("Write", write), ("Bash", bash))}
        decided = {name: decision_ms(project, data, env) for name, data in (("Write", write), ("Bash", bash))}
    base, base_cpu = c.wall(times["baseline"]), c.cpu(times["baseline"])
    ratios = {name: c.wall(xs) / base for name, xs in times.items() if name != "baseline"}
    for name, xs in times.items():
        extra = "" if name == "baseline" else f"  -> {ratios[name]:.2f}x wall, {c.cpu(xs) / base_cpu:.2f}x cpu"
        print(f"  {name:20} {c.spread(xs)}{extra}")
    for name in profiles:
        print(f"  profile of hook {name}: decision in-process {decided[name]:.2f} ms; {profiles[name]}")
    worst = max(("hook Write", "hook Bash"), key=lambda k: ratios[k])
    detail = (f"Write {c.ms(c.wall(times['hook Write']))} ({ratios['hook Write']:.2f}x),"
              f" Bash {c.ms(c.wall(times['hook Bash']))} ({ratios['hook Bash']:.2f}x)"
              f" vs baseline `python3 -c \"import json, argparse, pathlib\"` {c.ms(base)}; cpu ratio of the worse"
              f" {c.cpu(times[worst]) / base_cpu:.2f}x; denied Edit {ratios['hook Edit denied']:.2f}x,"
              f" --can-edit {ratios['can-edit']:.2f}x, Write in a loop worktree {ratios['hook Write, worktree']:.2f}x;"
              f" medians of {reps} interleaved runs")
    c.figure(1, "hook path (--hook claude: Write, Bash) vs bare interpreter", ratios[worst], TARGET, detail)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
