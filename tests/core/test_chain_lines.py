"""`core.chain.Lines`, the log's lines with a lazily parsed prefix: whatever is asked of it, it
answers as the plain list of the same lines would. The ledger and the anchors read a log's lines
through it, so a wrong index, length or comparison would hand a brake the wrong lines."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from automaton.core.chain import GENESIS, Lines, LogLine, format_line, line_hash, parse_line

N = 70  # more than the 64 lines a short slice reads one by one
TS = "2026-12-01T00:00:00Z"


def _text(n: int) -> str:
    rows, prev = [], GENESIS
    for i in range(n):
        rows.append(format_line(TS, "TICK", {"n": i + 1}, f"s{i + 1}", prev, b"k" * 32))
        prev = line_hash(rows[-1])
    return "".join(f"{row}\n" for row in rows)


TEXT = _text(N)


def plain() -> list[LogLine]:
    out = [parse_line(row) for row in TEXT.split("\n")[:-1]]
    assert all(x is not None for x in out)
    return out  # type: ignore[return-value]


def lazy() -> Lines:
    return Lines.from_prefix(TEXT, N, mark="m")


def raws(lines: Any) -> list[str]:
    return [x.raw for x in lines]


def test_reading_a_lazy_list_answers_as_the_plain_list() -> None:
    want = plain()
    assert len(lazy()) == N and bool(lazy()) and not Lines.from_prefix("", 0)
    for i in (0, 1, N - 1, -1, -N):
        assert lazy()[i].raw == want[i].raw
    for i in (N, -N - 1):
        with pytest.raises(IndexError, match=r"^list index out of range$"):
            lazy()[i]
    for part in (slice(0, 3), slice(-3, None), slice(None, None, -1), slice(0, N), slice(2, N - 1, 3)):
        assert raws(lazy()[part]) == raws(want[part])
    assert raws(reversed(lazy())) == raws(reversed(want))
    loaded = lazy()
    assert raws(loaded) == raws(want) and raws(reversed(loaded)) == raws(reversed(want))
    assert want[5] in lazy() and parse_line(format_line(TS, "TICK", {}, "x", GENESIS)) not in lazy()
    assert lazy() == want and lazy() == lazy() and lazy().__ne__(want) is False and lazy() != want[:-1]
    assert repr(lazy()) == repr(want)
    for copied in (pickle.loads(pickle.dumps(lazy())), copy.copy(lazy())):
        assert type(copied) is list and raws(copied) == raws(want)
    assert lazy() <= want and not lazy() < want and lazy() >= want and not lazy() > want


@pytest.mark.parametrize("change", [
    lambda x: x.append(x[0]), lambda x: x.extend(x[:2]), lambda x: x.insert(3, x[0]), lambda x: x.pop(),
    lambda x: x.pop(2), lambda x: x.remove(x[4]), lambda x: x.index(x[7]), lambda x: x.count(x[7]),
    lambda x: x.copy(), lambda x: x.sort(key=lambda line: line.raw), lambda x: x.reverse(), lambda x: x.clear(),
    lambda x: x + x[:2], lambda x: x * 2, lambda x: 2 * x, lambda x: x.__iadd__(x[:1]), lambda x: x.__imul__(2),
    lambda x: x.__setitem__(0, x[1]), lambda x: x.__delitem__(slice(0, 5)),
])
def test_changing_a_lazy_list_changes_it_as_a_plain_list(change: Callable[[Any], Any]) -> None:
    mine, want = lazy(), plain()
    got, expect = change(mine), change(want)
    assert raws(mine) == raws(want)
    if isinstance(expect, list):
        assert raws(got) == raws(expect)
    elif isinstance(expect, LogLine):
        assert got.raw == expect.raw
    else:
        assert got == expect


def test_the_list_methods_keep_their_names() -> None:
    assert [Lines.append.__name__, Lines.pop.__name__] == ["append", "pop"]


def test_lines_of_parsed_items_keep_the_mark_and_grow() -> None:
    items = plain()[:3]
    made = Lines.of(items, mark="m")
    assert (raws(made), made.mark, made.done) == (raws(items), "m", 0)
    made.push(items[0])
    assert raws(made) == raws([*items, items[0]])
    copied = made.lazy_copy()
    copied.push(items[1])
    assert copied.mark == "m" and len(copied) == 5 and len(made) == 4


def test_a_lazy_copy_keeps_the_mark_and_the_prefix_unparsed() -> None:
    first = lazy()
    first.push(plain()[0])
    copied = first.lazy_copy()
    assert copied.mark == "m" and copied.done == N and len(copied) == N + 1
    copied.push(plain()[1])
    assert len(first) == N + 1  # its own tail


def test_shares_start_is_true_only_for_the_very_same_lines_in_front() -> None:
    first = lazy()
    extra = plain()
    first.push(extra[0])
    grown = first.lazy_copy()
    grown.push(extra[1])
    assert first.shares_start(grown) and first.shares_start(first.lazy_copy())
    assert not grown.shares_start(first)  # longer
    other = first.lazy_copy()
    other._tail[0] = extra[2]  # the same prefix, another line after it
    assert not first.shares_start(other)
    assert not first.shares_start(lazy())  # the same text, parsed apart: other line objects
    loaded = Lines.of(plain())
    longer = Lines.of([*loaded, extra[0]])
    assert loaded.shares_start(longer) and loaded.shares_start(Lines.of(list(loaded)))
    assert not longer.shares_start(loaded) and not loaded.shares_start(Lines.of(plain()))


def test_a_prefix_line_is_parsed_once_whoever_reads_it() -> None:
    # The ledger's fold memo trusts the very line objects it folded (`shares_start`): a line read
    # again, or through a lazy copy, must be the same object.
    first = lazy()
    copied = first.lazy_copy()
    assert first[3] is first[3] is copied[3] and first[-1] is copied[-1]
    assert first.done == N  # read line by line: the prefix is not parsed whole


def test_a_prefix_line_that_does_not_parse_is_an_error_naming_it() -> None:
    # Only a caller's bug makes one (the store passes a prefix verified byte for byte); it must
    # not be taken as a line.
    broken = Lines.from_prefix(TEXT.split("\n")[0] + "\nnot a log line\n", 2)
    assert broken[0].raw == TEXT.split("\n")[0]
    with pytest.raises(ValueError, match=r"^line 2 of a verified log prefix does not parse$"):
        broken[1]


def test_a_short_slice_leaves_the_prefix_unparsed_and_a_longer_one_parses_it() -> None:
    lines = lazy()
    assert raws(lines[:64]) == raws(plain()[:64]) and lines.done == N  # 64 lines: read one by one
    assert raws(lines[:65]) == raws(plain()[:65]) and lines.done == 0  # then the whole prefix once
