"""Task claims (`store.claims`): one loop per task, decided under a kernel lock; two processes
racing for one task end with exactly one claim; a claim of a halted, complete or removed loop
no longer holds; a claim never lands while another bound loop's tick holds its lock."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from automaton.core.errors import CorruptState
from automaton.store import claims
from automaton.store.layout import Project
from automaton.store.locks import Busy, locked
from automaton.store.loops import Loop
from tests.commands.loopkit import loop_with
from tests.helpers import seed_task


def two_loops(root: Path, **top: object) -> Project:
    seed_task(root, "t", "implement")
    loop_with(root, "one", **top)
    return loop_with(root, "two", **top)


def _race(root: str, loop: str, task: str, start: multiprocessing.synchronize.Event,  # type: ignore[name-defined]
          results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    start.wait()
    try:
        claims.claim(Project(Path(root)), task, loop)
        results.put((loop, task, "won"))
    except Busy:
        results.put((loop, task, "busy"))


def test_two_processes_racing_for_a_task_end_with_exactly_one_claim(project: Path) -> None:
    p = two_loops(project)
    ctx = multiprocessing.get_context("spawn")
    rounds = 8
    for n in range(rounds):
        seed_task(project, f"r{n}", "implement")
    start, results = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(str(p.root), loop, f"r{n}", start, results))
             for n in range(rounds) for loop in ("one", "two")]
    for proc in procs:
        proc.start()
    start.set()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    got = [results.get(timeout=5) for _ in procs]
    for n in range(rounds):
        outcomes = sorted(o for loop, task, o in got if task == f"r{n}")
        assert outcomes == ["busy", "won"], (n, got)
        winner = next(loop for loop, task, o in got if task == f"r{n}" and o == "won")
        assert claims.read(p, f"r{n}").loop == winner  # type: ignore[union-attr]


def test_a_claim_is_idempotent_and_refuses_another_live_loop(project: Path) -> None:
    p = two_loops(project)
    made, stale = claims.claim(p, "t", "one")
    assert stale is None and made.loop == "one"
    assert claims.claim(p, "t", "one")[0] == made
    with pytest.raises(Busy, match="claimed by loop one"):
        claims.claim(p, "t", "two")
    assert claims.holder(p, "t", "two") == made and claims.holder(p, "t", "one") is None


def test_a_halted_holder_releases_the_task(project: Path) -> None:
    p = two_loops(project)
    claims.claim(p, "t", "one")
    from automaton.commands.halts import halt_now

    halt_now(Loop.resolve(p, "one"), "human_intervention", "test", "test")
    assert claims.holder(p, "t", "two") is None
    made, stale = claims.claim(p, "t", "two")
    assert made.loop == "two" and stale is not None and stale.loop == "one"


def test_a_removed_holder_leaves_no_claim(project: Path, approver: str) -> None:
    from automaton.commands.lifecycle import remove_loop

    p = two_loops(project)
    claims.claim(p, "t", "one")
    out = remove_loop(p, "one")
    assert out.data["claims_released"] == ["t"]
    assert claims.read(p, "t") is None


def test_no_claim_lands_while_a_bound_loops_tick_runs(project: Path) -> None:
    p = two_loops(project, task="t")
    with locked(Loop.resolve(p, "two").tick_lock, timeout_s=0), pytest.raises(Busy, match="a tick of loop two"):
        claims.claim(p, "t", "one")
    assert claims.read(p, "t") is None
    claims.claim(p, "t", "one")  # once the tick has ended
    assert claims.tick_refusal(p, ["t"], "two") is not None and claims.tick_refusal(p, ["t"], "one") is None


def test_a_claim_file_that_is_not_a_claim_fails_closed(project: Path) -> None:
    p = two_loops(project)
    claims.claim(p, "t", "one")
    path = claims.claim_file(p, "t")
    path.write_text(json.dumps({"schema_version": 1, "task": "other", "loop": "one", "claimed_at": "x"}))
    with pytest.raises(CorruptState, match="not a claim of task t"):
        claims.claim(p, "t", "two")


def test_a_holder_whose_state_cannot_be_read_keeps_its_claim(project: Path) -> None:
    """Fail closed: a holder whose state is tampered (or its key hidden, its disk failing) is
    not gone; only a loop with no folder, or neither state nor log, lets the claim go."""
    p = two_loops(project)
    made, _ = claims.claim(p, "t", "one")
    state = Loop.resolve(p, "one").state_file
    before = state.read_bytes()
    after = before.replace(b'"iteration_count": 0', b'"iteration_count": 7')
    assert after != before
    state.write_bytes(after)
    assert claims.holder(p, "t", "two") == made
    with pytest.raises(Busy, match="claimed by loop one"):
        claims.claim(p, "t", "two")
