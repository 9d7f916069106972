"""What is installed to fire a loop, read back from the OS scheduler (read-only).

`--install-schedule` records what it installed in `<loop>/schedule.json`; this module checks
that record against the unit that really exists (the crontab block, the LaunchAgent plist, the
schtasks task) and works out the next fire. `--loop-status` and `--doctor` share it.
"""

from __future__ import annotations

import itertools
import plistlib
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from automaton.commands import schedule
from automaton.core.errors import AutomatonError
from automaton.core.names import LoopName
from automaton.proc import run_capture
from automaton.schedulers import Job, cron, for_system, launchd, schtasks
from automaton.store.layout import Project

_FIELD = re.compile(r"^(\*|\*/\d+|\d+)$")
TICK_FILES = ("run-tick.sh", "run-tick.bat")


def job_of(project: Project, loop: LoopName, record: dict[str, Any]) -> Job:
    """The Job `record` (schedule.json) describes: the unit as it was installed."""
    return Job(loop, project.root, project.loop_dir(loop), record["interval_seconds"], record["python"],
               Path(record["runner"]), record["path"], schedule.recorded_git(record))


def schedule_info(project: Project, loop: LoopName, *, now: datetime | None = None,
                  last_tick_at: str | None = None) -> dict[str, Any]:
    """The loop's schedule as installed. Shape:

    {installed: bool (a record or a tick script exists), system: "Linux"|"Darwin"|"Windows"|None,
     scheduler: "cron"|"launchd"|"schtasks"|None, interval_seconds: int|None (seconds, as
     recorded), enabled: bool|None (as recorded), unit: "present"|"disabled"|"missing"|"unknown",
     spec: str|None (the crontab time fields as installed), path: str|None (the PATH the tick
     script exports), python: str|None, runner: str|None, next_fire: str|None (ISO-8601 UTC),
     next_fire_exact: bool (False: launchd fires N seconds after its previous fire, estimated
     from `last_tick_at`), problem: str|None (one line: why the record and the unit disagree,
     or why they cannot be read)}.
    `now` (an aware datetime) is for tests; cron fields are read in local time, as cron does.
    """
    info: dict[str, Any] = {"installed": False, "system": None, "scheduler": None, "interval_seconds": None,
                            "enabled": None, "unit": "missing", "spec": None, "path": None, "python": None,
                            "runner": None, "next_fire": None, "next_fire_exact": False, "problem": None}
    try:
        record = schedule.read_record(project, loop)
    except AutomatonError as exc:
        info.update(installed=True, unit="unknown", problem=exc.message)
        return info
    if record is None:
        if any((project.loop_dir(loop) / name).exists() for name in TICK_FILES):
            info.update(installed=True, unit="unknown",
                        problem=f"a tick script exists but no {schedule.RECORD_FILE}: the unit cannot be checked;"
                                f" run automaton --install-schedule {loop} (or --uninstall-schedule {loop})")
        return info
    info.update(installed=True, system=record["system"], interval_seconds=record["interval_seconds"],
                enabled=record["enabled"], path=record["path"], python=record["python"], runner=record["runner"])
    try:
        scheduler = for_system(record["system"])
        info["scheduler"] = scheduler.kind
        job = job_of(project, loop, record)
        reader = {"cron": _cron, "launchd": _launchd, "schtasks": _schtasks}[scheduler.kind]
        reader(job, info, now or datetime.now().astimezone(), last_tick_at)
    except AutomatonError as exc:
        info.update(unit="unknown", problem=exc.message)
    if info["unit"] == "missing" and record["enabled"]:
        info["problem"] = (f"{schedule.RECORD_FILE} records a {info['scheduler']} schedule, but the {info['scheduler']}"
                           f" unit is gone: run automaton --install-schedule {loop}")
    return info


def _cron(job: Job, info: dict[str, Any], now: datetime, _last: str | None) -> None:
    lines = cron.read_table().splitlines()
    mine = cron.command(job)
    for tag, line in itertools.pairwise(lines):
        fields = line.split(None, 5)
        if tag.strip() == cron.tag(job.name) and len(fields) == 6 and fields[5].rstrip("\r") == mine:
            info.update(unit="present", spec=" ".join(fields[:5]))
            nxt = next_cron_fire(info["spec"], now)
            info.update(next_fire=_iso(nxt), next_fire_exact=nxt is not None)
            return
    # cron has no "disabled" unit: a pause or halt removes the block, schedule.json keeps enabled false
    info["unit"] = "missing" if info["enabled"] else "disabled"


def _launchd(job: Job, info: dict[str, Any], now: datetime, last: str | None) -> None:
    live, parked = launchd.plist_path(job.name), launchd.disabled_path(job.name)
    if not live.exists():
        info["unit"] = "disabled" if parked.exists() else "missing"
        return
    info["unit"] = "present"
    try:
        interval = int(plistlib.loads(live.read_bytes()).get("StartInterval", job.interval_s))
    except (OSError, ValueError, plistlib.InvalidFileException, AttributeError):
        interval = job.interval_s
    info["spec"] = f"StartInterval {interval}"
    base = _parse_iso(last)
    if base is not None:
        nxt = base + timedelta(seconds=interval)
        info["next_fire"] = _iso(max(nxt, now))


def _schtasks(job: Job, info: dict[str, Any], _now: datetime, _last: str | None) -> None:
    got = run_capture(["schtasks", "/query", "/tn", schtasks.task_name(job.name), "/fo", "LIST", "/v"])
    if got.code == 127:
        info.update(unit="unknown", problem="schtasks not found on PATH: the task cannot be checked")
        return
    if got.code != 0:
        info["unit"] = "missing"
        return
    text = got.out
    info["unit"] = "disabled" if re.search(r"Scheduled Task State:\s*Disabled", text) else "present"
    found = re.search(r"Next Run Time:\s*(.+)", text)
    info["spec"] = "schtasks " + " ".join(schtasks.schedule_args(job.interval_s))
    if found:  # local time in the machine's own format: shown as written
        info["next_fire"] = found.group(1).strip()


def next_cron_fire(spec: str, now: datetime) -> datetime | None:
    """The first minute after `now` (aware, local time) that the cron time fields `spec` fire
    at; None for a spec other than minute/hour fields of `*`, `*/N` or `N` with the rest `*`
    (a hand-edited line: not guessed at)."""
    parts = spec.split()
    if len(parts) != 5 or parts[2:] != ["*", "*", "*"] or not all(_FIELD.match(p) for p in parts[:2]):
        return None
    t = now.replace(second=0, microsecond=0) + timedelta(minutes=1)
    for _ in range(2 * 24 * 60):
        if _matches(parts[0], t.minute) and _matches(parts[1], t.hour):
            return t
        t += timedelta(minutes=1)
    return None


def _matches(field: str, value: int) -> bool:
    if field == "*":
        return True
    if field.startswith("*/"):
        step = int(field[2:])
        return step > 0 and value % step == 0
    return value == int(field)


def _iso(when: datetime | None) -> str | None:
    return None if when is None else when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_iso(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
