"""launchd: plist content, bootout/bootstrap through a fake launchctl, pause/resume renames."""

from __future__ import annotations

import os
import plistlib
from collections.abc import Callable
from pathlib import Path

import pytest

from automaton.core.errors import BadInput, Refused
from automaton.core.names import LoopName
from automaton.schedulers import Job, launchd
from tests.helpers import calls
from tests.schedulers.fakes import install_launchctl, loaded

LABEL = "com.automaton.loop.demo"


def job(root: Path, interval: int = 900) -> Job:
    return Job(LoopName.of("demo"), root, root / ".automaton" / "loops" / "demo", interval,
               "/usr/bin/python3", Path("/opt/fw/scripts/loop-runner.py"), "/opt/homebrew/bin:/usr/bin:/bin")


@pytest.fixture
def state(fake_bin: Callable[[str, str], Path], tmp_path: Path) -> Path:
    path = tmp_path / "launchctl.json"
    install_launchctl(fake_bin, path)
    return path


def test_plist_lives_under_the_temporary_home(forbid_real_home: Path) -> None:
    assert launchd.plist_path("demo") == forbid_real_home / "Library" / "LaunchAgents" / f"{LABEL}.plist"


def test_install_writes_the_plist_and_bootstraps_it(state: Path, tmp_path: Path,
                                                    fake_bin: Callable[[str, str], Path]) -> None:
    root = tmp_path / "my proj"
    launchd.SCHEDULER.install(job(root))
    with launchd.plist_path("demo").open("rb") as fh:
        plist = plistlib.load(fh)
    loop = root / ".automaton" / "loops" / "demo"
    assert plist == {
        "Label": LABEL,
        "ProgramArguments": ["/bin/bash", str(loop / "run-tick.sh")],
        "StartInterval": 900,
        "WorkingDirectory": str(root),
        "StandardOutPath": str(loop / "schedule.log"),
        "StandardErrorPath": str(loop / "schedule.log"),
        "EnvironmentVariables": {"PATH": "/opt/homebrew/bin:/usr/bin:/bin"},
        "RunAtLoad": False,
    }
    uid = os.getuid()
    assert calls(fake_bin.dir, "launchctl") == [  # type: ignore[attr-defined]
        ["bootout", f"gui/{uid}/{LABEL}"],
        ["bootstrap", f"gui/{uid}", str(launchd.plist_path("demo"))],
    ]
    assert loaded(state) == [LABEL]


def test_reinstall_boots_out_first_so_bootstrap_does_not_fail(state: Path, tmp_path: Path) -> None:
    launchd.SCHEDULER.install(job(tmp_path, 900))
    launchd.SCHEDULER.install(job(tmp_path, 1800))
    with launchd.plist_path("demo").open("rb") as fh:
        assert plistlib.load(fh)["StartInterval"] == 1800
    assert loaded(state) == [LABEL]


def test_pause_renames_to_disabled_and_resume_restores(state: Path, tmp_path: Path) -> None:
    launchd.SCHEDULER.install(job(tmp_path))
    content = launchd.plist_path("demo").read_bytes()
    launchd.SCHEDULER.disable(job(tmp_path))
    assert not launchd.plist_path("demo").exists()
    assert launchd.disabled_path("demo").read_bytes() == content
    assert launchd.disabled_path("demo").name == f"{LABEL}.plist.disabled"
    assert loaded(state) == []
    launchd.SCHEDULER.enable(job(tmp_path))
    assert launchd.plist_path("demo").read_bytes() == content
    assert not launchd.disabled_path("demo").exists()
    assert loaded(state) == [LABEL]


def test_uninstall_unloads_and_deletes_even_when_paused(state: Path, tmp_path: Path) -> None:
    launchd.SCHEDULER.install(job(tmp_path))
    launchd.SCHEDULER.disable(job(tmp_path))
    launchd.SCHEDULER.uninstall(job(tmp_path))
    assert not launchd.plist_path("demo").exists() and not launchd.disabled_path("demo").exists()
    assert loaded(state) == []
    assert "no plist" in launchd.SCHEDULER.uninstall(job(tmp_path))[0]  # idempotent


def test_another_projects_agent_with_the_same_label_is_not_replaced(state: Path, tmp_path: Path) -> None:
    launchd.SCHEDULER.install(job(tmp_path / "other"))
    before = launchd.plist_path("demo").read_bytes()
    for action in (launchd.SCHEDULER.install, launchd.SCHEDULER.disable, launchd.SCHEDULER.uninstall):
        with pytest.raises(Refused, match="another project"):
            action(job(tmp_path / "mine"))
    assert launchd.plist_path("demo").read_bytes() == before


def test_bootstrap_failure_is_reported_with_launchctl_message(fake_bin: Callable[[str, str], Path],
                                                              tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launchd, "BOOTSTRAP_RETRY_S", 0.0)
    fake_bin("launchctl", 'if sys.argv[1] == "bootstrap":\n'
                          '    sys.stderr.write("Bootstrap failed: 5: Input/output error\\n")\n    sys.exit(5)\n')
    with pytest.raises(BadInput, match="Input/output error"):
        launchd.SCHEDULER.install(job(tmp_path))
    bootstraps = [a for a in calls(fake_bin.dir, "launchctl") if a[0] == "bootstrap"]  # type: ignore[attr-defined]
    assert len(bootstraps) == launchd.BOOTSTRAP_TRIES
