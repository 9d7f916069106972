"""The isolation fixture itself: a write to the real HOME must fail loudly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import REAL_HOME


def test_write_to_real_home_fails() -> None:
    with pytest.raises(PermissionError):
        (REAL_HOME / ".automaton-test-should-not-exist").write_text("x")
    with pytest.raises(PermissionError):
        os.open(REAL_HOME / ".automaton-test-should-not-exist", os.O_WRONLY | os.O_CREAT)
    assert not (REAL_HOME / ".automaton-test-should-not-exist").exists()


def test_home_env_points_to_temporary_folder() -> None:
    assert Path(os.environ["HOME"]).resolve() != REAL_HOME
    assert Path.home().resolve() != REAL_HOME
