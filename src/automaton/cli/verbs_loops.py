"""Adapters from the parsed namespace to the loop use cases (typed arguments in, Outcome out)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

from automaton.cli.parser import UsageError
from automaton.core.errors import AutomatonError
from automaton.core.outcome import Outcome
from automaton.store.layout import Project
from automaton.store.loops import Loop


def project_of(ns: argparse.Namespace) -> Project:
    """The project of `--project DIR` (default: found from the current directory)."""
    return Project.at(ns.project)


def _call(module: str, func: str, *args: Any, **kwargs: Any) -> Outcome:
    """Run `func` of use-case `module`, imported when its verb runs.

    This module holds the adapters of every loop verb; each imports its own use case when it
    runs, so `--loop-list` and `--check-gate` do not load what `--create-loop` or `--approve
    --loop` need (importing them all: 270 modules instead of 105 for `--loop-list`). The
    adapters below import their use cases inside the function for the same reason."""
    __import__(module)
    result: Outcome = getattr(sys.modules[module], func)(*args, **kwargs)
    return result


def _human(action: str) -> None:
    """Refused (exit 1, one line) unless a human runs `action`: a new loop or an OS schedule
    runs an agent unattended, so, like `--approve`, it is a human act whatever the agent
    hooks let through (`commands.human.require_human`)."""
    from automaton.commands.human import require_human  # lazy: the verb's own use case, see _call

    require_human(action)


def _known_loop(ns: argparse.Namespace, name: str) -> None:
    """BadInput (exit 2) naming close matches ("did you mean …") for a loop `name` that is not
    tracked: checked before a human act's terminal check, which would otherwise hide a typo."""
    Loop.resolve(project_of(ns), name)


def create_loop(ns: argparse.Namespace) -> Outcome:
    if not ns.from_template:
        raise UsageError("--create-loop needs --from-template T")
    _human("--create-loop")
    return _call("automaton.commands.loops", "create_loop", Project.to_create(ns.project), ns.create_loop,
                 ns.from_template, task=ns.task, variables=ns.var, worktree=not ns.no_worktree)


def list_templates(ns: argparse.Namespace) -> Outcome:
    return _call("automaton.commands.templates", "list_templates", project_of(ns))


def install_schedule(ns: argparse.Namespace) -> Outcome:
    interval: int | None = None
    if ns.interval is not None:
        try:
            interval = int(ns.interval)
        except ValueError:
            raise UsageError(f"--interval {ns.interval!r} is not a whole number of seconds") from None
    _known_loop(ns, ns.install_schedule)
    _human("--install-schedule")
    if ns.on is not None:
        return _call("automaton.commands.schedule_remote", "install_schedule_on", project_of(ns), ns.install_schedule,
                     interval, ns.on)
    return _call("automaton.commands.schedule", "install_schedule", project_of(ns), ns.install_schedule, interval)


def uninstall_schedule(ns: argparse.Namespace) -> Outcome:
    return _call("automaton.commands.schedule", "uninstall_schedule", project_of(ns), ns.uninstall_schedule)


def claim_loop_task(ns: argparse.Namespace) -> Outcome:
    """The claim in this checkout, or, with `--state-remote REMOTE` or a loop whose sealed
    loop.json names its `state_remote`, in that remote (`commands.remote_claims`: a human act,
    as every act on a state remote is; nothing is fetched for an agent)."""
    if ns.task is None:
        raise UsageError("--claim-loop-task NAME needs --task T")
    remote = getattr(ns, "state_remote", None)
    if remote is None:
        project = project_of(ns)
        try:
            remote = Loop.resolve(project, ns.claim_loop_task).read_config().state_remote
        except AutomatonError:  # an unknown loop or a bad loop.json: the local claim says which
            remote = None
    if remote is None:
        return _call("automaton.commands.claims", "claim_loop_task", project_of(ns), ns.claim_loop_task, ns.task)
    _human("--claim-loop-task with a state remote")
    # lazy: the verb's own use case, see _call; a bound loop's open tick is live for its reservation lifetime
    from automaton.runner.account import ttl_s

    return _call("automaton.commands.remote_claims", "claim_remote", project_of(ns), ns.claim_loop_task, ns.task,
                 remote, ttl_s)


def _remote(ns: argparse.Namespace, name: str, action: str, act: Callable[[], Outcome]) -> Outcome:
    """`act` as it is, or, with `--state-remote REMOTE`, on the loop's state in that remote
    (`commands.remote_state.remote_act`: fetch, apply, push with compare-and-swap). The
    human-act guard runs first: nothing is fetched for an agent."""
    if getattr(ns, "state_remote", None) is None:
        return act()
    _human(action)
    from automaton.commands import remote_state  # lazy: the verb's own use case, see _call

    return remote_state.remote_act(project_of(ns), name, ns.state_remote, act)


def pause_loop(ns: argparse.Namespace) -> Outcome:
    return _remote(ns, ns.pause_loop, "--pause-loop",
                   lambda: _call("automaton.commands.loops", "pause_loop", project_of(ns), ns.pause_loop))


def resume_loop(ns: argparse.Namespace) -> Outcome:
    return _remote(ns, ns.resume_loop, "--resume-loop",
                   lambda: _call("automaton.commands.loops", "resume_loop", project_of(ns), ns.resume_loop))


def approve_loop(ns: argparse.Namespace) -> Outcome:
    """`--approve --loop NAME [--yes]`: show the halt and, when a changed loop.json would be
    sealed, the diff of its sealed copy, ask (cli.confirm), then approve what was shown."""
    if ns.to is not None:
        raise UsageError("--to is for --approve --task; --approve --loop takes no phase")
    from automaton.cli.confirm import confirm  # lazy: the verb's own use case, see _call
    from automaton.commands import loops as uc

    project = project_of(ns)

    def act() -> Outcome:
        review = uc.review_loop(project, ns.loop)
        confirm(review, yes=bool(getattr(ns, "yes", False)), as_json=bool(ns.json))
        result: Outcome = uc.approve_loop(project, ns.loop, reviewed=review)
        return result

    return _remote(ns, ns.loop, "--approve", act)


def can_continue(ns: argparse.Namespace) -> Outcome:
    return _call("automaton.commands.loops", "can_continue", project_of(ns), ns.can_continue)


def check_gate(ns: argparse.Namespace) -> Outcome:
    # The use case's own module, not the commands.loops facade, which imports every loop verb.
    return _call("automaton.commands.loop_gate", "check_gate", project_of(ns), ns.check_gate, ns.task)


def loop_list(ns: argparse.Namespace) -> Outcome:
    return _call("automaton.commands.loop_views", "loop_list", project_of(ns))


def loop_status(ns: argparse.Namespace) -> Outcome:
    return _call("automaton.commands.loop_status", "loop_status", project_of(ns), ns.loop_status)


def spend(ns: argparse.Namespace) -> Outcome:
    if ns.state_remote is not None:
        return _call("automaton.commands.spend", "spend", ns.since, loop=ns.loop,
                     remote=(project_of(ns), ns.state_remote))
    return _call("automaton.commands.spend", "spend", ns.since, loop=ns.loop)


def publish_caps(ns: argparse.Namespace) -> Outcome:
    """`--publish-caps --state-remote REMOTE`: a human act (it may raise what every runner may
    spend), refused for an agent before anything is read."""
    from automaton.commands.human import require_human  # lazy: the verb's own use case, see _call

    if ns.state_remote is None:
        raise UsageError("--publish-caps needs --state-remote REMOTE (the remote every runner of the account uses)")
    by = require_human("--publish-caps")
    return _call("automaton.commands.remote_account", "publish_caps", project_of(ns), ns.state_remote, by,
                 int(time.time()))


def doctor(ns: argparse.Namespace) -> Outcome:
    return _call("automaton.commands.doctor", "doctor", project_of(ns), ns.loop, ns.state_remote)


def rearm_loop(ns: argparse.Namespace) -> Outcome:
    return _remote(ns, ns.rearm_loop, "--rearm-loop",
                   lambda: _call("automaton.commands.lifecycle", "rearm_loop", project_of(ns), ns.rearm_loop))


def remove_loop(ns: argparse.Namespace) -> Outcome:
    return _call("automaton.commands.lifecycle", "remove_loop", project_of(ns), ns.remove_loop,
                 delete_branch=bool(ns.delete_branch))


def upgrade_loops(ns: argparse.Namespace) -> Outcome:
    """`--upgrade-loops [--loop NAME] [--yes]`: a human act; lists the loop folders it would
    bootstrap, asks (cli.confirm.confirm_act), then bootstraps what was listed."""
    from automaton.cli.confirm import confirm_act  # lazy: the verb's own use case, see _call
    from automaton.commands import loops_upgrade as uc
    from automaton.commands.human import require_human

    project = project_of(ns)
    plan = uc.plan(project, ns.loop)  # read-only: a misspelt --loop is named before the human check
    who = require_human(uc.ACTION)
    if plan.candidates:
        confirm_act(list(plan.lines), f"Bootstrap {len(plan.candidates)} loop(s)? [y/N]", act=uc.ACTION,
                    yes=bool(ns.yes), as_json=bool(ns.json))
    return uc.upgrade_loops(project, plan, who)


def gc_worktrees(ns: argparse.Namespace) -> Outcome:
    """`--gc-worktrees [--yes]`: a human act; lists every loop worktree (remove or keep, and
    why), asks (cli.confirm.confirm_act) when one would go, then removes what was listed."""
    from automaton.cli.confirm import confirm_act  # lazy: the verb's own use case, see _call
    from automaton.commands import loops_gc as uc
    from automaton.commands.human import require_human

    who = require_human(uc.ACTION)
    project = project_of(ns)
    found = uc.survey(project)
    going = sum(f.goes for f in found)
    if going:
        confirm_act(uc.survey_lines(found), f"Remove {going} worktree(s)? [y/N]", act=uc.ACTION,
                    yes=bool(ns.yes), as_json=bool(ns.json))
    return uc.gc_worktrees(project, found, who)


def vram(ns: argparse.Namespace) -> Outcome:
    """`--vram [--json]`: the probe of automaton.vram; data is its dict."""
    from automaton.vram import probe  # lazy: the verb's own use case, see _call

    found: dict[str, Any] = probe()
    lines = [f"{key}: {value}" for key, value in found.items()]
    return Outcome(lines=lines, data=dict(found))
