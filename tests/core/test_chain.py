"""The hash-chained log line format: round trips, quoting, and every way a chain breaks."""

from __future__ import annotations

import pytest

from automaton.core.chain import GENESIS, format_line, line_hash, parse_line, verify_text

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
