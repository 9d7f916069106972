"""`--approve`: the human sign-off of a task, a loop (`--loop NAME`) or the project config (`--config`).

A loop or config approval first gets the use case's Review (what it would seal), shows it and,
when a changed file would be sealed, asks at the terminal (`--yes` approves without the
question); then it hands the Review back to the approval, which is bound to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

from automaton.cli.confirm import confirm
from automaton.cli.verbs_loops import approve_loop
from automaton.cli.verbs_tasks import approve as approve_task
from automaton.cli.verbs_tasks import project_of
from automaton.commands import rollback
from automaton.commands.config_seal import approve_config as run
from automaton.commands.config_seal import review_config
from automaton.core.outcome import Outcome


def approve(ns: argparse.Namespace) -> Outcome:
    if ns.config:
        return approve_config(ns)
    if ns.loop is not None and ns.task is None:
        return approve_loop(ns)

    return approve_task(ns)  # --task (and the usage errors of --task with --loop)


def approve_config(ns: argparse.Namespace) -> Outcome:
    """`--approve --config [--yes]`: show the diff of the sealed copy, ask, seal."""
    project = project_of(ns)
    review = review_config(project)
    confirm(review, yes=ns.yes, as_json=ns.json)
    return run(project, review)


def accept_rollback(ns: argparse.Namespace) -> Outcome:
    """`--accept-rollback --task T | --loop NAME | --config [--yes]`: show what is lost, ask, re-anchor."""
    project = project_of(ns)
    target = rollback.target(project, task=ns.task, loop=ns.loop, config=ns.config)
    review = rollback.review(project, target)
    confirm(review, yes=ns.yes, as_json=ns.json)
    return rollback.accept(project, target, review)
