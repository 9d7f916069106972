"""automaton's pytest plugin: each test's outcome, streamed to a pipe the runner holds.

Loaded by the runner with `-p automaton_verdicts` from a private copy of this file (PYTHONPATH),
never from the project. The runner passes the write end of a pipe as an inherited file
descriptor whose number is in `AUTOMATON_VERDICT_FD`; the plugin takes it at configure time,
removes the variable from `os.environ`, moves the descriptor to a random high number
(close-on-exec: no process the tests start inherits it) and closes the number it came in on.
It writes one JSON object per line:

    {"kind": "collected", "id": NODEID}            each item left after deselection
    {"kind": "deselected", "id": NODEID}           each item a `-k`/`-m`/plugin deselected
    {"kind": "result", "id": NODEID, "outcome": O}  once per test, after its teardown;
        O is "passed" | "failed" | "error" | "skipped" | "xfailed" | "xpassed"
    {"kind": "end", "exitstatus": N}               at session finish (pytest's exit status)

The descriptor lives only in the closure of the hook functions (no module attribute names it)
and is closed after the "end" line, before pytest returns: code that runs at interpreter exit
(`atexit`) cannot write to it unless it found the descriptor earlier. Hidden, not sealed: the
code under test runs in this same process and can still find it (`/proc/self/fd`, the
closures, the garbage collector), forge lines, or patch pytest itself before the runner reads
them; the runner therefore scores a stream only where pytest's own JUnit file and exit status
agree with it (SECURITY.md, "Verifiers").

Standalone on purpose (it imports only the standard library and pytest): it runs inside the
project's own interpreter, where automaton may not be installed.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Callable
from typing import Any

ENV_FD = "AUTOMATON_VERDICT_FD"
# Outcome rank across a test's phases: the worst phase names the test.
_RANK = {"error": 5, "failed": 4, "xfailed": 3, "skipped": 2, "xpassed": 1, "passed": 0}


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


def _hidden(fd: int) -> int:
    """`fd` moved to a random free number in the upper half of the descriptor limit,
    close-on-exec, the original closed; `fd` itself where it cannot be moved."""
    try:
        import fcntl
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        top = min(soft if soft > 0 else 1024, 1 << 16)
        moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, top // 2 + secrets.randbelow(max(top // 2 - 64, 1)))
    except (ImportError, OSError, ValueError):
        return fd
    os.close(fd)
    return moved


def _hooks() -> dict[str, Callable[..., None]]:
    """The plugin's hooks, sharing the descriptor and per-test outcomes in their closure."""
    fd: list[int] = []  # the descriptor, once taken; emptied when closed or broken
    outcomes: dict[str, str] = {}

    def write(obj: dict[str, Any]) -> None:
        if not fd:
            return
        data = (json.dumps(obj, separators=(",", ":")) + "\n").encode("utf-8", "backslashreplace")
        try:
            while data:
                data = data[os.write(fd[0], data):]
        except OSError:
            fd.clear()  # the runner stopped reading: nothing more can be told

    def pytest_configure(config: Any) -> None:
        text = os.environ.pop(ENV_FD, "")
        if fd or not text.isdigit():
            return
        try:
            os.fstat(int(text))
        except OSError:
            return
        fd.append(_hidden(int(text)))

    def pytest_deselected(items: list[Any]) -> None:
        for item in items:
            write({"kind": "deselected", "id": item.nodeid})

    def pytest_collection_finish(session: Any) -> None:
        for item in session.items:
            write({"kind": "collected", "id": item.nodeid})

    def pytest_runtest_logreport(report: Any) -> None:
        found = _outcome(report)
        if found is not None:
            old = outcomes.get(report.nodeid)
            if old is None or _RANK[found] > _RANK[old]:
                outcomes[report.nodeid] = found
        if report.when == "teardown":
            write({"kind": "result", "id": report.nodeid, "outcome": outcomes.pop(report.nodeid, "error")})

    def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
        write({"kind": "end", "exitstatus": int(exitstatus)})
        if fd:
            with contextlib.suppress(OSError):
                os.close(fd.pop())

    return {f.__name__: f for f in (pytest_configure, pytest_deselected, pytest_collection_finish,
                                    pytest_runtest_logreport, pytest_sessionfinish)}


_h = _hooks()
pytest_configure = _h["pytest_configure"]
pytest_deselected = _h["pytest_deselected"]
pytest_collection_finish = _h["pytest_collection_finish"]
pytest_runtest_logreport = _h["pytest_runtest_logreport"]
pytest_sessionfinish = _h["pytest_sessionfinish"]
del _h
