"""End-to-end tests against the real agent CLIs (pinned in clis.lock.json) and scripted model
servers. Skipped with one line when npm/node is missing; AUTOMATON_E2E_REQUIRED=1 makes that a
failure (CI)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.install import Missing, install


@pytest.fixture(scope="session")
def agent_cli() -> Callable[[str, str], Path]:
    """Factory: agent_cli(npm package, executable) -> the installed executable's path."""

    def get(package: str, executable: str) -> Path:
        try:
            return install(package, executable)
        except Missing as exc:
            if os.environ.get("AUTOMATON_E2E_REQUIRED") == "1":
                pytest.fail(f"e2e required but not runnable: {exc}")
            pytest.skip(f"e2e skipped: {exc}")
        raise AssertionError("unreachable")  # pragma: no cover

    return get
