"""Which version of an agent CLI is installed, and whether automaton was tested with it.

`TESTED` is the range of versions of each CLI that automaton's end-to-end suite ran against
(the real CLI, offline, against a scripted model server: `make e2e`, pins in
`tests/e2e/clis.lock.json`; a test keeps the two in step). Outside it the hooks' payloads, the
argv and the output an adapter reads may have changed: `--doctor` says so, and each tick records
the version it ran (`runs/<n>/tick.json` `agent_version`).

The version is read, never asked for: no agent program is started to learn it. It comes from
the `package.json` of the npm package the executable belongs to (`<pkg>/bin/<exe>` or
`<pkg>/<file>` after following links, the package's `name` must be the CLI's), else from a
`versions/<X.Y.Z>` folder in the executable's real path (Claude Code's native installer keeps
`~/.local/share/claude/versions/<version>`). Unknown (None) otherwise: a wrapper script, a fake.
The files it reads are the user's install, outside any sandbox's writable set; the version is
a report, never a brake.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import stat
from dataclasses import dataclass

from automaton.core import jsontext
from automaton.harnesses import get

MAX_PACKAGE_JSON = 256 * 1024  # bytes read of a package.json
_SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


@dataclass(frozen=True)
class Tested:
    """The npm `package` of a CLI and the lowest and highest `X.Y.Z` versions tested."""

    package: str
    lowest: str
    highest: str


TESTED: dict[str, Tested] = {
    "claude": Tested("@anthropic-ai/claude-code", "2.1.332", "2.1.332"),
    "codex": Tested("@openai/codex", "0.171.0", "0.171.0"),
    "gemini": Tested("@google/gemini-cli", "0.61.0", "0.61.0"),
    "opencode": Tested("opencode-ai", "1.18.33", "1.18.33"),
}


def _key(version: str) -> tuple[int, int, int] | None:
    found = _SEMVER.match(version.strip())
    return (int(found.group(1)), int(found.group(2)), int(found.group(3))) if found else None


def _package_version(path: str, package: str) -> str | None:
    # O_NONBLOCK and a regular file only: a FIFO (or device) named package.json, planted where
    # the runner looks after a tick, must never block it.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            doc = jsontext.loads(fh.read(MAX_PACKAGE_JSON)) if stat.S_ISREG(os.fstat(fh.fileno()).st_mode) else None
    except (OSError, ValueError):
        return None
    version = doc.get("version") if isinstance(doc, dict) and doc.get("name") == package else None
    return version if isinstance(version, str) and _key(version) else None


def installed(harness: str, path_env: str | None = None) -> str | None:
    """The version (`X.Y.Z`) of `harness`'s CLI found on `path_env` (default: this process's
    PATH), or None when it is not found, not one of `TESTED`, or its version cannot be read."""
    tested = TESTED.get(harness)
    if tested is None:  # every harness of TESTED is one of harnesses.REGISTRY (a test keeps them so)
        return None
    exe = getattr(get(harness), "EXECUTABLE", None)
    found = shutil.which(exe, path=path_env if path_env is not None else os.environ.get("PATH", os.defpath)) \
        if isinstance(exe, str) else None
    return None if found is None else version_of(os.path.realpath(found), tested.package)


def version_of(real_exe: str, package: str) -> str | None:
    """The version of npm `package` that file `real_exe` belongs to (see the module docstring)."""
    folder = os.path.dirname(real_exe)
    for _ in range(3):  # <pkg>/x, <pkg>/bin/x, <pkg>/bin/sub/x
        version = _package_version(os.path.join(folder, "package.json"), package)
        if version is not None:
            return version
        folder = os.path.dirname(folder)
    parts = real_exe.split(os.sep)
    for name, value in itertools.pairwise(parts):
        if name == "versions" and _key(value):
            return value
    return None


def in_range(harness: str, version: str) -> bool | None:
    """Whether `version` lies in `TESTED[harness]` (inclusive); None when either is unknown."""
    tested, key = TESTED.get(harness), _key(version)
    if tested is None or key is None:
        return None
    low, high = _key(tested.lowest), _key(tested.highest)
    return low is not None and high is not None and low <= key <= high


def range_text(harness: str) -> str:
    """"2.1.332" or "2.1.300 to 2.1.332"; "" for a harness with no tested range."""
    tested = TESTED.get(harness)
    if tested is None:
        return ""
    return tested.highest if tested.lowest == tested.highest else f"{tested.lowest} to {tested.highest}"
