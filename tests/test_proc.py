"""proc.run_streaming: process groups, timeouts, streaming to files, stdin."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

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
