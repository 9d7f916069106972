"""The shape of a JSON document (keys and value types, not values), to check a fake against a
recorded real one: `shape({"a": 1, "b": [{"c": "x"}]}) == {"a": "number", "b": [{"c": "str"}]}`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"


def shape(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: shape(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [shape(doc[0])] if doc else []
    if isinstance(doc, bool):
        return "bool"
    if isinstance(doc, int | float):
        return "number"
    if doc is None:
        return "null"
    return type(doc).__name__


def fixture(name: str) -> Any:
    """A recorded real document from tests/e2e/fixtures."""
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))
