"""One tick of a loop: its commit's diff on branch `loop/<name>` and the files of `runs/<n>/`.

The commit is the one the tick's `TICK` line names (the runner made it with hardened git; git
here is hardened too: `automaton.git.run_git`). It is shown only when it is on the loop's branch.
Every text is capped (DIFF_CAP, LOG_CAP, LOGS_CAP bytes) and escaped by the template.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

from automaton.core.names import LoopName
from automaton.dashboard.views import NotFound, loop_name
from automaton.git import run_git
from automaton.git.worktree import branch_name
from automaton.store import loops
from automaton.store.layout import Project

DIFF_CAP = 512 * 1024  # bytes of `git show` shown
LOG_CAP = 64 * 1024  # bytes of each runs/<n>/ file shown (its end)
LOGS_CAP = 1024 * 1024  # bytes of all runs/<n>/ files shown together
_COMMIT = re.compile(r"^[0-9a-f]{7,40}\Z")


def tick_page(project: Project, name: str, n: int, repo: Path | None = None) -> dict[str, Any]:
    """{loop, n, line (the TICK / TICK_DEFERRED / TICK_START fields), at, commit, diff (text),
    diff_note (why there is no diff, or that it was cut), logs: [{name, size (bytes), text,
    cut (bool)}], run_dir}. NotFound for an unknown loop or a tick neither its log nor runs/
    knows. `repo`: the git repository the diff is read from (default the project's; a state
    remote's loop: the checkout it is read through, whose `loop/<name>` may lack the commit)."""
    loop = loop_name(project, name)
    rec = loops.inspect(project, loop)
    found = None
    for line in rec.chain.lines:
        if line.event in ("TICK_START", "TICK", "TICK_DEFERRED") and line.fields.get("n") == str(n):
            found = line  # the closing line, when there is one, comes last
    run_dir = _run_dir(rec.dir / "runs", n)
    if found is None and run_dir is None:
        raise NotFound(f"loop {loop} has no tick {n}")
    commit = found.fields.get("commit") if found is not None else None
    diff, note = _diff(project.root if repo is None else repo, loop, commit)
    return {"loop": loop, "n": n, "event": found.event if found else "-", "at": found.ts if found else "-",
            "fields": dict(found.fields) if found else {}, "commit": commit, "diff": diff, "diff_note": note,
            "logs": _logs(run_dir) if run_dir is not None else [],
            "run_dir": str(run_dir) if run_dir is not None else None}


def _run_dir(runs: Path, n: int) -> Path | None:
    """runs/<n>/, else the newest runs/<n>.deferred-<UTC>/ (a tick put off by a usage limit)."""
    plain = runs / str(n)
    if plain.is_dir() and not plain.is_symlink():
        return plain
    try:
        kept = sorted(p for p in runs.iterdir() if p.name.startswith(f"{n}.deferred-") and p.is_dir()
                      and not p.is_symlink())
    except OSError:
        return None
    return kept[-1] if kept else None


def _diff(repo: Path, loop: LoopName, commit: str | None) -> tuple[str, str]:
    """(diff text, note). The note says why there is none, or that the text was cut."""
    if not commit:
        return "", "this tick recorded no commit (it changed nothing, or it did not get that far)"
    if not _COMMIT.match(commit):
        return "", f"the tick's commit field {commit[:40]!r} is not a commit id"
    branch = f"refs/heads/{branch_name(loop)}"
    on = run_git(repo, ["merge-base", "--is-ancestor", commit, branch])
    if on.code != 0:
        return "", f"commit {commit} is not on {branch_name(loop)} (the branch was deleted or rewritten)"
    shown = run_git(repo, ["show", "--no-color", "--stat", "--patch", "--format=fuller", commit, "--"])
    if shown.code != 0:
        return "", f"git show {commit} failed: {(shown.err.strip().splitlines() or ['exit ' + str(shown.code)])[0]}"
    data = shown.out.encode("utf-8", "surrogateescape")
    if len(data) > DIFF_CAP:
        return (data[:DIFF_CAP].decode("utf-8", "replace"),
                f"cut at {DIFF_CAP // 1024} KiB of {len(data) // 1024} KiB: git show {commit} for all of it")
    return data.decode("utf-8", "replace"), ""


def _logs(folder: Path) -> list[dict[str, Any]]:
    """The regular files of `folder` (never a link), each its last LOG_CAP bytes, LOGS_CAP in all."""
    out: list[dict[str, Any]] = []
    budget = LOGS_CAP
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return out
    for entry in names:
        path = folder / entry
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                continue
            take = min(LOG_CAP, budget, info.st_size)
            os.lseek(fd, max(0, info.st_size - take), os.SEEK_SET)
            data = os.read(fd, take) if take else b""
        finally:
            os.close(fd)
        budget -= len(data)
        out.append({"name": entry, "size": info.st_size, "text": data.decode("utf-8", "replace"),
                    "cut": len(data) < info.st_size})
        if budget <= 0:
            break
    return out
