"""macOS launchd: one LaunchAgent plist per loop (README.md#schedules).

Protocol facts (launchd.plist(5), launchctl(1)): the plist lives in
`~/Library/LaunchAgents/<Label>.plist`; `ProgramArguments` is an argv array run without a
shell; `StartInterval` is in seconds; agents get a bare PATH, so `EnvironmentVariables.PATH`
is set; `launchctl bootstrap gui/<uid> <plist>` loads, `launchctl bootout gui/<uid>/<Label>`
unloads, and a bootout of a job that is not loaded fails ("3: No such process", or
"5: Input/output error" on newer macOS), which is harmless here.
"""

from __future__ import annotations

import contextlib
import os
import plistlib
import time
from pathlib import Path
from typing import Any

from automaton.core.errors import BadInput, Refused
from automaton.proc import run_capture
from automaton.schedulers import Job
from automaton.schedulers.tickscript import render_sh

DISABLED_SUFFIX = ".disabled"
# bootout is asynchronous: a bootstrap right after it can fail with "5: Input/output error"
# while the old job drains, so bootstrap is retried a few times.
BOOTSTRAP_TRIES = 3
BOOTSTRAP_RETRY_S = 1.0


def label(name: str) -> str:
    """The job label, e.g. `com.automaton.loop.demo` (a stable name: docs/architecture.md#stable-interfaces)."""
    return f"com.automaton.loop.{name}"


def agents_dir() -> Path:
    """`~/Library/LaunchAgents` of the current user (Path.home(), so tests can move HOME)."""
    return Path.home() / "Library" / "LaunchAgents"


def plist_path(name: str) -> Path:
    return agents_dir() / f"{label(name)}.plist"


def disabled_path(name: str) -> Path:
    """Where a paused loop's plist waits: launchd never loads a file not ending in .plist."""
    return agents_dir() / f"{label(name)}.plist{DISABLED_SUFFIX}"


def render_plist(job: Job, tick_file: str = "run-tick.sh") -> dict[str, Any]:
    """The plist dictionary (pure): absolute argv, StartInterval (s), cwd, logs, PATH."""
    return {
        "Label": label(job.name),
        "ProgramArguments": ["/bin/bash", str(job.tick_path(tick_file))],
        "StartInterval": job.interval_s,
        "WorkingDirectory": str(job.project_root),
        "StandardOutPath": str(job.log_path),
        "StandardErrorPath": str(job.log_path),
        "EnvironmentVariables": {"PATH": job.path_env},
        "RunAtLoad": False,
    }


def _domain() -> str:
    return f"gui/{os.getuid()}"


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _owner(path: Path) -> str | None:
    """The WorkingDirectory of an existing plist at `path` (None: absent or unreadable)."""
    try:
        with path.open("rb") as fh:
            data = plistlib.load(fh)
    except (OSError, plistlib.InvalidFileException, ValueError):
        return None
    value = data.get("WorkingDirectory") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def _check_owner(job: Job) -> None:
    for path in (plist_path(job.name), disabled_path(job.name)):
        owner = _owner(path)
        if owner is not None and owner != str(job.project_root):
            raise Refused(
                f"{path} already schedules loop {job.name!r} of another project ({owner}):"
                " uninstall it there (or delete that file if the project is gone), or use another loop name"
            )


def bootout(name: str) -> None:
    """Unload the job; "not loaded" is fine. BadInput only when launchctl is missing."""
    got = run_capture(["launchctl", "bootout", f"{_domain()}/{label(name)}"])
    if got.code == 127:
        raise BadInput("launchctl not found on PATH: launchd schedules need macOS 10.10 or later")


def bootstrap(path: Path) -> None:
    """Load the plist at `path`; BadInput with launchctl's message when it keeps failing."""
    got = run_capture(["launchctl", "bootstrap", _domain(), str(path)])
    for _ in range(BOOTSTRAP_TRIES - 1):
        if got.code == 0:
            return
        time.sleep(BOOTSTRAP_RETRY_S)
        got = run_capture(["launchctl", "bootstrap", _domain(), str(path)])
    if got.code != 0:
        raise BadInput(
            f"launchctl bootstrap {_domain()} {path} failed (exit {got.code}): {got.err.strip()};"
            " check the plist with plutil -lint and retry"
        )


class Launchd:
    """The launchd scheduler: pause = bootout + rename to .disabled; resume = the reverse."""

    kind = "launchd"
    tick_file = "run-tick.sh"

    def check_interval(self, interval_s: int) -> None:
        if interval_s < 1:
            raise BadInput(f"--interval {interval_s}: StartInterval needs at least 1 second")

    def render_tick(self, job: Job) -> str:
        return render_sh(job)

    def install(self, job: Job) -> list[str]:
        _check_owner(job)
        path = plist_path(job.name)
        _write_atomic(path, plistlib.dumps(render_plist(job, self.tick_file)))
        with contextlib.suppress(FileNotFoundError):
            disabled_path(job.name).unlink()
        bootout(job.name)
        bootstrap(path)
        return [f"launchd: loaded {path} (StartInterval {job.interval_s} s)"]

    def uninstall(self, job: Job) -> list[str]:
        _check_owner(job)
        bootout(job.name)
        removed = []
        for path in (plist_path(job.name), disabled_path(job.name)):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(str(path))
        return [f"launchd: removed {p}" for p in removed] or [f"launchd: no plist for {label(job.name)}"]

    def disable(self, job: Job) -> list[str]:
        _check_owner(job)
        bootout(job.name)
        path = plist_path(job.name)
        if not path.exists():
            return [f"launchd: {label(job.name)} is not installed or already disabled"]
        os.replace(path, disabled_path(job.name))
        return [f"launchd: unloaded {label(job.name)}; plist renamed to {disabled_path(job.name).name}"]

    def enable(self, job: Job) -> list[str]:
        _check_owner(job)
        path, parked = plist_path(job.name), disabled_path(job.name)
        if parked.exists():
            os.replace(parked, path)
        if not path.exists():  # lost while paused: rebuild the same unit from the job
            _write_atomic(path, plistlib.dumps(render_plist(job, self.tick_file)))
        bootout(job.name)
        bootstrap(path)
        return [f"launchd: loaded {path}"]


SCHEDULER = Launchd()
