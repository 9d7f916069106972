"""Figure 1: the hook path. `automaton --hook claude` (one allowed, one denied Edit payload) and
`automaton --can-edit`, each as a real process of the installed console script, against
`python -c "import json, argparse, pathlib"` on the same interpreter (the floor of any Python
hook). Target: <= 1.5x.

The task in scope is `AUTOMATON_TASK=t` at phase `research`: editing tasks/t/SPEC.md is
allowed (exit 0, no output), editing src/x.py is denied (exit 2, one stderr line).
Run: .venv/bin/python bench/bench_hook.py [--quick] [--reps N]
"""

from __future__ import annotations

import json
import sys

import _common as c

TARGET = 1.5


def payload(project: str, file: str) -> bytes:
    """A Claude Code PreToolUse payload for an Edit (PROTOCOLS.md §1.3 shape)."""
    return json.dumps({
        "session_id": "bench", "transcript_path": "/dev/null", "cwd": project, "hook_event_name": "PreToolUse",
        "tool_name": "Edit", "tool_input": {"file_path": file, "old_string": "a", "new_string": "b"},
    }).encode()


def main() -> int:
    ns = c.args(__doc__)
    reps = ns.reps or (5 if ns.quick else 40)
    automaton = c.exe("automaton")
    with c.workspace("hook", ns.keep) as tmp:
        project = c.init_repo(tmp / "proj")
        c.run([automaton, "--create-task", "t"], cwd=project)
        c.run([automaton, "--transition", "research", "--task", "t"], cwd=project)
        env = c.bench_env(AUTOMATON_TASK="t")
        allow = payload(str(project), str(project / "tasks" / "t" / "SPEC.md"))
        deny = payload(str(project), str(project / "src" / "x.py"))
        hook = [automaton, "--hook", "claude"]
        can_edit = [automaton, "--can-edit", "--task", "t", "--file", "tasks/t/SPEC.md"]
        # Prove each case does what it claims before timing it.
        assert c.run(hook, cwd=project, env=env, stdin=allow).stderr == b""
        assert b"denied" in c.run(hook, cwd=project, env=env, stdin=deny, expect=(2,)).stderr
        c.run(can_edit, cwd=project, env=env)
        cases = {
            "baseline": lambda: c.timed([sys.executable, "-c", "import json, argparse, pathlib"], env=env),
            "hook allow": lambda: c.timed(hook, cwd=project, env=env, stdin=allow),
            "hook deny": lambda: c.timed(hook, cwd=project, env=env, stdin=deny, expect=(2,)),
            "can-edit": lambda: c.timed(can_edit, cwd=project, env=env),
        }
        times = c.interleave(cases, reps)
    base, base_cpu = c.wall(times["baseline"]), c.cpu(times["baseline"])
    ratios = {name: c.wall(xs) / base for name, xs in times.items() if name != "baseline"}
    for name, xs in times.items():
        extra = "" if name == "baseline" else f"  -> {ratios[name]:.2f}x wall, {c.cpu(xs) / base_cpu:.2f}x cpu"
        print(f"  {name:11} {c.spread(xs)}{extra}")
    worst = max(ratios, key=lambda k: ratios[k])
    detail = (", ".join(f"{k} {c.ms(c.wall(times[k]))}" for k in ratios)
              + f" vs baseline `python -c 'import json, argparse, pathlib'` {c.ms(base)}; worst = {worst}"
              f" (cpu ratio {c.cpu(times[worst]) / base_cpu:.2f}x); medians of {reps} interleaved runs")
    c.figure(1, "hook path (--hook claude, --can-edit) vs bare interpreter", ratios[worst], TARGET, detail)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
