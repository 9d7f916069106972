"""What the loop use cases share."""

from __future__ import annotations

import importlib

from automaton.core.errors import BadInput, Refused
from automaton.store.layout import Project
from automaton.store.project_config import ConfigNotSealed, scope_overrides


def optional(module: str, func: str, *args: object) -> str | None:
    """Call a best-effort hook of another module (schedules); its absence or failure is a warning."""
    try:
        fn = getattr(importlib.import_module(module), func)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return None  # not built yet: nothing was scheduled either
        raise
    try:
        found = fn(*args)
    except Exception as exc:  # best effort by contract: a halt must never fail on the scheduler
        return f"{module}.{func} failed: {type(exc).__name__}: {exc}"
    return str(found) if found else None


def require_sealed_project_config(project: Project, loop: str) -> None:
    """Refused (exit 1) while `.automaton/config.json` is not the sealed one, BadInput (exit 2)
    while it is invalid: approving a loop then would only see it halt again at its next gate
    (`config_changed: .automaton/config.json`), so the human seals the config first."""
    try:
        scope_overrides(project)
    except ConfigNotSealed as exc:
        raise Refused(f"{exc.message} first, then automaton --approve --loop {loop} again") from None


def project_config_problem(project: Project) -> str | None:
    """Why the project's `.automaton/config.json` may not be used now (not sealed, invalid,
    unreadable: one line naming the file and the fix), None when it may (or there is none)."""
    try:
        scope_overrides(project)
    except BadInput as exc:
        return exc.message
    return None
