"""automaton's pytest plugin: each test's outcome, streamed to a pipe the runner holds.

Loaded by the runner with `-p automaton_verdicts` from a private copy of this file (PYTHONPATH),
never from the project. The runner passes the write end of a pipe as an inherited file
descriptor whose number is in `AUTOMATON_VERDICT_FD`; the plugin takes it at configure time,
removes the variable from `os.environ`, and writes one JSON object per line:

    {"kind": "collected", "id": NODEID}            each item left after deselection
    {"kind": "deselected", "id": NODEID}           each item a `-k`/`-m`/plugin deselected
    {"kind": "result", "id": NODEID, "outcome": O}  once per test, after its teardown;
        O is "passed" | "failed" | "error" | "skipped" | "xfailed" | "xpassed"
    {"kind": "end", "exitstatus": N}               at session finish (pytest's exit status)

The descriptor is closed after the "end" line, before pytest returns: code that runs at
interpreter exit (`atexit`) cannot write to it unless it copied the descriptor earlier. What
this does not cover: the code under test runs in this same process and can forge lines, or
patch this module, before the runner reads them (SECURITY.md, "Verifiers").

Standalone on purpose (it imports only the standard library and pytest): it runs inside the
project's own interpreter, where automaton may not be installed.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

ENV_FD = "AUTOMATON_VERDICT_FD"
_stream: dict[str, Any] = {"fd": None, "outcomes": {}}


def _write(obj: dict[str, Any]) -> None:
    fd = _stream["fd"]
    if fd is None:
        return
    data = (json.dumps(obj, separators=(",", ":")) + "\n").encode("utf-8", "backslashreplace")
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        _stream["fd"] = None  # the runner stopped reading: nothing more can be told


def pytest_configure(config: Any) -> None:
    text = os.environ.pop(ENV_FD, "")
    if _stream["fd"] is None and text.isdigit():
        fd = int(text)
        try:
            os.fstat(fd)
        except OSError:
            return
        _stream["fd"] = fd


def pytest_deselected(items: list[Any]) -> None:
    for item in items:
        _write({"kind": "deselected", "id": item.nodeid})


def pytest_collection_finish(session: Any) -> None:
    for item in session.items:
        _write({"kind": "collected", "id": item.nodeid})


def _outcome(report: Any) -> str | None:
    """One phase's outcome, in the words of pytest's terminal summary."""
    xfail = hasattr(report, "wasxfail")
    if report.skipped:
        return "xfailed" if xfail else "skipped"
    if report.failed:
        return "failed" if report.when == "call" else "error"
    if report.when == "call":
        return "xpassed" if xfail else "passed"
    return None


_RANK = {"error": 5, "failed": 4, "xfailed": 3, "skipped": 2, "xpassed": 1, "passed": 0}


def pytest_runtest_logreport(report: Any) -> None:
    found = _outcome(report)
    outcomes: dict[str, str] = _stream["outcomes"]
    if found is not None:
        old = outcomes.get(report.nodeid)
        if old is None or _RANK[found] > _RANK[old]:
            outcomes[report.nodeid] = found
    if report.when == "teardown":
        _write({"kind": "result", "id": report.nodeid, "outcome": outcomes.pop(report.nodeid, "error")})


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    _write({"kind": "end", "exitstatus": int(exitstatus)})
    fd = _stream["fd"]
    _stream["fd"] = None
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)
