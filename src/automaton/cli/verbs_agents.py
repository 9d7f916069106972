"""Adapters for the agent verbs: `--hook`, `--install-hooks`, `--install-prompts`.

`--hook` is on the path of every agent edit: it imports only the hook registry (stdlib), and
it owns its exit code (0 allow, 2 deny, never 1 or 3, which the agents treat as "allow").
"""

from __future__ import annotations

import sys

from automaton.core.errors import ExitCode
from automaton.core.outcome import Outcome

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (core/record.py says why)
if TYPE_CHECKING:  # argparse stays off the hook path (it runs before every agent edit)
    import argparse


def hook(ns: argparse.Namespace) -> Outcome:
    """Read the pre-tool JSON on stdin; allow = exit 0 and no output, deny = exit 2 + one stderr line."""
    try:
        from automaton.hooks import run

        text = "" if ns.hook == "git" else sys.stdin.read()
        answer = run(ns.hook, text, ns.project)
        code, message = answer.code, answer.message
    except BaseException as exc:  # fail closed: even a broken install or stdin blocks
        code, message = 2, f"automaton denied this tool call: the hook failed ({type(exc).__name__}: {exc})"
    if message:
        print(message, file=sys.stderr)
    return Outcome(code=ExitCode.OK if code == 0 else ExitCode.BAD_INPUT)


def install_hooks(ns: argparse.Namespace) -> Outcome:
    """Install the hook; for an agent (not git), also record `"sessions"` in the sealed
    `.automaton/config.json` (`commands.config_seal.record_sessions`); data["sessions"] holds
    its data."""
    from automaton.commands.config_seal import record_sessions
    from automaton.hooks.install import install
    from automaton.store.layout import Project

    project = Project.to_create(ns.project)
    out = install(project, ns.install_hooks)
    if ns.install_hooks == "git" or not out.ok:
        return out
    sessions = record_sessions(project)
    out.lines += sessions.lines
    out.warnings += sessions.warnings
    if out.data is not None:
        out.data["sessions"] = sessions.data
    return out


def install_prompts(ns: argparse.Namespace) -> Outcome:
    from automaton.commands.prompts import install_prompts as run
    from automaton.store.layout import Project

    return run(Project.to_create(ns.project), ns.install_prompts)
