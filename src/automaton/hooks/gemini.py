"""Gemini CLI `BeforeTool` payloads (google-gemini/gemini-cli docs/hooks/reference.md;
PROTOCOLS.md §3).

Input: `cwd`, `tool_name`, `tool_input` (the model's raw arguments). File writers are
`write_file` and `replace` with `tool_input.file_path` (tools/definitions/base-declarations.ts);
`edit` is accepted as an alias seen in third-party configs. The shell tool is
`run_shell_command` with `command` and an optional directory (`dir_path`, older `directory`)
relative to the project. Deny: exit 2 with the reason on stderr ("System Block … stderr is
used as the rejection reason"; the turn continues). `hookRunner.ts` builds the denial only
from a non-empty stderr, so the reason is never empty. Allow: exit 0 with empty stdout (no
JSON is parsed then).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from automaton.hooks import BadPayload, Call, cwd_of, text_field, tool_of

WRITERS = frozenset({"write_file", "replace", "edit"})
SHELLS = frozenset({"run_shell_command"})
READ_ONLY = frozenset({
    "read_file", "read_many_files", "list_directory", "glob", "search_file_content",
    "grep_search", "google_web_search", "web_fetch", "save_memory", "write_todos",
})
# The settings matcher is a regex over the tool name (reference.md "Matchers and tool names").
MATCHER = "^(" + "|".join(sorted(WRITERS | SHELLS)) + ")$"


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
    if name in READ_ONLY:
        return Call(name, cwd)
    raise BadPayload(f"unknown tool {name!r}: automaton cannot tell what it writes")
