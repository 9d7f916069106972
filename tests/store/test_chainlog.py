"""A log read again in the same process verifies only what was appended, and still catches
every change to what it verified before (`store.chainlog._verified`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from automaton.core import chain
from automaton.store import chainlog
from automaton.store.key import load_key
from tests.store.chainkit import checked


def _log(tmp_path: Path, lines: int, reason: str = "test") -> Path:
    log = tmp_path / "loop" / ".state.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    for i in range(lines):
        chainlog.append_event(log, "WARNING", {"reason": reason, "n": i}, "none")
    return log


def test_a_log_read_again_verifies_only_the_appended_lines_and_reads_as_a_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = _log(tmp_path, 30)
    monkeypatch.setattr(chainlog, "_MEMO", {})  # as a new process finds it
    sizes = checked(monkeypatch)
    assert chainlog.read_chain(log).ok
    for i in range(3):
        chainlog.append_event(log, "WARNING", {"reason": "more", "n": i}, "none")
    again = chainlog.read_chain(log)
    whole = chain.verify_text(log.read_text(), load_key(create=False))
    assert again.ok and [x.raw for x in again.lines] == [x.raw for x in whole.lines] and len(again.lines) == 33
    assert again.anchor == 33 and again.last_hash == whole.last_hash
    assert sizes[0] == 30 and max(sizes[1:]) <= 1  # then each read verifies the one line appended since


def test_an_earlier_line_rewritten_after_a_read_is_caught(tmp_path: Path) -> None:
    # Same length, same line count, the last line untouched: only a comparison of what was
    # verified before with what is there now catches it (a memo keyed by size would not).
    log = _log(tmp_path, 10)
    assert chainlog.read_chain(log).ok
    data = log.read_bytes()
    at = data.index(b"reason=test n=3 ")
    log.write_bytes(data[:at] + b"reason=tesT n=3 " + data[at + 16:])
    check = chainlog.read_chain(log)
    assert not check.ok and "line 4" in check.error


def test_a_log_cut_back_after_a_read_reads_as_rolled_back(tmp_path: Path) -> None:
    log = _log(tmp_path, 10)
    assert chainlog.read_chain(log).ok
    rows = log.read_bytes().split(b"\n")
    log.write_bytes(b"\n".join(rows[:7]) + b"\n")
    check = chainlog.read_chain(log)
    assert not check.ok and check.rolled_back and "rolled back to line 7 of 10" in check.error


def test_a_log_replaced_by_another_keyed_history_after_a_read_is_caught(tmp_path: Path) -> None:
    log = _log(tmp_path, 5)
    assert chainlog.read_chain(log).ok
    other = _log(tmp_path / "other", 8, "other")  # keyed with the same key: verifies on its own
    log.write_bytes(other.read_bytes())
    check = chainlog.read_chain(log)
    assert not check.ok and check.rolled_back  # its line 5 is not the anchored line 5
