"""The result of a use case: data that one renderer prints as text or JSON."""

from __future__ import annotations

from automaton.core.errors import ExitCode
from automaton.core.record import field, record

TYPE_CHECKING = False  # typing stays off the hook path (core/record.py says why)
if TYPE_CHECKING:
    from typing import Any


@record
class Outcome:
    """What a command returns instead of printing.

    `lines` go to stdout as text; `warnings` to stderr; `data` is the JSON object printed as
    the last stdout line under `--json` (None: the command has no JSON form). A refusal
    (exit 1) is an Outcome too, not an exception, when it carries data a script reads.
    """

    code: ExitCode = ExitCode.OK
    lines: list[str] = field(default_factory=list)
    data: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.code == ExitCode.OK
