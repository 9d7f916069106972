"""A full disk mid-tick (runner/iohalt.py): the loop halts `human_intervention: io_error`,
durably (at once, or through the pending marker by the next tick), notifies, and the runner
exits 1 with one line naming the path and the fix; never "internal error" (exit 3)."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from automaton.commands.loop_gate import check_gate
from automaton.commands.loop_status import loop_status
from automaton.core.errors import EnvironmentFailure
from automaton.runner import ledger
from automaton.runner.iohalt import PENDING
from automaton.runner.tick import tick
from automaton.store import atomic
from automaton.store import loops as store
from tests.helpers import git, run_cli
from tests.runner.loopkit import make_loop

PY = sys.executable
_real_record = ledger.record
VERIFY = {"roles": {"implement": {"prompt": "implement.md"},
                    "verify": {"command": [PY, "-c", "print('1 passed, 1 failed')"], "score": "summary"},
                    "orchestrate": {"builtin": True}}}


class Disk:
    """The write layer of store/atomic.py on a disk that fills when `full` is set."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.full = False

        def write(fd: int, data: Any) -> int:
            if self.full:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return os.write(fd, data)

        proxy = SimpleNamespace(**{k: getattr(os, k) for k in dir(os) if not k.startswith("__")})
        proxy.write = write
        monkeypatch.setattr(atomic, "os", proxy)


@pytest.fixture
def notified(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    sent: list[tuple[str, str]] = []
    from automaton import notify

    monkeypatch.setattr(notify, "notify_logged",
                        lambda project, name, event, body, **kw: sent.append((name, event)))
    return sent


def _fill_at_settling(monkeypatch: pytest.MonkeyPatch, disk: Disk) -> None:
    real = ledger.record

    def record(*args: Any, **kwargs: Any) -> Any:
        disk.full = True  # the agent's run filled the disk: the settling record cannot be written
        return real(*args, **kwargs)

    monkeypatch.setattr(ledger, "record", record)


def test_a_disk_that_fills_mid_tick_leaves_the_halt_pending_and_the_next_tick_records_it(
        project: Path, monkeypatch: pytest.MonkeyPatch, notified: list[tuple[str, str]]) -> None:
    proj = make_loop(project, **VERIFY)
    disk = Disk(monkeypatch)
    _fill_at_settling(monkeypatch, disk)
    with pytest.raises(EnvironmentFailure) as err:
        tick(proj, "demo")
    assert "disk is full" in err.value.message and "io_error" in err.value.message
    loop_dir = proj.loop_dir(store.require_tracked(proj, "demo"))
    assert (loop_dir / PENDING).is_file()
    disk.full = False  # space freed: the loop must not carry on as if nothing happened
    monkeypatch.setattr(ledger, "record", _real_record)
    # Before the next tick records it, both views show the halt waiting to be written.
    gate = check_gate(proj, "demo")
    assert gate.code == 1 and gate.data is not None and gate.data["reason"] == "io_error_pending"
    assert str(gate.data["io_error_pending"]).startswith("io_error: cannot write ")
    assert gate.lines[1].startswith("  pending halt: human_intervention: io_error: cannot write ")
    shown = loop_status(proj, "demo")
    assert shown.data is not None and shown.data["io_error_pending"] == gate.data["io_error_pending"]
    assert gate.lines[1] in shown.lines and "the next tick records the halt" in str(shown.data["next_step"])
    out = tick(proj, "demo")
    assert out.code == 1 and out.data is not None and out.data["ran"] is False
    state = store.read_state(proj, "demo")
    assert (state.status, state.halt_reason) == ("halted", "human_intervention")
    assert state.halt_detail is not None and state.halt_detail.startswith("io_error: cannot write ")
    assert state.iteration_count == 1  # the refused tick charged nothing
    assert not (loop_dir / PENDING).exists()
    assert notified == [("demo", "halt")]
    assert tick(proj, "demo").code == 1  # halted: the gate refuses until a human approves


def test_a_disk_full_halt_that_can_be_written_is_written_at_once_and_the_runner_exits_1(
        project: Path, monkeypatch: pytest.MonkeyPatch, notified: list[tuple[str, str]]) -> None:
    proj = make_loop(project, **VERIFY)
    where = str(project / ".automaton" / "loops" / "demo" / "runs" / "1" / "cost.json")

    def record(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), where)

    monkeypatch.setattr(ledger, "record", record)
    res = run_cli("--mode", "tick", "--loop", "demo", "--quiet", cwd=project, entry="automaton-loop")
    assert res.code == 1, res.err
    assert len(res.err.strip().splitlines()) == 1 and "internal error" not in res.err
    assert f"cannot write {where}: the disk is full" in res.err and "io_error" in res.err
    state = store.read_state(proj, "demo")
    assert state.status == "halted" and (state.halt_detail or "").startswith("io_error: ")
    assert notified == [("demo", "halt")]


def test_a_full_disk_is_one_line_exit_1_for_the_cli(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`automaton --create-task t` on a full disk: once `internal error: OSError: [Errno 28]` (exit 3)."""
    Disk(monkeypatch).full = True
    res = run_cli("--create-task", "t", cwd=project)
    assert res.code == 1, res.err
    line = res.err.strip()
    assert "\n" not in line and "internal error" not in line and "a bug" not in line
    assert f"cannot write {project}" in line and "the disk is full: free space" in line


def test_a_worktree_that_cannot_be_made_on_a_full_disk_says_so(project: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from automaton.git.worktree import WorktreeResult
    from automaton.runner import worktree

    proj = make_loop(project, **VERIFY)
    said = "git worktree add failed: fatal: could not create work tree dir 'x': No space left on device"
    monkeypatch.setattr(worktree, "ensure_worktree", lambda root, *a, **k: WorktreeResult(
        root, None, None, fallback=said, kind="failed"))
    with pytest.raises(EnvironmentFailure) as err:
        tick(proj, "demo")
    assert "disk is full" in err.value.message and "first commit" not in err.value.message
    assert store.read_state(proj, "demo").iteration_count == 0  # refused before the reservation


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_real_full_tmpfs_is_one_line_exit_1(tmp_path: Path) -> None:
    """The same on a real full disk: a 256 KiB tmpfs filled to the last block."""
    import subprocess

    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], check=False,
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        proj = mnt / "proj"
        proj.mkdir()
        git(proj, "init", "-q", "-b", "main")
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
        try:  # fill the disk to its last block
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        res = subprocess.run([PY, "-m", "automaton.cli.main", "--create-task", "t"], cwd=proj, check=False,
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 1, res.stderr
        assert "internal error" not in res.stderr and "the disk is full" in res.stderr
        assert len(res.stderr.strip().splitlines()) == 1
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
