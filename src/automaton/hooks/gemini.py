"""Gemini CLI `BeforeTool` payloads (google-gemini/gemini-cli docs/hooks/reference.md).

Input: `cwd`, `tool_name`, `tool_input` (the model's raw arguments). File writers are
`write_file` and `replace` with `tool_input.file_path` (tools/definitions/base-declarations.ts);
`edit` is accepted as an alias seen in third-party configs. The shell tool is
`run_shell_command` with `command` and an optional directory (`dir_path`, older `directory`)
relative to the project. `save_memory` (`fact`, optional `scope`) writes nothing of the project
in its global scope, the default, and is judged as a write of the project's memory file
(`memory_paths`) with any other scope. Every other tool is denied unless it is known to write
nothing (`READ_ONLY`: the read, search, web, todo, plan and tracker tools of
packages/core/src/tools/tool-names.ts, and the legacy `search_file_content`): the hook is
installed for every tool (matcher `*`), MCP tools (`mcp_server_tool`) and discovered tools
included. Deny: exit 2 with the reason on stderr ("System Block … stderr is used as the
rejection reason"; the turn continues). `hookRunner.ts` builds the denial only from a non-empty
stderr, so the reason is never empty. Allow: exit 0 with empty stdout (no JSON is parsed then).
"""

from __future__ import annotations

from pathlib import Path

from automaton.hooks import BadPayload, Call, UnknownTool, cwd_of, text_field, tool_of

TYPE_CHECKING = False  # typing stays off the hook path (core/record.py says why)
if TYPE_CHECKING:
    from typing import Any

WRITERS = frozenset({"write_file", "replace", "edit"})
SHELLS = frozenset({"run_shell_command"})
READ_ONLY = frozenset({
    "read_file", "read_many_files", "list_directory", "glob", "search_file_content", "grep_search",
    "google_web_search", "web_fetch", "write_todos", "ask_user", "activate_skill",
    "get_internal_docs", "enter_plan_mode", "exit_plan_mode", "update_topic", "codebase_investigator",
    "cli_help", "tracker_create_task", "tracker_update_task", "tracker_get_task", "tracker_list_tasks",
    "tracker_add_dependency", "tracker_visualize",
})
MEMORY_TOOLS = frozenset({"save_memory"})
# save_memory's arguments in gemini-cli `packages/core/src/tools/memoryTool.ts` (SaveMemoryParams:
# `fact`, `scope`, and the `modified_by_user`/`modified_content` its confirmation dialog adds).
# With no scope or "global" it appends to the user's ~/.gemini/GEMINI.md (`getGlobalMemoryFilePath`);
# with "project" (added in gemini-cli #24161) to a per-project file under ~/.gemini/memory/, but a
# fork has used that scope for the project's own GEMINI.md. Any scope but the global one, and any
# argument not named here (a fork's path or file name), is judged as a write of the project's
# GEMINI.md: denying a private note is safe, letting the project's memory file change is not.
# Later gemini-cli versions have no save_memory: the model edits memory files with write_file and
# replace (docs/tools/memory.md), which are judged as the writes they are.
MEMORY_KEYS = frozenset({"fact", "scope", "modified_by_user", "modified_content"})
MEMORY_FILE = "GEMINI.md"
# Every tool; an unknown one is classified here, fail closed
# (gemini-cli packages/core/src/hooks/hookPlanner.ts: `""` or `*` match all).
MATCHER = "*"


def parse(payload: dict[str, Any]) -> Call:
    """The paths/command one Gemini tool call would write or run; BadPayload if unknown."""
    name, given = tool_of(payload)
    cwd = cwd_of(payload)
    if name in WRITERS:
        return Call(name, cwd, paths=[text_field(name, given, "file_path", "absolute_path", "path")])
    if name in SHELLS:
        sub = given.get("dir_path", given.get("directory"))
        if sub is not None and not isinstance(sub, str):
            raise BadPayload(f"{name}: dir_path is not a string")
        where = Path(cwd, sub) if sub else cwd
        return Call(name, where, command=text_field(name, given, "command"))
    if name in MEMORY_TOOLS:
        return Call(name, cwd, paths=memory_paths(name, payload, given))
    if name in READ_ONLY:
        return Call(name, cwd)
    raise UnknownTool(name, cwd)


def memory_paths(name: str, payload: dict[str, Any], given: dict[str, Any]) -> list[str]:
    """What a `save_memory` writes in the project: nothing in the user-global scope; else the
    project's GEMINI.md, at the workspace root Gemini reports as the payload's `cwd`. BadPayload
    when the payload has no `cwd` (the root cannot be known)."""
    if given.get("scope", "global") == "global" and set(given) <= MEMORY_KEYS:
        return []
    if not isinstance(payload.get("cwd"), str):
        raise BadPayload(f"{name}: a save_memory outside the global scope writes the project's {MEMORY_FILE},"
                         " and the payload has no cwd to say where that is")
    return [MEMORY_FILE]
