"""`runner.ledger`: a tick reserves its worst case before any agent runs, and the budget gate
lets a tick start only when what is left covers it, so spent never passes max_budget_usd
(README "Budgets", the worked example). Issue 24 measured "spent $6.0000 of $5.00" on the
`command` harness: the third tick started with $1 left and was charged $2.

The fake agents print nothing a cost can be read from (each tick is counted at max_tick_usd),
except the scripted one, which reports exactly max_tick_usd. They run unconfined: this is about
the ledger (the sandbox has its own suite)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from automaton.runner.tick import tick
from automaton.store import loops as store
from tests.runner.loopkit import make_loop

PY = sys.executable
VERIFY = {"command": [PY, "-c", "print('1 passed, 1 failed')"], "score": "summary"}
SILENT = "sys.stdin.read() if not sys.stdin.isatty() else None\n"
# harness -> (loop.json harness block, fake executable body or None)
KINDS: dict[str, tuple[dict[str, Any], str | None]] = {
    "command": ({"name": "command", "command": [PY, "-c", "print('did it')"], "args": []}, None),
    "scripted": ({"name": "scripted", "args": ["script.json"]}, None),
    "claude": ({"name": "claude", "args": []}, SILENT),
    "codex": ({"name": "codex", "args": [], "model": "gpt-5"}, SILENT),
    "gemini": ({"name": "gemini", "args": []}, SILENT + "print('{\"response\": \"ok\"}')\n"),
    "opencode": ({"name": "opencode", "args": []}, SILENT),
    "aider": ({"name": "aider", "args": []}, SILENT),
}


def run_until_refused(proj: Any, most: int = 6) -> int:
    ran = 0
    for _ in range(most):
        out = tick(proj, "demo")
        if out.code != 0:
            return ran
        ran += 1
    return ran


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_5_of_2_case_ends_within_the_budget_for_every_harness(project: Path, fake_bin: Any, kind: str) -> None:
    harness, body = KINDS[kind]
    if body is not None:
        fake_bin(kind, body)
    step = {"actions": [{"write": "src/a.txt", "content": "x"}], "text": "did it", "cost_usd": 2.0}
    proj = make_loop(project, harness=harness, sandbox="off", script={"implement": [step] * 5},
                     brakes={"max_budget_usd": 5.0, "max_tick_usd": 2.0},
                     roles={"implement": {"prompt": "implement.md"}, "verify": VERIFY,
                            "orchestrate": {"builtin": True}})
    assert run_until_refused(proj) == 2
    s = store.read_state(proj, "demo")
    assert s.spent_usd == 4.0 and s.spent_usd <= 5.0 and s.iteration_count == 2
    assert (s.status, s.halt_reason) == ("halted", "budget_exhausted")
    assert s.halt_detail == "spent $4.0000 of $5.00; $1.0000 left, a tick reserves $2.0000"


def test_a_tick_with_an_agent_verifier_reserves_max_tick_usd_for_each_role(project: Path, fake_bin: Any) -> None:
    """implement and verify both run the agent; both costs unknown: $2 each. Five dollars cover
    one such tick ($4), not two."""
    fake_bin("claude", SILENT)
    proj = make_loop(project, harness={"name": "claude", "args": []}, sandbox="off",
                     template_files={"verify.md": "Check.\n"}, brakes={"max_budget_usd": 5.0, "max_tick_usd": 2.0},
                     roles={"implement": {"prompt": "implement.md"},
                            "verify": {"prompt": "verify.md", "score": "agent"}, "orchestrate": {"builtin": True}})
    assert run_until_refused(proj) == 1
    s = store.read_state(proj, "demo")
    assert s.spent_usd == 4.0 and s.halt_reason == "budget_exhausted"
    start = next(line for line in (proj.loop_dir(store.require_tracked(proj, "demo")) / ".state.log")
                 .read_text().splitlines() if " TICK_START " in line)
    assert " reserved_usd=4.0 " in start
