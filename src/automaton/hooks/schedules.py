"""Scheduler commands in a shell line: what could drop a loop's schedule or install a job.

The loop ticks run from the user's scheduler (`schedulers.cron`, `.launchd`, `.schtasks`). An
agent that rewrites it could remove the brakes' schedule (`crontab -r`) or install a job that
runs `automaton --approve` later, outside any hook (a job's environment is not the agent's).
So every writing form is denied and only reading passes:

- crontab(1): only `crontab -l` (optionally `-u USER`) and `-V` read; `crontab FILE`,
  `crontab -`, `… | crontab -`, bare `crontab` (reads stdin), `-r`, `-e`, `-i` write;
- launchctl(1): `bootstrap`, `bootout`, `load`, `unload`, `remove`, `submit`, `enable`,
  `disable` (legacy and 2.0 subcommands);
- schtasks (Windows): `/create`, `/delete`, `/change` (also spelled with `-`), and the
  PowerShell cmdlets `Register-`/`Unregister-`/`Set-`/`Enable-`/`Disable-ScheduledTask`;
- systemctl(1): `enable`, `disable`, `start`, `stop` and the other unit-changing verbs of any
  `--user` unit (the hook cannot know which user unit runs the ticks) or of a unit whose name
  mentions automaton; `status`, `list-*`, `show`, `cat`, `is-*` read.
"""

from __future__ import annotations

from automaton.hooks.shellparse import Program, Unsafe, operands

_CRONTAB_READ = frozenset({"-l", "-V", "--version"})
LAUNCHCTL_WRITE = frozenset({"bootstrap", "bootout", "load", "unload", "remove", "submit", "enable", "disable"})
SCHTASKS_WRITE = frozenset({"create", "delete", "change"})
SCHEDULED_TASK_CMDLETS = frozenset({"register-scheduledtask", "unregister-scheduledtask", "set-scheduledtask",
                                    "enable-scheduledtask", "disable-scheduledtask", "new-scheduledtask"})
SYSTEMCTL_WRITE = frozenset({"enable", "disable", "start", "stop", "restart", "try-restart", "reload",
                             "reload-or-restart", "try-reload-or-restart", "kill", "mask", "unmask", "link",
                             "reenable", "preset", "preset-all", "revert", "edit", "isolate", "set-property",
                             "add-wants", "add-requires", "daemon-reload", "clean", "freeze", "thaw"})


def check(prog: Program) -> None:
    """Raise Unsafe when `prog` changes a scheduler (see the module docstring)."""
    name, args = prog.name, prog.args
    if name == "crontab" and not _crontab_reads(args):
        raise Unsafe("crontab would replace or remove the schedules (automaton's loop ticks among them):"
                     " an agent may only list them (crontab -l)")
    if name == "launchctl":
        verbs = operands(args)
        if verbs and verbs[0].lower() in LAUNCHCTL_WRITE:
            raise Unsafe(f"launchctl {verbs[0]} changes the launchd jobs that run automaton's loop ticks:"
                         " a human does that")
    if name == "schtasks" and any(a[:1] in "/-" and a[1:].lower() in SCHTASKS_WRITE for a in args):
        raise Unsafe("schtasks /create, /delete and /change change the scheduled tasks that run automaton's"
                     " loop ticks: a human does that")
    if name in SCHEDULED_TASK_CMDLETS:
        raise Unsafe(f"{name} changes scheduled tasks: a human does that")
    if name == "systemctl":
        verbs = operands(args, frozenset({"-t", "--type", "-s", "--signal", "-H", "--host", "-M", "--machine",
                                          "-p", "--property", "--state", "-n", "--lines", "-o", "--output",
                                          "--root", "--job-mode", "--kill-whom"}))
        user = any(a == "--user" for a in args)
        if verbs and verbs[0].lower() in SYSTEMCTL_WRITE and (
                user or any("automaton" in v.lower() for v in verbs[1:])):
            raise Unsafe(f"systemctl {verbs[0]} of a user or automaton unit can stop or start automaton's"
                         " loop ticks: a human does that")


def _crontab_reads(args: list[str]) -> bool:
    """crontab(1): `[-u USER] -l` lists; everything else installs, edits or removes a crontab."""
    rest = list(args)
    if rest[:1] == ["-u"] and len(rest) >= 2:
        rest = rest[2:]
    return bool(rest) and all(a in _CRONTAB_READ for a in rest)
