"""export_tree, protected_changes and default_protected with real git."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from automaton.git.drift import DriftError
from automaton.git.export import ExportError, default_protected, export_tree, protected_changes
from automaton.git.protect import protected_spec
from tests.helpers import GIT_ENV, git, init_repo

PROTECTED = default_protected(["pytest", "tests/"])


def layout(tmp_path: Path) -> tuple[Path, str]:
    """(repo, base) with src/, tests/, conftest.py, pytest.ini, a script and a symlink committed."""
    repo = init_repo(tmp_path / "repo")
    files = {"src/app.py": "def f(): return 1\n", "tests/test_app.py": "def test(): assert True\n",
             "conftest.py": "# base conftest\n", "pytest.ini": "[pytest]\n", "run.sh": "#!/bin/sh\n"}
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    (repo / "run.sh").chmod(0o755)
    (repo / "src" / "alias.py").symlink_to("app.py")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "layout")
    return repo, git(repo, "rev-parse", "HEAD").strip()


def agent_commit(repo: Path) -> str:
    """A commit that games the verifier: weaker tests, a planted conftest, a new test, no pytest.ini."""
    (repo / "src" / "app.py").write_text("def f(): return 2\n")
    (repo / "tests" / "test_app.py").write_text("def test(): pass\n")
    (repo / "tests" / "test_new.py").write_text("def test_new(): pass\n")
    (repo / "conftest.py").write_text("import pytest  # skips everything\n")
    (repo / "src" / "conftest.py").write_text("# planted\n")
    (repo / "pytest.ini").unlink()
    return commit_all(repo, "agent")


def commit_all(repo: Path, message: str) -> str:
    """Commit everything in `repo`'s work tree (plain git); the new commit's id."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def test_export_holds_the_commit_with_protected_paths_from_the_base(tmp_path: Path) -> None:
    repo, base = layout(tmp_path)
    head = agent_commit(repo)
    (repo / "src" / "app.py").write_text("uncommitted\n")
    (repo / "untracked.py").write_text("x\n")
    dest = tmp_path / "export"
    res = export_tree(repo, head, dest, protected=PROTECTED, base_commit=base)
    assert (dest / "src" / "app.py").read_text() == "def f(): return 2\n"  # the commit, not the worktree
    assert not (dest / "untracked.py").exists()
    assert (dest / "tests" / "test_app.py").read_text() == "def test(): assert True\n"
    assert (dest / "conftest.py").read_text() == "# base conftest\n"
    assert (dest / "pytest.ini").read_text() == "[pytest]\n"
    assert not (dest / "tests" / "test_new.py").exists() and not (dest / "src" / "conftest.py").exists()
    assert os.access(dest / "run.sh", os.X_OK) and not os.access(dest / "src" / "app.py", os.X_OK)
    assert os.readlink(dest / "src" / "alias.py") == "app.py"
    assert res.commit == head and res.skipped == ()
    assert res.restored == ("conftest.py", "pytest.ini", "tests/test_app.py")
    assert res.removed == ("src/conftest.py", "tests/test_new.py")
    assert protected_changes(repo, base, head, PROTECTED) == [
        "conftest.py", "pytest.ini", "src/conftest.py", "tests/test_app.py", "tests/test_new.py"]
    assert protected_changes(repo, base, base, PROTECTED) == []


def test_export_ignores_the_commits_gitattributes(tmp_path: Path) -> None:
    repo, base = layout(tmp_path)
    marker = tmp_path / "smudged"
    git(repo, "config", "filter.evil.smudge", f"sh -c 'touch {marker}; cat'")
    (repo / ".gitattributes").write_text("src/app.py export-ignore\n*.py filter=evil\nrun.sh export-subst\n")
    (repo / "run.sh").write_text("#!/bin/sh\n# $Format:%H$\n")
    head = commit_all(repo, "attributes")
    dest = tmp_path / "export"
    export_tree(repo, head, dest, protected=PROTECTED, base_commit=base)
    assert (dest / "src" / "app.py").is_file() and "$Format:%H$" in (dest / "run.sh").read_text()
    assert not marker.exists()


def commit_tree(repo: Path, entries: list[tuple[str, str, str]]) -> str:
    """A commit whose root tree holds `entries` (mode, name, blob text) exactly as given (git
    mktree would refuse some names; a hostile agent writes the object itself)."""
    raw = b""
    for mode, name, text in sorted(entries, key=lambda e: e[1]):
        oid = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=text.encode(),
                             capture_output=True, check=True).stdout.strip().decode()
        raw += mode.encode() + b" " + name.encode() + b"\0" + bytes.fromhex(oid)
    tree = subprocess.run(["git", "hash-object", "-w", "-t", "tree", "--literally", "--stdin"], cwd=repo, input=raw,
                          capture_output=True, check=True).stdout.strip().decode()
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", "commit-tree", tree, "-m", "crafted"], cwd=repo, env=env, capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.mark.parametrize("name", ["..", ".git", ".GIT"])
def test_a_crafted_tree_with_an_unsafe_name_exports_nothing(tmp_path: Path, name: str) -> None:
    repo, base = layout(tmp_path)
    crafted = commit_tree(repo, [("100644", "ok.txt", "x\n"), ("100644", name, "evil\n")])
    dest = tmp_path / "export"
    with pytest.raises(ExportError, match="unsafe path"):
        export_tree(repo, crafted, dest, protected=[], base_commit=base)
    assert not dest.exists() or not any(dest.iterdir())


def test_symlinks_that_lead_out_of_the_export_are_left_out(tmp_path: Path) -> None:
    repo, base = layout(tmp_path)
    (repo / "abs").symlink_to("/etc/passwd")
    (repo / "up").symlink_to("../../outside")
    (repo / "b").symlink_to(".")  # harmless alone ...
    (repo / "a").symlink_to("b/..")  # ... but a, checked before b existed, then leads to the parent
    (repo / "src" / "ok").symlink_to("../tests")
    head = commit_all(repo, "links")
    dest = tmp_path / "export"
    res = export_tree(repo, head, dest, protected=[], base_commit=base)
    assert set(res.skipped) == {"abs", "up", "a"}
    assert not os.path.lexists(dest / "abs") and not os.path.lexists(dest / "a")
    assert os.readlink(dest / "src" / "ok") == "../tests" and os.readlink(dest / "b") == "."
    real = os.path.realpath(dest)
    for found in dest.rglob("*"):
        assert os.path.realpath(found).startswith(real)


def test_export_refuses_a_non_empty_destination_bounds_and_unknown_commits(tmp_path: Path) -> None:
    repo, base = layout(tmp_path)
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("x")
    with pytest.raises(ExportError, match="not an empty folder"):
        export_tree(repo, base, full, protected=[], base_commit=base)
    with pytest.raises(ExportError, match="over the export bounds"):
        export_tree(repo, base, tmp_path / "e1", protected=[], base_commit=base, max_files=2)
    with pytest.raises(ExportError, match="over the export bounds"):
        export_tree(repo, base, tmp_path / "e2", protected=[], base_commit=base, max_bytes=10)
    with pytest.raises(ExportError, match="not a commit"):
        export_tree(repo, "0" * 40, tmp_path / "e3", protected=[], base_commit=base)
    with pytest.raises(DriftError, match="not a commit id"):
        export_tree(repo, base, tmp_path / "e4", protected=[], base_commit="main")
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(ExportError, match="symlink"):
        export_tree(repo, base, link, protected=[], base_commit=base)


def test_a_large_export_is_complete(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    blob = os.urandom(3 * 1024 * 1024)
    for i in range(12):  # 36 MiB: more than one cat-file batch
        (repo / f"big{i}.bin").write_bytes(blob[i:] + blob[:i])
    head = commit_all(repo, "big")
    res = export_tree(repo, head, tmp_path / "export", protected=[], base_commit=head)
    assert res.files == 13
    for i in range(12):
        got = (tmp_path / "export" / f"big{i}.bin").read_bytes()
        assert hashlib.sha256(got).digest() == hashlib.sha256(blob[i:] + blob[:i]).digest()


def test_default_protected(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "tests" / "unit").mkdir(parents=True)
    (repo / "tests" / "test_x.py").write_text("")
    (repo / "check.sh").write_text("")
    base = ["conftest.py", "**/conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "noxfile.py",
            "*.pyc", "*.pyo", "__pycache__/"]
    collected = ["tests/**", "test_*.py", "*_test.py"]  # a command that names no path: what pytest collects
    argv = ["python", "-m", "pytest", "tests/", "-q", "tests/test_x.py::test_a", "tests/unit", "missing/", ".",
            "--rootdir=tests", "../up", str(repo / "check.sh")]
    assert default_protected(argv, repo) == [*base, "tests/**", "tests/test_x.py", "tests/unit/**", "/check.sh"]
    assert default_protected(["./run tests.sh", "-x"], repo) == [*base, *collected]  # does not exist there
    odd = default_protected(["./run[1].sh", "tests"])
    assert odd == [*base, "/run\\[1\\].sh", "/tests"]
    spec = protected_spec(odd)
    assert spec.match_file("run[1].sh") and not spec.match_file("run1.sh") and spec.match_file("tests/a/b.py")
    assert default_protected(["pytest"]) == [*base, *collected]
    assert default_protected(["python", "-m", "pytest", "-q"]) == [*base, *collected]  # `-m pytest` names a module
