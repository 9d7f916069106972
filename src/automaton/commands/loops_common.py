"""What the loop use cases share."""

from __future__ import annotations

import importlib


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
