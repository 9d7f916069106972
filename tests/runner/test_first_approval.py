"""A loop no human has seen never ticks: not its agent, not its verify command, not its notify command."""

from __future__ import annotations

import sys
from pathlib import Path

from automaton.runner.tick import tick
from automaton.store import loops as store
from tests.helpers import approve_first
from tests.runner.loopkit import make_loop

PY = sys.executable


def test_the_first_tick_of_an_unapproved_unconfined_loop_does_not_run(project: Path) -> None:
    # What an agent would plant: a project template with the sandbox off and a notify command.
    # Before the fix --create-loop sealed it and the first tick ran the agent unconfined.
    ran, told = project / "agent-ran", project / "notified"
    agent = f"import pathlib; pathlib.Path({str(ran)!r}).write_text('x')"
    notify = f"import pathlib; pathlib.Path({str(told)!r}).write_text('x')"
    proj = make_loop(project, approve=False, sandbox="off",
                     harness={"name": "command", "command": [PY, "-c", agent], "args": []},
                     notify={"command": [PY, "-c", notify]})
    state = store.read_state(proj, "demo")
    assert (state.status, state.halt_reason) == ("halted", "human_intervention")
    assert state.halt_detail.startswith("first_approval: ") and '"sandbox": "off"' in state.halt_detail
    out = tick(proj, "demo")
    assert out.code == 1 and out.data["ran"] is False
    assert not ran.exists() and not told.exists()
    assert store.read_state(proj, "demo").iteration_count == 0

    approve_first(project, "demo")  # a human read the whole loop.json and said yes
    assert tick(proj, "demo").code == 0 and ran.exists()
