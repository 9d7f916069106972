"""The hash-chained log line format: round trips, quoting, and every way a chain breaks."""

from __future__ import annotations

import pytest

from automaton.core import chain
from automaton.core.chain import GENESIS, format_line, line_hash, line_mac, parse_line, verify_text

TS = "2026-01-01T00:00:00Z"


def chain_text(*states: str) -> str:
    prev, lines = GENESIS, []
    for n, state in enumerate(states):
        line = format_line(TS, "TRANSITION", {"n": n}, state, prev)
        lines.append(line)
        prev = line_hash(line)
    return "".join(f"{line}\n" for line in lines)


@pytest.mark.parametrize("value", [
    "plain", "with space", 'a "quote"', "k=v", "", None, "line\nbreak", "tab\there", "uni\u2028sep",
    "carriage\rreturn", "x\x1cy", "ünïcödé", "back\\slash", "state=forged prev=0",
])
def test_values_round_trip(value: object) -> None:
    line = format_line(TS, "EVENT", {"key": value}, "design:approved", GENESIS)
    assert "\n" not in line
    parsed = parse_line(line)
    assert parsed is not None
    assert parsed.fields == {"key": "null" if value is None else value}
    assert parsed.state == "design:approved"
    assert parsed.prev == GENESIS
    assert parsed.event == "EVENT" and parsed.ts == TS


def test_state_and_prev_are_not_taken_from_fields() -> None:
    line = format_line(TS, "EVENT", {"state": "complete", "prev": "x"}, "new", GENESIS)
    parsed = parse_line(line)
    assert parsed is not None and parsed.state == "new" and parsed.prev == GENESIS
    assert parsed.fields == {}


@pytest.mark.parametrize(("event", "fields"), [("lower", {}), ("BAD-EVENT", {}), ("EV\n", {}),
                                               ("EVENT", {"bad key": 1}), ("EVENT", {"k=": 1})])
def test_bad_event_or_key_raises(event: str, fields: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        format_line(TS, event, fields, "new", GENESIS)


@pytest.mark.parametrize("raw", ["", "just text", f"{TS} lower state=x prev=y",
                                 f"{TS} EVENT k=v prev=y", f"{TS} EVENT k=v state=x",
                                 f'{TS} EVENT k="unterminated state=x prev=y'])
def test_malformed_lines_do_not_parse(raw: str) -> None:
    assert parse_line(raw) is None


def test_intact_chain_verifies() -> None:
    check = verify_text(chain_text("new", "research", "research:awaiting_approval"))
    assert check.ok and check.error == ""
    assert check.last_state == "research:awaiting_approval"
    assert [line.state for line in check.lines] == ["new", "research", "research:awaiting_approval"]


def test_empty_chain_is_valid_and_links_to_genesis() -> None:
    check = verify_text("")
    assert check.ok and check.lines == [] and check.last_state is None and check.last_hash == GENESIS


def test_edited_line_breaks_the_chain_at_the_next_line() -> None:
    text = chain_text("new", "research", "implement")
    edited = text.replace("state=research ", "state=design ", 1)
    check = verify_text(edited)
    assert not check.ok and "line 3" in check.error and "chain broken" in check.error


def test_edited_last_line_is_not_caught_by_the_chain_alone() -> None:
    # The last line has no successor: the `.state` comparison (store.tasks) catches this one.
    text = chain_text("new", "research")
    edited = text.replace("state=research ", "state=complete ")
    check = verify_text(edited)
    assert check.ok and check.last_state == "complete"


@pytest.mark.parametrize("mutate", [
    lambda t: t[:-1],  # partial last line
    lambda t: t[: t.index("\n") + 10] + "\n",  # cut inside line 2
    lambda t: "\n".join(t.split("\n")[1:]),  # first line removed
    lambda t: t.split("\n")[1] + "\n" + t.split("\n")[0] + "\n",  # reordered
    lambda t: t + "garbage\n",
    lambda t: t + "\n",  # an empty line
])
def test_damaged_chains_fail(mutate: object) -> None:
    text = chain_text("new", "research")
    assert callable(mutate)
    check = verify_text(mutate(text))
    assert not check.ok and check.error


def test_unicode_line_separator_in_a_value_does_not_split_the_line() -> None:
    prev = GENESIS
    first = format_line(TS, "EVENT", {"note": "a\u2028b\x1cc\rd"}, "new", prev)
    second = format_line(TS, "EVENT", {}, "research", line_hash(first))
    check = verify_text(f"{first}\n{second}\n")
    assert check.ok and len(check.lines) == 2


# ---- keyed lines: a mac under the user's key ---------------------------------------------------

KEY = bytes(range(32))


def keyed_text(*states: str, key: bytes | None = KEY, unkeyed_first: int = 0) -> str:
    """A chain of TRANSITION lines; the first `unkeyed_first` carry no mac (a legacy prefix)."""
    prev, lines = GENESIS, []
    for n, state in enumerate(states):
        line = format_line(TS, "TRANSITION", {"n": n}, state, prev, None if n < unkeyed_first else key)
        lines.append(line)
        prev = line_hash(line)
    return "".join(f"{line}\n" for line in lines)


def test_a_keyed_line_ends_in_its_mac_and_round_trips() -> None:
    line = format_line(TS, "EVENT", {"note": "a b", "mac": "forged"}, "new", GENESIS, KEY)
    body, _, mac = line.rpartition(" mac=")
    assert mac == line_mac(KEY, body) and len(mac) == 64
    parsed = parse_line(line)
    assert parsed is not None and parsed.mac == mac and parsed.body == body and parsed.raw == line
    assert parsed.fields == {"note": "a b"} and parsed.state == "new" and parsed.prev == GENESIS


def test_an_intact_keyed_chain_verifies_with_its_key_only() -> None:
    text = keyed_text("new", "research", "implement")
    check = verify_text(text, KEY)
    assert check.ok and check.last_state == "implement" and not check.legacy
    other = verify_text(text, bytes(32))
    assert not other.ok and "line 1" in other.error and "does not verify" in other.error
    missing = verify_text(text)
    assert not missing.ok and missing.needs_key and "no key" in missing.error


def test_a_forged_line_with_a_recomputed_chain_but_no_mac_is_caught() -> None:
    text = keyed_text("new", "research")
    last = text.split("\n")[-2]
    forged = format_line(TS, "TRANSITION", {}, "complete", line_hash(last))  # sha chain right, no key
    check = verify_text(text + forged + "\n", KEY)
    assert not check.ok and "line 3 has no mac after keyed line 1" in check.error
    assert [line.state for line in check.lines] == ["new", "research"]


def test_a_whole_chain_recomputed_without_the_key_is_legacy_not_keyed() -> None:
    # The store refuses it where automaton keyed the log before (store.chainlog.read_chain).
    check = verify_text(keyed_text("new", "complete", key=None), KEY)
    assert check.ok and check.legacy


@pytest.mark.parametrize("mutate", [
    lambda t: t.replace("state=research ", "state=design ", 1),  # an edited line
    lambda t: "".join(t.splitlines(keepends=True)[:1] + t.splitlines(keepends=True)[2:]),  # middle line removed
    lambda t: t[:t.rindex(" mac=") + 10] + "0" * 54 + "\n",  # a wrong mac on the last line
    lambda t: t[:t.rindex(" mac=") + 5] + "XYZ\n",  # a malformed mac
    lambda t: t[:t.rindex(" mac=")] + "\n",  # the last line's mac stripped
    lambda t: t[:-20] + "\n",  # cut inside the last line's mac
])
def test_damaged_keyed_chains_fail(mutate: object) -> None:
    assert callable(mutate)
    check = verify_text(mutate(keyed_text("new", "research", "implement")), KEY)
    assert not check.ok and check.error


def test_truncation_to_a_keyed_prefix_still_verifies() -> None:
    # The last line is linked by nothing after it: the state file's comparison catches this one.
    lines = keyed_text("new", "research", "implement").splitlines(keepends=True)
    check = verify_text("".join(lines[:2]), KEY)
    assert check.ok and check.last_state == "research"


def test_an_unkeyed_prefix_is_legacy_and_migrates_with_the_first_keyed_line() -> None:
    legacy = verify_text(keyed_text("new", "research", key=None), None)
    assert legacy.ok and legacy.legacy  # reads without a key at all
    migrated = verify_text(keyed_text("new", "research", "implement", unkeyed_first=2), KEY)
    assert migrated.ok and not migrated.legacy
    assert [bool(line.mac) for line in migrated.lines] == [False, False, True]
    assert not verify_text(keyed_text("new", "research", "implement", unkeyed_first=2), None).ok


def test_a_mac_anywhere_but_at_the_end_is_malformed() -> None:
    line = format_line(TS, "EVENT", {}, "new", GENESIS, KEY)
    body, _, mac = line.rpartition(" mac=")
    assert parse_line(body.replace(" state=", f" mac={mac} state=")) is None
    assert parse_line(f"{line} x=1") is None


def test_a_reader_without_the_key_may_take_keyed_lines_on_their_chain_alone() -> None:
    text = keyed_text("new", "research", unkeyed_first=1)
    check = verify_text(text, None, check_macs=False)
    assert check.ok and check.unverified and check.last_state == "research"
    assert not verify_text(keyed_text("new", unkeyed_first=1), None, check_macs=False).unverified  # nothing keyed
    forged = text + format_line(TS, "TRANSITION", {}, "complete", line_hash(text.split("\n")[-2])) + "\n"
    assert "no mac after keyed line 2" in verify_text(forged, None, check_macs=False).error


# ---- verifying only what was appended (`after`) ------------------------------------------------

@pytest.mark.parametrize("unkeyed_first", [0, 2, 5])
def test_a_check_continued_after_a_prefix_is_the_check_of_the_whole(unkeyed_first: int) -> None:
    text = keyed_text(*"abcde", unkeyed_first=unkeyed_first)
    rows = text.split("\n")[:-1]
    whole = verify_text(text, KEY)
    for cut in range(len(rows) + 1):
        head = "".join(f"{r}\n" for r in rows[:cut])
        tail = "".join(f"{r}\n" for r in rows[cut:])
        part = verify_text(tail, KEY, after=verify_text(head, KEY))
        assert (part.ok, [x.raw for x in part.lines], part.error, part.last_hash) == \
            (whole.ok, [x.raw for x in whole.lines], whole.error, whole.last_hash)


def test_a_continued_check_catches_what_the_whole_check_catches() -> None:
    rows = keyed_text(*"abcd").split("\n")[:-1]
    head = verify_text(f"{rows[0]}\n{rows[1]}\n", KEY)
    unkeyed = format_line(TS, "TRANSITION", {"n": 2}, "c", line_hash(rows[1]))  # no mac after keyed lines
    assert verify_text(f"{unkeyed}\n", KEY, after=head).error == "line 3 has no mac after keyed line 1:" \
        " it was not written by automaton"
    assert "line 3 does not link" in verify_text(f"{rows[3]}\n", KEY, after=head).error
    forged = rows[2].replace(" mac=", " mac=0")[:len(rows[2])]
    assert "line 3 has a mac the key does not verify" in verify_text(f"{forged}\n", KEY, after=head).error
    cut = verify_text(rows[2], KEY, after=head)  # a partial last line: as the whole check reads it
    whole = verify_text(f"{rows[0]}\n{rows[1]}\n{rows[2]}", KEY)
    assert (cut.ok, cut.lines, cut.error) == (whole.ok, whole.lines, whole.error) == (False, [], whole.error)


def _keyed_text(n: int) -> str:
    prev, rows = chain.GENESIS, []
    for i in range(n):
        row = chain.format_line("2026-01-01T00:00:00Z", "WARNING", {"n": i}, "none", prev, b"k" * 32)
        rows.append(row)
        prev = chain.line_hash(row)
    return "".join(f"{r}\n" for r in rows)


def test_lines_from_a_prefix_read_as_the_parsed_list_and_parse_only_what_is_read() -> None:
    text = _keyed_text(100)
    whole = chain.verify_text(text, b"k" * 32).lines
    lazy = chain.Lines.from_prefix(text, 100)
    assert len(lazy) == 100 and lazy and lazy[-1] == whole[-1] and lazy[0] == whole[0]
    assert lazy[-10:] == whole[-10:] and lazy[5:8] == whole[5:8]
    assert [x.raw for x in reversed(lazy)][:3] == [x.raw for x in whole[::-1][:3]]
    assert lazy.done == 100  # nothing above parsed the whole prefix
    grown = chain.verify_text(_keyed_text(103)[len(text):], b"k" * 32, after=chain.ChainCheck(True, lazy))
    assert grown.ok and isinstance(grown.lines, chain.Lines) and grown.lines.done == 100 and len(grown.lines) == 103
    assert grown.lines == chain.verify_text(_keyed_text(103), b"k" * 32).lines  # compares as a whole
    assert list(lazy) == whole and lazy.done == 0 and lazy == whole  # iteration parses the prefix once
    copy = grown.lines.lazy_copy()
    copy.append(whole[0])
    assert len(copy) == 104 and len(grown.lines) == 103  # a copy is its own list
