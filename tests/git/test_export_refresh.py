"""refresh_export: a kept export folder brought to exactly what export_tree writes, whatever
an earlier verifier left in it (nothing in the folder is trusted)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from automaton.git.export import ExportError, export_tree, refresh_export
from tests.git.test_export import PROTECTED, agent_commit, commit_all, layout


def snapshot(root: Path) -> dict[str, tuple[str, object]]:
    """Every entry under `root`, without following symlinks: kind and content/target/mode."""
    found: dict[str, tuple[str, object]] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            full = Path(folder) / name
            rel = full.relative_to(root).as_posix()
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("dir", stat.S_IMODE(st.st_mode))
            elif stat.S_ISREG(st.st_mode):
                found[rel] = ("file", (full.read_bytes(), stat.S_IMODE(st.st_mode), st.st_nlink))
            else:
                found[rel] = ("other", stat.S_IFMT(st.st_mode))
    return found


def fresh(repo: Path, commit: str, base: str, dest: Path) -> dict[str, tuple[str, object]]:
    export_tree(repo, commit, dest, protected=PROTECTED, base_commit=base)
    return snapshot(dest)


def test_a_first_refresh_is_a_full_export(tmp_path: Path) -> None:
    repo, base = layout(tmp_path)
    head = agent_commit(repo)
    kept = tmp_path / "kept" / "export"
    res = refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base)
    assert snapshot(kept) == fresh(repo, head, base, tmp_path / "fresh")
    assert res.kept == 0 and res.commit == head
    assert res.restored == ("conftest.py", "pytest.ini", "tests/test_app.py")
    again = refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base)
    assert again.kept == again.files - 1 and again.cleared == 0  # every file reused (the symlink is made again)
    assert snapshot(kept) == snapshot(tmp_path / "fresh")


def test_whatever_a_verifier_left_is_undone(tmp_path: Path) -> None:
    repo, base = layout(tmp_path)
    head = agent_commit(repo)
    kept = tmp_path / "kept"
    refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base)
    want = fresh(repo, head, base, tmp_path / "fresh")
    # A rewrite that keeps size and mtime, a planted conftest, caches, a `.git`, a fifo, a
    # symlink in place of a file, a changed mode, a hard link, a folder made unreadable.
    app = kept / "src" / "app.py"
    before = os.stat(app)
    app.write_text("def f(): return 9\n")
    os.utime(app, ns=(before.st_atime_ns, before.st_mtime_ns))
    (kept / "conftest.py").write_text("import pytest  # skips everything\n")
    (kept / "src" / "conftest.py").write_text("# planted\n")
    (kept / ".pytest_cache" / "v").mkdir(parents=True)
    (kept / ".git").mkdir()
    (kept / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (kept / "src" / ".git").write_text("gitdir: /elsewhere\n")
    os.mkfifo(kept / "fifo")
    (kept / "pytest.ini").unlink()
    (kept / "pytest.ini").symlink_to("/etc/passwd")
    os.chmod(kept / "run.sh", 0o644)
    os.link(kept / "tests" / "test_app.py", tmp_path / "outside-link")
    (kept / "tests" / "deep").mkdir()
    (kept / "tests" / "deep" / "x.py").write_text("x\n")
    os.chmod(kept / "tests" / "deep", 0)
    os.chmod(kept / "tests", 0o500)
    res = refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base)
    assert snapshot(kept) == want
    assert res.cleared >= 6 and res.kept < res.files


def test_a_new_commit_changes_adds_and_removes(tmp_path: Path) -> None:
    repo, base = layout(tmp_path)
    kept = tmp_path / "kept"
    refresh_export(repo, base, kept, protected=PROTECTED, base_commit=base)
    head = agent_commit(repo)
    (repo / "src" / "app.py").unlink()
    (repo / "src" / "app.py").mkdir()  # a file becomes a folder ...
    (repo / "src" / "app.py" / "__init__.py").write_text("x = 1\n")
    (repo / "run.sh").unlink()  # ... a folder-less file goes away, a new folder comes
    (repo / "pkg" / "sub").mkdir(parents=True)
    (repo / "pkg" / "sub" / "m.py").write_text("m = 1\n")
    head = commit_all(repo, "more")
    refresh_export(repo, head, kept, protected=PROTECTED, base_commit=base)
    assert snapshot(kept) == fresh(repo, head, base, tmp_path / "fresh")
    refresh_export(repo, base, kept, protected=PROTECTED, base_commit=base)  # and back
    assert snapshot(kept) == fresh(repo, base, base, tmp_path / "fresh-base")


def test_a_symlink_or_file_in_place_of_the_folder_is_replaced_not_followed(tmp_path: Path) -> None:
    repo, base = layout(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine\n")
    kept = tmp_path / "kept"
    kept.symlink_to(victim, target_is_directory=True)
    refresh_export(repo, base, kept, protected=PROTECTED, base_commit=base)
    assert not kept.is_symlink() and (victim / "keep.txt").read_text() == "mine\n"
    assert sorted(os.listdir(victim)) == ["keep.txt"]
    assert snapshot(kept) == fresh(repo, base, base, tmp_path / "fresh")


def test_refresh_keeps_the_export_rules(tmp_path: Path) -> None:
    repo, base = layout(tmp_path)
    (repo / "abs").symlink_to("/etc/passwd")
    (repo / "b").symlink_to(".")
    (repo / "a").symlink_to("b/..")
    head = commit_all(repo, "links")
    kept = tmp_path / "kept"
    for _ in range(2):
        res = refresh_export(repo, head, kept, protected=[], base_commit=base)
        assert set(res.skipped) == {"abs", "a"}
    with pytest.raises(ExportError, match="over the export bounds"):
        refresh_export(repo, head, kept, protected=[], base_commit=base, max_files=2)
    with pytest.raises(ExportError, match="over the export bounds"):
        refresh_export(repo, head, kept, protected=[], base_commit=base, max_bytes=10)
    with pytest.raises(ExportError, match="not a commit"):
        refresh_export(repo, "0" * 40, kept, protected=[], base_commit=base)


PATTERNS = [
    [], ["conftest.py", "**/conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "noxfile.py"],
    ["/tests/**", "!tests/keep.py", "src/*.py", "docs/", "*.ini", "a/**/b", "[ab]?.txt", "\\#hash", "sp\\ ace "],
    ["**", "!**/*.md"], ["!*"], ["x/", "/x"],
]
PATHS = ["conftest.py", "src/conftest.py", "src/app.py", "src/deep/app.py", "tests/keep.py", "tests/t.py",
         "tests/a/b.py", "docs/x.md", "docs", "pytest.ini", "a/b", "a/x/y/b", "a/x/b/c", "ab.txt", "b1.txt",
         "#hash", "sp ace", "README.md", "x", "x/y", "y/x", "y/x/z", "setup.cfg.bak", "pyproject.toml"]


@pytest.mark.parametrize("patterns", PATTERNS)
def test_the_protected_matcher_answers_as_pathspec(patterns: list[str]) -> None:
    import pathspec

    from automaton.git.export import protected_matcher

    spec, fast = pathspec.GitIgnoreSpec.from_lines(patterns), protected_matcher(patterns)
    assert [fast(p) for p in PATHS] == [spec.match_file(p) for p in PATHS]


def test_remove_tree_removes_links_never_what_they_point_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A verifier that outlived its run may leave links to $HOME and folders it locked (mode 000)
    in the export, and may swap a folder for a link while the removal runs: only the tree goes."""
    from automaton.git import export

    victim = tmp_path / "home"
    (victim / "b").mkdir(parents=True)
    (victim / "b" / "keep.txt").write_text("mine\n")
    tree = tmp_path / "export"
    (tree / "locked" / "deep").mkdir(parents=True)
    (tree / "locked" / "deep" / "f").write_text("x")
    (tree / "link").symlink_to(victim, target_is_directory=True)
    (tree / "swapped").mkdir()
    victim.chmod(0o755)
    (tree / "locked" / "deep").chmod(0)
    (tree / "locked").chmod(0)
    real_scandir = os.scandir

    def swap_then_scan(fd: int) -> object:  # the race: a folder becomes a link before it is opened
        swapped = tree / "swapped"
        if swapped.is_dir() and not swapped.is_symlink():
            swapped.rmdir()
            swapped.symlink_to(victim, target_is_directory=True)
        return real_scandir(fd)

    monkeypatch.setattr(export.os, "scandir", swap_then_scan)
    export.remove_tree(tree)
    assert not tree.exists() and (victim / "b" / "keep.txt").read_text() == "mine\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o755  # no chmod reached it through a link
    export.remove_tree(tree)  # missing is fine
