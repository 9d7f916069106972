"""`--can-edit`: the phase scopes, the always-denied paths, via the real CLI (README.md#tasks-phases-and-sign-offs)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from automaton.commands import can_edit
from automaton.core import phases as ph
from automaton.install_paths import own_roots
from automaton.store.layout import Project
from tests.helpers import Result, run_cli
from tests.helpers import seed_task as seed
from tests.ownkit import project_venv, run_in


def check(root: Path, file: str, *extra: str, cwd: Path | None = None) -> Result:
    args = ["--can-edit", "--file", file, *extra]
    if cwd is None:
        args += ["--project", str(root)]
    return run_cli(*args, "--json", cwd=cwd)


def allowed(root: Path, file: str, task: str | None = "t") -> bool:
    res = check(root, file, *(("--task", task) if task else ()))
    assert res.code in (0, 1), res.err
    assert res.json["allowed"] is (res.code == 0)
    return res.code == 0


# What each phase may write; everything else is denied.
OWN = {p: f"tasks/t/{ph.ARTIFACT[p]}" for p in ph.ARTIFACT}
PROBES = [*(f"tasks/t/{a}" for a in sorted(ph.ARTIFACTS)), "src/app.py", "README.md", "docs/guide.txt",
          "docs/x.md", "tasks/other/SPEC.md", "tasks/t/notes.md", "tasks/t/PARENT_SPEC.md"]


def expected(phase: str, probe: str) -> bool:
    if phase in OWN and probe == OWN[phase]:
        return True
    outside = not probe.startswith(("tasks/", ".automaton/"))
    if phase == "implement":
        return outside
    if phase == "doc_review":
        return outside and (probe.endswith(".md") or probe.startswith("docs/"))
    return False


@pytest.mark.parametrize("phase", ph.PHASES)
def test_phase_scope(tmp_path: Path, phase: str) -> None:
    seed(tmp_path, "t", phase)
    (tmp_path / "tasks" / "other").mkdir()
    got = {probe: allowed(tmp_path, probe) for probe in PROBES}
    assert got == {probe: expected(phase, probe) for probe in PROBES}
    if phase in OWN:
        assert got[OWN[phase]]  # each phase may write its own artifact
    if ph.is_awaiting(phase) or phase.endswith(":approved") or phase in ("new", "complete", "human_intervention"):
        assert not any(got.values())


ALWAYS_DENIED = [
    ".state", "tasks/t/.state", "tasks/t/.state.tmp", "tasks/t/.state.log", "tasks/.state.lock-t",
    "tasks/t/.STATE", "tasks/t/.State.Log", "src/.state", ".automaton/focus", ".automaton/loops/x/loop.json",
    ".Automaton/x", ".AUTOMATON/config.json", ".git/config", "src/.git/hooks/pre-commit", ".GIT/HEAD",
    "../outside.py", "src/../../outside.py", "/etc/passwd", "tasks/t/../../../x",
    # the agents' hook settings and their folders, in any case (README: always denied)
    ".claude/settings.json", ".claude/settings.local.json", ".codex/hooks.json", ".codex/config.toml",
    ".gemini/settings.json", ".claude", ".codex", ".gemini", ".Claude/Settings.JSON", ".CODEX/HOOKS.json",
    ".Gemini", "./.claude/../.codex/config.toml",
    # OpenCode loads every plugin, tool and package in .opencode/ and opencode.json, at any depth
    ".opencode", ".opencode/plugin/automaton.js", ".opencode/plugin/x.ts", ".OpenCode/tool/t.js",
    ".opencode/package.json", "opencode.json", "opencode.jsonc", "src/opencode.json", "src/.opencode/plugin/x.js",
]


@pytest.mark.parametrize("path", ALWAYS_DENIED)
def test_always_denied_even_at_implement(tmp_path: Path, path: str) -> None:
    seed(tmp_path, "t", "implement")
    assert not allowed(tmp_path, path)
    assert not allowed(tmp_path, path, task=None)  # also with no task in focus


def test_dotdot_that_stays_inside_is_resolved(tmp_path: Path) -> None:
    seed(tmp_path, "t", "implement")
    assert allowed(tmp_path, "tasks/../src/app.py")
    assert not allowed(tmp_path, "src/../tasks/t/SPEC.md")


def test_symlinks_out_of_the_project_are_denied(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    seed(root, "t", "implement")
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "src").mkdir()
    os.symlink(outside, root / "src" / "escape")
    os.symlink(outside / "nothing-here", root / "src" / "dangling.py")
    os.symlink(root / "tasks" / "t" / ".state", root / "src" / "alias.txt")
    os.symlink(root / ".automaton", root / "src" / "dot")
    assert not allowed(root, "src/escape/x.py")
    assert not allowed(root, "src/dangling.py")
    assert not allowed(root, str(root / "src" / "dangling.py"))
    assert not allowed(root, "src/alias.txt")
    assert not allowed(root, "src/dot/focus")
    assert allowed(root, "src/app.py")


def test_symlinked_project_root_still_resolves(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    seed(root, "t", "implement")
    os.symlink(root, tmp_path / "link")
    assert allowed(tmp_path / "link", "src/app.py")
    assert allowed(root, str(tmp_path / "link" / "src" / "app.py"))


def test_relative_path_resolves_against_the_current_directory(tmp_path: Path) -> None:
    seed(tmp_path, "t", "research")
    (tmp_path / ".git").mkdir()  # marks the project root for discovery
    sub = tmp_path / "tasks" / "t"
    res = check(tmp_path, "SPEC.md", "--task", "t", cwd=sub)
    assert res.code == 0 and res.json["path"] == str((sub / "SPEC.md").resolve())
    assert check(tmp_path, "../t/DESIGN.md", "--task", "t", cwd=sub).code == 1


def test_case_insensitive_volume_folds_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seed(tmp_path, "t", "research")
    monkeypatch.setattr(can_edit, "case_insensitive", lambda _root: True)
    assert allowed(tmp_path, "tasks/t/spec.md")
    assert can_edit.task_scope_allows("research", ("TASKS", "T", "Spec.md"), ("tasks", "t"), fold=True)
    assert not can_edit.task_scope_allows("research", ("TASKS", "T", "Spec.md"), ("tasks", "t"))


@pytest.mark.parametrize("parts", [("Tasks", "t", "SPEC.md"), ("TASKS", "x.py"), (".Automaton", "x")])
def test_implement_never_reaches_tasks_in_any_case(parts: tuple[str, ...]) -> None:
    assert not can_edit.task_scope_allows("implement", parts, ("tasks", "t"))
    assert not can_edit.task_scope_allows("implement", parts, ("tasks", "t"), fold=True)


def test_protected_names_in_any_case() -> None:
    for parts in ((".STATE",), ("a", ".State.tmp"), (".Automaton", "x"), ("x", ".Git", "y"), (),
                  (".Claude", "settings.json"), (".codex",), (".GEMINI", "Settings.json")):
        assert can_edit.protected(parts), parts
    assert can_edit.protected(("src", "state.py")) is None
    assert can_edit.protected(("docs", "automaton.md")) is None
    assert can_edit.protected((".claude", "commands", "x.md")) is None  # not a hook setting


def test_hook_settings_are_the_one_shared_rule() -> None:
    """One place: the hook policy keeps no copy of its own (the loop can-edit and the pre-commit
    hook reach the same `protected`)."""
    from automaton.hooks import policy

    assert not hasattr(policy, "HOOK_CONFIG") and not hasattr(policy, "is_hook_config")
    assert can_edit.protected((".claude", "settings.json")) == can_edit.HOOK_CONFIG_WHY


@pytest.mark.parametrize("bad", ["src/a\x00b.py", "src/a\nb.py", "src/\x1b[31mx", "src/a\tb", "x\x7f"])
def test_control_characters_in_a_path_are_bad_input(tmp_path: Path, bad: str) -> None:
    seed(tmp_path, "t", "implement")
    if "\x00" in bad:  # argv cannot carry NUL: ask the use case directly
        from automaton.core.errors import BadInput
        from automaton.store.layout import Project

        with pytest.raises(BadInput, match="invalid path"):
            can_edit.decide(Project.at(str(tmp_path)), bad, task="t")
        return
    res = run_cli("--can-edit", "--file", bad, "--task", "t", "--project", str(tmp_path))
    assert res.code == 2, (res.code, res.err)
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and "invalid path" in lines[0] and "control character" in lines[0]
    assert "Traceback" not in res.err


def test_pending_demotion_denies_everything(tmp_path: Path, approver: str) -> None:
    folder = seed(tmp_path, "t", "design:awaiting_approval", {"SPEC.md": "s", "DESIGN.md": "d1"})
    assert run_cli("--approve", "--task", "t", "--project", str(tmp_path)).code == 0
    assert run_cli("--transition", "implement", "--task", "t", "--project", str(tmp_path)).code == 0
    assert allowed(tmp_path, "src/app.py")
    (folder / "DESIGN.md").write_text("d2")  # an approved artifact changed: a sign-off is pending
    res = check(tmp_path, "src/app.py", "--task", "t")
    assert res.code == 1 and "DESIGN.md changed" in res.json["reason"]
    assert not allowed(tmp_path, "tasks/t/IMPLEMENTATION.md")


def test_tampered_and_legacy_tasks_deny_everything(tmp_path: Path) -> None:
    folder = seed(tmp_path, "t", "implement")
    (folder / ".state").write_text("referee\n")
    res = check(tmp_path, "src/app.py", "--task", "t")
    assert res.code == 1 and "tampered" in res.json["reason"]
    (tmp_path / "tasks" / "old").mkdir()
    res = check(tmp_path, "src/app.py", "--task", "old")
    assert res.code == 1 and "no .state" in res.json["reason"]
    assert not (tmp_path / "tasks" / "old" / ".state").exists()  # --can-edit writes nothing


def test_unknown_task_or_corrupt_state_is_exit_2(tmp_path: Path) -> None:
    folder = seed(tmp_path, "t", "implement")
    assert check(tmp_path, "src/app.py", "--task", "nope").code == 2
    (folder / ".state").write_text("")
    res = check(tmp_path, "src/app.py", "--task", "t")
    assert res.code == 2 and str(folder / ".state") in res.err


def test_which_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> None:
    seed(tmp_path, "t", "research")
    seed(tmp_path, "u", "implement")
    assert allowed(tmp_path, "src/app.py", task=None)  # no task: only the always-denied paths
    monkeypatch.setenv("AUTOMATON_TASK", "t")
    assert not allowed(tmp_path, "src/app.py", task=None)
    assert allowed(tmp_path, "src/app.py", task="u")  # --task wins over the environment
    monkeypatch.delenv("AUTOMATON_TASK")
    assert run_cli("--focus", "t", "--project", str(tmp_path)).code == 0
    assert not allowed(tmp_path, "src/app.py", task=None)
    assert allowed(tmp_path, "tasks/t/SPEC.md", task=None)


def test_text_output(tmp_path: Path) -> None:
    seed(tmp_path, "t", "research")
    res = run_cli("--can-edit", "--file", "tasks/t/SPEC.md", "--task", "t", "--project", str(tmp_path))
    assert res.code == 0 and res.out == "ALLOWED: tasks/t/SPEC.md is in scope of t at research\n"
    res = run_cli("--can-edit", "--file", ".state", "--project", str(tmp_path))
    assert res.code == 1 and res.out.startswith("DENIED: .state: ")


def test_automatons_own_venv_in_the_project_is_never_editable(project: Path) -> None:
    python = project_venv(project)
    (project / "src").mkdir()
    venv = project / ".venv"
    site = next(venv.glob("lib/python*/site-packages"))
    for target in (venv / "bin" / "automaton", site / "automaton_under_test.pth", venv / "pyvenv.cfg", venv):
        done = run_in(python, "--can-edit", "--file", str(target), "--project", str(project), cwd=project)
        assert done.returncode == 1, (target, done.stdout, done.stderr)
        assert "automaton itself runs from" in done.stdout + done.stderr
        assert "pipx install automaton-framework" in done.stdout + done.stderr
    allowed = run_in(python, "--can-edit", "--file", "src/app.py", "--project", str(project), cwd=project)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr


def test_own_install_is_judged_on_real_paths(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    seed(root, "t", "implement")
    venv = root / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "src").mkdir()
    (root / "tools").symlink_to(venv / "bin")
    memo = can_edit.Memo()
    memo.get(("own install",), lambda: own_roots(prefixes=[str(venv)], files=[]))
    project = Project.at(str(root))
    for file in ("tools/automaton", ".venv/bin/automaton", ".venv"):
        decision = can_edit.decide(project, file, task="t", memo=memo)
        assert not decision.allowed and "automaton itself runs from" in decision.reason, file
    assert can_edit.decide(project, "src/app.py", task="t", memo=memo).allowed
    assert can_edit.own_install(root, memo) is not None  # it holds the install: no `rm -rf` of it either
