"""Only `--dashboard` pays for the web stack: the hook, `--check-gate` and `--loop-list` import
no part of it (tests/test_imports.py has the helper and the other rules of those paths)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.commands.loopkit import loop_with
from tests.test_imports import imported, offending

WEB = ("automaton.dashboard", "starlette", "uvicorn", "jinja2", "markupsafe", "multipart", "python_multipart",
       "anyio", "h11", "httptools")


def test_the_frequent_paths_import_no_web_stack(project: Path) -> None:
    loop_with(project)
    for args in (["--check-gate", "demo", "--json"], ["--loop-list", "--json"], ["--audit", "--project", str(project)]):
        assert offending(imported("automaton.cli.main", args, project), WEB) == set(), args
    payload = json.dumps({"cwd": str(project), "hook_event_name": "PreToolUse", "tool_name": "Write",
                          "tool_input": {"file_path": str(project / "src" / "x.py"), "content": "x\n"}})
    names = imported("automaton.cli.main", ["--hook", "claude"], project, payload, dict(os.environ))
    assert "automaton.hooks.policy" in names and offending(names, WEB) == set()


def test_the_dashboard_verb_is_the_one_that_imports_it(project: Path) -> None:
    loop_with(project)
    names = imported("automaton.cli.main", ["--dashboard", "--host", "0.0.0.0"], project)
    assert "automaton.dashboard.server" in names  # refused (exit 2) after the lazy import
