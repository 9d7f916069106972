"""What the Codex, Gemini CLI and OpenCode suites share: a verify command that scores whether
the agent wrote `src/app.py`, and the recorder that keeps what a real CLI printed.

`record(cli, name, text)`: with AUTOMATON_E2E_RECORD=1, writes `text` to
`tests/e2e/recorded/<cli>-<pinned version>/<name>`, the fixtures tests/harnesses checks the fakes
against; otherwise does nothing.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

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
