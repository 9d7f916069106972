"""Protected paths: files the verifier's verdict depends on, which a tick may not change.

The verifier runs on an export of the tick's commit (`automaton.git.export`) in which every
protected path holds the base commit's version; a tick whose commit changed one halts
`drift_detected` (detail `protected`): `protected_changes` lists them.

A pattern that starts with `+` (`+tests/**`) protects only the paths the base commit has: each
of them keeps the base's version, and a new path under it is the tick's to add (tests may be
added, the base's tests never changed or removed). Every other pattern protects every path it
matches, new ones included (a new path is left out of the export).
"""

from __future__ import annotations

import os
import posixpath
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from automaton.core.scope import Scope
from automaton.git.drift import DELETED, commit_blobs, committed_paths
from automaton.git.errors import DriftError

# Test configuration that changes what a Python verify command runs or how it scores, wherever
# it sits in the tree.
DEFAULT_PROTECTED: tuple[str, ...] = (
    "conftest.py", "**/conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "noxfile.py",
    # Bytecode: Python imports a sourceless `x.pyc` next to a missing `x.py`, and an unchecked-hash
    # `__pycache__` entry in place of its source; a verifier must judge the source alone.
    "*.pyc", "*.pyo", "__pycache__/",
)
BYTECODE: tuple[str, ...] = ("*.pyc", "*.pyo", "__pycache__/")
# What pytest collects when its configuration names no `testpaths` / `python_files`
# (docs.pytest.org, "Conventions for Python test discovery").
DEFAULT_TEST_FILES: tuple[str, ...] = ("test_*.py", "*_test.py")
_SPECIAL = set("*?[]!#\\")
EXISTING_ONLY = "+"  # pattern prefix: protect the paths the base commit has, allow new ones


def protected_spec(protected: Iterable[str]) -> Scope:
    """`protected` (gitignore patterns, `+` prefixes dropped: a path the spec matches is
    protected at least where the base commit has it) as one spec (`core.scope`: pathspec's
    answers, pathspec imported only for patterns that are not plain). Raises DriftError for a
    pattern pathspec cannot read (the caller halts rather than protect less than configured)."""
    patterns = _strings(protected)
    try:
        return Scope([p.removeprefix(EXISTING_ONLY) for p in patterns])
    except (ValueError, TypeError) as exc:
        raise DriftError(f"invalid protected pattern: {exc}") from None


def _strings(protected: Iterable[str]) -> list[str]:
    """`protected` as a list; DriftError for an entry that is not a string (loop.json is
    hand-edited: a number there must halt the loop, not crash the tick)."""
    patterns = list(protected)
    odd = [p for p in patterns if not isinstance(p, str)]
    if odd:
        raise DriftError(f"invalid protected pattern {odd[0]!r}: each pattern must be a string")
    return patterns


def split_protected(protected: Iterable[str]) -> tuple[list[str], list[str]]:
    """(patterns that protect every path they match, `+` patterns without the `+`: they
    protect only paths the base commit has)."""
    every, existing = [], []
    for pattern in _strings(protected):
        if pattern.startswith(EXISTING_ONLY):
            existing.append(pattern[len(EXISTING_ONLY):])
        else:
            every.append(pattern)
    return every, existing


def _escape(rel: str) -> str:
    """`rel` as a gitignore pattern that matches exactly that path."""
    out = "".join("\\" + c if c in _SPECIAL else c for c in rel)
    return out[:-1] + "\\ " if out.endswith(" ") else out


def _relative(arg: str, root: Path | None) -> str | None:
    """The repository-relative posix path `arg` names, or None (an option, `..`, the root)."""
    text = arg.split("::", 1)[0]  # a pytest node id: tests/test_x.py::test_a
    if not text or text.startswith("-") or any(ord(c) < 32 for c in text):
        return None
    if os.path.isabs(text):
        if root is None:
            return None
        try:
            text = os.path.relpath(os.path.realpath(text), os.path.realpath(root))
        except ValueError:  # another drive
            return None
    rel = posixpath.normpath(text.replace(os.sep, "/"))
    if rel in (".", "") or rel == ".." or rel.startswith("../"):
        return None
    return rel


@dataclass(frozen=True)
class PytestSettings:
    """testpaths and python_files of a project's pytest configuration (empty: not set); source:
    the file they came from ("" without one)."""

    testpaths: tuple[str, ...] = ()
    python_files: tuple[str, ...] = ()
    source: str = ""


def _ini(path: Path, section: str) -> PytestSettings | None:
    import configparser  # lazy: --audit loads this module (doctor_checks, git.export), and not configparser

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError, configparser.Error):
        return None
    if not parser.has_section(section):
        return PytestSettings(source=path.name) if path.name == "pytest.ini" else None
    sec = parser[section]
    return PytestSettings(tuple(sec.get("testpaths", "").split()), tuple(sec.get("python_files", "").split()),
                          path.name)


def _toml(path: Path) -> PytestSettings | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    tool = data.get("tool", {})
    pytest_table = tool.get("pytest", {}) if isinstance(tool, dict) else {}
    if not isinstance(pytest_table, dict) or not pytest_table:
        return None
    options = pytest_table.get("ini_options", pytest_table)
    if not isinstance(options, dict):
        return None

    def words(key: str) -> tuple[str, ...]:
        value = options.get(key, ())
        if isinstance(value, str):
            return tuple(value.split())
        return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()

    return PytestSettings(words("testpaths"), words("python_files"), path.name)


def pytest_settings(root: Path) -> PytestSettings:
    """The pytest configuration at `root`, in pytest's order (docs.pytest.org, "Configuration
    file formats"): pytest.ini (even without a [pytest] section), pyproject.toml's
    [tool.pytest.ini_options] (or [tool.pytest]), tox.ini's [pytest], setup.cfg's
    [tool:pytest]; the first one found wins. A file that cannot be read counts as none."""
    for name, read in (("pytest.ini", lambda p: _ini(p, "pytest")), ("pyproject.toml", _toml),
                       ("tox.ini", lambda p: _ini(p, "pytest")), ("setup.cfg", lambda p: _ini(p, "tool:pytest"))):
        path = root / name
        if path.is_file():
            found = read(path)
            if found is not None:
                return found
    return PytestSettings()


def collected_patterns(root: Path | None) -> list[str]:
    """gitignore patterns of what pytest would collect in the project at `root`: each
    `testpaths` folder whole (`tests/**`: the tests and the helpers they import), else `tests/**`
    and the `python_files` globs (default `test_*.py`, `*_test.py`) anywhere, plus
    `conftest.py` anywhere."""
    settings = pytest_settings(root) if root is not None else PytestSettings()
    found: list[str] = []
    for rel in settings.testpaths:
        clean = _relative(rel, root)
        if clean is not None and not any(c in rel for c in "*?["):
            found.append(_escape(clean) + "/**")
    if not found:
        found.append("tests/**")
        found += list(settings.python_files or DEFAULT_TEST_FILES)
    return [*found, "conftest.py", "**/conftest.py"]


# pytest options whose value is the next argument (`-p no:cacheprovider`, `-k expr`): no path.
_VALUED = frozenset({"-p", "-k", "-m", "-c", "-o", "-W", "-n", "-r", "--rootdir", "--deselect", "--ignore",
                     "--ignore-glob", "--confcutdir", "--basetemp", "--junitxml", "--junit-xml", "--maxfail",
                     "--tb", "--import-mode", "--override-ini", "--config-file", "--dist", "--numprocesses"})


def _pytest_positionals(argv: list[str]) -> list[str]:
    """The positional arguments after `pytest` / `-m pytest` in `argv` (pytest reads them as
    paths or node ids, whether they exist yet or not); [] when argv runs no pytest."""
    start = next((i + 1 for i, a in enumerate(argv)
                  if a.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".exe") in ("pytest", "py.test")), None)
    if start is None:
        return []
    out: list[str] = []
    skip = False
    for arg in argv[start:]:
        if skip:
            skip = False
        elif arg.startswith("-"):
            skip = arg in _VALUED
        else:
            out.append(arg)
    return out


def default_protected(verify_argv: list[str], root: Path | None = None) -> list[str]:
    """DEFAULT_PROTECTED plus one pattern per element of `verify_argv` that names a path of
    the repository: `<dir>/**` for a folder, the path itself for a file (`pytest tests/` →
    `tests/**`; `tests/test_x.py::test_a` → `tests/test_x.py`). Options (`-q`, `--x=y`) and
    the repository root itself (`pytest .`: protecting everything would halt every tick) never
    count. When no element names a path (and pytest is given no positional argument, even one
    that does not exist yet), what pytest would collect (`collected_patterns`) is protected
    too. `root`: the repository; with it only paths that exist there count, folders and
    files told apart; without it every other element counts except a first one without a `/`
    (the program, found on PATH), as an anchored pattern that covers a file or a folder.
    """
    found = list(DEFAULT_PROTECTED)
    for i, arg in enumerate(verify_argv):
        rel = _relative(arg, root)
        if rel is None or (i > 0 and verify_argv[i - 1] == "-m"):  # `python -m pytest`: a module, no path
            continue
        if root is None:
            if i == 0 and "/" not in arg:
                continue
            pattern = "/" + _escape(rel)
        else:
            full = root / rel
            if full.is_dir() and not full.is_symlink():
                pattern = _escape(rel) + "/**"
            elif os.path.lexists(full):
                pattern = _escape(rel) if "/" in rel else "/" + _escape(rel)
            else:
                continue
        if pattern not in found:
            found.append(pattern)
    if len(found) == len(DEFAULT_PROTECTED) and not _pytest_positionals(verify_argv):
        # The command names no path: protect what pytest would collect.
        found += [p for p in collected_patterns(root) if p not in found]
    return found


def effective_protected(protected: list[str] | None, verify_argv: list[str], root: Path | None) -> list[str]:
    """What a tick protects: `protected` (loop.json `blast_radius.protected`) plus BYTECODE,
    or, when it is None, `default_protected(verify_argv, root)`."""
    if protected is None:
        return default_protected(verify_argv, root)
    return [*protected, *(p for p in BYTECODE if p not in protected)]


def protected_changes(repo: Path, base_commit: str, commit: str, protected: Iterable[str], *,
                      changed: list[str] | None = None) -> list[str]:
    """Sorted paths matching `protected` (gitignore patterns; a `+` pattern only for paths the
    base commit has) that differ between the trees of `base_commit` and `commit` (added,
    removed, changed, or a mode change). `changed`: those paths as a caller read them already
    (`git diff-tree -r --no-renames` of the same two commits: `drift.Reading.committed`);
    None: asked of git here. Raises GitMissing, or DriftError when either is not a commit, a
    pattern is invalid or git fails."""

    every, existing = split_protected(protected)
    spec, only_base = protected_spec(every), protected_spec(existing)
    if changed is None:
        changed = committed_paths(repo, base_commit, commit)
    found = [p for p in changed if spec.match_file(p)]
    maybe = [p for p in changed if p not in found and only_base.match_file(p)]
    in_base = {p for p, blob in commit_blobs(repo, base_commit, maybe).items() if blob != DELETED}
    return sorted([*found, *in_base])
