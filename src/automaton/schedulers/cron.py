"""Linux cron: one tagged block per loop in the user's crontab (seed 000 R6, DESIGN §9).

Protocol facts (PROTOCOLS §6.2): `crontab -l` with no table prints `no crontab for <user>` on
stderr and exits 1 (cronie `src/crontab.c`); `crontab -` installs stdin; an unescaped `%` in
the command becomes a newline (crontab(5)); a step only works within its field (`*/90` in the
minute field fires hourly), so longer intervals go to the hour field or are refused.
"""

from __future__ import annotations

import shlex

from automaton.core.errors import BadInput, Refused
from automaton.proc import run_capture
from automaton.schedulers import Job
from automaton.schedulers.tickscript import render_sh

TAG_PREFIX = "# automaton-loop:"
_MINUTE_STEPS = [m for m in range(1, 60) if 60 % m == 0]  # 1 2 3 4 5 6 10 12 15 20 30
_HOUR_STEPS = [h for h in range(1, 24) if 24 % h == 0]  # 1 2 3 4 6 8 12
VALID_HINT = (
    "cron can fire every " + "/".join(map(str, _MINUTE_STEPS)) + " minutes, every "
    + "/".join(map(str, _HOUR_STEPS)) + " hours, or daily: use --interval "
    + ", ".join(str(m * 60) for m in (1, 5, 15, 30)) + ", 3600, 7200 or 86400 (seconds)"
)


def tag(name: str) -> str:
    """The tag line of a loop's block, e.g. `# automaton-loop:demo`."""
    return f"{TAG_PREFIX}{name}"


def cron_spec(interval_s: int) -> str:
    """The five time fields firing every `interval_s` seconds; BadInput when cron cannot.

    60..1800 s dividing an hour -> `*/N * * * *`; whole hours dividing a day -> `0 */H * * *`;
    86400 -> `0 0 * * *`. Anything else (90 min, 45 s, 7 min) is refused, never `*/90`.
    """
    if interval_s <= 0 or interval_s % 60:
        raise BadInput(f"--interval {interval_s} s is not a whole number of minutes; {VALID_HINT}")
    minutes = interval_s // 60
    if minutes in _MINUTE_STEPS:
        return "* * * * *" if minutes == 1 else f"*/{minutes} * * * *"
    if minutes % 60 == 0 and minutes // 60 in _HOUR_STEPS:
        hours = minutes // 60
        return "0 * * * *" if hours == 1 else f"0 */{hours} * * *"
    if minutes == 24 * 60:
        return "0 0 * * *"
    raise BadInput(f"--interval {interval_s} s ({minutes} min) cannot be expressed exactly in cron; {VALID_HINT}")


def escape_percent(command: str) -> str:
    """Escape `%` as `\\%` (crontab(5): an unescaped `%` ends the command, the rest goes to stdin)."""
    return command.replace("%", "\\%")


def command(job: Job) -> str:
    """The command field: the tick script, output appended to the loop's schedule.log."""
    for value in (str(job.loop_dir), str(job.project_root)):
        if "\n" in value or "\r" in value:
            raise BadInput(f"path {value!r} contains a line break and cannot go in a crontab line")
    tick = shlex.quote(str(job.tick_path(SCHEDULER.tick_file)))
    return escape_percent(f"{tick} >> {shlex.quote(str(job.log_path))} 2>&1")


def job_line(job: Job) -> str:
    """One crontab line (no newline): `<spec> <command>`."""
    return f"{cron_spec(job.interval_s)} {command(job)}"


def _owned_by(job: Job, line: str) -> bool:
    fields = line.split(None, 5)
    ours = escape_percent(shlex.quote(str(job.tick_path(SCHEDULER.tick_file))))
    return len(fields) == 6 and (fields[5].rstrip("\r\n") == ours or fields[5].startswith(ours + " "))


def strip_block(table: str, job: Job) -> tuple[str, int, list[str]]:
    """Remove the blocks tagged exactly `# automaton-loop:<name>` that run this loop's script.

    Returns (new table, blocks removed, job lines of same-tag blocks that belong to another
    project's loop and were kept). Every other line is kept byte for byte.
    """
    lines = table.splitlines(keepends=True)
    kept: list[str] = []
    foreign: list[str] = []
    removed = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() != tag(job.name):
            kept.append(line)
            i += 1
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else None
        is_job = nxt is not None and nxt.strip() != "" and not nxt.lstrip().startswith("#")
        if nxt is not None and is_job and not _owned_by(job, nxt):
            foreign.append(nxt.rstrip("\r\n"))
            kept += [line, nxt]
        else:  # our block, or an orphan tag line left by a hand edit
            removed += 1
        i += 2 if is_job else 1
    return "".join(kept), removed, foreign


def add_block(table: str, job: Job) -> str:
    """`table` with this loop's block (tag line + job line) appended; always ends in a newline."""
    if table and not table.endswith("\n"):
        table += "\n"  # cron ignores a last line without a newline; ours must not join it
    return f"{table}{tag(job.name)}\n{job_line(job)}\n"


def read_table() -> str:
    """The user's crontab text; "" when there is none. BadInput on any other failure."""
    got = run_capture(["crontab", "-l"], exact_bytes=True)  # foreign lines stay byte-identical (CRLF too)
    if got.code == 0:
        return got.out
    if got.code == 1 and "no crontab for" in got.err:
        return ""
    if got.code == 127:
        raise BadInput("crontab not found on PATH: install cron (e.g. cronie) to schedule loops")
    raise BadInput(f"crontab -l failed (exit {got.code}): {got.err.strip()}; the crontab was left unchanged")


def write_table(text: str) -> None:
    """Install `text` with `crontab -` (stdin); BadInput when crontab refuses it."""
    got = run_capture(["crontab", "-"], stdin=text, exact_bytes=True)
    if got.code != 0:
        raise BadInput(f"crontab - failed (exit {got.code}): {got.err.strip()}; the crontab was left unchanged")


class Cron:
    """The cron scheduler: pause strips the block, resume re-adds the same block (seed R6)."""

    kind = "cron"
    tick_file = "run-tick.sh"

    def check_interval(self, interval_s: int) -> None:
        cron_spec(interval_s)

    def render_tick(self, job: Job) -> str:
        return render_sh(job)

    def install(self, job: Job) -> list[str]:
        line = job_line(job)  # validate before reading anything
        table, removed, foreign = strip_block(read_table(), job)
        if foreign:
            raise Refused(
                f"the crontab already has a '{tag(job.name)}' block for another project's loop"
                f" ({foreign[0]}): uninstall it there (or, if that project is gone, delete those two"
                " lines with crontab -e), or use another loop name"
            )
        write_table(add_block(table, job))
        verb = "replaced" if removed else "added"
        return [f"crontab: {verb} block '{tag(job.name)}': {line}"]

    def uninstall(self, job: Job) -> list[str]:
        return self._strip(job, "removed")

    def disable(self, job: Job) -> list[str]:
        return self._strip(job, "disabled (block removed)")

    def enable(self, job: Job) -> list[str]:
        return self.install(job)

    def _strip(self, job: Job, verb: str) -> list[str]:
        before = read_table()
        table, removed, foreign = strip_block(before, job)
        lines = [f"crontab: kept '{tag(job.name)}' block of another project: {f}" for f in foreign]
        if not removed:
            return [*lines, f"crontab: no '{tag(job.name)}' block to remove"]
        write_table(table)
        return [*lines, f"crontab: {verb} '{tag(job.name)}'"]


SCHEDULER = Cron()
