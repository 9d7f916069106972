"""pyproject.toml: the licence, and what a plain install pulls in (the GPU and web stacks are extras)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_licence_is_mit_and_shipped() -> None:
    assert PROJECT["license"] == "MIT" and PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "Copyright (c) 2026 the automaton authors" in text


def test_gpu_and_web_stacks_are_extras() -> None:
    extras = PROJECT["optional-dependencies"]
    assert _names(extras["gpu"]) == {"nvidia-ml-py"}
    assert _names(extras["dashboard"]) == {"starlette", "uvicorn", "jinja2", "python-multipart"}
    assert not (_names(PROJECT["dependencies"]) & (_names(extras["gpu"]) | _names(extras["dashboard"])))
    assert "automaton-framework[gpu,dashboard]" in extras["dev"]  # `make test` installs both


def test_every_dependency_has_a_lower_bound() -> None:
    for req in [*PROJECT["dependencies"], *(r for rs in PROJECT["optional-dependencies"].values() for r in rs)]:
        assert ">=" in req or req.startswith("automaton-framework["), req
