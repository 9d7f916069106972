"""core.record.replace: dataclasses.replace for records (and dataclasses)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from automaton.core.record import FrozenInstanceError, field, record, replace


@record(frozen=True)
class Point:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()
    seen: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Real:
    a: int
    b: int = 2


def test_replace_copies_with_changes() -> None:
    p = Point(1, 2, ("a",), [5])
    q = replace(p, y=3)
    assert q == Point(1, 3, ("a",), [5]) and p == Point(1, 2, ("a",), [5]) and q is not p
    with pytest.raises(FrozenInstanceError):
        q.x = 9  # type: ignore[misc]
    with pytest.raises(TypeError, match="no field 'z'"):
        replace(p, z=1)  # type: ignore[call-arg]


def test_replace_works_on_dataclasses_too() -> None:
    assert replace(Real(1), b=5) == Real(1, 5)
