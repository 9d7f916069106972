"""store.layout: where a project is (a loop worktree's from its path, a linked worktree its own)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from automaton.store.layout import find_root
from tests.helpers import git, init_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "main"
    root.mkdir()
    init_repo(root)
    return root.resolve()


def test_a_linked_worktree_is_a_project_of_its_own(repo: Path, tmp_path: Path) -> None:
    """Its own `tasks/`, `.automaton/` and hook settings (intellectronica/ruler #515: automaton
    wrote them into the main checkout, on another branch, and a session there had no hook)."""
    wt = tmp_path / "elsewhere" / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(wt))
    (wt / "src" / "deep").mkdir(parents=True)
    assert find_root(wt / "src" / "deep") == wt.resolve()
    inside = repo / "wt"  # one made inside the main checkout too
    git(repo, "worktree", "add", "-q", "-b", "inside", str(inside))
    assert find_root(inside) == inside.resolve() and find_root(repo / ".git") == repo


def test_a_fifo_for_a_pointer_never_blocks(repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "fifo", str(wt))
    (wt / ".git").unlink()
    os.mkfifo(wt / ".git")
    found: list[Path] = []
    reader = threading.Thread(target=lambda: found.append(find_root(wt)), daemon=True)
    reader.start()
    reader.join(10)
    assert found == [wt.resolve()]


@pytest.mark.parametrize("pointer", ["other", "garbage", "fifo", "gone"])
def test_a_loop_worktree_belongs_to_its_project_whatever_its_pointer_says(project: Path, tmp_path: Path,
                                                                          pointer: str) -> None:
    """The agent may rewrite its worktree's `.git`: the project is read from the path, and the
    hook keeps applying the loop's file_scope (`docs/` is outside `src/**`, `tests/**`)."""
    import json

    from tests.commands.loopkit import add_worktree, loop_with
    from tests.helpers import run_cli

    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("x = 1\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "src")
    wt = add_worktree(loop_with(project))
    other = tmp_path / "other"
    other.mkdir()
    init_repo(other)
    (other / ".automaton").mkdir()
    (wt / ".git").unlink()
    if pointer == "other":
        (wt / ".git").write_text(f"gitdir: {other / '.git'}\n")
    elif pointer == "garbage":
        (wt / ".git").write_text("nothing here\n")
    elif pointer == "fifo":
        os.mkfifo(wt / ".git")
    (wt / "src" / "deep").mkdir(parents=True, exist_ok=True)
    assert find_root(wt / "src" / "deep") == find_root(wt) == project.resolve()

    def write(rel: str) -> int:
        payload = {"cwd": str(wt), "hook_event_name": "PreToolUse", "tool_name": "Write",
                   "tool_input": {"file_path": str(wt / rel), "content": "x\n"}}
        return run_cli("--hook", "claude", stdin=json.dumps(payload), cwd=wt).code

    assert write("src/app.py") == 0
    assert write("docs/x.md") == 2  # outside file_scope: denied, as with the pointer intact


def test_a_cwd_that_links_out_of_the_loop_worktree_is_still_the_loops(project: Path, tmp_path: Path) -> None:
    """A folder of the worktree that is a link to `/`, or to an ancestor of the project where the
    agent made an `.automaton/`, does not take the agent out of its loop: its project is the
    loop's, and it writes only inside its worktree and file_scope."""
    import json

    from tests.commands.loopkit import add_worktree, loop_with
    from tests.helpers import run_cli

    wt = add_worktree(loop_with(project))
    (tmp_path / ".automaton").mkdir()
    assert project.resolve().is_relative_to(tmp_path.resolve())
    (wt / "up").symlink_to("/")
    (wt / "anc").symlink_to(tmp_path)

    def write(cwd: Path, target: Path) -> int:
        payload = {"cwd": str(cwd), "hook_event_name": "PreToolUse", "tool_name": "Write",
                   "tool_input": {"file_path": str(target), "content": "x\n"}}
        return run_cli("--hook", "claude", stdin=json.dumps(payload), cwd=wt).code

    # The project also reached through a link to a folder above it (as /tmp and /var are on macOS).
    alias = tmp_path.parent / (tmp_path.name + "-alias")
    alias.symlink_to(tmp_path)
    aliased = alias / project.resolve().relative_to(tmp_path.resolve()) / wt.relative_to(project)
    for where in (wt / "up", wt / "anc", aliased / "anc"):
        assert find_root(where) == project.resolve()
        assert write(where, wt / "src" / "ok.py") == 0  # in the worktree and in file_scope
        assert write(where, wt / "docs" / "x.md") == 2  # outside file_scope
        assert write(where, project / ".automaton" / "loops" / "demo" / "loop.json") == 2
        assert write(where, project / "src" / "app.py") == 2  # the main checkout


def test_loop_worktree_names_are_compared_as_a_case_insensitive_volume_would(project: Path) -> None:
    """On a case-insensitive volume `.Automaton/LOOPS/demo/Worktree` is the loop's worktree: its
    project is the loop's, not the folder its (here broken) `.git` pointer would make one."""
    (project / ".automaton").mkdir(exist_ok=True)
    spelled = project / ".Automaton" / "LOOPS" / "demo" / "Worktree"
    (spelled / "src").mkdir(parents=True)
    (spelled / ".git").write_text("not a pointer\n")
    assert find_root(spelled / "src") == project.resolve()


# ---- Project.to_create: where state may be created ----------------------------------------------

def test_state_is_created_only_at_a_git_top_or_a_named_project(tmp_path: Path, project: Path) -> None:
    """`cd / && automaton --create-task t2` once wrote `/tasks/t2/`; a loop outside git was accepted."""
    from automaton.core.errors import BadInput
    from automaton.store.layout import Project

    plain = tmp_path / "plain"
    (plain / "sub").mkdir(parents=True)
    with pytest.raises(BadInput, match=r"is not the top of a git repository.*--project DIR"):
        Project.to_create(None, plain / "sub")
    assert Project.to_create(str(plain)).root == plain.resolve()  # named: a project of its own
    (project / "src").mkdir()
    assert Project.to_create(None, project / "src").root == project.resolve()  # the top, from below
    (plain / ".automaton").mkdir()
    assert Project.to_create(None, plain / "sub").root == plain.resolve()  # made a project before
    for never in ("/", os.environ["HOME"]):
        for flag, cwd in ((never, None), (None, Path(never))):
            with pytest.raises(BadInput, match="never a project"):
                Project.to_create(flag, cwd)
