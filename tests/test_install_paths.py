"""`install_paths`: where the running automaton is installed, found from its prefixes and files
as the hooks and the schedule name them, each also as its real path and by its venv."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import automaton
from automaton import install_paths
from automaton.install_paths import clash, inside, own_roots, refusal, venv_of


def make_venv(folder: Path) -> Path:
    (folder / "bin").mkdir(parents=True)
    (folder / install_paths.VENV_MARKER).write_text("home = /usr/bin\n")
    return folder


def test_a_script_counts_with_its_venv_and_its_real_path(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "proj" / ".venv")
    real_python = tmp_path / "base" / "python3"
    real_python.parent.mkdir()
    real_python.write_text("")
    (venv / "bin" / "python").symlink_to(real_python)
    roots = own_roots(prefixes=[], files=[str(venv / "bin" / "python")])
    assert str(venv) in roots and str(real_python) in roots
    assert venv_of(str(venv / "bin" / "python")) == str(venv) and venv_of(str(tmp_path)) is None


def test_the_running_install_is_found() -> None:
    roots = own_roots()
    assert os.path.realpath(sys.prefix) in roots
    assert os.path.realpath(os.path.dirname(automaton.__file__)) in roots
    assert os.path.realpath(sys.executable) in roots


def test_automaton_home_adds_the_runner_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(install_paths.HOME_ENV, str(tmp_path / "fw"))
    assert str(tmp_path / "fw") in own_roots(prefixes=[])
    monkeypatch.setenv(install_paths.HOME_ENV, "relative/fw")  # not a path the schedule runs
    assert not any(r.endswith("relative/fw") for r in own_roots(prefixes=[]))


def test_the_file_system_root_is_never_a_root() -> None:
    assert own_roots(prefixes=["/"], files=[]) == ()


def test_clash_both_ways(tmp_path: Path) -> None:
    root = str(tmp_path / "proj" / ".venv")
    assert clash(root, [root]) == root
    assert clash(root + "/bin/automaton", [root]) == root
    assert clash(str(tmp_path / "proj"), [root]) == root  # a grant on the project would cover it
    assert clash(str(tmp_path / "proj" / ".venv2"), [root]) is None  # components, not string prefixes
    assert clash(str(tmp_path / "proj" / "src"), [root]) is None


def test_refusal_names_the_install_and_the_fix(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    venv = make_venv(project / ".venv")
    line = refusal(str(project), "--install-hooks", own_roots(prefixes=[str(venv)], files=[]))
    assert line is not None and "\n" not in line
    assert line.startswith(f"--install-hooks: automaton runs from {venv}, inside the project {project}")
    assert install_paths.FIX in line
    assert refusal(str(project), "--install-hooks", own_roots(prefixes=[str(tmp_path / "elsewhere")], files=[])) is None
    assert inside(str(project), own_roots()) is None  # this test run's automaton lives outside tmp_path
