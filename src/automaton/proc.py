"""The one place that starts processes: short captured calls, and harness (agent) runs."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from automaton.core.errors import one_line
from automaton.core.sandbox import Policy

# The sandbox (ctypes, Landlock, namespaces) is imported where an agent's run starts it: every
# git call of `--check-gate` imports this module and never needs it (bench/bench_gate.py).
if TYPE_CHECKING:
    from automaton.sandbox import Confinement
    from automaton.sandbox.pipes import Sink


@dataclass(frozen=True)
class Captured:
    """A finished short command: exit `code`, `out` and `err` text. code 127: not found."""

    code: int
    out: str
    err: str


# ---- the programs the runner itself starts ---------------------------------------------------
# While a tick runs, the project (its `.venv/bin` and every other folder in it) is the agent's to
# write. A `git` (or `crontab`, a notify command ...) it plants there must never run for the
# runner, unsandboxed: `run_capture` then resolves a bare program name on PATH without any entry
# whose real path lies inside the project, and gives the program that cleaned PATH too (git
# starts `sh` and its helpers by PATH). The agent's own roles (`run_streaming`) keep their
# PATH: they run sandboxed, and use the project's `.venv/bin/pytest` as a human would.
PINNED_GIT_ENV = "AUTOMATON_GIT"  # the git run-tick.sh recorded at --install-schedule (absolute)
_untrusted: str | None = None  # real path of the project root while `pinned_programs` holds
_found: dict[str, str] = {}
_paths: dict[str, str] = {}


def beneath(path: str, root: str) -> bool:
    """Whether real path `path` is `root` or inside it (both real paths; components compared)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


@contextlib.contextmanager
def pinned_programs(root: Path | str) -> Iterator[None]:
    """Within the block, `run_capture` never runs a program from inside `root` (the project
    the agent can write): see `program` and `runner_path`. Nested blocks restore the outer."""
    global _untrusted
    outer = _untrusted
    _untrusted = os.path.realpath(root)
    _found.clear()
    _paths.clear()
    try:
        yield
    finally:
        _untrusted = outer
        _found.clear()
        _paths.clear()


def runner_path(path: str | None = None, root: str | None = None) -> str:
    """`path` (default: this process's PATH) without the entries whose real path is inside
    `root` (default: the project of `pinned_programs`; unchanged outside one). An empty or
    relative entry names the current folder, which is the project during a tick: dropped too."""
    root = _untrusted if root is None else os.path.realpath(root)
    text = os.environ.get("PATH", os.defpath) if path is None else path
    if root is None:
        return text
    key = f"{root}\0{text}"
    if key not in _paths:
        kept = [e for e in text.split(os.pathsep)
                if e and os.path.isabs(e) and not beneath(os.path.realpath(e), root)]
        _paths[key] = os.pathsep.join(kept)
    return _paths[key]


def find_program(name: str, root: Path | str, path: str | None = None) -> str | None:
    """The absolute path of program `name` on `path` (default: PATH) outside `root`: the first
    match whose real path is not inside `root` (a link from outside into it does not count).
    None when there is none."""
    real_root = os.path.realpath(root)
    for entry in runner_path(path, str(root)).split(os.pathsep):
        found = shutil.which(name, path=entry)
        if found is not None and not beneath(os.path.realpath(found), real_root):
            return os.path.abspath(found)
    return None


def program(name: str) -> str:
    """What `run_capture` executes for argv[0] `name`: `name` itself outside `pinned_programs`
    or when it holds a path separator; else its absolute path outside the project (git: the
    `AUTOMATON_GIT` run-tick.sh exports, when it is an executable file outside the project),
    cached per block; `name` unchanged when none is found (the cleaned PATH then fails: 127)."""
    root = _untrusted
    if root is None or os.sep in name or (os.altsep and os.altsep in name):
        return name
    if name not in _found:
        pinned = os.environ.get(PINNED_GIT_ENV, "") if name == "git" else ""
        if (pinned and os.path.isabs(pinned) and os.path.isfile(pinned) and os.access(pinned, os.X_OK)
                and not beneath(os.path.realpath(pinned), root)):
            _found[name] = pinned
        else:
            _found[name] = find_program(name, root) or name
    return _found[name]


def run_capture(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 60.0,
    exact_bytes: bool = False,
) -> Captured:
    """Run a short command (git, crontab, launchctl …) and capture its output.

    Never raises for the command's own failure: a missing executable gives code 127, a
    timeout code 124 (the conventions of shells and `timeout(1)`). `exact_bytes=True` keeps
    every byte of stdin/stdout (no newline translation, undecodable bytes round-trip via
    surrogateescape): for text automaton writes back, such as a user's crontab. Inside
    `pinned_programs`, argv[0] and the PATH the program gets leave the project out.
    """
    if _untrusted is not None:
        argv = [program(argv[0]), *argv[1:]] if argv else argv
        env = {**(os.environ if env is None else env)}
        env["PATH"] = runner_path(env.get("PATH", os.defpath))
    try:
        if exact_bytes:
            raw = subprocess.run(
                list(argv), cwd=cwd, env=dict(env) if env is not None else None, capture_output=True,
                input=None if stdin is None else stdin.encode("utf-8", "surrogateescape"),
                timeout=timeout_s, check=False,
            )
            return Captured(raw.returncode, raw.stdout.decode("utf-8", "surrogateescape"),
                            raw.stderr.decode("utf-8", "replace"))
        done = subprocess.run(
            list(argv), cwd=cwd, input=stdin, env=dict(env) if env is not None else None,
            capture_output=True, text=True, timeout=timeout_s, check=False,
        )
    except FileNotFoundError as exc:
        return Captured(127, "", f"{argv[0]}: not found ({exc.strerror})")
    except subprocess.TimeoutExpired:
        return Captured(124, "", f"{argv[0]}: timed out after {timeout_s:g} s")
    except OSError as exc:
        return Captured(126, "", f"{argv[0]}: cannot run ({exc.strerror})")
    except ValueError as exc:  # an argv or cwd no process can take (an embedded NUL)
        return Captured(126, "", f"{argv[0]!r}: cannot run ({exc})")
    return Captured(done.returncode, done.stdout, done.stderr)


# Seconds between SIGTERM to a timed-out process group and SIGKILL to whatever is left.
GRACE_S = 5.0
# Seconds to wait after SIGKILL for the group to empty (zombies nobody reaps never do).
KILL_SETTLE_S = 1.0
# Bytes kept per output stream; past it the oldest output is dropped (the tail is kept).
MAX_BYTES = 50 * 1024 * 1024
# Seconds to wait, once every process of the run is dead, for the output pipes to drain.
DRAIN_S = 2.0

# Child pids of the runs in progress in this process: one run's clean-up spares the others.
_ACTIVE: set[int] = set()
_ACTIVE_LOCK = threading.Lock()


@dataclass(frozen=True)
class Streamed:
    """A finished streamed run: exit `code` (127 not found, 126 cannot run or cannot be
    confined; a signal N gives -N as Popen reports it), `timed_out` (the group was
    terminated), `duration_s` (seconds), `truncated_bytes` (output dropped from the front of
    the files to keep each within its cap, both streams together)."""

    code: int
    timed_out: bool
    duration_s: float
    truncated_bytes: int = 0


def stop_runs() -> list[int]:
    """SIGKILL the process group of every run in progress in this process (the runner's
    SIGTERM/SIGHUP handler, `runner.cli`: the agent goes first, then the runner unwinds and
    `run_streaming` cleans up the rest); returns the groups signalled. Safe in a signal
    handler: it takes no lock (the handler may interrupt a holder of `_ACTIVE_LOCK`)."""
    groups = sorted(_ACTIVE)
    if os.name != "nt":
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
    return groups


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member we may not signal still exists
        return True
    return True


def _signal_group(child: subprocess.Popen[bytes], sig: int) -> None:
    if os.name == "nt":  # pragma: no cover - no process groups with POSIX signals on Windows
        with contextlib.suppress(OSError):
            child.kill() if sig == getattr(signal, "SIGKILL", None) else child.terminate()
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, sig)


def _stop_group(child: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM the whole group, wait up to `grace_s` for it to empty, then SIGKILL the rest."""
    _signal_group(child, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        child.poll()  # reap the leader so a zombie leader does not keep the group "alive"
        if os.name == "nt" or not _group_alive(child.pid):
            break
        time.sleep(0.05)
    if os.name != "nt":
        _signal_group(child, signal.SIGKILL)
    child.wait()
    # SIGKILL is delivered asynchronously: give the rest of the group a moment to die.
    settle = time.monotonic() + KILL_SETTLE_S
    while os.name != "nt" and _group_alive(child.pid) and time.monotonic() < settle:
        time.sleep(0.02)


def run_streaming(
    argv: Sequence[str],
    *,
    out_path: Path,
    err_path: Path | None = None,
    cwd: Path | None = None,
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float,
    grace_s: float = GRACE_S,
    sandbox: Policy | None = None,
    max_bytes: int = MAX_BYTES,
    pass_fds: tuple[int, ...] = (),
    sealed: bool = False,
) -> Streamed:
    """Run a long child (a harness) with its output streamed to files through pipes.

    stdout goes to `out_path`, stderr to `err_path` (default: the same file); both are
    truncated first. The child writes into pipes that reader threads of this process copy
    into the files (`sandbox.pipes`), so it never holds the files themselves; 10 MB of
    output cannot deadlock. Each file keeps its last `max_bytes` bytes (ValueError below 1);
    what was dropped is `truncated_bytes`. `stdin` text is handed over through a temporary
    file. With `sandbox`, the child is confined to that policy by the kernel (Landlock on
    Linux, Seatbelt on macOS) and gets TMPDIR/TMP/TEMP = `policy.tmpdir`; where that cannot
    be done it is not started at all: code 126 and a line `sandbox unavailable: …` or
    `sandbox failed: …` in the stderr file. `pass_fds`: descriptors of this process the child
    inherits under the same numbers (POSIX; the verifier's result pipe, `runner.freeze`).
    `sealed` (an agent CLI whose output its cost is read from, `harnesses._cli.run_cli`): the
    child's stdout and stderr are the ends of connected Unix socket pairs (`sealed_channel`)
    instead of pipes: no other process can open them, so what the files hold is what the child
    itself wrote (a pipe is reopened for writing through /proc/<pid>/fd/1 by any process of the
    same user that may read that folder).

    The child starts in its own session and process group; after `timeout_s` seconds the
    group gets SIGTERM, then SIGKILL after `grace_s` seconds. When it ends, everything it
    left behind is killed: the rest of its group, and (Linux, this process being a child
    subreaper) every descendant started since the call began, also those that called
    setsid() or double-forked. Children that other threads of this process start meanwhile
    by other means than this function count as the run's (one agent at a time per process).
    When this process dies meanwhile, even by SIGKILL, the run dies with it (Linux): the child
    by the kernel (PR_SET_PDEATHSIG = SIGKILL, `reaper.die_with_parent`; set only when the main
    thread starts it), its group by a watcher outside it (`reaper.watch_group`). A descendant
    that left the group (setsid) is left to the next tick of its loop (`runner.leftovers`).
    Never raises for the child's own failure: a missing executable gives code 127, an
    unrunnable one 126.
    """
    argv = list(argv)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    from automaton.sandbox import pipes  # lazy: see the note at the top

    with contextlib.ExitStack() as stack:
        out = stack.enter_context(pipes.Sink(out_path, max_bytes))
        err = out if err_path is None or err_path == out_path else stack.enter_context(pipes.Sink(err_path, max_bytes))
        code, timed_out = _run(argv, out, err, cwd, stdin, env, timeout_s, grace_s, sandbox, stack, pass_fds,
                               sealed)
    dropped = out.dropped + (err.dropped if err is not out else 0)
    return Streamed(code, timed_out, time.monotonic() - started, dropped)


def sealed_channel() -> tuple[int, int]:
    """(read end, write end) of a one-way byte stream no third process can open: on Linux a
    connected AF_UNIX stream socket pair, each end shut in the direction it does not use. The
    kernel refuses open(2) of a socket's /proc/<pid>/fd/<n> link (ENXIO; a pipe's link opens:
    see tests/test_proc.py), so a process that does not inherit the write end cannot add to
    the stream. Elsewhere an ordinary pipe: without /proc no other process can reopen it (macOS
    /dev/fd names the caller's own descriptors), and Seatbelt's rule against UNIX sockets would
    be in the way."""
    if not sys.platform.startswith("linux"):
        return os.pipe()
    reader, writer = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    reader.shutdown(socket.SHUT_WR)
    writer.shutdown(socket.SHUT_RD)
    return reader.detach(), writer.detach()


def _child_setup(confine: Confinement | None) -> Callable[[], None] | None:
    """The `preexec_fn` of a role: its confinement, then (Linux, forked by the main thread)
    `reaper.die_with_parent`, last, so no later step of the child can clear it. PR_SET_PDEATHSIG
    fires when the *thread* that forked ends, so a child forked by another thread (which may end
    while the process lives on) is left to the group watcher and the leftovers step."""
    from automaton.sandbox import reaper  # lazy: see the note at the top

    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return confine
    parent = os.getpid()

    def setup() -> None:
        if confine is not None:
            confine()
        reaper.die_with_parent(parent)

    return setup


def _spawn(argv: list[str], preexec_fn: Confinement | None, **popen: Any) -> subprocess.Popen[bytes] | tuple[int, str]:
    """Popen, registered as a run in progress; or (exit code, one-line reason) when it did not start."""
    try:
        with _ACTIVE_LOCK:  # no other run's clean-up may take this child for a leftover
            child = subprocess.Popen(argv, preexec_fn=_child_setup(preexec_fn), **popen)
            _ACTIVE.add(child.pid)
        return child
    except FileNotFoundError as exc:
        return 127, f"{argv[0]}: not found ({exc.strerror})"
    except OSError as exc:
        return 126, f"{argv[0]}: cannot run ({exc.strerror})"
    except ValueError as exc:  # an argv or cwd no process can take (an embedded NUL)
        return 126, f"{argv[0]!r}: cannot run ({exc})"
    except subprocess.SubprocessError:  # preexec_fn raised: the child was not confined, so it never ran
        return 126, f"sandbox failed: could not confine {argv[0]}; not run"
    finally:
        if preexec_fn is not None:
            preexec_fn.close()  # the ruleset, held open for the child


def _wait(child: subprocess.Popen[bytes], timeout_s: float) -> None:
    """`child.wait(timeout=timeout_s)` without its polling: Popen.wait with a timeout sleeps
    0.5 ms, 1, 2, … up to 50 ms between looks, so a run that ended is noticed up to that late
    (about a quarter of a short run's time, on every role and verify run of a tick). On Linux
    a pidfd becomes readable the moment the process exits; elsewhere Popen's own wait."""
    pidfd_open = getattr(os, "pidfd_open", None)
    try:
        fd = pidfd_open(child.pid) if pidfd_open is not None else None
    except OSError:  # an older kernel (before 5.3), or a seccomp filter refusing it
        fd = None
    if fd is None:
        child.wait(timeout=timeout_s)
        return

    try:
        watch = select.poll()
        watch.register(fd, select.POLLIN)
        if not watch.poll(max(0, min(int(timeout_s * 1000), 2**31 - 1))):
            raise subprocess.TimeoutExpired(child.args, timeout_s)
    finally:
        os.close(fd)
    child.wait()


def _run(argv: list[str], out: Sink, err: Sink, cwd: Path | None, stdin: str | None, env: Mapping[str, str] | None,
         timeout_s: float, grace_s: float, policy: Policy | None, stack: contextlib.ExitStack,
         pass_fds: tuple[int, ...] = (), sealed: bool = False) -> tuple[int, bool]:
    """Start, wait for and clean up after one run; (exit code, timed out)."""
    from automaton.sandbox import launch, pipes, reaper  # lazy: see the note at the top

    if not argv:
        err.write(b"cannot run an empty command\n")
        return 126, False
    preexec_fn: Confinement | None = None
    if policy is not None:
        how = launch.prepare(policy, argv, cwd)
        if isinstance(how, str):
            err.write(how.encode("utf-8", "backslashreplace") + b"\n")
            return 126, False
        argv, preexec_fn = how.argv, how.preexec_fn
    stdin_file: Any = subprocess.DEVNULL
    if stdin is not None:
        stdin_file = stack.enter_context(tempfile.TemporaryFile())  # noqa: SIM115 - closed by the stack
        stdin_file.write(stdin.encode("utf-8"))
        stdin_file.seek(0)
    extra: dict[str, Any] = {"start_new_session": True}
    if pass_fds:
        extra["pass_fds"] = pass_fds
    if os.name == "nt":  # pragma: no cover
        extra = {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}
    channel = sealed_channel if sealed else os.pipe
    out_r, out_w = channel()
    err_r, err_w = (None, out_w) if err is out else channel()
    reaper.become_subreaper()
    before = set(reaper.descendants())
    try:
        child = _spawn(argv, preexec_fn, cwd=cwd, env=launch.child_env(env, policy), stdin=stdin_file, stdout=out_w,
                       stderr=err_w, **extra)
    finally:
        for fd in {out_w, err_w}:
            os.close(fd)
        pumps = [pipes.Pump(fd, sink) for fd, sink in ((out_r, out), (err_r, err)) if fd is not None]
    if isinstance(child, tuple):
        pipes.finish(pumps, DRAIN_S)  # the child's own last words (why the sandbox failed) come first
        err.write(one_line(child[1]).encode("utf-8", "backslashreplace") + b"\n")
        return child[0], False
    watch = reaper.watch_group(child.pid)  # the group dies with this process, however it ends
    timed_out = False
    try:
        try:
            _wait(child, timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _stop_group(child, grace_s)
        except BaseException:  # KeyboardInterrupt, a signal: never leave the agent running
            _stop_group(child, grace_s)
            raise
        if not timed_out and os.name != "nt":
            _signal_group(child, signal.SIGKILL)  # background grandchildren left in the group
    finally:
        reaper.unwatch(watch)  # before the group's id can be reused
        with _ACTIVE_LOCK:
            _ACTIVE.discard(child.pid)
            reaper.kill_descendants(before | _ACTIVE)
        pipes.finish(pumps, DRAIN_S)
    return (child.returncode if child.returncode is not None else -1), timed_out
