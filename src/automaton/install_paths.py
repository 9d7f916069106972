"""Where the running automaton is installed: paths no agent may write, and no grant may cover.

Every brake that runs as a program runs automaton's own files: the agent hooks run the
`automaton` console script, the schedule runs an interpreter and `loop-runner.py`, the
sandboxed session and the tick run the package itself. An agent that rewrites any of them
(`<project>/.venv/bin/automaton`, a module under site-packages) owns the next hook call and
the next tick, so these paths are never writable by an agent, wherever the project is:

- the interpreter's prefixes (`sys.prefix`, `sys.exec_prefix`, `sys.base_prefix`,
  `sys.base_exec_prefix`: the virtual environment and the Python it was made from);
- the package folder, the interpreter and the `automaton` console script beside it, each as
  the path the hooks and the schedule name and as its real path, and the virtual environment
  (the nearest folder holding `pyvenv.cfg`, PEP 405) holding each;
- `$AUTOMATON_HOME` when set: the schedule runs its `scripts/loop-runner.py`.

On the hook path: imports only `os` and `sys` (tests/test_imports.py).
"""

from __future__ import annotations

import os
import sys

VENV_MARKER = "pyvenv.cfg"  # PEP 405: the file that makes a folder a virtual environment
SCRIPT = "automaton.exe" if os.name == "nt" else "automaton"
HOME_ENV = "AUTOMATON_HOME"
FIX = "install automaton with pipx or outside the project (pipx install automaton-framework)"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable


def venv_of(path: str) -> str | None:
    """The nearest folder at or above absolute `path` that holds `pyvenv.cfg`, or None."""
    here = path
    while True:
        if os.path.isfile(os.path.join(here, VENV_MARKER)):
            return here
        up = os.path.dirname(here)
        if up == here:
            return None
        here = up


def running_files() -> tuple[str, ...]:
    """The absolute paths this process runs automaton from: its package folder, its
    interpreter, the console script beside it, `$AUTOMATON_HOME` (set and absolute)."""
    exe = os.path.abspath(sys.executable) if sys.executable else ""
    files = [os.path.dirname(os.path.abspath(__file__))]
    if exe:
        files += [exe, os.path.join(os.path.dirname(exe), SCRIPT)]
    home = os.environ.get(HOME_ENV, "")
    if os.path.isabs(home):  # it can only add paths that are never writable
        files.append(home)
    return tuple(files)


def running_prefixes() -> tuple[str, ...]:
    """This interpreter's prefixes: the virtual environment's and its base Python's."""
    return tuple(p for p in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix) if p)


def own_roots(prefixes: Iterable[str] | None = None, files: Iterable[str] | None = None) -> tuple[str, ...]:
    """The real absolute paths (folders or files) of the running automaton's install, in
    order, without duplicates and without `/` (a Python installed at the root of the file
    system cannot be told apart from everything else by path).

    `prefixes` (default `running_prefixes()`), `files` (default `running_files()`): given by
    tests and by callers that judge another install (a hook command, a schedule record).
    Each file counts as itself, as its real path, and by the virtual environment holding either."""
    found: list[str] = []
    for prefix in running_prefixes() if prefixes is None else prefixes:
        found.append(os.path.realpath(prefix))
    for file in running_files() if files is None else files:
        given = os.path.abspath(file)
        for path in (given, os.path.realpath(given)):
            found.append(os.path.realpath(path))
            venv = venv_of(path)
            if venv is not None:
                found.append(os.path.realpath(venv))
    return tuple(p for p in dict.fromkeys(found) if os.path.dirname(p) != p)


def _beneath(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def clash(path: str, roots: Iterable[str]) -> str | None:
    """The root of `roots` that real absolute `path` lies in (or is), or that lies inside
    `path` (a grant on `path` would cover it, removing `path` removes it), or None."""
    for root in roots:
        if _beneath(path, root) or _beneath(root, path):
            return root
    return None


def inside(project_root: str, roots: Iterable[str]) -> str | None:
    """The first of `roots` lying in real `project_root` (or holding it), or None: automaton
    is installed inside the project, where an agent at work there could rewrite it."""
    return clash(os.path.realpath(project_root), roots)


def refusal(project_root: str, verb: str, roots: Iterable[str] | None = None) -> str | None:
    """One line refusing `verb` (e.g. "--install-hooks") when automaton's install (`roots`,
    default `own_roots()`) lies in the project at `project_root` or holds it, else None: a hook
    or a schedule would run files that an agent at work in the project can rewrite."""
    hit = inside(project_root, own_roots() if roots is None else roots)
    if hit is None:
        return None
    return (f"{verb}: automaton runs from {hit}, inside the project {os.path.realpath(project_root)}, where an agent"
            f" could rewrite the brake it installs; {FIX}, then run {verb} again")
