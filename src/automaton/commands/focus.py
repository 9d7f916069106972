"""`--focus T` / `--focus --clear`: which task the agent hooks enforce. A human act.

`.automaton/focus` holds one line: the task (`T` or `P/SUB`), or `-` when cleared. It is
committed with a chained, keyed line in `.automaton/focus.log` (like a task's `.state`), so a
focus file or log written outside automaton (an agent widening its own scope) is detected, not
obeyed. A log from before keys existed reads as before; the next `--focus` keys it.
"""

from __future__ import annotations

from pathlib import Path

from automaton.core.errors import BadInput
from automaton.core.names import TaskRef
from automaton.core.outcome import Outcome
from automaton.store import anchor, chainlog
from automaton.store.atomic import tmp_path
from automaton.store.layout import Project
from automaton.store.locks import locked

# collections.abc stays off the hook path, which imports this module (core/record.py says why).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

CLEARED = "-"  # not a task name, so it cannot be confused with one
RESET = "a human resets it with: automaton --focus TASK (or --focus --clear)"
_READ_TRIES = 20


def _token(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        return "<not utf-8>"


def _read(path: Path) -> bytes | None:
    # read_all: a FIFO planted at the focus file is an error, never waited on (the hook reads it).
    from automaton.store.atomic import read_all

    try:
        return read_all(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BadInput(f"{path}: unreadable ({exc.strerror}); {RESET}") from None


def read_focus(project: Project) -> TaskRef | None:
    """The focused task, or None (never set, or cleared).

    Raises BadInput (exit 2, which a hook treats as deny) when the focus file is not a task,
    or disagrees with the last line of an intact focus.log (written outside automaton).
    """
    file, log = project.focus_file, project.focus_log
    for _ in range(_READ_TRIES):  # a lockless read racing set_focus: see store.tasks.load_dir
        before = _read(file)
        chain = chainlog.read_chain(log)
        pending = _token(_read(tmp_path(file)))
        after = _read(file)
        if before == after:
            break
    if not chain.ok:
        raise BadInput(f"{log}: {chain.error}; {RESET}")
    text = _token(after)
    if text is None and not chain.lines:
        return None  # focus never set
    logged = chain.last_state
    # A temp file matching the log is a set_focus cut before its rename: the log is the truth.
    if logged is None or (text != logged and pending != logged):
        raise BadInput(
            f"{file} says {text if text is not None else 'nothing'!r} but {log} says {logged!r}:"
            f" it was changed outside automaton; {RESET}"
        )
    value = str(logged)
    if value == CLEARED:
        return None
    try:
        return TaskRef.parse(value)
    except BadInput:
        raise BadInput(f"{file}: {value[:40]!r} is not a task; {RESET}") from None


def set_focus(project: Project, task: str | None, clear: bool = False) -> Outcome:
    """Set (or clear) the focus; logged to `.automaton/focus.log` with who did it.

    Exit 1 without a human (no terminal, no AUTOMATON_APPROVER); exit 2 for an unknown task,
    when neither/both of TASK and --clear are given, or when `.automaton/focus` (or its log)
    is a directory. data: {"focus": str | None, "by"}.
    """
    if clear == (task is not None):
        raise BadInput("use --focus TASK or --focus --clear")
    # Here, not at import: the human-act check (dataclasses, the process table) is this verb's
    # alone, and the hook, --audit and --sandbox import this module only to read the focus.
    from automaton.commands.human import require_human

    ref = None
    if task is not None:  # a misspelt name is named (did you mean …) before the human check
        ref = TaskRef.parse(task)
        if not project.task_dir(ref).is_dir():
            from automaton.store.tasks import task_hint

            raise BadInput(f"unknown task {task!r}{task_hint(project, ref)} (no folder {project.task_dir(ref)})")
    who = require_human("--focus")
    token = CLEARED if ref is None else str(ref)
    event = "FOCUS_CLEARED" if ref is None else "FOCUS"
    fields: dict[str, object] = {"by": who} if ref is None else {"task": token, "by": who}
    _write(project, token, event, fields)
    if ref is None:
        return Outcome(lines=["focus cleared: hooks enforce only the always-denied paths"],
                       data={"focus": None, "by": who})
    return Outcome(lines=[f"focus: {ref} (agent hooks now enforce its phase scope)"],
                   data={"focus": token, "by": who})


def _write(project: Project, token: str, event: str, fields: dict[str, object],
           unless: Callable[[str | None], bool] | None = None) -> bool:
    """Commit `token` to the focus file with a keyed `event` line, under `focus.lock`.
    `unless(last logged token)` true: nothing is written (False returned). A broken chain is
    moved to `focus.log.broken` and a fresh one started (only a human's `--focus` gets here
    with one: `clear_on_complete` reads the focus first, which refuses a broken chain)."""
    project.dot.mkdir(parents=True, exist_ok=True)
    for path in (project.focus_file, project.focus_log):
        if path.is_dir():  # name it: the commit would otherwise fail on its temp file's rename
            raise BadInput(f"{path}: a directory where automaton keeps its focus file; a human removes it,"
                           " then runs automaton --focus again")
    with locked(project.dot / "focus.lock"):
        chainlog.recover(project.focus_file, project.focus_log, lambda data: _token(data) or None)
        chain = chainlog.read_chain(project.focus_log)
        if unless is not None and unless(chain.last_state if chain.ok else None):
            return False
        if not chain.ok:  # the human's reset starts a fresh chain; the broken one is kept
            if project.focus_log.exists():  # (a deleted log reads as rolled back)
                project.focus_log.replace(project.focus_log.with_name("focus.log.broken"))
            anchor.forget(project.focus_log)  # the new chain is anchored afresh
            chain = chainlog.read_chain(project.focus_log)
        chainlog.commit(project.focus_file, project.focus_log, f"{token}\n".encode(), token, event,
                        fields, chain)
    from automaton.commands.excludes import FOCUS_RUNTIME, exclude

    exclude(project, FOCUS_RUNTIME, "# automaton focus of this checkout")
    return True


def clear_on_complete(project: Project, ref: TaskRef) -> str | None:
    """After task `ref` reached `complete`: clear the focus when it names `ref` (a complete
    task's scope allows no edit, so a focus left on it denies every agent edit). Logged as
    `FOCUS_CLEARED by=automaton completed=<ref>`. Returns the line to show, or None when the
    focus named another task (or none). Not a human act: it narrows nothing a human chose
    beyond what completion already ended (SECURITY.md says what it rests on). A focus that
    cannot be read (tampered) is left alone: `read_focus` names it, and only a human resets it.
    """
    try:
        if read_focus(project) != ref:
            return None
    except BadInput:
        return None
    token = str(ref)
    done = _write(project, CLEARED, "FOCUS_CLEARED", {"by": "automaton", "completed": token},
                  unless=lambda last: last != token)
    if not done:
        return None
    return (f"focus cleared: {ref} is complete (logged in {project.focus_log.name}); a human focuses the next"
            " task with: automaton --focus TASK")


__all__ = ["CLEARED", "clear_on_complete", "read_focus", "set_focus"]
