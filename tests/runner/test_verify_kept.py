"""The verifier's kept export (runner/verify.py): reused only after a run that ended with every
process it started dead (the idle mark), a new folder otherwise, never shared with another user."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from automaton.runner import verify
from automaton.store.layout import kept_exports_dir
from tests.helpers import git, init_repo

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kept only where a subreaper exists")


def cfg(command: list[str] | None = None) -> Any:
    return SimpleNamespace(
        name="demo", blast_radius=SimpleNamespace(protected=["conftest.py"]),
        roles=SimpleNamespace(verify=SimpleNamespace(command=command or ["true"], prompt=None, score="summary")),
        harness=SimpleNamespace(timeout_s=60, max_output_mb=1, name="command"))


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    path = init_repo(tmp_path / "repo")
    (path / "conftest.py").write_text("# base\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    return path, git(path, "rev-parse", "HEAD").strip()


def test_the_export_is_kept_only_behind_the_idle_mark(repo: tuple[Path, str], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path, base = repo
    removed: list[Path] = []
    real_remove = verify._remove
    monkeypatch.setattr(verify, "_remove", lambda folder: (removed.append(folder), real_remove(folder)))
    where = verify.place(cfg(), path, base, base, tmp_path / "tick-tmp", path)
    assert where.exported and where.idle is not None and not where.idle.exists()
    top = where.cwd.parent
    assert top == kept_exports_dir() and oct(top.stat().st_mode & 0o777) == "0o700"
    assert Path.home() in top.parents  # the user's cache folder (a fake HOME here), not the temp dir
    assert (where.cwd / "conftest.py").read_text() == "# base\n"
    assert removed == [where.cwd]  # no mark yet: whatever was there goes, inode and all
    where.idle.touch()  # what run_verify does once the verifier's run ended
    again = verify.place(cfg(), path, base, base, tmp_path / "tick-tmp", path)
    assert again.cwd == where.cwd and removed == [where.cwd] and not where.idle.exists()
    (again.cwd / "left-by-a-killed-run.txt").write_text("x")
    third = verify.place(cfg(), path, base, base, tmp_path / "tick-tmp", path)  # no mark: a new folder
    assert removed == [where.cwd, where.cwd] and not (third.cwd / "left-by-a-killed-run.txt").exists()


def test_run_verify_marks_the_export_idle_after_a_normal_run_only(repo: tuple[Path, str], tmp_path: Path) -> None:
    path, base = repo
    folder, loop_dir = tmp_path / "run", tmp_path / "loop"
    folder.mkdir()
    loop_dir.mkdir()
    (tmp_path / "t").mkdir()  # the tick's temp dir, which the tick has made (confine.private_tmp)
    where = verify.place(cfg(["echo", "1 passed"]), path, base, base, tmp_path / "t", path)
    verdict = verify.run_verify(cfg(["echo", "1 passed"]), None, None, folder, where,  # type: ignore[arg-type]
                                tmp_path / "t", loop_dir, lambda *a: None, lambda: "", {})
    assert verdict.score == 1.0 and where.idle is not None and where.idle.exists() and where.cwd.is_dir()
    where = verify.place(cfg(), path, base, base, tmp_path / "t", path)

    def boom(*args: object) -> None:
        raise RuntimeError("the policy could not be built")

    with pytest.raises(RuntimeError):
        verify.run_verify(cfg(), None, None, folder, where, tmp_path / "t", loop_dir, boom,  # type: ignore[arg-type]
                          lambda: "", {})
    assert where.idle is not None and not where.idle.exists()


@pytest.mark.parametrize("left", [[4242], None])
def test_no_idle_mark_while_a_process_of_the_run_may_be_alive(repo: tuple[Path, str], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              left: list[int] | None) -> None:
    # A process stuck past the kill's bound, or a /proc that cannot be read: the next tick must
    # export into a new folder, so no mark.
    path, base = repo
    folder, loop_dir = tmp_path / "run", tmp_path / "loop"
    folder.mkdir()
    loop_dir.mkdir()
    (tmp_path / "t").mkdir()  # the tick's temp dir, which the tick has made (confine.private_tmp)
    monkeypatch.setattr(verify.reaper, "survivors", lambda before: left)
    where = verify.place(cfg(["echo", "1 passed"]), path, base, base, tmp_path / "t", path)
    verdict = verify.run_verify(cfg(["echo", "1 passed"]), None, None, folder, where,  # type: ignore[arg-type]
                                tmp_path / "t", loop_dir, lambda *a: None, lambda: "", {})
    assert verdict.score == 1.0 and where.idle is not None and not where.idle.exists()


def test_an_exports_folder_the_agent_chmod_ed_is_restored(repo: tuple[Path, str]) -> None:
    # Landlock does not cover chmod: `chmod 000` on the folder made every later verify fail.
    path, _ = repo
    top = kept_exports_dir()
    top.mkdir(mode=0o700, parents=True)
    top.chmod(0o000)
    assert verify.kept_export(path, "demo") is not None
    assert oct(top.stat().st_mode & 0o777) == "0o700"


def test_a_private_folder_someone_else_could_enter_is_not_used(repo: tuple[Path, str], tmp_path: Path) -> None:
    path, base = repo
    top = kept_exports_dir()
    top.mkdir(mode=0o755, parents=True)
    top.chmod(0o755)
    assert verify.kept_export(path, "demo") is None
    where = verify.place(cfg(), path, base, base, tmp_path / "tick-tmp", path)
    assert where.cwd == tmp_path / "tick-tmp" / "verify-tree" and where.idle is None
    top.rmdir()
    top.symlink_to(tmp_path, target_is_directory=True)
    assert verify.kept_export(path, "demo") is None


def test_no_export_is_kept_in_a_cache_folder_inside_the_project(repo: tuple[Path, str], tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = repo
    monkeypatch.setenv("XDG_CACHE_HOME", str(path / ".cache"))
    assert verify.kept_export(path, "demo") is None
    assert not (path / ".cache").exists()


def test_the_kept_export_keeps_a_sealed_stat_record_that_goes_with_the_folder(repo: tuple[Path, str],
                                                                             tmp_path: Path) -> None:
    """A refresh that read files records their stat data beside the folder (git.export.StatRecord);
    a tick that finds no idle mark removes the record with the folder."""
    path, base = repo
    where = verify.place(cfg(), path, base, base, tmp_path / "tick-tmp", path)  # writes every file
    record = where.cwd.with_name(where.cwd.name + ".stat")
    assert where.idle is not None and not record.exists()
    where.idle.touch()
    verify.place(cfg(), path, base, base, tmp_path / "tick-tmp", path)  # reads them: recorded
    assert record.read_bytes().startswith(b"automaton-export-stats-1 ")
    verify.place(cfg(), path, base, base, tmp_path / "tick-tmp", path)  # no mark: folder and record go
    assert not record.exists()
