"""Fixtures for the end-to-end suite: the pinned real CLIs (installed once into the cache,
`tests.e2e.install`) and their offline environment.

A test that needs a real CLI asks for `installed` (or a fixture built on it, e.g.
`claude_bin`); such tests get the `e2e` marker, which the default pytest run deselects
(pyproject `addopts`: `-m "not e2e"`) and `make e2e` selects. When npm/node is missing or the
install fails the test is skipped with one line, unless `AUTOMATON_E2E_REQUIRED=1` (CI), where
it fails instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.install import InstallError, install

REQUIRED = os.environ.get("AUTOMATON_E2E_REQUIRED") == "1"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "installed" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def installed() -> Callable[[str], Path]:
    """installed(name) -> the pinned CLI's executable; skips (fails when required) if it cannot
    be installed."""
    memo: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in memo:
            try:
                memo[name] = install(name)
            except (InstallError, OSError) as exc:
                message = f"e2e: {name} CLI not available: {exc}"
                if REQUIRED:
                    pytest.fail(f"{message} (AUTOMATON_E2E_REQUIRED=1)", pytrace=False)
                pytest.skip(message)
        return memo[name]

    return get


@pytest.fixture
def claude_bin(installed: Callable[[str], Path]) -> Path:
    """The pinned Claude Code executable."""
    return installed("claude")
