"""Run one interactive command under a policy and let nothing it started outlive it.

`automaton --sandbox -- CMD` forks: the child confines itself (Landlock, applied between fork
and exec) and becomes CMD; this process stays outside the sandbox, does nothing but wait, and
is a child subreaper (prctl(2) PR_SET_CHILD_SUBREAPER, `reaper`). When CMD exits, or the
session is ended by SIGTERM or SIGHUP (the terminal closing), every descendant is killed: a
daemon the agent left behind (setsid, double fork) loses the kernel grants of its session
together with its life, instead of rewriting the task folder later.

The child stays in this process's process group, so it is the terminal's foreground job and
reads and writes the terminal as before; Ctrl-C reaches it from the terminal driver and is
not forwarded a second time. From Landlock ABI 6 the confined processes cannot signal this
supervisor (LANDLOCK_SCOPE_SIGNAL); before it, an agent that kills the supervisor first keeps
its daemons (see `available()`'s detail). Linux kills descendants; on macOS (no /proc) only the
command itself is waited for.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from types import FrameType

from automaton.core.errors import one_line
from automaton.core.sandbox import Policy
from automaton.sandbox import _libc, launch, reaper

# Seconds the command gets to exit after a forwarded SIGTERM/SIGHUP before it is killed.
STOP_GRACE_S = 5.0
_FORWARDED = (signal.SIGTERM, signal.SIGHUP)


class _Stop(Exception):
    """Raised by the signal handler to end the wait: `signum` ends the session."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _Stopper:
    """The SIGTERM/SIGHUP handler: before the command runs it only notes the signal (there is
    nothing to forward it to yet, and an exception then could lose the child); once `armed` it
    raises _Stop, which ends the wait."""

    def __init__(self) -> None:
        self.armed = False
        self.pending: int | None = None

    def __call__(self, signum: int, _frame: FrameType | None) -> None:
        if self.armed:
            raise _Stop(signum)
        self.pending = signum


def _ignore(_signum: int, _frame: FrameType | None) -> None:
    # A handler, not SIG_IGN: an ignored signal stays ignored across exec, and the command
    # must take Ctrl-C as usual (the terminal sends SIGINT to the whole foreground group).
    return None


def _status(returncode: int) -> int:
    """A shell's exit status for a Popen returncode: 128 + N for death by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def _wait(child: subprocess.Popen[bytes], stopper: _Stopper) -> None:
    """Wait for the command; a SIGTERM/SIGHUP of the session is forwarded to it, and after
    STOP_GRACE_S it is killed (the caller then kills everything else)."""
    deadline: float | None = None
    while True:
        try:
            stopper.armed = True
            if stopper.pending is not None:  # came while the command was being started
                raise _Stop(stopper.pending)
            if deadline is None:
                child.wait()
            else:
                try:
                    child.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
            return
        except _Stop as stop:
            for sig in _FORWARDED:  # a later one changes nothing: the grace is running
                signal.signal(sig, _ignore)
            stopper.pending = None
            with contextlib.suppress(OSError):
                os.kill(child.pid, stop.signum)
            deadline = time.monotonic() + STOP_GRACE_S


def _start(argv: list[str], env: Mapping[str, str], policy: Policy) -> subprocess.Popen[bytes] | int:
    """The confined command, started with this process's terminal; or the exit status when it
    did not start (126 sandbox or exec failure, 127 not found), said on stderr."""
    how = launch.prepare(policy, argv)
    if isinstance(how, str):
        print(f"automaton: {how}", file=sys.stderr)
        return 126
    confine, supervisor = how.preexec_fn, os.getpid()

    def start_child() -> None:
        if confine is not None:
            confine()
        # A supervisor killed outright (SIGKILL, the OOM killer) takes the command with it,
        # instead of leaving it running with the session's grants and nobody to end it. Set
        # after the confinement: entering a user namespace changes the credentials, which
        # clears a parent-death signal. A supervisor already gone shows as another parent.
        if sys.platform.startswith("linux"):
            _libc.prctl(_libc.PR_SET_PDEATHSIG, signal.SIGKILL, "prctl(PR_SET_PDEATHSIG)")
            if os.getppid() != supervisor:
                os._exit(126)

    try:
        return subprocess.Popen(how.argv, preexec_fn=start_child, env=launch.child_env(env, policy), close_fds=True)
    except FileNotFoundError:
        print(f"automaton: {argv[0]}: command not found", file=sys.stderr)
        return 127
    except OSError as exc:
        print(f"automaton: {argv[0]}: cannot run ({exc.strerror})", file=sys.stderr)
        return 126
    except subprocess.SubprocessError:  # the child could not confine itself: it never ran the command
        print(one_line(f"automaton: sandbox failed: could not confine {argv[0]}; not run"), file=sys.stderr)
        return 126
    finally:
        if how.preexec_fn is not None:
            how.preexec_fn.close()


def supervise(argv: list[str], env: Mapping[str, str], policy: Policy) -> int:
    """Run non-empty `argv` confined to `policy` with environment `env` (plus TMPDIR/TMP/TEMP
    of the policy) on this process's stdin/stdout/stderr, wait for it, then SIGKILL every
    descendant still alive (Linux). Returns its exit status (128 + N when signal N ended it;
    126/127 when it did not start, with one line on stderr). SIGINT and SIGQUIT are left to the
    command (the terminal sends them to it); SIGTERM and SIGHUP of this process are forwarded
    to it, and after STOP_GRACE_S seconds it is killed."""
    reaper.become_subreaper()
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGQUIT, *_FORWARDED)}
    try:
        for sig in (signal.SIGINT, signal.SIGQUIT):
            signal.signal(sig, _ignore)
        stopper = _Stopper()
        for sig in _FORWARDED:
            signal.signal(sig, stopper)
        child = _start(argv, env, policy)
        if isinstance(child, int):
            return child
        try:
            _wait(child, stopper)
        finally:
            reaper.kill_descendants(())
        return _status(child.returncode)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
