"""The framework's config.md: its `## Loop Defaults` (the version is `automaton.__version__`)."""

from __future__ import annotations

import math
import os
import re
import time
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


# $AUTOMATON_HOME -> config.md's path. `framework_home()` depends on that variable alone, and
# building the path cost as much as the `stat` that `loop_defaults` does on every loop it reads.
_PATHS: dict[str | None, Path] = {}


def config_path() -> Path:
    home = os.environ.get("AUTOMATON_HOME")
    path = _PATHS.get(home)
    if path is None:
        path = _PATHS[home] = framework_home() / "config.md"
    return path


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


_ITEM = re.compile(r"^\s*[-*]\s*`?(\w+)`?\s*[:=]\s*`?([^`\s]+)`?\s*$")
_ITEM_KEY = re.compile(r"^\s*[-*]\s*`?(\w+)`?\s*[:=]")


def _config_text() -> str | None:
    """config.md as text; None when there is none. BadInput when it is there but unusable."""
    path = config_path()
    from automaton.store.atomic import read_all  # a FIFO is an error, never waited on (the hook reads this)

    try:
        data = read_all(path)
    except FileNotFoundError:
        return None
    except OSError as exc:  # a directory, a FIFO, no permission, a symlink loop ...
        raise BadInput(f"{path}: cannot read ({exc.strerror}); restore the framework's config.md") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not UTF-8 text; restore the framework's config.md") from None
    if not text.strip():
        raise BadInput(f"{path}: empty; restore the framework's config.md (brake defaults are read from it)")
    if not text.endswith("\n"):
        raise BadInput(f"{path}: the last line is partial (no newline): the file was cut; restore it")
    return text


# config.md path -> (its stat key, the defaults parsed from it): read once per process while
# the file stays the same (`--loop-list` and `--audit` read the defaults for every loop).
_DEFAULTS: dict[Path, tuple[tuple[int, int, int, int], dict[str, float | int]]] = {}
_SETTLED_NS = 2_000_000_000


def loop_defaults() -> dict[str, float | int]:
    """Brake and schedule defaults: built-in finite values overridden by config.md.

    Keys: max_iterations (int), max_budget_usd (USD), max_tick_usd (USD),
    score_plateau_window (int), plateau_epsilon, target_score (0..1), interval_seconds (s),
    timeout_s (s). No config.md at all: the built-in values (they mirror the packaged file).
    Fails closed (BadInput, exit 2, naming the file) when config.md is there but unreadable,
    not UTF-8, empty, cut (no final newline) or without a `## Loop Defaults` section, or when
    an item there names an unknown key, repeats one, or is not a finite number (> 0, except
    plateau_epsilon >= 0): a default that silently fell back would loosen the user's brakes.
    Parsed once per process per version of the file (its device, inode, size and mtime; a file
    changed in the last two seconds is read every time, since a rewrite within one clock tick
    keeps its mtime).
    """
    path = config_path()
    try:
        st = os.stat(path)
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        key = None  # absent or unreadable: `_config_text` decides, nothing is cached
    known = _DEFAULTS.get(path)
    if key is not None and known is not None and known[0] == key:
        return dict(known[1])
    values = _parse_defaults()
    if key is not None and time.time_ns() - key[3] > _SETTLED_NS:
        _DEFAULTS[path] = (key, dict(values))
    return values


def _parse_defaults() -> dict[str, float | int]:
    values = dict(_BUILTIN_DEFAULTS)
    text = _config_text()
    if text is None:
        return values
    section = _section(text, "Loop Defaults")
    if section is None:
        raise BadInput(f"{config_path()}: no '## Loop Defaults' section; restore the framework's config.md")
    seen: set[str] = set()
    for line in section:
        named = _ITEM_KEY.match(line)
        if not named:
            continue  # prose
        key = named.group(1)
        if key not in LOOP_DEFAULT_KEYS:
            raise BadInput(f"{config_path()}: Loop Defaults has unknown key {key!r}"
                           f" (known: {', '.join(LOOP_DEFAULT_KEYS)})")
        if key in seen:
            raise BadInput(f"{config_path()}: Loop Defaults sets {key} twice")
        seen.add(key)
        match = _ITEM.match(line)
        if not match:
            raise BadInput(f"{config_path()}: Loop Defaults line {line.strip()!r} is not '- {key}: NUMBER'")
        raw = match.group(2)
        try:
            value = LOOP_DEFAULT_KEYS[key](raw)
        except ValueError:
            raise BadInput(f"{config_path()}: Loop Defaults {key}={raw!r} is not a number") from None
        if not math.isfinite(value) or (value < 0 if key == "plateau_epsilon" else not value > 0):
            raise BadInput(f"{config_path()}: Loop Defaults {key} must be a finite number"
                           f" {'>= 0' if key == 'plateau_epsilon' else '> 0'}, got {raw}")
        values[key] = value
    return values
