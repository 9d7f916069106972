"""store.taskscan finds what store.tasks finds (iter_tasks, load_dir, stray_folders), task by task."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from automaton.core.errors import BadInput
from automaton.core.names import TaskName, TaskRef
from automaton.store import atomic, chainlog, tasks, taskscan
from automaton.store.layout import Project


def seed(folder: Path, *phases: str, task: str | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for p in phases:
        fields: dict[str, object] = {} if task is None else {"task": task}
        chainlog.commit(folder / ".state", folder / ".state.log", f"{p}\n".encode(), p, "SEEDED", fields)


def expected(project: Project) -> tuple[list[tuple[TaskRef, Path, object]], list[Path]]:
    """What store.tasks reads, one task at a time, as the audit read it before store.taskscan."""
    found: list[tuple[TaskRef, Path, object]] = []
    for ref, folder in list(tasks.iter_tasks(project)):
        try:
            found.append((ref, folder, tasks.load_dir(ref, folder)))
        except BadInput as exc:
            found.append((ref, folder, (type(exc), exc.message)))
    return found, tasks.stray_folders(project)


def scanned(project: Project) -> tuple[list[tuple[TaskRef, Path, object]], list[Path]]:
    strays: list[Path] = []
    found: list[tuple[TaskRef, Path, object]] = [
        (ref, folder, (type(rec), rec.message) if isinstance(rec, BadInput) else rec)
        for ref, folder, rec in taskscan.scan(project, strays)
    ]
    return found, strays


def test_every_kind_of_task_folder_reads_as_store_tasks_reads_it(tmp_path: Path) -> None:
    root = tmp_path / "tasks"
    seed(root / "alpha", "new", "research")
    (root / "alpha" / "SPEC.md").write_text("x")
    (root / "alpha" / "DESIGN.md").mkdir()  # a folder named as an artifact is not present
    seed(root / "alpha" / "sub-one", "new")
    (root / "alpha" / "notes").mkdir()  # not a sub-task: no .state, no log
    (root / "alpha" / "sub-log-only").mkdir()
    chainlog.append_event(root / "alpha" / "sub-log-only" / ".state.log", "CREATED", {}, "new")
    seed(root / "complete" / "done", "complete")
    seed(root / "complete" / "done" / "child", "complete")
    (root / "complete" / "Bad_Done").mkdir()
    (root / "complete" / ".hidden").mkdir()
    (root / "legacy").mkdir()
    (root / "Bad_Name").mkdir()
    (root / ".hidden").mkdir()
    (root / "file.md").write_text("x")
    seed(root / "deleted-state", "new")
    (root / "deleted-state" / ".state").unlink()
    seed(root / "corrupt", "new")
    (root / "corrupt" / ".state").write_bytes(b"bogus\n")
    seed(root / "edited", "new", "research")
    (root / "edited" / ".state").write_bytes(b"design\n")
    seed(root / "forged", "new")
    with (root / "forged" / ".state.log").open("a") as log:
        log.write("garbage\n")
    seed(root / "no-log", "new")
    (root / "no-log" / ".state.log").unlink()
    seed(root / "state-dir", "new")
    (root / "state-dir" / ".state.tmp").mkdir()
    seed(root / "rolled", "new")
    atomic.write_tmp(root / "rolled" / ".state", b"research\n")
    chainlog.append_event(root / "rolled" / ".state.log", "TRANSITION", {}, "research")
    seed(root / "unlogged-temp", "new")
    atomic.write_tmp(root / "unlogged-temp" / ".state", b"complete\n")
    seed(root / "copied", "new", task="someone-else")
    if os.name != "nt":
        (root / "linked").symlink_to(root / "alpha", target_is_directory=True)
    project = Project(tmp_path)
    got, want = scanned(project), expected(project)
    assert got == want
    refs = [str(ref) for ref, _, _ in got[0]]
    assert refs[:4] == ["alpha", "alpha/sub-log-only", "alpha/sub-one", "done"]
    assert [p.name for p in got[1]] == ["Bad_Name", "Bad_Done"]


def test_no_tasks_folder(tmp_path: Path) -> None:
    strays: list[Path] = []
    assert list(taskscan.scan(Project(tmp_path), strays)) == [] and strays == []
    (tmp_path / "tasks").write_text("not a folder")
    assert list(taskscan.scan(Project(tmp_path), strays)) == [] and strays == []


def race_once(monkeypatch: pytest.MonkeyPatch, write: Callable[[], object]) -> list[bool]:
    """Make the reader's first log read run `write` first (a writer between its reads); returns
    the list that shows whether it fired."""
    real_read_chain = chainlog.read_chain
    fired: list[bool] = []

    def racing(log: str | Path) -> object:
        if not fired:
            fired.append(True)
            write()
        return real_read_chain(log)

    monkeypatch.setattr(chainlog, "read_chain", racing)
    return fired


def test_a_commit_between_reading_state_and_log_is_not_tamper(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The temp file is read where `.state` and the log disagree: a writer that wrote it and
    logged the new phase after `.state` was read, but has not renamed it yet, is no tamper."""
    folder = tmp_path / "tasks" / "t"
    seed(folder, "new")
    fired = race_once(monkeypatch, lambda: (atomic.write_tmp(folder / ".state", b"research\n"),
                                            chainlog.append_event(folder / ".state.log", "TRANSITION", {},
                                                                  "research")))
    [(ref, _, rec)] = list(taskscan.scan(Project(tmp_path), []))
    assert fired and ref == TaskRef(TaskName("t"))
    assert isinstance(rec, tasks.TaskRecord) and rec.phase == "research" and rec.tamper == ""


def test_a_whole_commit_between_the_reads_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "tasks" / "t"
    seed(folder, "new")
    fired = race_once(monkeypatch, lambda: chainlog.commit(folder / ".state", folder / ".state.log", b"research\n",
                                                           "research", "TRANSITION", {}))
    [(_, _, rec)] = list(taskscan.scan(Project(tmp_path), []))
    assert fired and isinstance(rec, tasks.TaskRecord) and rec.phase == "research" and rec.tamper == ""
