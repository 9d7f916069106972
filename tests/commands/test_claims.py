"""`automaton --claim-loop-task NAME --task T` through the CLI: exit codes and lines."""

from __future__ import annotations

from pathlib import Path

from tests.commands.loopkit import loop_with
from tests.helpers import git, run_cli, seed_task


def test_claim_through_the_cli(project: Path) -> None:
    seed_task(project, "t", "implement")
    loop_with(project, "one", task="t")
    loop_with(project, "two")
    root = str(project)
    res = run_cli("--claim-loop-task", "one", "--task", "t", "--project", root, "--json")
    assert res.code == 0, res.err
    assert res.json["loop"] == "one" and res.json["task"] == "t" and res.json["bound"] is True
    again = run_cli("--claim-loop-task", "two", "--task", "t", "--project", root)
    assert again.code == 1 and "claimed by loop one" in again.err
    # the claims folder is runtime state: git never sees it
    assert ".automaton/claims" not in git(project, "status", "--porcelain", "--untracked-files=all")


def test_claim_needs_a_task_and_a_real_one(project: Path) -> None:
    loop_with(project, "one")
    root = str(project)
    assert run_cli("--claim-loop-task", "one", "--project", root).code == 2
    res = run_cli("--claim-loop-task", "one", "--task", "nope", "--project", root)
    assert res.code == 2 and "unknown task nope" in res.err
    seed_task(project, "t", "implement")
    res = run_cli("--claim-loop-task", "one", "--task", "t", "--project", root)
    assert res.code == 0 and "not bound to task t" in res.err
    assert run_cli("--claim-loop-task", "ghost", "--task", "t", "--project", root).code == 2


def test_a_halted_loop_is_told_its_claim_holds_only_once_approved(project: Path) -> None:
    seed_task(project, "t", "implement")
    loop_with(project, "one", task="t", first_approval=False)  # halted, waiting for its first approval
    res = run_cli("--claim-loop-task", "one", "--task", "t", "--project", str(project))
    assert res.code == 0 and "holds once a human approves it" in res.err
