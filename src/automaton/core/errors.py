"""Exit codes and the exceptions that carry them to the CLI edge (README.md#exit-codes)."""

from __future__ import annotations

import re
from enum import IntEnum

# Line breaks and other control characters (tab kept) that would split or forge an output line.
# A pattern string, compiled by `re`'s cache on first use: an allowed hook call prints nothing
# and should not pay for compiling it (the hook runs before every agent edit).
_CONTROL = "[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]"


def one_line(text: str) -> str:
    """`text` with every line break and control character escaped (`\\n`, `\\x1b` ...), so a
    message that quotes user input stays the one line it claims to be."""
    return re.sub(_CONTROL, lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class ExitCode(IntEnum):
    """Process exit codes shared by every command (the table in README.md#exit-codes)."""

    OK = 0  # done / allowed / gate ok
    REFUSED = 1  # refused by a rule: transition refused, edit denied, gate not ok
    BAD_INPUT = 2  # unknown/untracked task or loop, invalid name, corrupt file, usage error
    INTERNAL = 3  # a bug: one line on stderr plus the path of a log with the traceback


class AutomatonError(Exception):
    """Base of every expected failure; `code` is the exit code the CLI returns.

    The message is one line that names the file, value or rule and what to do next.
    """

    code: ExitCode = ExitCode.INTERNAL

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadInput(AutomatonError):
    """Bad input: invalid name, unknown task/loop, corrupt or invalid file (exit 2)."""

    code = ExitCode.BAD_INPUT


class CorruptState(BadInput):
    """A state/config file is empty, truncated, of wrong types or newer schema (exit 2).

    State reads fail closed (docs/architecture.md#state-files-and-their-invariants): this is
    raised, never replaced by defaults.
    """


class Refused(AutomatonError):
    """A rule refused the request: illegal transition, missing sign-off, tamper (exit 1)."""

    code = ExitCode.REFUSED


def path_error(exc: OSError) -> BadInput | None:
    """An OS error on a named path (a file where a folder should be, no permission, a full
    disk) is the environment's fault, not a bug: BadInput (exit 2) naming the path and the
    fix. None when the error names no path (then it is a bug, exit 3)."""
    if exc.filename is None:
        return None
    what = exc.strerror or type(exc).__name__
    return BadInput(f"cannot use {exc.filename}: {what}; make it the expected file or folder"
                    " (or fix its permissions) and run the command again")
