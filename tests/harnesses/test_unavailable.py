"""`unavailable`: an agent that could not start here, told apart from a run that failed."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.core.sandbox import Policy
from automaton.harnesses import HarnessRequest, get

NESTED = ("Error: Claude Code cannot be launched inside another Claude Code session.\n"
          "Nested sessions share runtime resources and will crash all active sessions.\n"
          "To bypass this check, unset the CLAUDECODE environment variable.\n")


def claude_result(text: str, **over: Any) -> str:
    """A result message as `claude -p --output-format json` prints one (in-run failures included)."""
    return json.dumps({"type": "result", "subtype": "success", "is_error": True, "result": text,
                       "total_cost_usd": 0, "usage": {}, **over})


def fake(fake_bin: Any, name: str, stdout: str = "", stderr: str = "", code: int = 0) -> None:
    fake_bin(name, f"""
        sys.stdin.read()
        sys.stdout.write({stdout!r})
        sys.stderr.write({stderr!r})
        sys.exit({code})
        """)


def test_a_missing_executable_is_unavailable(make_req: Callable[..., HarnessRequest], tmp_path: Path) -> None:
    res = get("command").run(make_req(command=(str(tmp_path / "no-such-agent"),)))
    assert res.exit_status == 127
    assert res.unavailable is not None
    assert "no-such-agent: not found" in res.unavailable and "PATH" in res.unavailable


def test_a_file_that_is_not_executable_is_unavailable(make_req: Callable[..., HarnessRequest], tmp_path: Path) -> None:
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    res = get("command").run(make_req(command=(str(script),)))
    assert res.exit_status == 126
    assert res.unavailable is not None and "chmod +x" in res.unavailable


def test_a_sandbox_that_cannot_start_is_unavailable(fake_bin: Any, make_req: Callable[..., HarnessRequest],
                                                    tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOMATON_SANDBOX_UNAVAILABLE", "1")  # the sandbox module then reports none
    tool = fake_bin("agent", "open(os.path.join(os.path.dirname(sys.argv[0]), 'ran'), 'w')")
    req = make_req(command=(str(tool),), sandbox=Policy((tmp_path / "work",), tmpdir=None, label="test"))
    res = get("command").run(req)
    assert res.exit_status == 126 and not (fake_bin.dir / "ran").exists()
    assert res.unavailable is not None and res.unavailable.startswith("sandbox unavailable:")
    assert "AUTOMATON_SANDBOX_UNAVAILABLE" in res.unavailable


def test_claude_nested_session_refusal(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    fake(fake_bin, "claude", stderr=NESTED, code=1)
    res = get("claude").run(make_req())
    assert res.unavailable is not None
    assert res.unavailable.startswith("claude refused to start inside another Claude Code session (Error: Claude Code"
                                      " cannot be launched inside another Claude Code session.)")


@pytest.mark.parametrize("said", ["Not logged in · Please run /login", "Invalid API key · Fix external API key",
                                  "Login expired · Please run /login",
                                  "API Error: 401 Invalid authentication credentials"])
def test_claude_auth_failures(fake_bin: Any, make_req: Callable[..., HarnessRequest], said: str) -> None:
    fake(fake_bin, "claude", stdout=claude_result(said), code=1)
    res = get("claude").run(make_req())
    assert res.unavailable is not None and said in res.unavailable
    assert "claude is not logged in" in res.unavailable and "ANTHROPIC_API_KEY" in res.unavailable


def test_codex_without_credentials(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    failed = {"type": "turn.failed", "error": {"message": "unexpected status 401 Unauthorized: Missing bearer or"
                                                          " basic authentication in header, url: https://x/v1"}}
    fake(fake_bin, "codex", stdout=json.dumps({"type": "thread.started", "thread_id": "t"}) + "\n"
         + json.dumps(failed) + "\n", code=1)
    res = get("codex").run(make_req())
    assert res.unavailable is not None
    assert "codex is not logged in" in res.unavailable and "401 Unauthorized" in res.unavailable


def test_gemini_without_auth(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    message = ("Please set an Auth method in your /home/u/.gemini/settings.json or specify one of the following"
               " environment variables before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA")
    fake(fake_bin, "gemini", stderr=json.dumps({"error": {"type": "Error", "message": message, "code": 41}}, indent=2),
         code=41)
    res = get("gemini").run(make_req())
    assert res.error == "gemini exited 41 (authentication error)"
    assert res.unavailable is not None and "GEMINI_API_KEY" in res.unavailable


def test_a_run_that_worked_is_never_unavailable(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    fake(fake_bin, "claude", stdout=claude_result("Fixed the 'Not logged in' banner.", is_error=False))
    res = get("claude").run(make_req())
    assert res.error is None and res.unavailable is None


def test_a_failure_for_another_reason_is_a_charged_run(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    tool_output = {"type": "item.completed", "item": {"type": "command_execution", "command": "curl api",
                                                      "aggregated_output": "HTTP 401 Unauthorized", "exit_code": 0}}
    failed = {"type": "turn.failed", "error": {"message": "stream disconnected before completion"}}
    fake(fake_bin, "codex", stdout=json.dumps(tool_output) + "\n" + json.dumps(failed) + "\n", code=1)
    res = get("codex").run(make_req())
    assert res.error == "codex turn failed: stream disconnected before completion"
    assert res.unavailable is None  # the agent's own tool output never decides it


def test_a_timeout_is_not_unavailable(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    fake_bin("claude", "import time\nsys.stderr.write('Not logged in\\n'); sys.stderr.flush(); time.sleep(30)")
    res = get("claude").run(make_req(timeout_s=1))
    assert res.timed_out and res.unavailable is None


# What codex-cli 0.171.0 printed when it could not write its home folder inside a sandbox
# (recorded with `automaton --sandbox -- codex exec --json -`): stderr only, exit 1.
CODEX_CANNOT_START = ("WARNING: proceeding, even though we could not create PATH aliases: Read-only file system"
                      " (os error 30)\nError: failed to initialize in-process app-server client: Read-only file"
                      " system (os error 30)\n\nStack backtrace:\n   0: <unknown>\n")


@pytest.mark.parametrize("harness", ["codex", "claude", "opencode"])
def test_an_agent_cli_that_dies_before_any_output_is_unavailable(
        fake_bin: Any, make_req: Callable[..., HarnessRequest], harness: str) -> None:
    fake(fake_bin, harness, stderr=CODEX_CANNOT_START, code=1)
    res = get(harness).run(make_req())
    assert res.exit_status == 1 and res.unavailable is not None
    assert res.unavailable.startswith(f"{harness} exited 1 before printing any output of its own (Error: failed to"
                                      " initialize in-process app-server client: Read-only file system (os error 30))")


def test_output_of_its_own_or_a_signal_is_not_unavailable(fake_bin: Any,
                                                          make_req: Callable[..., HarnessRequest]) -> None:
    started = json.dumps({"type": "thread.started", "thread_id": "t"}) + "\n"
    fake(fake_bin, "codex", stdout=started, stderr="Error: stream disconnected\n", code=1)
    assert get("codex").run(make_req()).unavailable is None  # it started, then failed: a charged run
    fake_bin("codex", "import signal\nsys.stdin.read()\nos.kill(os.getpid(), signal.SIGKILL)")
    res = get("codex").run(make_req())
    assert res.exit_status < 0 and res.unavailable is None


def test_a_command_harness_that_prints_nothing_is_a_failed_run(make_req: Callable[..., HarnessRequest]) -> None:
    res = get("command").run(make_req(command=(sys.executable, "-c", "import sys; sys.exit(3)")))
    assert res.exit_status == 3 and res.unavailable is None  # not an agent CLI with an output mode of its own


def test_gemini_with_nothing_on_stdout_is_a_failed_run_unless_it_crashed(
        fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    # 0.61.0 after an API error: its JSON error object on stderr, stdout empty: it did run
    error = json.dumps({"session_id": "s", "error": {"type": "Error", "message": "Internal error", "code": 500}})
    fake(fake_bin, "gemini", stderr=error, code=1)
    assert get("gemini").run(make_req()).unavailable is None
    crashed = ("Failed to save project registry to /h/.gemini/projects.json: Error: EROFS: read-only file system\n"
               "An unexpected critical error occurred:Error: EROFS: read-only file system, open"
               " '/h/.gemini/projects.json.1.tmp'\n")
    fake(fake_bin, "gemini", stderr=crashed, code=1)
    res = get("gemini").run(make_req())
    assert res.unavailable is not None and res.unavailable.startswith("gemini crashed before it could run the task")
