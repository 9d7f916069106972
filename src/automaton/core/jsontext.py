"""Every JSON document automaton reads from a file or a stream goes through `loads`.

`json.loads` raises RecursionError (not ValueError) for a document nested deeper than the
interpreter's recursion limit (about a thousand levels: the C scanner counts its own depth
through `Py_EnterRecursiveCall`), so `'[' * 60000` in a config crashed every reader that only
caught ValueError. Here that depth is a `json.JSONDecodeError` (a ValueError) like any other
malformed document, so each caller's own bad-input handling names the file. With `unique`,
a key given twice in one object is refused too: `{"day_usd": 1, "day_usd": 100}` would
otherwise silently mean the last value, and a human reading the file may see the first.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (core/record.py says why)
if TYPE_CHECKING:
    from typing import Any

TOO_DEEP = "nested too deeply"


def _unique_pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(items)
    if len(out) != len(items):  # the key loop only on a duplicate
        seen: set[str] = set()
        for key, _ in items:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return out


class DuplicateKey(ValueError):
    """A key given twice in one JSON object (`key`); a ValueError, as bad JSON is."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def loads(text: str | bytes, *, unique: bool = False, **kwargs: Any) -> Any:
    """`json.loads(text, **kwargs)`; raises json.JSONDecodeError (a ValueError, `msg`
    TOO_DEEP) for a document nested too deeply, and with `unique` DuplicateKey (a ValueError)
    for a key given twice in one object (then `object_pairs_hook` must not be given)."""
    if unique:
        kwargs["object_pairs_hook"] = _unique_pairs
    try:
        return json.loads(text, **kwargs)
    except RecursionError:
        doc = text if isinstance(text, str) else text[:0].decode()
        raise json.JSONDecodeError(TOO_DEEP, doc, 0) from None
