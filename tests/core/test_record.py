"""core.record behaves like @dataclass for the shapes the hook-path modules use."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from automaton.core.record import FrozenInstanceError, field, record


@record
class Mutable:
    a: int
    b: str = "x"
    c: list[int] = field(default_factory=list)


@record(frozen=True)
class Frozen:
    a: int
    b: tuple[str, ...] = ()

    @property
    def first(self) -> str:
        return self.b[0]


@dataclasses.dataclass
class MutableDC:
    a: int
    b: str = "x"
    c: list[int] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class FrozenDC:
    a: int
    b: tuple[str, ...] = ()


def test_init_defaults_and_factories_like_dataclass() -> None:
    for cls in (Mutable, MutableDC):
        one, two = cls(1), cls(a=2, b="y", c=[3])
        assert (one.a, one.b, one.c) == (1, "x", [])
        assert (two.a, two.b, two.c) == (2, "y", [3])
        assert cls(1).c is not cls(1).c  # one list per instance
        assert "c" not in vars(cls)
        with pytest.raises(TypeError):
            cls()  # type: ignore[call-arg]
        with pytest.raises(TypeError):
            cls(1, "y", [], 4)  # type: ignore[call-arg]


def test_repr_eq_hash_like_dataclass() -> None:
    assert repr(Mutable(1, "y", [2])) == repr(MutableDC(1, "y", [2])).replace("MutableDC", "Mutable")
    assert repr(Frozen(1, ("a",))) == "Frozen(a=1, b=('a',))"
    assert Mutable(1) == Mutable(1) and Mutable(1) != Mutable(2)
    assert Mutable(1) != MutableDC(1)  # another class is never equal
    assert Mutable.__hash__ is None and MutableDC.__hash__ is None
    assert hash(Frozen(1, ("a",))) == hash(FrozenDC(1, ("a",))) == hash((1, ("a",)))
    assert {Frozen(1): "v"}[Frozen(1)] == "v"
    assert Frozen(1, ("z",)).first == "z"


def test_frozen_refuses_assignment() -> None:
    value = Frozen(1)
    with pytest.raises(FrozenInstanceError):
        value.a = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del value.a  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(value)) == value


def test_explicit_methods_are_kept() -> None:
    @record(frozen=True)
    class Named:
        name: str

        def __str__(self) -> str:
            return self.name

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Named) and other.name.lower() == self.name.lower()

        def __hash__(self) -> int:
            return hash(self.name.lower())

    assert Named("A") == Named("a") and hash(Named("A")) == hash(Named("a")) and str(Named("A")) == "A"


def test_unsupported_shapes_are_refused() -> None:
    with pytest.raises(TypeError):
        @record
        class Bad:
            a: list[int] = []  # noqa: RUF012

    with pytest.raises(TypeError):
        @record
        class Order:
            a: int = 1
            b: int  # type: ignore[misc]

    with pytest.raises(TypeError):
        @record
        class Child(Mutable):
            d: int = 0
