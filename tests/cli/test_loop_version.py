"""`automaton-loop --version`: the runner names its version the way `automaton --version` does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import run_cli, run_exe


def _home(tmp_path: Path, config: str | None) -> Path:
    home = tmp_path / "framework"
    home.mkdir()
    if config is not None:
        (home / "config.md").write_text(config)
    return home


@pytest.mark.parametrize(("config", "shown"), [
    ("# config\n\n## Framework Version\n9.8.7\n", "automaton-loop 9.8.7"),
    ("# config\n\n## Loop Defaults\n- max_iterations: 3\n", "automaton-loop (unknown version)"),
    (None, "automaton-loop (unknown version)"),
])
def test_runner_version(config: str | None, shown: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOMATON_HOME", str(_home(tmp_path, config)))
    res = run_cli("--version", entry="automaton-loop")
    assert (res.code, res.out, res.err) == (0, f"{shown}\n", "")
    res = run_cli("--version", "--json", entry="automaton-loop")
    assert res.code == 0 and res.json == {"version": "9.8.7" if "9.8.7" in shown else None}


def test_runner_version_wins_and_matches_automaton(tmp_path: Path) -> None:
    env = {**os.environ, "AUTOMATON_HOME": str(_home(tmp_path, "## Framework Version\n4.5.6\n"))}
    done = run_exe("automaton-loop", "--version", "--mode", "tick", cwd=tmp_path, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "automaton-loop 4.5.6\n", "")
    assert run_exe("automaton", "--version", cwd=tmp_path, env=env).stdout == "automaton 4.5.6\n"
