"""Writes into the agent's own temp folder: allowed by the hooks, outside every project rule.

"The agent's own temp folder" is either of:

- `$TMPDIR` of the session the hook runs in (`TEMP`/`TMP` on Windows). An agent run by
  automaton (`automaton --sandbox -- <agent>`, a tick) gets a private one (mode 0700,
  `sandbox.launch` sets all three), the one place the kernel sandbox lets it write outside its
  scope (`sandbox.plan` requires the temp dir among the writable paths). The hook reads the
  variable from its own environment, which Claude Code, Codex and Gemini CLI hand down from the
  session: an agent's shell line cannot change it (`TMPDIR=… cmd` sets it for `cmd` only, and a
  `$TMPDIR` in a write target is denied by the shell reading as a path it cannot resolve).
- `/tmp` (POSIX, `SYSTEM_TEMP`): the system temp dir outside the sandbox; inside it, a private
  tmpfs the kernel keeps read-only beyond the temp dir bound back, so allowing it widens nothing.

Not a temp folder: `/`; a `$TMPDIR` that is the home folder or holds it, or holds the record
key's folder or automaton's own install; a temp folder that holds the project (its siblings
may be the user's other checkouts: such a user sets `$TMPDIR` to a folder of its own).

Beneath a temp folder, a path is judged by the usual rules, not as a temp write, when (every
symlink resolved first, `resolve.real`: a link from /tmp into the project, or `/tmp/../home/…`,
is judged where it leads) it lies in the project, in the home folder (unless the temp folder
itself is one inside home) or the key's folder, or in automaton's install or holds it; and the
path of `git worktree add` never is one (`shell.Analysis.linked`: a linked worktree's commits
land in the project's own history). In the system temp dir, automaton's own entries
(`automaton-*`: a tick's temp dir with the verifier's export in it, crash logs, the schedule
lock) are denied, and so is a glob that could name one (`/tmp/*`).

Early feedback only, like every hook decision: a link made after the check is followed by the
write; the kernel sandbox is what holds an agent's writes (SECURITY.md).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

SYSTEM_TEMP = () if os.name == "nt" else ("/tmp",)
OWN_PREFIX = "automaton-"  # every temp entry automaton makes (tempfile prefixes) starts so
_GLOB = frozenset("*?[")

TYPE_CHECKING = False  # typing stays off the hook path (core/record.py says why)
if TYPE_CHECKING:
    from automaton.commands.can_edit import Memo

def _beneath(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def roots(home: str, key_folder: str) -> list[tuple[str, bool]]:
    """The real temp roots of this session: (root, whether it is the session's own `$TMPDIR`),
    without duplicates; `/`, and a `$TMPDIR` that holds `home` (or is it) or `key_folder`, are
    left out (`judge` leaves out one that clashes with automaton's install)."""
    names = ("TEMP", "TMP") if os.name == "nt" else ("TMPDIR",)
    given = [(os.environ.get(name) or "", True) for name in names]
    given += [(folder, False) for folder in SYSTEM_TEMP]
    out: list[tuple[str, bool]] = []
    for raw, session in given:
        if not raw or not os.path.isabs(raw):
            continue
        root = os.path.realpath(raw)
        if root == os.path.dirname(root):
            continue
        # A $TMPDIR that is the home folder or holds it (or the key's folder) names no temp
        # folder; /tmp is the system's own whatever lies in it (a home folder in /tmp, as in
        # containers and test runs, is kept out path by path in `judge`).
        if session and (_beneath(home, root) or _beneath(key_folder, root)):
            continue
        if root not in [r for r, _ in out]:
            out.append((root, session))
    return out


def _home() -> tuple[str, str]:
    """(home, the record key's folder), real paths."""
    home = os.path.realpath(os.path.expanduser("~"))
    return home, os.path.join(home, ".config", "automaton")


def judge(path: Path, project_root: Path, memo: Memo | None = None) -> tuple[bool, str] | None:
    """The decision on real `path` as a write into the agent's temp folder: (allowed, one-line
    reason), or None when it is not one (the caller applies the usual rules). `project_root`:
    the project's real root. `memo`: the roots and automaton's install are found once per call."""
    from automaton.commands import can_edit

    memo = memo or can_edit.Memo()
    text = str(path)
    home, key_folder = memo.get(("temp home",), _home)
    hits = [(r, s) for r, s in memo.get(("temp roots",), lambda: roots(home, key_folder))
            if text != r and _beneath(text, r)]
    if not hits:
        return None  # most paths: automaton's install is not looked up at all
    from automaton import install_paths

    own = memo.get(("own install",), install_paths.own_roots)
    hits = [(r, s) for r, s in hits if not (s and any(_beneath(o, r) or _beneath(r, o) for o in own))]
    if not hits:
        return None
    root, session = hits[0]
    proj = str(project_root)
    # A project kept in a temp folder makes that folder the user's work (its siblings may be
    # other checkouts): no temp folder for this project.
    if _beneath(proj, root) or _beneath(text, proj):
        return None
    if (_beneath(text, home) and not (root != home and _beneath(root, home))) or _beneath(text, key_folder):
        return None
    if any(_beneath(text, o) or _beneath(o, text) for o in own):
        return None
    first = text[len(root.rstrip(os.sep)) + 1:].split(os.sep, 1)[0]
    # automaton's own entries in the system temp dir stay its own even when that is also the
    # session's $TMPDIR.
    if (not session or root in _system_roots()) and _own_entry(first):
        return False, (f"{text}: {root}/{OWN_PREFIX}* is automaton's own (a tick's temp dir, the verifier's export,"
                       " crash logs), never an agent's: write elsewhere in the temp folder")
    if _hard_linked(path):  # `ln proj/f /tmp/f` then a write to /tmp/f changes the project's file
        return None
    return True, f"{text} is in the agent's temp folder {root}"


def _system_roots() -> list[str]:
    return [os.path.realpath(folder) for folder in SYSTEM_TEMP]


def _hard_linked(path: Path) -> bool:
    """Whether `path` is a file with another name somewhere (a hard link realpath cannot see)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_nlink > 1


def _own_entry(name: str) -> bool:
    """Whether a first component below the system temp dir names, or as a glob may name, one
    of automaton's own entries."""
    if name.startswith(OWN_PREFIX):
        return True
    if _GLOB.isdisjoint(name):
        return False
    from fnmatch import fnmatchcase  # only for a glob: off the hook's usual path

    return fnmatchcase(OWN_PREFIX + "x", name) or fnmatchcase(OWN_PREFIX, name)
