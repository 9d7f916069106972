"""Whether the hook itself runs inside automaton's kernel sandbox (`"sessions": "sandboxed"`).

The hook is a child of the agent CLI, which is a child of `automaton --sandbox` (or of a loop
tick's sandboxed role), so a sandboxed session's hook inherits the sandbox; an unsandboxed
session's hook does not. The probe is run here, in the hook process, and reads two facts of
this process that only its ancestors could have set, never a variable or file the agent can
write (`AUTOMATON_SANDBOX=1` proves nothing: any process can set it):

1. The record key (`~/.config/automaton/key`) cannot be opened, and its permission bits do
   not explain why (`store.key.hidden_here`): the kernel (Landlock on Linux, Seatbelt on macOS)
   hides the key's folder from this process. `chmod` cannot fake it: the bits are read with
   `stat`, which no sandbox refuses, and root reads any file its bits refuse.
2. Linux only: `NoNewPrivs: 1` in /proc/self/status. automaton sets no_new_privs before it
   applies Landlock (landlock(7): an unprivileged restrict_self needs it), and no process can
   clear it; a host security module that merely refuses the key file (an AppArmor or SELinux
   rule) leaves it 0.

A process can confine itself and its future children only, never its parent: to make both
true for the hook, the agent CLI must have been started inside such a confinement. An agent
in an unsandboxed session, whose every writing tool is denied here, has no way to start one.
"""

from __future__ import annotations

import os
import sys

STATUS = "/proc/self/status"


def outside_reason() -> str | None:
    """None when this process runs inside automaton's kernel sandbox, else why not (one clause)."""
    from automaton.core.errors import BadInput
    from automaton.store import key

    try:
        path = key.key_path()
    except BadInput as exc:
        return str(exc)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return f"there is no record key at {path} to probe the sandbox with (automaton makes one on its first log)"
    except PermissionError:
        if not key.hidden_here(path):
            return f"the permission bits of {path} refuse it (that is not a sandbox)"
    except OSError as exc:
        return f"{path} cannot be probed ({exc.strerror})"
    else:
        os.close(fd)
        return f"it can read the record key {path}"
    if sys.platform.startswith("linux") and not _no_new_privs():
        return "the record key is hidden, but not by automaton's sandbox (no_new_privs is not set)"
    return None


def _no_new_privs() -> bool:
    try:
        with open(STATUS, encoding="ascii", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return False
    return any(line.split(":", 1)[1].strip() == "1" for line in text.splitlines()
               if line.startswith("NoNewPrivs:"))
