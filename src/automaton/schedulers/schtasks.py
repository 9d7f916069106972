"""Windows Task Scheduler through `schtasks` argv lists, never a shell (README.md#schedules).

Protocol facts (Microsoft schtasks-create/-change/-delete): `/sc minute /mo N`
takes N in 1..1439; `/sc daily /mo N` 1..365; `/tr` is at most 262 characters and a path with
spaces is quoted inside it; `/f` overwrites or skips confirmation; `/change /disable|/enable`;
`/delete /tn X /f`. `/tn *` would delete every task, so the name is always a validated
kebab-case LoopName under a fixed prefix.
"""

from __future__ import annotations

from automaton.core.errors import BadInput
from automaton.core.names import LoopName
from automaton.proc import run_capture
from automaton.schedulers import Job
from automaton.schedulers.tickscript import render_bat

TR_MAX = 262
MINUTE_MAX = 1439
DAILY_MAX = 365


def task_name(name: str) -> str:
    """`AutomatonLoop_<name>`; re-validates the name so no wildcard can ever reach /tn."""
    return f"AutomatonLoop_{LoopName.of(name)}"


def schedule_args(interval_s: int) -> list[str]:
    """`/sc minute /mo N` (1..1439 min) or `/sc daily /mo D` for whole days; BadInput otherwise."""
    if interval_s <= 0 or interval_s % 60:
        raise BadInput(
            f"--interval {interval_s} s is not a whole number of minutes: schtasks fires every"
            f" 1..{MINUTE_MAX} minutes (60..{MINUTE_MAX * 60} s) or every whole day"
        )
    minutes = interval_s // 60
    if minutes <= MINUTE_MAX:
        return ["/sc", "minute", "/mo", str(minutes)]
    if minutes % 1440 == 0 and minutes // 1440 <= DAILY_MAX:
        return ["/sc", "daily", "/mo", str(minutes // 1440)]
    raise BadInput(
        f"--interval {interval_s} s: schtasks fires every 1..{MINUTE_MAX} minutes or every"
        f" 1..{DAILY_MAX} whole days"
    )


def tr_value(job: Job) -> str:
    """The /tr text: the quoted path of run-tick.bat (the .bat does the cd and the runner)."""
    value = f'"{job.tick_path(SCHEDULER.tick_file)}"'
    if len(value) > TR_MAX:
        raise BadInput(
            f"schtasks /tr is limited to {TR_MAX} characters and {value} has {len(value)}:"
            " move the project to a shorter path"
        )
    return value


def create_argv(job: Job) -> list[str]:
    """`schtasks /create /tn AutomatonLoop_<name> /tr "<bat>" /sc minute /mo N /f` as a list."""
    return ["schtasks", "/create", "/tn", task_name(job.name), "/tr", tr_value(job),
            *schedule_args(job.interval_s), "/f"]


def change_argv(name: str, enable: bool) -> list[str]:
    return ["schtasks", "/change", "/tn", task_name(name), "/enable" if enable else "/disable"]


def delete_argv(name: str) -> list[str]:
    return ["schtasks", "/delete", "/tn", task_name(name), "/f"]


def _run(argv: list[str]) -> tuple[int, str]:
    got = run_capture(argv)
    if got.code == 127:
        raise BadInput("schtasks not found on PATH: it ships with Windows in System32")
    return got.code, (got.err or got.out).strip()


class Schtasks:
    """The Windows scheduler: pause/resume = `/change /disable|/enable`; uninstall = `/delete`."""

    kind = "schtasks"
    tick_file = "run-tick.bat"

    def check_interval(self, interval_s: int) -> None:
        schedule_args(interval_s)

    def render_tick(self, job: Job) -> str:
        return render_bat(job)

    def install(self, job: Job) -> list[str]:
        argv = create_argv(job)
        code, msg = _run(argv)
        if code != 0:
            raise BadInput(f"schtasks /create failed (exit {code}): {msg}")
        return [f"schtasks: created task {task_name(job.name)} ({' '.join(argv[6:-1])})"]

    def uninstall(self, job: Job) -> list[str]:
        code, msg = _run(delete_argv(job.name))
        if code != 0:  # most often: the task does not exist (already removed)
            return [f"schtasks: task {task_name(job.name)} not deleted (exit {code}): {msg}"]
        return [f"schtasks: deleted task {task_name(job.name)}"]

    def disable(self, job: Job) -> list[str]:
        return self._change(job, enable=False)

    def enable(self, job: Job) -> list[str]:
        return self._change(job, enable=True)

    def _change(self, job: Job, enable: bool) -> list[str]:
        word = "enable" if enable else "disable"
        code, msg = _run(change_argv(job.name, enable))
        if code != 0:
            raise BadInput(f"schtasks /change /{word} of {task_name(job.name)} failed (exit {code}): {msg}")
        return [f"schtasks: {word}d task {task_name(job.name)}"]


SCHEDULER = Schtasks()
