"""drift.read_changes: the reading the runner's commit and the drift check after it share.
`Reading.nothing_to_commit` must say exactly what `git add -A` with the runner's excludes file
would do (checked against a real commit_all of a copy of each case), and the reading must see
every change `changed_paths` sees."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from automaton.git import harden
from automaton.git.commit import commit_all, excludes_file
from automaton.git.drift import changed_paths, read_changes
from tests.git.test_drift import repo_with_worktree
from tests.helpers import git


def _write(rel: str, text: str = "x\n") -> Callable[[Path], None]:
    def make(wt: Path) -> None:
        (wt / rel).parent.mkdir(parents=True, exist_ok=True)
        (wt / rel).write_text(text)
    return make


def _intent_to_add(wt: Path) -> None:  # `git add -N` of a file the excludes file ignores
    _write("build/out.txt")(wt)
    git(wt, "add", "-f", "-N", "build/out.txt")


def _staged(wt: Path) -> None:
    _write("src/app.py", "staged\n")(wt)
    git(wt, "add", "src/app.py")


def _chmod(wt: Path) -> None:
    (wt / "src/app.py").chmod(0o755)


def _assume_unchanged(wt: Path) -> None:
    (wt / "src/app.py").write_text("hidden edit\n")
    git(wt, "update-index", "--assume-unchanged", "src/app.py")


def _own_excludes(wt: Path) -> None:  # ignored only by the repository's own core.excludesFile
    (wt.parent / "mine.ignore").write_text("*.mine\n")
    git(wt, "config", "core.excludesFile", str(wt.parent / "mine.ignore"))
    _write("src/notes.mine")(wt)


def _renamed(wt: Path) -> None:
    (wt / "src/app.py").rename(wt / "src/app2.py")


CASES: dict[str, tuple[Callable[[Path], None], bool]] = {
    "clean": (lambda wt: None, True),
    "untracked file": (_write("src/new.py"), False),
    "bytecode only (DEFAULT_EXCLUDES)": (_write("src/__pycache__/app.cpython-311.pyc"), True),
    "ignored by the repository's own excludes file": (_own_excludes, True),
    "modified file": (_write("src/app.py", "changed\n"), False),
    "same content written again": (_write("src/app.py", "# src/app.py\n"), True),
    "mode change": (_chmod, False),
    "rename": (_renamed, False),
    "deleted file": (lambda wt: (wt / "docs/guide.md").unlink(), False),
    "staged change": (_staged, False),
    "intent-to-add entry of an ignored file": (_intent_to_add, False),
    "assume-unchanged entry": (_assume_unchanged, False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_nothing_to_commit_is_what_git_add_finds(tmp_path: Path, case: str) -> None:
    change, expected = CASES[case]
    _, wt, base = repo_with_worktree(tmp_path)
    change(wt)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    excludes = excludes_file(wt, scratch)
    reading = read_changes(wt, base, add_excludes=excludes)
    assert reading.nothing_to_commit() is expected
    # The reading sees what the drift check sees, whatever the excludes file says.
    assert reading.changed() == changed_paths(wt, base)
    if case != "assume-unchanged entry":  # git add skips a flagged file: the reading stays strict there
        assert (commit_all(wt, "probe", excludes=excludes).sha is None) is expected


def test_a_reading_without_the_excludes_file_never_says_nothing_to_commit(tmp_path: Path) -> None:
    _, wt, base = repo_with_worktree(tmp_path)
    assert read_changes(wt, base).nothing_to_commit() is False


def test_the_reading_names_head_and_compares_the_trees_of_that_commit(tmp_path: Path) -> None:
    _, wt, base = repo_with_worktree(tmp_path)
    (wt / "src/app.py").write_text("committed\n")
    git(wt, "commit", "-q", "-am", "agent commit")
    reading = read_changes(wt, base)
    assert reading.head == git(wt, "rev-parse", "HEAD").strip() and reading.base == base
    assert reading.committed == ("src/app.py",)


def test_the_excludes_file_comes_from_the_filter_probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Within one probe window the repository's config is read by one process for the filter
    drivers and core.excludesFile together; a `~` value is expanded by git as before."""
    _, wt, _ = repo_with_worktree(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    (home / "global.ignore").write_text("*.tilde\n")
    monkeypatch.setenv("HOME", str(home))
    git(wt, "config", "core.excludesFile", "~/global.ignore")
    probes: list[str] = []
    real = harden._probe

    def counted(repo: str, env: dict[str, str], timeout_s: float) -> harden.RepoConfig:
        probes.append(repo)
        return real(repo, env, timeout_s)

    monkeypatch.setattr(harden, "_probe", counted)
    with harden.probe_once(pointers_settled=True):
        path = excludes_file(wt, tmp_path)
        harden.filter_overrides(str(wt), harden.git_env(), 10.0)
    assert probes == [str(wt)]
    assert path.read_text().splitlines()[-1] == "*.tilde"
    git(wt, "config", "core.excludesFile", str(home / "global.ignore"))
    with harden.probe_once(pointers_settled=True):
        assert excludes_file(wt, tmp_path).read_text().splitlines()[-1] == "*.tilde"
    git(wt, "config", "--unset", "core.excludesFile")
    assert "*.tilde" not in excludes_file(wt, tmp_path).read_text()
    shutil.rmtree(home)
