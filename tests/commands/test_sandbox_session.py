"""`commands.sandbox_session`: the note for a codex session that keeps Codex's own sandbox, and
gemini's private home."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from automaton.commands.sandbox_session import _codex_note, plan
from automaton.store.layout import Project


@pytest.mark.parametrize(("argv", "noted"), [
    (["codex"], True), (["codex", "exec", "-"], True),
    (["codex", "--sandbox", "danger-full-access"], False), (["codex", "--sandbox=danger-full-access"], False),
    (["codex", "-s", "read-only"], False), (["codex", "--dangerously-bypass-approvals-and-sandbox"], False),
    (["claude"], False),
])
def test_a_codex_session_with_its_own_sandbox_on_is_told_how_to_start(argv: list[str], noted: bool) -> None:
    agent = "codex" if argv[0] == "codex" else "claude"
    lines = _codex_note(agent, argv)
    assert bool(lines) is noted
    assert all("--sandbox danger-full-access" in line for line in lines)


def test_a_gemini_session_runs_on_a_private_copy_of_its_home(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """gemini-cli 0.61.0 cannot start unless it creates files in ~/.gemini (tests/e2e): the session
    points GEMINI_CLI_HOME at a copy in its temp folder, never granting ~/.gemini itself."""
    monkeypatch.chdir(project)
    home = Path(os.environ["HOME"])
    real = home / ".gemini"
    real.mkdir()
    (real / "settings.json").write_text('{"security": {}}')
    (real / "projects.json").write_text('{"projects": {}}')
    (real / "commands").mkdir()
    (real / "commands" / "c.toml").write_text("x")
    session = plan(Project.at(project), None, ["gemini"], home=home)
    private = Path(session.env["GEMINI_CLI_HOME"]) / ".gemini"
    assert session.policy.tmpdir is not None and private.parent.parent == session.policy.tmpdir
    assert (private / "settings.json").read_text() == '{"security": {}}'
    assert (private / "projects.json").exists() and (private / "commands" / "c.toml").exists()
    assert (private / "tmp").resolve() == (real / "tmp").resolve() and (real / "tmp").is_dir()
    writable = set(session.policy.writable)
    assert real not in writable and real / "settings.json" not in writable and real / "tmp" in writable
    (private / "settings.json").write_text("{}")  # what the agent writes in the copy stays there
    assert (real / "settings.json").read_text() == '{"security": {}}'
    assert "GEMINI_CLI_HOME" not in plan(Project.at(project), None, ["claude"], home=home).env


def test_an_opencode_session_gets_a_private_config_copy_and_cache(project: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """opencode 1.18.33 writes ~/.config/opencode and creates ~/.cache/opencode at start
    (tests/e2e): both hold code a later opencode loads, so neither is granted."""
    monkeypatch.chdir(project)
    home = Path(os.environ["HOME"])
    config = home / ".config" / "opencode"
    config.mkdir(parents=True)
    (config / "opencode.json").write_text('{"plugin": []}')
    session = plan(Project.at(project), None, ["opencode", "run"], home=home)
    mine = Path(session.env["XDG_CONFIG_HOME"]) / "opencode"
    cache = Path(session.env["XDG_CACHE_HOME"]) / "opencode"
    assert (mine / "opencode.json").read_text() == '{"plugin": []}' and cache.is_dir() and not list(cache.iterdir())
    tmp = session.policy.tmpdir
    assert tmp is not None and tmp in mine.parents and tmp in cache.parents
    writable = set(session.policy.writable)
    assert config not in writable and home / ".cache" / "opencode" not in writable
    assert home / ".local" / "share" / "opencode" in writable
