"""Codex CLI `PreToolUse` payloads (developers.openai.com/codex/hooks; PROTOCOLS.md §2.3).

File edits arrive as `tool_name: "apply_patch"` with the raw patch text in
`tool_input.command` (openai/codex PR #18391 "emit hooks for apply_patch edits"; a `patch`
key seen in third-party bridges is accepted too). There is no `file_path`: the paths are the
patch's `*** Add File: P`, `*** Update File: P`, `*** Delete File: P` headers and the
`*** Move to: P` destination of a rename (both the source and the destination are written).
Shell commands arrive as `tool_name: "Bash"` with `tool_input.command`; a shell command that
carries a patch (`apply_patch <<'EOF' … EOF`, which Codex intercepts) is checked both ways.
Deny: exit 2 with the reason on stderr (JSON `permissionDecision: "ask"` and friends are
unsupported on PreToolUse and fail open, so they are never used).
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from automaton.hooks import BadPayload, Call, cwd_of, tool_of

PATCH_TOOLS = frozenset({"apply_patch", "Edit", "Write"})
SHELLS = frozenset({"Bash", "shell", "exec_command", "local_shell", "shell_command"})
# Codex matchers are regexes; Edit/Write alias apply_patch (hooks docs).
MATCHER = "^(apply_patch|Edit|Write|Bash)$"
_HEADER = re.compile(r"^\*\*\* (?:(?:Add|Update|Delete) File|Move to): *(.+?)\s*$", re.MULTILINE)
BEGIN = "*** Begin Patch"


def patch_paths(text: str) -> list[str]:
    """Every path a Codex patch adds, updates, deletes, or moves to (in order)."""
    return [m.group(1) for m in _HEADER.finditer(text)]


def _command(name: str, given: dict[str, Any], *keys: str) -> str:
    for key in keys:
        value = given.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return shlex.join(value)
    raise BadPayload(f"{name}: tool_input has no {' / '.join(keys)}")


def parse(payload: dict[str, Any]) -> Call:
    """The paths/command one Codex tool call would write or run; BadPayload if unknown."""
    name, given = tool_of(payload)
    cwd = cwd_of(payload)
    if name in PATCH_TOOLS:
        text = _command(name, given, "command", "patch", "input")
        paths = patch_paths(text)
        if not paths:
            raise BadPayload(f"{name}: the patch names no file (no '*** Add/Update/Delete File:' line)")
        return Call(name, cwd, paths=paths)
    if name in SHELLS:
        command = _command(name, given, "command", "cmd")
        paths = patch_paths(command) if BEGIN in command else []
        return Call(name, cwd, paths=paths, command=command)
    raise BadPayload(f"unknown tool {name!r}: automaton cannot tell what it writes")
