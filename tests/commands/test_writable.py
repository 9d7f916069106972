"""`commands.writable.grants`: what the kernel may grant an agent in the project is checked
where each path really lives; a committed link out of the project, into brake state, or
onto automaton's own install is never granted."""

from __future__ import annotations

import json
import os
from pathlib import Path

from automaton.commands.writable import configured_installs, grants
from automaton.install_paths import own_roots
from tests.helpers import bring_task

NO_OWN: tuple[str, ...] = ()


def names(paths: tuple[Path, ...], root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in paths}


def test_links_out_of_the_project_are_left_out(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("# rc\n")
    (project / "src").mkdir()
    (project / "shellrc").symlink_to(home / ".bashrc")
    (project / "notes").symlink_to("/etc")
    (project / "homedir").symlink_to(home)
    (project / "self").symlink_to(".")
    (project / "gitdir").symlink_to(".git")
    got = grants(project, None, None, own=NO_OWN)
    kept = names(got.paths, project)
    assert "src" in kept
    assert not kept & {"shellrc", "notes", "homedir", "self", "gitdir"}
    why = dict((p.name, w) for p, w in got.left_out)
    assert why["shellrc"] == f"links out of the project to {os.path.realpath(home / '.bashrc')}"
    assert why["self"] == "links to the project root itself"  # tasks/, .git and .automaton with it
    assert why["gitdir"] == "links to .git, which no agent writes"
    note = got.note(project)
    assert note is not None and note.startswith("not writable: ") and "shellrc (links out" in note
    assert "\n" not in note


def test_a_link_inside_the_project_is_kept(project: Path) -> None:
    (project / "src").mkdir()
    (project / "lib").symlink_to("src")
    got = grants(project, None, None, own=NO_OWN)
    assert {"src", "lib"} <= names(got.paths, project) and got.left_out == ()
    assert got.note(project) is None


def test_implement_leaves_out_a_link_into_tasks(project: Path, approver: str) -> None:
    task = bring_task(project, "t", "implement", focus=False)
    (project / "specs").symlink_to("tasks")
    got = grants(project, "implement", task, own=NO_OWN)
    kept = names(got.paths, project)
    assert "tasks/t" in kept and "specs" not in kept


def test_doc_review_leaves_out_a_markdown_link_out(project: Path, tmp_path: Path) -> None:
    task = project / "tasks" / "t"
    task.mkdir(parents=True)
    outside = tmp_path / "profile.md"
    outside.write_text("x\n")
    (project / "README.md").write_text("# r\n")
    (project / "CHANGES.md").symlink_to(outside)
    kept = names(grants(project, "doc_review", task, own=NO_OWN).paths, project)
    assert "README.md" in kept and "CHANGES.md" not in kept


def test_a_task_folder_that_links_elsewhere_is_left_out(project: Path, approver: str) -> None:
    task = bring_task(project, "t", "research", focus=False)
    (project / "src").mkdir()
    moved = project / "tasks" / "u"
    os.symlink(project / "src", moved)
    got = grants(project, "research", moved, own=NO_OWN)
    assert got.paths == () and "the task folder links to" in got.left_out[0][1]
    assert names(grants(project, "research", task, own=NO_OWN).paths, project) == {"tasks/t"}


def test_automatons_own_venv_in_the_project_is_left_out(project: Path) -> None:
    venv = project / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "automaton").write_text("#!/bin/sh\n")
    (project / "src").mkdir()
    own = own_roots(prefixes=[str(venv)], files=[str(venv / "bin" / "automaton")])
    got = grants(project, None, None, own=own)
    kept = names(got.paths, project)
    assert "src" in kept and ".venv" not in kept
    assert "automaton's own install" in dict((p.name, w) for p, w in got.left_out)[".venv"]
    assert ".venv" in names(grants(project, None, None, own=NO_OWN).paths, project)  # only because it is automaton's


def test_an_entry_holding_automatons_package_is_left_out(project: Path) -> None:
    package = project / "vendor" / "automaton"
    package.mkdir(parents=True)
    (project / "src").mkdir()
    got = grants(project, None, None, own=own_roots(prefixes=[], files=[str(package)]))
    assert "src" in names(got.paths, project)
    assert [p.name for p, _ in got.left_out] == ["vendor"]


def test_the_installs_the_hooks_and_the_schedule_run_are_left_out(project: Path) -> None:
    hooked = project / "tools" / "env"
    (hooked / "bin").mkdir(parents=True)
    (hooked / "pyvenv.cfg").write_text("home = /usr/bin\n")
    scheduled = project / "py"
    (scheduled / "bin").mkdir(parents=True)
    (scheduled / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (project / "src").mkdir()
    command = f"'{hooked}/bin/automaton' --hook claude --project '{project}' || exit 2"
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps(
        {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]}}))
    loop = project / ".automaton" / "loops" / "nightly"
    loop.mkdir(parents=True)
    (loop / "schedule.json").write_text(json.dumps({"python": f"{scheduled}/bin/python", "runner": "/elsewhere/r.py"}))
    assert configured_installs(project) == [f"{hooked}/bin/automaton", f"{scheduled}/bin/python", "/elsewhere/r.py"]
    got = grants(project, None, None)  # the running automaton's install, and the configured ones
    assert names(got.paths, project) == {"src", "README.md"}
    assert sorted(p.name for p, _ in got.left_out) == ["py", "tools"]


def test_unreadable_settings_name_no_install(project: Path) -> None:
    (project / ".codex").mkdir()
    (project / ".codex" / "hooks.json").write_text("{not json")
    (project / ".git" / "hooks").mkdir(exist_ok=True)
    (project / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n'unclosed --hook git\nrelative --hook git\n")
    assert configured_installs(project) == []
