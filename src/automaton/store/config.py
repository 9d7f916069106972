"""The framework's config.md: `## Framework Version` and `## Loop Defaults` (seed 000 R3, DESIGN §3)."""

from __future__ import annotations

import re
from pathlib import Path

from automaton.core.errors import BadInput
from automaton.store.layout import framework_home

LOOP_DEFAULT_KEYS = {
    "max_iterations": int,
    "max_budget_usd": float,
    "max_tick_usd": float,
    "score_plateau_window": int,
    "plateau_epsilon": float,
    "target_score": float,
    "interval_seconds": int,
    "timeout_s": int,
}
_BUILTIN_DEFAULTS: dict[str, float | int] = {
    "max_iterations": 25, "max_budget_usd": 10.0, "max_tick_usd": 2.0,
    "score_plateau_window": 5, "plateau_epsilon": 0.0, "target_score": 1.0,
    "interval_seconds": 900, "timeout_s": 1800,
}


def config_path() -> Path:
    return framework_home() / "config.md"


def _section(text: str, title: str) -> list[str] | None:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().lower() == f"## {title}".lower():
            body = []
            for nxt in lines[i + 1:]:
                if nxt.startswith("## "):
                    break
                body.append(nxt)
            return body
    return None


def framework_version() -> str | None:
    """The first non-empty line of `## Framework Version`, or None when missing/unreadable."""
    try:
        text = config_path().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    body = _section(text, "Framework Version")
    for line in body or []:
        if line.strip():
            return line.strip()
    return None


_ITEM = re.compile(r"^\s*[-*]\s*`?(\w+)`?\s*[:=]\s*`?([^`\s]+)`?\s*$")


def loop_defaults() -> dict[str, float | int]:
    """Brake and schedule defaults: built-in finite values overridden by config.md.

    Keys: max_iterations (int), max_budget_usd (USD), max_tick_usd (USD),
    score_plateau_window (int), plateau_epsilon, target_score (0..1), interval_seconds (s),
    timeout_s (s). A config.md value that is not a finite positive number raises BadInput.
    """
    values = dict(_BUILTIN_DEFAULTS)
    try:
        text = config_path().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return values
    for line in _section(text, "Loop Defaults") or []:
        match = _ITEM.match(line)
        if not match or match.group(1) not in LOOP_DEFAULT_KEYS:
            continue
        key, raw = match.group(1), match.group(2)
        try:
            value = LOOP_DEFAULT_KEYS[key](raw)
        except ValueError:
            raise BadInput(f"{config_path()}: Loop Defaults {key}={raw!r} is not a number") from None
        if key != "plateau_epsilon" and not value > 0:
            raise BadInput(f"{config_path()}: Loop Defaults {key} must be > 0, got {raw}")
        values[key] = value
    return values
