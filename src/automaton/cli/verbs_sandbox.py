"""`automaton --sandbox [--task T] [--project DIR] -- CMD ARGS…`: run an agent CLI confined by the kernel.

The short form `automaton claude ARGS…` (codex, gemini, opencode, aider too) is the same as
`automaton --sandbox -- claude ARGS…` (`short_form`).

CMD runs in a forked child confined by the kernel (the rules are inherited by every process
the agent starts) on this terminal; this process stays outside the sandbox as a passive
supervisor (`sandbox.supervisor`) and, when CMD exits or the session gets SIGTERM/SIGHUP,
kills every process CMD left behind. CMD gets this environment without the user's credential
variables (`core.secrets.withheld`; one line on stderr names those withheld). Exit codes:
CMD's own once it runs (128 + N when signal N ended it); 1 no sandbox is available here; 2 bad
input (no command, unknown task); 126 the sandbox or the exec failed; 127 CMD not found.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence

from automaton.commands.focus import read_focus
from automaton.commands.human import AGENT_MARKERS, agent_ancestor, require_human
from automaton.commands.sandbox_session import AGENTS, plan
from automaton.core.errors import BadInput, ExitCode, Refused
from automaton.core.names import TaskRef
from automaton.core.secrets import withheld, without_credentials
from automaton.sandbox import available
from automaton.sandbox.supervisor import supervise
from automaton.store import tasks
from automaton.store.layout import Project

FLAG = "--sandbox"
# `automaton claude ARGS…` is `automaton --sandbox -- claude ARGS…`: the agent CLIs a session
# runs (commands.sandbox_session.AGENTS names the same ones, for their state folders).
AGENT_WORDS = ("claude", "codex", "gemini", "opencode", "aider")


def short_form(args: list[str]) -> list[str]:
    """`args` with a first word naming an agent CLI (AGENT_WORDS) spelled out as the sandbox
    wrapper `--sandbox -- AGENT ARGS…`; any other argv unchanged (a bare word that is not an
    agent stays the usage error it was)."""
    if args and args[0] in AGENT_WORDS:
        return [FLAG, "--", *args]
    return args


def wants(args: Sequence[str]) -> bool:
    """Whether argv asks for `--sandbox` (before any `--`)."""
    head = list(args)[: list(args).index("--")] if "--" in args else list(args)
    return FLAG in head


def split(args: Sequence[str]) -> tuple[str | None, str | None, list[str]]:
    """(task, project, command argv) from `--sandbox [--task T] [--project DIR] -- CMD…`;
    BadInput for anything else before `--`."""
    args = list(args)
    if "--" not in args:
        raise BadInput("usage: automaton --sandbox [--task T] [--project DIR] -- CMD ARGS…")
    cut = args.index("--")
    head, command = args[:cut], args[cut + 1:]
    opts: dict[str, str | None] = {"--task": None, "--project": None}
    i = 0
    while i < len(head):
        flag = head[i]
        if flag == FLAG:
            i += 1
            continue
        if flag in opts and i + 1 < len(head):
            opts[flag] = head[i + 1]
            i += 2
            continue
        raise BadInput(f"--sandbox does not take {flag!r} (usage: automaton --sandbox [--task T] -- CMD ARGS…)")
    return opts["--task"], opts["--project"], command


def run(args: Sequence[str]) -> int:
    """Plan, then run the command confined and supervised; its exit status."""
    task, project_dir, command = split(args)
    _refuse_widening(Project.at(project_dir), task)
    avail = available()
    if not avail.ok:
        print(f"automaton: sandbox_unavailable: {avail.detail}", file=sys.stderr)
        return int(ExitCode.REFUSED)
    session = plan(Project.at(project_dir), task, command)
    if not avail.isolated:
        if session.policy.isolation != "landlock-only":
            if session.policy.tmpdir is not None:
                shutil.rmtree(session.policy.tmpdir, ignore_errors=True)
            print(f"automaton: sandbox_unavailable: {avail.isolation_detail}"
                  ' (in .automaton/config.json, sealed by automaton --approve --config)', file=sys.stderr)
            return int(ExitCode.REFUSED)
        print(f'automaton --sandbox: "isolation": "landlock-only" and {avail.isolation_detail}', file=sys.stderr)
    for line in session.lines:
        print(line, file=sys.stderr)
    agent = AGENTS.get(os.path.basename(command[0]), "command")
    held = withheld(os.environ, agent)
    if held:
        print(f"automaton --sandbox: credential variables withheld from {command[0]}: {', '.join(held)}",
              file=sys.stderr)
    return supervise(command, dict(without_credentials(os.environ, agent), **session.env, AUTOMATON_SANDBOX="1"),
                     session.policy)


def _refuse_widening(project: Project, task: str | None) -> None:
    """`--sandbox` is a human's way to start an agent, never an agent's way to widen its own
    session: Refused (exit 1) inside an agent's session (its marker variables or an agent in
    the process's ancestry, `commands.human`), and for `--task T` naming a task other than
    the focus unless a human runs it (a terminal or AUTOMATON_APPROVER)."""
    marker = next((m for m in AGENT_MARKERS if os.environ.get(m)), None)
    why = f"{marker} is set" if marker is not None else agent_ancestor()
    if why is not None:
        raise Refused(f"--sandbox starts an agent for a human and this process may be an agent's ({why}):"
                      " run it from your own terminal")
    if task is not None and TaskRef.parse(task) != read_focus(project):
        tasks.load(project, TaskRef.parse(task))  # an unknown task is bad input (exit 2) first
        require_human(f"--sandbox --task {task} (not the focused task)")

