"""What `find` writes: the files of its write primaries and of `-delete`, and whether its
`-exec` runs a writer (GNU findutils manual "Actions"; find(1) on BSD).

`-delete` is judged file by file where the expression is simple enough to evaluate now, so that
`find . -name '*.pyc' -delete` is judged by the files it matches, not by the project root.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from automaton.hooks.shellparse import Unsafe

_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fls", "-fprintf"})
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def targets(args: list[str], here: Path | None, read_only: Callable[[str, list[str]], bool]) -> list[str]:
    """find(1): `-fprint`/`-fprint0`/`-fls`/`-fprintf FILE` write FILE; `-exec`/`-ok` run a
    command, allowed only for a program `read_only` clears (`{}` stands for a path); `-delete` writes the
    files it matches: for a plain conjunction of `-name`/`-iname`/`-type`/depth tests they are
    listed now (`deletions`), otherwise every starting point counts as written."""
    i = 0
    while i < len(args) and (args[i] in ("-H", "-L", "-P") or args[i].startswith(("-D", "-O"))):
        i += 2 if args[i] == "-D" else 1
    starts: list[str] = []
    while i < len(args) and not args[i].startswith(("-", "(", "!", ")")):
        starts.append(args[i])
        i += 1
    expression = args[i:]
    found: list[str] = []
    while i < len(args):
        arg = args[i]
        if arg in _FIND_WRITES and i + 1 < len(args):
            found.append(args[i + 1])
            i += 1
        elif arg in _FIND_EXEC:
            end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+")), len(args))
            sub = args[i + 1:end]
            if not sub or not read_only(os.path.basename(sub[0]).lower(), sub[1:]):
                raise Unsafe(f"find {arg} runs {sub[0] if sub else 'a command'!r} on paths found at run time:"
                             " automaton cannot tell what it writes")
            i = end
        i += 1
    if "-delete" in expression:
        found += deletions(starts or ["."], expression, here)
    return found


_FIND_TESTS = {"-name": 1, "-iname": 1, "-type": 1, "-maxdepth": 1, "-mindepth": 1, "-delete": 0, "-print": 0,
               "-depth": 0, "-xdev": 0, "-mount": 0}
MAX_WALK = 50_000


def deletions(starts: list[str], expression: list[str], here: Path | None) -> list[str]:
    """The files `find STARTS EXPRESSION -delete` would delete, read from the disk now: only for a
    conjunction of the tests in `_FIND_TESTS` (no `-o`, `!`, parentheses); else the starts."""
    import fnmatch

    tests: list[tuple[str, str]] = []
    i = 0
    while i < len(expression):
        arg = expression[i]
        if arg not in _FIND_TESTS or (_FIND_TESTS[arg] and i + 1 >= len(expression)):
            return starts
        if _FIND_TESTS[arg]:
            tests.append((arg, expression[i + 1]))
        i += 1 + _FIND_TESTS[arg]
    if here is None:
        return starts
    found: list[str] = []
    seen = 0
    for start in starts:
        top = os.path.join(here, os.path.expanduser(start))
        for folder, dirs, files in os.walk(top):
            depth = 0 if folder == top else os.path.relpath(folder, top).count(os.sep) + 1
            for entry in [*dirs, *files]:
                seen += 1
                if seen > MAX_WALK:
                    return starts
                path = os.path.join(folder, entry)
                if all(_find_test(t, v, entry, path, depth + 1, fnmatch.fnmatchcase) for t, v in tests):
                    found.append(os.path.relpath(path, here))
    return found


def _find_test(test: str, value: str, name: str, path: str, depth: int, match: Callable[[str, str], bool]) -> bool:
    if test == "-name":
        return match(name, value)
    if test == "-iname":
        return match(name.lower(), value.lower())
    if test == "-type":
        return (value == "d") == os.path.isdir(path) if value in ("d", "f") else True
    if test == "-maxdepth":
        return depth <= int(value) if value.isdigit() else True
    return depth >= int(value) if value.isdigit() else True
