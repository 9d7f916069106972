"""agents: each agent CLI's own state under home, never its settings."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from automaton.sandbox import agent_state_dirs


def test_claude_state_but_not_its_settings(tmp_path: Path) -> None:
    paths = agent_state_dirs("claude", tmp_path)
    rel = {str(p.relative_to(tmp_path)) for p in paths}
    assert {".claude/projects", ".claude/todos", ".claude/shell-snapshots", ".claude/statsig", ".claude/session-env",
            ".claude/ide", ".claude.json"} <= rel
    for settings in (".claude", ".claude/settings.json", ".claude/settings.local.json", ".claude/CLAUDE.md",
                     ".claude/hooks", ".claude/agents", ".claude/commands", ".claude/skills", ".claude/plugins"):
        assert settings not in rel
    assert (tmp_path / ".claude" / "projects").is_dir()
    assert stat.S_IMODE((tmp_path / ".claude" / "todos").stat().st_mode) == 0o700
    assert not (tmp_path / ".claude.json").exists()  # files are never created


@pytest.mark.parametrize(("harness", "has", "never"), [
    ("codex", {".codex/sessions", ".codex/log", ".codex/history.jsonl", ".codex/sqlite", ".codex/thread-writer-locks",
               ".codex/installation_id"},
     {".codex", ".codex/config.toml", ".codex/skills", ".codex/tmp", ".codex/shell_snapshots", ".codex/AGENTS.md"}),
    ("gemini", {".gemini/tmp"}, {".gemini", ".gemini/settings.json"}),
    ("opencode", {".local/share/opencode", ".local/state/opencode"}, {".config/opencode"}),
    ("aider", {".aider/caches"}, {".aider.conf.yml"}),
])
def test_other_agents(tmp_path: Path, harness: str, has: set[str], never: set[str]) -> None:
    rel = {str(p.relative_to(tmp_path)) for p in agent_state_dirs(harness, tmp_path)}
    assert rel == has and not rel & never


@pytest.mark.parametrize("harness", ["command", "scripted", "no-such-agent"])
def test_no_state(tmp_path: Path, harness: str) -> None:
    assert agent_state_dirs(harness, tmp_path) == ()
    assert list(tmp_path.iterdir()) == []


def test_an_uncreatable_folder_is_still_named(tmp_path: Path) -> None:
    (tmp_path / ".gemini").write_text("a file where a folder should be")
    assert agent_state_dirs("gemini", tmp_path) == (tmp_path / ".gemini" / "tmp",)


def test_codex_gets_its_installation_id_file_and_its_sqlite_folder(tmp_path: Path) -> None:
    from automaton.sandbox import session_env

    link_target = tmp_path / "elsewhere"
    agent_state_dirs("codex", tmp_path)
    made = tmp_path / ".codex" / "installation_id"
    assert made.read_bytes() == b"" and stat.S_IMODE(made.stat().st_mode) == 0o600
    made.write_text("id-1")
    agent_state_dirs("codex", tmp_path)
    assert made.read_text() == "id-1"  # an existing one is kept
    made.unlink()
    made.symlink_to(link_target)
    agent_state_dirs("codex", tmp_path)
    assert not link_target.exists()  # never created through a link
    assert session_env("codex", tmp_path, {}) == {"CODEX_SQLITE_HOME": str(tmp_path / ".codex" / "sqlite")}
    assert session_env("codex", tmp_path, {"CODEX_SQLITE_HOME": "/mine"}) == {}  # the user's choice wins
    assert session_env("claude", tmp_path, {}) == {}


def test_a_private_home_copies_settings_links_state_and_reports_what_it_could_not_copy(tmp_path: Path) -> None:
    from automaton.sandbox import private_home

    home, tmp = tmp_path / "home", tmp_path / "session"
    tmp.mkdir()
    real = home / ".gemini"
    (real / "extensions" / "e").mkdir(parents=True)
    (real / "settings.json").write_text("{}")
    (real / "extensions" / "e" / "link").symlink_to("/nowhere")
    (real / "history").mkdir()  # not copied: neither settings nor linked state
    os.mkfifo(real / "GEMINI.md")  # a FIFO would hang the copy: reported, skipped
    env, problems = private_home("gemini", home, tmp, {})
    mine = tmp / "gemini-gemini_cli_home" / ".gemini"
    assert env == {"GEMINI_CLI_HOME": str(tmp / "gemini-gemini_cli_home")}
    assert (mine / "settings.json").read_text() == "{}"
    assert (mine / "extensions" / "e" / "link").is_symlink()
    assert os.readlink(mine / "tmp") == str(real / "tmp") and not (mine / "history").exists()
    assert len(problems) == 1 and "GEMINI.md: not a regular file" in problems[0]
    other = tmp_path / "mine"
    (other / ".gemini").mkdir(parents=True)
    (other / ".gemini" / "settings.json").write_text('{"from": "GEMINI_CLI_HOME"}')
    tmp2 = tmp_path / "session2"
    tmp2.mkdir()
    env, _ = private_home("gemini", home, tmp2, {"GEMINI_CLI_HOME": str(other)})
    assert (Path(env["GEMINI_CLI_HOME"]) / ".gemini" / "settings.json").read_text() == '{"from": "GEMINI_CLI_HOME"}'
    assert private_home("claude", home, tmp, {}) == ({}, [])
