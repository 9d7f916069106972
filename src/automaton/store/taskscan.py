"""Every task of a project read in one pass, each folder listed once: the tasks of `--audit`.

`store.tasks` reads one task at a time: `iter_tasks` lists every task folder to find its
sub-tasks, `load_dir` lists it again, and both name each file by a `Path`. Over the thousands
of folders an audit reads, that second listing and building those paths cost more than the
reading itself (bench/bench_audit.py, BENCHMARKS.md figure 3). `scan` lists each folder once,
hands that listing to `store.tasks.load_listed` (what `load_dir` runs after listing the
folder itself), and names files by plain strings. It finds what `iter_tasks`, `load_dir` and
`stray_folders` find, in the same order and with the same messages (tests/store/test_taskscan.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from automaton.core.errors import BadInput
from automaton.core.names import NAME_RE, TaskName, TaskRef
from automaton.store import tasks as t
from automaton.store.layout import COMPLETE_DIR, Project

_SEP = os.sep  # str(Path(a) / b) is a + os.sep + b for a folder `a` and a plain name `b`


def scan(project: Project, strays: list[Path]) -> Iterator[tuple[TaskRef, Path, t.TaskRecord | BadInput]]:
    """Every task under `tasks/` and `tasks/complete/` and their sub-tasks, each as (ref, folder,
    its record or the BadInput `load_dir` raises for it), in `iter_tasks` order; when the
    iterator is done, `strays` has the folders `stray_folders` lists, in its order. One task at
    a time: a caller that keeps only its findings keeps no record. Writes nothing; safe without
    the locks (each task is read as `load_dir` reads it). Raises OSError where `iter_tasks`
    does: a folder of tasks, or a task folder, that cannot be listed."""
    root = project.tasks_dir
    if not root.is_dir():
        return
    root_str = str(root)
    late: list[Path] = []  # strays in tasks/complete/: `stray_folders` lists them after those in tasks/
    for name, entry in sorted(t._listing(root_str).items()):
        if name.startswith(".") or not t._is_dir(entry):
            continue
        if name == COMPLETE_DIR:
            done, done_str = root / name, f"{root_str}{_SEP}{name}"
            for done_name, done_entry in sorted(t._listing(done_str).items()):
                if not t._is_dir(done_entry):
                    continue
                if NAME_RE.match(done_name):
                    yield from _task(done, done_str, done_name)
                elif not done_name.startswith("."):
                    late.append(done / done_name)
        elif NAME_RE.match(name):
            yield from _task(root, root_str, name)
        else:
            strays.append(root / name)
    strays += late


def _task(parent: Path, parent_str: str, name: str) -> Iterator[tuple[TaskRef, Path, t.TaskRecord | BadInput]]:
    """The task `name` in `parent`, then its sub-tasks (`store.tasks._subs`)."""
    folder, folder_str = parent / name, f"{parent_str}{_SEP}{name}"
    ref = TaskRef(TaskName(name))
    entries = t._listing(folder_str)  # OSError goes up: `iter_tasks` lists every task folder too
    yield ref, folder, _load(ref, folder, folder_str, entries)
    subs = [sub for sub, entry in entries.items() if NAME_RE.match(sub) and t._is_dir(entry)]
    for sub_name in sorted(subs) if subs else ():
        sub = folder / sub_name
        if (sub / t.STATE).exists() or (sub / t.LOG).exists():
            sub_str = f"{folder_str}{_SEP}{sub_name}"
            try:
                sub_entries: dict[str, os.DirEntry[str]] | None = t._listing(sub_str)
            except OSError:  # not listable: `load_dir` then looks at each name instead
                sub_entries = None
            sub_ref = TaskRef(TaskName(sub_name), ref.name)
            yield sub_ref, sub, _load(sub_ref, sub, sub_str, sub_entries)


def _load(ref: TaskRef, folder: Path, folder_str: str,
          entries: dict[str, os.DirEntry[str]] | None) -> t.TaskRecord | BadInput:
    try:
        return t.load_listed(ref, folder, folder_str, entries)
    except BadInput as exc:
        return exc
