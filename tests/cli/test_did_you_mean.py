"""Unknown flags, loops, tasks and templates: one line with the closest names, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.commands.loopkit import loop_with
from tests.helpers import run_cli, seed_task


def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(("argv", "hint"), [
    (("--craete-loop", "x"), "did you mean --create-loop?"),
    (("--doctor", "--lop", "x"), "did you mean --loop?"),
    (("--transiton", "x"), "did you mean --transition?"),
    (("--list-template",), "did you mean --list-templates?"),
])
def test_an_unknown_flag_names_the_closest(argv: tuple[str, ...], hint: str) -> None:
    done = run_cli(*argv)
    assert done.code == 2 and hint in one_line(done.err)


def test_an_unknown_flag_far_from_any_gets_no_guess() -> None:
    done = run_cli("--zzzzzzzz")
    assert done.code == 2 and "did you mean" not in one_line(done.err)


def test_an_unknown_loop_names_the_closest(project: Path) -> None:
    loop_with(project, name="nightly")
    done = run_cli("--loop-status", "nightyl", "--project", str(project))
    line = one_line(done.err)
    assert done.code == 2 and "unknown loop 'nightyl'; did you mean nightly?" in line


def test_an_unknown_task_names_the_closest(project: Path) -> None:
    seed_task(project, "fix-login", "research")
    seed_task(project, "complete/fix-logout", "complete")
    done = run_cli("--task", "fix-logn", "--transition", "research", "--project", str(project))
    line = one_line(done.err)
    assert done.code == 2 and "unknown task 'fix-logn'; did you mean fix-login?" in line
    done = run_cli("--task", "fix-logot", "--phase", "--project", str(project))
    assert done.code == 2 and "did you mean fix-logout?" in one_line(done.err)


def test_an_unknown_sub_task_names_its_siblings(project: Path) -> None:
    seed_task(project, "parent", "decomposition:approved")
    seed_task(project, "parent/child-one", "new")
    done = run_cli("--task", "parent/child-on", "--phase", "--project", str(project))
    assert done.code == 2 and "did you mean parent/child-one?" in one_line(done.err)


def test_an_unknown_template_names_the_closest(project: Path) -> None:
    done = run_cli("--create-loop", "x", "--from-template", "ci-triag", "--project", str(project))
    assert done.code == 2 and "did you mean ci-triage?" in one_line(done.err)


def test_did_you_mean_keeps_only_the_closest() -> None:
    from automaton.core.names import did_you_mean

    assert did_you_mean("--lop", ["--loop", "--help", "--to"]) == "; did you mean --loop?"
    assert did_you_mean("zzz", ["--loop"]) == ""
    assert did_you_mean("a", []) == ""


def test_automaton_loop_names_the_closest_flag() -> None:
    done = run_cli("--mode", "tick", "--lop", "x", entry="automaton-loop")
    assert done.code == 2 and "did you mean --loop?" in one_line(done.err)


@pytest.mark.parametrize("argv", [
    ("--approve", "--loop", "nightyl"), ("--resume-loop", "nightyl"), ("--rearm-loop", "nightyl"),
    ("--remove-loop", "nightyl"), ("--install-schedule", "nightyl"), ("--upgrade-loops", "--loop", "nightyl"),
    ("--pause-loop", "nightyl"),
])
def test_a_human_act_on_a_misspelt_loop_names_the_closest_before_the_human_check(
        project: Path, argv: tuple[str, ...]) -> None:
    loop_with(project, name="nightly")
    done = run_cli(*argv, "--project", str(project), human=False)  # no terminal, no AUTOMATON_APPROVER
    assert done.code == 2 and "unknown loop 'nightyl'; did you mean nightly?" in one_line(done.err)


@pytest.mark.parametrize("argv", [("--approve", "--task", "fix-logn"), ("--focus", "fix-logn")])
def test_a_human_act_on_a_misspelt_task_names_the_closest_before_the_human_check(
        project: Path, argv: tuple[str, ...]) -> None:
    seed_task(project, "fix-login", "research:awaiting_approval")
    done = run_cli(*argv, "--project", str(project), human=False)
    assert done.code == 2 and "unknown task 'fix-logn'; did you mean fix-login?" in one_line(done.err)


def test_a_human_act_on_a_known_loop_is_still_refused_without_a_human(project: Path) -> None:
    loop_with(project, name="nightly")
    done = run_cli("--resume-loop", "nightly", "--project", str(project), human=False)
    assert done.code == 1 and "is a human sign-off" in one_line(done.err)
