"""Codex CLI `PreToolUse` payloads (developers.openai.com/codex/hooks).

File edits arrive as `tool_name: "apply_patch"` with the raw patch text in
`tool_input.command` (openai/codex PR #18391 "emit hooks for apply_patch edits"; a `patch`
key seen in third-party bridges is accepted too). There is no `file_path`: the paths are read
from the patch the way Codex's own parser reads it (`hooks.codexpatch`: indented headers, a
heredoc wrapper, `*** Move to:` after `*** Update File:`), both the source and the destination
of a rename being written. Shell commands arrive as `tool_name: "Bash"` (and the older
`shell`/`local_shell`/`exec_command` names) with `tool_input.command` as a string or an argv
list; a shell `apply_patch` (`apply_patch <<'EOF' … EOF`, `cd DIR && apply_patch …`, which Codex
intercepts and applies itself) is read by the shell analysis with its working directory.

Every other tool is denied unless it is known to write nothing (`READ_ONLY`): the hook is
installed for every tool (matcher `*`), MCP tools (`mcp__server__tool`) included, and an unknown
tool may write. Deny: exit 2 with the reason on stderr (JSON `permissionDecision: "ask"` and
friends are unsupported on PreToolUse and fail open, so they are never used).
"""

from __future__ import annotations

import shlex

from automaton.hooks import BadPayload, Call, UnknownTool, cwd_of, patch_paths_of, tool_of

TYPE_CHECKING = False  # typing stays off the hook path (core/record.py says why)
if TYPE_CHECKING:
    from typing import Any

PATCH_TOOLS = frozenset({"apply_patch", "Edit", "Write"})
SHELLS = frozenset({"Bash", "shell", "exec_command", "local_shell", "shell_command"})
# Codex's own tools that only read or plan (codex-rs core tool specs).
READ_ONLY = frozenset({"update_plan", "view_image", "web_search", "read_file", "list_dir", "grep_files",
                       "search_tool_bm25", "request_user_input", "list_mcp_resources",
                       "list_mcp_resource_templates", "read_mcp_resource"})
# Every tool; an unknown one is classified here, fail closed
# (openai/codex codex-rs/hooks/src/events/common.rs: `""` or `*` match all).
MATCHER = "*"


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
        return Call(name, cwd, paths=patch_paths_of(name, _command(name, given, "command", "patch", "input")))
    if name in SHELLS:
        given_cwd = given.get("workdir")
        if given_cwd is not None and not isinstance(given_cwd, str):
            raise BadPayload(f"{name}: workdir is not a string")
        where = cwd.joinpath(given_cwd) if given_cwd else cwd
        command = _command(name, given, "command", "cmd")
        from automaton.hooks.codexpatch import BadPatch, loose_paths

        # The shell analysis reads `apply_patch` with its directory; every header-like line is
        # also judged against the call's directory, in case the patch is carried another way.
        try:
            return Call(name, where, paths=loose_paths(command), command=command)
        except BadPatch as exc:
            raise BadPayload(f"{name}: {exc}") from None
    if name in READ_ONLY:
        return Call(name, cwd)
    raise UnknownTool(name, cwd)
