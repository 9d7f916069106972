"""`commands.sandbox_session`: the note for a codex session that keeps Codex's own sandbox."""

from __future__ import annotations

import pytest

from automaton.commands.sandbox_session import _codex_note


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
