"""What the Codex, Gemini CLI and OpenCode suites share: a verify command that scores whether
the agent wrote `src/app.py`, and the recorder that keeps what a real CLI printed.

`committed_tick(proj, cli, name)`: one tick of loop "demo" that must run, commit and score 1.0;
its run folder and transcript (recorded as `name`).

`record(cli, name, text)`: with AUTOMATON_E2E_RECORD=1, writes `text` to
`tests/e2e/recorded/<cli>-<pinned version>/<name>`, the fixtures tests/harnesses checks the fakes
against; otherwise does nothing.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from automaton.runner.tick import tick
from tests.e2e.install import pinned

RECORDED = Path(__file__).with_name("recorded")
VERIFY = {"implement": {"prompt": "implement.md"},
          "verify": {"command": [sys.executable, "-c",
                                 "import pathlib; print('1 passed' if pathlib.Path('src/app.py').exists()"
                                 " else '1 failed')"], "score": "summary"},
          "orchestrate": {"builtin": True}}


def record(cli: str, name: str, text: str) -> None:
    if os.environ.get("AUTOMATON_E2E_RECORD") == "1":
        folder = RECORDED / f"{cli}-{pinned()[cli].version}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")


def committed_tick(proj: Any, cli: str, name: str) -> tuple[Any, Path, str]:
    """(the tick's outcome, its run folder, the implement transcript) of a tick that ran
    without a halt, recorded the pinned `cli` version in tick.json, committed and scored 1.0."""
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["halt"] is None, out.lines
    run = Path(out.data["run_dir"])
    assert json.loads((run / "tick.json").read_text())["agent_version"] == pinned()[cli].version
    log = (run / "implement.log").read_text()
    record(cli, name, log)
    assert out.data["commit"] and out.data["verdict"]["score"] == 1.0, (log[-3000:],
                                                                         (run / "implement.stderr.log").read_text())
    return out, run, log
