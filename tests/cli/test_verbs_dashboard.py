"""`--dashboard` without the `dashboard` extra: one line naming the extra, exit 2."""

from __future__ import annotations

import sys

import pytest

from tests.helpers import run_cli


@pytest.mark.parametrize("package", ["starlette", "uvicorn", "jinja2"])
def test_a_missing_web_stack_names_the_extra(package: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # find_spec answers None: as if not installed
    res = run_cli("--dashboard", "--port", "0")
    assert res.code == 2
    assert res.err.strip().splitlines() == [
        f"automaton: --dashboard needs the web stack ({package} not installed):"
        " pip install 'automaton-framework[dashboard]'"]
    assert "Traceback" not in res.err and res.out == ""
