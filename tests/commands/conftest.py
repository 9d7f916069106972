"""Fixtures shared by the state-remote tests of this folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runner import fleetkit as fk


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> fk.Fleet:
    """fleetkit's fleet, published by one tick of the seed: 2 fresh clones, each its own HOME."""
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    return fk.published(tmp_path)
