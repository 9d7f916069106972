"""A value flag given twice is a usage error: argparse's own store action keeps the last one
silently (`--spend --since A --since B` read B, `--mode tick --mode run` ran), so a user
could never tell which value was used."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (core/record.py says why)
if TYPE_CHECKING:
    from typing import Any


def once_action() -> Any:
    """The argparse Action class for a flag that takes one value and may be given once (the
    flag must default to None). The second occurrence raises argparse.ArgumentError ("--since
    given twice (…)"), which each parser turns into its one-line usage error (exit 2).
    argparse is imported here, not at the top: the hook path never builds a parser."""
    import argparse

    class Once(argparse.Action):
        def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                     option_string: str | None = None) -> None:
            # Given already when it no longer holds its default (every such flag defaults to
            # None, which no given value is): the namespace keeps nothing of its own.
            before = getattr(namespace, self.dest, self.default)
            if before is not self.default:
                given = option_string or self.dest
                raise argparse.ArgumentError(None, f"{given} given twice ({before!r} and {values!r}): give it once")
            setattr(namespace, self.dest, values)

    return Once
