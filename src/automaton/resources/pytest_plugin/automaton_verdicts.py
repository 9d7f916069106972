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
    {"kind": "tampered", "what": TEXT}             at most once, before "end": pytest changed (below)
    {"kind": "end", "exitstatus": N}               at session finish (pytest's exit status)

A heuristic, not a guarantee: at session start (after every plugin's configure) the plugin
notes the code of every registered hook implementation and of the pytest functions that turn a
test into its report, its JUnit entry and the exit status (`_WATCHED`); after each test and at
session finish it looks again. A hook implementation from a plugin registered since that is
not a `conftest.py` (code under test that registers a hookwrapper), or a function or its
`__code__` replaced (code under test that monkeypatches `_pytest`), is named in a "tampered"
record, and the runner does not score the run. Code in the same process can undo its patch
before the next look, patch this check, or write the stream itself: a naive generic patch is
caught, a careful one is not (SECURITY.md, "Verifiers").

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
import importlib
import json
import os
import secrets
import types
from collections.abc import Callable
from typing import Any

import pytest

ENV_FD = "AUTOMATON_VERDICT_FD"
# pytest's functions that make a test's report, its JUnit entry and the exit status (a name
# this pytest version lacks is skipped).
_WATCHED = {
    "_pytest.runner": ("call_and_report", "call_runtest_hook", "runtestprotocol", "pytest_runtest_makereport",
                       "check_interactive_exception", "CallInfo.from_call"),
    "_pytest.reports": ("TestReport.from_item_and_call", "TestReport.__init__", "BaseReport.passed",
                        "BaseReport.failed", "BaseReport.skipped"),
    "_pytest.python": ("pytest_pyfunc_call", "Function.runtest"),
    "_pytest.main": ("pytest_runtestloop", "wrap_session"),
    "_pytest.skipping": ("pytest_runtest_makereport", "pytest_runtest_setup", "pytest_runtest_call"),
    "_pytest.junitxml": ("LogXML.pytest_runtest_logreport", "LogXML.pytest_sessionfinish",
                         "_NodeReporter.append_failure"),
    "_pytest.terminal": ("TerminalReporter.pytest_runtest_logreport",),
    "_pytest.outcomes": ("fail", "skip", "xfail", "exit"),
    "_pytest.assertion.rewrite": ("AssertionRewritingHook.exec_module", "rewrite_asserts",
                                  "AssertionRewriter.visit_Assert"),
}
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
        import fcntl  # lazy: POSIX only (ImportError below), in a plugin loaded into the project's pytest
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        top = min(soft if soft > 0 else 1024, 1 << 16)
        moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, top // 2 + secrets.randbelow(max(top // 2 - 64, 1)))
    except (ImportError, OSError, ValueError):
        return fd
    os.close(fd)
    return moved


def _resolved(module: str, dotted: str) -> object:
    """The object `module.dotted` names, as stored (a class attribute from the class's own
    `__dict__`: the property or classmethod itself); None when missing."""
    try:
        obj: object = importlib.import_module(module)
    except ImportError:
        return None
    for part in dotted.split("."):
        obj = vars(obj).get(part) if isinstance(obj, type) else getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _code(obj: object) -> object:
    """The code object behind a function, method, classmethod or property (None without one)."""
    inner = getattr(obj, "__func__", None) or getattr(obj, "fget", None) or obj
    return getattr(inner, "__code__", None)


def _impls(config: Any) -> list[tuple[str, Any, Any]]:
    """(hook name, plugin, function) of every registered hook implementation."""
    out = []
    for name, caller in vars(config.pluginmanager.hook).items():
        if hasattr(caller, "get_hookimpls"):
            out += [(name, impl.plugin, impl.function) for impl in caller.get_hookimpls()]
    return out


# Plugins pytest itself registers during collection: `--lf`'s file skipper (collection only;
# the frozen test ids see what it leaves out).
_PYTEST_LATE = (("_pytest.cacheprovider", "LFPluginCollSkipfiles"),)


def _registered_late_by_pytest(plugin: object) -> bool:
    """Whether `plugin` is a `conftest.py` module (pytest loads a subfolder's during collection)
    or one of pytest's own `_PYTEST_LATE` (by class name: forgeable, like all of this look)."""
    if isinstance(plugin, types.ModuleType):
        return os.path.basename(getattr(plugin, "__file__", "") or "") == "conftest.py"
    return (type(plugin).__module__, type(plugin).__qualname__) in _PYTEST_LATE


def _name(plugin: object) -> str:
    return str(getattr(plugin, "__name__", type(plugin).__name__))


class _Watch:
    """What `_WATCHED` and the hook implementations were at session start; `changed` names the
    first difference since (see the module docstring: a heuristic)."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self.funcs = {(m, d): (o, _code(o)) for m, names in _WATCHED.items() for d in names
                      if (o := _resolved(m, d)) is not None}
        impls = _impls(config)
        self.plugins = {id(plugin) for _, plugin, _ in impls} | {id(p) for p in config.pluginmanager.get_plugins()}
        self.codes = {id(func): (func, getattr(func, "__code__", None)) for _, _, func in impls}

    def changed(self) -> str | None:
        for (module, dotted), (obj, code) in self.funcs.items():
            now = _resolved(module, dotted)
            if now is not obj or _code(now) is not code:
                return f"{module}.{dotted} replaced"
        for hook, plugin, func in _impls(self.config):
            if id(plugin) not in self.plugins and not _registered_late_by_pytest(plugin):
                return f"{hook} implemented by a plugin registered during the run ({_name(plugin)})"
            old = self.codes.get(id(func))
            if old is not None and (old[0] is not func or getattr(func, "__code__", None) is not old[1]):
                return f"the code of {hook} of {_name(plugin)} replaced"
        return None


def _hooks() -> dict[str, Callable[..., None]]:
    """The plugin's hooks, sharing the descriptor and per-test outcomes in their closure."""
    fd: list[int] = []  # the descriptor, once taken; emptied when closed or broken
    outcomes: dict[str, str] = {}
    watch: list[_Watch] = []  # emptied once a change is reported

    def look() -> None:
        try:
            found = watch[0].changed() if watch else None
        except Exception as exc:  # the check itself broken: fail closed, never a pass
            found = f"the check of pytest's code failed: {exc!r}"[:300]
        if found is not None:
            watch.clear()
            write({"kind": "tampered", "what": found})

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

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(session: Any) -> None:
        if fd and not watch:
            try:
                watch.append(_Watch(session.config))
            except Exception as exc:  # fail closed, as in look()
                write({"kind": "tampered", "what": f"the check of pytest's code failed: {exc!r}"[:300]})

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
            look()

    def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
        look()
        write({"kind": "end", "exitstatus": int(exitstatus)})
        if fd:
            with contextlib.suppress(OSError):
                os.close(fd.pop())

    return {f.__name__: f for f in (pytest_configure, pytest_sessionstart, pytest_deselected,
                                    pytest_collection_finish, pytest_runtest_logreport, pytest_sessionfinish)}


_h = _hooks()
pytest_configure = _h["pytest_configure"]
pytest_sessionstart = _h["pytest_sessionstart"]
pytest_deselected = _h["pytest_deselected"]
pytest_collection_finish = _h["pytest_collection_finish"]
pytest_runtest_logreport = _h["pytest_runtest_logreport"]
pytest_sessionfinish = _h["pytest_sessionfinish"]
del _h
