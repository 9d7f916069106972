"""OpenCode `tool.execute.before` payloads, as automaton's plugin hands them to the hook.

OpenCode has no command hooks: a project plugin (`.opencode/plugin/*.js`, written by
`--install-hooks opencode`, `hooks.install.OPENCODE_PLUGIN`) gets `tool.execute.before`
({tool, sessionID, callID}, {args}) before every tool call, and an error it throws blocks the
call (the model reads it as the tool's error). The plugin runs `automaton --hook opencode`
synchronously with one JSON object on stdin: `hook_event_name` ("tool.execute.before"),
`session_id`, `call_id`, `tool_name` (OpenCode's `tool`), `tool_input` (the model's raw
`args`) and `cwd` (the plugin's `directory`, which relative paths are resolved against).
Recorded from opencode-ai 1.18.33 (tests/e2e/recorded/opencode-1.18.33/tool-execute-before.json).

Tools and argument keys as 1.18.33 offers them to a model (the request's `tools`): `write` and
`edit` (`filePath`), `bash` (`command`, optional `workdir`); read-only: `read`, `glob`, `grep`,
`skill`, `task` (a subagent, whose own calls reach this hook too), `todowrite`, `webfetch`.
Tools OpenCode offers only to some models or configurations: `multiedit` (`filePath`, and a
`filePath` in each of its `edits`: every one is judged, `multiedit_paths`),
`apply_patch` (`patchText`, Codex's patch grammar, read by `hooks.codexpatch`), and the
read-only `list`, `todoread`, `websearch`, `codesearch`, `lsp`, `question`. Every other tool
(MCP tools, a plugin's own tools) is denied unless the sealed `hooks.allow_tools` names it.
Deny: the hook exits 2 with the reason on stderr and the plugin throws it; anything but exit
0 (a crash, a missing executable, a timeout) is a throw too.
"""

from __future__ import annotations

from pathlib import Path

from automaton.hooks import BadPayload, Call, UnknownTool, cwd_of, patch_paths_of, text_field, tool_of

TYPE_CHECKING = False  # typing stays off the hook path (core/record.py says why)
if TYPE_CHECKING:
    from typing import Any

WRITERS = frozenset({"write", "edit"})
MULTI_WRITERS = frozenset({"multiedit"})
PATH_KEYS = ("filePath", "file_path", "path")
PATCH_TOOLS = frozenset({"apply_patch"})
SHELLS = frozenset({"bash"})
READ_ONLY = frozenset({
    "read", "glob", "grep", "list", "skill", "task", "todowrite", "todoread", "webfetch", "websearch",
    "codesearch", "lsp", "question",
})


def parse(payload: dict[str, Any]) -> Call:
    """The paths/command one OpenCode tool call would write or run; BadPayload if unknown."""
    name, given = tool_of(payload)
    cwd = cwd_of(payload)
    if name in WRITERS:
        return Call(name, cwd, paths=[text_field(name, given, "filePath")])
    if name in MULTI_WRITERS:
        return Call(name, cwd, paths=multiedit_paths(name, given))
    if name in PATCH_TOOLS:
        return Call(name, cwd, paths=patch_paths_of(name, text_field(name, given, "patchText")))
    if name in SHELLS:
        sub = given.get("workdir")
        if sub is not None and not isinstance(sub, str):
            raise BadPayload(f"{name}: workdir is not a string")
        where = Path(cwd, sub) if sub else cwd
        return Call(name, where, command=text_field(name, given, "command"))
    if name in READ_ONLY:
        return Call(name, cwd)
    raise UnknownTool(name, cwd)


def multiedit_paths(name: str, given: dict[str, Any]) -> list[str]:
    """Every path a `multiedit` names: its `filePath` and each edit's `filePath` (`file_path`,
    `path`). OpenCode 1.x declares a `filePath` in every edit but applies the top-level one
    (`tool/multiedit.ts`); a version that applies an edit's own, or one with no top-level path,
    writes that file instead, so each is judged. BadPayload for a malformed `edits` or when no
    path is named at all."""
    edits = given.get("edits", [])
    if not isinstance(edits, list):
        raise BadPayload(f"{name}: edits is not a list")
    found = _named(name, given, "tool_input")
    for edit in edits:
        if not isinstance(edit, dict):
            raise BadPayload(f"{name}: an edit is not an object")
        found += _named(name, edit, "an edit")
    if not found:
        raise BadPayload(f"{name}: tool_input has no filePath string, in itself or in any edit")
    return list(dict.fromkeys(found))


def _named(name: str, given: dict[str, Any], what: str) -> list[str]:
    """The `PATH_KEYS` values of `given`; BadPayload for one that is not a non-empty string."""
    found = []
    for key in PATH_KEYS:
        value = given.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or not value:
            raise BadPayload(f"{name}: {what}'s {key} is not a non-empty string")
        found.append(value)
    return found
