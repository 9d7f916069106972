"""The keyed checkpoint of a loop log (`store.checkpoint`): a second process verifies only the
lines after the checkpoint's prefix and folds the ledger from its counters, and anything that does
not match it (a bad mac, a log rewritten or cut under it, another log's checkpoint) means a full
check, never trust."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from automaton.core import chain
from automaton.core.chain import Lines
from automaton.core.loopstate import LoopState, initial_state, usd_to_micro
from automaton.store import anchor, chainlog, checkpoint, looplog
from automaton.store import key as keys
from automaton.store.key import load_key
from tests.store.chainkit import checked

PREFIX = 40


def _append(log: Path, event: str, iterations: int, spent: float, **extra: object) -> None:
    fields: dict[str, object] = {"iterations": iterations, "spent_usd": spent, "iterations_at_approval": 0,
                                 "spent_usd_at_approval": 0, "resumed": 0, **extra}
    chainlog.append_event(log, event, fields, "none")


def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a new process starts from: no memo of earlier reads, folds or checkpoints written."""
    monkeypatch.setattr(chainlog, "_MEMO", {})
    monkeypatch.setattr(chainlog, "_SAVED", {})
    monkeypatch.setattr(looplog, "_FOLDS", {})


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A loop log of PREFIX clean lines whose checkpoint a first full check wrote."""
    path = tmp_path / "loop" / ".state.log"
    path.parent.mkdir(parents=True)
    _append(path, "CREATED", 0, 0.0)
    for n in range(1, PREFIX // 2):
        _append(path, "TICK_START", n, n * 1.0, n=n, reserved_usd=1)
        _append(path, "TICK", n, n * 1.0 - 0.5, n=n)
    _append(path, "TICK_START", PREFIX // 2, 20.0, n=PREFIX // 2, reserved_usd=1)  # left open at the checkpoint
    _new_process(monkeypatch)
    first = chainlog.read_chain(path)
    assert first.ok and len(first.lines) == PREFIX
    assert looplog.log_finding(first.lines, path) == ""
    assert checkpoint.read(path, load_key(create=False) or b"") is not None
    _new_process(monkeypatch)
    return path


def _whole(log: Path) -> chain.ChainCheck:
    return chain.verify_text(log.read_text(), load_key(create=False))


def _counted(each: int, spent_usd: float) -> LoopState:
    """A loop state whose counters are all `each`, but spent_usd (USD) and spent_usd_at_approval (`each`)."""
    return replace(initial_state("demo", None, "a" * 64, "2026-12-01T00:00:00Z"), iteration_count=each,
                   resumed_count=each, iterations_at_approval=each, spent_micro_usd=usd_to_micro(spent_usd),
                   spent_micro_usd_at_approval=usd_to_micro(float(each)))


def test_a_second_process_verifies_only_the_lines_after_the_checkpoint(
        log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _append(log, "TICK", PREFIX // 2, 19.75, n=PREFIX // 2)  # closes the reservation the checkpoint holds open
    _append(log, "WARNING", 20, 19.75, reason="x")
    _new_process(monkeypatch)
    sizes = checked(monkeypatch)
    check = chainlog.read_chain(log)
    assert sizes == [2]
    assert isinstance(check.lines, Lines) and check.lines.done == PREFIX  # the prefix is not parsed
    assert check.ok and check.anchor == PREFIX + 2 and check.last_hash == _whole(log).last_hash
    assert looplog.log_finding(check.lines, log) == ""
    assert looplog.state_below_log(_counted(100, 100.0), check.lines, log) == ""
    assert check.lines.done == PREFIX  # the ledger was folded from the checkpoint's counters
    assert [x.raw for x in check.lines] == [x.raw for x in _whole(log).lines]  # and reads as a whole


def test_the_ledger_fold_continues_from_the_checkpoint_and_still_finds_a_lowered_counter(
        log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The TICK gives back more than the open reservation (1 USD) the checkpoint's fold carries.
    _append(log, "TICK", PREFIX // 2, 18.0, n=PREFIX // 2)
    check = chainlog.read_chain(log)
    found = looplog.log_finding(check.lines, log)
    assert f"line {PREFIX + 1} (TICK): spent_usd goes down" in found
    looplog._FOLDS.clear()
    assert looplog.log_finding(list(_whole(log).lines), log) == found  # a whole check says the same


def test_a_state_below_the_checkpoints_counters_is_found(log: Path) -> None:
    chainlog.append_event(log, "WARNING", {"reason": "no counters after the checkpoint"}, "none")
    lines = chainlog.read_chain(log).lines
    state = _counted(100, 3.0)
    assert "spent_usd 3.0 is lower than its log's 20" in looplog.state_below_log(state, lines, log)
    assert isinstance(lines, Lines) and lines.done == PREFIX  # from the checkpoint's fold, not a walk back


def test_a_new_checkpoint_is_written_after_step_lines(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = load_key(create=False) or b""
    for i in range(checkpoint.STEP):
        chainlog.append_event(log, "WARNING", {"reason": "more", "n": i}, "none")
    _new_process(monkeypatch)
    assert looplog.log_finding(chainlog.read_chain(log).lines, log) == ""
    made = checkpoint.read(log, key)
    assert made is not None and made.count == PREFIX + checkpoint.STEP and made.chars == len(log.read_text())


def _full_check_after(log: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[chain.ChainCheck, list[int]]:
    _new_process(monkeypatch)
    sizes = checked(monkeypatch)
    return chainlog.read_chain(log), sizes


def test_a_checkpoint_with_a_bad_mac_means_a_full_check(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    where = checkpoint.file_of(log)
    text = where.read_text()
    where.write_text(text.replace(f"v1 {PREFIX} ", f"v1 {PREFIX - 2} "))  # claims less, mac unchanged
    assert checkpoint.read(log, load_key(create=False) or b"") is None
    check, sizes = _full_check_after(log, monkeypatch)
    assert check.ok and sizes == [PREFIX]


def test_another_logs_checkpoint_is_not_trusted(log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "other" / ".state.log"
    other.parent.mkdir()
    other.write_bytes(log.read_bytes())
    checkpoint.file_of(other).write_bytes(checkpoint.file_of(log).read_bytes())  # the mac names the log's path
    assert checkpoint.read(other, load_key(create=False) or b"") is None


def test_a_log_rewritten_under_the_checkpoint_is_checked_in_full_and_caught(
        log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Same length, the checkpoint's head line untouched: only the digest of the prefix tells.
    data = log.read_bytes()
    at = data.index(b"spent_usd=4.5 ")
    log.write_bytes(data[:at] + b"spent_usd=9.5 " + data[at + 14:])
    check, sizes = _full_check_after(log, monkeypatch)
    assert sizes == [PREFIX] and not check.ok and "line 11 has a mac the key does not verify" in check.error


def test_a_log_cut_back_under_the_checkpoint_reads_as_rolled_back(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = log.read_bytes().split(b"\n")
    log.write_bytes(b"\n".join(rows[:PREFIX - 5]) + b"\n")
    check, sizes = _full_check_after(log, monkeypatch)
    assert sizes == [PREFIX - 5] and not check.ok and check.rolled_back


def test_a_forged_line_after_the_checkpoint_is_caught(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    last = log.read_text().split("\n")[-2]
    forged = chain.format_line("2026-01-01T00:00:00Z", "WARNING", {"reason": "x"}, "none", chain.line_hash(last),
                               b"k" * 32)
    with log.open("a") as out:
        out.write(forged + "\n")
    check, sizes = _full_check_after(log, monkeypatch)
    assert not check.ok and f"line {PREFIX + 1} has a mac the key does not verify" in check.error
    assert sizes == [1, PREFIX + 1]  # the tail from the checkpoint fails, so the whole log is checked again


def test_the_checkpoint_goes_with_the_anchor(log: Path) -> None:
    anchor.forget(log)
    assert not checkpoint.file_of(log).exists()


def test_the_digest_is_sha256_with_or_without_hashlib_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib
    import sys

    text = "é line\n" * 100
    want = hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert checkpoint.digest(text) == want
    monkeypatch.delitem(sys.modules, "hashlib")
    assert checkpoint.digest(text) == want


@pytest.mark.parametrize("off", [-1, 1])
def test_a_keyed_checkpoint_whose_count_disagrees_with_its_prefix_means_a_full_check(
        log: Path, monkeypatch: pytest.MonkeyPatch, off: int) -> None:
    # Only a writer's bug makes one (the mac needs the key): the lines must still be the log's own.
    key = load_key(create=False) or b""
    made = checkpoint.read(log, key)
    assert made is not None
    checkpoint.write(log, key, checkpoint.Checkpoint(made.count + off, made.chars, made.head, made.digest, made.fold))
    _append(log, "TICK", PREFIX // 2, 19.75, n=PREFIX // 2)
    _append(log, "WARNING", 20, 19.75, reason="x")
    check, sizes = _full_check_after(log, monkeypatch)
    assert check.ok and sizes == [PREFIX + 2]
    assert [x.raw for x in check.lines] == [x.raw for x in _whole(log).lines]


def test_a_write_that_fails_leaves_no_temp_file_in_the_keys_folder(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = load_key(create=False) or b""
    made = checkpoint.read(log, key)
    assert made is not None
    folder = checkpoint.file_of(log).parent
    before = sorted(p.name for p in folder.iterdir())

    def full_disk(fd: int, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(checkpoint.os, "write", full_disk)
    with pytest.raises(OSError):
        checkpoint.write(log, key, made)
    assert sorted(p.name for p in folder.iterdir()) == before


def test_a_fold_continued_in_process_does_not_read_the_checkpoint_again(
        log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert looplog.log_finding(chainlog.read_chain(log).lines, log) == ""
    _append(log, "TICK", PREFIX // 2, 19.75, n=PREFIX // 2)
    lines = chainlog.read_chain(log).lines
    calls: list[int] = []
    real = looplog._restored

    def counting(found: list[chain.LogLine]) -> object:
        calls.append(len(found))
        return real(found)

    monkeypatch.setattr(looplog, "_restored", counting)
    assert looplog.log_finding(lines, log) == ""
    assert calls == []  # the in-process fold of the same lines was continued


def test_a_reservation_open_at_the_checkpoint_keeps_its_tick_starts_floor(
        log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Tick 21 gives back more than it added, so the line before tick 20's TICK is below tick 20's
    # own TICK_START (20 USD): only the checkpoint's copy of that TICK_START's counters holds it.
    _append(log, "TICK_START", 21, 21.0, n=21, reserved_usd=3)
    _append(log, "TICK", 21, 18.0, n=21)
    _append(log, "TICK", 21, 18.5, n=PREFIX // 2)
    check = chainlog.read_chain(log)
    assert isinstance(check.lines, Lines) and check.lines.done == PREFIX
    found = looplog.log_finding(check.lines, log)
    # 18.5 is above the line before (18), below tick 20's TICK_START less its reservation (20 - 1)
    assert found.startswith(f"{log}: line {PREFIX + 3} (TICK): spent_usd goes down (18 -> 18.5)"), found
    assert check.lines.done == PREFIX  # folded from the checkpoint, not from the first line
    _new_process(monkeypatch)
    assert looplog.log_finding(list(_whole(log).lines), log) == found  # a whole check says the same


def test_a_checkpointed_log_without_its_anchor_reads_as_rolled_back(log: Path) -> None:
    anchor.file_of(log).unlink()
    check = chainlog.read_chain(log)  # a full check: a checkpoint is taken only under an anchor
    assert (check.ok, check.rolled_back, len(check.lines)) == (False, True, PREFIX)


def test_a_checkpointed_log_without_its_key_is_not_trusted(log: Path) -> None:
    keys.key_path().unlink()
    keys.forget()
    check = chainlog.read_chain(log)  # a full check: a checkpoint is read only with the key
    assert (check.ok, check.needs_key) == (False, True)


def _more(log: Path, n: int) -> None:
    for i in range(n):
        chainlog.append_event(log, "WARNING", {"reason": "more", "n": i}, "none")


def test_a_checkpoint_is_rewritten_only_step_lines_after_the_one_read_from(
        log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    where = checkpoint.file_of(log)
    before = where.read_bytes()
    _more(log, checkpoint.STEP - 1)
    _new_process(monkeypatch)
    lines = chainlog.read_chain(log).lines  # from the checkpoint at PREFIX lines
    assert isinstance(lines, Lines) and lines.done == PREFIX
    assert chainlog.save_checkpoint(lines, "") is False and where.read_bytes() == before
    assert chainlog.save_checkpoint(list(lines), "") is False  # a plain list: no trusted read behind it
    _more(log, 1)
    _new_process(monkeypatch)
    assert chainlog.save_checkpoint(chainlog.read_chain(log).lines, "") is True
    made = checkpoint.read(log, load_key(create=False) or b"")
    assert made is not None and (made.count, made.chars) == (PREFIX + checkpoint.STEP, len(log.read_text()))


def test_a_process_rewrites_its_own_checkpoint_only_step_lines_later(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _new_process(monkeypatch)
    first, second = tmp_path / "a" / ".state.log", tmp_path / "b" / ".state.log"
    first.parent.mkdir()
    second.parent.mkdir()
    _more(first, checkpoint.STEP)
    assert chainlog.save_checkpoint(chainlog.read_chain(first).lines, "") is True  # STEP lines: the first one
    written = checkpoint.file_of(first).read_bytes()
    _more(first, 1)
    again = chainlog.read_chain(first).lines  # this process's own memo: no checkpoint behind it
    assert chainlog.save_checkpoint(again, "") is False and checkpoint.file_of(first).read_bytes() == written
    _more(second, checkpoint.STEP + 4)  # another log's checkpoint holds this one back in nothing
    assert chainlog.save_checkpoint(chainlog.read_chain(second).lines, "") is True


def test_a_checkpoint_that_cannot_be_written_is_not_reported_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _new_process(monkeypatch)
    path = tmp_path / "a" / ".state.log"
    path.parent.mkdir()
    _more(path, checkpoint.STEP)
    lines = chainlog.read_chain(path).lines
    real = checkpoint.write

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(checkpoint, "write", full_disk)
    assert chainlog.save_checkpoint(lines, "") is False
    monkeypatch.setattr(checkpoint, "write", real)
    assert chainlog.save_checkpoint(lines, "") is True  # nothing remembered of the write that failed
