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
