"""Protected by default: what pytest would collect, read from the project's pytest configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

from automaton.git.protect import (
    BYTECODE,
    collected_patterns,
    default_protected,
    effective_protected,
    protected_spec,
    pytest_settings,
)


@pytest.mark.parametrize(("name", "text"), [
    ("pytest.ini", "[pytest]\ntestpaths = checks more\npython_files = check_*.py\n"),
    ("pyproject.toml", '[tool.pytest.ini_options]\ntestpaths = ["checks", "more"]\npython_files = "check_*.py"\n'),
    ("tox.ini", "[tox]\n[pytest]\ntestpaths =\n    checks\n    more\npython_files = check_*.py\n"),
    ("setup.cfg", "[metadata]\nname = x\n[tool:pytest]\ntestpaths = checks more\npython_files = check_*.py\n"),
])
def test_each_config_file_pytest_reads(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text)
    got = pytest_settings(tmp_path)
    assert (got.testpaths, got.python_files, got.source) == (("checks", "more"), ("check_*.py",), name)
    assert collected_patterns(tmp_path) == ["checks/**", "more/**", "conftest.py", "**/conftest.py"]


def test_pytest_ini_wins_even_without_a_section_and_python_files_replace_the_defaults(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("# empty\n")
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["elsewhere"]\n')
    assert pytest_settings(tmp_path).testpaths == ()
    (tmp_path / "pytest.ini").unlink()
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\npython_files = ["check_*.py"]\n')
    assert collected_patterns(tmp_path) == ["tests/**", "check_*.py", "conftest.py", "**/conftest.py"]
    (tmp_path / "pyproject.toml").write_text("not toml [")
    assert collected_patterns(tmp_path) == ["tests/**", "test_*.py", "*_test.py", "conftest.py", "**/conftest.py"]


def test_a_command_that_names_no_path_protects_what_pytest_collects(tmp_path: Path) -> None:
    spec = protected_spec(default_protected(["python", "-m", "pytest", "-q"], tmp_path))
    for path in ("tests/test_calc.py", "tests/helpers.py", "pkg/test_x.py", "pkg/x_test.py", "sub/conftest.py",
                 "src/__pycache__/calc.cpython-311.pyc", "src/calc.pyc", "pytest.ini", "setup.cfg"):
        assert spec.match_file(path), path
    for path in ("src/calc.py", "src/.gitignore", "README.md"):
        assert not spec.match_file(path), path


def test_bytecode_is_protected_whatever_the_loop_lists() -> None:
    assert effective_protected(["tests/**"], ["pytest"], None) == ["tests/**", *BYTECODE]
    assert effective_protected([], ["pytest"], None) == list(BYTECODE)
    spec = protected_spec(effective_protected([], ["pytest"], None))
    assert spec.match_file("src/__pycache__/x.pyc") and spec.match_file("a/b/c.pyo") and not spec.match_file("x.py")


def _commit_all(repo: Path, message: str) -> str:
    from tests.helpers import git

    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def test_a_plus_pattern_protects_the_base_files_and_lets_new_ones_in(tmp_path: Path) -> None:
    # `+tests/**`: the base's test files may not change or go; a new test file may be added.
    from automaton.git.export import export_tree
    from automaton.git.protect import protected_changes
    from tests.helpers import init_repo

    repo = init_repo(tmp_path / "repo")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_a.py").write_text("def test_a():\n    assert 1 + 1 == 2\n")
    (repo / "tests" / "test_gone.py").write_text("def test_gone():\n    assert True\n")
    base = _commit_all(repo, "base")
    (repo / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    (repo / "tests" / "test_gone.py").unlink()
    (repo / "tests" / "test_new.py").write_text("def test_new():\n    assert True\n")
    tip = _commit_all(repo, "tick")
    protected = ["+tests/**", "conftest.py"]
    assert protected_changes(repo, base, tip, protected) == ["tests/test_a.py", "tests/test_gone.py"]
    assert protected_changes(repo, base, tip, ["tests/**"]) == [
        "tests/test_a.py", "tests/test_gone.py", "tests/test_new.py"]
    dest = tmp_path / "export"
    export_tree(repo, tip, dest, protected=protected, base_commit=base)
    assert (dest / "tests" / "test_a.py").read_text() == "def test_a():\n    assert 1 + 1 == 2\n"
    assert (dest / "tests" / "test_gone.py").is_file()
    assert (dest / "tests" / "test_new.py").is_file()
    assert protected_spec(protected).match_file("tests/test_new.py")  # doctor's view: under a protected pattern
