"""`--focus T` / `--focus --clear`: which task the agent hooks enforce (DESIGN §7). A human act."""

from __future__ import annotations

import contextlib

from automaton.commands.human import require_human
from automaton.core.errors import BadInput
from automaton.core.names import TaskRef
from automaton.core.outcome import Outcome
from automaton.store import chainlog, tasks
from automaton.store.atomic import atomic_write
from automaton.store.layout import Project
from automaton.store.locks import locked


def read_focus(project: Project) -> TaskRef | None:
    """The focused task, or None. A corrupt focus file raises BadInput naming it."""
    try:
        text = project.focus_file.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(
            f"{project.focus_file}: unreadable ({exc}); a human resets it with automaton --focus --clear"
        ) from None
    try:
        return TaskRef.parse(text)
    except BadInput:
        raise BadInput(
            f"{project.focus_file}: {text[:40]!r} is not a task; reset it with automaton --focus --clear"
        ) from None


def set_focus(project: Project, task: str | None, clear: bool = False) -> Outcome:
    """Set (or clear) the focus; logged to `.automaton/focus.log`. Exit 1 without a human."""
    if clear == (task is not None):
        raise BadInput("use --focus TASK or --focus --clear")
    who = require_human("--focus")
    project.dot.mkdir(parents=True, exist_ok=True)
    with locked(project.dot / "focus.lock"):
        if clear:
            with contextlib.suppress(FileNotFoundError):
                project.focus_file.unlink()
            chainlog.append_event(project.focus_log, "FOCUS_CLEARED", {"by": who}, "none")
            return Outcome(lines=["focus cleared: hooks enforce only the always-denied paths"])
        assert task is not None
        ref = TaskRef.parse(task)
        tasks.load(project, ref)  # must exist
        atomic_write(project.focus_file, f"{ref}\n".encode())
        chainlog.append_event(project.focus_log, "FOCUS", {"task": str(ref), "by": who}, str(ref))
    return Outcome(lines=[f"focus: {ref} (agent hooks now enforce its phase scope)"],
                   data={"focus": str(ref)})
