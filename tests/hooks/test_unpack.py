"""Files the hook reads (archives, patches, sed/awk scripts, startup files, automaton's own
config): a FIFO or device named there is a denial naming the file, never a hang (a hook that
does not answer in time lets the call through)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Result
from tests.hooks.conftest import assert_allowed, assert_denied

Hook = Callable[..., Result]


def bash(project: Path, command: str) -> dict[str, Any]:
    return {"cwd": str(project), "tool_name": "Bash", "tool_input": {"command": command}}


@pytest.mark.timeout(30)
@pytest.mark.parametrize(("fifo", "command"), [
    ("x.tar", "tar -xf x.tar"),
    ("x.tar", "tar xzf x.tar -C src"),
    ("x.zip", "unzip x.zip"),
    ("p.patch", "git apply p.patch"),
    ("p.diff", "patch -p1 < p.diff"),
    ("p.diff", "patch -p1 -i p.diff"),
    ("s.sed", "sed -f s.sed src/app.py"),
    ("s.awk", "awk -f s.awk src/app.py"),
])
def test_a_fifo_named_as_input_is_denied_at_once(task: Path, project: Path, hook: Hook, fifo: str,
                                                  command: str) -> None:
    os.mkfifo(project / fifo)
    started = time.monotonic()
    assert_denied(hook("claude", bash(project, command)), repr(fifo), "not a regular file")
    assert time.monotonic() - started < 5


@pytest.mark.timeout(30)
def test_a_fifo_startup_file_makes_cdpath_unknown_not_a_hang(task: Path, project: Path, hook: Hook) -> None:
    # The shell would read CDPATH from it: the hook cannot, so a relative cd goes somewhere unknown.
    os.mkfifo(Path.home() / ".bashrc")
    assert_denied(hook("claude", bash(project, "cd src && echo x > app.py")), "cd to an unknown place")


@pytest.mark.timeout(30)
def test_a_fifo_project_config_is_denied_not_waited_on(task: Path, project: Path, hook: Hook) -> None:
    os.mkfifo(project / ".automaton" / "config.json")
    result = hook("claude", {"cwd": str(project), "tool_name": "Write",
                             "tool_input": {"file_path": str(project / "src/app.py"), "content": ""}})
    assert result.code == 2, result.err
    assert "config.json" in result.err


def test_a_patch_larger_than_the_hook_reads_is_denied(task: Path, project: Path, hook: Hook,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from automaton.hooks import unpack

    monkeypatch.setattr(unpack, "MAX_READ", 64)
    (project / "p.diff").write_text("x" * 100 + "\n--- a/.git/config\n+++ b/.git/config\n")
    assert_denied(hook("claude", bash(project, "patch -p1 -i p.diff")), "'p.diff'", "more than the 64")


def test_a_regular_patch_still_reads(task: Path, project: Path, hook: Hook) -> None:
    (project / "p.diff").write_text("--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n")
    assert_allowed(hook("claude", bash(project, "patch -p1 -i p.diff")))
