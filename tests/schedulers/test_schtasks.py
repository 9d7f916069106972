"""schtasks: argv lists (no shell), interval limits, validated task names, run-tick.bat."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from automaton.core.errors import BadInput
from automaton.core.names import LoopName
from automaton.schedulers import Job, schtasks
from automaton.schedulers.tickscript import render_bat
from tests.schedulers.fakes import install_schtasks, tasks


def job(root: Path, interval: int = 900, name: str = "demo") -> Job:
    return Job(LoopName.of(name), root, root / ".automaton" / "loops" / name, interval,
               r"C:\Python311\python.exe", Path("C:/fw/scripts/loop-runner.py"), r"C:\Windows;C:\bin")


def test_create_argv_is_a_list_with_quoted_tr_and_force(tmp_path: Path) -> None:
    bat = tmp_path / "my proj" / ".automaton" / "loops" / "demo" / "run-tick.bat"
    assert schtasks.create_argv(job(tmp_path / "my proj")) == [
        "schtasks", "/create", "/tn", "AutomatonLoop_demo", "/tr", f'"{bat}"',
        "/sc", "minute", "/mo", "15", "/f",
    ]


@pytest.mark.parametrize(("seconds", "args"), [
    (60, ["/sc", "minute", "/mo", "1"]), (90 * 60, ["/sc", "minute", "/mo", "90"]),
    (1439 * 60, ["/sc", "minute", "/mo", "1439"]), (86400, ["/sc", "daily", "/mo", "1"]),
    (7 * 86400, ["/sc", "daily", "/mo", "7"]),
])
def test_intervals(seconds: int, args: list[str]) -> None:
    assert schtasks.schedule_args(seconds) == args


@pytest.mark.parametrize("seconds", [30, 90, 1441 * 60, 0, 366 * 86400])
def test_intervals_schtasks_cannot_fire_are_refused(seconds: int) -> None:
    with pytest.raises(BadInput, match=r"1\.\.1439 minutes"):
        schtasks.schedule_args(seconds)


@pytest.mark.parametrize("bad", ["*", "demo*", "a b", "", "../x"])
def test_a_wildcard_or_invalid_name_never_reaches_tn(bad: str) -> None:
    with pytest.raises(BadInput):
        schtasks.delete_argv(bad)


def test_tr_longer_than_262_characters_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="262"):
        schtasks.create_argv(job(tmp_path / ("x" * 260)))


def test_change_and_delete_argv() -> None:
    assert schtasks.change_argv("demo", enable=False) == [
        "schtasks", "/change", "/tn", "AutomatonLoop_demo", "/disable"]
    assert schtasks.change_argv("demo", enable=True)[-1] == "/enable"
    assert schtasks.delete_argv("demo") == ["schtasks", "/delete", "/tn", "AutomatonLoop_demo", "/f"]


def test_run_tick_bat_cds_then_runs_the_runner_with_doubled_percent(tmp_path: Path) -> None:
    text = render_bat(job(Path(r"C:\work\100% proj")))
    lines = text.split("\r\n")
    assert text.endswith("\r\n")
    assert lines[0] == "@echo off"
    assert 'set "PATH=C:\\Windows;C:\\bin"' in lines
    assert lines[3] == 'cd /d "C:\\work\\100%% proj" || exit /b 2'
    assert lines[4] == '"C:\\Python311\\python.exe" "C:/fw/scripts/loop-runner.py" --mode tick --loop "demo"'


def test_lifecycle_through_fake_schtasks(fake_bin: Callable[[str, str], Path], tmp_path: Path) -> None:
    state = tmp_path / "tasks.json"
    install_schtasks(fake_bin, state)
    sched = schtasks.SCHEDULER
    sched.install(job(tmp_path, 900))
    sched.install(job(tmp_path, 1800))  # /f replaces
    assert tasks(state)["AutomatonLoop_demo"]["argv"][-2] == "30"
    sched.disable(job(tmp_path))
    assert tasks(state)["AutomatonLoop_demo"]["enabled"] is False
    sched.enable(job(tmp_path))
    assert tasks(state)["AutomatonLoop_demo"]["enabled"] is True
    sched.uninstall(job(tmp_path))
    assert tasks(state) == {}
    assert "not deleted" in sched.uninstall(job(tmp_path))[0]  # already gone: reported, no error
    with pytest.raises(BadInput, match="cannot find"):
        sched.disable(job(tmp_path))
