"""The kernel sandbox every agent process runs in, and the process plumbing around it.

Linux: user, mount and network namespaces (`namespaces`), then Landlock (`landlock`), then a
seccomp filter that keeps the sandboxed processes out of each other (`seccomp`: no ptrace,
pidfd_getfd or process_vm_readv/writev), all applied in the child between fork and exec
(`preexec`) or to this process (`confine_self`).
macOS: Seatbelt, by running the command under `sandbox-exec` (`wrap_argv`). Elsewhere there
is none and `available()` says so; automaton then refuses to run a sandboxed agent rather than
run it unconfined. What a policy means: `core.sandbox`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace

from automaton.core.errors import one_line
from automaton.core.sandbox import Policy
from automaton.sandbox import landlock, namespaces, rights, seccomp
from automaton.sandbox.agents import agent_state_dirs, private_home, session_env, visible_paths
from automaton.sandbox.plan import Rule, SandboxError, landlock_rules
from automaton.sandbox.reaper import become_subreaper, kill_descendants
from automaton.sandbox.seatbelt import SANDBOX_EXEC, seatbelt_profile, wrap_argv

__all__ = ["Availability", "Confinement", "SandboxError", "agent_state_dirs", "available", "become_subreaper",
           "confine_self", "kill_descendants", "layers", "namespaces_work", "preexec", "private_home",
           "seatbelt_profile", "session_env", "visible_paths", "wrap_argv"]

# Tests set this to see automaton refuse. It can only make automaton report "unavailable"
# and refuse to run an agent, never weaken or skip a sandbox that is in force.
UNAVAILABLE_ENV = "AUTOMATON_SANDBOX_UNAVAILABLE"
# The same for the namespace layer alone: automaton then refuses unless "isolation":
# "landlock-only" is set; namespaces that work are still used (it never weakens a sandbox).
NO_NAMESPACES_ENV = "AUTOMATON_NAMESPACES_UNAVAILABLE"
OFF_HINT = 'or set "sandbox": "off" in loop.json'
ISOLATION_HINT = ('allow unprivileged user namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns=0,'
                  ' kernel.unprivileged_userns_clone=1, user.max_user_namespaces>0) or set "isolation":'
                  ' "landlock-only"')
# What stays open to a process that Landlock alone confines.
LANDLOCK_ONLY_OPEN = ("UNIX sockets in /tmp and /run stay reachable, chmod/chown/utime/xattr work on read-only"
                      " files, credential files are readable unless Landlock hides them, and the verifier"
                      " reaches the network")


@dataclass(frozen=True)
class Availability:
    """Whether this machine can confine an agent: `mechanism` "landlock", "seatbelt" or
    "none"; `abi` the Landlock ABI (0 otherwise); `detail` one line: what is used, or how to
    get a sandbox when `ok` is False. `isolated`: the second layer is here too (Linux: user,
    mount and network namespaces; macOS: Seatbelt's socket and metadata rules);
    `isolation_detail` one line: that layer, or why it is missing and the fix. `filtered`
    (Linux): the seccomp filter is applied too (`seccomp`); `filter_detail` one line: that
    layer, or why it is missing and what stays open. A missing filter refuses no run."""

    ok: bool
    mechanism: str
    abi: int
    detail: str
    isolated: bool = False
    isolation_detail: str = ""
    filtered: bool = False
    filter_detail: str = ""


_probed: Availability | None = None


def _probe() -> Availability:
    if sys.platform == "darwin":
        if os.path.exists(SANDBOX_EXEC):
            return Availability(True, "seatbelt", 0, f"Seatbelt ({SANDBOX_EXEC})", True,
                                "Seatbelt denies UNIX sockets and metadata writes outside the writable set")
        return Availability(False, "none", 0, f"{SANDBOX_EXEC} is missing on this Mac; {OFF_HINT}")
    if not sys.platform.startswith("linux"):
        return Availability(False, "none", 0, f"no kernel sandbox on {sys.platform}: automaton confines agents"
                                              f" on Linux (Landlock) and macOS (Seatbelt); {OFF_HINT}")

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
        # Abstract sockets live in the network namespace, which agent roles share with the host
        # (they need their API): only Landlock's scoping (ABI 6) keeps X11 and D-Bus out of reach.
        notes.append("signals to the runner and abstract UNIX sockets (X11, D-Bus) are not blocked before ABI 6")
    isolated, why_not = _probe_namespaces()
    filtered, filter_detail = seccomp.probe()
    return Availability(True, "landlock", level, "; ".join(notes), isolated, why_not, filtered, filter_detail)


def _probe_namespaces() -> tuple[bool, str]:
    """Run `true` in a child that enters user, mount and network namespaces the way an
    agent's does (every mount remounted read-only, private tmpfs roots): (works, one line)."""
    program = shutil.which("true") or sys.executable
    step = namespaces.plan(Policy((), network=False), os.environ.get("XDG_RUNTIME_DIR"))
    namespaces.preload()

    def child() -> None:
        try:
            namespaces.enter(step)
        except BaseException as exc:
            os.write(2, f"{exc!r}".encode("utf-8", "backslashreplace"))
            raise

    read_end, write_end = os.pipe()
    try:
        try:
            done = subprocess.run([program], preexec_fn=child, cwd="/", stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=write_end, timeout=30, check=False)
            failed = f"exit {done.returncode}" if done.returncode != 0 else ""
        except (OSError, subprocess.SubprocessError) as exc:
            failed = str(exc)
        finally:
            os.close(write_end)
        said = os.read(read_end, 4096).decode("utf-8", "replace").strip()
    finally:
        os.close(read_end)
    if failed:
        return False, one_line(f"user namespaces are not available here ({said or failed}): {LANDLOCK_ONLY_OPEN};"
                               f" {ISOLATION_HINT}")
    return True, "user, mount and network namespaces"


def available() -> Availability:
    """The sandbox this machine offers. The kernel is probed once per process;
    AUTOMATON_SANDBOX_UNAVAILABLE=1 (read on every call) reports it unavailable."""
    global _probed
    if os.environ.get(UNAVAILABLE_ENV, "") not in ("", "0"):
        return Availability(False, "none", 0, f"{UNAVAILABLE_ENV} is set (tests): the sandbox counts as"
                                              f" unavailable; unset it, {OFF_HINT}")
    if _probed is None:
        _probed = _probe()
    if _probed.isolated and os.environ.get(NO_NAMESPACES_ENV, "") not in ("", "0"):
        return replace(_probed, isolated=False,
                       isolation_detail=f"{NO_NAMESPACES_ENV} is set (tests): namespaces count as unavailable:"
                                        f" {LANDLOCK_ONLY_OPEN}; unset it or set \"isolation\": \"landlock-only\"")
    return _probed


def layers(found: Availability) -> str:
    """One line: the isolation layers in force on this machine, and what stays open where
    one is missing."""
    if not found.ok:
        return f"no kernel sandbox: {found.detail}"
    if found.mechanism == "seatbelt":
        return f"Seatbelt ({found.isolation_detail})"
    ll = f"Landlock ABI {found.abi}"
    if found.isolated:
        filtered = f", {found.filter_detail}" if found.filtered else f"; {found.filter_detail}"
        return (f"user and mount namespaces (read-only mounts, private /tmp /var/tmp /dev/shm /run), a network"
                f" namespace for a process without network (the verifier), {ll}{filtered}")
    if found.filtered:
        return f"{ll} and {found.filter_detail} only: {found.isolation_detail}"
    return f"{ll} only: {found.isolation_detail}; {found.filter_detail}"


def namespaces_work() -> bool:
    """Whether this kernel really gives the agent its namespaces (probed once; not affected by
    AUTOMATON_NAMESPACES_UNAVAILABLE, which only makes automaton refuse)."""
    available()
    return _probed is not None and _probed.isolated and _probed.mechanism == "landlock"


def _landlock_level() -> int:
    found = available()
    if not found.ok or found.mechanism != "landlock":
        raise SandboxError(one_line(f"sandbox unavailable: {found.detail}"))
    return found.abi


def _filter() -> seccomp.Filter | None:
    """The seccomp filter where this kernel takes it (`available().filtered`), else None: the
    run goes on without it (`layers` says so)."""
    return seccomp.prepare() if available().filtered else None


class Confinement:
    """A `preexec_fn` for subprocess.Popen confining the child to a policy: its namespaces
    (`namespaces.enter`, when `steps` is not None), then Landlock, then the seccomp filter
    (when `syscalls` is not None). It holds the ruleset open (see `landlock.Prepared`): `close`
    it, or use it as a context manager, once Popen has returned."""

    def __init__(self, prepared: landlock.Prepared, label: str, steps: namespaces.Plan | None = None,
                 syscalls: seccomp.Filter | None = None) -> None:
        self._prepared, self._label, self._steps, self._syscalls = prepared, one_line(label), steps, syscalls

    def __call__(self) -> None:
        try:
            if self._steps is not None:
                namespaces.enter(self._steps)
            self._prepared.apply()
            if self._syscalls is not None:
                self._syscalls.install()
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


def _steps(policy: Policy, use_namespaces: bool | None) -> namespaces.Plan | None:
    if use_namespaces is None:
        use_namespaces = namespaces_work()
    if not use_namespaces:
        return None
    namespaces.preload()
    return namespaces.plan(policy, os.environ.get("XDG_RUNTIME_DIR"))


def _rules(policy: Policy, steps: namespaces.Plan | None) -> list[Rule]:
    """The Landlock rules of `policy`, and READ on the empty file the namespaces mask with."""
    rules = landlock_rules(policy)
    if steps is not None and steps.empty:
        rules.append(Rule(steps.empty, rights.READ))
    return rules


def preexec(policy: Policy, *, use_namespaces: bool | None = None) -> Confinement:
    """A `preexec_fn` (callable, no arguments) that confines the forked child to `policy`.

    `use_namespaces`: enter the namespaces of `namespaces` first (default: wherever they work
    here). The ruleset and the namespace steps are built now, in the parent: SandboxError
    (one line) for an invalid policy, a path that cannot be opened, a rule the kernel
    refuses, or no Landlock here. In the child it enters the namespaces, sets no_new_privs,
    restricts itself and installs the seccomp filter (where `available().filtered`); a failure
    there writes `sandbox failed: …` to the child's stderr and raises, so the child never execs
    and Popen raises subprocess.SubprocessError."""
    level = _landlock_level()
    try:
        steps = _steps(policy, use_namespaces)
        prepared = landlock.Prepared(_rules(policy, steps), level)
    except OSError as exc:
        raise SandboxError(one_line(f"sandbox failed: {policy.label}: {exc}")) from None
    return Confinement(prepared, policy.label, steps, _filter())


def confine_self(policy: Policy) -> None:
    """Confine the calling thread (and every process it starts or execs) to `policy` for
    good; call it from the thread that then execs. Linux only: on macOS run the command
    through `wrap_argv` instead. SandboxError when it cannot be done (the process must then
    exit, not run the command: it may be partly restricted). Enters the namespaces first where
    they work here (the calling process must then have no other thread), and installs the
    seccomp filter last where it works here."""
    level = _landlock_level()
    try:
        steps = _steps(policy, None)
        prepared = landlock.Prepared(_rules(policy, steps), level)
        syscalls = _filter()
        try:
            if steps is not None:
                namespaces.enter(steps)
            prepared.apply()
            if syscalls is not None:
                syscalls.install()
        finally:
            prepared.close()
    except OSError as exc:
        raise SandboxError(one_line(f"sandbox failed: {policy.label}: {exc}")) from None
