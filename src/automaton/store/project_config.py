"""`.automaton/config.json`: per-project overrides of the per-phase edit scopes (DESIGN §4).

Shape: `{"schema_version": 1, "scopes": {"<base phase>": ["gitignore-style pattern", …]}}`.
A phase listed here may write its own artifact plus the project-relative paths matching its
patterns (replacing the built-in rule for `implement` and `doc_review`); `tasks/`, `.automaton/`
and the always-denied paths stay denied. Read on every `--can-edit` and hook call; a file that
is not this shape is an error naming it (exit 2; a hook then denies), never ignored.
"""

from __future__ import annotations

import json

from automaton.core import phases as ph
from automaton.core.errors import BadInput
from automaton.store.layout import Project

SCHEMA_VERSION = 1
SCOPABLE = frozenset(ph.ARTIFACT)  # the base phases that have a scope at all


def scope_overrides(project: Project) -> dict[str, list[str]]:
    """Phase -> patterns from `.automaton/config.json`; {} when the file does not exist."""
    path = project.config_file
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot read ({exc}); fix or remove it") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise BadInput(f"{path}: not valid JSON ({exc}); fix or remove it") from None
    if not isinstance(data, dict):
        raise BadInput(f"{path}: expected a JSON object with 'schema_version' and 'scopes'")
    unknown = sorted(set(data) - {"schema_version", "scopes"})
    if unknown:
        raise BadInput(f"{path}: unknown key(s) {', '.join(unknown)}: only 'schema_version' and 'scopes'")
    version = data.get("schema_version")
    if type(version) is not int or version > SCHEMA_VERSION or version < 1:
        raise BadInput(f"{path}: schema_version must be 1 (this automaton reads up to {SCHEMA_VERSION})")
    scopes = data.get("scopes", {})
    if not isinstance(scopes, dict):
        raise BadInput(f"{path}: 'scopes' must map a phase to a list of patterns")
    out: dict[str, list[str]] = {}
    for phase, patterns in scopes.items():
        if phase not in SCOPABLE:
            raise BadInput(f"{path}: scopes.{phase}: not a phase with a scope ({', '.join(sorted(SCOPABLE))})")
        if not isinstance(patterns, list) or not all(isinstance(p, str) and p.strip() for p in patterns):
            raise BadInput(f"{path}: scopes.{phase} must be a list of non-empty pattern strings")
        out[phase] = list(patterns)
    return out
