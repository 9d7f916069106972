"""The one place that starts processes (DESIGN §10): short captured calls, and harness runs."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Captured:
    """A finished short command: exit `code`, `out` and `err` text. code 127: not found."""

    code: int
    out: str
    err: str


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
    surrogateescape): for text automaton writes back, such as a user's crontab.
    """
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


@dataclass(frozen=True)
class Streamed:
    """A finished streamed run: exit `code` (127 not found, 126 cannot run; a signal N gives
    -N as Popen reports it), `timed_out` (the group was terminated), `duration_s` (seconds)."""

    code: int
    timed_out: bool
    duration_s: float


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


def kill_writers(paths: Sequence[Path]) -> list[int]:
    """SIGKILL every other process that holds one of `paths` open for writing; returns their pids.

    A harness's grandchild that left the process group (`setsid`, a daemonising agent tool)
    survives the group kill but still writes our transcript through the stdout it inherited:
    that is how it is found. Readers (a user's `tail -f`) are left alone. Linux `/proc` only;
    elsewhere (and for processes we may not inspect) nothing is done.
    """
    proc = Path("/proc")
    if not (proc / "self" / "fd").is_dir():
        return []
    wanted = {os.path.realpath(p) for p in paths}
    killed: list[int] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) not in wanted:
                    continue
                flags = (entry / "fdinfo" / fd.name).read_text().split("flags:", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if int(flags, 8) & (os.O_WRONLY | os.O_RDWR):
                with contextlib.suppress(OSError):
                    os.kill(int(entry.name), signal.SIGKILL)
                    killed.append(int(entry.name))
                break
    return killed


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
) -> Streamed:
    """Run a long child (a harness) with its output streamed straight to files.

    stdout goes to `out_path`, stderr to `err_path` (default: the same file); both are
    truncated first. There are no pipes to fill, so a child that prints 10 MB cannot
    deadlock. `stdin` text is handed over through a temporary file for the same reason.
    The child starts in its own session and process group (`start_new_session`); after
    `timeout_s` seconds the whole group gets SIGTERM, then SIGKILL after `grace_s` seconds
    (DESIGN §6). Leftover members of the group (background grandchildren) are killed too
    when the leader exits, and so is any process that left the group but still writes the
    output files (`kill_writers`), so nothing outlives the call. Never raises for the child's own
    failure: a missing executable gives code 127, an unrunnable one 126.
    """
    out_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(open(out_path, "wb"))
        err = out if err_path is None or err_path == out_path else stack.enter_context(open(err_path, "wb"))
        stdin_file = None
        if stdin is not None:
            stdin_file = stack.enter_context(tempfile.TemporaryFile())
            stdin_file.write(stdin.encode("utf-8"))
            stdin_file.seek(0)
        extra: dict[str, object] = {}
        if os.name == "nt":  # pragma: no cover
            extra["creationflags"] = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
        else:
            extra["start_new_session"] = True
        try:
            child = subprocess.Popen(
                list(argv), cwd=cwd, env=dict(env) if env is not None else None,
                stdin=stdin_file if stdin_file is not None else subprocess.DEVNULL,
                stdout=out, stderr=err, **extra,  # type: ignore[call-overload]
            )
        except FileNotFoundError as exc:
            err.write(f"{argv[0]}: not found ({exc.strerror})\n".encode())
            return Streamed(127, False, time.monotonic() - started)
        except OSError as exc:
            err.write(f"{argv[0]}: cannot run ({exc.strerror})\n".encode())
            return Streamed(126, False, time.monotonic() - started)
        except ValueError as exc:  # an argv or cwd no process can take (an embedded NUL)
            err.write(f"{argv[0]!r}: cannot run ({exc})\n".encode())
            return Streamed(126, False, time.monotonic() - started)
        timed_out = False
        try:
            child.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _stop_group(child, grace_s)
        except BaseException:  # KeyboardInterrupt, a signal: never leave the agent running
            _stop_group(child, grace_s)
            raise
        if not timed_out and os.name != "nt":
            _signal_group(child, signal.SIGKILL)  # background grandchildren left in the group
        kill_writers([out_path] if err_path is None else [out_path, err_path])
        code = child.returncode if child.returncode is not None else -1
    return Streamed(code, timed_out, time.monotonic() - started)
