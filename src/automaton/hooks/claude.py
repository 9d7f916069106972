"""Claude Code `PreToolUse` payloads (code.claude.com/docs/en/hooks, /docs/en/tools-reference).

Input: `cwd`, `tool_name`, `tool_input`. `Write`/`Edit` carry `tool_input.file_path` (absolute
in current builds; a relative one is resolved against `cwd`); `NotebookEdit` carries
`notebook_path`; `MultiEdit` (dropped from the docs' tool list in late 2025) carried
`file_path` + `edits[]` and is still handled. `Bash`, `PowerShell` and `Monitor` (a command run
in the background) carry `command`. A hook blocks with exit 2 and the reason on stderr ("stderr
becomes the reason Claude sees"); an allow prints nothing, because an explicit JSON "allow"
would skip the user's own permission prompts.

The hook is installed for every tool (matcher `*`). A tool that is neither a writer, a shell,
nor in `READ_ONLY` (tools that write no project file: reads, searches, web, plans, task lists,
subagents and skills, whose own tool calls fire this hook again) is denied: MCP tools
(`mcp__server__tool`), `EnterWorktree` (creates a git worktree), `Workflow` and
`RemoteTrigger` (run work the hook never sees), and any tool added later, until automaton
knows what it writes.
"""

from __future__ import annotations

from automaton.hooks import BadPayload, Call, cwd_of, text_field, tool_of

TYPE_CHECKING = False  # typing stays off the hook path (core/record.py says why)
if TYPE_CHECKING:
    from typing import Any

WRITERS: dict[str, str] = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
SHELLS = frozenset({"Bash", "PowerShell", "Monitor"})
# Monitor inputs that only watch: a WebSocket `url` and presentation settings.
MONITOR_PASSIVE = frozenset({"url", "description", "timeout", "timeout_ms", "persistent", "name", "filter"})
READ_ONLY = frozenset({
    "Read", "Glob", "Grep", "LS", "NotebookRead", "WebFetch", "WebSearch", "TodoWrite", "Task", "Agent",
    "AskUserQuestion", "ExitPlanMode", "EnterPlanMode", "BashOutput", "KillShell", "KillBash", "TaskCreate",
    "TaskGet", "TaskList", "TaskUpdate", "TaskOutput", "TaskStop", "ListMcpResourcesTool",
    "ReadMcpResourceTool", "LSP", "ToolSearch", "WaitForMcpServers", "CronCreate", "CronDelete", "CronList",
    "Skill", "SendMessage", "ListAgents", "PushNotification", "SendFeedback", "ReportFindings",
    "ScheduleWakeup", "SubagentHandback", "EndConversation", "ExitWorktree", "Artifact", "SendUserFile",
    "ShareOnboardingGuide",
})
# Every tool; an unknown one is classified here, fail closed
# (hooks.md "Matcher patterns": `*`, `""` or omitted match all).
MATCHER = "*"


def parse(payload: dict[str, Any]) -> Call:
    """The paths/command one Claude tool call would write or run; BadPayload if unknown."""
    name, given = tool_of(payload)
    cwd = cwd_of(payload)
    if name in WRITERS:
        return Call(name, cwd, paths=[text_field(name, given, WRITERS[name])])
    if name in SHELLS:
        if name == "Monitor" and "command" not in given:
            if "url" in given and not set(given) - MONITOR_PASSIVE:
                return Call(name, cwd)  # a WebSocket monitor runs no command
            raise BadPayload("Monitor: neither a command nor a WebSocket url: automaton cannot tell what it runs")
        return Call(name, cwd, command=text_field(name, given, "command"))
    if name in READ_ONLY:
        return Call(name, cwd)
    raise BadPayload(f"unknown tool {name!r}: automaton cannot tell what it writes")
