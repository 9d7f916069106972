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


class InvalidFields(BadInput):
    """Several invalid fields of one file (exit 2): `lines`, one line each naming the file and
    the field. The message joins them with newlines; the CLIs print each as its own line."""

    def __init__(self, lines: tuple[str, ...]) -> None:
        self.lines = lines
        super().__init__("\n".join(lines))


def message_lines(exc: AutomatonError) -> tuple[str, ...]:
    """The lines a CLI prints for `exc`: each invalid field of an InvalidFields, else its message."""
    return exc.lines if isinstance(exc, InvalidFields) else (exc.message,)


class CorruptState(BadInput):
    """A state/config file is empty, truncated, of wrong types or newer schema (exit 2).

    State reads fail closed (docs/architecture.md#state-files-and-their-invariants): this is
    raised, never replaced by defaults.
    """


class Refused(AutomatonError):
    """A rule refused the request: illegal transition, missing sign-off, tamper (exit 1)."""

    code = ExitCode.REFUSED


class EnvironmentFailure(Refused):
    """The machine refused a write or a read automaton needs: a full disk (ENOSPC), an
    exceeded quota (EDQUOT), a read-only file system (EROFS), no permission (EACCES, EPERM).
    Not a bug and not bad input: exit 1, one line naming the path and the fix."""


# errno values (POSIX; EDQUOT is 122 on Linux, 69 on macOS and the BSDs) -> what to do.
_ENV_FIXES = {
    "ENOSPC": "the disk is full: free space on it and run the command again",
    "EDQUOT": "the disk quota is exceeded: free space (or raise the quota) and run the command again",
    "EROFS": "the file system is read-only: remount it writable (or work in a writable copy) and run the command again",
    "EACCES": "permission denied: give your user access to it (ls -ld the path) and run the command again",
    "EPERM": "operation not permitted: give your user access to it (ls -ld the path) and run the command again",
}


_NEED_A_PATH = ("EACCES", "EPERM")  # without a file named, a refusal is a process's (kill, prctl): a bug


def environment_errno(exc: BaseException) -> bool:
    """Whether `exc` is an OSError the environment caused (`environment_failure` has a line)."""
    return isinstance(exc, OSError) and environment_failure(exc) is not None


def environment_failure(exc: OSError, where: str | None = None) -> EnvironmentFailure | None:
    """EnvironmentFailure for a full disk, exceeded quota or read-only file system, and for a
    refused access to a named file, naming `exc.filename` or else `where` (the caller's best
    name for what it was writing); None for any other error."""
    import errno

    code = errno.errorcode.get(exc.errno or -1, "")
    fix = _ENV_FIXES.get(code)
    path = exc.filename if exc.filename is not None else where
    if fix is None or (path is None and code in _NEED_A_PATH):
        return None
    verb = "use" if code in _NEED_A_PATH else "write"
    named = f"cannot {verb} {path}" if path is not None else "a file automaton needs could not be written"
    return EnvironmentFailure(f"{named}: {fix}")


# What git (and any C program) prints for those errno values: strerror's glibc and BSD texts.
_ENV_TEXTS = {"No space left on device": "ENOSPC", "Disk quota exceeded": "EDQUOT",
              "Read-only file system": "EROFS"}


def environment_said(text: str, where: str) -> EnvironmentFailure | None:
    """EnvironmentFailure for a program's error output `text` that says the disk is full, the
    quota exceeded or the file system read-only (a `git worktree add` on a full disk), naming
    `where`; None when it says none of those."""
    for said, code in _ENV_TEXTS.items():
        if said in text:
            return EnvironmentFailure(f"cannot write {where}: {_ENV_FIXES[code]}")
    return None


def path_error(exc: OSError) -> AutomatonError | None:
    """An OS error is the environment's fault, not a bug: a full disk, a read-only file system,
    an exceeded quota or no permission is EnvironmentFailure (exit 1, `environment_failure`);
    any other error on a named path (a file where a folder should be) is BadInput (exit 2)
    naming the path and the fix. None when the error is neither (then it is a bug, exit 3)."""
    env = environment_failure(exc)
    if env is not None:
        return env
    if exc.filename is None:
        return None
    what = exc.strerror or type(exc).__name__
    return BadInput(f"cannot use {exc.filename}: {what}; make it the expected file or folder"
                    " (or fix its permissions) and run the command again")
