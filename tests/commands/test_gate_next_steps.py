"""Every refusal of `--check-gate` ends with one line naming the next step (or that none is needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from automaton.commands import loops as uc
from automaton.commands.halts import halt_now
from automaton.store.layout import Project
from automaton.store.loops import Loop
from tests.commands.test_loops import DEATHS, _cause, cli
from tests.helpers import via_json
from tests.store.test_loops import make_loop, state_file


def step(p: Project, name: str = "demo") -> str:
    """The gate's text output for `name`, which must refuse; returns its next-step line."""
    out = uc.check_gate(p, name)
    assert out.code == 1, out.lines
    found = [line for line in out.lines if line.startswith("  next step: ")]
    assert len(found) == 1, out.lines
    return found[0].removeprefix("  next step: ")


def test_paused(project: Path) -> None:
    p = make_loop(project)
    assert uc.pause_loop(p, "demo").ok
    assert step(p) == "automaton --resume-loop demo"


def test_complete(project: Path) -> None:
    from automaton.store import loops

    p = make_loop(project)
    loops.update_state(p, "demo", via_json("TICK", {}, lambda s: s.update(status="complete")))
    assert step(p) == "automaton --rearm-loop demo (more work) or automaton --remove-loop demo (done)"


def test_waiting_for_a_task_sign_off(project: Path) -> None:
    assert cli(project, "--create-task", "feat").code == 0
    assert cli(project, "--transition", "research", "--task", "feat").code == 0
    (project / "tasks" / "feat" / "SPEC.md").write_text("spec\n")
    assert cli(project, "--transition", "research:awaiting_approval", "--task", "feat").code == 0
    p = make_loop(project, task="feat")
    assert step(p) == "a human reviews task feat and signs it off: automaton --approve --task feat"


def test_budget_unknown(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import automaton.vram

    def broken(kv_kib_per_token: float = 128.0) -> dict[str, Any]:
        raise RuntimeError("no GPU")

    monkeypatch.setattr(automaton.vram, "probe", broken)
    p = make_loop(project, harness={"name": "command", "command": ["llm"], "local": True},
                  brakes={"max_budget_usd": None})
    assert step(p).startswith("make the VRAM probe work (automaton --doctor --loop demo shows it)")


def test_task_untracked(project: Path) -> None:
    (project / "tasks" / "legacy").mkdir(parents=True)
    (project / "tasks" / "legacy" / "SPEC.md").write_text("old task, no .state\n")
    p = make_loop(project, task="legacy")
    assert step(p) == "automaton --phase --task legacy (records the task's phase), then the next tick runs"


def test_task_tampered(project: Path) -> None:
    assert cli(project, "--create-task", "feat").code == 0
    p = make_loop(project, task="feat")
    state = project / "tasks" / "feat" / ".state"
    state.write_text(state.read_text().replace("new", "complete"))
    assert step(p) == "a human checks task feat and re-seals it: automaton --approve --task feat --to PHASE"


def test_state_tampered(project: Path) -> None:
    p = make_loop(project)
    state_file(p).write_text(state_file(p).read_text().replace('"iteration_count": 0', '"iteration_count": 1'))
    assert step(p) == "a human fixes the cause above, then runs automaton --approve --loop demo"


@pytest.mark.parametrize("death", DEATHS)
def test_each_halt_new_and_recorded(project: Path, death: str) -> None:
    p = _cause(death, project)
    first, again = step(p), step(p)  # the halt applied now, then the recorded one
    assert first == again and first.endswith("automaton --approve --loop demo")
    if death == "verifier_failed":
        assert first.startswith("check the verify command with automaton --doctor --loop demo")


def test_a_halt_for_unscored_ticks_names_the_doctor(project: Path) -> None:
    p = make_loop(project)
    halt_now(Loop.resolve(p, "demo"), "verifier_failed", "unscored: 3 ticks in a row without a score;"
             " check the verify command with automaton --doctor --loop demo", "unscored")
    out = uc.check_gate(p, "demo")
    assert any("unscored: 3 ticks in a row" in line for line in out.lines)
    assert step(p).startswith("check the verify command with automaton --doctor --loop demo")
