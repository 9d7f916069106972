"""`--install-hooks claude|codex|gemini|git`: put automaton's hook where each tool looks.

Agent settings are merged, never clobbered: other keys and other hooks stay as they are; our
own handler (its command holds `--hook <agent>`) is replaced, so installing twice equals
installing once. The command is absolute (the `automaton` script next to `sys.executable`, or
`sys.executable -m automaton`), pins `--project`, and ends in `|| exit 2` so that even a
missing or broken executable blocks instead of failing open (every agent runs the command
through a shell). Where (PROTOCOLS.md): Claude `.claude/settings.json` → `hooks.PreToolUse`
(§1.1; a loop worktree gets `loop_settings()` through `claude --settings`, because project
settings do not follow a worktree); Codex `.codex/hooks.json` → `hooks.PreToolUse` (§2.3; the
project layer must be trusted in `/hooks`); Gemini `.gemini/settings.json` → `hooks.BeforeTool`
(§3; the folder must be trusted). git: `pre-commit` in `git rev-parse --git-path hooks`.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from automaton.core.errors import BadInput, Refused
from automaton.core.names import LoopName
from automaton.core.outcome import Outcome
from automaton.store.atomic import atomic_write
from automaton.store.layout import Project

AGENT_TARGETS: dict[str, tuple[str, str]] = {  # agent -> (settings file, event)
    "claude": (".claude/settings.json", "PreToolUse"),
    "codex": (".codex/hooks.json", "PreToolUse"),
    "gemini": (".gemini/settings.json", "BeforeTool"),
}
NOTES: dict[str, str] = {
    "claude": "Claude Code loads it from sessions started in the project root",
    "codex": "trust the project's hooks once in Codex (/hooks), or run codex with --dangerously-bypass-hook-trust",
    "gemini": "Gemini CLI runs project hooks only in a trusted folder",
}
GIT_MARKER = "# automaton pre-commit hook"
LOOP_SETTINGS = "claude-settings.json"


def automaton_argv() -> list[str]:
    """The absolute command that runs automaton with this interpreter."""
    bindir = Path(os.path.abspath(sys.executable)).parent  # not realpath: stay in the venv
    script = bindir / ("automaton.exe" if os.name == "nt" else "automaton")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [os.path.abspath(sys.executable), "-m", "automaton"]


def shell_join(argv: list[str]) -> str:
    return subprocess.list2cmdline(argv) if os.name == "nt" else shlex.join(argv)


def hook_command(agent: str, project: Project) -> str:
    """The hook's shell command: absolute, project pinned, fail closed (`|| exit 2`)."""
    argv = [*automaton_argv(), "--hook", agent, "--project", str(project.root)]
    return f"{shell_join(argv)} || exit 2"


def _ours(agent: str) -> Any:
    def test(handler: object) -> bool:
        command = handler.get("command") if isinstance(handler, dict) else None
        return isinstance(command, str) and f"--hook {agent}" in command
    return test


def hook_group(agent: str, project: Project) -> dict[str, Any]:
    """One matcher group running our hook for `agent`'s writing and shell tools."""
    from automaton.hooks import claude, codex, gemini

    matcher = {"claude": claude.MATCHER, "codex": codex.MATCHER, "gemini": gemini.MATCHER}[agent]
    handler: dict[str, Any] = {"type": "command", "command": hook_command(agent, project)}
    if agent == "gemini":
        handler["name"] = "automaton"
    return {"matcher": matcher, "hooks": [handler]}


def merge(doc: dict[str, Any], event: str, group: dict[str, Any], agent: str, where: Path) -> None:
    """Put `group` under `doc.hooks[event]`, dropping our older handlers, keeping all else."""
    hooks = doc.setdefault("hooks", {})
    if not isinstance(hooks, dict) or not isinstance(hooks.setdefault(event, []), list):
        raise BadInput(f"{where}: 'hooks.{event}' is not the documented shape; fix it by hand first")
    ours = _ours(agent)
    kept: list[Any] = []
    for old in hooks[event]:
        if isinstance(old, dict) and isinstance(old.get("hooks"), list):
            handlers = [h for h in old["hooks"] if not ours(h)]
            if len(handlers) != len(old["hooks"]):
                if not handlers:
                    continue
                old = {**old, "hooks": handlers}
        kept.append(old)
    hooks[event] = [*kept, group]


def read_json(path: Path) -> dict[str, Any]:
    """A settings file as a dict ({} when absent); BadInput when it is not a JSON object."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise BadInput(f"{path}: cannot read ({exc.strerror})") from None
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise BadInput(f"{path}: not valid JSON ({exc}); fix it by hand, automaton never overwrites it") from None
    if not isinstance(data, dict):
        raise BadInput(f"{path}: not a JSON object; fix it by hand, automaton never overwrites it")
    return data


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(data, indent=2) + "\n").encode("utf-8"))


def install(project: Project, agent: str) -> Outcome:
    """Install the hook of `agent` (claude|codex|gemini|git). data {agent, path, changed, command}."""
    if agent == "git":
        return install_git(project)
    if agent not in AGENT_TARGETS:
        raise BadInput(f"--install-hooks {agent!r}: use claude, codex, gemini or git")
    rel, event = AGENT_TARGETS[agent]
    path = project.root / rel
    before = read_json(path)
    after = json.loads(json.dumps(before))
    group = hook_group(agent, project)
    merge(after, event, group, agent, path)
    changed = after != before
    if changed:
        write_json(path, after)
    command = group["hooks"][0]["command"]
    word = "installed" if changed else "already installed"
    return Outcome(lines=[f"{agent} hook {word} in {rel} ({event}, matcher {group['matcher']!r})",
                          f"command: {command}", f"note: {NOTES[agent]}"],
                   data={"agent": agent, "path": str(path), "changed": changed, "command": command})


def loop_settings(project: Project, loop_name: str) -> Path:
    """Write `<loop folder>/claude-settings.json` and return its path, for the runner's
    `claude --settings PATH` inside the loop worktree (project settings do not follow a worktree).

    It holds the project's own `.claude/settings.json` (when there is one) with the automaton
    hook merged in, pinned to this project. BadInput when the project settings are not JSON.
    """
    folder = project.loop_dir(LoopName.of(loop_name))
    if not folder.is_dir():
        raise BadInput(f"unknown loop {loop_name!r}: no folder {folder}")
    path = folder / LOOP_SETTINGS
    doc = read_json(project.root / AGENT_TARGETS["claude"][0])
    merge(doc, "PreToolUse", hook_group("claude", project), "claude", path)
    write_json(path, doc)
    return path


def install_git(project: Project) -> Outcome:
    """Install the pre-commit hook; refuses (exit 1) to replace a hook automaton did not write."""
    from automaton.git import run_git

    found = run_git(project.root, ["rev-parse", "--git-path", "hooks"])
    if found.code != 0:
        raise BadInput(f"{project.root} is not a git repository ({found.err.strip()}): run git init first")
    hooks_dir = Path(found.out.strip())
    if not hooks_dir.is_absolute():
        hooks_dir = project.root / hooks_dir
    path = hooks_dir / "pre-commit"
    line = f"{shell_join([*automaton_argv(), '--hook', 'git', '--project', str(project.root)])} || exit 2"
    text = f"#!/bin/sh\n{GIT_MARKER}: installed by automaton --install-hooks git\n{line}\n"
    try:
        old = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot read ({exc})") from None
    if old is not None and GIT_MARKER not in old:
        raise Refused(f"{path} is another tool's hook: automaton will not overwrite it; add this line to it: {line}")
    changed = old != text
    if changed:
        hooks_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode("utf-8"))
    path.chmod(0o755)
    word = "installed" if changed else "already installed"
    return Outcome(lines=[f"git pre-commit hook {word} at {path}", f"runs: {line}"],
                   data={"agent": "git", "path": str(path), "changed": changed, "command": line})
