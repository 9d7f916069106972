"""Atomic writes and the crash-safe state + chained log commit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from automaton.store import atomic, chainlog
from automaton.store.tasks import phase_token


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / ".state"
    atomic.atomic_write(target, b"new\n")
    atomic.atomic_write(target, b"research\n")
    assert target.read_bytes() == b"research\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".state"]


def test_temp_name_is_the_seeds(tmp_path: Path) -> None:
    assert atomic.tmp_path(tmp_path / ".state") == tmp_path / ".state.tmp"


def test_write_tmp_then_publish(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")
    tmp = atomic.write_tmp(target, b"new")
    assert target.read_bytes() == b"old" and tmp.read_bytes() == b"new"
    atomic.publish(tmp, target)
    assert target.read_bytes() == b"new" and not tmp.exists()


def test_append_line_is_one_write_of_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "log"
    writes: list[bytes] = []
    real_write = os.write

    def spy(fd: int, data: bytes) -> int:
        writes.append(bytes(data))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", spy)
    atomic.append_line(log, "first")
    atomic.append_line(log, "second ü")
    assert writes == [b"first\n", "second ü\n".encode()]
    assert log.read_text(encoding="utf-8") == "first\nsecond ü\n"
    with pytest.raises(ValueError):
        atomic.append_line(log, "two\nlines")


def _token(data: bytes) -> str | None:
    return phase_token(data)


def test_commit_writes_state_and_a_chained_line(tmp_path: Path) -> None:
    state, log = tmp_path / ".state", tmp_path / ".state.log"
    chainlog.commit(state, log, b"new\n", "new", "CREATED", {"task": "t"})
    chainlog.commit(state, log, b"research\n", "research", "TRANSITION", {"to": "research"})
    assert state.read_bytes() == b"research\n"
    check = chainlog.read_chain(log)
    assert check.ok and [(x.event, x.state) for x in check.lines] == [("CREATED", "new"), ("TRANSITION", "research")]
    assert not atomic.tmp_path(state).exists()


def test_read_chain_missing_is_empty_and_valid(tmp_path: Path) -> None:
    check = chainlog.read_chain(tmp_path / "nope")
    assert check.ok and check.lines == []


def test_read_chain_undecodable_is_broken(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_bytes(b"\xff\xfe\n")
    check = chainlog.read_chain(log)
    assert not check.ok and "cannot read" in check.error


def test_utc_now_shape() -> None:
    stamp = chainlog.utc_now()
    assert len(stamp) == 20 and stamp.endswith("Z") and stamp[10] == "T"


def _interrupted(tmp_path: Path, *, logged: bool) -> tuple[Path, Path]:
    """A commit new -> research cut after the temp file (and the log line if `logged`)."""
    state, log = tmp_path / ".state", tmp_path / ".state.log"
    chainlog.commit(state, log, b"new\n", "new", "CREATED", {})
    atomic.write_tmp(state, b"research\n")
    if logged:
        chainlog.append_event(log, "TRANSITION", {}, "research")
    return state, log


def test_recover_rolls_a_logged_commit_forward(tmp_path: Path) -> None:
    state, log = _interrupted(tmp_path, logged=True)
    chainlog.recover(state, log, _token)
    assert state.read_bytes() == b"research\n"
    assert not atomic.tmp_path(state).exists()
    assert chainlog.read_chain(log).last_state == "research"


def test_recover_drops_an_unlogged_temp(tmp_path: Path) -> None:
    state, log = _interrupted(tmp_path, logged=False)
    chainlog.recover(state, log, _token)
    assert state.read_bytes() == b"new\n"
    assert not atomic.tmp_path(state).exists()


def test_recover_drops_a_garbage_temp(tmp_path: Path) -> None:
    state, log = tmp_path / ".state", tmp_path / ".state.log"
    chainlog.commit(state, log, b"new\n", "new", "CREATED", {})
    atomic.tmp_path(state).write_bytes(b"\x00garbage")
    chainlog.recover(state, log, _token)
    assert state.read_bytes() == b"new\n" and not atomic.tmp_path(state).exists()


def test_recover_first_commit_without_state(tmp_path: Path) -> None:
    state, log = tmp_path / ".state", tmp_path / ".state.log"
    atomic.write_tmp(state, b"new\n")
    chainlog.append_event(log, "CREATED", {}, "new")
    chainlog.recover(state, log, _token)
    assert state.read_bytes() == b"new\n" and not atomic.tmp_path(state).exists()


def test_recover_never_rolls_forward_onto_a_broken_chain(tmp_path: Path) -> None:
    state, log = _interrupted(tmp_path, logged=True)
    log.write_text(log.read_text().replace("CREATED", "FORGED"))
    chainlog.recover(state, log, _token)
    assert state.read_bytes() == b"new\n" and not atomic.tmp_path(state).exists()


def test_recover_without_temp_is_a_no_op(tmp_path: Path) -> None:
    state, log = tmp_path / ".state", tmp_path / ".state.log"
    chainlog.commit(state, log, b"new\n", "new", "CREATED", {})
    before = (state.read_bytes(), log.read_bytes())
    chainlog.recover(state, log, _token)
    assert (state.read_bytes(), log.read_bytes()) == before


def test_read_left_reads_a_file_of_its_own_and_nothing_a_link_or_a_fifo_names(tmp_path: Path) -> None:
    """`read_left`: what a confined run left in its own folder, never through a link."""
    secret = tmp_path / "key"
    secret.write_bytes(b"SECRET")
    own = tmp_path / "own"
    own.mkdir()
    (own / "junit.xml").write_bytes(b"<testsuite/>" * 3)
    assert atomic.read_left(own / "junit.xml", 1 << 20) == b"<testsuite/>" * 3
    assert atomic.read_left(own / "junit.xml", 5) == b"<test"  # at most `limit` bytes
    (own / "link").symlink_to(secret)
    assert atomic.read_left(own / "link", 100) is None
    os.link(secret, own / "hard")  # a second name of a file the run could not read itself
    assert atomic.read_left(own / "hard", 100) is None
    os.mkfifo(own / "fifo")
    assert atomic.read_left(own / "fifo", 100) is None  # answered at once, never blocked
    assert atomic.read_left(own / "missing", 100) is None
    assert atomic.read_left(own, 100) is None  # a folder
