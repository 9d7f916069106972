"""Counting what `store.chainlog` verifies: the tests of the per-process memo and of the keyed
checkpoint both ask how many lines each `verify_text` call was given."""

from __future__ import annotations

import pytest

from automaton.core import chain
from automaton.store import chainlog


def checked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of lines each verify_text call of chainlog is given, from here on."""
    sizes: list[int] = []
    real = chain.verify_text

    def counting(text: str, *args: object, **kw: object) -> chain.ChainCheck:
        sizes.append(text.count("\n"))
        return real(text, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(chainlog, "verify_text", counting)
    return sizes
