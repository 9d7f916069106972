"""Validated identifiers: a TaskName/LoopName that exists has been checked."""

from __future__ import annotations

import re

from automaton.core.errors import BadInput
from automaton.core.record import record  # not dataclasses: on the hook path

# `\Z`, not `$`: `$` also matches before a trailing newline, and "fix\n" must not pass.
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*\Z")
MAX_NAME = 64
RESERVED = frozenset({"complete"})


def _check(kind: str, value: str) -> str:
    if not isinstance(value, str) or not value:
        raise BadInput(f"{kind} name is empty: use kebab-case like 'fix-login'")
    if len(value) > MAX_NAME:
        raise BadInput(f"{kind} name {value[:20]!r}... is longer than {MAX_NAME} characters")
    if not NAME_RE.match(value):
        raise BadInput(
            f"invalid {kind} name {value!r}: use kebab-case [a-z0-9] words joined by '-',"
            f" e.g. 'fix-login'"
        )
    if value in RESERVED:
        raise BadInput(f"{kind} name {value!r} is reserved: choose another name")
    return value


class TaskName(str):
    """One kebab-case path component naming a task (safe in paths and shell text)."""

    @classmethod
    def of(cls, value: str) -> TaskName:
        """Validate `value`; raises BadInput (exit 2) naming the value."""
        return cls(_check("task", value))


class LoopName(str):
    """A kebab-case loop name (safe in paths, crontab tags, plist labels, shell text)."""

    @classmethod
    def of(cls, value: str) -> LoopName:
        """Validate `value`; raises BadInput (exit 2) naming the value."""
        return cls(_check("loop", value))


@record(frozen=True)
class TaskRef:
    """A task address: `name`, or `parent/name` for a sub-task."""

    name: TaskName
    parent: TaskName | None = None

    @classmethod
    def parse(cls, value: str) -> TaskRef:
        """Parse `task` or `parent/sub`; raises BadInput for anything else."""
        if not isinstance(value, str) or not value:
            raise BadInput("task is empty: pass --task NAME or --task PARENT/SUB")
        parts = value.split("/")
        if len(parts) == 1:
            return cls(TaskName.of(parts[0]))
        if len(parts) == 2:
            return cls(TaskName.of(parts[1]), TaskName.of(parts[0]))
        raise BadInput(f"invalid task {value!r}: use NAME or PARENT/SUB (one level of sub-tasks)")

    def __str__(self) -> str:
        return f"{self.parent}/{self.name}" if self.parent else str(self.name)
