"""Two loops in one project: an agent ticking in loop A never writes loop B's worktree.

Each loop's agent runs in its own worktree under `.automaton/loops/<name>/worktree`; B's
worktree lies inside the same project and matches the same file_scope (`src/**`), so only the
"an agent in a loop writes only inside its worktree" rule of `hooks.policy` stands between
them. Checked through the agent hook (`automaton --hook claude`, in-process), the shared
policy (`hooks.policy.check`) and `automaton --can-edit --loop A --loop-worktree`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from automaton.hooks import policy
from automaton.store.layout import Project
from tests.commands.loopkit import loop_with
from tests.helpers import run_cli
from tests.hooks.conftest import assert_allowed, assert_denied


def write(path: Path | str, cwd: Path) -> dict[str, Any]:
    return {"cwd": str(cwd), "hook_event_name": "PreToolUse", "tool_name": "Write",
            "tool_input": {"file_path": str(path), "content": "x"}}


def bash(command: str, cwd: Path) -> dict[str, Any]:
    return {"cwd": str(cwd), "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command}}


@pytest.fixture
def trees(project: Path) -> dict[str, Path]:
    """Loops alpha and beta with the README's loop.json (file_scope src/**, tests/**), each
    with a worktree folder holding src/. Left waiting for their first approval: the hook's
    answer does not depend on it, and no sign-off runs in the test's session."""
    out: dict[str, Path] = {}
    for name in ("alpha", "beta"):
        loop_with(project, name, first_approval=False)
        tree = project / ".automaton" / "loops" / name / "worktree"
        (tree / "src").mkdir(parents=True)
        out[name] = tree
    return out


@pytest.mark.parametrize(("own", "other"), [("alpha", "beta"), ("beta", "alpha")])
def test_an_agent_in_one_loop_writes_its_own_worktree_and_not_the_other(
        hook: Any, trees: dict[str, Path], own: str, other: str) -> None:
    mine, theirs = trees[own], trees[other]
    assert_allowed(hook("claude", write(mine / "src/x.py", mine)))
    assert_allowed(hook("claude", write("src/x.py", mine)))
    assert_denied(hook("claude", write(theirs / "src/x.py", mine)),
                  f"an agent in loop {own!r} writes only inside its worktree")
    assert_denied(hook("claude", write(f"../../{other}/worktree/src/x.py", mine)), "writes only inside its worktree")


def test_the_other_worktree_is_denied_from_a_subfolder_and_by_shell(hook: Any, trees: dict[str, Path]) -> None:
    alpha, beta = trees["alpha"], trees["beta"]
    assert_denied(hook("claude", write(beta / "src/x.py", alpha / "src")), "loop 'alpha' writes only inside")
    assert_denied(hook("claude", bash(f"echo x > {beta / 'src/x.py'}", alpha)), "writes only inside its worktree")
    assert_denied(hook("claude", bash("cp src/x.py ../../beta/worktree/src/y.py", alpha)),
                  "writes only inside its worktree")
    assert_allowed(hook("claude", bash("echo x > src/y.py", alpha)))


def test_a_link_in_one_worktree_to_the_other_is_judged_where_it_leads(hook: Any, trees: dict[str, Path]) -> None:
    alpha, beta = trees["alpha"], trees["beta"]
    os.symlink(beta / "src", alpha / "src" / "peer")
    assert_denied(hook("claude", write(alpha / "src/peer/x.py", alpha)), "loop 'alpha' writes only inside")


def test_the_policy_denies_a_call_naming_both_worktrees(project: Path, trees: dict[str, Path]) -> None:
    proj = Project(project.resolve())
    alpha, beta = trees["alpha"], trees["beta"]
    assert policy.check(proj, alpha, [str(alpha / "src/a.py")]).allowed
    mixed = policy.check(proj, alpha, [str(alpha / "src/a.py"), str(beta / "src/b.py")])
    assert mixed.allowed is False and "loop 'alpha' writes only inside its worktree" in mixed.reason
    found = policy.worktree_of(proj, (beta / "src/b.py").resolve())
    assert found is not None and str(found.name) == "beta"


def test_can_edit_for_loop_a_refuses_a_file_of_loop_b(project: Path, trees: dict[str, Path]) -> None:
    alpha, beta = trees["alpha"], trees["beta"]
    base = ("--can-edit", "--loop", "alpha", "--loop-worktree", "--project", str(project), "--file")
    assert run_cli(*base, "src/x.py").code == 0
    assert run_cli(*base, str(alpha / "src/x.py")).code == 0
    other = run_cli(*base, str(beta / "src/x.py"))
    assert other.code == 1 and "outside the worktree" in other.out + other.err
    up = run_cli(*base, "../../beta/worktree/src/x.py")
    assert up.code == 1 and "outside the worktree" in up.out + up.err


def test_the_two_loops_share_one_file_scope(project: Path, trees: dict[str, Path]) -> None:
    """The premise: by file_scope alone the other loop's src/ would be in scope, so the denial
    above is the worktree rule's, not the scope's."""
    for name in ("alpha", "beta"):
        loop_json = json.loads((project / ".automaton" / "loops" / name / "loop.json").read_text())
        assert "src/**" in loop_json["blast_radius"]["file_scope"]


# --- the loop an agent is in, however its cwd is spelled; what the policy answers, whole

def test_a_cwd_linked_to_a_loop_worktree_root_is_still_that_loops(project: Path, trees: dict[str, Path],
                                                                  tmp_path: Path) -> None:
    """The cwd reaches alpha's worktree root through a link outside the project: the agent is
    still alpha's (found from the cwd's real path), and beta's worktree stays closed to it."""
    proj = Project(project.resolve())
    link = tmp_path / "elsewhere"
    os.symlink(trees["alpha"], link)
    denied = policy.check(proj, link, [str(trees["beta"] / "src/x.py")])
    assert denied.allowed is False and "an agent in loop 'alpha' writes only inside its worktree" in denied.reason
    found = policy.worktree_of(proj, trees["alpha"].resolve())
    assert found is not None and str(found.name) == "alpha"
    assert policy.worktree_of(proj, tmp_path / "not-in-the-project" / "x") is None
    assert policy.worktree_of(proj, project / ".automaton" / "loops" / "alpha") is None


def test_a_folder_of_the_worktree_linking_out_leaves_the_agent_in_its_loop(project: Path,
                                                                           trees: dict[str, Path]) -> None:
    proj = Project(project.resolve())
    out = trees["alpha"] / "src" / "out"
    os.symlink(project, out)  # a folder of alpha's worktree that is the main checkout
    (project / "src").mkdir(exist_ok=True)
    denied = policy.check(proj, out, ["src/x.py"])
    assert denied.allowed is False and "an agent in loop 'alpha' writes only inside its worktree" in denied.reason
    assert policy.check(proj, project, ["src/x.py"]) == policy.Verdict(True, "every path is in scope")


def test_protected_files_in_a_worktree_are_denied_with_the_rule(project: Path, trees: dict[str, Path]) -> None:
    proj = Project(project.resolve())
    alpha = trees["alpha"]
    assert policy.check(proj, alpha, [str(alpha / ".git")]) == policy.Verdict(
        False, ".git (loop alpha worktree): .git internals are never edited by an agent")
    assert policy.check(proj, alpha, [str(alpha / "src/.state")]) == policy.Verdict(
        False, "src/.state (loop alpha worktree): .state files are written only by the automaton CLI")


def test_a_process_path_is_denied_before_it_is_resolved(project: Path, trees: dict[str, Path]) -> None:
    proj = Project(project.resolve())
    via_proc = f"/proc/self/root{trees['alpha'] / 'src/x.py'}"
    for cwd in (trees["alpha"], project):
        verdict = policy.check(proj, cwd, [via_proc])
        assert verdict.allowed is False and "is a process or device path" in verdict.reason, verdict


def test_the_project_is_the_flag_else_the_one_holding_the_cwd(project: Path, trees: dict[str, Path],
                                                              tmp_path: Path) -> None:
    root = project.resolve()
    assert policy.project_for(str(project), tmp_path).root == root  # --project wins over the cwd
    assert policy.project_for(None, trees["alpha"] / "src").root == root  # a loop worktree's main checkout
