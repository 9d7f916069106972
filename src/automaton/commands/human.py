"""Who is a human: approvals and focus changes are human acts (DESIGN §4)."""

from __future__ import annotations

import getpass
import os
import sys

from automaton.core.errors import BadInput, Refused

APPROVER_ENV = "AUTOMATON_APPROVER"


def require_human(action: str) -> str:
    """The approver's name, or Refused (exit 1) when no human is at the keyboard.

    A human is stdin being a terminal, or `AUTOMATON_APPROVER` naming the approver (CI,
    dashboards). Agents run commands without a terminal, so they are refused here; the agent
    hooks also deny any command line that runs `--approve` (DESIGN §7).
    """
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
