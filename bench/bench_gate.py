"""Figure 2: `automaton --check-gate` with drift on a repo of 20,000 files, 500 of them changed in
the loop's worktree (a quarter each: committed since the base commit, staged, unstaged,
untracked), against running the git commands the drift gate needs directly in the worktree:
`git diff --name-only -z --no-renames BASE...HEAD` + `git status --porcelain=v1 -z
--untracked-files=all` (the flags git/drift.py uses; `all` lists each untracked file). Target: <= 1.3x.

The loop is made with `automaton --create-loop`, its worktree with a real `git worktree add`,
and `worktree_path` / `base_commit` are recorded through `store.loops.update_state` (as the
runner does). Every changed file is inside the loop's file_scope, so every run goes through
all six gates and none halts the loop.
Run: .venv/bin/python bench/bench_gate.py [--quick] [--reps N]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import _common as c

TARGET = 1.3
LOOP = "gate"


def change_worktree(wt: Path, files: int, changed: int) -> None:
    """`changed` files: committed, staged, unstaged (existing files) and untracked (new ones)."""
    quarter = changed // 4
    existing = sorted((wt / "src").rglob("*.py"))
    step = max(1, files // (3 * quarter))
    picks = existing[::step][: 3 * quarter]
    committed, staged, unstaged = picks[:quarter], picks[quarter:2 * quarter], picks[2 * quarter:]
    for path in committed:
        path.write_text(path.read_text() + "# committed\n")
    c.git(wt, "add", "-A")
    c.git(wt, "commit", "-q", "-m", "loop work")
    for path in staged:
        path.write_text(path.read_text() + "# staged\n")
    c.git(wt, "add", *[str(p.relative_to(wt)) for p in staged])
    for path in unstaged:
        path.write_text(path.read_text() + "# unstaged\n")
    new = wt / "src" / "new"
    new.mkdir()
    for i in range(changed - 3 * quarter):
        (new / f"n{i:04d}.py").write_text(f"NEW = {i}\n")


def main() -> int:
    ns = c.args(__doc__)
    files, changed = (2_000, 100) if ns.quick else (20_000, 500)
    reps = ns.reps or (3 if ns.quick else 15)
    automaton = c.exe("automaton")
    with c.workspace("gate", ns.keep) as tmp:
        project = c.init_repo(tmp / "proj", files=files)
        c.write_template(project, "bench-gate", c.loop_json(LOOP))
        loop_dir = c.create_loop(project, LOOP, "bench-gate")
        wt = loop_dir / "worktree"
        c.git(project, "worktree", "add", "-q", "-b", f"loop/{LOOP}", str(wt), "main")
        base = c.git(wt, "rev-parse", "HEAD").strip()
        record(project, wt, base)
        change_worktree(wt, files, changed)

        gate = [automaton, "--check-gate", LOOP, "--json"]
        diff = ["git", "diff", "--name-only", "-z", "--no-renames", f"{base}...HEAD"]
        status = ["git", "status", "--porcelain=v1", "-z", "--untracked-files=all"]
        seen = {f for f in c.run(diff, cwd=wt).stdout.decode().split("\0") if f}
        seen |= {e[3:] for e in c.run(status, cwd=wt).stdout.decode().split("\0") if e}
        if len(seen) != changed:
            raise c.BenchError(f"expected {changed} changed files in the worktree, git lists {len(seen)}")
        answer = json.loads(c.run(gate, cwd=project).stdout.decode().strip().splitlines()[-1])
        if not answer["ok"]:
            raise c.BenchError(f"the gate is not ok, nothing to time: {answer}")

        modules = "automaton.cli.main, automaton.cli.verbs_loops, automaton.commands.loops"
        imports = [sys.executable, "-c", f"import {modules}"]
        in_process = gate_in_process(project)
        cases = {
            "git diff + status": lambda: c.measure(lambda: (c.run(diff, cwd=wt), c.run(status, cwd=wt))),
            "--check-gate": lambda: c.timed(gate, cwd=project),
            "imports only": lambda: c.timed(imports, cwd=project),
            "gates in-process": lambda: c.measure(in_process),
        }
        times = c.interleave(cases, reps)
    subject, baseline = times["--check-gate"], times["git diff + status"]
    ratio = c.wall(subject) / c.wall(baseline)
    for name, xs in times.items():
        print(f"  {name:17} {c.spread(xs)}")
    print(f"  breakdown: interpreter start + imports {c.ms(c.wall(times['imports only']))},"
          f" the six gates with their 4 git calls (in-process) {c.ms(c.wall(times['gates in-process']))}")
    c.figure(2, f"--check-gate with drift ({files} files, {changed} changed) vs git diff + git status", ratio,
             TARGET, f"check-gate {c.ms(c.wall(subject))} vs git {c.ms(c.wall(baseline))}"
             f" (cpu ratio {c.cpu(subject) / c.cpu(baseline):.2f}x); the gates alone, in-process (no interpreter"
             f" start): {c.wall(times['gates in-process']) / c.wall(baseline):.2f}x;"
             f" medians of {reps} interleaved runs")
    return 0


def gate_in_process(project: Path) -> Any:
    """A callable running commands.loops.check_gate in this process (imports already paid)."""
    from automaton.commands.loops import check_gate
    from automaton.store.layout import Project

    def work() -> None:
        if not check_gate(Project(project), LOOP).ok:
            raise c.BenchError("the in-process gate is not ok")

    return work


def record(project: Path, wt: Path, base: str) -> None:
    """Record the worktree in `.state.loop` the way the runner does (a WORKTREE event)."""
    from automaton.store import loops
    from automaton.store.layout import Project

    def mutate(state: dict[str, Any]) -> None:
        state.update(worktree_path=str(wt), worktree_branch=f"loop/{LOOP}", base_commit=base)

    loops.update_state(Project(project), LOOP, "WORKTREE",
                       {"path": str(wt), "branch": f"loop/{LOOP}", "base": base, "created": True}, mutate)


if __name__ == "__main__":
    raise SystemExit(main())
