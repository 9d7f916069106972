"""`automaton-loop --version`: the runner names its version the way `automaton --version` does,
from the one version source (automaton.__version__, which pyproject.toml reads too)."""

from __future__ import annotations

import os
import tomllib
from importlib.metadata import version
from pathlib import Path

from automaton import __version__
from tests.helpers import run_cli, run_exe

ROOT = Path(__file__).resolve().parents[2]


def test_runner_version(tmp_path: Path) -> None:
    res = run_cli("--version", entry="automaton-loop")
    assert (res.code, res.out, res.err) == (0, f"automaton-loop {__version__}\n", "")
    res = run_cli("--version", "--json", entry="automaton-loop")
    assert res.code == 0 and res.json == {"version": __version__}


def test_runner_version_wins_and_matches_automaton(tmp_path: Path) -> None:
    home = tmp_path / "framework"
    home.mkdir()
    (home / "config.md").write_text("# config\n\n## Framework Version\n4.5.6\n")  # an old config.md: ignored
    env = {**os.environ, "AUTOMATON_HOME": str(home)}
    done = run_exe("automaton-loop", "--version", "--mode", "tick", cwd=tmp_path, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"automaton-loop {__version__}\n", "")
    assert run_exe("automaton", "--version", cwd=tmp_path, env=env).stdout == f"automaton {__version__}\n"


def test_one_version_source() -> None:
    """pyproject.toml names no version of its own: setuptools reads automaton.__version__, and
    the installed distribution's metadata says the same."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "automaton.__version__"}
    assert version("automaton-framework") == __version__


def test_an_abbreviated_flag_is_refused(tmp_path: Path) -> None:
    """`--max-tick 3` is not `--max-ticks 3`, `--dem` not `--demo`: argparse's prefix matching is
    off, so a flag spelled short is a usage error (exit 2), never another flag's value."""
    for args in (["--dem"], ["--mode", "run", "--loop", "x", "--max-tick", "3"], ["--vers"]):
        res = run_cli(*args, entry="automaton-loop", cwd=tmp_path)
        assert res.code == 2, args
        assert "unrecognized arguments" in res.err and res.out == "", args
