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
`RemoteTrigger` (run work the hook never sees), `SlashCommand` (a custom command may run
shell lines of its own before the model sees it), and any tool added later, until automaton
knows what it writes, or a human lists it in the sealed `.automaton/config.json`
`hooks.allow_tools` (`hooks.allow_listed`). Claude Code names an MCP tool
`mcp__<server>__<tool>` (hooks reference, "Match MCP tools"), so `mcp__github__get_*` names
one server's `get_` tools.

`SCHEDULERS` (`ScheduleWakeup`, `CronCreate`) are denied with their own reason: they queue a
prompt that the session runs later by itself, after the tool call was judged and, in a loop,
after the tick's gates, budget and sign-offs were checked; work runs only when a human or the
loop's schedule starts it. `Agent`/`Task` (subagents), `Skill` and `ToolSearch` stay allowed:
each only adds text or tool schemas to the conversation, and the tool calls they lead to fire
this hook again (Claude Code 2.1.332, checked end to end: a subagent's PreToolUse payload
carries `agent_id` and `agent_type`).
"""

from __future__ import annotations

from automaton.hooks import BadPayload, Call, UnknownTool, cwd_of, text_field, tool_of

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
    "ReadMcpResourceTool", "LSP", "ToolSearch", "WaitForMcpServers", "CronDelete", "CronList",
    "Skill", "SendMessage", "ListAgents", "PushNotification", "SendFeedback", "ReportFindings",
    "SubagentHandback", "EndConversation", "ExitWorktree", "Artifact", "SendUserFile",
    "ShareOnboardingGuide",
})
# Tools that make the session run a prompt later on its own (Claude Code's `/loop` wake-ups and
# session crons): never work outside a tick or a human's turn.
SCHEDULERS = frozenset({"ScheduleWakeup", "CronCreate"})
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
    if name in SCHEDULERS:
        raise BadPayload(f"{name} schedules a prompt for this session to run later by itself, outside automaton's"
                         " ticks and sign-offs: finish the work in this turn; a loop's next tick comes from its"
                         " schedule (automaton --install-schedule)")
    raise UnknownTool(name, cwd)
