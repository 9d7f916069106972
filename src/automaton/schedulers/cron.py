"""Linux cron: one tagged block per loop in the user's crontab (README.md#schedules).

Protocol facts: `crontab -l` with no table prints `no crontab for <user>` on
stderr and exits 1 (cronie `src/crontab.c`); `crontab -` installs stdin; an unescaped `%` in
the command becomes a newline (crontab(5)); a step only works within its field (`*/90` in the
minute field fires hourly), so longer intervals go to the hour field or are refused.

A block is the tag line `# automaton-loop:<name>` and the job line after it. Only automaton's
own lines are ever removed or replaced: a line after a tag that is not an automaton tick
command (a hand edit put the user's own job there) stays byte for byte, and only the stray
tag above it is dropped.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from automaton.core.errors import BadInput, Refused
from automaton.proc import run_capture
from automaton.schedulers import LOG_FILE, Job
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


def is_automaton_command(line: str) -> bool:
    """Whether crontab `line` is a job line `command()` writes, for any loop of any project:
    five time fields, then `'<dir>/run-tick.sh' >> '<dir>/schedule.log' 2>&1`."""
    fields = line.split(None, 5)
    if len(fields) != 6:
        return False
    try:
        words = shlex.split(fields[5].rstrip("\r\n").replace("\\%", "%"))
    except ValueError:  # unbalanced quotes: not a line automaton wrote
        return False
    if len(words) != 4 or words[1:4:2] != [">>", "2>&1"]:
        return False
    tick = PurePosixPath(words[0])
    return tick.is_absolute() and tick.name == SCHEDULER.tick_file and words[2] == str(tick.parent / LOG_FILE)


@dataclass
class Stripped:
    """What `strip_block` did: the new `table`; `removed`, this loop's blocks taken out;
    `foreign`, job lines of same-tag blocks of another project's automaton loop (kept);
    `stray`, lines after a same-tag line that are not automaton's (kept byte for byte, the
    tag above each dropped)."""

    table: str
    removed: int = 0
    foreign: list[str] = field(default_factory=list)
    stray: list[str] = field(default_factory=list)


def strip_block(table: str, job: Job) -> Stripped:
    """Remove this loop's blocks: the tag line `# automaton-loop:<name>` with the job line
    running this loop's script, and tag lines without a job line after them. A same-tag
    block of another project's loop is kept whole; a line after the tag that is not an
    automaton command keeps its bytes and loses only the tag. Every other line is kept byte
    for byte."""
    lines = table.splitlines(keepends=True)
    out = Stripped("")
    kept: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() != tag(job.name):
            kept.append(line)
            i += 1
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else None
        if nxt is None or nxt.strip() == "" or nxt.lstrip().startswith("#"):
            out.removed += 1  # a tag line left alone by a hand edit
            i += 1
        elif _owned_by(job, nxt):
            out.removed += 1
            i += 2
        elif is_automaton_command(nxt):
            out.foreign.append(nxt.rstrip("\r\n"))
            kept += [line, nxt]
            i += 2
        else:  # the user's own line under our tag: keep it exactly, drop the tag that mislabels it
            out.stray.append(nxt.rstrip("\r\n"))
            kept.append(nxt)
            i += 2
    out.table = "".join(kept)
    return out


def stray_notes(name: str, stray: list[str]) -> list[str]:
    """One line per stray tag dropped by `strip_block`."""
    return [f"crontab: dropped a stray '{tag(name)}' line above a line that is not automaton's; that line is"
            f" kept unchanged: {line}" for line in stray]


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
    """The cron scheduler: pause strips the block, resume re-adds the same block."""

    kind = "cron"
    tick_file = "run-tick.sh"

    def check_interval(self, interval_s: int) -> None:
        cron_spec(interval_s)

    def render_tick(self, job: Job) -> str:
        return render_sh(job)

    def install(self, job: Job) -> list[str]:
        line = job_line(job)  # validate before reading anything
        got = strip_block(read_table(), job)
        if got.foreign:
            raise Refused(
                f"the crontab already has a '{tag(job.name)}' block for another project's loop"
                f" ({got.foreign[0]}): run automaton --uninstall-schedule in that project (or, if it is"
                " gone, delete that tag line and the automaton tick line under it with crontab -e),"
                " or use another loop name"
            )
        write_table(add_block(got.table, job))
        verb = "replaced" if got.removed else "added"
        return [*stray_notes(job.name, got.stray), f"crontab: {verb} block '{tag(job.name)}': {line}"]

    def uninstall(self, job: Job) -> list[str]:
        return self._strip(job, "removed")

    def disable(self, job: Job) -> list[str]:
        return self._strip(job, "disabled (block removed)")

    def enable(self, job: Job) -> list[str]:
        return self.install(job)

    def _strip(self, job: Job, verb: str) -> list[str]:
        got = strip_block(read_table(), job)
        lines = [f"crontab: kept '{tag(job.name)}' block of another project: {f}" for f in got.foreign]
        lines += stray_notes(job.name, got.stray)
        if got.removed or got.stray:
            write_table(got.table)
        if not got.removed:
            return [*lines, f"crontab: no '{tag(job.name)}' block to remove"]
        return [*lines, f"crontab: {verb} '{tag(job.name)}'"]


SCHEDULER = Cron()
