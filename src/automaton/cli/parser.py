"""The one argparse parser of the flag interface, built from a declarative table.

Each action flag is a *verb*; exactly one verb per call. `VERBS` maps a verb to the
`module:function` adapter that runs it, imported lazily so the hook path stays fast.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (core/record.py says why)
if TYPE_CHECKING:  # argparse and typing stay off the hook path (it runs before every agent edit)
    import argparse
    from typing import Any

# (flags, argparse keyword arguments). Grouped for --help; order is the help order.
TASK_FLAGS: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    (("--create-task",), {"metavar": "NAME", "help": "create tasks/NAME/ with .state = new"}),
    (("--parent",), {"metavar": "P", "help": "with --create-task: create a sub-task of P"}),
    (("--transition",), {"metavar": "PHASE", "help": "move --task to PHASE if every rule allows"}),
    (("--task",), {"metavar": "T", "help": "task name, or PARENT/SUB for a sub-task"}),
    (("--approve",), {"action": "store_true", "help": "human sign-off (with --task, --loop or --config)"}),
    (("--to",), {"metavar": "PHASE", "help": "with --approve --task: leave human_intervention / re-seal"}),
    (("--config",), {"action": "store_true", "help": "with --approve: seal .automaton/config.json"}),
    (("--yes",), {"action": "store_true",
                  "help": "with --approve --loop/--config: approve the diff shown without asking;"
                          " with --upgrade-loops, --gc-worktrees: do what was listed without asking"}),
    (("--accept-rollback",), {"action": "store_true", "help": "human act: accept a restored older copy of"
                              " --task, --loop or --config (shows what is lost, asks)"}),
    (("--focus",), {"nargs": "?", "const": "", "metavar": "T", "help": "set the task the agent hooks enforce"}),
    (("--clear",), {"action": "store_true", "help": "with --focus: clear the focus"}),
    (("--phase",), {"action": "store_true", "help": "print the phase of --task"}),
    (("--validate-folder",), {"action": "store_true", "help": "check task folders (read-only)"}),
    (("--audit",), {"action": "store_true", "help": "report every task and loop (read-only)"}),
    (("--can-edit",), {"action": "store_true", "help": "exit 0 if --file may be edited now, 1 if not"}),
    (("--file",), {"metavar": "PATH", "help": "with --can-edit: the file to check"}),
]
LOOP_FLAGS: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    (("--create-loop",), {"metavar": "NAME", "help": "create .automaton/loops/NAME/"}),
    (("--from-template",), {"metavar": "T", "help": "with --create-loop: loop template"}),
    (("--var",), {"metavar": "NAME=VALUE", "action": "append",
                  "help": "with --create-loop: fill the template's {{NAME}} (repeatable; e.g. target=src)"}),
    (("--no-worktree",), {"action": "store_true", "help": "with --create-loop: tick in the project checkout"
                           " itself, not in a worktree of its own (blast_radius.use_worktree false)"}),
    (("--list-templates",), {"action": "store_true", "help": "list the packaged and project loop templates"}),
    (("--install-schedule",), {"metavar": "NAME", "help": "install the OS schedule of a loop"}),
    (("--uninstall-schedule",), {"metavar": "NAME", "help": "remove the OS schedule of a loop"}),
    (("--interval",), {"metavar": "SECONDS", "help": "with --install-schedule: seconds between ticks"}),
    (("--on",), {"metavar": "ENGINE", "help": "with --install-schedule: write a github-actions workflow or a"
                 " kubernetes CronJob instead of installing the OS schedule"}),
    (("--claim-loop-task",), {"metavar": "NAME", "help": "with --task T: loop NAME claims task T, so no other"
                              " loop's tick works it until NAME completes, halts or is removed"}),
    (("--pause-loop",), {"metavar": "NAME", "help": "pause a running loop"}),
    (("--resume-loop",), {"metavar": "NAME", "help": "resume a paused loop (never a halted one)"}),
    (("--loop",), {"metavar": "NAME", "help": "the loop for --approve / --can-edit"}),
    (("--loop-worktree",), {"action": "store_true", "help": "with --can-edit --loop: anchor at the worktree"}),
    (("--can-continue",), {"metavar": "NAME", "help": "is the loop alive at all"}),
    (("--check-gate",), {"metavar": "NAME", "help": "run the six pre-tick gates"}),
    (("--loop-list",), {"action": "store_true", "help": "list loops"}),
    (("--loop-status",), {"metavar": "NAME", "help": "one loop at a glance: limits left, scores, schedule, worktree"}),
    (("--spend",), {"action": "store_true", "help": "spend of every loop here by day, loop and project, and the"
                     " account caps (read-only)"}),
    (("--publish-caps",), {"action": "store_true", "help": "with --state-remote REMOTE: publish this machine's"
                            " caps.json as the account caps every runner of that state remote holds (human act)"}),
    (("--since",), {"metavar": "DATE", "help": "with --spend: from this UTC day (YYYY-MM-DD; default 30 days ago)"}),
    (("--doctor",), {"action": "store_true", "help": "preflight checks of every loop (or --loop NAME)"}),
    (("--rearm-loop",), {"metavar": "NAME", "help": "give a complete loop a fresh allowance (human act)"}),
    (("--state-remote",), {"metavar": "REMOTE", "help": "with --approve --loop, --pause-loop, --resume-loop,"
                           " --rearm-loop: act on the loop's state in this git remote (fetch, apply, push);"
                           " with --claim-loop-task: claim the task there, for every machine;"
                           " with --doctor --loop: fetch it first; with --spend, --publish-caps: the account"
                           " ledger and caps kept there; with --dashboard: show and act on the remote's loops"
                           " too"}),
    (("--remove-loop",), {"metavar": "NAME", "help": "unschedule, archive and remove a loop (human act)"}),
    (("--delete-branch",), {"action": "store_true", "help": "with --remove-loop: delete branch loop/NAME too"}),
    (("--upgrade-loops",), {"action": "store_true", "help": "give loop folders that have only loop.json their"
                            " sealed state, halted for a first approval (human act; --loop NAME: only that one)"}),
    (("--gc-worktrees",), {"action": "store_true", "help": "remove the worktrees of gone or complete loops,"
                           " never one with uncommitted work (lists, then asks; human act)"}),
    (("--vram",), {"action": "store_true", "help": "probe accelerator memory for local models"}),
    (("--dashboard",), {"action": "store_true",
                        "help": "serve a local web page of the loops and tasks (of each --project given)"}),
    (("--port",), {"metavar": "N", "help": "with --dashboard: the port (default 8765; 0 picks a free one)"}),
    (("--host",), {"metavar": "H", "help": "with --dashboard: 127.0.0.1 (default), localhost or ::1"}),
]
AGENT_FLAGS: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    (("--hook",), {"metavar": "AGENT", "help": "run as the pre-tool hook of claude|codex|gemini|opencode"}),
    (("--install-hooks",), {"metavar": "AGENT", "help": "install the hook for claude|codex|gemini|opencode|git"
                            " (for an agent, a human also records \"sessions\" in the sealed config.json)"}),
    (("--install-prompts",), {"metavar": "AGENT", "help": "install the phase prompts for claude|codex|gemini"}),
    # Handled before this parser (cli/verbs_sandbox.py): listed here for --help only.
    (("--sandbox",), {"action": "store_true",
                      "help": "[--task T] -- CMD ARGS…: run an agent CLI under the kernel sandbox, "
                              "writable = the task's phase scope (short: automaton claude|codex|gemini|opencode|aider"
                              " ARGS…)"}),
]
COMMON_FLAGS: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    (("--project",), {"metavar": "DIR", "help": "project root (default: found from the current directory);"
                                                " --dashboard takes several"}),
    (("--json",), {"action": "store_true", "help": "print one JSON object as the last stdout line"}),
    (("--version",), {"action": "store_true", "help": "print the framework version"}),
]

# verb (argparse dest) -> "module:function" adapter, in dispatch priority order.
VERBS: dict[str, str] = {
    "version": "automaton.cli.verbs_tasks:version",
    "hook": "automaton.cli.verbs_agents:hook",
    "can_edit": "automaton.cli.verbs_tasks:can_edit",
    "create_task": "automaton.cli.verbs_tasks:create_task",
    "transition": "automaton.cli.verbs_tasks:transition",
    "approve": "automaton.cli.verbs_approve:approve",
    "accept_rollback": "automaton.cli.verbs_approve:accept_rollback",
    "focus": "automaton.cli.verbs_tasks:focus",
    "phase": "automaton.cli.verbs_tasks:phase",
    "validate_folder": "automaton.cli.verbs_tasks:validate_folder",
    "audit": "automaton.cli.verbs_tasks:audit",
    "create_loop": "automaton.cli.verbs_loops:create_loop",
    "list_templates": "automaton.cli.verbs_loops:list_templates",
    "install_schedule": "automaton.cli.verbs_loops:install_schedule",
    "uninstall_schedule": "automaton.cli.verbs_loops:uninstall_schedule",
    "claim_loop_task": "automaton.cli.verbs_loops:claim_loop_task",
    "pause_loop": "automaton.cli.verbs_loops:pause_loop",
    "resume_loop": "automaton.cli.verbs_loops:resume_loop",
    "can_continue": "automaton.cli.verbs_loops:can_continue",
    "check_gate": "automaton.cli.verbs_loops:check_gate",
    "loop_list": "automaton.cli.verbs_loops:loop_list",
    "loop_status": "automaton.cli.verbs_loops:loop_status",
    "spend": "automaton.cli.verbs_loops:spend",
    "publish_caps": "automaton.cli.verbs_loops:publish_caps",
    "doctor": "automaton.cli.verbs_loops:doctor",
    "rearm_loop": "automaton.cli.verbs_loops:rearm_loop",
    "remove_loop": "automaton.cli.verbs_loops:remove_loop",
    "upgrade_loops": "automaton.cli.verbs_loops:upgrade_loops",
    "gc_worktrees": "automaton.cli.verbs_loops:gc_worktrees",
    "vram": "automaton.cli.verbs_loops:vram",
    "dashboard": "automaton.cli.verbs_dashboard:dashboard",
    "install_hooks": "automaton.cli.verbs_agents:install_hooks",
    "install_prompts": "automaton.cli.verbs_agents:install_prompts",
}


# The modifier flags each verb takes (besides --project and --json). Any other modifier given
# with a verb is a usage error: a flag that would be silently ignored (`--to` without
# `--approve`, `--interval` with `--create-loop`) is a mistake the user must hear about.
MODIFIERS: dict[str, frozenset[str]] = {
    "create_task": frozenset({"parent"}),
    "transition": frozenset({"task"}),
    "approve": frozenset({"task", "loop", "to", "config", "yes", "state_remote"}),
    "pause_loop": frozenset({"state_remote"}),
    "resume_loop": frozenset({"state_remote"}),
    "rearm_loop": frozenset({"state_remote"}),
    "accept_rollback": frozenset({"task", "loop", "config", "yes"}),
    "focus": frozenset({"clear"}),
    "phase": frozenset({"task"}),
    "validate_folder": frozenset({"task"}),
    "can_edit": frozenset({"task", "file", "loop", "loop_worktree"}),
    "create_loop": frozenset({"from_template", "task", "var", "no_worktree"}),
    "install_schedule": frozenset({"interval", "on"}),
    "claim_loop_task": frozenset({"task", "state_remote"}),
    "check_gate": frozenset({"task"}),
    "doctor": frozenset({"loop", "state_remote"}),
    "spend": frozenset({"since", "loop", "state_remote"}),
    "publish_caps": frozenset({"state_remote"}),
    "remove_loop": frozenset({"delete_branch"}),
    "upgrade_loops": frozenset({"loop", "yes"}),
    "gc_worktrees": frozenset({"yes"}),
    "dashboard": frozenset({"port", "host", "state_remote"}),
}
ALL_MODIFIERS = frozenset({"parent", "task", "to", "clear", "file", "from_template", "var", "interval", "on", "loop",
                           "loop_worktree", "config", "yes", "delete_branch", "port", "host", "since",
                           "no_worktree", "state_remote"})


class Given(str):
    """A flag's value as argparse keeps it (the last one given), which also remembers every
    value given (`all`): `--dashboard` serves each `--project`, every other verb the last, as
    before. It is the str it reads as (the hook's shortcut parse compares equal to it)."""

    all: tuple[str, ...]

    def __new__(cls, value: str, given: tuple[str, ...]) -> Given:
        made = super().__new__(cls, value)
        made.all = given
        return made


class UsageError(Exception):
    """A cross-flag rule was broken (exit 2, one line)."""


def build() -> argparse.ArgumentParser:
    """The parser. `exit_on_error` is off: usage errors become UsageError (exit 2).
    `allow_abbrev` is off: long flags must be spelled in full (`--ap` is a usage error)."""
    import argparse  # here, not at the top: the hook path never builds the parser

    from automaton.core.argv import once_action

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:  # argparse's own message, but our exception
            raise UsageError(message + self._hint(message))

        def _hint(self, message: str) -> str:
            from automaton.core.names import flag_hint

            return flag_hint(message, self._option_string_actions)

        def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
            # With exit_on_error=False argparse raises ArgumentError ("expected one argument")
            # instead of calling error(): that is a usage error too (exit 2), not a bug.
            try:
                return super().parse_known_args(args, namespace)
            except argparse.ArgumentError as exc:
                raise UsageError(str(exc)) from None

    parser = _Parser(
        prog="automaton",
        description="Enforced brakes for AI coding agents: task phases, sign-offs, bounded loops.",
        epilog="exit codes: 0 done/allowed, 1 refused by a rule, 2 bad input, 3 internal error",
        exit_on_error=False,
        # Only exact spellings: the agent hooks deny `--approve`/`--focus` by name, and a
        # unique prefix (`--ap`, `--foc`) would be a spelling they had to guess.
        allow_abbrev=False,
    )

    class _Every(argparse.Action):  # --project: keeps the last value, remembers each (Given)
        def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
            before = getattr(namespace, self.dest, None)
            setattr(namespace, self.dest, Given(str(values), (*getattr(before, "all", ()), str(values))))

    once = once_action()  # a value flag given twice is a usage error (--var repeats: it appends)
    for title, table in (("tasks", TASK_FLAGS), ("loops", LOOP_FLAGS), ("agents", AGENT_FLAGS),
                         ("common", COMMON_FLAGS)):
        group = parser.add_argument_group(title)
        for flags, kwargs in table:
            # Here, not in the table: the hook's shortcut parse (cli/fastpath.py) reads --project
            # from the table as the plain value flag it is for every verb but --dashboard.
            action = _Every if flags == ("--project",) else kwargs.get("action", once)
            group.add_argument(*flags, **{**kwargs, "action": action})
    return parser


def verb_of(ns: argparse.Namespace) -> str:
    """The one verb given; UsageError when none or several."""
    given = [v for v in VERBS if _set(ns, v)]
    # --approve with --loop or --task is one verb even though --loop also names a loop.
    if len(given) > 1 and given[0] == "version":
        given = ["version"]
    if not given:
        raise UsageError("no action given: see automaton --help")
    if len(given) > 1:
        flags = ", ".join("--" + g.replace("_", "-") for g in given)
        raise UsageError(f"one action at a time, got {flags}")
    validate(given[0], ns)
    return given[0]


def validate(verb: str, ns: argparse.Namespace) -> None:
    """Cross-flag rules, checked before any state is touched (UsageError, exit 2)."""
    if verb == "version":
        return
    stray = sorted(m for m in ALL_MODIFIERS - MODIFIERS.get(verb, frozenset()) if _set(ns, m))
    if stray:
        given = ", ".join(_flag(m) for m in stray)
        raise UsageError(f"{given} does not go with {_flag(verb)}")
    if verb == "approve":
        _validate_approve(ns)
    if verb == "doctor" and ns.state_remote is not None and ns.loop is None:
        raise UsageError("--state-remote goes with --doctor --loop NAME")
    if verb == "can_edit" and ns.loop_worktree and ns.loop is None:
        raise UsageError("--loop-worktree needs --loop NAME")


def _validate_approve(ns: argparse.Namespace) -> None:
    """`--approve`'s own flag rules (UsageError, exit 2)."""
    if ns.to is not None and ns.loop is not None:
        raise UsageError("--to goes with --approve --task, not --loop")
    if ns.config and (ns.task is not None or ns.loop is not None or ns.to is not None):
        raise UsageError("--approve --config takes no --task, --loop or --to")
    if ns.yes and ns.loop is None and not ns.config:
        raise UsageError("--yes goes with --approve --loop or --approve --config")
    if ns.state_remote is not None and ns.loop is None:
        raise UsageError("--state-remote goes with --approve --loop NAME")


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _set(ns: argparse.Namespace, dest: str) -> bool:
    value = getattr(ns, dest, None)
    return value is not None and value is not False
