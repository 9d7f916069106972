"""Fixtures shared by the state-remote tests of this folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from automaton.git import remote as git_remote
from tests.runner import fleetkit as fk


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> fk.Fleet:
    """fleetkit's fleet, published by one tick of the seed: 2 fresh clones, each its own HOME."""
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    return fk.published(tmp_path)


class LostLeases:
    """Every push from here on loses its lease (another runner moved the ref first), on a fake
    clock: `waits` are the seconds slept between attempts (none really), `pushes` counts them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 0.0
        self.waits: list[float] = []
        self.pushes = 0
        monkeypatch.setattr(git_remote, "PACING", git_remote.Pacing(self._sleep, lambda: self.now))
        monkeypatch.setattr(git_remote, "push", self._push)

    def _sleep(self, s: float) -> None:
        self.waits.append(s)
        self.now += s

    def _push(self, *_: object, **__: object) -> git_remote.Pushed:
        self.pushes += 1
        self.now += 10.0  # a slow remote: ~a dozen attempts in the bound, each a real fetch
        return git_remote.Pushed(False, True, "the remote moved since the fetch")


@pytest.fixture
def lost_leases(monkeypatch: pytest.MonkeyPatch) -> Callable[[], LostLeases]:
    """Call it once the remote is set up: from then on every push is lost (LostLeases)."""
    return lambda: LostLeases(monkeypatch)
