"""Harness test helpers: a request in tmp_path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.harnesses import HarnessRequest


@pytest.fixture
def make_req(tmp_path: Path) -> Callable[..., HarnessRequest]:
    work = tmp_path / "work"
    work.mkdir()

    def make(**kw: Any) -> HarnessRequest:
        base: dict[str, Any] = {"role": "implement", "prompt": "fix the tests", "cwd": work,
                                "timeout_s": 60, "run_dir": tmp_path / "runs" / "1"}
        base.update(kw)
        return HarnessRequest(**base)

    return make
