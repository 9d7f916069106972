"""Entry point of the `automaton` console script: parse, validate, dispatch, render, exit."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence

from automaton.cli import fastpath
from automaton.cli import parser as p
from automaton.cli.render import emit, emit_error
from automaton.core.errors import AutomatonError, ExitCode, path_error
from automaton.core.outcome import Outcome


def crash_log(exc: BaseException) -> str:
    """Write the traceback to a log file (never the screen) and return its path."""
    # Imported here, not at the top: only a crash needs them, and every agent edit starts
    # this module (the hook path, DESIGN §10).
    import os
    import tempfile
    import time
    import traceback

    fd, path = tempfile.mkstemp(prefix=f"automaton-crash-{int(time.time())}-", suffix=".log")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("".join(traceback.format_exception(exc)))
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (DESIGN §2 table)."""
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    try:
        # The hook path's plain argv skips building the full parser (cli/fastpath.py).
        ns = fastpath.plain(args) or p.build().parse_args(args)
        verb = p.verb_of(ns)
        module, _, func = p.VERBS[verb].partition(":")
        adapter: Callable[..., Outcome] = getattr(importlib.import_module(module), func)
        outcome = adapter(ns)
    except p.UsageError as exc:
        hint = "" if "--help" in str(exc) else " (see automaton --help)"
        emit_error(f"usage: {exc}{hint}", ExitCode.BAD_INPUT, as_json)
        return int(ExitCode.BAD_INPUT)
    except AutomatonError as exc:
        emit_error(exc.message, exc.code, as_json)
        return int(exc.code)
    except OSError as exc:
        bad = path_error(exc)
        if bad is None:
            emit_error(f"internal error: {type(exc).__name__}: {exc}; traceback in {crash_log(exc)}",
                       ExitCode.INTERNAL, as_json)
            return int(ExitCode.INTERNAL)
        emit_error(bad.message, bad.code, as_json)
        return int(bad.code)
    except KeyboardInterrupt:
        emit_error("interrupted", ExitCode.REFUSED, as_json)
        return 130
    except SystemExit as exc:  # argparse --help
        return int(exc.code or 0) if isinstance(exc.code, int | None) else int(ExitCode.BAD_INPUT)
    except Exception as exc:  # a bug: one line plus the log, never a traceback on screen
        emit_error(f"internal error: {type(exc).__name__}: {exc}; traceback in {crash_log(exc)}",
                   ExitCode.INTERNAL, as_json)
        return int(ExitCode.INTERNAL)
    emit(outcome, as_json)
    return int(outcome.code)


if __name__ == "__main__":
    raise SystemExit(main())
