"""The tick scripts a scheduler fires: `run-tick.sh` and `run-tick.bat` (docs/architecture.md#stable-interfaces)."""

from __future__ import annotations

import re

from automaton.core.errors import BadInput
from automaton.proc import PINNED_GIT_ENV
from automaton.schedulers import Job

# bash(1) QUOTING: inside double quotes only $ ` \ " (and ! with history expansion, which is
# off in scripts) keep a special meaning; escaping those four makes any text one literal word.
_DQ_SPECIAL = re.compile(r'([\\"$`])')


def dq(value: str) -> str:
    """`value` as one double-quoted bash word, e.g. `"/my \\"proj\\""`; keeps the script's stable shape."""
    if "\0" in value:
        raise BadInput(f"value {value!r} contains a NUL byte and cannot be put in a script")
    return '"' + _DQ_SPECIAL.sub(r"\\\1", value) + '"'


def render_sh(job: Job) -> str:
    """`run-tick.sh`: the stable three lines (shebang, `cd`, the runner), plus the install-time PATH
    and, when one was found, the git the runner runs (`export AUTOMATON_GIT=…`, absolute, outside
    the project: `proc.program`).

    The interpreter and runner are absolute (cron/launchd have a bare PATH); every value is
    double-quoted with `dq`, so paths with spaces, quotes or `$` stay one literal word.
    """
    git = f"export {PINNED_GIT_ENV}={dq(job.git)}\n" if job.git else ""
    return (
        "#!/usr/bin/env bash\n"
        f"# automaton loop tick for {job.name}: written by automaton --install-schedule; do not edit.\n"
        f"export PATH={dq(job.path_env)}\n"
        f"{git}"
        f"cd {dq(str(job.project_root))} || exit 2\n"
        f"exec {dq(job.python)} {dq(str(job.runner))} --mode tick --loop {dq(job.name)}\n"
    )


def _bat_value(value: str) -> str:
    # cmd.exe: inside "..." only % (expansion, doubled to escape) is special in a batch file;
    # a " cannot be escaped there, and Windows file names cannot contain one anyway.
    if '"' in value or "\n" in value or "\r" in value or "\0" in value:
        raise BadInput(f"value {value!r} contains a quote or line break and cannot be put in run-tick.bat")
    return value.replace("%", "%%")


def render_bat(job: Job) -> str:
    """`run-tick.bat` (Windows): cd /d to the project, then the runner, CRLF lines."""
    lines = [
        "@echo off",
        f"rem automaton loop tick for {job.name}: written by automaton --install-schedule; do not edit.",
        f'set "PATH={_bat_value(job.path_env)}"',
        *([f'set "{PINNED_GIT_ENV}={_bat_value(job.git)}"'] if job.git else []),
        f'cd /d "{_bat_value(str(job.project_root))}" || exit /b 2',
        f'"{_bat_value(job.python)}" "{_bat_value(str(job.runner))}" --mode tick --loop "{job.name}"',
    ]
    return "\r\n".join(lines) + "\r\n"
