"""A parse of the frequent commands' plain argv without building the argparse parser.

`--hook AGENT [--project DIR]` runs before every agent tool call and `--can-edit` before
every edit; `--check-gate`, `--audit` and `--loop-list` run on every tick or from scripts.
Building the full parser costs more than parsing: argparse's help formatter imports shutil
(and with it bz2, lzma) and gettext's locale machinery while the ~40 flags are declared.
`plain` returns exactly the Namespace `parser.build().parse_args(argv)` would return, for the
simple argv shapes those verbs use, and None for anything else (the caller then uses the full
parser, so every other argv behaves as before):

- only exact flag spellings from the parser's tables (no abbreviations, no `--flag=value`),
  each at most once; `--focus` (optional value) and `--help` are never fast-parsed;
- a value flag is followed by one non-empty value that does not start with `-`;
- the verb is one of FAST_VERBS.
"""

from __future__ import annotations

from types import SimpleNamespace

from automaton.cli.parser import AGENT_FLAGS, COMMON_FLAGS, LOOP_FLAGS, TASK_FLAGS, VERBS

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (core/record.py says why)
if TYPE_CHECKING:  # argparse, typing and collections.abc stay off the hook path
    import argparse
    from collections.abc import Sequence
    from typing import Any

FAST_VERBS = frozenset({"hook", "can_edit", "check_gate", "audit", "loop_list"})


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
    """The Namespace of a plain argv of a FAST_VERBS verb, or None (use the full parser)."""
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
    verbs = given & set(VERBS)
    if len(verbs) != 1 or not verbs <= FAST_VERBS:  # none, several (verb_of says so) or another verb
        return None
    # A SimpleNamespace reads like argparse's Namespace to every adapter, without importing argparse.
    return SimpleNamespace(**values)  # type: ignore[return-value]
