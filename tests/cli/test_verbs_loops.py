"""The widening commands (`--create-loop`, `--install-schedule`) are human acts in the CLI
itself: an agent that gets past its hook is still refused (exit 1, one line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.commands.loopkit import loop_with
from tests.helpers import run_cli

WIDENING = [
    ("--create-loop", "nightly", "--from-template", "ci-triage"),
    ("--install-schedule", "nightly"),
]


def existing(project: Path, argv: tuple[str, ...]) -> set[str]:
    """The loop `--install-schedule` names exists (a misspelt name is refused first, exit 2);
    returns what the loop folder holds before the act."""
    if argv[0] == "--install-schedule":
        loop_with(project, "nightly")
    folder = project / ".automaton" / "loops" / "nightly"
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


@pytest.mark.parametrize("argv", WIDENING)
def test_refused_without_a_human(project: Path, argv: tuple[str, ...]) -> None:
    before = existing(project, argv)
    result = run_cli(*argv, "--project", str(project), human=False)
    assert result.code == 1, result.err
    assert len(result.err.splitlines()) == 1 and argv[0] in result.err
    folder = project / ".automaton" / "loops" / "nightly"
    assert ({p.name for p in folder.iterdir()} if folder.is_dir() else set()) == before  # nothing made


@pytest.mark.parametrize("argv", WIDENING)
def test_refused_in_an_agents_shell_even_with_an_approver(project: Path, argv: tuple[str, ...],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    existing(project, argv)
    monkeypatch.setenv("AUTOMATON_APPROVER", "someone")
    monkeypatch.setenv("CLAUDECODE", "1")
    result = run_cli(*argv, "--project", str(project))
    assert result.code == 1 and "agent" in result.err, result.err


def test_a_human_creates_and_schedules_a_loop(project: Path, approver: str) -> None:
    assert run_cli(*WIDENING[0], "--project", str(project)).code == 0
    assert (project / ".automaton" / "loops" / "nightly" / "loop.json").is_file()
