"""`"sessions": "sandboxed"`: an agent session's writing tool calls are denied unless its hook
runs inside automaton's kernel sandbox (`hooks.confined`); read-only tools stay allowed;
`"sessions": "hooks-only"` (sealed) and no key keep today's behaviour, labelled best effort."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.hooks import confined
from automaton.sandbox import available
from automaton.store import key
from tests.helpers import Result, run_cli, run_exe
from tests.hooks.conftest import assert_allowed, assert_denied

START = "start the agent with automaton --sandbox -- "


def seal_sessions(project: Path, mode: str | None) -> None:
    """Write config.json with `"sessions": mode` (no key for None) and seal it as a human."""
    obj: dict[str, Any] = {"schema_version": 1}
    if mode is not None:
        obj["sessions"] = mode
    (project / ".automaton").mkdir(exist_ok=True)
    (project / ".automaton" / "config.json").write_text(json.dumps(obj) + "\n", encoding="utf-8")
    old = os.environ.get("AUTOMATON_APPROVER")
    os.environ["AUTOMATON_APPROVER"] = "alice"
    try:
        done = run_cli("--approve", "--config", "--yes", cwd=project)
    finally:
        if old is None:
            del os.environ["AUTOMATON_APPROVER"]
        else:
            os.environ["AUTOMATON_APPROVER"] = old
    assert done.code == 0, done.err


def claude(project: Path, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"session_id": "s", "cwd": str(project), "hook_event_name": "PreToolUse", "tool_name": tool,
            "tool_input": tool_input}


def write(project: Path, rel: str = "NOTES.md") -> dict[str, Any]:
    return claude(project, "Write", {"file_path": str(project / rel), "content": "x\n"})


def kernel_sandbox() -> bool:
    found = available()
    return found.ok and found.isolated


@pytest.mark.parametrize(("agent", "payload"), [
    ("claude", lambda p: write(p)),
    ("claude", lambda p: claude(p, "Bash", {"command": "echo hi > NOTES.md"})),
    ("claude", lambda p: claude(p, "Bash", {"command": "ls"})),  # a shell is a writing tool, whatever it runs
    ("claude", lambda p: claude(p, "Edit", {"file_path": str(p / "a.py"), "old_string": "a", "new_string": "b"})),
    ("claude", lambda p: claude(p, "NotebookEdit", {"notebook_path": str(p / "n.ipynb"), "new_source": ""})),
    ("codex", lambda p: {**claude(p, "apply_patch", {"command": "*** Begin Patch\n*** Add File: a.txt\n+x\n"
                                                                 "*** End Patch\n"})}),
    ("codex", lambda p: claude(p, "Bash", {"command": "node -e 'require(\"fs\").writeFileSync(\"/x\", \"\")'"})),
    ("gemini", lambda p: {**claude(p, "write_file", {"file_path": "a.txt", "content": "x"}),
                          "hook_event_name": "BeforeTool"}),
    ("gemini", lambda p: {**claude(p, "run_shell_command", {"command": "python3 -c 'print(1)'"}),
                          "hook_event_name": "BeforeTool"}),
])
def test_sandboxed_denies_writing_tools_outside_the_sandbox(
        project: Path, hook: Callable[..., Result], agent: str, payload: Callable[[Path], dict[str, Any]]) -> None:
    seal_sessions(project, "sandboxed")
    result = hook(agent, payload(project))
    assert_denied(result, '"sessions": "sandboxed"', START + agent, "outside automaton's sandbox")


@pytest.mark.parametrize("mode", [None, "hooks-only"])
def test_hooks_only_and_no_key_judge_as_before(project: Path, hook: Callable[..., Result], mode: str | None) -> None:
    seal_sessions(project, mode)
    assert_allowed(hook("claude", write(project)))
    assert_allowed(hook("claude", claude(project, "Bash", {"command": "ls"})))
    assert_denied(hook("claude", write(project, ".automaton/x.json")), ".automaton")


@pytest.mark.parametrize(("agent", "tool", "given"), [
    ("claude", "Read", {"file_path": "README.md"}),
    ("claude", "Grep", {"pattern": "x"}),
    ("claude", "Glob", {"pattern": "*.py"}),
    ("codex", "view_image", {"path": "a.png"}),
    ("gemini", "read_file", {"absolute_path": "/etc/hostname"}),
    ("gemini", "glob", {"pattern": "*"}),
])
def test_read_only_tools_stay_allowed(project: Path, hook: Callable[..., Result], agent: str, tool: str,
                                      given: dict[str, Any]) -> None:
    seal_sessions(project, "sandboxed")
    result = hook(agent, claude(project, tool, given))
    if agent == "codex" and result.code == 2 and "unknown tool" in result.err:
        pytest.skip("codex: that tool is not in the hook's read-only list")
    assert_allowed(result)


def test_an_unsealed_sessions_key_is_denied_not_trusted(project: Path, hook: Callable[..., Result]) -> None:
    seal_sessions(project, "sandboxed")
    (project / ".automaton" / "config.json").write_text('{"schema_version": 1, "sessions": "hooks-only"}\n')
    assert_denied(hook("claude", write(project)), "automaton --approve --config")


def test_an_unknown_sessions_value_is_bad_input(project: Path) -> None:
    (project / ".automaton").mkdir()
    (project / ".automaton" / "config.json").write_text('{"schema_version": 1, "sessions": "maybe"}\n')
    done = run_cli("--approve", "--config", "--yes", cwd=project, human=True)
    assert done.code == 2
    assert 'sessions must be "sandboxed" or "hooks-only"' in done.err


PAYLOAD_HOOK = [sys.executable, "-m", "automaton", "--hook", "claude", "--project"]


@pytest.mark.skipif(not kernel_sandbox(), reason="needs the kernel sandbox with namespaces")
def test_inside_automaton_sandbox_the_hook_judges_normally(project: Path) -> None:
    seal_sessions(project, "sandboxed")
    hook = [*PAYLOAD_HOOK, str(project)]
    inside = ["automaton", "--sandbox", "--project", str(project), "--"]
    allowed = run_exe(*inside, *hook, cwd=project, stdin=json.dumps(write(project)))
    assert (allowed.returncode, allowed.stdout) == (0, ""), allowed.stderr
    assert "automaton denied" not in allowed.stderr
    protected = run_exe(*inside, *hook, cwd=project, stdin=json.dumps(write(project, ".automaton/x.json")))
    assert protected.returncode == 2
    assert ".automaton" in protected.stderr and "sessions" not in protected.stderr
    # The same call from this (unsandboxed) process, as a real process too: denied.
    outside = run_exe("automaton", "--hook", "claude", "--project", str(project), cwd=project,
                      stdin=json.dumps(write(project)))
    assert outside.returncode == 2 and START + "claude" in outside.stderr
    # AUTOMATON_SANDBOX=1, which any process can set, does not make a session sandboxed.
    faked = run_exe("automaton", "--hook", "claude", "--project", str(project), cwd=project,
                    stdin=json.dumps(write(project)), env={**os.environ, "AUTOMATON_SANDBOX": "1"})
    assert faked.returncode == 2 and START + "claude" in faked.stderr


def test_probe_outside_reads_the_key(project: Path) -> None:
    seal_sessions(project, "sandboxed")  # the seal made the key
    why = confined.outside_reason()
    assert why is not None and "can read the record key" in why


def test_probe_without_a_key_fails_closed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    why = confined.outside_reason()
    assert why is not None and "no record key" in why


def _refused_open(real: Callable[..., int], target: Path) -> Callable[..., int]:
    def fake(path: Any, *args: Any, **kwargs: Any) -> int:
        if Path(path) == target:
            raise PermissionError(13, "Permission denied")
        return real(path, *args, **kwargs)
    return fake


@pytest.mark.parametrize(("nnp", "expect"), [("1", None), ("0", "no_new_privs")])
def test_probe_hidden_key_needs_no_new_privs(project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                            nnp: str, expect: str | None) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("no_new_privs is read on Linux only")
    seal_sessions(project, "sandboxed")
    monkeypatch.setattr(os, "open", _refused_open(os.open, key.key_path()))
    monkeypatch.setattr(key, "hidden_here", lambda path: True)  # the bits allow it: a kernel denial
    status = tmp_path / "status"
    status.write_text(f"Name:\tpython\nNoNewPrivs:\t{nnp}\nSeccomp:\t0\n")
    monkeypatch.setattr(confined, "STATUS", str(status))
    why = confined.outside_reason()
    assert why == expect if expect is None else (why is not None and expect in why)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads a file whatever its bits")
def test_probe_a_chmod_is_not_a_sandbox(project: Path) -> None:
    seal_sessions(project, "sandboxed")
    path = key.key_path()
    path.chmod(0o000)
    try:
        why = confined.outside_reason()
    finally:
        path.chmod(0o600)
    assert why is not None and "permission bits" in why
