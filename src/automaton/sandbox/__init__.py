"""The kernel sandbox every agent process runs in, and the process plumbing around it.

Linux: Landlock (`landlock`), applied in the child between fork and exec (`preexec`) or to
this process (`confine_self`). macOS: Seatbelt, by running the command under `sandbox-exec`
(`wrap_argv`). Elsewhere there is none and `available()` says so; automaton then refuses to
run a sandboxed agent rather than run it unconfined. What a policy means: `core.sandbox`.
"""

from __future__ import annotations

import contextlib
import os
import sys

from automaton.core.errors import one_line
from automaton.core.record import record
from automaton.core.sandbox import Policy
from automaton.sandbox import landlock
from automaton.sandbox.agents import agent_state_dirs
from automaton.sandbox.plan import SandboxError, landlock_rules
from automaton.sandbox.reaper import become_subreaper, kill_descendants
from automaton.sandbox.seatbelt import SANDBOX_EXEC, seatbelt_profile, wrap_argv

__all__ = ["Availability", "Confinement", "SandboxError", "agent_state_dirs", "available", "become_subreaper",
           "confine_self", "kill_descendants", "preexec", "seatbelt_profile", "wrap_argv"]

# Tests set this to see automaton refuse. It can only make automaton report "unavailable"
# and refuse to run an agent, never weaken or skip a sandbox that is in force.
UNAVAILABLE_ENV = "AUTOMATON_SANDBOX_UNAVAILABLE"
OFF_HINT = 'or set "sandbox": "off" in loop.json'


@record(frozen=True)
class Availability:
    """Whether this machine can confine an agent: `mechanism` "landlock", "seatbelt" or
    "none"; `abi` the Landlock ABI (0 otherwise); `detail` one line: what is used, or how to
    get a sandbox when `ok` is False."""

    ok: bool
    mechanism: str
    abi: int
    detail: str


_probed: Availability | None = None


def _probe() -> Availability:
    if sys.platform == "darwin":
        if os.path.exists(SANDBOX_EXEC):
            return Availability(True, "seatbelt", 0, f"Seatbelt ({SANDBOX_EXEC})")
        return Availability(False, "none", 0, f"{SANDBOX_EXEC} is missing on this Mac; {OFF_HINT}")
    if not sys.platform.startswith("linux"):
        return Availability(False, "none", 0, f"no kernel sandbox on {sys.platform}: automaton confines agents"
                                              f" on Linux (Landlock) and macOS (Seatbelt); {OFF_HINT}")
    import errno

    try:
        level = landlock.abi()
    except OSError as exc:
        if exc.errno == errno.ENOSYS:
            why = f"Landlock is not in this kernel ({exc.strerror}; needs Linux >= 5.13 built with Landlock)"
        elif exc.errno == errno.EOPNOTSUPP:
            why = "Landlock is not enabled in this kernel (add landlock to the lsm= boot parameter)"
        else:
            why = f"Landlock is blocked here ({exc.strerror}; a container's seccomp filter?)"
        return Availability(False, "none", 0, one_line(f"{why}; {OFF_HINT}"))
    notes = [f"Landlock ABI {level}"]
    if level < 3:
        notes.append("truncate(2) of read-only files is not blocked before ABI 3")
    if level < 6:
        notes.append("signals to the runner are not blocked before ABI 6")
    return Availability(True, "landlock", level, "; ".join(notes))


def available() -> Availability:
    """The sandbox this machine offers. The kernel is probed once per process;
    AUTOMATON_SANDBOX_UNAVAILABLE=1 (read on every call) reports it unavailable."""
    global _probed
    if os.environ.get(UNAVAILABLE_ENV, "") not in ("", "0"):
        return Availability(False, "none", 0, f"{UNAVAILABLE_ENV} is set (tests): the sandbox counts as"
                                              f" unavailable; unset it, {OFF_HINT}")
    if _probed is None:
        _probed = _probe()
    return _probed


def _landlock_level() -> int:
    found = available()
    if not found.ok or found.mechanism != "landlock":
        raise SandboxError(one_line(f"sandbox unavailable: {found.detail}"))
    return found.abi


class Confinement:
    """A `preexec_fn` for subprocess.Popen confining the child to a policy with Landlock.
    It holds the ruleset open (see `landlock.Prepared`): `close` it, or use it as a context
    manager, once Popen has returned."""

    def __init__(self, prepared: landlock.Prepared, label: str) -> None:
        self._prepared, self._label = prepared, one_line(label)

    def __call__(self) -> None:
        try:
            self._prepared.apply()
        except BaseException as exc:
            with contextlib.suppress(OSError):  # the child's stderr: the runner's pipe
                os.write(2, f"sandbox failed: {self._label}: {exc}\n".encode("utf-8", "backslashreplace"))
            raise

    def close(self) -> None:
        self._prepared.close()

    def __enter__(self) -> Confinement:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def preexec(policy: Policy) -> Confinement:
    """A `preexec_fn` (callable, no arguments) that confines the forked child to `policy`.

    The ruleset is built now, in the parent: SandboxError (one line) for an invalid policy, a
    path that cannot be opened, a rule the kernel refuses, or no Landlock here. In the child it
    only sets no_new_privs and restricts itself; a failure there writes `sandbox failed: …` to
    the child's stderr and raises, so the child never execs and Popen raises
    subprocess.SubprocessError."""
    level = _landlock_level()
    try:
        prepared = landlock.Prepared(landlock_rules(policy), level)
    except OSError as exc:
        raise SandboxError(one_line(f"sandbox failed: {policy.label}: {exc}")) from None
    return Confinement(prepared, policy.label)


def confine_self(policy: Policy) -> None:
    """Confine the calling thread (and every process it starts or execs) to `policy` for
    good; call it from the thread that then execs. Linux only: on macOS run the command
    through `wrap_argv` instead. SandboxError when it cannot be done (the process must then
    exit, not run the command: it may be partly restricted)."""
    level = _landlock_level()
    try:
        prepared = landlock.Prepared(landlock_rules(policy), level)
        try:
            prepared.apply()
        finally:
            prepared.close()
    except OSError as exc:
        raise SandboxError(one_line(f"sandbox failed: {policy.label}: {exc}")) from None
