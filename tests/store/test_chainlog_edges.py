"""The keyed log on disk at its edges (`store.chainlog`): a log replaced by an unkeyed one, a
missing key, a missing or rolled-back log against its anchor, a crash between a line and its
anchor. Each verdict is one a tampering agent would want turned around."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from automaton.core.chain import GENESIS, Lines, format_line, line_hash
from automaton.core.errors import BadInput, CorruptState
from automaton.store import anchor, chainlog, checkpoint
from automaton.store import key as keys


@pytest.fixture
def log(tmp_path: Path) -> Path:
    keys.forget()
    path = tmp_path / "loop" / ".state.log"
    path.parent.mkdir()
    for i in range(3):
        chainlog.append_event(path, "TICK", {"n": i + 1}, f"s{i + 1}")
    return path


def test_a_whole_log_verifies_against_its_anchor(log: Path) -> None:
    check = chainlog.read_chain(log)
    assert (check.ok, len(check.lines), check.anchor, check.rolled_back, check.unverified) == (True, 3, 3, False,
                                                                                               False)


def test_a_keyed_log_replaced_by_an_unkeyed_chain_is_refused(log: Path) -> None:
    first = format_line("2026-12-01T00:00:00Z", "CREATED", {}, "s0", GENESIS)
    log.write_text(f"{first}\n" + format_line("2026-12-01T00:00:01Z", "TICK", {"n": 1}, "s1", line_hash(first)) + "\n")
    check = chainlog.read_chain(log)
    assert (check.ok, len(check.lines), check.error) == (
        False, 2, "no line is keyed, but automaton has sealed this log with its key before: the whole log was replaced")


def test_a_forged_line_is_refused_on_disk(log: Path) -> None:
    lines = log.read_text().splitlines()
    forged = format_line("2026-12-01T00:00:00Z", "TICK", {"n": 4}, "s4", line_hash(lines[-1]), b"x" * 32)
    log.write_text("\n".join([*lines, forged]) + "\n")
    check = chainlog.read_chain(log)
    assert not check.ok and "line 4 has a mac the key does not verify" in check.error


def test_a_missing_key_leaves_keyed_lines_untrusted(log: Path) -> None:
    keys.key_path().unlink()
    keys.forget()
    check = chainlog.read_chain(log)
    assert (check.ok, check.needs_key, len(check.lines)) == (False, True, 0)
    assert check.error == (f"line 1 is sealed with a key (mac=) but there is no key to verify it: {keys.key_path()}"
                           " is missing (restore it from a backup, or a human re-seals the log)")


def test_a_missing_log_with_a_bad_key_file_reads_as_empty(tmp_path: Path) -> None:
    keys.forget()
    keys.key_path().parent.mkdir(parents=True, exist_ok=True)
    keys.key_path().write_text("not a key\n")
    keys.key_path().chmod(0o600)
    check = chainlog.read_chain(tmp_path / "none.log")
    assert (check.ok, check.lines) == (True, [])


def test_a_log_cut_back_or_removed_is_rolled_back(log: Path) -> None:
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:2]))
    cut = chainlog.read_chain(log)
    assert (cut.ok, cut.rolled_back, cut.anchor, len(cut.lines)) == (False, True, 3, 2)
    with pytest.raises(CorruptState, match=rf"^{log}: "):
        chainlog.append_event(log, "TICK", {"n": 9}, "s9")  # nothing is appended to a rolled-back log
    assert log.read_text() == "".join(lines[:2])
    log.unlink()
    gone = chainlog.read_chain(log)
    assert (gone.ok, gone.rolled_back, gone.lines, gone.anchor) == (False, True, [], 3)


def test_a_missing_anchor_of_an_anchored_log_is_tampering(log: Path) -> None:
    anchor.file_of(log).unlink()
    check = chainlog.read_chain(log)
    assert (check.ok, check.rolled_back, check.anchor, len(check.lines)) == (False, True, -1, 3)
    assert check.error == (f"TAMPERED: its anchor {anchor.file_of(log)} is missing, although automaton anchored this"
                           f" log: a human accepts the log as it is: {anchor.accept_command(log)}")


def test_an_unreadable_anchor_is_tampering(log: Path) -> None:
    anchor.file_of(log).write_text("garbage\n")
    check = chainlog.read_chain(log)
    assert (check.ok, check.rolled_back, check.anchor) == (False, True, -1)
    assert check.error.startswith("TAMPERED: ") and check.error.endswith(
        f": restore it from a backup, or a human accepts the log as it is: {anchor.accept_command(log)}")


def test_an_anchor_left_behind_by_a_crash_is_moved_forward(log: Path) -> None:
    old = anchor.file_of(log).read_bytes()
    chainlog.append_event(log, "TICK", {"n": 4}, "s4")
    anchor.file_of(log).write_bytes(old)  # the crash: line 4 logged, its anchor not yet written
    chainlog.settle_anchor(log)
    check = chainlog.read_chain(log)
    assert (check.ok, check.anchor, len(check.lines)) == (True, 4, 4)


def test_an_unanchored_keyed_log_is_adopted_once(log: Path) -> None:
    anchor.forget(log)  # a log keyed before anchors existed: no anchor, no anchored mark
    keys.mark_keyed(log, anchored=False)
    assert chainlog.adopt(log) is True
    assert chainlog.read_chain(log).anchor == 3
    assert chainlog.adopt(log) is False  # anchored now: never re-anchored
    anchor.file_of(log).unlink()
    assert chainlog.adopt(log) is False  # a missing anchor of an anchored log reads as tampering
    assert chainlog.read_chain(log).rolled_back


def test_adopt_refuses_an_unkeyed_log_and_a_stale_reading(log: Path, tmp_path: Path) -> None:
    anchor.forget(log)
    keys.mark_keyed(log, anchored=False)
    stale = chainlog.read_chain(log)  # read before the anchor below exists
    assert chainlog.adopt(log) is True
    assert chainlog.adopt(log, stale) is False  # the anchor on disk is never replaced
    legacy = tmp_path / "legacy.log"
    first = format_line("2026-12-01T00:00:00Z", "CREATED", {}, "s0", GENESIS)
    legacy.write_text(f"{first}\n")
    assert chainlog.adopt(legacy) is False and anchor.read(legacy) is None  # unkeyed: nothing to anchor


def test_an_unreadable_log_says_so_whatever_its_anchor(log: Path, tmp_path: Path) -> None:
    odd = tmp_path / "dir.log"
    odd.mkdir()
    check = chainlog.read_chain(odd)
    assert (check.ok, check.lines, check.rolled_back) == (False, [], False) and check.error.startswith("cannot read: ")
    log.unlink()
    log.mkdir()  # the anchor of the three-line log is still there
    check = chainlog.read_chain(log)
    assert (check.ok, check.lines, check.rolled_back) == (False, [], False) and check.error.startswith("cannot read: ")


def test_timestamps_are_utc_whatever_the_local_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "XYZ-5:30")  # POSIX form, no tz database needed: never the clock of UTC
    time.tzset()
    try:
        before = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        got = chainlog.utc_now()
        after = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        assert before <= got <= after
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def _reads(monkeypatch: pytest.MonkeyPatch, *texts: str) -> None:
    """The log reads as each of `texts` in turn (a writer appends between two reads)."""
    left = list(texts)
    monkeypatch.setattr(chainlog, "_read_text", lambda _path: left.pop(0))


def _unkeyed(n: int) -> list[str]:
    out, prev = [], GENESIS
    for i in range(n):
        out.append(format_line("2026-12-01T00:00:00Z", "TICK", {"n": i + 1}, f"s{i + 1}", prev))
        prev = line_hash(out[-1])
    return out


def test_the_second_read_of_a_log_that_looked_unkeyed_is_checked_with_the_key(
        log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A keyed log that reads unkeyed is read once more (a writer may have raced the reader):
    # that second reading is verified like the first, macs and key included.
    lines = log.read_text().splitlines()
    forged = format_line("2026-12-01T00:00:00Z", "TICK", {"n": 4}, "s4", line_hash(lines[-1]), b"x" * 32)
    legacy = "".join(f"{x}\n" for x in _unkeyed(2))
    _reads(monkeypatch, legacy, "\n".join([*lines, forged]) + "\n")
    check = chainlog.read_chain(log)
    assert (check.ok, len(check.lines)) == (False, 3) and "line 4 has a mac the key does not verify" in check.error
    _reads(monkeypatch, legacy, legacy + "not a line\n")
    check = chainlog.read_chain(log)
    assert (check.ok, len(check.lines), check.error) == (False, 2, "line 3 is not a valid log line")


def test_a_log_read_afresh_by_another_process_without_its_anchor_is_still_judged(
        log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No memo of this log (another process): the verdict comes from a full check, not from a
    # checkpoint, which needs an anchor.
    monkeypatch.setattr(chainlog, "_MEMO", {})
    anchor.file_of(log).unlink()
    check = chainlog.read_chain(log)
    assert (check.ok, check.rolled_back, len(check.lines)) == (False, True, 3)


def test_a_reader_without_the_key_reads_a_grown_log_again_on_the_chain_alone(
        log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load_key = keys.load_key

    def hidden(create: bool) -> bytes | None:
        raise keys.KeyHidden("hidden in the sandbox")

    monkeypatch.setattr(chainlog, "_MEMO", {})
    monkeypatch.setattr(keys, "load_key", hidden)
    first = chainlog.read_chain(log)
    assert (first.ok, first.unverified, len(first.lines)) == (True, True, 3), first.error
    # a line the writer appended, read by no one since
    tail = format_line("2026-12-01T00:00:04Z", "TICK", {"n": 4}, "s4", first.last_hash, load_key(False))
    with log.open("a") as out:
        out.write(tail + "\n")
    again = chainlog.read_chain(log)  # from this process's memo of the first reading
    assert (again.ok, again.unverified, len(again.lines)) == (True, True, 4), again.error


def test_an_anchor_that_cannot_be_written_names_its_folder_and_what_to_do(
        log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(anchor, "write", refused)
    where = anchor.file_of(log)
    with pytest.raises(BadInput) as caught:
        chainlog.append_event(log, "TICK", {"n": 4}, "s4")
    assert str(caught.value) == (f"{where}: cannot write the anchor of {log} (Permission denied); make {where.parent}"
                                 " a folder you can write (mode 0700), then run the command again")
    assert len(log.read_text().splitlines()) == 4  # the line is logged: the next writer rolls the anchor forward


def test_an_anchor_behind_a_log_broken_after_it_is_left_where_it_is(log: Path) -> None:
    old = anchor.file_of(log).read_bytes()
    chainlog.append_event(log, "TICK", {"n": 4}, "s4")
    chainlog.append_event(log, "TICK", {"n": 5}, "s5")
    anchor.file_of(log).write_bytes(old)  # the crash: lines 4 and 5 logged, the anchor still at 3
    lines = log.read_bytes().splitlines(keepends=True)
    lines[4] = lines[4].replace(b" n=5 ", b" n=7 ")
    assert lines[4] != log.read_bytes().splitlines(keepends=True)[4]
    log.write_bytes(b"".join(lines))  # line 5 tampered: lines 1-4 still verify, past the anchor
    chainlog.settle_anchor(log)
    assert anchor.file_of(log).read_bytes() == old
    assert not chainlog.read_chain(log).ok


def _appended(path: Path, first: int, last: int) -> Path:
    """`path` with keyed lines `first`..`last` (TICK n=i, state si) appended by automaton."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for i in range(first, last + 1):
        chainlog.append_event(path, "TICK", {"n": i}, f"s{i}")
    return path


def _unanchored(path: Path) -> None:
    """As a log keyed before anchors existed: no anchor, a keyed mark that names none."""
    anchor.forget(path)
    keys.mark_keyed(path, anchored=False)


def test_a_checkpoint_is_taken_only_from_a_trusted_read(tmp_path: Path) -> None:
    # A checkpoint's prefix is later taken without a check: only a read verified with the key,
    # held against its anchor and keyed to its last line may leave one behind.
    step = checkpoint.STEP
    trusted = _appended(tmp_path / "trusted" / ".state.log", 1, step)
    check = chainlog.read_chain(trusted)
    mark = check.lines.mark if isinstance(check.lines, Lines) else None
    assert isinstance(mark, chainlog.Verified)
    assert (mark.path, mark.text, mark.key, mark.start) == (str(trusted), trusted.read_text(),
                                                            keys.load_key(create=False), None)
    assert chainlog.save_checkpoint(check.lines, "") is True and checkpoint.file_of(trusted).exists()
    cut = _appended(tmp_path / "cut" / ".state.log", 1, step + 2)
    cut.write_text("".join(cut.read_text().splitlines(keepends=True)[:step + 1]))  # rolled back by one line
    unanchored = _appended(tmp_path / "unanchored" / ".state.log", 1, step)
    _unanchored(unanchored)
    legacy = tmp_path / "legacy" / ".state.log"
    legacy.parent.mkdir()
    legacy.write_text("".join(f"{x}\n" for x in _unkeyed(step)))
    for path, verdict in ((cut, (False, True, step + 2)), (unanchored, (True, False, -1)),
                          (legacy, (True, False, -1))):
        check = chainlog.read_chain(path)
        assert (check.ok, check.rolled_back, check.anchor) == verdict, path
        assert not isinstance(getattr(check.lines, "mark", None), chainlog.Verified), path
        assert chainlog.save_checkpoint(check.lines, "") is False and not checkpoint.file_of(path).exists(), path


def test_a_log_keyed_after_unkeyed_lines_is_trusted_adopted_and_settled(tmp_path: Path) -> None:
    # Lines written before keys existed may form a prefix: from the first keyed line on, the
    # log is trusted, adopted and rolled forward like any keyed log.
    log = tmp_path / "old" / ".state.log"
    log.parent.mkdir()
    log.write_text("".join(f"{x}\n" for x in _unkeyed(2)))
    _appended(log, 3, 3)  # the first keyed line, anchored
    check = chainlog.read_chain(log)
    assert isinstance(check.lines, Lines) and isinstance(check.lines.mark, chainlog.Verified)
    _unanchored(log)
    assert chainlog.adopt(log) is True
    assert (chainlog.read_chain(log).anchor, keys.was_anchored(log)) == (3, True)
    old = anchor.file_of(log).read_bytes()
    three = log.read_bytes()
    _appended(log, 4, 4)
    anchor.file_of(log).write_bytes(old)  # the crash: line 4 logged, its anchor not yet written
    chainlog.settle_anchor(log)
    assert chainlog.read_chain(log).anchor == 4
    log.write_bytes(three)  # cut back to where the anchor was before it settled
    assert chainlog.read_chain(log).rolled_back


def test_settling_a_log_without_an_anchor_leaves_it_without_one(log: Path) -> None:
    _unanchored(log)
    chainlog.settle_anchor(log)
    assert anchor.read(log) is None
    assert chainlog.adopt(log) is True  # still a log from before anchors, not a tampered one


def test_adopt_never_moves_back_an_anchor_a_writer_made_meanwhile(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _unanchored(log)
    stale = chainlog.read_chain(log)  # three lines, no anchor yet
    three = log.read_bytes()
    _appended(log, 4, 4)  # a writer, under its lock: line 4 and the log's first anchor
    real = anchor.read
    monkeypatch.setattr(anchor, "read", lambda _path: None)  # adopt looked just before that anchor landed
    chainlog.adopt(log, stale)
    monkeypatch.setattr(anchor, "read", real)
    assert chainlog.read_chain(log).anchor == 4
    log.write_bytes(three)
    assert chainlog.read_chain(log).rolled_back  # line 4 is still missed


def test_adopt_that_cannot_write_the_anchor_makes_none_and_says_so(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _unanchored(log)

    def refused(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(anchor, "write", refused)
    assert chainlog.adopt(log) is False  # the audit counts the logs adopted
    assert not keys.was_anchored(log)  # the mark never names an anchor that was not made


def test_a_line_appended_to_a_broken_unanchored_log_claims_no_anchor(log: Path) -> None:
    _unanchored(log)
    clean = log.read_bytes()
    log.write_bytes(clean.replace(b" n=2 ", b" n=9 "))  # line 2 tampered
    chainlog.append_event(log, "TICK", {"n": 4}, "s4")  # a broken chain gets no anchor
    assert anchor.read(log) is None and not keys.was_anchored(log)
    log.write_bytes(clean)  # a human restores the clean copy
    check = chainlog.read_chain(log)
    assert (check.ok, check.rolled_back) == (True, False), check.error


def test_adopt_goes_by_its_callers_reading_of_the_log(log: Path) -> None:
    # The audit reports each log as it read it, then adopts it: a log it found broken is not
    # anchored, even where it reads clean by the time adopt runs.
    _unanchored(log)
    clean = log.read_bytes()
    log.write_bytes(clean.replace(b" n=2 ", b" n=9 "))
    broken = chainlog.read_chain(log)
    assert not broken.ok
    log.write_bytes(clean)
    assert chainlog.adopt(log, broken) is False and anchor.read(log) is None


def _forged_line_after(log: Path) -> None:
    """A line 4 that links to line 3 but whose mac no key made (an agent without the key)."""
    last = log.read_text().splitlines()[-1]
    with log.open("a") as out:
        out.write(format_line("2026-12-01T00:00:04Z", "TICK", {"n": 4}, "s4", line_hash(last), b"x" * 32) + "\n")


def test_no_anchor_is_moved_or_made_on_a_reading_without_the_key(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A process the key is withheld from reads keyed lines on their chain alone: a forged line
    # verifies there, so it never settles or adopts an anchor onto it.
    _forged_line_after(log)
    monkeypatch.setenv(keys.WITHHELD_ENV, "1")
    assert chainlog.read_chain(log).unverified
    chainlog.settle_anchor(log)
    found = anchor.read(log)
    assert found is not None and found.count == 3
    anchor.forget(log)
    keys.mark_keyed(log, anchored=False)
    assert chainlog.adopt(log) is False and anchor.read(log) is None
    monkeypatch.delenv(keys.WITHHELD_ENV)
    assert "line 4 has a mac the key does not verify" in chainlog.read_chain(log).error
