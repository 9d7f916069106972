"""Figure 2: `automaton --check-gate` with drift on a repo of 20,000 files, 500 of them changed in
the loop's worktree (a quarter each: committed since the base commit, staged, unstaged,
untracked), against the git commands the gate's drift check needs, run directly in the
worktree in the same run. Target: <= 1.5x.

Baseline ("the gate's git commands"), one process each, as the drift check runs them (the
agent's index is never trusted, so the worktree is compared with HEAD through automaton's own
index, `automaton.git.content`): one `rev-parse --show-toplevel HEAD^{tree} BASE^{commit}
--symbolic-full-name HEAD` (the worktree's top, its tree, the base, its branch),
`diff-tree -r --raw BASE HEAD`, `diff-index --cached --name-only TREE`, `ls-files -v`,
`status --untracked-files=all --ignored=traditional` on a warm copy of automaton's index, and
`diff-tree` listing the base commit's `.gitignore` files. Left out: the filter-driver probe
(`git config`) automaton's hardening runs once per gate before the one command that reads
content (the status; automaton's own work), and reading the loop state.

Also measured, same run, for comparison:
- the previous figure's baseline, `git diff --name-only BASE...HEAD` + `git status
  --porcelain=v1 -z --untracked-files=all` on the worktree (it trusts the agent's index);
- what hashing every tracked file costs (`git ls-tree -r HEAD` + `git hash-object
  --stdin-paths` of all 20,000 files): what each gate paid before automaton kept its index;
- the first gate of the loop (no index yet: every file hashed), the imports alone, and the
  gates in-process (no interpreter start).

The loop is made with `automaton --create-loop`, its worktree with a real `git worktree add`,
and `worktree_path` / `base_commit` are recorded through `store.loops.update_state` (as the
runner does). Every changed file is inside the loop's file_scope, so every run goes through
all the gates and none halts the loop.
Run: .venv/bin/python bench/bench_gate.py [--quick] [--reps N]
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import _common as c

TARGET = 1.5
LOOP = "gate"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


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


def gate_git(wt: Path, base: str, index: Path) -> Callable[[], c.Sample]:
    """The drift check's git commands, run directly (see the module docstring)."""
    tree = c.git(wt, "rev-parse", "HEAD^{tree}").strip()
    own = c.bench_env(GIT_INDEX_FILE=str(index))
    calls: list[tuple[list[str], dict[str, str] | None]] = [
        (["git", "rev-parse", "--show-toplevel", "HEAD^{tree}", f"{base}^{{commit}}", "--symbolic-full-name",
          "HEAD", "--"], None),
        (["git", "diff-tree", "-r", "--raw", "-z", "--no-renames", base, "HEAD", "--"], None),
        (["git", "diff-index", "--cached", "--name-only", "-z", "--no-renames", tree], None),
        (["git", "ls-files", "-v", "-z"], None),
        (["git", "-c", "core.untrackedCache=false", "status", "--porcelain=v1", "-z", "--untracked-files=all",
          "--ignored=traditional", "--ignore-submodules=none", "--no-renames"], own),
        (["git", "diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-abbrev", EMPTY_TREE, base, "--",
          "*.gitignore"], None),
    ]

    def work() -> None:
        for argv, env in calls:
            c.run(argv, cwd=wt, env=env)

    return lambda: c.measure(work)


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
        first = c.timed(gate, cwd=project)  # builds the loop's own index: every file hashed once
        answer = json.loads(c.run(gate, cwd=project).stdout.decode().strip().splitlines()[-1])
        if not answer["ok"]:
            raise c.BenchError(f"the gate is not ok, nothing to time: {answer}")
        index = tmp / "baseline.index"  # a warm copy of the gate's own index for the baseline's status
        shutil.copyfile(loop_dir / "drift.index", index)

        listing = tmp / "paths.txt"
        listing.write_bytes(c.run(["git", "ls-tree", "-r", "-z", "--name-only", "HEAD"], cwd=wt).stdout
                            .replace(b"\0", b"\n"))

        def hash_all() -> None:
            c.run(["git", "ls-tree", "-r", "-z", "HEAD"], cwd=wt)
            c.run(["git", "hash-object", "--stdin-paths"], cwd=wt, stdin=listing.read_bytes())

        # What `--check-gate` imports before it runs (tests/test_imports.py keeps it so).
        imports = [sys.executable, "-c",
                   "import automaton.cli.main, automaton.cli.verbs_loops, automaton.commands.loop_gate"]
        in_process = gate_in_process(project)
        cases = {
            "the gate's git commands": gate_git(wt, base, index),
            "--check-gate": lambda: c.timed(gate, cwd=project),
            "git diff + status (old baseline)": lambda: c.measure(lambda: (c.run(diff, cwd=wt), c.run(status, cwd=wt))),
            "hash every file": lambda: c.measure(hash_all),
            "imports only": lambda: c.timed(imports, cwd=project),
            "gates in-process": lambda: c.measure(in_process),
        }
        times = c.interleave(cases, reps)
        profile = c.import_profile("automaton.cli.main", gate[1:], cwd=project)
    subject, baseline = times["--check-gate"], times["the gate's git commands"]
    old, hashing = times["git diff + status (old baseline)"], times["hash every file"]
    ratio = c.wall(subject) / c.wall(baseline)
    for name, xs in times.items():
        print(f"  {name:33} {c.spread(xs)}")
    print(f"  first gate of the loop (no index yet, every file hashed): {c.ms(first.wall)}")
    print(f"  breakdown: interpreter start + imports {c.ms(c.wall(times['imports only']))}, the gates"
          f" in-process {c.ms(c.wall(times['gates in-process']))}; git alone {c.ms(c.wall(baseline))}")
    print(f"  profile of --check-gate: {profile}")
    c.figure(2, f"--check-gate with drift ({files} files, {changed} changed) vs the gate's git commands", ratio,
             TARGET, f"check-gate {c.ms(c.wall(subject))} vs its git commands {c.ms(c.wall(baseline))}"
             f" (cpu ratio {c.cpu(subject) / c.cpu(baseline):.2f}x); vs the old baseline `git diff` + `git status`"
             f" {c.ms(c.wall(old))}: {c.wall(subject) / c.wall(old):.2f}x; hashing every file (the previous design,"
             f" each gate) {c.ms(c.wall(hashing))}; first gate {c.ms(first.wall)}; gates in-process"
             f" {c.wall(times['gates in-process']) / c.wall(baseline):.2f}x the git commands; medians of {reps}"
             " interleaved runs")
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
    from automaton.core import loopstate
    from automaton.core.loopstate import Event, LogEvent
    from automaton.store import loops
    from automaton.store.layout import Project

    event = LogEvent(Event.WORKTREE, {"path": str(wt), "branch": f"loop/{LOOP}", "base": base, "created": True})
    loops.update_state(Project(project), LOOP, partial(loopstate.record_worktree, path=str(wt),
                                                       branch=f"loop/{LOOP}", base_commit=base, fallback=None,
                                                       event=event))


if __name__ == "__main__":
    raise SystemExit(main())
