"""Agent hook protocols: one module per agent, this registry, and the fail-closed entry `run`.

Every agent here blocks a tool call when its hook exits 2 with the reason on stderr, and lets
it run when the hook exits 0 with nothing on stdout; every other outcome (exit 1, a crash, a
missing executable) is *allow* to the agents, so `run` turns any failure into exit 2.
Sources: Claude Code hooks.md "Exit code output" (code.claude.com/docs/en/hooks); Codex hooks
(developers.openai.com/codex/hooks); Gemini CLI docs/hooks/reference.md "Exit codes" and
packages/core/src/hooks/hookRunner.ts (exit 2 + non-empty stderr = deny). The hook runs before
every edit: this module imports only json, os, sys, pathlib and core.record, and the rest lazily.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from automaton.core import jsontext
from automaton.core.record import field, record  # not dataclasses (core/record.py says why)

TYPE_CHECKING = False  # typing stays off the hook path too
if TYPE_CHECKING:
    from typing import Any

    from automaton.store.layout import Project

# agent -> module with `parse(payload: dict) -> Call`
AGENTS: dict[str, str] = {
    "claude": "automaton.hooks.claude",
    "codex": "automaton.hooks.codex",
    "gemini": "automaton.hooks.gemini",
    "opencode": "automaton.hooks.opencode",
}
ALLOW_CODE = 0
DENY_CODE = 2  # the one exit code all three agents treat as "block"
# Seconds an agent hook may take before it denies. Claude Code kills a hook after 60 s by
# default (hooks.md "timeout") and then runs the call; Gemini CLI's default is 60 s too
# (docs/hooks/reference.md); a hook that answers well before any of them never lets a call
# through by running out of time.
DEADLINE_S = 5.0


@record(frozen=True)
class Call:
    """What one tool call would do: write `paths` and/or run shell `command`, in `cwd`.

    `tool` names it in messages. A call with neither writes nothing (allowed).
    """

    tool: str
    cwd: Path
    paths: list[str] = field(default_factory=list)
    command: str | None = None


@record(frozen=True)
class Answer:
    """The hook's reply: exit `code` (0 allow, 2 deny) and the one stderr line (empty on allow)."""

    code: int
    message: str = ""


class Deadline(BaseException):
    """The hook ran past DEADLINE_S (a BaseException: no `except Exception` on the way swallows it)."""


class BadPayload(Exception):
    """The payload cannot be trusted to say what the call writes (denied)."""


class UnknownTool(BadPayload):
    """A tool the hook cannot read (an MCP tool, `SlashCommand`, one added later): denied
    unless the project's sealed `hooks.allow_tools` names it (`allow_listed`)."""

    def __init__(self, tool: str, cwd: Path) -> None:
        super().__init__(f"unknown tool {tool!r}: automaton cannot tell what it writes")
        self.tool = tool
        self.cwd = cwd


def payload_of(text: str) -> dict[str, Any]:
    """The hook's stdin JSON object; BadPayload when it is not one."""
    try:
        data = jsontext.loads(text)
    except ValueError as exc:
        raise BadPayload(f"hook input is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise BadPayload("hook input is not a JSON object")
    return data


def tool_of(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(`tool_name`, `tool_input`) of a pre-tool payload; BadPayload when either is malformed."""
    name, given = payload.get("tool_name"), payload.get("tool_input", {})
    if not isinstance(name, str) or not name:
        raise BadPayload("hook input has no tool_name")
    if not isinstance(given, dict):
        raise BadPayload(f"{name}: tool_input is not an object")
    return name, given


def cwd_of(payload: dict[str, Any]) -> Path:
    """The payload's absolute `cwd`; the hook process's own directory when absent.
    BadInput ("invalid path …") when it holds a control character."""
    cwd = payload.get("cwd")
    if cwd is None:
        return Path(os.getcwd())
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        raise BadPayload(f"hook input cwd {cwd!r} is not an absolute path")
    from automaton.resolve import check_text

    return Path(check_text(cwd))


def patch_paths_of(tool: str, text: str) -> list[str]:
    """The files an apply_patch text (`*** Begin Patch` format, hooks/codexpatch.py) touches,
    as written in it; BadPayload for a malformed patch or one that names no file."""
    from automaton.hooks.codexpatch import BadPatch, patch_paths  # only a patch call needs the reader

    try:
        paths = patch_paths(text)
    except BadPatch as exc:
        raise BadPayload(f"{tool}: {exc}") from None
    if not paths:
        raise BadPayload(f"{tool}: the patch names no file (no '*** Add/Update/Delete File:' line)")
    return paths


def text_field(tool: str, given: dict[str, Any], *keys: str) -> str:
    """The first of `keys` present in `given` as a non-empty string; BadPayload otherwise."""
    for key in keys:
        value = given.get(key)
        if isinstance(value, str) and value:
            return value
    raise BadPayload(f"{tool}: tool_input has no {' / '.join(keys)} string")


def run(agent: str, stdin_text: str, project_flag: str | None) -> Answer:
    """Decide one pre-tool call of `agent` (or a commit, for `git`). Never raises.

    An agent's call is decided within DEADLINE_S seconds or denied (a SIGALRM timer, main
    thread only; the git pre-commit hook has no deadline: git waits for it)."""
    if agent == "git":
        return _decide(agent, stdin_text, project_flag)
    armed = _arm(DEADLINE_S)
    try:
        return _decide(agent, stdin_text, project_flag)
    finally:
        if armed is not None:
            _disarm(armed)


def _arm(seconds: float) -> tuple[object, float, float] | None:
    """Start the deadline timer: (the previous SIGALRM handler, the seconds left on a timer
    already running, the start time), or None where no timer can be set (not the main thread,
    no SIGALRM on this system)."""
    signal = _signals()

    def expired(signum: int, frame: object) -> None:
        raise Deadline(f"the hook ran past its {seconds:g} s deadline; denied so that a slow or stuck"
                       " reading never lets a call through")

    try:
        old: object = signal.signal(signal.SIGALRM, expired)
    except (ValueError, AttributeError, OSError):
        return None
    import time

    left: float = signal.setitimer(signal.ITIMER_REAL, seconds)[0]
    return old, left, time.monotonic()


def _disarm(armed: tuple[object, float, float]) -> None:
    """Stop the deadline timer; put back the caller's handler and what was left of its timer."""
    import time

    old, left, started = armed
    signal = _signals()
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, old)
    if left > 0:
        signal.setitimer(signal.ITIMER_REAL, max(left - (time.monotonic() - started), 0.001))


def _signals() -> Any:
    """The `signal` module, imported only when the deadline is armed (its enum wrappers cost
    the hook about half a millisecond; a private CPython module would be cheaper, but its
    interface is not the language's to keep)."""
    import signal

    return signal


def _decide(agent: str, stdin_text: str, project_flag: str | None) -> Answer:
    try:
        if agent == "git":
            from automaton.hooks import precommit

            return precommit.check(project_flag, Path(os.getcwd()))
        if agent not in AGENTS:
            return deny(f"unknown agent {agent!r}: use one of {', '.join(sorted(AGENTS))}")
        if _names_key_folder(stdin_text):
            return deny("the record key's folder (~/.config/automaton) is never read or written by an agent")
        __import__(AGENTS[agent])  # not importlib.import_module: one import fewer before every edit
        try:
            call: Call = sys.modules[AGENTS[agent]].parse(payload_of(stdin_text))
        except UnknownTool as exc:
            return allow_listed(exc, project_flag)
        return decide(call, project_flag, agent)
    except BaseException as exc:  # fail closed: a crashing hook must block, never allow
        return deny(_why(exc))


def allow_listed(unknown: UnknownTool, project_flag: str | None) -> Answer:
    """A tool the hook cannot read: allowed only when a pattern of the project's sealed
    `.automaton/config.json` `hooks.allow_tools` matches its name (a human's word, sealed with
    `automaton --approve --config`, that it writes no project file), else denied with how a
    human allows it. A config.json the agent changed (unsealed) denies with the seal's reason
    (`store.project_config.ConfigNotSealed`, raised through to the caller's denial)."""
    from automaton.hooks import policy

    project = policy.project_for(project_flag, unknown.cwd)
    if os.path.lexists(project.config_file) or os.path.lexists(project.config_log):
        from automaton.store import project_config

        if project_config.allowed_tool(project, unknown.tool) is not None:
            return Answer(ALLOW_CODE)
    return deny(f"{unknown}; a human who knows it writes no project file lists it (or a pattern such as"
                f" \"{_example(unknown.tool)}\") in .automaton/config.json \"hooks\": {{\"allow_tools\": [...]}}"
                " and runs automaton --approve --config")


def _example(tool: str) -> str:
    """A pattern to suggest for `tool`: its MCP server's tools (`mcp__github__*`), else the name."""
    head, sep, _ = tool.rpartition("__")
    return f"{head}__*" if sep and head.startswith("mcp__") and head != "mcp" else tool


def decide(call: Call, project_flag: str | None, agent: str | None = None) -> Answer:
    """Ask the shared policy about every path `call` writes (shell targets included).

    `agent` (the hook's agent name): where the project's sealed config says `"sessions":
    "sandboxed"`, a call that writes or runs anything is denied unless this hook runs inside
    automaton's kernel sandbox (`sessions_reason`). A call that does neither is allowed first."""
    if not call.paths and call.command is None:
        return Answer(ALLOW_CODE)
    from automaton.hooks import policy

    project = policy.project_for(project_flag, call.cwd)
    if agent is not None:
        why = sessions_reason(project, agent)
        if why:
            return deny(f"{call.tool}: {why}")
    paths = list(call.paths)
    if call.command is not None:
        from automaton.hooks import shell

        try:
            found = shell.analyze(call.command, call.cwd, powershell=call.tool == "PowerShell")
        except shell.Unsafe as exc:
            return deny(f"{call.tool}: {exc}")
        paths += [os.path.join(base, os.path.expanduser(t)) for t, base in found.targets]
        linked = {os.path.join(base, os.path.expanduser(t)) for t, base in found.linked}
    if call.command is not None:
        why = policy.wrapped_reason(project, call.cwd, found.sandbox_tasks, found.inline_code)
        if why:
            return deny(f"{call.tool}: {why}")
    verdict = policy.check(project, call.cwd, paths, no_temp=linked if call.command is not None else None)
    return Answer(ALLOW_CODE) if verdict.allowed else deny(f"{call.tool}: {verdict.reason}")


def sessions_reason(project: Project, agent: str) -> str | None:
    """Why a writing call of `agent` is denied for where its session runs, or None: the sealed
    `.automaton/config.json` says `"sessions": "sandboxed"` and this hook process is not inside
    automaton's kernel sandbox (`hooks.confined`). BadInput / ConfigNotSealed from
    `store.project_config.sessions` propagate (denied)."""
    if not _says_sandboxed(project):
        if not (os.path.lexists(project.config_file) or os.path.lexists(project.config_log)):
            return None  # nothing was ever sealed here: hooks-only, as before this rule
        from automaton.store import project_config

        if project_config.sessions(project).mode != "sandboxed":
            return None
    from automaton.hooks.confined import outside_reason

    why = outside_reason()
    if why is None:
        return None
    return (f"this project's sealed .automaton/config.json says \"sessions\": \"sandboxed\" and this session runs"
            f" outside automaton's sandbox ({why}): start the agent with automaton --sandbox -- {agent}")


def _says_sandboxed(project: Project) -> bool:
    """Whether config.json as it is says `"sessions": "sandboxed"`, read without its seal.

    This runs before every tool call, and verifying config.log's keyed chain costs the Bash
    path milliseconds, so only the answer that needs no seal is taken from the bare file: one
    that says "sandboxed" only ever adds a denial. Every other answer (no such key, another
    value, a file that cannot be read as JSON) is False, and the caller asks
    `store.project_config`, which checks the seal; a project with neither config.json nor
    config.log (nothing ever sealed) needs no check at all (False there is the answer)."""
    path = str(project.config_file)
    try:
        # O_NONBLOCK: a FIFO planted here must not hang the hook (a hook that never answers allows).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        import stat  # loaded by `os` at start-up: free

        data = os.read(fd, 1 << 20) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    finally:
        os.close(fd)
    try:
        obj = jsontext.loads(data)
    except ValueError:
        return False
    return isinstance(obj, dict) and obj.get("sessions") == "sandboxed"


def _names_key_folder(text: str) -> bool:
    """Whether a tool call's payload names the record key's folder in any spelling the hook can
    see (`~/.config/automaton`, `$HOME/.config/automaton`, the absolute path, JSON-escaped
    slashes): even a read tool may not open the key, which would let the agent forge keyed log
    lines. Reading it some other way is stopped by the kernel sandbox, not here."""
    flat = text.replace("\\/", "/").lower()
    return ".config/automaton" in flat


def deny(reason: str) -> Answer:
    """A denial with one line (Gemini ignores an exit 2 whose stderr is empty)."""
    line = " ".join(reason.split()) or "denied"
    return Answer(DENY_CODE, f"automaton denied this tool call: {line}")


def _why(exc: BaseException) -> str:
    from_automaton = getattr(exc, "message", None)
    if isinstance(from_automaton, str):
        return from_automaton
    if type(exc).__name__ in ("BadPayload", "Unsafe", "Deadline"):
        return str(exc)
    return f"the hook failed ({type(exc).__name__}: {exc}); denied to stay safe — fix automaton or its files"
