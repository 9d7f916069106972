"""Entry point of the `automaton` console script: parse, validate, dispatch, render, exit."""

from __future__ import annotations

import sys

from automaton.cli import fastpath
from automaton.cli import parser as p
from automaton.cli.render import emit, emit_error
from automaton.core.errors import AutomatonError, ExitCode, message_lines, path_error
from automaton.core.outcome import Outcome

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (core/record.py says why)
if TYPE_CHECKING:  # collections.abc too stays off the hook path, which runs before every agent edit
    from collections.abc import Callable, Sequence
    from typing import NoReturn


def crash_log(exc: BaseException) -> str:
    """Write the traceback to a log file (never the screen) and return its path."""
    # Imported here, not at the top: only a crash needs them, and every agent edit starts
    # this module (the hook path: docs/architecture.md#layers-and-what-each-may-import).
    import os
    import tempfile
    import time
    import traceback

    fd, path = tempfile.mkstemp(prefix=f"automaton-crash-{int(time.time())}-", suffix=".log")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("".join(traceback.format_exception(exc)))
    return path


def _hook_argv(args: Sequence[str]) -> bool:
    """Whether `args` asks for `--hook` (exact, `--hook=X`, or an abbreviation argparse takes)."""
    return any(len(a.split("=")[0]) >= 4 and "--hook".startswith(a.split("=")[0]) for a in args)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (README.md#exit-codes).

    `--hook` fails closed: the agents treat every exit but 2 as "allow" (hooks/__init__.py), so
    under `--hook` every path that does not end in the hook adapter's own answer (0 allow, with
    nothing printed, or 2) exits 2 with its line on stderr: a usage error, a crash outside the
    adapter, Ctrl-C, even `--help`."""
    return _main(argv)[0]


def script() -> NoReturn:
    """The `automaton` console script (and `python -m automaton`): `main()` on `sys.argv`, then exit.

    A hook call (`--hook`: before every agent tool call) ends with `os._exit` once stdout and
    stderr are flushed: its answer is complete when `main` returns (every file it writes, such
    as a loop log's checkpoint, is written and renamed before that; a lock it took is released
    with its file descriptor), and the interpreter's teardown (freeing every module and object,
    OpenSSL's exit handlers) only delays the agent (BENCHMARKS.md, figure 1). A flush that
    fails keeps the hook's code: a denial stays exit 2 (the interpreter's own exit turns a
    failed flush into exit 120, which the agents read as "allow"). Every other verb exits through `sys.exit` (its atexit
    handlers, a dashboard's threads and temporary folders are cleaned up as before). Never
    returns."""
    code, hook = _main(None)
    if not hook:
        sys.exit(code)
    import os  # loaded at start-up already: free

    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 - contextlib is an import the hook path need not pay
            stream.flush()
        except BaseException:  # a closed pipe: the code alone answers (a denial is still 2)
            pass
    os._exit(code)


def _main(argv: Sequence[str] | None) -> tuple[int, bool]:
    """`main`: (exit code, whether this was a hook call, which owns its exit code)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and not args[0].startswith("-"):
        from automaton.cli import verbs_sandbox

        args = verbs_sandbox.short_form(args)
    if "--sandbox" in args:
        from automaton.cli import verbs_sandbox

        if verbs_sandbox.wants(args):
            return _sandbox(args), False
    hook = [_hook_argv(args)]
    try:
        code, adapted = _run(args, hook)
    except BaseException as exc:  # e.g. printing the error failed: a hook still blocks
        if not hook[0]:
            raise
        # Not contextlib.suppress: contextlib is an import the hook path need not pay.
        try:  # noqa: SIM105
            print(f"automaton denied this tool call: the hook failed ({type(exc).__name__})", file=sys.stderr)
        except BaseException:  # still deny, even when stderr is gone
            pass
        return int(ExitCode.BAD_INPUT), True
    if hook[0] and not adapted:  # the hook adapter owns its code (0 or 2); every other path denies
        return int(ExitCode.BAD_INPUT), True
    return code, hook[0]


def _sandbox(args: list[str]) -> int:
    """`--sandbox … -- CMD`: its own argv grammar (CMD's flags are CMD's), same error rules."""
    from automaton.cli import verbs_sandbox

    try:
        return verbs_sandbox.run(args)
    except AutomatonError as exc:
        emit_error(exc.message, exc.code, False)
        return int(exc.code)
    except OSError as exc:
        bad = path_error(exc)
        if bad is None:
            emit_error(f"internal error: {type(exc).__name__}: {exc}; traceback in {crash_log(exc)}",
                       ExitCode.INTERNAL, False)
            return int(ExitCode.INTERNAL)
        emit_error(bad.message, bad.code, False)
        return int(bad.code)
    except Exception as exc:  # a bug (or a sandbox that failed to apply): never exec unconfined
        emit_error(f"internal error: {type(exc).__name__}: {exc}; traceback in {crash_log(exc)}",
                   ExitCode.INTERNAL, False)
        return int(ExitCode.INTERNAL)


def _lost_output() -> None:
    """Writing the output failed (a closed pipe: `automaton --loop-list | head -1`; a closed
    terminal): the command's work is done or was never started, and its exit status stands.
    Later writes, the interpreter's flush at exit included, go to the null device."""
    from automaton.core import streams

    streams.silence()


def _flushed() -> None:
    """Flush inside the caller's handler: a block-buffered pipe fails only at exit otherwise."""
    sys.stdout.flush()
    sys.stderr.flush()


def _run(args: list[str], hook: list[bool]) -> tuple[int, bool]:
    """`main` without the hook's exit-code rule: (exit code, whether the adapter returned it).
    Sets `hook[0]` when the verb turns out to be `--hook`."""
    as_json = "--json" in args
    try:
        # The hook path's plain argv skips building the full parser (cli/fastpath.py).
        ns = fastpath.plain(args) or p.build().parse_args(args)
        verb = p.verb_of(ns)
        hook[0] = hook[0] or verb == "hook"
        module, _, func = p.VERBS[verb].partition(":")
        adapter: Callable[..., Outcome] = getattr(_adapter_module(module), func)
        outcome = adapter(ns)
    except p.UsageError as exc:
        hint = "" if "--help" in str(exc) else " (see automaton --help)"
        _say_error(f"usage: {exc}{hint}", ExitCode.BAD_INPUT, as_json)
        return int(ExitCode.BAD_INPUT), False
    except AutomatonError as exc:
        _say_error(exc.message, exc.code, as_json, message_lines(exc))
        return int(exc.code), False
    except BrokenPipeError:  # e.g. a review printed before its question: nothing was approved
        _lost_output()
        return int(ExitCode.REFUSED), False
    except OSError as exc:
        bad = path_error(exc)
        if bad is None:
            _say_error(f"internal error: {type(exc).__name__}: {exc}; traceback in {crash_log(exc)}",
                       ExitCode.INTERNAL, as_json)
            return int(ExitCode.INTERNAL), False
        _say_error(bad.message, bad.code, as_json)
        return int(bad.code), False
    except KeyboardInterrupt:
        _say_error("interrupted", ExitCode.REFUSED, as_json)
        return 130, False
    except SystemExit as exc:  # argparse --help
        if hook[0]:  # a hook never allows by printing help: deny with a line (Gemini needs one)
            emit_error("--hook does not take --help here: the tool call is denied", ExitCode.BAD_INPUT, False)
        return int(exc.code or 0) if isinstance(exc.code, int | None) else int(ExitCode.BAD_INPUT), False
    except Exception as exc:  # a bug: one line plus the log, never a traceback on screen
        _say_error(f"internal error: {type(exc).__name__}: {exc}; traceback in {crash_log(exc)}",
                   ExitCode.INTERNAL, as_json)
        return int(ExitCode.INTERNAL), False
    if not (hook[0] and outcome.code == ExitCode.OK):  # an allowed hook call prints nothing
        try:
            emit(outcome, as_json)
            _flushed()
        except (OSError, ValueError):
            _lost_output()
    return int(outcome.code), True


def _adapter_module(name: str) -> object:
    """The verb adapters' module `name`, imported (not `importlib.import_module`: importlib is
    one more import before every agent tool call)."""
    __import__(name)
    return sys.modules[name]


def _say_error(message: str, code: int, as_json: bool, lines: tuple[str, ...] = ()) -> None:
    """`emit_error`, whose own failure to write (a closed pipe) never replaces the exit code."""
    try:
        emit_error(message, code, as_json, lines=lines)
        _flushed()
    except (OSError, ValueError):
        _lost_output()


if __name__ == "__main__":
    script()
