"""Adapters from the parsed namespace to the task use cases (typed arguments in, Outcome out)."""

from __future__ import annotations

from pathlib import Path

from automaton import __version__
from automaton.cli.parser import UsageError
from automaton.core.errors import ExitCode
from automaton.core.outcome import Outcome
from automaton.store.layout import Project

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (core/record.py says why)
if TYPE_CHECKING:  # argparse stays off the fast paths (--hook, --can-edit, --audit ...)
    import argparse


def project_of(ns: argparse.Namespace) -> Project:
    return Project.at(ns.project)


def _need(ns: argparse.Namespace, flag: str, verb: str) -> str:
    value = getattr(ns, flag.lstrip("-").replace("-", "_"))
    if value is None or value == "":
        raise UsageError(f"{verb} needs {flag}")
    return str(value)


def version(ns: argparse.Namespace) -> Outcome:
    """`automaton <version>` (automaton.__version__); exit 0 always (a stable output)."""
    return Outcome(lines=[f"automaton {__version__}"], data={"version": __version__})


def create_task(ns: argparse.Namespace) -> Outcome:
    from automaton.commands.tasks import create_task as run

    return run(Project.to_create(ns.project), ns.create_task, ns.parent)


def transition(ns: argparse.Namespace) -> Outcome:
    from automaton.commands.tasks import transition as run

    return run(project_of(ns), _need(ns, "--task", "--transition"), ns.transition)


def approve(ns: argparse.Namespace) -> Outcome:
    """`--approve --task T [--to PHASE]` (cli/verbs_approve.py sends --loop and --config elsewhere)."""
    if ns.loop is not None and ns.task is not None:
        raise UsageError("--approve takes --task or --loop, not both")
    from automaton.commands.tasks import approve as run

    return run(project_of(ns), _need(ns, "--task", "--approve"), ns.to)


def focus(ns: argparse.Namespace) -> Outcome:
    from automaton.commands.focus import set_focus

    return set_focus(project_of(ns), ns.focus or None, ns.clear)


def phase(ns: argparse.Namespace) -> Outcome:
    from automaton.commands.tasks import phase as run

    return run(project_of(ns), _need(ns, "--task", "--phase"))


def validate_folder(ns: argparse.Namespace) -> Outcome:
    from automaton.commands.reports import validate_folder as run

    return run(project_of(ns), ns.task)


def audit(ns: argparse.Namespace) -> Outcome:
    from automaton.commands.loop_views import audit_section  # not commands.loops: it imports every loop verb
    from automaton.commands.reports import audit as run

    return run(project_of(ns), audit_section)


def can_edit(ns: argparse.Namespace) -> Outcome:
    """Exit 0 allowed / 1 denied; data {"allowed", "reason", "path"}."""
    file = _need(ns, "--file", "--can-edit")
    project = project_of(ns)
    # A relative --file is anchored at the current directory, or at the root given by --project.
    cwd = None if ns.project else Path.cwd()
    if ns.loop is not None:
        from automaton.commands.loops import can_edit_loop

        decision = can_edit_loop(project, ns.loop, file, loop_worktree=ns.loop_worktree, task=ns.task, cwd=cwd)
    else:
        if ns.loop_worktree:
            raise UsageError("--loop-worktree needs --loop NAME")
        from automaton.commands.can_edit import decide

        decision = decide(project, file, cwd=cwd, task=ns.task)
    word = "ALLOWED" if decision.allowed else "DENIED"
    return Outcome(
        code=ExitCode.OK if decision.allowed else ExitCode.REFUSED,
        lines=[f"{word}: {decision.reason}"],
        data={"allowed": decision.allowed, "reason": decision.reason, "path": decision.path},
    )
