"""A commit whose `.state` cannot be replaced: refused with nothing written when that shows
before the log line, told truthfully (logged, in effect, what failed) when it shows after."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from automaton.core.errors import EnvironmentFailure
from automaton.store import atomic, chainlog
from automaton.store.tasks import phase_token


def _made(tmp_path: Path) -> tuple[Path, Path]:
    state, log = tmp_path / ".state", tmp_path / ".state.log"
    chainlog.commit(state, log, b"new\n", "new", "CREATED", {"task": "t"})
    return state, log


def _refuse_open_for_writing(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """`path` as an immutable file is: opening it for writing is refused with EPERM."""
    real = os.open

    def refusing(name: object, flags: int, *args: object, **kwargs: object) -> int:
        if str(name) == str(path) and flags & (os.O_WRONLY | os.O_RDWR):
            raise PermissionError(errno.EPERM, "Operation not permitted", str(name))
        return real(name, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refusing)


def _refuse_replace(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """A rename over `path` is refused (EPERM), as os.replace names it: the source."""
    real = os.replace

    def refusing(src: object, dst: object) -> None:
        if str(dst) == str(path):
            raise PermissionError(errno.EPERM, "Operation not permitted", str(src), None, str(dst))
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", refusing)


def test_a_state_that_cannot_be_replaced_is_refused_before_the_log_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state, log = _made(tmp_path)
    before = log.read_bytes()
    _refuse_open_for_writing(monkeypatch, state)
    _refuse_replace(monkeypatch, state)
    with pytest.raises(EnvironmentFailure) as caught:
        chainlog.commit(state, log, b"research\n", "research", "TRANSITION", {"to": "research"})
    message = str(caught.value)
    assert message.startswith(f"cannot replace {state}: operation not permitted"), message
    assert ".tmp" not in message and "nothing was changed" in message and "\n" not in message
    assert log.read_bytes() == before  # nothing logged
    assert state.read_bytes() == b"new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".state", ".state.log"]  # no temp file left


def test_a_replace_refused_after_the_log_line_says_the_change_is_logged_and_in_effect(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state, log = _made(tmp_path)
    real_replace = os.replace
    _refuse_replace(monkeypatch, state)  # the probe passes (e.g. a sticky folder): only the rename fails
    with pytest.raises(EnvironmentFailure) as caught:
        chainlog.commit(state, log, b"research\n", "research", "TRANSITION", {"to": "research"})
    message = str(caught.value)
    assert message.startswith(f"cannot replace {state}: operation not permitted"), message
    assert "TRANSITION to 'research' is recorded in .state.log and in effect" in message
    assert "\n" not in message
    # The temp file is the logged state until `.state` can be replaced: readers take it from
    # there, and the next locked writer rolls it forward (`recover`); removing it would make
    # `.state` disagree with its log, which reads as tampering.
    assert atomic.tmp_path(state).read_bytes() == b"research\n"
    assert chainlog.read_chain(log).last_state == "research"
    monkeypatch.setattr(os, "replace", real_replace)  # fixed (not undo(): that drops the test's HOME)
    chainlog.recover(state, log, phase_token)
    assert state.read_bytes() == b"research\n" and not atomic.tmp_path(state).exists()


def test_a_log_line_that_cannot_be_written_leaves_no_temp_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state, log = _made(tmp_path)
    before = log.read_bytes()

    def full(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(log))

    monkeypatch.setattr(chainlog, "append_line", full)
    with pytest.raises(OSError, match="No space left"):
        chainlog.commit(state, log, b"research\n", "research", "TRANSITION", {"to": "research"})
    assert log.read_bytes() == before and state.read_bytes() == b"new\n"
    assert not atomic.tmp_path(state).exists()


def test_atomic_write_refused_names_the_file_and_leaves_no_temp(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "loop.json"
    target.write_bytes(b"{}\n")
    _refuse_replace(monkeypatch, target)
    with pytest.raises(PermissionError) as caught:
        atomic.atomic_write(target, b'{"a": 1}\n')
    assert caught.value.filename == str(target)
    assert target.read_bytes() == b"{}\n" and sorted(p.name for p in tmp_path.iterdir()) == ["loop.json"]


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("chattr") is None, reason="chattr +i needs root")
def test_an_immutable_state_is_refused_with_nothing_written(tmp_path: Path) -> None:
    state, log = _made(tmp_path)
    before = log.read_bytes()
    if subprocess.run(["chattr", "+i", str(state)], capture_output=True).returncode != 0:
        pytest.skip("this file system has no immutable flag")
    try:
        with pytest.raises(EnvironmentFailure, match="nothing was changed"):
            chainlog.commit(state, log, b"research\n", "research", "TRANSITION", {"to": "research"})
    finally:
        subprocess.run(["chattr", "-i", str(state)], check=True)
    assert log.read_bytes() == before and state.read_bytes() == b"new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".state", ".state.log"]


def test_a_logged_change_that_recover_cannot_finish_is_named_as_such(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state, log = _made(tmp_path)
    atomic.write_tmp(state, b"research\n")
    chainlog.append_event(log, "TRANSITION", {}, "research")  # a commit cut before its rename
    _refuse_replace(monkeypatch, state)
    with pytest.raises(EnvironmentFailure) as caught:
        chainlog.recover(state, log, phase_token)
    message = str(caught.value)
    assert message.startswith(f"cannot replace {state}: operation not permitted"), message
    assert "a change to 'research' is recorded in .state.log and in effect" in message
    assert atomic.tmp_path(state).read_bytes() == b"research\n"


def test_the_exact_lines_of_each_refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What each refusal says, word for word: before the line (nothing changed), after it (in
    effect, finished by the next writer), and in `recover` (finished first)."""
    state, log = _made(tmp_path)
    flags = ("it is marked immutable or append-only (lsattr shows it; chattr -i -a clears it, chflags nouchg on"
             " BSD and macOS)")
    with monkeypatch.context() as m:
        _refuse_open_for_writing(m, state)
        with pytest.raises(EnvironmentFailure) as before:
            chainlog.commit(state, log, b"research\n", "research", "TRANSITION", {})
    assert str(before.value) == (f"cannot replace {state}: operation not permitted: {flags}; nothing was changed;"
                                 " clear that and run the command again")
    with monkeypatch.context() as m:
        _refuse_replace(m, state)
        with pytest.raises(EnvironmentFailure) as after:
            chainlog.commit(state, log, b"research\n", "research", "TRANSITION", {})
        assert str(after.value) == (
            f"cannot replace {state}: operation not permitted: {flags}, or in a sticky folder and another"
            " user's; the TRANSITION to 'research' is recorded in .state.log and in effect (automaton reads"
            " it from .state.tmp meanwhile); once that is fixed, the next automaton command that writes here"
            " finishes the write")
        with pytest.raises(EnvironmentFailure) as again:
            chainlog.recover(state, log, phase_token)
        assert str(again.value).endswith("a change to 'research' is recorded in .state.log and in effect, its"
                                         " write unfinished (.state.tmp): once that is fixed, run the command"
                                         " again and it finishes the write first")


@pytest.mark.parametrize(("code", "why", "kind"), [
    (errno.EACCES, ": its folder is not writable for you (ls -ld the folder)", EnvironmentFailure),
    (errno.EINVAL, "", chainlog.BadInput),
])
def test_a_refusal_names_what_its_errno_means_and_is_an_environment_failure_only_for_one(
        tmp_path: Path, code: int, why: str, kind: type[Exception]) -> None:
    exc = OSError(code, os.strerror(code), str(tmp_path / ".state"))
    made = chainlog._unreplaceable(exc, tmp_path / ".state", "then")
    assert type(made) is kind
    assert str(made) == f"cannot replace {tmp_path / '.state'}: {os.strerror(code).lower()}{why}; then"
    bare = chainlog._unreplaceable(OSError(), tmp_path / ".state", "then")
    assert str(bare) == f"cannot replace {tmp_path / '.state'}: oserror; then" and type(bare) is chainlog.BadInput


def _log_then_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """`append_event` writes its line, then fails (as an anchor that cannot be written would)."""
    real = chainlog.append_event

    def logged_then_failed(*args: object, **kwargs: object) -> None:
        real(*args, **kwargs)  # type: ignore[arg-type]
        raise OSError(errno.EIO, "the anchor could not be written")

    monkeypatch.setattr(chainlog, "append_event", logged_then_failed)


def test_a_line_logged_before_its_append_failed_still_moves_the_state(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The log line was written and then something after it failed (the anchor, say): the
    state follows its line, the temp file is gone, and the failure is raised."""
    state, log = _made(tmp_path)
    _log_then_fail(monkeypatch)
    with pytest.raises(OSError, match="anchor"):
        chainlog.commit(state, log, b"research\n", "research", "TRANSITION", {})
    assert state.read_bytes() == b"research\n" and not atomic.tmp_path(state).exists()
    assert log.read_text().count("TRANSITION") == 1


def test_a_line_logged_before_its_append_failed_and_a_refused_rename_say_the_change_is_in_effect(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state, log = _made(tmp_path)
    _log_then_fail(monkeypatch)
    _refuse_replace(monkeypatch, state)
    with pytest.raises(EnvironmentFailure) as caught:
        chainlog.commit(state, log, b"research\n", "research", "TRANSITION", {})
    assert "; the TRANSITION to 'research' is recorded in .state.log and in effect" in str(caught.value)
