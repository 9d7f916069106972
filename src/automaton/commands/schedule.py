"""Schedule use cases: install, uninstall, pause (disable) and resume (enable) a loop's OS unit.

See README.md#schedules. The loop folder keeps the tick script and `schedule.json`, the
record of what was installed (system, interval, interpreter, runner, PATH), so a resume or an
approval re-installs exactly the same unit, and a loop that never had a schedule is left alone.
"""

from __future__ import annotations

import contextlib
import getpass
import importlib
import json
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from automaton import install_paths
from automaton.core import jsontext
from automaton.core.errors import AutomatonError, BadInput, CorruptState, Refused
from automaton.core.loopstate import Event, LogEvent
from automaton.core.names import LoopName
from automaton.core.outcome import Outcome
from automaton.harnesses import REGISTRY
from automaton.proc import find_program
from automaton.schedulers import Job, Scheduler, for_system
from automaton.store.atomic import atomic_write
from automaton.store.chainlog import utc_now
from automaton.store.config import loop_defaults
from automaton.store.layout import Project, framework_home
from automaton.store.locks import locked
from automaton.store.loops import Loop

RECORD_FILE = "schedule.json"
RECORD_SCHEMA = 1
RUNNER = ("scripts", "loop-runner.py")
# Two loops halting in the same minute both rewrite the user's crontab: one lock per user
# turns those read-modify-writes into a sequence so neither loses the other's change.
LOCK_TIMEOUT_S = 30.0


def parse_interval(text: str | int | None) -> int | None:
    """`--interval SECONDS` as an int > 0 (None: not given); BadInput (exit 2) otherwise."""
    if text is None:
        return None
    if isinstance(text, bool):
        raise BadInput("--interval must be a whole number of seconds, e.g. 900")
    try:
        value = int(str(text).strip())
    except ValueError:
        raise BadInput(f"--interval {text!r} is not a whole number of seconds, e.g. 900") from None
    if value <= 0:
        raise BadInput(f"--interval {value} must be > 0 seconds, e.g. 900")
    return value


def _lock_path() -> Path:
    who = str(os.getuid()) if hasattr(os, "getuid") else getpass.getuser()
    return Path(tempfile.gettempdir()) / f"automaton-schedule-{who}.lock"


def record_path(project: Project, loop: LoopName) -> Path:
    return project.loop_dir(loop) / RECORD_FILE


def read_record(project: Project, loop: LoopName) -> dict[str, Any] | None:
    """The installed-schedule record, None when no schedule is installed; CorruptState if bad."""
    path = record_path(project, loop)
    try:
        data = jsontext.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptState(f"{path}: unreadable schedule record ({exc}); run --install-schedule again") from None
    keys = {"system": str, "interval_seconds": int, "python": str, "runner": str, "path": str, "enabled": bool}
    if not isinstance(data, dict) or any(not isinstance(data.get(k), t) for k, t in keys.items()):
        raise CorruptState(f"{path}: invalid schedule record; run --install-schedule {loop} again")
    if data.get("schema_version") != RECORD_SCHEMA:
        raise CorruptState(f"{path}: unknown schema_version {data.get('schema_version')!r}")
    return data


def _write_record(project: Project, loop: LoopName, job: Job, system: str, enabled: bool) -> None:
    record = {
        "schema_version": RECORD_SCHEMA, "system": system, "interval_seconds": job.interval_s,
        "python": job.python, "runner": str(job.runner), "path": job.path_env, "git": job.git, "enabled": enabled,
        "updated_at": utc_now(),
    }
    atomic_write(record_path(project, loop), (json.dumps(record, indent=2) + "\n").encode("utf-8"))


def _job(project: Project, loop: LoopName, interval_s: int, record: dict[str, Any] | None = None) -> Job:
    """A Job from the record when given (resume = the same unit), else from this process."""
    if record is not None:
        return Job(loop, project.root, project.loop_dir(loop), record["interval_seconds"],
                   record["python"], Path(record["runner"]), record["path"], recorded_git(record))
    path_env = os.environ.get("PATH", os.defpath)

    return Job(loop, project.root, project.loop_dir(loop), interval_s, sys.executable,
               Path(framework_home(), *RUNNER).resolve(), path_env, find_program("git", project.root, path_env) or "")


def recorded_git(record: dict[str, Any]) -> str:
    """schedule.json `git` (absolute), "" when absent (a record written before it existed)."""
    git = record.get("git", "")
    return git if isinstance(git, str) else ""


def default_interval(loop: Loop) -> int:
    """loop.json `schedule.interval_seconds`, else config.md's `interval_seconds` (seconds)."""
    config = loop.read_config()
    schedule = getattr(config, "schedule", None)
    value = getattr(schedule, "interval_seconds", None)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return int(loop_defaults()["interval_seconds"])


def _log(loop: Loop, event: LogEvent, out: Outcome) -> None:
    try:
        loop.log_event(event)
    except AutomatonError as exc:  # the unit changed already; say so rather than hide it
        out.warnings.append(f"schedule changed but {event.event.value} was not logged: {exc.message}")


def install_schedule(project: Project, name: str, interval_s: int | None = None, *,
                     system: str | None = None, own: tuple[str, ...] | None = None) -> Outcome:
    """`--install-schedule NAME [--interval SECONDS]`: write the tick script, install the unit.

    `system` defaults to `platform.system()` (Linux cron, Darwin launchd, Windows schtasks).
    Reinstalling replaces the unit. data: {ok, loop, system, scheduler, interval_seconds,
    tick_script, enabled}. A paused or halted loop gets the unit installed but disabled
    (enabled: false). Errors: BadInput (exit 2) for an untracked loop, a corrupt state, an
    interval the scheduler cannot fire exactly, an unsupported OS or a failing scheduler tool;
    Refused (exit 1) for a complete loop, a tampered state, a unit name already used by
    another project's loop, or automaton itself installed inside the project (`own`: its
    install's real paths, default `install_paths.own_roots()`): the schedule would run files
    an agent at work there can rewrite.
    """
    return install(Loop.resolve(project, name), interval_s, system=system, own=own)


def install(handle: Loop, interval_s: int | None = None, *, system: str | None = None,
            own: tuple[str, ...] | None = None) -> Outcome:
    """`install_schedule` of a resolved loop."""
    project, loop = handle.project, handle.name
    inside = install_paths.refusal(str(project.root), "--install-schedule", own)
    if inside is not None:
        raise Refused(inside)
    scheduler = for_system(system)
    sys_name = system or _platform()
    if handle.read_state().status == "complete":
        raise Refused(f"loop {loop} is complete (terminal): there is nothing to schedule")
    pace = default_interval(handle)
    interval = parse_interval(interval_s) or pace
    scheduler.check_interval(interval)
    job = _job(project, loop, interval)
    out = Outcome()
    if interval != pace:
        out.warnings.append(f"--interval {interval} s differs from loop.json's schedule.interval_seconds"
                            f" ({pace} s): --doctor will say so; to make {interval} s the"
                            " loop's own, set it in loop.json and approve it")
    if not job.runner.is_file():
        out.warnings.append(f"runner {job.runner} does not exist yet: scheduled ticks fail until it does")
    harness_exe = _resolve_harness(handle, job.path_env, out)
    if job.git:
        out.lines.append(f"git for the runner: {job.git}")
    else:
        out.warnings.append("no git outside the project is on the PATH the scheduled tick gets: install git"
                            " or fix PATH, then run --install-schedule again (a git inside the project never runs)")
    tick = job.tick_path(scheduler.tick_file)
    atomic_write(tick, scheduler.render_tick(job).encode("utf-8"))
    tick.chmod(0o755)
    out.lines.append(f"wrote {tick}")
    with locked(_lock_path(), timeout_s=LOCK_TIMEOUT_S):
        out.lines += scheduler.install(job)
    _write_record(project, loop, job, sys_name, enabled=True)
    # Read the status after the record exists: a halt from now on finds the record and
    # disables the unit itself; a pause or halt before now is handled here.
    status = handle.read_state().status
    enabled = status == "running"
    if not enabled:
        with locked(_lock_path(), timeout_s=LOCK_TIMEOUT_S):
            out.lines += scheduler.disable(job)
        _write_record(project, loop, job, sys_name, enabled=False)
        out.lines.append(f"loop {loop} is {status}: the schedule stays disabled until"
                         " --resume-loop (paused) or --approve --loop (halted)")
    _log(handle, LogEvent(Event.INSTALLED, {"scheduler": scheduler.kind, "interval_s": interval, "enabled": enabled}),
         out)
    out.data = {"ok": True, "loop": str(loop), "system": sys_name, "scheduler": scheduler.kind,
                "interval_seconds": interval, "tick_script": str(tick), "enabled": enabled,
                "harness_executable": harness_exe}
    return out


def _resolve_harness(loop: Loop, path_env: str, out: Outcome) -> str | None:
    """The harness executable resolved to an absolute path on the PATH the tick script exports
    (cron and launchd start jobs with a bare PATH). Not found: a warning now, because
    every scheduled tick would fail. None for the in-process `scripted` harness."""
    harness = loop.read_config().harness
    if harness.name == "scripted":
        return None
    if harness.name == "command":
        exe = harness.command[0] if harness.command else None
    else:
        exe = getattr(importlib.import_module(REGISTRY[harness.name]), "EXECUTABLE", None)
    if not exe:
        return None
    found = shutil.which(exe, path=path_env)
    if found is None:
        out.warnings.append(f"harness executable {exe!r} (harness.name {harness.name!r}) is not on the PATH the"
                            " scheduled tick gets: install it or fix PATH, then run --install-schedule again")
        return None
    resolved = str(Path(found).resolve())
    out.lines.append(f"harness {harness.name}: {resolved}")
    return resolved


def uninstall_schedule(project: Project, name: str, *, system: str | None = None) -> Outcome:
    """`--uninstall-schedule NAME`: remove the unit, the tick script and the record (idempotent).

    data: {ok, loop, system, scheduler, removed: [paths]}. Errors as install_schedule.
    """
    return uninstall(Loop.resolve(project, name), system=system)


def uninstall(handle: Loop, *, system: str | None = None) -> Outcome:
    """`uninstall_schedule` of a resolved loop."""
    project, loop = handle.project, handle.name
    out = Outcome()
    try:
        record = read_record(project, loop)
    except CorruptState as exc:
        record = None
        out.warnings.append(f"{exc.message}; removing the unit with this process's values")
    sys_name = record["system"] if record is not None and system is None else (system or _platform())
    scheduler = for_system(sys_name)
    job = _job(project, loop, 0, record)
    with locked(_lock_path(), timeout_s=LOCK_TIMEOUT_S):
        out.lines += scheduler.uninstall(job)
    removed = []
    for path in (job.tick_path(scheduler.tick_file), record_path(project, loop)):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed.append(str(path))
    out.lines += [f"removed {p}" for p in removed]
    _log(handle, LogEvent(Event.UNINSTALLED, {"scheduler": scheduler.kind}), out)
    out.data = {"ok": True, "loop": str(loop), "system": sys_name, "scheduler": scheduler.kind, "removed": removed}
    return out


def _set_enabled(project: Project, name: str, enabled: bool) -> str | None:
    word = "enable" if enabled else "disable"
    try:
        loop = LoopName.of(name)
        record = read_record(project, loop)
        if record is None:
            return None  # no schedule installed: nothing to do
        scheduler: Scheduler = for_system(record["system"])
        job = _job(project, loop, 0, record)
        with locked(_lock_path(), timeout_s=LOCK_TIMEOUT_S):
            if enabled:
                scheduler.enable(job)
            else:
                scheduler.disable(job)
        _write_record(project, loop, job, record["system"], enabled=enabled)
    except AutomatonError as exc:
        return f"could not {word} the schedule of loop {name!r}: {exc.message}"
    except Exception as exc:  # best effort by contract: a halt must never fail on its schedule
        return f"could not {word} the schedule of loop {name!r}: {type(exc).__name__}: {exc}"
    return None


def disable_best_effort(project: Project, name: str) -> str | None:
    """Stop the loop's unit firing (pause, halt). Returns a warning line, None when done or
    when no schedule is installed; never raises. Does not log (callers may hold the state lock)."""
    return _set_enabled(project, name, False)


def enable_best_effort(project: Project, name: str) -> str | None:
    """Re-install the same unit after a resume or an approval; a warning line or None; never raises."""
    return _set_enabled(project, name, True)


def _platform() -> str:
    return platform.system()
