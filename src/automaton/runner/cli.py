"""`automaton-loop`: the loop runner's console script (docs/architecture.md#the-life-of-a-tick).

    automaton-loop --mode tick|run|dry-run --loop NAME [--project DIR] [--max-ticks N]
                   [--settings FILE] [--state-remote REMOTE] [--json]
    automaton-loop --demo
    automaton-loop --version

Exit codes as everywhere (README.md#exit-codes): 0 a tick ran or was skipped busy / run stopped
normally; 1 a gate refused, or the machine refused a write (a full disk, a read-only file
system: one line naming the path and the fix; a tick halts `human_intervention: io_error`,
runner/iohalt.py); 2 bad input or a corrupt file (one line on stderr); 3 a bug (one
line plus the path of a crash log with the traceback).
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path

from automaton import __version__
from automaton.core.argv import once_action
from automaton.core.errors import AutomatonError, BadInput, ExitCode, message_lines, one_line, path_error
from automaton.core.names import LoopName
from automaton.core.outcome import Outcome
from automaton.store.layout import Project

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (core/record.py says why)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterator, Sequence

    from automaton.runner.progress import Progress


class _Usage(Exception):
    pass


class Stopped(BaseException):  # like KeyboardInterrupt: no `except Exception` may take it
    """Raised by the SIGTERM/SIGHUP handler (`_stopping`) once the role's processes were
    killed: the runner unwinds (locks released, what `run_streaming` started killed) and exits
    128 + `signum`, as a shell reports a process ended by that signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_stop(signum: int, _frame: object) -> None:
    """SIGTERM/SIGHUP (systemd, a pod stop, a CI cancel, a closed terminal): SIGKILL the
    running role's process group first, then unwind. Later such signals are ignored so that
    the clean-up itself runs to its end (SIGKILL still ends it; the role is dead already)."""
    import signal

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    proc = sys.modules.get("automaton.proc")  # not imported yet: no role is running
    if proc is not None:
        proc.stop_runs()
    raise Stopped(signum)


@contextmanager
def _stopping() -> Iterator[None]:
    """Within the block, `_on_stop` handles SIGTERM and SIGHUP (their default ends the runner at
    once and leaves its role running; SIGINT raises KeyboardInterrupt, which `run_streaming`
    handles); the handlers before it are put back after it (tests run the runner in-process).
    Only the main thread may install handlers: elsewhere nothing changes."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kept = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    try:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _on_stop)
        yield
    finally:
        for sig, handler in kept.items():
            signal.signal(sig, handler)


def build() -> argparse.ArgumentParser:
    import argparse  # here: a scheduled tick's argv is parsed by `plain_tick` (argparse builds slowly)

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> None:  # type: ignore[override]
            from automaton.core.names import flag_hint

            raise _Usage(message + flag_hint(message, self._option_string_actions))

    p = _Parser(prog="automaton-loop", description="Run ticks of an automaton loop.", allow_abbrev=False)
    once = once_action()  # a value flag given twice is a usage error, never the last one silently
    p.add_argument("--mode", choices=("tick", "run", "dry-run"), action=once,
                   help="one tick, ticks until a gate says no, or a dry run")
    p.add_argument("--loop", metavar="NAME", action=once, help="the loop (a folder under .automaton/loops/)")
    p.add_argument("--project", metavar="DIR", action=once,
                   help="project root (default: found from the current directory)")
    p.add_argument("--max-ticks", type=int, metavar="N", action=once, help="with --mode run: stop after N ticks")
    p.add_argument("--settings", metavar="FILE", action=once,
                   help="agent settings with the automaton hooks (Claude --settings)")
    p.add_argument("--state-remote", metavar="REMOTE", action=once,
                   help="with --mode tick: the git remote (name or URL) holding the loop's state ref")
    p.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")
    p.add_argument("--quiet", action="store_true", help="no progress display on stderr")
    p.add_argument("--demo", action="store_true", help="run the offline demo in a temporary project")
    p.add_argument("--version", action="store_true", help="print the framework version")
    return p


# The argv of a scheduled tick (run-tick.sh) and of most hand-run ones: exact spellings only.
_TICK_VALUES = {"--mode": "mode", "--loop": "loop", "--project": "project", "--settings": "settings",
                "--state-remote": "state_remote"}
_TICK_SWITCHES = {"--json": "json", "--quiet": "quiet"}


def plain_tick(args: Sequence[str]) -> argparse.Namespace | None:
    """The Namespace `build().parse_args(args)` returns for a plain `--mode tick` argv, without
    importing argparse; None for anything else (the caller uses the parser then).

    Plain: only the exact flags of _TICK_VALUES and _TICK_SWITCHES, each at most once, a value
    flag followed by a non-empty value that does not start with `-`, `--mode tick` and
    `--loop` among them. When twenty ticks start at once nineteen give up, and argparse's
    import and the parser's construction were a fifth of each one's cost (bench/bench_race.py).
    """
    from types import SimpleNamespace

    found: dict[str, object] = {"mode": None, "loop": None, "project": None, "max_ticks": None,
                                "settings": None, "state_remote": None, "json": False, "quiet": False, "demo": False,
                                "version": False}
    seen: set[str] = set()
    i = 0
    while i < len(args):
        flag = args[i]
        if flag in seen:
            return None
        seen.add(flag)
        if flag in _TICK_SWITCHES:
            found[_TICK_SWITCHES[flag]] = True
            i += 1
            continue
        if flag not in _TICK_VALUES or i + 1 >= len(args) or not args[i + 1] or args[i + 1].startswith("-"):
            return None
        found[_TICK_VALUES[flag]] = args[i + 1]
        i += 2
    if found["mode"] != "tick" or found["loop"] is None:
        return None
    return SimpleNamespace(**found)  # type: ignore[return-value]  # duck-typed as argparse's Namespace


def crash_log(exc: BaseException) -> str:
    """The traceback goes to a log file, never the screen; returns its path."""
    import tempfile  # here: only a crash needs them, and a tick that gives up should not pay
    import time
    import traceback

    fd, path = tempfile.mkstemp(prefix=f"automaton-loop-crash-{int(time.time())}-", suffix=".log")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("".join(traceback.format_exception(exc)))
    return path


def _error(message: str, code: int, as_json: bool, lines: tuple[str, ...] = ()) -> int:
    try:
        for line in lines or (message,):  # several invalid fields: one line each (core.errors.InvalidFields)
            print(f"automaton-loop: {one_line(line)}", file=sys.stderr)
        if as_json:
            print(json.dumps({"ok": False, "error": message, "exit_code": code}))
        _flush()
    except (OSError, ValueError):
        _gone()
    return code


def _flush() -> None:
    sys.stdout.flush()
    sys.stderr.flush()


def _gone() -> None:
    """A write failed after the work was done: a closed pipe (`| head -1`) is the reader's
    choice and changes neither what the tick did nor its exit status (core/streams.py)."""
    from automaton.core import streams

    streams.silence()


def _emit(out: Outcome, as_json: bool) -> None:
    try:
        _print_outcome(out, as_json)
        _flush()
    except (OSError, ValueError):
        _gone()


def _print_lines(lines: list[str]) -> None:
    """A result's lines on stdout as they come (`--mode run`: each tick's when it ends)."""
    for line in lines:
        print(one_line(line), flush=True)


def _print_outcome(out: Outcome, as_json: bool) -> None:
    for warning in out.warnings:
        print(f"automaton-loop: warning: {one_line(warning)}", file=sys.stderr)
    if as_json:
        print(json.dumps(out.data if out.data is not None else {"ok": out.ok, "lines": out.lines}))
        return
    for line in out.lines:
        print(one_line(line))


def dispatch(ns: argparse.Namespace) -> Outcome:
    """Validate the flag combination, then run the mode."""
    if ns.version:  # as `automaton --version`: wins over every other flag, exit 0 always
        return Outcome(lines=[f"automaton-loop {__version__}"], data={"version": __version__})
    if ns.demo:
        if ns.mode or ns.loop:
            raise _Usage("--demo takes no --mode or --loop")
        from automaton.runner.demo import run_demo

        return run_demo()
    _check_flags(ns)
    settings = _settings(ns.settings)
    project = Project.at(ns.project)
    from automaton.runner.progress import Progress

    progress = Progress(enabled=not ns.quiet)
    if ns.state_remote is not None:  # the loop folder may not exist before its state is fetched
        return _remote_tick(project, ns.loop, ns.state_remote, settings, progress, lock_held=False)
    if ns.mode == "tick":
        return _tick_mode(project, ns.loop, settings, progress)
    return _other_mode(project, ns, settings, progress)


def _check_flags(ns: argparse.Namespace) -> None:
    """_Usage (exit 2) for a flag combination that does not go together."""
    if not ns.mode or not ns.loop:
        raise _Usage("pass --mode tick|run|dry-run and --loop NAME (or --demo)")
    if ns.max_ticks is not None and (ns.mode != "run" or ns.max_ticks < 1):
        raise _Usage("--max-ticks N (N >= 1) goes with --mode run")
    if ns.state_remote is not None and ns.mode != "tick":
        raise _Usage("--state-remote REMOTE goes with --mode tick")


def _settings(given: str | None) -> Path | None:
    """`--settings FILE` resolved; BadInput (exit 2) when it is not a file."""
    if given is None:
        return None
    settings = Path(given).expanduser().resolve()
    if not settings.is_file():
        raise BadInput(f"--settings {given!r} is not a file: pass the agent settings JSON file")
    return settings


def _tick_mode(project: Project, name: str, settings: Path | None, progress: Progress) -> Outcome:
    """`--mode tick`: the tick lock first (a tick that gives up never imports the runner)."""
    from automaton.runner import skip

    with skip.tick_lock(project, name, progress) as busy:
        if busy is not None:
            return busy
        from automaton.runner import tick
        from automaton.store.loops import Loop

        sealed = Loop.resolve(project, name).read_config().state_remote
        if sealed is not None:  # loop.json names its state remote: every tick goes through it
            return _remote_tick(project, name, None, settings, progress, lock_held=True)
        _not_remote(project, name)
        return tick.tick(project, name, tick.TickOptions(settings_path=settings, progress=progress), lock_held=True)


def _other_mode(project: Project, ns: argparse.Namespace, settings: Path | None, progress: Progress) -> Outcome:
    """`--mode run` (never for a loop whose state lives in a remote) and `--mode dry-run`."""
    from automaton.proc import pinned_programs
    from automaton.runner import modes, tick

    if ns.mode == "run":
        _not_remote(project, ns.loop)
        from automaton.store.loops import Loop

        if Loop.resolve(project, ns.loop).read_config().state_remote is not None:
            raise BadInput(f"loop {ns.loop}: its state lives in a state remote (loop.json state_remote): --mode run"
                           " would tick here without a claim or a push; run --mode tick, once per scheduler fire")
    opts = tick.TickOptions(settings_path=settings, progress=progress)
    # `tick.tick` pins the programs of each tick itself (after the tick lock: a tick that gives
    # up starts nothing); the dry run's gates run git as well.
    with pinned_programs(project.root):
        if ns.mode == "run":
            return modes.run_loop(project, ns.loop, ns.max_ticks, opts, None if ns.json else _print_lines)
        return modes.dry_run(project, ns.loop, opts)


def _not_remote(project: Project, name: str) -> None:
    """BadInput (exit 2) for a plain tick of a loop whose state this checkout saw on a state
    remote: its record would be thrown away by the next remote tick's fetch (and the tick run
    twice), so the loop ticks through its remote only."""
    from automaton.commands import remote_state

    seen = remote_state.seen_commit(project.loop_dir(LoopName.of(name)))
    if seen is not None:
        raise BadInput(f"loop {name} lives in a state remote (this checkout saw its state commit {seen[:12]}):"
                       f" tick it with --state-remote REMOTE, or have a human seal \"state_remote\" in loop.json;"
                       " nothing was run")


def _remote_tick(project: Project, name: str, remote: str | None, settings: Path | None, progress: Progress,
                 *, lock_held: bool) -> Outcome:
    """A tick whose state lives in a git remote (`commands.remote_state.remote_tick`); a task
    claim of another live loop in that remote stops it first (`commands.remote_claims`)."""
    from automaton.commands import remote_account, remote_claims, remote_state
    from automaton.runner import account, leftovers, tick
    from automaton.store.loops import Loop

    def run(claim: Callable[[int], Outcome | None]) -> Outcome:
        # `remote_tick` checked the flag against loop.json's `state_remote` before this runs; the
        # loop folder is the remote's state now, before the tick's claim and reservation.
        where = remote or Loop.resolve(project, name).read_config().state_remote or ""
        taken = remote_claims.tick_refusal(project, name, where)
        if taken is not None:
            line = f"tick not run: {tick.TASK_CLAIMED}: {taken}"
            progress.result(f"loop {name}: {line}")
            return Outcome(ExitCode.REFUSED, [line], {"ran": False, "reason": tick.TASK_CLAIMED, "detail": taken})
        book = remote_account.Remote(project.root, where)  # the account's ledger lives there too
        return tick.tick(project, name, tick.TickOptions(settings_path=settings, progress=progress, claim=claim,
                                                         account_book=book), lock_held=True)

    def reap(folder: Path) -> None:  # holding the tick lock: no live tick of this loop runs on this machine
        killed = leftovers.kill_leftovers(folder)
        if killed:
            progress.note(f"loop {name}: killed {len(killed)} process(es) left running by a dead tick"
                          f" (pids {','.join(map(str, killed))})")

    return remote_state.remote_tick(project, name, remote, lambda loop: account.ttl_s(loop.read_config()), run,
                                    lock_held=lock_held, reap=reap)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the runner; returns the exit code (README.md#exit-codes). Under a scheduler (stdout
    and stderr one file: `schedule.log`) each line is time-stamped and written once
    (`runner.schedlog`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    from automaton.runner.schedlog import stamped

    with stamped(enabled="--json" not in args):
        return _main(args)


def _main(args: list[str]) -> int:
    as_json = "--json" in args
    try:
        with _stopping():
            out = dispatch(plain_tick(args) or build().parse_args(args))
    except _Usage as exc:
        hint = "" if "--help" in str(exc) else " (see automaton-loop --help)"
        return _error(f"usage: {exc}{hint}", int(ExitCode.BAD_INPUT), as_json)
    except AutomatonError as exc:
        return _error(exc.message, int(exc.code), as_json, message_lines(exc))
    except OSError as exc:
        bad = path_error(exc)
        if bad is None:
            return _error(f"internal error: {type(exc).__name__}: {exc}; traceback in {crash_log(exc)}",
                          int(ExitCode.INTERNAL), as_json)
        return _error(bad.message, int(bad.code), as_json)
    except KeyboardInterrupt:
        return _error("interrupted", 130, as_json)
    except Stopped as exc:  # what a killed tick leaves (an open TICK_START) is the next tick's to settle
        return _error(f"stopped by signal {exc.signum}: the running role's processes were killed; nothing more was"
                      " run", 128 + exc.signum, as_json)
    except SystemExit as exc:  # --help
        return int(exc.code or 0) if isinstance(exc.code, int | None) else int(ExitCode.BAD_INPUT)
    except Exception as exc:  # a bug: one line plus the log
        return _error(f"internal error: {type(exc).__name__}: {exc}; traceback in {crash_log(exc)}",
                      int(ExitCode.INTERNAL), as_json)
    _emit(out, as_json)
    return int(out.code)


if __name__ == "__main__":
    raise SystemExit(main())
