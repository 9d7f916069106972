"""The one place that prints a command's Outcome: text lines, warnings, and the JSON last line."""

from __future__ import annotations

import json
import sys

from automaton.core.errors import one_line
from automaton.core.outcome import Outcome

TYPE_CHECKING = False  # typing stays off the hook path (core/record.py says why)
if TYPE_CHECKING:
    from typing import Any, TextIO


def emit(outcome: Outcome, as_json: bool, out: TextIO | None = None, err: TextIO | None = None) -> None:
    """Print `outcome`. Under --json only the JSON object is printed on stdout (its last line)."""
    out = out or sys.stdout
    err = err or sys.stderr
    for warning in outcome.warnings:
        print(f"automaton: warning: {one_line(warning)}", file=err)
    if as_json and outcome.data is not None:
        print(json.dumps(outcome.data, sort_keys=False), file=out)
        return
    for line in outcome.lines:  # each line stays one line, whatever user text it quotes
        print(one_line(line), file=out)
    if as_json:  # a verb without a JSON form still ends with one object
        print(json.dumps({"ok": outcome.ok, "lines": outcome.lines}), file=out)


def emit_error(message: str, code: int, as_json: bool, out: TextIO | None = None,
               err: TextIO | None = None, lines: tuple[str, ...] = ()) -> None:
    """One line on stderr (one for each of `lines` when given); under --json also `{"ok": false,
    "error": ..., "exit_code": n}`."""
    for line in lines or (message,):  # several invalid fields: one line each (core.errors.InvalidFields)
        print(f"automaton: {one_line(line)}", file=err or sys.stderr)
    if as_json:
        payload: dict[str, Any] = {"ok": False, "error": message, "exit_code": code}
        print(json.dumps(payload), file=out or sys.stdout)


def shown(text: str) -> str:
    """`text` as one line a terminal shows as written: control characters escaped (`one_line`)
    and so are invisible format characters (bidi overrides such as U+202E, zero-width joiners),
    which a file under review could use to make its diff read other than it is."""
    import unicodedata  # here: only a review screen needs it, the hook path does not

    return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) == "Cf" else c for c in one_line(text))
