"""A loop that completes or halts turns its OS schedule off; approve and rearm turn it on again.

Fake crontab / launchctl / schtasks first on PATH (tests/schedulers/fakes.py); HOME is a
temporary folder (tests/conftest.py), so no real schedule is ever touched.
"""

from __future__ import annotations

import json
import platform
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from automaton.commands import schedule
from automaton.schedulers import launchd
from automaton.store.layout import Project
from tests.helpers import run_cli
from tests.runner.loopkit import make_loop
from tests.schedulers.fakes import install_crontab, install_launchctl, install_schtasks, loaded, tasks

PY = sys.executable
BLOCK = "# automaton-loop:demo\n"
DONE = {"actions": [{"write": "src/score.txt", "content": "2 passed"}], "text": "did it", "cost_usd": 0.1}
VERIFY = {"implement": {"prompt": "implement.md"}, "orchestrate": {"builtin": True},
          "verify": {"command": [PY, "-c", "import pathlib;print(pathlib.Path('src/score.txt').read_text())"],
                     "score": "summary"}}


@pytest.fixture
def table(fake_bin: Callable[[str, str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    path = tmp_path / "crontab.txt"
    install_crontab(fake_bin, path)
    return path


def _tick(project: Path) -> int:
    return run_cli("--mode", "tick", "--loop", "demo", "--project", str(project), "--quiet",
                   entry="automaton-loop").code


def _status(project: Path) -> str:
    res = run_cli("--loop-status", "demo", "--project", str(project))
    return next(line for line in res.out.splitlines() if line.startswith("  schedule:"))


def test_a_tick_that_completes_the_loop_removes_its_cron_block_and_rearm_restores_it(
        project: Path, table: Path, approver: str) -> None:
    make_loop(project, script={"implement": [DONE, DONE]}, sandbox="off", roles=VERIFY)
    assert run_cli("--install-schedule", "demo", "--project", str(project)).code == 0
    installed = table.read_text()
    assert BLOCK in installed and "enabled, next fire" in _status(project)
    assert _tick(project) == 0
    assert run_cli("--loop-status", "demo", "--project", str(project), "--json").json["status"] == "complete"
    assert BLOCK not in table.read_text()  # today's code kept firing a complete loop's entry
    assert _status(project) == "  schedule: cron (every 900 s), disabled while the loop is complete"
    assert json.loads((project / ".automaton/loops/demo/schedule.json").read_text())["enabled"] is False
    assert run_cli("--rearm-loop", "demo", "--project", str(project)).code == 0
    assert table.read_text() == installed and "enabled, next fire" in _status(project)


def test_a_fire_refused_by_the_status_gate_turns_off_a_unit_a_failed_disable_left(
        project: Path, table: Path, approver: str, fake_bin: Callable[[str, str], Path], tmp_path: Path) -> None:
    loop_dir = project / ".automaton" / "loops" / "demo"
    make_loop(project, sandbox="off", roles=VERIFY)
    assert run_cli("--install-schedule", "demo", "--project", str(project)).code == 0
    working = (fake_bin.dir / "crontab").read_text()  # type: ignore[attr-defined]
    fake_bin("crontab", 'sys.stderr.write("crontab: spool is full\\n")\nsys.exit(1)\n')
    config = json.loads((loop_dir / "loop.json").read_text())
    config["description"] = "edited behind the seal"
    (loop_dir / "loop.json").write_text(json.dumps(config))
    gate = run_cli("--check-gate", "demo", "--project", str(project))
    assert gate.code == 1 and "could not disable the schedule" in gate.err
    assert BLOCK in table.read_text()
    (fake_bin.dir / "crontab").write_text(working)  # type: ignore[attr-defined]
    assert "still enabled though the loop is halted" in _status(project)
    assert _tick(project) == 1  # the gate refuses: the brake
    assert BLOCK not in table.read_text()  # and the refused fire turned the unit off
    assert _status(project) == "  schedule: cron (every 900 s), disabled while the loop is halted"


@pytest.mark.parametrize("system", ["Darwin", "Windows"])
def test_completion_disables_launchd_and_schtasks_units_too(project: Path, fake_bin: Callable[[str, str], Path],
                                                            tmp_path: Path, approver: str, system: str) -> None:
    state = tmp_path / "scheduler.json"
    (install_launchctl if system == "Darwin" else install_schtasks)(fake_bin, state)
    make_loop(project, script={"implement": [DONE]}, sandbox="off", roles=VERIFY)
    proj = Project.at(str(project))
    assert schedule.install_schedule(proj, "demo", 600, system=system).ok
    assert _tick(project) == 0
    if system == "Darwin":
        assert loaded(state) == [] and launchd.disabled_path("demo").is_file()
    else:
        assert tasks(state)["AutomatonLoop_demo"]["enabled"] is False
