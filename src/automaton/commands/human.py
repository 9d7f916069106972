"""Who is a human: approvals and focus changes are human acts (DESIGN §4)."""

from __future__ import annotations

import getpass
import os
import sys

from automaton.core.errors import BadInput, Refused

APPROVER_ENV = "AUTOMATON_APPROVER"
# Variables an agent's shell carries: Claude Code sets CLAUDECODE=1 in its Bash tool
# (anthropics/claude-code#531, v0.2.47); Gemini CLI sets GEMINI_CLI=1 for run_shell_command;
# Codex sets CODEX_SANDBOX inside its sandbox; automaton's runner sets AUTOMATON_LOOP_DIR (and AUTOMATON_LOOP) for every
# process of a tick. Each is a weak signal (a human can have one too, an agent can unset it),
# but together with the hooks it keeps an agent from signing off its own work.
AGENT_MARKERS = ("CLAUDECODE", "GEMINI_CLI", "CODEX_SANDBOX", "AUTOMATON_LOOP", "AUTOMATON_LOOP_DIR")


def require_human(action: str) -> str:
    """The approver's name, or Refused (exit 1) when no human is at the keyboard.

    A human is stdin being a terminal, or `AUTOMATON_APPROVER` naming the approver (CI,
    dashboards). Agents run commands without a terminal, so they are refused here; so is any
    shell that carries an agent's marker variable (AGENT_MARKERS), whatever else is set. The
    agent hooks also deny any command line that runs `--approve` (DESIGN §7).
    """
    marker = next((m for m in AGENT_MARKERS if os.environ.get(m)), None) or agent_ancestor()
    if marker is not None:
        raise Refused(
            f"{action} is a human sign-off and this shell belongs to an agent ({marker} is set):"
            " run it from your own terminal"
        )
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


def agent_ancestor(proc: str = "/proc") -> str | None:
    """The marker found in the environment of any ancestor process, or None (Linux /proc only).

    `env -u CLAUDECODE automaton --approve` clears the marker for the child alone: the agent's
    shell above it still carries it (`/proc/<pid>/environ` is the environment it was started
    with). A process that detached from every marked ancestor is not seen (SECURITY.md).
    """
    wanted = {m.encode() for m in AGENT_MARKERS}
    pid = os.getppid()
    seen: set[int] = set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        try:
            with open(f"{proc}/{pid}/environ", "rb") as fh:
                names = {item.split(b"=", 1)[0] for item in fh.read().split(b"\0") if b"=" in item}
            with open(f"{proc}/{pid}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            return None  # no /proc (macOS, Windows) or a process we may not read: no signal
        found = sorted(wanted & names)
        if found:
            return f"{found[0].decode()} in the environment of process {pid}"
        try:
            pid = int(stat.rsplit(b")", 1)[1].split()[1])
        except (IndexError, ValueError):
            return None
    return None
