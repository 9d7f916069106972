"""Claude Code `PreToolUse` payloads (PROTOCOLS.md §1.3, §1.4; code.claude.com/docs/en/hooks).

Input: `cwd`, `tool_name`, `tool_input`. `Write`/`Edit` carry `tool_input.file_path` (absolute
in current builds; a relative one is resolved against `cwd`); `NotebookEdit` carries
`notebook_path`; `MultiEdit` (dropped from the docs' tool list in late 2025) carried
`file_path` + `edits[]` and is still handled. `Bash` (and `PowerShell` on Windows) carry
`command`. A hook blocks with exit 2 and the reason on stderr ("stderr becomes the reason
Claude sees"); an allow prints nothing, because an explicit JSON "allow" would skip the user's
own permission prompts.
"""

from __future__ import annotations

from typing import Any

from automaton.hooks import BadPayload, Call, cwd_of, text_field, tool_of

WRITERS: dict[str, str] = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
SHELLS = frozenset({"Bash", "PowerShell"})
# Tools that write no project file (Task/Agent spawn subagents, whose own calls fire the hook).
READ_ONLY = frozenset({
    "Read", "Glob", "Grep", "LS", "NotebookRead", "WebFetch", "WebSearch", "TodoWrite", "Task",
    "Agent", "AskUserQuestion", "ExitPlanMode", "BashOutput", "KillShell", "KillBash",
})
# The settings matcher (exact names joined by `|`, hooks.md "Matcher patterns").
MATCHER = "|".join([*WRITERS, *sorted(SHELLS)])


def parse(payload: dict[str, Any]) -> Call:
    """The paths/command one Claude tool call would write or run; BadPayload if unknown."""
    name, given = tool_of(payload)
    cwd = cwd_of(payload)
    if name in WRITERS:
        return Call(name, cwd, paths=[text_field(name, given, WRITERS[name])])
    if name in SHELLS:
        return Call(name, cwd, command=text_field(name, given, "command"))
    if name in READ_ONLY:
        return Call(name, cwd)
    raise BadPayload(f"unknown tool {name!r}: automaton cannot tell what it writes")
