"""reaper: orphans are adopted by this process and killed; older children are spared."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time

import pytest

from automaton.sandbox import become_subreaper, kill_descendants
from automaton.sandbox._libc import preload
from automaton.sandbox.reaper import descendants, die_with_parent, unwatch, watch_group
from tests.test_proc import all_gone, gone

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and subreapers are Linux's")

DAEMON = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        print(os.getpid(), flush=True)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 1), os.dup2(null, 2)  # let the starter's caller see end of file
        time.sleep(600)
    os._exit(0)
os.wait()
"""


def _is_subreaper() -> bool:
    flag = ctypes.c_int(0)
    ctypes.CDLL(None, use_errno=True).prctl(37, ctypes.byref(flag), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
    return flag.value == 1


def test_a_double_forked_daemon_is_adopted_then_killed() -> None:
    assert become_subreaper() and _is_subreaper()
    older = subprocess.Popen(["sleep", "600"])
    try:
        before = set(descendants())
        assert older.pid in before
        starter = subprocess.run([sys.executable, "-c", DAEMON], capture_output=True, text=True, timeout=30, check=True)
        daemon = int(starter.stdout.split()[0])
        found = descendants(before)
        assert daemon in found and found[daemon][0] == os.getpid()  # adopted by us, not by init
        killed = kill_descendants(before)
        assert daemon in killed and older.pid not in killed
        assert all_gone([daemon])
        assert not os.path.exists(f"/proc/{daemon}")  # reaped, not left a zombie
        assert older.poll() is None
    finally:
        older.kill()
        older.wait()


def test_nothing_to_kill_returns_quickly() -> None:
    become_subreaper()
    started = time.monotonic()
    assert kill_descendants(set(descendants())) == []
    assert time.monotonic() - started < 1


def test_survivors_names_a_live_process_of_the_run_and_none_without_proc(monkeypatch: pytest.MonkeyPatch) -> None:
    from automaton.sandbox import reaper

    before = set(descendants())
    child = subprocess.Popen(["sleep", "600"])
    try:
        assert reaper.survivors(before) == [child.pid]
    finally:
        child.kill()
        child.wait()
    assert reaper.survivors(before) == []
    monkeypatch.setattr(reaper, "PROC", "/nonexistent-proc")  # /proc cannot be read: nothing can be said
    assert reaper.survivors(before) is None


GROUP = "import subprocess, sys, time\nkid = subprocess.Popen(['sleep', '300'])\n" \
        "print(kid.pid, flush=True)\ntime.sleep(300)\n"


def _group() -> tuple[subprocess.Popen[str], int]:
    """A process group of two: a leader in a session of its own and its child; (leader, child pid)."""
    leader = subprocess.Popen([sys.executable, "-c", GROUP], stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert leader.stdout is not None
    return leader, int(leader.stdout.readline())


def test_the_group_watcher_kills_the_whole_group_once_its_pipe_closes() -> None:
    """What the kernel does to the watcher's pipe when the runner dies (it closes the runner's
    descriptors) is done here by hand: the group, leader and child, gets SIGKILL."""
    leader, kid = _group()
    watch = watch_group(leader.pid)
    assert watch is not None
    os.close(watch.fd)
    assert leader.wait(timeout=60) == -9
    assert all_gone([kid])
    watch.process.wait(timeout=60)


def test_an_unwatched_group_is_left_alone() -> None:
    """A run that ended normally ends its watcher first: nothing is signalled by it afterwards."""
    leader, kid = _group()
    try:
        unwatch(watch_group(leader.pid))
        time.sleep(0.2)  # not a timing assertion: a watcher that wrongly fired has had its chance
        assert leader.poll() is None and not gone(kid)
    finally:
        os.killpg(leader.pid, 9)
        leader.wait()


def test_a_child_whose_parent_is_gone_does_not_start() -> None:
    """`die_with_parent` in a child that is told another parent (as when the runner died
    between fork and the call): it refuses, and the program never runs."""
    preload()  # no dlopen after fork
    with pytest.raises(subprocess.SubprocessError):
        subprocess.run(["true"], preexec_fn=lambda: die_with_parent(-1), check=False)
    me = os.getpid()  # read here: the preexec_fn runs in the child
    assert subprocess.run(["true"], preexec_fn=lambda: die_with_parent(me), check=False).returncode == 0
