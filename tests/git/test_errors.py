"""git/errors.py: `require_commit` asks git once per full commit id and process, every time
for anything else."""

from __future__ import annotations

from pathlib import Path

import pytest

from automaton.git import errors
from automaton.git.errors import DriftError, require_commit
from tests.helpers import git, init_repo


def _calls(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    seen: list[list[str]] = []
    real = errors.git_text

    def counting(repo: Path, args: list[str], **kw: object) -> str:
        seen.append(list(args))
        return real(repo, args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(errors, "git_text", counting)
    return seen


def test_a_full_commit_id_is_asked_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init_repo(tmp_path / "repo")
    head = git(repo, "rev-parse", "HEAD").strip()
    seen = _calls(monkeypatch)
    assert [require_commit(repo, head, "base") for _ in range(3)] == [head] * 3
    assert len(seen) == 1
    assert require_commit(repo, "HEAD", "base") == head and require_commit(repo, head[:12], "base") == head
    assert len(seen) == 3  # names and short ids are asked every time


def test_an_id_that_is_not_a_commit_is_never_remembered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init_repo(tmp_path / "repo")
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    seen = _calls(monkeypatch)
    for _ in range(2):
        with pytest.raises(DriftError, match="is not a commit"):
            require_commit(repo, tree, "base")
        with pytest.raises(DriftError, match="is not a commit"):
            require_commit(repo, "0" * 40, "base")
    assert len(seen) == 4
    (repo / "more.txt").write_text("only in repo\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "more")
    head = git(repo, "rev-parse", "HEAD").strip()
    require_commit(repo, head, "base")  # remembered for `repo` only
    with pytest.raises(DriftError):  # another repository lacks it: asked there
        require_commit(init_repo(tmp_path / "other"), head, "base")
