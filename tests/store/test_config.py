"""config.md read without blocking: a FIFO at its path is an error (loop defaults) or absent
(the framework version), never a wait (the hook reads the loop defaults in a loop worktree)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from automaton.core.errors import BadInput
from automaton.store import config


@pytest.mark.timeout(30)
def test_a_fifo_config_md_fails_closed_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.mkfifo(tmp_path / "config.md")
    monkeypatch.setenv("AUTOMATON_HOME", str(tmp_path))
    with pytest.raises(BadInput, match=r"config\.md"):
        config.loop_defaults()
