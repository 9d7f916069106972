"""README.md#harnesses shows a `command` harness block for loop.json: it is what the loop.json
validator (core/loopconfig.py) accepts, in the README's own loop.json example."""

from __future__ import annotations

import json
import re
from pathlib import Path

from automaton.core.loopconfig import parse_config
from tests.core.test_loopconfig import DEFAULTS, cfg

README = Path(__file__).resolve().parents[2] / "README.md"


def command_harness_block() -> dict[str, object]:
    """The README's one json block that is a `"harness": {"name": "command", …}` entry."""
    blocks = re.findall(r"```json\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)
    found = [b for b in blocks if '"name": "command"' in b and b.lstrip().startswith('"harness"')]
    assert len(found) == 1, "README.md must show one command harness block"
    value: dict[str, object] = json.loads("{" + found[0] + "}")["harness"]
    return value


def test_the_readme_command_harness_example_validates() -> None:
    harness = command_harness_block()
    parsed = parse_config(cfg(harness=harness), "README.md", DEFAULTS)
    assert parsed.harness.name == "command" and parsed.harness.command == harness["command"]
    assert parsed.harness.timeout_s == harness["timeout_s"]
