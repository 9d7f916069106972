"""OS schedulers for loop ticks (README.md#schedules): a Protocol and a registry by OS."""

from __future__ import annotations

import importlib
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from automaton.core.errors import BadInput
from automaton.core.names import LoopName

LOG_FILE = "schedule.log"  # stdout/stderr of scheduled ticks, in the loop folder


@dataclass(frozen=True)
class Job:
    """Everything needed to render and install one loop's schedule; plain values only.

    `interval_s` is in seconds. `python` is the absolute interpreter and `runner` the absolute
    `loop-runner.py` the tick script runs; `path_env` is the PATH seen at install time (cron
    and launchd start jobs with a bare PATH). `git`: the absolute git found on that PATH
    outside the project at install time (`proc.find_program`), exported to the tick as
    `AUTOMATON_GIT`; "" when none was found or the record predates it (the tick then looks
    git up itself, outside the project all the same).
    """

    name: LoopName
    project_root: Path
    loop_dir: Path
    interval_s: int
    python: str
    runner: Path
    path_env: str
    git: str = ""

    def tick_path(self, tick_file: str) -> Path:
        """The tick script in the loop folder (`run-tick.sh` or `run-tick.bat`)."""
        return self.loop_dir / tick_file

    @property
    def log_path(self) -> Path:
        return self.loop_dir / LOG_FILE


class Scheduler(Protocol):
    """One OS scheduler. Installers call external tools only through `automaton.proc`.

    Every method raises BadInput (exit 2) naming the tool and what to do when the tool fails,
    and never clobbers what it could not read.
    """

    kind: str  # "cron" | "launchd" | "schtasks"
    tick_file: str  # "run-tick.sh" | "run-tick.bat"

    def check_interval(self, interval_s: int) -> None:
        """BadInput when this scheduler cannot fire every `interval_s` seconds exactly."""

    def render_tick(self, job: Job) -> str:
        """The text of the tick script (pure)."""

    def install(self, job: Job) -> list[str]:
        """Install or replace the unit; returns human-readable lines of what was done."""

    def uninstall(self, job: Job) -> list[str]:
        """Remove the unit (idempotent)."""

    def disable(self, job: Job) -> list[str]:
        """Stop the unit firing but keep what `enable` needs (`--pause-loop`)."""

    def enable(self, job: Job) -> list[str]:
        """Undo `disable` with the same schedule (`--resume-loop`)."""


# platform.system() value -> module defining SCHEDULER (imported lazily: the hook path stays fast).
_REGISTRY = {
    "Linux": "automaton.schedulers.cron",
    "Darwin": "automaton.schedulers.launchd",
    "Windows": "automaton.schedulers.schtasks",
}


def supported() -> list[str]:
    """The `platform.system()` names that have a scheduler."""
    return sorted(_REGISTRY)


def for_system(system: str | None = None) -> Scheduler:
    """The scheduler of `system` (default: `platform.system()`); BadInput (exit 2) otherwise."""
    name = platform.system() if system is None else system
    module = _REGISTRY.get(name)
    if module is None:
        raise BadInput(
            f"unsupported OS {name or 'unknown'!r} for --install-schedule: supported are"
            f" {', '.join(supported())}; run ticks by hand with automaton-loop --mode tick"
        )
    scheduler: Scheduler = importlib.import_module(module).SCHEDULER
    return scheduler
