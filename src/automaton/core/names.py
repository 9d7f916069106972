"""Validated identifiers: a TaskName/LoopName that exists has been checked."""

from __future__ import annotations

import os
import re

from automaton.core.errors import BadInput
from automaton.core.record import record  # not dataclasses: on the hook path

TYPE_CHECKING = False  # collections.abc stays off the hook path (core/record.py says why)
if TYPE_CHECKING:
    from collections.abc import Iterable

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


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """`"; did you mean X?"` (or `"X or Y"`) naming the entries of `known` closest to `word`
    (`difflib.get_close_matches`, cutoff 0.6; those within 0.05 of the best ratio), or "" when
    none is close. Made for the tail of
    a one-line "unknown …" error."""
    import difflib  # only on an error's path: the hook never gets here

    names = sorted(set(known) - {word})
    close = difflib.get_close_matches(word, names, n=3, cutoff=0.6)
    if close:  # only those about as close as the best: "--lop" is --loop, not --help
        best = difflib.SequenceMatcher(None, word, close[0]).ratio()
        close = [c for c in close if difflib.SequenceMatcher(None, word, c).ratio() >= best - 0.05]
    return f"; did you mean {' or '.join(close)}?" if close else ""


def folder_names(folder: str | os.PathLike[str]) -> list[str]:
    """The names of the sub-folders of `folder` (a path), [] when it cannot be listed."""
    try:
        with os.scandir(folder) as entries:
            return [e.name for e in entries if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")]
    except OSError:
        return []


def flag_hint(message: str, known: Iterable[str]) -> str:
    """`did_you_mean` for the first unknown `--flag` of argparse's "unrecognized arguments: …"
    `message` among the `known` option strings, or "" (Python 3.12's argparse suggests only
    for choices, and automaton runs on 3.11)."""
    _, sep, rest = message.partition("unrecognized arguments: ")
    flags = [w.split("=", 1)[0] for w in rest.split() if w.startswith("--")] if sep else []
    longs = [k for k in known if k.startswith("--")]
    return next((hint for hint in (did_you_mean(f, longs) for f in flags) if hint), "")
