"""Git repositories nested in a loop's worktree, found without asking git.

A repository the agent creates inside its worktree (a `.git` folder, or a `.git` file naming a
git folder elsewhere) carries a config of its own, which automaton's `-c` hardening
(`automaton.git.harden`) never reads: a filter driver, fsmonitor or hook defined there runs as
soon as one of the runner's git calls recurses into it (a `git status` that checks whether a
submodule is dirty starts `git status` inside it, with that config). `git add -A` would also
record it as a gitlink (an embedded repository), which every later status treats as a
submodule. So the runner looks for one with a plain directory walk BEFORE its own `git add`,
and halts the tick when it finds one: git never looks inside.
"""

from __future__ import annotations

import os
from pathlib import Path

from automaton.git.errors import DriftError

# Directory entries the walk reads at most (a worktree of a million files is far past any
# project a loop works on; an agent that fills its worktree with more is refused, not waited on).
MAX_ENTRIES = 2_000_000


class NestedRepository(DriftError):
    """A repository nested in a worktree, or a gitlink (submodule entry) changed since the
    base commit: `paths` (posix, relative to the worktree top, sorted) name where."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = sorted(set(paths))
        super().__init__(f"nested repository: {shown(self.paths)}")


def shown(paths: list[str], limit: int = 10) -> str:
    """`a, b, c (+N more)`: at most `limit` paths of a list, for a one-line halt detail."""
    more = f" (+{len(paths) - limit} more)" if len(paths) > limit else ""
    return ", ".join(paths[:limit]) + more


def nested_repositories(top: Path, *, max_entries: int = MAX_ENTRIES) -> list[str]:
    """Sorted posix paths, relative to `top`, of every folder below `top` that holds an entry
    named `.git` (any letter case: case-insensitive volumes; any kind: folder, file, symlink,
    fifo). `top`'s own `.git` is not one. Symlinks are never followed, and nothing below a
    nested `.git`'s folder is read. os.scandir only: no process, no git.

    Raises DriftError when a folder cannot be read (what cannot be read cannot be shown free
    of a repository) or when more than `max_entries` entries were read.
    """
    found: list[str] = []
    stack: list[str] = [""]
    seen = 0
    while stack:
        rel = stack.pop()
        try:
            entries = list(os.scandir(os.path.join(top, rel) if rel else top))
        except FileNotFoundError:
            continue  # removed since its parent was read
        except OSError as exc:
            raise DriftError(f"cannot read {rel or '.'} in {top} to look for nested repositories:"
                             f" {exc.strerror}") from None
        seen += len(entries)
        if seen > max_entries:
            raise DriftError(f"{top} holds more than {max_entries} entries: nested repositories cannot be ruled out")
        if rel and any(e.name.lower() == ".git" for e in entries):
            found.append(rel)
            continue
        for entry in entries:
            if entry.name.lower() == ".git":  # the worktree's own pointer
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except FileNotFoundError:
                is_dir = False  # removed since its folder was read
            except OSError as exc:  # an entry that cannot be told apart may hide a repository
                where = f"{rel}/{entry.name}" if rel else entry.name
                raise DriftError(f"cannot tell what {where} is in {top} while looking for nested"
                                 f" repositories: {exc.strerror}") from None
            if is_dir:
                stack.append(f"{rel}/{entry.name}" if rel else entry.name)
    return sorted(found)
