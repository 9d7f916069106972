"""Writes into the agent's own temp folder (`hooks.tempdirs`): the session's `$TMPDIR` and the
system temp dir are allowed, with no way through them into the project, the home folder,
automaton's own temp files or a linked worktree.

The projects of these tests lie in pytest's temp folder, itself in /tmp, and a temp folder
holding the project is none for it; so the system temp dir is played by a folder of the
test's own (`systmp`), and /tmp itself is judged for a project root elsewhere."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Result
from tests.hooks.conftest import assert_allowed, assert_denied

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX temp folders")


def bash(project: Path, command: str) -> dict[str, Any]:
    return {"session_id": "s", "cwd": str(project), "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command}}


def write(project: Path, file_path: str) -> dict[str, Any]:
    return {"session_id": "s", "cwd": str(project), "hook_event_name": "PreToolUse", "tool_name": "Write",
            "tool_input": {"file_path": file_path, "content": "x"}}


@pytest.fixture
def research(make_task: Callable[..., Path], project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Task demo focused at research (src/ out of scope, so a way into it shows)."""
    monkeypatch.delenv("TMPDIR", raising=False)
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("x = 1\n")
    make_task("demo", "research")
    return project


@pytest.fixture
def systmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system temp dir, played by a folder beside the project."""
    from automaton.hooks import tempdirs

    folder = (tmp_path / "systmp").resolve()
    folder.mkdir()
    monkeypatch.setattr(tempdirs, "SYSTEM_TEMP", (str(folder),))
    return folder


def test_a_shell_write_to_the_system_temp_dir_is_allowed(research: Path, systmp: Path,
                                                         hook: Callable[..., Result]) -> None:
    assert_allowed(hook("claude", bash(research, f"echo hi > {systmp}/scratch.txt")))
    assert_allowed(hook("claude", bash(research, f"mkdir -p {systmp}/a/b && cp README.md {systmp}/a/r.md")))
    assert_allowed(hook("claude", write(research, f"{systmp}/notes.txt")))


def test_the_sessions_tmpdir_is_allowed(research: Path, hook: Callable[..., Result], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    own = tmp_path / "session-tmp"
    own.mkdir()
    monkeypatch.setenv("TMPDIR", str(own))
    assert_allowed(hook("claude", bash(research, f"echo hi > {own}/x.txt")))
    assert_allowed(hook("claude", bash(research, f"touch {own}/automaton-mine")))  # the session's own


def test_a_symlink_from_temp_into_the_project_is_judged_where_it_leads(research: Path, systmp: Path,
                                                                       hook: Callable[..., Result]) -> None:
    (systmp / "into-src").symlink_to(research / "src")
    assert_denied(hook("claude", bash(research, f"echo x > {systmp}/into-src/app.py")),
                  "src/app.py is outside the scope")
    assert_denied(hook("claude", write(research, f"{systmp}/into-src/app.py")), "src/app.py is outside the scope")
    (systmp / "dot").symlink_to(research / ".automaton")
    assert_denied(hook("claude", bash(research, f"echo demo > {systmp}/dot/focus")), ".automaton/")


def test_dot_dot_out_of_temp_is_judged_where_it_leads(research: Path, systmp: Path,
                                                      hook: Callable[..., Result]) -> None:
    up = os.path.relpath(research, systmp / "x")
    assert_denied(hook("claude", bash(research, f"echo x > {systmp}/x/{up}/src/app.py")),
                  "src/app.py is outside the scope")
    assert_denied(hook("claude", bash(research, f"echo x > {systmp}/../outside.txt")), "outside the project")


def test_the_home_folder_stays_outside_through_temp(research: Path, systmp: Path,
                                                    hook: Callable[..., Result]) -> None:
    (systmp / "home-link").symlink_to(Path(os.environ["HOME"]).resolve())
    assert_denied(hook("claude", bash(research, f"echo x > {systmp}/home-link/.bashrc")), "outside the project")


def test_automatons_own_temp_entries_are_denied(research: Path, systmp: Path, hook: Callable[..., Result]) -> None:
    (systmp / "automaton-demo-1-abc").mkdir()
    assert_denied(hook("claude", bash(research, f"touch {systmp}/automaton-demo-1-abc/verify-tree/x")),
                  "automaton's own")
    assert_denied(hook("claude", bash(research, f"rm -rf {systmp}/*")), "automaton's own")
    assert_denied(hook("claude", bash(research, f"rm -rf {systmp}/auto?aton-x")), "automaton's own")
    assert_denied(hook("claude", bash(research, f"rm -rf {systmp}")), "outside the project")


def test_a_linked_worktree_in_temp_is_no_temp_write(research: Path, systmp: Path,
                                                    hook: Callable[..., Result]) -> None:
    assert_denied(hook("claude", bash(research, f"git worktree add {systmp}/escape")), "outside the project")
    assert_denied(hook("claude", bash(research, f"git worktree add -b side {systmp}/escape HEAD")),
                  "outside the project")


def test_a_project_in_the_temp_dir_makes_it_no_temp_folder(research: Path, tmp_path: Path,
                                                          hook: Callable[..., Result]) -> None:
    # the project lies in pytest's folder in /tmp: its siblings may be other checkouts
    assert_denied(hook("claude", bash(research, f"echo x > {tmp_path}/sibling.txt")), "outside the project")


def test_tmp_itself_for_a_project_elsewhere() -> None:
    from automaton.hooks import tempdirs

    project = Path("/nonexistent-automaton-test/proj")
    assert tempdirs.judge(Path("/tmp/scratch.txt"), project) == (
        True, "/tmp/scratch.txt is in the agent's temp folder /tmp")
    allowed, why = tempdirs.judge(Path("/tmp/automaton-schedule-0.lock"), project) or (True, "")
    assert not allowed and "automaton's own" in why
    assert tempdirs.judge(Path("/tmp"), project) is None
    assert tempdirs.judge(Path("/var/lib/x"), project) is None


@pytest.mark.parametrize("given", ["HOME", "/", "KEY"])
def test_a_tmpdir_that_is_home_root_or_holds_the_key_is_no_temp_folder(given: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from automaton.hooks import tempdirs

    home = os.path.realpath(os.environ["HOME"])
    value = {"HOME": home, "/": "/", "KEY": os.path.join(home, ".config")}[given]
    monkeypatch.setenv("TMPDIR", value)
    found = tempdirs.roots(home, os.path.join(home, ".config", "automaton"))
    assert os.path.realpath(value) not in [root for root, session in found if session]


def test_a_tmpdir_inside_home_is_the_agents_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from automaton.hooks import tempdirs

    home = os.path.realpath(os.environ["HOME"])
    own = Path(home) / "tmp"
    own.mkdir()
    monkeypatch.setenv("TMPDIR", str(own))
    project = Path("/nonexistent-automaton-test/proj")
    assert tempdirs.judge(own / "x", project) == (True, f"{own}/x is in the agent's temp folder {own}")
    assert tempdirs.judge(Path(home) / ".bashrc", project) is None
    assert tempdirs.judge(Path(home) / ".config" / "automaton" / "key", project) is None


def test_the_system_temp_dir_as_tmpdir_keeps_automatons_entries(research: Path, systmp: Path,
                                                                hook: Callable[..., Result],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A session whose $TMPDIR is the system temp dir gets no claim on a tick's temp dir there."""
    monkeypatch.setenv("TMPDIR", str(systmp))
    (systmp / "automaton-demo-1-abc").mkdir()
    assert_denied(hook("claude", bash(research, f"touch {systmp}/automaton-demo-1-abc/verify-tree/x")),
                  "automaton's own")
    assert_allowed(hook("claude", bash(research, f"echo hi > {systmp}/scratch.txt")))


def test_a_hard_link_into_the_project_is_no_temp_file(research: Path, systmp: Path,
                                                      hook: Callable[..., Result]) -> None:
    """realpath cannot see a hard link: a temp name with a second name is judged by the usual
    rules (the project's file behind it is outside research's scope)."""
    target = research / "src" / "linked.py"
    target.parent.mkdir(exist_ok=True)
    target.write_text("x = 1\n")
    os.link(target, systmp / "linked.py")
    assert_denied(hook("claude", bash(research, f"echo x > {systmp}/linked.py")), "hard links")
    assert_allowed(hook("claude", bash(research, f"echo x > {systmp}/plain.py")))
