"""One JSON reader: nesting too deep and a key given twice are bad input (ValueError), never a crash."""

from __future__ import annotations

import json

import pytest

from automaton.core import jsontext

DEEP = "[" * 60000


@pytest.mark.parametrize("text", [DEEP, DEEP.encode(), '{"a":' * 30000])
def test_too_deep_is_a_decode_error_not_a_recursion_error(text: str | bytes) -> None:
    with pytest.raises(json.JSONDecodeError) as exc:
        jsontext.loads(text)
    assert exc.value.msg == jsontext.TOO_DEEP


def test_a_duplicate_key_is_refused_only_when_asked() -> None:
    doc = '{"day_usd": 1, "x": {"k": 1, "k": 2}, "day_usd": 100}'
    assert jsontext.loads(doc) == {"day_usd": 100, "x": {"k": 2}}  # json's own last-wins
    with pytest.raises(jsontext.DuplicateKey) as exc:
        jsontext.loads(doc, unique=True)
    assert exc.value.key in ("k", "day_usd") and isinstance(exc.value, ValueError)
    assert jsontext.loads('{"a": [1, {"b": 2}]}', unique=True) == {"a": [1, {"b": 2}]}
