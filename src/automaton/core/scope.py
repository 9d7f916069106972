"""gitignore-style patterns (a loop's `file_scope`, its protected paths, a phase's scope
overrides) matched with `pathspec`'s answers, without importing `pathspec` where the patterns
are plain.

Importing `pathspec` (1.x: its regex backends, `typing`, `dataclasses` with `inspect` and
`ast`) costs more CPU than starting the interpreter, and the hook before every edit of an
agent in a loop worktree, every `--check-gate` with a changed file and every tick matched
paths against patterns such as `src/**`, `tests/**` or `conftest.py`. Those patterns have one
meaning that needs no wildcard engine:

- `**` matches every path;
- `D/**` (D one or more plain segments, optionally `/`-prefixed) matches every path under D;
- a plain name `N` (no `/`), also written `**/N`, matches a path with a segment N, and what is
  under it (a folder N excludes its contents);
- a plain path `A/B` or `/N` (anchored at the root) matches that path and what is under it.

Plain: no wildcard or escape character (`*?[]\\`) outside those forms, no whitespace or
control character, no leading `!` or `#`, no empty, `.` or `..` segment, no trailing `/`.
Without a negation, a path matches when any pattern does. Every other pattern set, and every
path that is not a plain relative one (empty, leading or trailing `/`, `./`, `//`, a `\\`),
is decided by `pathspec.GitIgnoreSpec` itself. tests/core/test_scope.py compares both answers
over every plain form and many paths, and keeps this module off `pathspec` for plain ones.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (core/record.py says why)
if TYPE_CHECKING:
    from collections.abc import Iterable

    import pathspec

_WILD = frozenset("*?[]\\")
_EVERY, _UNDER, _NAME, _PATH = range(4)  # kinds of plain pattern: see the module docstring


def _segments_plain(text: str) -> bool:
    """`text` is one or more `/`-separated plain segments."""
    return all(seg not in ("", ".", "..") and seg.isprintable() and not any(c in _WILD or c.isspace() for c in seg)
               for seg in text.split("/"))


def plain_form(pattern: str) -> tuple[int, str] | None:
    """(kind, literal) of a plain pattern (the module docstring's forms), None for any other."""
    if pattern == "**":
        return _EVERY, ""
    if pattern.startswith(("!", "#")):
        return None
    if pattern.startswith("**/"):
        name = pattern[3:]
        return (_NAME, name) if "/" not in name and _segments_plain(name) else None
    anchored = pattern.startswith("/")
    body = pattern[1:] if anchored else pattern
    if body.endswith("/**"):
        folder = body[:-3]
        return (_UNDER, folder) if _segments_plain(folder) else None
    if not _segments_plain(body):
        return None
    return (_PATH, body) if anchored or "/" in body else (_NAME, body)


def _path_plain(path: str) -> bool:
    return _segments_plain(path) if path and "\\" not in path else False


class Scope:
    """Patterns compiled once; `match_file(path)` is `pathspec.GitIgnoreSpec.from_lines(
    patterns).match_file(path)`. Raises what `GitIgnoreSpec.from_lines` raises (ValueError,
    TypeError) for a pattern set that is not plain and that pathspec cannot read."""

    def __init__(self, patterns: Iterable[str]) -> None:
        if isinstance(patterns, str | bytes):  # a string is an iterable of one-character patterns
            raise TypeError(f"patterns must be a list of strings, not one {type(patterns).__name__}")
        self.patterns = list(patterns)
        if not all(isinstance(p, str) for p in self.patterns):
            raise TypeError(f"patterns must be strings, got {[type(p).__name__ for p in self.patterns]}")
        forms = [plain_form(p) for p in self.patterns]
        self.plain: list[tuple[int, str]] | None = None
        if all(f is not None for f in forms):
            self.plain = [f for f in forms if f is not None]
        self._spec: pathspec.GitIgnoreSpec | None = None if self.plain is not None else self._build()

    def _build(self) -> pathspec.GitIgnoreSpec:
        import pathspec  # here: only a pattern set or a path the plain forms do not cover needs it

        return pathspec.GitIgnoreSpec.from_lines(self.patterns)

    @property
    def spec(self) -> pathspec.GitIgnoreSpec:
        """The `pathspec` spec of these patterns (built on first use for a plain set)."""
        if self._spec is None:
            self._spec = self._build()
        return self._spec

    def match_file(self, path: str) -> bool:
        """Whether `path` (posix, relative to the patterns' root) matches, as pathspec answers."""
        if self.plain is None or not _path_plain(path):
            return bool(self.spec.match_file(path))
        parts: list[str] | None = None
        for kind, text in self.plain:
            if kind == _EVERY:
                return True
            if kind == _NAME:
                parts = path.split("/") if parts is None else parts
                if text in parts:
                    return True
            elif kind == _UNDER:
                if path.startswith(text + "/"):
                    return True
            elif path == text or path.startswith(text + "/"):
                return True
        return False
