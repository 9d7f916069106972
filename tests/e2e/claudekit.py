"""Running the real Claude Code offline against `servers.anthropic.AnthropicServer`.

Environment (Claude Code 2.1.x): `ANTHROPIC_BASE_URL` at the server, any `ANTHROPIC_API_KEY`,
`CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` (no telemetry, update checks or other traffic);
as root `IS_SANDBOX=1`, without which Claude Code refuses `bypassPermissions`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.servers.base import Request

VENV_BIN = Path(sys.executable).parent
RUN_TIMEOUT_S = 120


def claude_env(server_url: str, claude: Path) -> dict[str, str]:
    """The process environment for one offline Claude Code run: PATH with automaton's venv and
    the pinned CLI first, the tests' temporary HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ANTHROPIC_"))}
    env.update({"ANTHROPIC_BASE_URL": server_url, "ANTHROPIC_API_KEY": "sk-ant-scripted",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "PATH": f"{VENV_BIN}{os.pathsep}{claude.parent}{os.pathsep}{os.environ.get('PATH', '')}"})
    if os.geteuid() == 0:
        env["IS_SANDBOX"] = "1"
    return env


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def result(self) -> dict[str, Any]:
        """The `--output-format json` result object."""
        doc = json.loads(self.stdout)
        assert isinstance(doc, dict) and doc.get("type") == "result", self.stdout[-2000:]
        return doc


def run(argv: list[str], cwd: Path, env: dict[str, str], prompt: str = "Do the task.") -> Run:
    done = subprocess.run(argv, cwd=cwd, env=env, input=prompt, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, check=False)
    return Run(done.returncode, done.stdout, done.stderr)


def print_argv(claude: Path, *extra: str) -> list[str]:
    return [str(claude), "-p", "--output-format", "json", *extra]


def tool_results(requests: list[Request]) -> dict[str, dict[str, Any]]:
    """Every `tool_result` block the CLI sent back, by `tool_use_id` (the last one seen)."""
    found: dict[str, dict[str, Any]] = {}
    for request in requests:
        body = request.body if isinstance(request.body, dict) else {}
        for message in body.get("messages") or []:
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found[str(block["tool_use_id"])] = block
    return found


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return str(content)


def tool_use(tool_id: str, name: str, **tool_input: Any) -> dict[str, Any]:
    """A script step: one tool call with a fixed id (to find its result in the next request)."""
    return {"tool_use": {"id": tool_id, "name": name, "input": tool_input}}


# A PreToolUse command hook that appends its stdin (the real payload) to a file.
def recorder_settings(log: Path) -> dict[str, Any]:
    command = f"{sys.executable} -c \"import sys; open({str(log)!r}, 'a').write(sys.stdin.read().strip() + '\\\\n')\""
    return {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]}}


def settings_errors(debug_file: Path) -> list[str]:
    """The lines of a `--debug-file` log where Claude Code rejected a settings entry. In a
    headless session it prints nothing about them: "Invalid setting skipped without dialog
    (automated session): <file>: <key>: <why>", and skips the hooks and permissions beside the
    entry (Claude Code 2.1.332)."""
    try:
        text = debug_file.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    return [line for line in text.splitlines() if "invalid setting" in line.lower()
            or ("[ERROR]" in line and "settings" in line.lower())]
