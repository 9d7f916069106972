"""Run by tests/mutation/run.py inside a group's scratch copy: reads a JSON list of
[mutant name, source path] from stdin, prints a JSON object mutant name -> its diff
(`mutmut show`, for all of them in one process)."""

from __future__ import annotations

import json
import sys

from mutmut.mutation.diff_apply import get_diff_for_mutant


def main() -> None:
    """Print {name: unified diff} for the [name, path] pairs on stdin."""
    pairs = json.load(sys.stdin)
    print(json.dumps({name: get_diff_for_mutant(name, path=path) for name, path in pairs}))


if __name__ == "__main__":
    main()
