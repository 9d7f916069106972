"""store.layout: the main checkout that owns a linked worktree, read as git reads it."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from automaton.store.layout import _git_common_root, find_root
from tests.helpers import git, init_repo


def git_says(folder: Path) -> Path | None:
    """What `git rev-parse --git-common-dir` makes of `folder` (the answer automaton used to ask git for)."""
    out = subprocess.run(["git", "rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=folder,
                         capture_output=True, text=True, check=False)
    if out.returncode != 0 or not out.stdout.strip():
        return None
    common = Path(out.stdout.strip()).resolve()
    return common.parent if common.name == ".git" else None


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "main"
    root.mkdir()
    init_repo(root)
    return root.resolve()


def test_a_linked_worktree_belongs_to_its_main_checkout(repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "elsewhere" / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(wt))
    assert _git_common_root(wt) == git_says(wt) == repo
    (wt / "src" / "deep").mkdir(parents=True)
    assert find_root(wt / "src" / "deep") == repo


def test_relative_pointers_as_git_reads_them(repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "rel", str(wt))
    gitdir = Path((wt / ".git").read_text().removeprefix("gitdir: ").strip())
    (wt / ".git").write_text(f"gitdir: {os.path.relpath(gitdir, wt)}\r\n")
    (gitdir / "commondir").write_text(f"{os.path.relpath(repo / '.git', gitdir)}\n")
    assert _git_common_root(wt) == git_says(wt) == repo


def test_a_gitfile_naming_a_repository_of_its_own(repo: Path, tmp_path: Path) -> None:
    """No `commondir`: the named folder is the common one (a submodule's is not a `.git` folder)."""
    other = tmp_path / "other"
    other.mkdir()
    (other / ".git").write_text(f"gitdir: {repo / '.git'}\n")
    assert _git_common_root(other) == git_says(other) == repo
    module = repo / ".git" / "modules" / "sub"
    subprocess.run(["git", "init", "-q", "--bare", str(module)], check=True)
    (other / ".git").write_text(f"gitdir: {module}\n")
    assert _git_common_root(other) is None and git_says(other) is None


@pytest.mark.parametrize("pointer", [b"", b"gitdir:\n", b"gitdir: /nowhere/at/all\n", b"not a pointer\n",
                                     b"gitdir: \x00x\n", b"gitdir: .\n"])
def test_a_broken_pointer_owns_nothing(tmp_path: Path, pointer: bytes) -> None:
    (tmp_path / ".git").write_bytes(pointer)
    assert _git_common_root(tmp_path) is None


def test_a_fifo_or_a_folder_for_a_pointer_never_blocks(repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "fifo", str(wt))
    (wt / ".git").unlink()
    os.mkfifo(wt / ".git")
    found: list[Path | None] = []
    reader = threading.Thread(target=lambda: found.append(_git_common_root(wt)), daemon=True)
    reader.start()
    reader.join(10)
    assert found == [None]
    gitdir = next((repo / ".git" / "worktrees").iterdir())
    (gitdir / "commondir").unlink()
    os.mkfifo(gitdir / "commondir")  # the worktree's git folder names no common folder it can read
    (wt / ".git").unlink()
    (wt / ".git").write_text(f"gitdir: {gitdir}\n")
    reader = threading.Thread(target=lambda: found.append(_git_common_root(wt)), daemon=True)
    reader.start()
    reader.join(10)
    assert found == [None, None]


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


def test_pointers_git_would_refuse_own_nothing(repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "odd", str(wt))
    gitdir = Path((wt / ".git").read_text().removeprefix("gitdir: ").strip())
    pointer = (wt / ".git").read_bytes()
    (wt / ".git").write_bytes(pointer.rstrip(b"\n") + b"/" * 5000 + b"\n")  # over 4 KiB: refused
    assert _git_common_root(wt) is None
    (wt / ".git").write_bytes(pointer)
    assert _git_common_root(wt) == repo
    fake = tmp_path / "fake" / ".git"
    fake.mkdir(parents=True)
    (fake / "HEAD").write_text("ref: refs/heads/main\n")  # no objects/, no refs/: not a repository
    (gitdir / "commondir").write_text(f"{fake}\n")
    assert _git_common_root(wt) is None and git_says(wt) is None
    (gitdir / "commondir").write_text("../..\n")
    (gitdir / "HEAD").unlink()  # the worktree's own git folder is not one either
    assert _git_common_root(wt) is None and git_says(wt) is None


# ---- Project.to_create: where state may be created ----------------------------------------------

def test_state_is_created_only_at_a_git_top_or_a_named_project(tmp_path: Path, project: Path) -> None:
    """`cd / && automaton --create-task t2` once wrote `/tasks/t2/`; a loop outside git was accepted."""
    from automaton.core.errors import BadInput
    from automaton.store.layout import Project

    plain = tmp_path / "plain"
    (plain / "sub").mkdir(parents=True)
    with pytest.raises(BadInput, match="is not the top of a git repository.*--project DIR"):
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
