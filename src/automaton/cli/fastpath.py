"""A parse of the hook path's plain argv without building the argparse parser.

`--hook AGENT [--project DIR]` runs before every agent tool call and `--can-edit` before
every edit. Building the full parser costs more than parsing: argparse's help formatter
imports shutil (and with it bz2, lzma) and gettext's locale machinery while the ~40 flags are
declared. `plain` returns exactly the Namespace `parser.build().parse_args(argv)` would return,
for the simple argv shapes those verbs use, and None for anything else (the caller then uses
the full parser, so every other argv behaves as before):

- only exact flag spellings from the parser's tables (no abbreviations, no `--flag=value`),
  each at most once; `--focus` (optional value) and `--help` are never fast-parsed;
- a value flag is followed by one non-empty value that does not start with `-`;
- the verb is `hook` or `can_edit`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # argparse stays off the hook path (it runs before every agent edit)
    import argparse

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any, cast

from automaton.cli.parser import AGENT_FLAGS, COMMON_FLAGS, LOOP_FLAGS, TASK_FLAGS, VERBS

FAST_VERBS = frozenset({"hook", "can_edit"})


def _table() -> dict[str, tuple[str, bool]]:
    """flag -> (dest, takes a value), for every flag argparse would parse plainly."""
    out: dict[str, tuple[str, bool]] = {}
    for table in (TASK_FLAGS, LOOP_FLAGS, AGENT_FLAGS, COMMON_FLAGS):
        for flags, kwargs in table:
            action = kwargs.get("action")
            plain_value = action is None and "nargs" not in kwargs and "type" not in kwargs
            if len(flags) != 1 or not (action == "store_true" or plain_value):
                continue  # anything fancier goes through argparse
            out[flags[0]] = (kwargs.get("dest") or flags[0].lstrip("-").replace("-", "_"), action is None)
    return out


def defaults() -> dict[str, Any]:
    """dest -> default of every flag of the parser (what argparse puts in an empty Namespace)."""
    found: dict[str, Any] = {}
    for table in (TASK_FLAGS, LOOP_FLAGS, AGENT_FLAGS, COMMON_FLAGS):
        for flags, kwargs in table:
            dest = kwargs.get("dest") or flags[0].lstrip("-").replace("-", "_")
            found[dest] = kwargs.get("default", False if kwargs.get("action") == "store_true" else None)
    return found


def plain(argv: Sequence[str]) -> argparse.Namespace | None:
    """The Namespace of a plain `--hook`/`--can-edit` argv, or None (use the full parser)."""
    table = _table()
    values = defaults()
    seen: set[str] = set()
    i = 0
    while i < len(argv):
        flag = argv[i]
        if flag not in table or flag in seen:
            return None
        seen.add(flag)
        dest, takes_value = table[flag]
        if takes_value:
            if i + 1 >= len(argv) or not argv[i + 1] or argv[i + 1].startswith("-"):
                return None
            values[dest] = argv[i + 1]
            i += 2
        else:
            values[dest] = True
            i += 1
    given = {dest for dest, value in values.items() if value is not None and value is not False}
    if not given & FAST_VERBS or given & (set(VERBS) - FAST_VERBS):
        return None
    # A SimpleNamespace reads like argparse's Namespace to every adapter, without importing argparse.
    return cast("argparse.Namespace", SimpleNamespace(**values))
