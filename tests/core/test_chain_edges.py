"""The keyed log's verdicts at their edges: which line fails, why (the line a human reads), and
the lines kept up to the fault. Through `core.chain` (format_line, parse_line, verify_text)."""

from __future__ import annotations

import pytest

from automaton.core.chain import GENESIS, ChainCheck, format_line, line_hash, parse_line, verify_text

KEY = b"k" * 32
TS = "2026-12-01T00:00:00Z"


def log(n: int, key: bytes | None = KEY, *, unkeyed_first: int = 0) -> list[str]:
    """`n` chained lines; the first `unkeyed_first` of them without a mac."""
    out: list[str] = []
    prev = GENESIS
    for i in range(n):
        line = format_line(TS, "TICK", {"n": i + 1}, f"s{i + 1}", prev, None if i < unkeyed_first else key)
        out.append(line)
        prev = line_hash(line)
    return out


def text(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


def verdict(check: ChainCheck) -> tuple[bool, int, str, bool]:
    return check.ok, len(check.lines), check.error, check.needs_key


def test_a_whole_keyed_log_verifies_and_keeps_every_line() -> None:
    lines = log(3)
    assert verdict(verify_text(text(lines), KEY)) == (True, 3, "", False)
    assert verify_text(text(lines), KEY).last_state == "s3"
    assert verify_text("", KEY).ok and verify_text("", KEY).lines == []


def test_a_cut_last_line_fails_before_anything_is_read() -> None:
    assert verdict(verify_text(text(log(2))[:-1], KEY)) == (
        False, 0, "the last line is partial (no newline): the log was cut", False)


def test_a_line_that_does_not_parse_fails_with_the_lines_before_it() -> None:
    lines = log(3)
    lines[2] = "garbage"
    assert verdict(verify_text(text(lines), KEY)) == (False, 2, "line 3 is not a valid log line", False)


def test_a_broken_link_names_the_line_and_the_one_before() -> None:
    lines = log(4)
    del lines[1]  # line 3 is now line 2: it links to a line that is gone
    assert verdict(verify_text(text(lines), KEY)) == (
        False, 1, "line 2 does not link to line 1 (hash chain broken)", False)


def test_a_keyed_line_without_a_key_is_not_trusted() -> None:
    assert verdict(verify_text(text(log(2, unkeyed_first=1)), None)) == (
        False, 1, "line 2 is sealed with a key (mac=) but there is no key to verify it", True)
    loose = verify_text(text(log(2)), None, check_macs=False)
    assert (loose.ok, loose.unverified, len(loose.lines)) == (True, True, 2)


def test_a_line_under_another_key_is_a_forgery() -> None:
    lines = log(2) + log(3, b"x" * 32)[2:]  # line 3 chains to another log's line 2: broken first
    assert verify_text(text(lines), KEY).error == "line 3 does not link to line 2 (hash chain broken)"
    forged = log(2)
    forged.append(format_line(TS, "TICK", {"n": 3}, "s3", line_hash(forged[1]), b"x" * 32))
    assert verdict(verify_text(text(forged), KEY)) == (
        False, 2, "line 3 has a mac the key does not verify: it was forged, or this tick runs with another HOME/key"
        " than the one that wrote it; check HOME",
        False)


def test_an_unkeyed_line_after_a_keyed_one_was_not_written_by_automaton() -> None:
    lines = log(2, unkeyed_first=1)
    lines.append(format_line(TS, "TICK", {"n": 3}, "s3", line_hash(lines[1]), None))
    assert verdict(verify_text(text(lines), KEY)) == (
        False, 2, "line 3 has no mac after keyed line 2: it was not written by automaton", False)
    legacy = verify_text(text(log(2, unkeyed_first=2)), KEY)
    assert (legacy.ok, legacy.legacy) == (True, True)


@pytest.mark.parametrize("raw", [
    f"{TS}  TICK n=1 state=s prev={GENESIS}",  # two spaces: the event is not the second token
    f"{TS}\tTICK n=1 state=s prev={GENESIS}",
    f"{TS} TICK n=1 prev={GENESIS}",  # no state
    f"{TS} tick n=1 state=s prev={GENESIS}",  # an event is UPPER_SNAKE
])
def test_lines_that_are_not_well_formed_do_not_parse(raw: str) -> None:
    assert parse_line(raw) is None


@pytest.mark.parametrize(("event", "fields"), [("tick", {}), ("TICK", {"a-b": 1}), ("TICK", {"a b": 1})])
def test_format_line_refuses_bad_names(event: str, fields: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"bad (event|field) name"):
        format_line(TS, event, fields, "s", GENESIS, KEY)


def test_a_check_resumed_after_earlier_text_names_the_first_keyed_line_as_a_whole_check_does() -> None:
    lines = log(3, unkeyed_first=2)
    lines.append(format_line(TS, "TICK", {"n": 4}, "s4", line_hash(lines[2]), None))
    whole = verify_text(text(lines), KEY)
    assert verdict(whole) == (False, 3, "line 4 has no mac after keyed line 3: it was not written by automaton", False)
    before = verify_text(text(lines[:3]), KEY)
    assert before.ok and not before.legacy
    assert verdict(verify_text(text(lines[3:]), KEY, after=before)) == verdict(whole)
