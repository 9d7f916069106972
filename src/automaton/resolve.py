"""The one path resolver shared by --can-edit, the hooks and the drift gate.

Absolute and relative spellings, `..`, symlinks anywhere in the path (a dangling final
component too) and letter case on case-insensitive volumes all resolve to one real path
before any scope test; scope tests compare path components, never string prefixes.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path, PurePosixPath

from automaton.core.errors import BadInput

# Unicode category Cc, which the Unicode stability policy fixes to exactly these 65 code points
# (tests/test_imports.py checks it against unicodedata, which the hook does not import).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def check_text(path: str | os.PathLike[str]) -> str:
    """`path` as a string; BadInput (exit 2; a hook denies) when it holds a control character
    (NUL, newline, escape, … — Unicode category Cc): the OS rejects NUL with a bare ValueError,
    and the others make one-line messages and scope tests lie."""
    text = os.fspath(path)
    found = _CONTROL.search(text)
    if found is not None:
        bad = found.group()
        raise BadInput(f"invalid path {text!r}: control character U+{ord(bad):04X} is not allowed in a path")
    return text


def real(path: str | os.PathLike[str], base: Path) -> Path:
    """`path` (relative to `base` if not absolute, `~` expanded) with every symlink resolved.
    Raises BadInput (`check_text`) when `path` or `base` holds a control character."""
    check_text(base)
    raw = os.path.expanduser(check_text(path))
    if os.name == "nt":
        raw = raw.replace("/", "\\")
    joined = raw if os.path.isabs(raw) else os.path.join(base, raw)
    return Path(os.path.realpath(joined))


@lru_cache(maxsize=64)
def case_insensitive(folder: Path) -> bool:
    """Whether the volume holding `folder` ignores letter case (probed, not assumed by OS).

    Probes the nearest component (of `folder` or its parents) that has letters: the same
    path with that component's case swapped names the same file only on such a volume.
    """
    if os.name == "nt":
        return True
    for probe in (folder, *folder.parents):
        name = probe.name
        if not name or name.swapcase() == name:
            continue
        swapped = probe.with_name(name.swapcase())
        try:
            return swapped.exists() and os.path.samefile(probe, swapped)
        except OSError:
            return False
    return False


def relative_parts(path: Path, root: Path) -> tuple[str, ...] | None:
    """Components of real `path` below real `root`, or None when it lies outside.

    Both must already be real paths. On a case-insensitive volume components are lowercased.
    """
    fold = case_insensitive(root)
    p_parts = [s.lower() if fold else s for s in path.parts]
    r_parts = [s.lower() if fold else s for s in root.parts]
    if len(p_parts) < len(r_parts) or p_parts[: len(r_parts)] != r_parts:
        return None
    return tuple(path.parts[len(r_parts):])


def posix(parts: tuple[str, ...]) -> str:
    """Components joined with `/`, as scope patterns expect."""
    return str(PurePosixPath(*parts)) if parts else "."
