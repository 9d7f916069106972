"""proc.run_streaming: process groups, timeouts, output through pipes (capped), stdin, the sandbox,
and nothing left running afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from automaton.core.sandbox import Policy
from automaton.proc import run_capture, run_streaming


def _script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "child.py"
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


def gone(pid: int) -> bool:
    """True when `pid` no longer runs (a zombie awaiting a reaper that is not ours counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def all_gone(pids: list[int]) -> bool:
    """Whether every pid is gone, allowing the kernel a moment to deliver a SIGKILL already sent."""
    for _ in range(100):
        if all(gone(p) for p in pids):
            return True
        time.sleep(0.02)
    return False


def test_run_capture_still_works() -> None:
    assert run_capture([sys.executable, "-c", "print('hi')"]).out == "hi\n"


def test_ten_megabytes_of_output_stream_to_a_file_without_deadlock(tmp_path: Path) -> None:
    argv = _script(tmp_path, """
        import sys
        chunk = "x" * 1023 + "\\n"
        for _ in range(10 * 1024):
            sys.stdout.write(chunk)
        sys.stderr.write("e" * 200000)
        """)
    out = tmp_path / "out.log"
    done = run_streaming(argv, out_path=out, err_path=tmp_path / "err.log", timeout_s=60)
    assert done.code == 0 and not done.timed_out
    assert out.stat().st_size == 10 * 1024 * 1024
    assert (tmp_path / "err.log").stat().st_size == 200000


def test_stdin_text_reaches_the_child(tmp_path: Path) -> None:
    argv = _script(tmp_path, "import sys; sys.stdout.write(sys.stdin.read().upper())")
    out = tmp_path / "out.log"
    done = run_streaming(argv, out_path=out, stdin="héllo prompt", timeout_s=30)
    assert done.code == 0
    assert out.read_text(encoding="utf-8") == "HÉLLO PROMPT"


def test_exit_code_and_missing_executable(tmp_path: Path) -> None:
    assert run_streaming([sys.executable, "-c", "raise SystemExit(7)"], out_path=tmp_path / "o",
                         timeout_s=30).code == 7
    missing = run_streaming([str(tmp_path / "nope")], out_path=tmp_path / "o2", timeout_s=30)
    assert missing.code == 127
    assert "not found" in (tmp_path / "o2").read_text()


def test_timeout_kills_the_whole_group_including_grandchildren_that_ignore_sigterm(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    argv = _script(tmp_path, f"""
        import os, signal, subprocess, sys, time
        kids = [subprocess.Popen([sys.executable, "-c",
                 "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
                for _ in range(2)]
        with open({str(pids)!r}, "w") as fh:
            fh.write(" ".join(str(p) for p in [os.getpid()] + [k.pid for k in kids]))
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("working", flush=True)
        while True:
            time.sleep(1)
        """)
    done = run_streaming(argv, out_path=tmp_path / "out.log", timeout_s=3, grace_s=1)
    assert done.timed_out
    assert done.code < 0  # killed by a signal
    assert done.duration_s < 3 + 1 + 10  # returns within timeout + grace (plus start-up slack)
    recorded = [int(p) for p in pids.read_text().split()]
    assert len(recorded) == 3
    assert all_gone(recorded), [p for p in recorded if not gone(p)]
    assert "working" in (tmp_path / "out.log").read_text()


def test_background_grandchild_does_not_outlive_a_normal_exit(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    argv = _script(tmp_path, f"""
        import subprocess, sys
        kid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(pids)!r}, "w").write(str(kid.pid))
        """)
    done = run_streaming(argv, out_path=tmp_path / "out.log", timeout_s=30)
    assert done.code == 0 and not done.timed_out
    assert all_gone([int(pids.read_text())])


# ---- output through the runner's pipes, capped ------------------------------------------------

def test_the_child_holds_pipes_not_the_transcript(tmp_path: Path) -> None:
    """It can only append to its own stream: no seek back, no truncation, no reopening the file."""
    out = tmp_path / "out.log"
    argv = _script(tmp_path, """
        import errno, os, sys
        print("first line", flush=True)
        for name, fn in [("seek", lambda: os.lseek(1, 0, os.SEEK_SET)), ("truncate", lambda: os.ftruncate(1, 0)),
                         ("reopen", lambda: os.lseek(os.open("/proc/self/fd/1", os.O_WRONLY), 0, 0))]:
            try:
                fn()
                print(name, "done", flush=True)
            except OSError as exc:
                print(name, errno.errorcode[exc.errno], flush=True)
        """)
    done = run_streaming(argv, out_path=out, timeout_s=30)
    assert done.code == 0
    assert out.read_text().splitlines() == ["first line", "seek ESPIPE", "truncate EINVAL", "reopen ESPIPE"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/<pid>/fd reopens a pipe on Linux only")
def test_a_sealed_run_holds_sockets_no_other_process_can_open(tmp_path: Path) -> None:
    """`sealed=True` (an agent CLI, whose output its cost is read from): another process of the
    same user cannot open the child's stdout through /proc/<pid>/fd/1 (a pipe's link opens: the
    test above), so it cannot append a result of its own (issue 24)."""
    out, err = tmp_path / "out.log", tmp_path / "err.log"
    argv = _script(tmp_path, """
        import errno, os, subprocess, sys
        print("the cli's own line", flush=True)
        sys.stderr.write("to stderr\\n")
        other = "import errno, os, sys\\ntry:\\n    os.open(f'/proc/{sys.argv[1]}/fd/1', os.O_WRONLY)\\n" \\
                "    print('opened')\\nexcept OSError as exc:\\n    print(errno.errorcode[exc.errno])"
        said = subprocess.run([sys.executable, "-c", other, str(os.getpid())], capture_output=True, text=True)
        print("other process:", said.stdout.strip(), flush=True)
        """)
    done = run_streaming(argv, out_path=out, err_path=err, timeout_s=30, sealed=True)
    assert done.code == 0
    assert out.read_text().splitlines() == ["the cli's own line", "other process: ENXIO"]
    assert err.read_text() == "to stderr\n"


def test_output_past_the_cap_keeps_the_tail(tmp_path: Path) -> None:
    argv = _script(tmp_path, """
        import sys
        for i in range(10 * 1024):
            sys.stdout.write("%09d " % i + "x" * 1013 + "\\n")  # 1 KiB per line, numbered
        sys.stderr.write("e" * 5000)
        """)
    out, err = tmp_path / "out.log", tmp_path / "err.log"
    done = run_streaming(argv, out_path=out, err_path=err, timeout_s=60, max_bytes=1024 * 1024)
    assert done.code == 0
    data = out.read_bytes()
    assert len(data) == 1024 * 1024
    assert data.startswith(b"%09d " % (9 * 1024)) and data.endswith(b"%09d " % (10 * 1024 - 1) + b"x" * 1013 + b"\n")
    assert done.truncated_bytes == 9 * 1024 * 1024
    assert err.read_bytes() == b"e" * 5000


def test_empty_command_is_refused(tmp_path: Path) -> None:
    assert run_streaming([], out_path=tmp_path / "o", timeout_s=5).code == 126


# ---- nothing outlives the run ----------------------------------------------------------------

DAEMON = """
    import os, pathlib, sys, time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            pathlib.Path({pidfile!r}).write_text(str(os.getpid()))
            print("daemon up", flush=True)
            time.sleep(600)
        os._exit(0)
    os.wait()
    while not pathlib.Path({pidfile!r}).exists():
        time.sleep(0.01)
    """


@pytest.mark.parametrize("confined", [False, True])
def test_a_setsid_double_forked_daemon_is_dead_when_the_call_returns(tmp_path: Path, confined: bool) -> None:
    pidfile = tmp_path / "work" / "daemon.pid"
    pidfile.parent.mkdir()
    policy = Policy((pidfile.parent,), (), None, "test", visible=(tmp_path,)) if confined else None
    older = subprocess.Popen(["sleep", "600"])  # a child of the caller from before: it must survive
    try:
        done = run_streaming(_script(tmp_path, DAEMON.format(pidfile=str(pidfile))), out_path=tmp_path / "out.log",
                             timeout_s=30, sandbox=policy)
        assert done.code == 0 and not done.timed_out
        assert (tmp_path / "out.log").read_text() == "daemon up\n"  # its stdout was ours: the call still returned
        daemon = int(pidfile.read_text())
        assert all_gone([daemon])
        assert older.poll() is None
    finally:
        older.kill()
        older.wait()


# A runner that runs one role (the agent writes its pid and its child's, then waits) and is
# then killed from outside: the role must not outlive it.
DYING_RUNNER = """
import pathlib, sys
from automaton.core.sandbox import Policy
from automaton.proc import run_streaming
work, tmp, confined = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3] == "1"
policy = Policy((work,), (), None, "test", visible=(tmp,)) if confined else None
agent = ["sh", "-c", "sleep 600 & echo $! > kid.pid; echo $$ > agent.pid; wait"]
run_streaming(agent, out_path=tmp / "out.log", cwd=work, timeout_s=600, sandbox=policy)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
@pytest.mark.parametrize("confined", [False, True])
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_role_dies_with_its_runner(tmp_path: Path, confined: bool, sig: signal.Signals) -> None:
    """The runner killed (SIGKILL: no handler runs; SIGTERM: Python's default, no handler
    either, here) while its role runs: the agent and the agent's child are gone after it."""
    work = tmp_path / "work"
    work.mkdir()
    runner = subprocess.Popen([sys.executable, "-c", DYING_RUNNER, str(work), str(tmp_path), "1" if confined else "0"],
                              start_new_session=True)
    try:
        for _ in range(1200):
            if (work / "agent.pid").exists() or runner.poll() is not None:
                break
            time.sleep(0.05)
        agent, kid = int((work / "agent.pid").read_text()), int((work / "kid.pid").read_text())
        assert not gone(agent) and not gone(kid)
        runner.send_signal(sig)
        assert runner.wait(timeout=60) == -sig
        assert any(all_gone([agent, kid]) for _ in range(15)), (gone(agent), gone(kid))  # a generous bound
    finally:
        runner.kill()
        runner.wait()


# ---- the sandbox -----------------------------------------------------------------------------

ATTEMPT = """
    import os, sys
    open("inside.txt", "w").write("ok")
    try:
        open({outside!r}, "w").write("pwned")
        print("outside written")
    except OSError as exc:
        print("outside denied", exc.errno)
    print("tmp", os.environ["TMPDIR"], os.environ["TMP"], os.environ["TEMP"])
    """


def test_a_sandboxed_run_writes_only_inside(tmp_path: Path) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside.txt"
    work.mkdir()
    tmp = work / "tmp"  # created by the call
    done = run_streaming(_script(tmp_path, ATTEMPT.format(outside=str(outside))), out_path=tmp_path / "out.log",
                         cwd=work, timeout_s=30, sandbox=Policy((work,), (), tmp, "test", visible=(tmp_path,)))
    assert done.code == 0
    # EACCES from Landlock, or EROFS where the namespace shows the folder read-only
    assert (tmp_path / "out.log").read_text() in (f"outside denied {e}\ntmp {tmp} {tmp} {tmp}\n" for e in (13, 30))
    assert (work / "inside.txt").read_text() == "ok" and not outside.exists() and tmp.is_dir()


def _would_create(tmp_path: Path) -> tuple[list[str], Path]:
    marker = tmp_path / "work" / "ran"
    marker.parent.mkdir(exist_ok=True)
    return [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('ran')"], marker


def test_no_sandbox_here_means_the_command_never_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOMATON_SANDBOX_UNAVAILABLE", "1")
    argv, marker = _would_create(tmp_path)
    done = run_streaming(argv, out_path=tmp_path / "out.log", err_path=tmp_path / "err.log", timeout_s=30,
                         sandbox=Policy((marker.parent,), (), None, "test", visible=(tmp_path,)))
    assert done.code == 126 and not marker.exists()
    err = (tmp_path / "err.log").read_text()
    assert err.startswith("sandbox unavailable: AUTOMATON_SANDBOX_UNAVAILABLE") and err.count("\n") == 1
    monkeypatch.delenv("AUTOMATON_SANDBOX_UNAVAILABLE")
    assert run_streaming(argv, out_path=tmp_path / "out.log", timeout_s=30).code == 0 and marker.exists()


def test_a_contradictory_policy_means_the_command_never_runs(tmp_path: Path) -> None:
    argv, marker = _would_create(tmp_path)
    done = run_streaming(argv, out_path=tmp_path / "out.log", timeout_s=30,
                         sandbox=Policy((marker.parent,), (marker.parent / "key",), None, "test", visible=(tmp_path,)))
    assert done.code == 126 and not marker.exists()
    assert "sandbox failed: sandbox policy test: the hidden" in (tmp_path / "out.log").read_text()


def test_a_kernel_refusal_in_the_child_means_the_command_never_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from automaton.sandbox import _libc, landlock

    real = _libc.syscall

    def refuse_restrict(number: int, *args: object, what: str) -> int:
        if number == landlock.SYS_RESTRICT_SELF:
            raise OSError(1, f"{what}: Operation not permitted")
        return real(number, *args, what=what)  # type: ignore[arg-type]

    monkeypatch.setattr(_libc, "syscall", refuse_restrict)  # the forked child inherits it
    argv, marker = _would_create(tmp_path)
    done = run_streaming(argv, out_path=tmp_path / "out.log", err_path=tmp_path / "err.log", timeout_s=30,
                         sandbox=Policy((marker.parent,), (), None, "loop x tick 1", visible=(tmp_path,)))
    assert done.code == 126 and not marker.exists()
    assert (tmp_path / "err.log").read_text().splitlines() == [
        "sandbox failed: loop x tick 1: [Errno 1] landlock_restrict_self: Operation not permitted",
        f"sandbox failed: could not confine {sys.executable}; not run"]


RUNNER = """
    import sys
    from pathlib import Path
    from automaton.core.sandbox import Policy
    from automaton.proc import run_streaming
    work = Path({work!r})
    agent = "import errno, os, signal\\ntry:\\n    os.kill(os.getppid(), signal.SIGKILL)\\nexcept OSError as e:\\n" \\
            "    print('kill denied', errno.errorcode[e.errno])\\n"
    done = run_streaming([sys.executable, "-c", agent], out_path=work / "agent.log", cwd=work, timeout_s=30,
                         sandbox=Policy((work,), (), None, "test"))
    print("runner survived, agent exit", done.code)
    """


def test_the_agent_cannot_kill_its_runner(tmp_path: Path) -> None:
    """Through a disposable runner process: were the signal not blocked, the test run would die."""
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(_script(tmp_path, RUNNER.format(work=str(work))), capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert done.stdout == "runner survived, agent exit 0\n"
    assert (work / "agent.log").read_text() == "kill denied EPERM\n"


def test_sandboxed_runs_leave_no_descriptor_open(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    policy = Policy((work,), (tmp_path / "home" / ".config" / "automaton",), None, "test", visible=(tmp_path,))
    run_streaming(["true"], out_path=tmp_path / "out.log", timeout_s=30, sandbox=policy)  # warm up (imports)
    before = sorted(os.listdir("/proc/self/fd"))
    for _ in range(3):
        assert run_streaming(["true"], out_path=tmp_path / "out.log", timeout_s=30, sandbox=policy).code == 0
    assert sorted(os.listdir("/proc/self/fd")) == before


# ---- programs the runner starts come from outside the project -------------------------------

def _planted(project: Path, name: str, marker: Path) -> Path:
    """`<project>/.venv/bin/<name>`: writes `marker` when run, then fails."""
    from tests.helpers import fake_exe

    return fake_exe(project / ".venv" / "bin", name,
                    f"open({str(marker)!r}, 'w').write('ran')\nsys.exit(3)\n")


def test_pinned_programs_skip_path_entries_inside_the_project(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from automaton.proc import find_program, pinned_programs, program, runner_path

    project, marker = tmp_path / "proj", tmp_path / "planted-git-ran"
    _planted(project, "git", marker)
    real_git = shutil.which("git")
    assert real_git is not None
    os.symlink(project / ".venv" / "bin", tmp_path / "alias")  # outside by name, inside by real path
    monkeypatch.setenv("PATH", os.pathsep.join([str(tmp_path / "alias"), str(project / ".venv" / "bin"), "",
                                                "relative/bin", os.environ["PATH"]]))
    monkeypatch.chdir(project)
    assert program("git") == "git"  # outside a block nothing changes
    with pinned_programs(project):
        assert os.path.realpath(program("git")) == os.path.realpath(real_git)
        assert str(project) not in runner_path() and str(tmp_path / "alias") not in runner_path()
        assert "relative/bin" not in runner_path().split(os.pathsep)
        assert run_capture(["git", "--version"]).code == 0
        seen = run_capture([sys.executable, "-c", "import os; print(os.environ['PATH'])"]).out
        assert str(project) not in seen and str(tmp_path / "alias") not in seen
    assert not marker.exists()
    found = find_program("git", project)
    assert found is not None and os.path.realpath(found) == os.path.realpath(real_git)
    assert find_program("no-such-program-xyz", project) is None


def test_automaton_git_is_used_only_outside_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from automaton.proc import PINNED_GIT_ENV, pinned_programs, program
    from tests.helpers import fake_exe

    project, marker = tmp_path / "proj", tmp_path / "planted-git-ran"
    inside = _planted(project, "git", marker)
    outside = fake_exe(tmp_path / "tools", "git", "print('pinned')\n")
    monkeypatch.setenv(PINNED_GIT_ENV, str(outside))
    with pinned_programs(project):
        assert program("git") == str(outside)
        assert run_capture(["git"]).out == "pinned\n"
    monkeypatch.setenv(PINNED_GIT_ENV, str(inside))  # a recorded git inside the project is never run
    monkeypatch.setenv("PATH", f"{inside.parent}{os.pathsep}{os.environ['PATH']}")
    with pinned_programs(project):
        assert program("git") != str(inside)
        run_capture(["git", "--version"])
    assert not marker.exists()
