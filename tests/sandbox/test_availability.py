"""available(), and refusing when there is no sandbox: never run unconfined."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from automaton.core.sandbox import Policy
from automaton.sandbox import SandboxError, available, confine_self, preexec


def test_the_test_switch_makes_it_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert available().ok or not sys.platform.startswith("linux")
    monkeypatch.setenv("AUTOMATON_SANDBOX_UNAVAILABLE", "1")
    found = available()
    assert not found.ok and found.mechanism == "none" and found.abi == 0
    assert '"sandbox": "off"' in found.detail and "\n" not in found.detail
    monkeypatch.setenv("AUTOMATON_SANDBOX_UNAVAILABLE", "0")
    assert available().ok == sys.platform.startswith("linux")


def test_unavailable_means_refusal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AUTOMATON_SANDBOX_UNAVAILABLE", "1")
    policy = Policy((tmp_path,))
    with pytest.raises(SandboxError, match="sandbox unavailable"):
        preexec(policy)
    with pytest.raises(SandboxError, match="sandbox unavailable"):
        confine_self(policy)  # raises before touching this (test) process


def test_detail_says_what_is_in_force() -> None:
    found = available()
    if sys.platform.startswith("linux"):
        assert found.detail.startswith(f"Landlock ABI {found.abi}")
