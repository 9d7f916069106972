"""The agent's environment is built: a parent session's markers never reach the agent."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.harnesses import HarnessRequest, _env, get

# Claude Code's nested-session guard (v2.1.39+), exactly as it prints it (anthropics/claude-code #29543).
NESTED = ("Error: Claude Code cannot be launched inside another Claude Code session.\n"
          "Nested sessions share runtime resources and will crash all active sessions.\n"
          "To bypass this check, unset the CLAUDECODE environment variable.\n")
RESULT = {"type": "result", "subtype": "success", "is_error": False, "result": "done", "total_cost_usd": 0.01,
          "usage": {}}

PARENT_SESSION = {
    "CLAUDECODE": "1", "CLAUDE_CODE_ENTRYPOINT": "cli", "CLAUDE_CODE_CHILD_SESSION": "1",
    "CLAUDE_CODE_SESSION_ID": "parent-session", "CLAUDE_CODE_SSE_PORT": "41234", "CLAUDE_PID": "4242",
    "CLAUDE_CODE_MESSAGING_TOKEN": "tok", "CLAUDE_ENV_FILE": "/tmp/parent-env.sh",
    "CODEX_SANDBOX": "seatbelt", "CODEX_SANDBOX_NETWORK_DISABLED": "1", "CODEX_THREAD_ID": "t-1",
    "GEMINI_CLI": "1", "AUTOMATON_APPROVER": "alice", "AUTOMATON_TASK": "human-task",
    "GIT_DIR": "/elsewhere/.git", "GIT_WORK_TREE": "/elsewhere", "GIT_INDEX_FILE": "/elsewhere/.git/index",
    "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.hooksPath", "GIT_CONFIG_VALUE_0": "/dev/null",
    "GIT_CONFIG_PARAMETERS": "'core.hookspath'='/dev/null'",
}
USER_CONFIG = {
    "ANTHROPIC_API_KEY": "sk-test", "CLAUDE_CODE_USE_BEDROCK": "1", "CLAUDE_CODE_USE_VERTEX": "1",
    "CLAUDE_CODE_OAUTH_TOKEN": "oauth", "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "4096", "CODEX_HOME": "/home/u/.codex",
    "CODEX_API_KEY": "ck", "GEMINI_API_KEY": "gk", "AUTOMATON_HOME": "/opt/automaton-home",
    "GIT_AUTHOR_NAME": "Agent Author",
}


def fake_claude_that_refuses_when_nested(fake_bin: Any, seen: Path) -> None:
    """A `claude` that behaves like the real one: refuses with CLAUDECODE set, else prints a result."""
    fake_bin("claude", f"""
        sys.stdin.read()
        open({str(seen)!r}, "w").write(json.dumps(dict(os.environ)))
        if os.environ.get("CLAUDECODE"):
            sys.stderr.write({NESTED!r})
            sys.exit(1)
        print(json.dumps({RESULT!r}))
        """)


def test_a_run_from_inside_a_claude_session_still_starts_claude(
        fake_bin: Any, make_req: Callable[..., HarnessRequest], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen = tmp_path / "env.json"
    fake_claude_that_refuses_when_nested(fake_bin, seen)
    for key, value in {**PARENT_SESSION, **USER_CONFIG}.items():
        monkeypatch.setenv(key, value)
    req = make_req(env={"AUTOMATON_LOOP": "demo", "AUTOMATON_ITERATION": "3", "AUTOMATON_LOOP_DIR": "/p/loops/demo"})
    res = get("claude").run(req)
    assert res.error is None and res.unavailable is None and res.final_text == "done", res
    env = json.loads(seen.read_text())
    assert sorted(set(PARENT_SESSION) & set(env)) == []
    assert {k: env.get(k) for k in USER_CONFIG} == USER_CONFIG  # credentials and provider choice are kept
    assert (env["AUTOMATON_LOOP"], env["AUTOMATON_ITERATION"], env["AUTOMATON_ROLE"]) == ("demo", "3", "implement")
    assert env["AUTOMATON_LOOP_DIR"] == "/p/loops/demo"


def test_the_same_fake_refuses_when_the_marker_reaches_it(fake_bin: Any, make_req: Callable[..., HarnessRequest],
                                                          tmp_path: Path) -> None:
    """The control: automaton's own variables may set anything, and a CLAUDECODE set there is refused."""
    fake_claude_that_refuses_when_nested(fake_bin, tmp_path / "env.json")
    res = get("claude").run(make_req(env={"CLAUDECODE": "1"}))
    assert res.exit_status == 1
    assert res.unavailable is not None and "inside another Claude Code session" in res.unavailable


def test_environment_strips_the_list_and_layers_automatons_own() -> None:
    inherited = {**PARENT_SESSION, **USER_CONFIG, "PATH": "/usr/bin",
                 "GIT_CONFIG_GLOBAL": "/elsewhere/gitconfig", "AUTOMATON_ROLE": "stale"}
    env = _env.environment(inherited, {"AUTOMATON_LOOP": "demo"}, {"AUTOMATON_ROLE": "verify"})
    assert env == {**USER_CONFIG, "PATH": "/usr/bin", "AUTOMATON_LOOP": "demo", "AUTOMATON_ROLE": "verify"}
    assert inherited["CLAUDECODE"] == "1"  # the input is not changed


def test_the_list_names_only_session_markers_not_user_settings() -> None:
    for name in ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY",
                 "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CODE_SKIP_BEDROCK_AUTH", "ANTHROPIC_BASE_URL",
                 "CODEX_HOME", "CODEX_API_KEY", "GEMINI_API_KEY", "GIT_AUTHOR_EMAIL", "GIT_SSH_COMMAND",
                 "AUTOMATON_LOOP_DIR", "HOME", "PATH"):
        assert not _env.stripped(name), name
    for name in ("CLAUDECODE", "CODEX_SANDBOX", "GEMINI_CLI", "AUTOMATON_APPROVER", "GIT_CONFIG",
                 "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_VALUE_12", "Git_Dir"):
        assert _env.stripped(name), name


def test_the_users_credentials_never_reach_the_agent(fake_bin: Any, make_req: Callable[..., HarnessRequest],
                                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = tmp_path / "env.json"
    fake_claude_that_refuses_when_nested(fake_bin, seen)
    credentials = {"AWS_SECRET_ACCESS_KEY": "a", "AWS_SESSION_TOKEN": "b", "GITHUB_TOKEN": "c", "GH_TOKEN": "d",
                   "NPM_TOKEN": "e", "TWINE_PASSWORD": "f", "DOCKER_AUTH_CONFIG": "g", "SSH_AUTH_SOCK": "/tmp/agent.s",
                   "GPG_AGENT_INFO": "h"}
    for key, value in {**credentials, **USER_CONFIG}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("CLAUDE_CODE_USE_BEDROCK")  # with it set, the AWS_* variables are the agent's own
    res = get("claude").run(make_req())
    assert res.error is None, res
    env = json.loads(seen.read_text())
    assert sorted(set(credentials) & set(env)) == []
    assert env["ANTHROPIC_API_KEY"] == "sk-test" and env["CLAUDE_CODE_OAUTH_TOKEN"] == "oauth"


def test_every_harness_gets_pwd_set_to_its_working_directory(fake_bin: Any, make_req: Any,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # opencode 1.18.33 resolves its project from $PWD: an inherited one pointed it elsewhere.
    from automaton.harnesses import get

    monkeypatch.setenv("PWD", "/somewhere/else")
    fake_bin("opencode", "print(json.dumps({'type': 'text', 'part': {'text': os.environ['PWD']}}))")
    req = make_req()
    assert get("opencode").run(req).final_text == str(req.cwd)


@pytest.mark.parametrize("entry", ["", ".", "bin"])
def test_a_program_the_agent_left_in_its_worktree_never_stands_in_for_the_cli(
        entry: str, fake_bin: Any, make_req: Callable[..., HarnessRequest], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # An empty or relative PATH entry names the role's working directory, the worktree the agent
    # writes: a `claude` left there would run instead of the real one and report its own cost.
    fake_claude_that_refuses_when_nested(fake_bin, tmp_path / "env.json")
    req = make_req()
    (req.cwd / "bin").mkdir()
    for planted in (req.cwd / "claude", req.cwd / "bin" / "claude"):
        planted.write_text('#!/bin/sh\necho \'{"type": "result", "is_error": false, "total_cost_usd": 0.0001}\'\n')
        planted.chmod(0o755)
    monkeypatch.setenv("PATH", entry + os.pathsep + os.environ["PATH"])
    res = get("claude").run(req)
    assert res.error is None and res.cost_usd == 0.01, res
    assert _env.absolute_path(f"{entry}{os.pathsep}/usr/bin{os.pathsep}rel/x") == "/usr/bin"


@pytest.mark.parametrize("handed", [{"AUTOMATON_RECORD_KEY": "ab" * 32},
                                    {"AUTOMATON_RECORD_KEY_FILE": "/var/run/automaton/record-key/record-key"}])
def test_the_record_key_and_push_credentials_never_reach_the_agent(
        fake_bin: Any, make_req: Callable[..., HarnessRequest], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        handed: dict[str, str]) -> None:
    """A runner handed the record key as a secret (a CI job, a pod) starts the agent without it
    and without the token that could push; the agent's processes learn only that it is withheld."""
    seen = tmp_path / "env.json"
    fake_claude_that_refuses_when_nested(fake_bin, seen)
    for key, value in {**handed, "GITHUB_TOKEN": "ghs_x", "GIT_TOKEN": "t", "AUTOMATON_GIT_TOKEN": "g",
                       "ANTHROPIC_API_KEY": "sk"}.items():
        monkeypatch.setenv(key, value)
    res = get("claude").run(make_req())
    assert res.error is None, res
    env = json.loads(seen.read_text())
    assert {"AUTOMATON_RECORD_KEY", "AUTOMATON_RECORD_KEY_FILE", "GITHUB_TOKEN", "GIT_TOKEN",
            "AUTOMATON_GIT_TOKEN"}.isdisjoint(env)
    assert ("ab" * 32) not in json.dumps(env)
    assert env["AUTOMATON_RECORD_KEY_WITHHELD"] == "1" and env["ANTHROPIC_API_KEY"] == "sk"


def test_no_withheld_marker_without_a_handed_key() -> None:
    assert "AUTOMATON_RECORD_KEY_WITHHELD" not in _env.environment({"PATH": "/usr/bin"})
    assert _env.environment({"AUTOMATON_RECORD_KEY": "x"})["AUTOMATON_RECORD_KEY_WITHHELD"] == "1"
