"""The OS registry and run-tick.sh: its stable shape, and quoting proven by running it in bash."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from automaton.core.errors import BadInput, ExitCode
from automaton.core.names import LoopName
from automaton.schedulers import Job, for_system
from automaton.schedulers.tickscript import dq, render_sh


@pytest.mark.parametrize(("system", "kind", "tick"), [
    ("Linux", "cron", "run-tick.sh"), ("Darwin", "launchd", "run-tick.sh"), ("Windows", "schtasks", "run-tick.bat"),
])
def test_registry_by_platform(system: str, kind: str, tick: str) -> None:
    sched = for_system(system)
    assert (sched.kind, sched.tick_file) == (kind, tick)


def test_default_is_platform_system(monkeypatch: pytest.MonkeyPatch) -> None:
    import platform

    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    assert for_system().kind == "launchd"


@pytest.mark.parametrize("system", ["FreeBSD", "Java", ""])
def test_unsupported_os_is_bad_input(system: str) -> None:
    with pytest.raises(BadInput, match="unsupported OS") as info:
        for_system(system)
    assert info.value.code == ExitCode.BAD_INPUT == 2


def test_run_tick_sh_keeps_the_seed_shape(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    job = Job(LoopName.of("demo"), root, root / ".automaton/loops/demo", 900, "/usr/bin/python3",
              Path("/fw/scripts/loop-runner.py"), "/usr/bin:/bin")
    lines = render_sh(job).splitlines()
    assert lines[0] == "#!/usr/bin/env bash"
    assert lines[2] == 'export PATH="/usr/bin:/bin"'
    assert lines[3] == f'cd "{root}" || exit 2'
    assert lines[4] == 'exec "/usr/bin/python3" "/fw/scripts/loop-runner.py" --mode tick --loop "demo"'


@pytest.mark.parametrize("text", ["plain", "a b", 'q"uote', "it's", "$HOME", "`id`", "back\\slash", "!bang", "100%"])
def test_dq_round_trips_through_bash(text: str) -> None:
    bash = shutil.which("bash")
    assert bash, "bash is needed"
    out = subprocess.run([bash, "-c", f"printf %s {dq(text)}"], capture_output=True, text=True, check=True)
    assert out.stdout == text


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_run_tick_sh_runs_the_runner_in_the_project_with_hostile_paths(tmp_path: Path) -> None:
    root = tmp_path / "my \"proj\" $HOME `x` it's"
    root.mkdir()
    runner = tmp_path / "fw dir" / "loop-runner.py"
    runner.parent.mkdir()
    report = tmp_path / "report.txt"
    runner.write_text(
        "import json, os, sys\n"
        f"open({str(report)!r}, 'w').write(json.dumps([sys.argv[1:], os.getcwd(), os.environ['PATH']]))\n"
    )
    job = Job(LoopName.of("demo"), root, root / "loop", 900, sys.executable, runner, "/x y/bin:/usr/bin:/bin")
    script = tmp_path / "run-tick.sh"
    script.write_text(render_sh(job))
    script.chmod(0o755)
    done = subprocess.run([str(script)], capture_output=True, text=True, env={"PATH": os.defpath}, check=False)
    assert done.returncode == 0, done.stderr
    import json

    argv, cwd, path = json.loads(report.read_text())
    assert argv == ["--mode", "tick", "--loop", "demo"]
    assert Path(cwd) == root.resolve()
    assert path == "/x y/bin:/usr/bin:/bin"


def test_run_tick_sh_and_bat_export_the_pinned_git(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    job = Job(LoopName.of("demo"), root, root / ".automaton/loops/demo", 900, "/usr/bin/python3",
              Path("/fw/scripts/loop-runner.py"), "/usr/bin:/bin", "/usr/bin/git")
    lines = render_sh(job).splitlines()
    assert lines[2] == 'export PATH="/usr/bin:/bin"'
    assert lines[3] == 'export AUTOMATON_GIT="/usr/bin/git"'
    assert lines[4] == f'cd "{root}" || exit 2'
    from automaton.schedulers.tickscript import render_bat

    assert 'set "AUTOMATON_GIT=/usr/bin/git"' in render_bat(job).split("\r\n")
