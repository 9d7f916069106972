"""`--can-edit`'s decision at its edges: the always-denied rules, the phase scope with project
overrides on a case-insensitive volume, the answer's resolved path, a removed focus."""

from __future__ import annotations

from pathlib import Path

import pytest

from automaton.commands import can_edit
from automaton.commands.can_edit import Decision, decide, protected, task_scope_allows, which_task
from automaton.core.errors import BadInput
from automaton.store.layout import Project
from tests.helpers import seed_task


@pytest.mark.parametrize(("parts", "why"), [
    ((), "the project root itself is not a file"),
    ((".automaton", "x"), ".automaton/ is written only by automaton itself"),
    (("src", ".GIT", "config"), ".git internals are never edited by an agent"),
    (("tasks", "t", ".State"), ".state files are written only by the automaton CLI"),
    ((".Claude",), "agent hook configuration is changed only by a human"),
    (("src", "a.py"), None),
])
def test_protected_says_which_rule(parts: tuple[str, ...], why: str | None) -> None:
    assert protected(parts) == why


def test_no_parts_are_never_in_any_scope() -> None:
    assert task_scope_allows("implement", (), ()) is False


@pytest.mark.parametrize(("fold", "parts", "allowed"), [
    (True, ("SRC", "App.py"), True),
    (True, ("src", "app.py"), True),
    (False, ("SRC", "App.py"), False),
    (False, ("Src", "app.py"), True),
    (True, ("lib", "x.py"), False),
])
def test_overrides_fold_letter_case_only_on_a_case_insensitive_volume(
        fold: bool, parts: tuple[str, ...], allowed: bool) -> None:
    assert task_scope_allows("implement", parts, ("tasks", "t"), fold=fold, override=["Src/**"]) is allowed


def test_the_answer_carries_the_resolved_path(project: Path, tmp_path: Path) -> None:
    proj = Project(project.resolve())
    root = project.resolve()
    assert decide(proj, "src/x.py") == Decision(True, "no task in focus: only the always-denied paths apply",
                                                str(root / "src/x.py"))
    assert decide(proj, ".state") == Decision(False, ".state: .state files are written only by the automaton CLI",
                                              str(root / ".state"))
    outside = tmp_path / "elsewhere.txt"
    assert decide(proj, str(outside)) == Decision(False, f"{outside.resolve()} is outside the project {root}",
                                                  str(outside.resolve()))


def test_a_decision_under_a_task_carries_the_path(project: Path) -> None:
    seed_task(project, "demo", "research")
    proj = Project(project.resolve())
    root = project.resolve()
    got = decide(proj, "src/x.py", task="demo")
    assert got == Decision(False, "src/x.py is outside the scope of task demo at phase 'research'",
                           str(root / "src/x.py"))


def test_a_focus_removed_outside_automaton_never_widens_the_scope(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   ) -> None:
    proj = Project(project.resolve())
    monkeypatch.delenv("AUTOMATON_TASK", raising=False)
    assert which_task(proj, None) is None  # never focused: no task
    proj.dot.mkdir(exist_ok=True)
    (proj.dot / "focus.lock").write_text("")
    with pytest.raises(BadInput, match=r"focus\.lock shows a focus was set: they were removed outside automaton"):
        which_task(proj, None)
    assert str(which_task(proj, "demo")) == "demo"  # an explicit task needs no focus


def test_a_task_without_state_denies_everything_and_says_so(project: Path) -> None:
    (project / "tasks" / "legacy").mkdir(parents=True)
    proj = Project(project.resolve())
    got = decide(proj, "src/x.py", task="legacy")
    assert got == Decision(False, "task legacy has no .state: run automaton --phase --task legacy first",
                           str(project.resolve() / "src/x.py"))


@pytest.mark.parametrize(("phase", "says"), [
    ("research:awaiting_approval", "only a human gives — a human reviews SPEC.md and runs:"
                                   " automaton --approve --task demo"),
    ("design:awaiting_approval", "a human reviews DESIGN.md and runs: automaton --approve --task demo"),
    ("complete", "a human runs automaton --focus --clear (or --focus NEXT_TASK)"),
    ("human_intervention", "automaton --approve --task demo --to PHASE"),
])
def test_a_denial_at_a_phase_waiting_for_a_human_names_the_command(project: Path, phase: str, says: str) -> None:
    seed_task(project, "demo", phase)
    got = decide(Project(project.resolve()), "src/x.py", task="demo")
    assert not got.allowed and says in got.reason


def test_a_denial_at_a_working_phase_adds_nothing(project: Path) -> None:
    seed_task(project, "demo", "implement")
    got = decide(Project(project.resolve()), "tasks/demo/SPEC.md", task="demo")
    assert got.reason == "tasks/demo/SPEC.md is outside the scope of task demo at phase 'implement'"


def test_automatons_own_install_is_denied_with_the_resolved_path(project: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(can_edit, "own_install", lambda path, memo=None: f"{path.name}: automaton's own install")
    root = project.resolve()
    got = decide(Project(root), "venv/x.py")
    assert got == Decision(False, "x.py: automaton's own install", str(root / "venv/x.py"))


def test_a_task_folder_linked_outside_the_project_is_refused(project: Path, tmp_path: Path) -> None:
    outside = seed_task(tmp_path / "elsewhere", "demo", "implement")
    (project / "tasks").mkdir()
    (project / "tasks" / "demo").symlink_to(outside)
    with pytest.raises(BadInput, match=r"^task folder .*demo lies outside the project "):
        decide(Project(project.resolve()), "src/x.py", task="demo")
