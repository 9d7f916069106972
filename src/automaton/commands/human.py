"""Who is a human: approvals and focus changes are human acts.

A human is a terminal on stdin or `AUTOMATON_APPROVER`, in a process that no agent started:
neither its own environment, nor its ancestors', nor its session's carries an agent's marker or
runs an agent, it was not detached or scheduled, and all of that could be read
(`commands.ancestry`; fail closed: an ancestry that cannot be read is not a human's)."""

from __future__ import annotations

import getpass
import os
import sys
from dataclasses import dataclass

from automaton.commands import ancestry
from automaton.core.errors import BadInput, Refused

APPROVER_ENV = "AUTOMATON_APPROVER"
# Variables an agent's shell carries: Claude Code sets CLAUDECODE=1 in its Bash tool
# (anthropics/claude-code#531, v0.2.47); Gemini CLI sets GEMINI_CLI=1 for run_shell_command;
# Codex sets CODEX_SANDBOX inside its sandbox; automaton's runner sets AUTOMATON_LOOP_DIR (and AUTOMATON_LOOP) for every
# process of a tick. Each is a weak signal (a human can have one too, an agent can unset it),
# but together with the hooks it keeps an agent from signing off its own work.
AGENT_MARKERS = ("CLAUDECODE", "GEMINI_CLI", "CODEX_SANDBOX", "AUTOMATON_LOOP", "AUTOMATON_LOOP_DIR")
# Builds the process-table reader; a test replaces it to simulate an unreadable /proc.
READER = ancestry.system_reader


@dataclass(frozen=True)
class Human:
    """A human already established by the caller, for the use cases that are human acts.

    `name`: who acts, logged as `by=` (the dashboard passes its OS user). `via`: the channel,
    logged as `via=` ("dashboard"). Only a caller that checked `require_human` itself when it
    started (the dashboard does, and then authenticates each request) may build one: the use
    case takes it instead of asking for a terminal or `AUTOMATON_APPROVER` again.
    """

    name: str
    via: str

    def __post_init__(self) -> None:
        # Both are written into a log line: one printable line each, `via` a bare word.
        if not self.name or not self.name.isprintable() or len(self.name) > 128:
            raise ValueError(f"Human.name must be a printable name of at most 128 characters, got {self.name[:40]!r}")
        if not self.via.isidentifier():
            raise ValueError(f"Human.via must be one word, got {self.via[:40]!r}")


def acting(action: str, human: Human | None) -> tuple[str, dict[str, object]]:
    """(the approver's name, the extra log fields of the act): `human`'s name and `via` when
    given, else `require_human(action)` and no extra field (the CLI's lines stay as they were).
    Raises as `require_human`."""
    if human is not None:
        return human.name, {"via": human.via}
    return require_human(action), {}


def require_human(action: str) -> str:
    """The approver's name, or Refused (exit 1) when no human is at the keyboard.

    A human is stdin being a terminal, or `AUTOMATON_APPROVER` naming the approver (CI,
    dashboards). Agents run commands without a terminal, so they are refused here; so is any
    shell that carries an agent's marker variable (AGENT_MARKERS), whatever else is set. The
    agent hooks also deny any command line that runs `--approve`.
    """
    marker = next((m for m in AGENT_MARKERS if os.environ.get(m)), None)
    if marker is not None:
        raise Refused(
            f"{action} is a human sign-off and this shell belongs to an agent ({marker} is set):"
            " run it from your own terminal"
        )
    why = agent_ancestor()
    if why is not None:
        raise Refused(f"{action} is a human sign-off and this process may be an agent's ({why}):"
                      " run it from your own terminal")
    named = os.environ.get(APPROVER_ENV, "").strip()
    if named:
        # The name is written into the log and shown on screen: one printable line only.
        if not named.isprintable() or len(named) > 128:
            raise BadInput(f"{APPROVER_ENV} must be a printable name of at most 128 characters, got {named[:40]!r}")
        return named
    try:
        tty = sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        tty = False
    if not tty:
        raise Refused(
            f"{action} is a human sign-off: run it from a terminal, or set {APPROVER_ENV}=<your name>"
            " where no terminal exists (CI, dashboards)"
        )
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown-user"


def agent_ancestor(proc: str | None = None) -> str | None:
    """Why this process may be an agent's (an agent in its ancestry or session, a detached or
    scheduled start, or a process table that cannot be read), or None. `proc`: read that
    directory as /proc instead of the system's reader (None when it does not exist)."""
    if proc is None:
        read = READER
    else:
        root = proc

        def read() -> ancestry.Reader | None:
            return ancestry.ProcFS(root) if os.path.isdir(root) else None
    return ancestry.reason(AGENT_MARKERS, read)
