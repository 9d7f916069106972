"""The shared policy inside loop worktrees: worktree-anchored task scope + can_edit_loop."""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.commands.can_edit import Decision
from automaton.hooks import policy
from automaton.store.layout import Project
from tests.helpers import run_cli
from tests.hooks.conftest import assert_allowed, assert_denied
from tests.ownkit import project_venv, run_in, write_payload


@pytest.fixture
def loop(project: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A loop 'nightly' with a worktree folder, a fake loop state and a recording can_edit_loop."""
    tree = project / ".automaton/loops/nightly/worktree"
    (tree / "src").mkdir(parents=True)
    (tree / "tasks/demo").mkdir(parents=True)
    seen: dict[str, Any] = {"calls": [], "allow": True, "state": {"current_task": "demo"}}

    def loop_facts(project: Project, name: str) -> Any:
        seen["facts"].append(name)
        return types.SimpleNamespace(tasks=[t for t in [seen["state"]["current_task"]] if t])

    def can_edit_loop(project: Project, name: str, file: str, *, loop_worktree: bool,
                      task: str | None = None, cwd: Path | None = None, facts: Any = None) -> Decision:
        assert facts is not None  # the hook hands over the loop it read once
        seen["calls"].append({"name": name, "file": file, "loop_worktree": loop_worktree, "task": task})
        return Decision(seen["allow"], "in file_scope" if seen["allow"] else f"{file} is outside file_scope", file)

    fake = types.ModuleType("automaton.commands.loop_views")
    fake.can_edit_loop = can_edit_loop  # type: ignore[attr-defined]
    fake.loop_facts = loop_facts  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "automaton.commands.loop_views", fake)
    seen["facts"] = []
    seen["tree"] = tree
    return seen


def write(path: Path, cwd: Path) -> dict[str, Any]:
    return {"cwd": str(cwd), "tool_name": "Write", "tool_input": {"file_path": str(path), "content": "x"}}


def test_task_scope_is_anchored_at_the_worktree(project: Path, make_task: Callable[..., Path], hook: Any,
                                                loop: dict[str, Any]) -> None:
    make_task("demo", "research", focus=False)
    tree = loop["tree"]
    assert_allowed(hook("claude", write(tree / "tasks/demo/SPEC.md", tree)))
    assert loop["calls"] == [{"name": "nightly", "file": str((tree / "tasks/demo/SPEC.md").resolve()),
                              "loop_worktree": True, "task": "demo"}]
    assert loop["facts"] == ["nightly"]  # the loop read once for the call
    assert_denied(hook("claude", write(tree / "src/app.py", tree)),
                  "src/app.py is outside the scope of task demo at phase 'research'")


def test_phase_comes_from_the_main_checkout(project: Path, make_task: Callable[..., Path], hook: Any,
                                            loop: dict[str, Any]) -> None:
    make_task("demo", "implement", focus=False)
    tree = loop["tree"]
    (tree / "tasks/demo/.state").write_text("research\n")  # a stale copy in the worktree is ignored
    assert_allowed(hook("claude", write(tree / "src/app.py", tree / "src")))


def test_can_edit_loop_denial_wins(project: Path, make_task: Callable[..., Path], hook: Any,
                                   loop: dict[str, Any]) -> None:
    make_task("demo", "implement", focus=False)
    loop["allow"] = False
    tree = loop["tree"]
    assert_denied(hook("claude", write(tree / "docs/x.md", tree)), "outside file_scope")


def test_agent_in_worktree_cannot_write_the_main_checkout(project: Path, make_task: Callable[..., Path],
                                                          hook: Any, loop: dict[str, Any]) -> None:
    make_task("demo", "implement", focus=False)
    tree = loop["tree"]
    assert_denied(hook("claude", write(project / "src/app.py", tree)), "writes only inside its worktree")
    bash = {"cwd": str(tree), "tool_name": "Bash", "tool_input": {"command": "echo x > ../../../../src/app.py"}}
    assert_denied(hook("claude", bash), "writes only inside its worktree")


def test_protected_paths_inside_the_worktree(project: Path, make_task: Callable[..., Path], hook: Any,
                                             loop: dict[str, Any]) -> None:
    make_task("demo", "implement", focus=False)
    tree = loop["tree"]
    assert_denied(hook("claude", write(tree / "tasks/demo/.state", tree)), ".state files")
    assert_denied(hook("claude", write(tree / ".claude/settings.json", tree)), "hook configuration")
    assert loop["calls"] == []


def test_no_task_leaves_only_the_loop_check(project: Path, hook: Any, loop: dict[str, Any]) -> None:
    loop["state"] = {"current_task": None}
    tree = loop["tree"]
    assert_allowed(hook("claude", write(tree / "src/app.py", tree)))
    assert loop["calls"][0]["task"] is None


def test_missing_loop_module_fails_closed(project: Path, hook: Any, loop: dict[str, Any],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    loop["state"] = {"current_task": None}
    monkeypatch.setitem(sys.modules, "automaton.commands.loop_views", None)
    tree = loop["tree"]
    assert_denied(hook("claude", write(tree / "src/app.py", tree)), "the hook failed")


def test_worktree_of(project: Path) -> None:
    proj = Project(project.resolve())
    inside = proj.root / ".automaton/loops/nightly/worktree/src/a.py"
    found = policy.worktree_of(proj, inside)
    assert found is not None and found.name == "nightly"
    assert policy.worktree_of(proj, proj.root / ".automaton/loops/nightly/loop.json") is None
    assert policy.worktree_of(proj, proj.root / "src/a.py") is None


def test_real_loop_file_scope(project: Path, approver: str, hook: Any) -> None:
    """With the real loop store: the ci-triage file_scope (src/**, tests/**) is enforced in the worktree."""
    created = run_cli("--create-loop", "nightly", "--from-template", "ci-triage", "--project", str(project))
    assert created.code == 0, created.err
    tree = project / ".automaton/loops/nightly/worktree"
    (tree / "src").mkdir(parents=True)
    assert_allowed(hook("claude", write(Path("src/x.py"), tree)))
    assert_denied(hook("claude", write(Path("README.md"), tree)), "outside the file_scope of loop nightly")


def test_one_call_reads_task_focus_and_config_once(project: Path, make_task: Callable[..., Path], hook: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A Codex patch naming many files loads the task, the focus and the config once, not per file."""
    import automaton.commands.focus
    import automaton.store.project_config
    import automaton.store.tasks

    make_task("demo", "implement")  # focused: the hook finds it through .automaton/focus
    counts = {"load": 0, "focus": 0, "config": 0}

    def counting(module: Any, attr: str, key: str) -> None:
        real = getattr(module, attr)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            counts[key] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(module, attr, wrapped)

    counting(automaton.store.tasks, "load", "load")
    counting(automaton.commands.focus, "read_focus", "focus")
    counting(automaton.store.project_config, "scope_overrides", "config")
    files = "".join(f"*** Add File: src/m{i}.py\n+x\n" for i in range(5))
    patch = {"cwd": str(project), "tool_name": "apply_patch",
             "tool_input": {"command": f"*** Begin Patch\n{files}*** End Patch\n"}}
    assert_allowed(hook("codex", patch))
    assert counts == {"load": 1, "focus": 1, "config": 1}
    denied = files + "*** Add File: tasks/demo/SPEC.md\n+x\n"  # the last path still gets its own verdict
    patch["tool_input"] = {"command": f"*** Begin Patch\n{denied}*** End Patch\n"}
    assert_denied(hook("codex", patch), "tasks/demo/SPEC.md is outside the scope of task demo at phase 'implement'")
    assert counts == {"load": 2, "focus": 2, "config": 2}  # a new call reads afresh (no cross-call cache)


def test_a_focus_on_another_task_never_changes_a_task_less_loop(project: Path, make_task: Callable[..., Path],
                                                                hook: Any, loop: dict[str, Any]) -> None:
    """A loop's scope is its own: the human's focus in the main checkout never reaches it."""
    loop["state"] = {"current_task": None}
    tree = loop["tree"]
    calls = [write(tree / "src/app.py", tree), write(tree / "docs/notes.md", tree),
             write(tree / "tasks/other/SPEC.md", tree)]
    before = [hook("claude", c) for c in calls]
    make_task("other", "research")  # focused: at research only tasks/other/SPEC.md is in its scope
    after = [hook("claude", c) for c in calls]
    assert [(r.code, r.err) for r in before] == [(r.code, r.err) for r in after]
    assert all(r.code == 0 for r in after)
    assert {c["task"] for c in loop["calls"]} == {None}
    assert_denied(hook("claude", write(tree / "tasks/other/.state", tree)), ".state files")


def test_a_loop_uses_its_own_task_not_the_focus(project: Path, make_task: Callable[..., Path], hook: Any,
                                                loop: dict[str, Any]) -> None:
    make_task("demo", "implement", focus=False)
    make_task("other", "research")  # the human's focus, at a phase that would deny src/
    tree = loop["tree"]
    assert_allowed(hook("claude", write(tree / "src/app.py", tree)))  # the loop's task demo is at implement
    assert loop["calls"][-1]["task"] == "demo"


def test_a_real_task_less_loop_ignores_the_focus(project: Path, approver: str, hook: Any) -> None:
    created = run_cli("--create-loop", "nightly", "--from-template", "ci-triage", "--project", str(project))
    assert created.code == 0, created.err
    tree = project / ".automaton/loops/nightly/worktree"
    (tree / "src").mkdir(parents=True)
    assert_allowed(hook("claude", write(Path("src/x.py"), tree)))
    assert run_cli("--create-task", "other", "--project", str(project)).code == 0
    assert run_cli("--transition", "research", "--task", "other", "--project", str(project)).code == 0
    assert run_cli("--focus", "other", "--project", str(project)).code == 0
    assert_allowed(hook("claude", write(Path("src/x.py"), tree)))
    assert_denied(hook("claude", write(Path("README.md"), tree)), "outside the file_scope of loop nightly")


def test_the_hook_denies_automatons_own_venv_in_the_project(project: Path) -> None:
    python = project_venv(project)
    venv = project / ".venv"
    site = next(venv.glob("lib/python*/site-packages"))
    for target in (venv / "bin" / "automaton", site / "sitecustomize.py"):
        done = run_in(python, "--hook", "claude", "--project", str(project), cwd=project,
                      stdin=write_payload(project, target))
        assert done.returncode == 2, (target, done.stderr)
        assert "automaton itself runs from" in done.stderr
    wipe = json.dumps({"cwd": str(project), "hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": "rm -rf .venv"}})
    assert run_in(python, "--hook", "claude", "--project", str(project), cwd=project, stdin=wipe).returncode == 2
    fine = run_in(python, "--hook", "claude", "--project", str(project), cwd=project,
                  stdin=write_payload(project, project / "app.py"))
    assert fine.returncode == 0, fine.stderr


# --- edges a surviving mutant found (`make mutate`, group hook-policy)

def _facts_by_loop(monkeypatch: pytest.MonkeyPatch, tasks: dict[str, list[str]]) -> None:
    fake = sys.modules["automaton.commands.loop_views"]
    monkeypatch.setattr(fake, "loop_facts", lambda project, name: types.SimpleNamespace(tasks=tasks[name]))


def test_a_loop_with_two_tasks_is_held_to_the_scope_of_each(project: Path, make_task: Callable[..., Path],
                                                             loop: dict[str, Any],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    make_task("demo", "implement", focus=False)
    make_task("other", "research", focus=False)
    _facts_by_loop(monkeypatch, {"nightly": ["demo", "other"]})
    tree = loop["tree"]
    verdict = policy.check(Project(project.resolve()), tree, [str(tree / "src/app.py")])
    assert not verdict.allowed and "outside the scope of task other at phase 'research'" in verdict.reason


def test_one_call_into_two_loops_worktrees_reads_each_loop(project: Path, make_task: Callable[..., Path],
                                                           loop: dict[str, Any],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    make_task("demo", "implement", focus=False)
    make_task("other", "research", focus=False)
    weekly = project / ".automaton/loops/weekly/worktree"
    (weekly / "src").mkdir(parents=True)
    _facts_by_loop(monkeypatch, {"nightly": ["demo"], "weekly": ["other"]})
    proj = Project(project.resolve())
    nightly = str(loop["tree"] / "src/a.py")
    assert policy.check(proj, project, [nightly]).allowed
    verdict = policy.check(proj, project, [nightly, str(weekly / "src/b.py")])
    assert not verdict.allowed and "outside the scope of task other at phase 'research'" in verdict.reason


def test_the_agents_temp_folder_is_allowed_unless_the_call_says_it_is_no_temp_write(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    temp = tmp_path / "agent-tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    proj = Project(project.resolve())
    scratch = str(temp / "scratch.txt")
    assert policy.check(proj, project, [scratch]).allowed
    assert policy.check(proj, project, [scratch], no_temp={"elsewhere"}).allowed
    denied = policy.check(proj, project, [scratch], no_temp={scratch})  # `git worktree add`'s path
    assert not denied.allowed and "outside the project" in denied.reason
