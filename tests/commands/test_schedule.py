"""Schedule use cases end to end: CLI-created loops, fake crontab/launchctl/schtasks, temp HOME."""

from __future__ import annotations

import json
import os
import platform
import plistlib
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from automaton.commands import schedule
from automaton.core.errors import BadInput, Refused
from automaton.install_paths import own_roots
from automaton.schedulers import cron, launchd
from automaton.store.layout import Project, framework_home
from automaton.store.loops import Loop
from tests.helpers import calls, run_cli
from tests.schedulers.fakes import install_crontab, install_launchctl, install_schtasks, loaded, tasks

FOREIGN = "# keep me\nSHELL=/bin/sh\n15 2 * * * /usr/bin/nightly  # trailing\n"


def make_loop(project: Path, name: str = "demo") -> Path:
    res = run_cli("--create-loop", name, "--from-template", "ci-triage", "--project", str(project))
    assert res.code == 0, res.err
    return project / ".automaton" / "loops" / name


def log_events(loop_dir: Path) -> list[str]:
    return [line.split(" ")[1] for line in (loop_dir / ".state.log").read_text().splitlines()]


@pytest.fixture
def table(fake_bin: Callable[[str, str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    path = tmp_path / "crontab.txt"
    install_crontab(fake_bin, path)
    return path


def test_install_writes_run_tick_sh_and_the_cron_block(project: Path, table: Path) -> None:
    loop_dir = make_loop(project)
    table.write_text(FOREIGN)
    res = run_cli("--install-schedule", "demo", "--project", str(project), "--json")
    assert res.code == 0, res.err
    tick = loop_dir / "run-tick.sh"
    assert res.json["tick_script"] == str(tick) and res.json["interval_seconds"] == 900  # loop.json default
    assert res.json["scheduler"] == "cron"
    assert os.access(tick, os.X_OK)
    text = tick.read_text()
    assert text.startswith("#!/usr/bin/env bash\n")
    assert f'cd "{project}"' in text
    runner = Path(framework_home(), "scripts", "loop-runner.py").resolve()
    assert f'exec "{sys.executable}" "{runner}" --mode tick --loop "demo"' in text
    assert f'export PATH="{os.environ["PATH"]}"' in text
    crontab = table.read_text()
    assert crontab.startswith(FOREIGN)
    assert crontab[len(FOREIGN):] == f"# automaton-loop:demo\n*/15 * * * * {tick} >> {loop_dir}/schedule.log 2>&1\n"
    assert log_events(loop_dir)[-1] == "INSTALLED"


def test_interval_flag_reinstall_and_refusal(project: Path, table: Path) -> None:
    make_loop(project)
    assert run_cli("--install-schedule", "demo", "--project", str(project)).code == 0
    res = run_cli("--install-schedule", "demo", "--interval", "7200", "--project", str(project))
    assert res.code == 0, res.err
    text = table.read_text()
    assert text.count("# automaton-loop:demo\n") == 1 and "0 */2 * * *" in text and "*/15" not in text
    bad = run_cli("--install-schedule", "demo", "--interval", "5400", "--project", str(project))
    assert bad.code == 2 and "cannot be expressed exactly in cron" in bad.err
    assert table.read_text() == text  # a refused interval changes nothing


def test_pause_strips_and_resume_restores_the_same_block(project: Path, table: Path, approver: str) -> None:
    loop_dir = make_loop(project)
    make_loop(project, "demo2")
    table.write_text(FOREIGN)
    assert run_cli("--install-schedule", "demo2", "--interval", "300", "--project", str(project)).code == 0
    assert run_cli("--install-schedule", "demo", "--project", str(project)).code == 0
    installed = table.read_text()
    demo2_block = installed[len(FOREIGN):installed.index("# automaton-loop:demo\n")]
    assert run_cli("--pause-loop", "demo", "--project", str(project)).code == 0
    assert table.read_text() == FOREIGN + demo2_block  # demo2 untouched
    assert json.loads((loop_dir / "schedule.json").read_text())["enabled"] is False
    assert run_cli("--resume-loop", "demo", "--project", str(project)).code == 0
    assert table.read_text() == installed


def test_uninstall_removes_block_script_and_record(project: Path, table: Path) -> None:
    loop_dir = make_loop(project)
    table.write_text(FOREIGN)
    assert run_cli("--install-schedule", "demo", "--project", str(project)).code == 0
    res = run_cli("--uninstall-schedule", "demo", "--project", str(project), "--json")
    assert res.code == 0, res.err
    assert table.read_text() == FOREIGN
    assert not (loop_dir / "run-tick.sh").exists() and not (loop_dir / "schedule.json").exists()
    assert log_events(loop_dir)[-1] == "UNINSTALLED"
    again = run_cli("--uninstall-schedule", "demo", "--project", str(project))
    assert again.code == 0 and table.read_text() == FOREIGN


def test_no_crontab_yet(project: Path, table: Path) -> None:
    make_loop(project)
    assert not table.exists()
    assert run_cli("--install-schedule", "demo", "--project", str(project)).code == 0
    assert table.read_text().startswith("# automaton-loop:demo\n*/15 * * * * ")


def test_best_effort_is_a_no_op_without_a_schedule(project: Path, table: Path,
                                                   fake_bin: Callable[[str, str], Path]) -> None:
    make_loop(project)
    assert schedule.disable_best_effort(Project.at(str(project)), "demo") is None
    assert schedule.enable_best_effort(Project.at(str(project)), "demo") is None
    assert calls(fake_bin.dir, "crontab") == []  # type: ignore[attr-defined]


def test_best_effort_returns_a_warning_instead_of_raising(project: Path, table: Path,
                                                          fake_bin: Callable[[str, str], Path]) -> None:
    make_loop(project)
    proj = Project.at(str(project))
    schedule.install_schedule(proj, "demo")
    fake_bin("crontab", 'sys.stderr.write("crontab: spool is read-only\\n")\nsys.exit(1)\n')
    warning = schedule.disable_best_effort(proj, "demo")
    assert warning is not None and "spool is read-only" in warning
    (Loop.resolve(proj, "demo").dir / "schedule.json").write_text("{")
    assert "unreadable schedule record" in (schedule.enable_best_effort(proj, "demo") or "")


def test_untracked_and_invalid_loops_are_bad_input(project: Path, table: Path) -> None:
    assert run_cli("--install-schedule", "nope", "--project", str(project)).code == 2
    assert run_cli("--install-schedule", "Bad*Name", "--project", str(project)).code == 2
    assert run_cli("--install-schedule", "demo", "--interval", "-5", "--project", str(project)).code == 2
    assert not table.exists()


def test_unsupported_os_exits_2(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_loop(project)
    monkeypatch.setattr(platform, "system", lambda: "Plan9")
    res = run_cli("--install-schedule", "demo", "--project", str(project))
    assert res.code == 2 and "unsupported OS 'Plan9'" in res.err


def test_darwin_writes_a_plist_under_the_temporary_home(project: Path, fake_bin: Callable[[str, str], Path],
                                                        tmp_path: Path, forbid_real_home: Path) -> None:
    """--install-schedule writes run-tick.sh and a plist on (simulated) Darwin."""
    loop_dir = make_loop(project)
    state = tmp_path / "launchctl.json"
    install_launchctl(fake_bin, state)
    proj = Project.at(str(project))
    out = schedule.install_schedule(proj, "demo", 600, system="Darwin")
    assert out.ok and (loop_dir / "run-tick.sh").is_file()
    plist_file = forbid_real_home / "Library" / "LaunchAgents" / "com.automaton.loop.demo.plist"
    assert plist_file == launchd.plist_path("demo")
    with plist_file.open("rb") as fh:
        plist = plistlib.load(fh)
    assert plist["ProgramArguments"] == ["/bin/bash", str(loop_dir / "run-tick.sh")]
    assert plist["StartInterval"] == 600 and plist["WorkingDirectory"] == str(project)
    assert loaded(state) == ["com.automaton.loop.demo"]
    assert schedule.disable_best_effort(proj, "demo") is None  # the record says Darwin: launchd is used
    assert launchd.disabled_path("demo").is_file() and loaded(state) == []
    assert schedule.enable_best_effort(proj, "demo") is None
    assert plist_file.is_file() and loaded(state) == ["com.automaton.loop.demo"]
    schedule.uninstall_schedule(proj, "demo")
    assert not plist_file.exists() and loaded(state) == []


def test_windows_writes_run_tick_bat_and_calls_schtasks(project: Path, fake_bin: Callable[[str, str], Path],
                                                        tmp_path: Path) -> None:
    loop_dir = make_loop(project)
    state = tmp_path / "tasks.json"
    install_schtasks(fake_bin, state)
    proj = Project.at(str(project))
    schedule.install_schedule(proj, "demo", 1800, system="Windows")
    bat = loop_dir / "run-tick.bat"
    assert bat.read_text().startswith("@echo off")
    assert calls(fake_bin.dir, "schtasks")[0] == [  # type: ignore[attr-defined]
        "/create", "/tn", "AutomatonLoop_demo", "/tr", f'"{bat}"', "/sc", "minute", "/mo", "30", "/f"]
    assert schedule.disable_best_effort(proj, "demo") is None
    assert tasks(state)["AutomatonLoop_demo"]["enabled"] is False
    schedule.uninstall_schedule(proj, "demo")
    assert tasks(state) == {} and not bat.exists()


def test_parse_interval() -> None:
    assert schedule.parse_interval(None) is None
    assert schedule.parse_interval("900") == 900
    for bad in ("x", "0", "-1", "1.5"):
        with pytest.raises(BadInput):
            schedule.parse_interval(bad)
    assert cron.cron_spec(schedule.parse_interval("600") or 0) == "*/10 * * * *"


def test_installing_on_a_paused_loop_leaves_the_unit_disabled_until_resume(project: Path, table: Path,
                                                                          approver: str) -> None:
    loop_dir = make_loop(project)
    assert run_cli("--pause-loop", "demo", "--project", str(project)).code == 0
    res = run_cli("--install-schedule", "demo", "--project", str(project), "--json")
    assert res.code == 0, res.err
    assert res.json["enabled"] is False
    assert "# automaton-loop:demo" not in table.read_text()
    assert (loop_dir / "run-tick.sh").is_file()
    assert run_cli("--resume-loop", "demo", "--project", str(project)).code == 0
    assert "# automaton-loop:demo\n*/15 * * * * " in table.read_text()


def test_a_halt_disables_the_schedule_and_approval_re_enables_it(project: Path, table: Path, approver: str) -> None:
    loop_dir = make_loop(project)
    assert run_cli("--install-schedule", "demo", "--project", str(project)).code == 0
    installed = table.read_text()
    config = json.loads((loop_dir / "loop.json").read_text())
    config["description"] = "an agent widened its own brakes"
    (loop_dir / "loop.json").write_text(json.dumps(config))  # sealed config changed -> halt
    gate = run_cli("--check-gate", "demo", "--project", str(project), "--json")
    assert gate.code == 1 and gate.json["halt_reason"] == "human_intervention"
    assert table.read_text() == ""
    # --yes: the approver is a script (AUTOMATON_APPROVER, no terminal) and loop.json changed
    assert run_cli("--approve", "--loop", "demo", "--yes", "--project", str(project)).code == 0
    assert table.read_text() == installed


def test_harness_executable_is_resolved_at_install(project: Path, table: Path,
                                                    fake_bin: Callable[[str, str], Path]) -> None:
    make_loop(project)  # ci-triage: harness claude
    res = run_cli("--install-schedule", "demo", "--project", str(project), "--json")
    assert res.code == 0 and res.json["harness_executable"] is None
    assert "harness executable 'claude'" in res.err and "not on the PATH" in res.err
    claude = fake_bin("claude", "print('{}')")
    res = run_cli("--install-schedule", "demo", "--project", str(project), "--json")
    assert res.code == 0 and res.json["harness_executable"] == str(claude.resolve())
    assert "harness executable" not in res.err


def test_foreign_crlf_and_non_utf8_lines_stay_byte_identical(project: Path, table: Path) -> None:
    make_loop(project)
    foreign = b"MAILTO=x\r\n# caf\xe9 in latin-1\n0 1 * * * /bin/true\r\n"
    table.write_bytes(foreign)
    assert run_cli("--install-schedule", "demo", "--project", str(project)).code == 0
    assert table.read_bytes().startswith(foreign)
    assert run_cli("--uninstall-schedule", "demo", "--project", str(project)).code == 0
    assert table.read_bytes() == foreign


def test_install_refuses_when_automaton_lives_in_the_project(project: Path, table: Path) -> None:
    loop_dir = make_loop(project)
    table.write_text(FOREIGN)
    venv = project / ".venv"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    own = own_roots(prefixes=[str(venv)], files=[str(venv / "bin" / "python")])
    with pytest.raises(Refused, match=r"--install-schedule: automaton runs from .*pipx install automaton-framework"):
        schedule.install_schedule(Project.at(str(project)), "demo", own=own)
    assert table.read_text() == FOREIGN  # no unit
    assert not (loop_dir / "run-tick.sh").exists() and not (loop_dir / schedule.RECORD_FILE).exists()
    assert schedule.install_schedule(Project.at(str(project)), "demo", own=()).data["ok"] is True


def test_install_records_a_git_outside_the_project(project: Path, table: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `git` in the project's `.venv/bin`, first on the installer's PATH, is the agent's to
    write: run-tick.sh and schedule.json name the first git outside the project instead."""
    import shutil

    from tests.helpers import fake_exe

    loop_dir = make_loop(project)
    planted = fake_exe(project / ".venv" / "bin", "git", "sys.exit(3)\n")
    monkeypatch.setenv("PATH", f"{planted.parent}{os.pathsep}{os.environ['PATH']}")
    real_git = shutil.which("git", path=os.environ["PATH"].split(os.pathsep, 1)[1])
    assert real_git is not None
    res = run_cli("--install-schedule", "demo", "--project", str(project), "--json")
    assert res.code == 0, res.err
    text = (loop_dir / "run-tick.sh").read_text()
    assert f'export AUTOMATON_GIT="{real_git}"' in text and str(planted) not in text
    assert json.loads((loop_dir / "schedule.json").read_text())["git"] == real_git
