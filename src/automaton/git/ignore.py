"""Which untracked files drift may skip: decided by the base commit's `.gitignore` files and a
fixed list of test artefacts only.

The agent owns the worktree's `.gitignore` files, `$GIT_DIR/info/exclude` and the
repository config (`core.excludesFile`), so none of them is read: a file the agent hid with a
new or changed `.gitignore` is still drift. Semantics follow gitignore(5): a deeper
`.gitignore` wins over a shallower one, the last matching line of a file wins, `!` re-includes,
a trailing `/` matches folders only, and nothing below an ignored folder can be re-included.
`DEFAULT_EXCLUDES` ranks below every `.gitignore` (as `info/exclude` would).
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import TYPE_CHECKING

from automaton.git.errors import DriftError, git_text, require_commit
from automaton.git.tree import GITLINK, SYMLINK, Entry, read_blobs

# Artefacts of running a project's tests and builds: never drift, whatever the base ignores.
DEFAULT_EXCLUDES: tuple[str, ...] = (
    "__pycache__/", "*.pyc", ".pytest_cache/", ".mypy_cache/", ".ruff_cache/", "*.egg-info/",
    "build/", "dist/", "node_modules/", ".tox/", ".coverage", "htmlcov/",
)

if TYPE_CHECKING:
    import pathspec

    # One parsed line: (the pattern, whether it only matches folders).
    _Rule = tuple[pathspec.Pattern, bool]


def _rules(lines: list[str]) -> list[_Rule]:
    # pathspec (with dataclasses and typing_extensions) is imported here, where a .gitignore is
    # read: only when a worktree holds untracked files, never on a tick or gate without them.
    import pathspec  # lazy: --check-gate loads this module (see above)

    rules: list[_Rule] = []
    for line in lines:
        try:
            patterns = pathspec.GitIgnoreSpec.from_lines([line]).patterns
        except (ValueError, TypeError):  # git skips a line it cannot read; so do we
            continue
        if patterns and patterns[0].include is not None:
            rules.append((patterns[0], line.rstrip(" ").rstrip("\r").endswith("/")))
    return rules


def _last_match(rules: list[_Rule], rel: str, is_dir: bool) -> bool | None:
    """The include of the last rule matching `rel` (None: no rule matches)."""
    for pattern, dir_only in reversed(rules):
        if dir_only and not is_dir:
            # pathspec lets `build/` match `build/x`; the folder test covers that case
            continue
        probe = rel + "/" if dir_only else rel
        hit = pattern.match_file(probe)
        if hit is not None:
            return pattern.include
    return None


# The empty tree of SHA-1 and SHA-256 repositories, by the length of their object ids.
_EMPTY_TREE = {40: "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
               64: "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"}


def _gitignore_entries(repo: Path, commit: str) -> list[Entry]:
    """The `.gitignore` entries of the tree of `commit` (a full object id), `size` 0 (unknown).

    Asked as the files `commit` adds to the empty tree under the pathspec `*.gitignore`
    (`git diff-tree --raw`), so git prints a handful of lines rather than every file of a big
    tree (`git ls-tree` cannot filter by name), which a drift check would parse. Raises
    DriftError/GitMissing when git fails or answers oddly."""
    if len(commit) not in _EMPTY_TREE:  # an abbreviated or symbolic name: its full id
        commit = require_commit(repo, commit, "commit")
    empty = _EMPTY_TREE.get(len(commit))
    if empty is None:
        raise DriftError(f"{commit!r} is not an object id git writes")
    fields = git_text(repo, ["diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-abbrev", empty, commit,
                             "--", "*.gitignore"]).split("\0")
    if len(fields) % 2 != 1 or fields[-1]:
        raise DriftError(f"unexpected git diff-tree answer for the .gitignore files of {commit}")
    found: list[Entry] = []
    for meta, path in zip(fields[0:-1:2], fields[1::2], strict=True):
        parts = meta.split()
        if len(parts) != 5 or not meta.startswith(":") or parts[4] != "A" or not path:  # ":0 MODE 0 OID A"
            raise DriftError(f"unexpected git diff-tree entry {meta[:60]!r}")
        if posixpath.basename(path) == ".gitignore":
            found.append(Entry(path, parts[1], parts[3], 0))
    return found


class BaseIgnore:
    """Ignore rules read from the tree of one commit (see the module docstring)."""

    def __init__(self, by_dir: dict[str, list[_Rule]], defaults: list[_Rule]) -> None:
        self._by_dir, self._defaults = by_dir, defaults
        self._dirs: dict[str, bool] = {}

    @classmethod
    def from_commit(cls, repo: Path, commit: str, defaults: tuple[str, ...] = DEFAULT_EXCLUDES) -> BaseIgnore:
        """The `.gitignore` blobs of `commit` (symlinks are skipped, as git does) plus
        `defaults`. Raises DriftError/GitMissing when git cannot list or read them."""
        files = [e for e in _gitignore_entries(repo, commit) if e.mode not in (SYMLINK, GITLINK)]
        by_dir: dict[str, list[_Rule]] = {}
        blobs = dict(read_blobs(repo, [e.oid for e in files], [e.size for e in files]))
        for entry in files:
            text = blobs[entry.oid].decode("utf-8", "surrogateescape")
            by_dir[posixpath.dirname(entry.path)] = _rules(text.splitlines())
        return cls(by_dir, _rules(list(defaults)))

    def _decide(self, rel: str, is_dir: bool) -> bool:
        folder = posixpath.dirname(rel)
        while True:  # the deepest .gitignore with a matching line decides
            rules = self._by_dir.get(folder)
            if rules:
                sub = rel[len(folder) + 1:] if folder else rel
                hit = _last_match(rules, sub, is_dir)
                if hit is not None:
                    return hit
            if not folder:
                break
            folder = posixpath.dirname(folder)
        return bool(_last_match(self._defaults, rel, is_dir))

    def _dir_ignored(self, rel: str) -> bool:
        if rel not in self._dirs:
            parent = posixpath.dirname(rel)
            self._dirs[rel] = (bool(parent) and self._dir_ignored(parent)) or self._decide(rel, True)
        return self._dirs[rel]

    def ignored(self, path: str) -> bool:
        """Whether untracked `path` (posix, from the top; a trailing `/` names a folder, as
        `git ls-files --others` reports a nested repository) is ignored."""
        rel = path.rstrip("/")
        parent = posixpath.dirname(rel)
        if parent and self._dir_ignored(parent):
            return True
        return self._dir_ignored(rel) if path.endswith("/") else self._decide(rel, False)
