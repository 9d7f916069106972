"""`--install-hooks`: merged settings, idempotence, absolute commands, git pre-commit, loop settings."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from automaton.core.errors import Refused
from automaton.hooks.install import install, loop_settings
from automaton.install_paths import own_roots
from automaton.store.layout import Project
from tests.helpers import GIT_ENV, git, run_cli
from tests.ownkit import project_venv, run_in

FILES = {"claude": (".claude/settings.json", "PreToolUse"), "codex": (".codex/hooks.json", "PreToolUse"),
         "gemini": (".gemini/settings.json", "BeforeTool")}


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_install_merges_and_is_idempotent(project: Path, agent: str) -> None:
    rel, event = FILES[agent]
    path = project / rel
    path.parent.mkdir()
    foreign = {"type": "command", "command": "/usr/bin/lint-hook"}
    path.write_text(json.dumps({"model": "x", "hooks": {event: [{"matcher": "Bash", "hooks": [foreign]}],
                                                        "Stop": [{"hooks": [foreign]}]}}))
    first = run_cli("--install-hooks", agent, "--project", str(project), "--json")
    assert first.code == 0 and first.json["changed"] is True
    after_one = path.read_text()
    second = run_cli("--install-hooks", agent, "--project", str(project), "--json")
    assert second.code == 0 and second.json["changed"] is False
    assert path.read_text() == after_one
    doc = json.loads(after_one)
    assert doc["model"] == "x" and doc["hooks"]["Stop"] == [{"hooks": [foreign]}]
    groups = doc["hooks"][event]
    assert groups[0] == {"matcher": "Bash", "hooks": [foreign]}
    ours = groups[1]["hooks"][0]
    assert len(groups) == 2 and ours["type"] == "command"
    argv = shlex.split(ours["command"].removesuffix(" || exit 2"))
    assert os.path.isabs(argv[0]) and os.path.exists(argv[0])
    assert argv[-4:] == ["--hook", agent, "--project", str(project.resolve())]


def test_installed_command_runs_and_fails_closed(project: Path, tmp_path: Path) -> None:
    run_cli("--install-hooks", "claude", "--project", str(project))
    doc = json.loads((project / ".claude/settings.json").read_text())
    command = doc["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    write = json.dumps({"cwd": str(project), "tool_name": "Write",
                        "tool_input": {"file_path": str(project / ".automaton/focus"), "content": "x"}})
    done = subprocess.run(["/bin/sh", "-c", command], input=write, capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout) == (2, "") and ".automaton/" in done.stderr
    broken = command.replace("--hook claude", "--no-such-flag --hook claude")  # exits with usage error
    done = subprocess.run(["/bin/sh", "-c", broken], input=write, capture_output=True, text=True, check=False)
    assert done.returncode == 2


def test_invalid_settings_are_never_overwritten(project: Path) -> None:
    path = project / ".claude/settings.json"
    path.parent.mkdir()
    path.write_text("{ not json")
    result = run_cli("--install-hooks", "claude", "--project", str(project))
    assert result.code == 2 and "not valid JSON" in result.err
    assert path.read_text() == "{ not json"


def test_unknown_agent(project: Path) -> None:
    result = run_cli("--install-hooks", "cursor", "--project", str(project))
    assert result.code == 2 and "claude, codex, gemini, opencode or git" in result.err


def test_loop_settings_file(project: Path) -> None:
    (project / ".automaton/loops/nightly").mkdir(parents=True)
    path = loop_settings(Project(project.resolve()), "nightly")
    assert path == project.resolve() / ".automaton/loops/nightly/claude-settings.json"
    handler = json.loads(path.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]
    assert "--hook claude --project" in handler["command"]
    assert loop_settings(Project(project.resolve()), "nightly") == path  # rewriting is harmless


def _commit(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "commit", "-q", *args], cwd=repo, env={**os.environ, **GIT_ENV},
                          capture_output=True, text=True, check=False)


def test_git_pre_commit_refuses_out_of_scope(project: Path, make_task: Callable[..., Path]) -> None:
    make_task("demo", "research")
    result = run_cli("--install-hooks", "git", "--project", str(project), "--json")
    assert result.code == 0 and result.json["changed"] is True
    hook_file = Path(result.json["path"])
    assert hook_file == project / ".git/hooks/pre-commit" and os.access(hook_file, os.X_OK)
    (project / "src").mkdir()
    (project / "src/app.py").write_text("x\n")
    git(project, "add", "src/app.py")
    done = _commit(project, "-m", "out of scope")
    assert done.returncode != 0 and "src/app.py is outside the scope of task demo" in done.stderr
    git(project, "reset", "-q")
    (project / "tasks/demo/SPEC.md").write_text("# spec\n")
    git(project, "add", "tasks/demo")
    done = _commit(project, "-m", "spec and state")
    assert done.returncode == 0, done.stderr


def test_git_pre_commit_refuses_unexplained_state(project: Path, make_task: Callable[..., Path]) -> None:
    folder = make_task("demo", "research")
    run_cli("--install-hooks", "git", "--project", str(project))
    (folder / ".state").write_text("complete\n")
    git(project, "add", "tasks")
    done = _commit(project, "-m", "skip ahead")
    assert done.returncode != 0
    assert done.stderr.startswith("automaton: commit refused: ")
    assert "tasks/demo/.state: " in done.stderr and "edited outside automaton" in done.stderr
    # the task lock is in .git/info/exclude since --create-task, so `git add tasks` skips it
    assert "tasks/.state.lock-demo" not in git(project, "diff", "--cached", "--name-only")


def test_git_pre_commit_refuses_a_force_added_lock_file(project: Path, make_task: Callable[..., Path]) -> None:
    make_task("demo", "research")
    run_cli("--install-hooks", "git", "--project", str(project))
    git(project, "add", "-f", "tasks/.state.lock-demo")
    done = _commit(project, "-m", "lock")
    assert done.returncode != 0 and "a runtime lock/temp file" in done.stderr


def test_git_hook_never_replaces_a_foreign_hook(project: Path) -> None:
    hook_file = project / ".git/hooks/pre-commit"
    hook_file.write_text("#!/bin/sh\nrun-linters\n")
    result = run_cli("--install-hooks", "git", "--project", str(project))
    assert result.code == 1 and "will not overwrite" in result.err and "--hook git" in result.err
    assert hook_file.read_text() == "#!/bin/sh\nrun-linters\n"
    again = run_cli("--install-hooks", "git", "--project", str(project))
    assert again.code == 1


@pytest.mark.parametrize("task_phase", ["research", None])
def test_git_pre_commit_refuses_hook_settings_and_names_no_verify(
        project: Path, make_task: Callable[..., Path], task_phase: str | None) -> None:
    """The hook cannot tell a human committer from an agent: hook settings are refused like
    every always-denied path, and the message says how a human commits them."""
    if task_phase is not None:
        make_task("demo", task_phase)
    run_cli("--install-hooks", "claude", "--project", str(project))
    run_cli("--install-hooks", "git", "--project", str(project))
    git(project, "add", ".claude/settings.json")
    refused = _commit(project, "-m", "install the hook")
    assert refused.returncode != 0
    assert ".claude/settings.json" in refused.stderr and "git commit --no-verify" in refused.stderr
    done = _commit(project, "--no-verify", "-m", "install the hook")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("name", [".claude/settings.local.json", ".codex/hooks.json", ".Codex/Config.toml",
                                  ".gemini/settings.json", ".GEMINI/SETTINGS.JSON"])
def test_git_pre_commit_refuses_every_hook_settings_file(project: Path, name: str) -> None:
    run_cli("--install-hooks", "git", "--project", str(project))
    (project / name).parent.mkdir(parents=True, exist_ok=True)
    (project / name).write_text("{}\n")
    git(project, "add", name)
    refused = _commit(project, "-m", "switch the hook off")
    assert refused.returncode != 0 and name in refused.stderr and "--no-verify" in refused.stderr


def test_claude_install_writes_deny_rules_merged_and_idempotent(project: Path) -> None:
    path = project / ".claude/settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"permissions": {"allow": ["Bash(npm test)"], "deny": ["Read(./.env)"]}}))
    first = run_cli("--install-hooks", "claude", "--project", str(project), "--json")
    assert first.code == 0 and first.json["changed"] is True
    doc = json.loads(path.read_text())
    deny = doc["permissions"]["deny"]
    assert deny[0] == "Read(./.env)" and doc["permissions"]["allow"] == ["Bash(npm test)"]
    for rule in ("Edit(**/.state*)", "Edit(/.automaton/**)", "Edit(**/.git/**)", "Edit(**/.claude/settings.json)",
                 "Edit(**/.claude/settings.local.json)", "Edit(**/.codex/**)", "Edit(**/.gemini/settings.json)"):
        assert deny.count(rule) == 1, rule
    assert doc["hooks"]["PreToolUse"][-1]["matcher"] == "*"
    text = path.read_text()
    again = run_cli("--install-hooks", "claude", "--project", str(project), "--json")
    assert again.code == 0 and again.json["changed"] is False and path.read_text() == text
    assert "permissions.deny" in first.out or first.json["deny"]


def test_codex_install_says_it_has_no_per_path_deny(project: Path) -> None:
    result = run_cli("--install-hooks", "codex", "--project", str(project))
    assert result.code == 0 and "no per-path deny" in result.out
    assert json.loads((project / ".codex/hooks.json").read_text())["hooks"]["PreToolUse"][0]["matcher"] == "*"


@pytest.mark.parametrize("agent, rel, text, key", [
    ("claude", ".claude/settings.json", '{"disableAllHooks": true}', "disableAllHooks: true"),
    ("claude", ".claude/settings.local.json", '{"disableAllHooks": true}', "disableAllHooks: true"),
    ("codex", ".codex/config.toml", "[features]\nhooks = false\n", "[features] hooks = false"),
    ("codex", ".codex/config.toml", "model = 'x'\n[features]\ncodex_hooks = false\n", "[features] codex_hooks = false"),
    ("gemini", ".gemini/settings.json", '{"hooksConfig": {"enabled": false}}', "hooksConfig.enabled: false"),
])
def test_install_refuses_over_a_kill_switch(project: Path, agent: str, rel: str, text: str, key: str) -> None:
    path = project / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    result = run_cli("--install-hooks", agent, "--project", str(project))
    lines = result.err.strip().splitlines()
    assert result.code == 1 and len(lines) == 1, result.err
    assert str(path) in lines[0] and key in lines[0]
    assert path.read_text() == text
    target = project / FILES[agent][0]
    assert target == path or not target.exists()


def test_loop_settings_carry_the_deny_rules_and_switch_the_kill_switch_off(project: Path) -> None:
    (project / ".claude").mkdir()
    (project / ".claude/settings.json").write_text('{"disableAllHooks": true, "model": "x"}')
    (project / ".automaton/loops/nightly").mkdir(parents=True)
    doc = json.loads(loop_settings(Project(project.resolve()), "nightly").read_text())
    assert doc["disableAllHooks"] is False and doc["model"] == "x"
    assert "Edit(/.automaton/**)" in doc["permissions"]["deny"]


@pytest.mark.parametrize("agent", ["claude", "git"])
def test_install_refuses_when_automaton_lives_in_the_project(project: Path, agent: str) -> None:
    python = project_venv(project)
    done = run_in(python, "--install-hooks", agent, "--project", str(project), cwd=project)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--install-hooks: automaton runs from" in lines[0]
    assert "pipx install automaton-framework" in lines[0]
    assert not (project / ".claude").exists() and not (project / ".git" / "hooks" / "pre-commit").exists()


def test_install_refuses_for_an_install_given_inside_the_project(project: Path) -> None:
    venv = project / "tools" / "venv"
    venv.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    with pytest.raises(Refused, match="pipx install automaton-framework"):
        install(Project.at(str(project)), "codex", own=own_roots(prefixes=[str(venv)], files=[]))
    assert not (project / ".codex").exists()
    outside = project.parent / "elsewhere"
    outside.mkdir()
    assert install(Project.at(str(project)), "codex", own=own_roots(prefixes=[str(outside)], files=[])).code == 0


# ---- core.hooksPath: git runs the hooks from there, never from .git/hooks --------------------

def test_git_hook_goes_where_a_local_core_hookspath_points(project: Path, make_task: Callable[..., Path]) -> None:
    make_task("demo", "research")
    git(project, "config", "core.hooksPath", ".githooks")
    result = run_cli("--install-hooks", "git", "--project", str(project), "--json")
    assert result.code == 0, result.err
    assert Path(result.json["path"]) == project / ".githooks" / "pre-commit"
    assert not (project / ".git/hooks/pre-commit").exists()
    (project / "src").mkdir()
    (project / "src/app.py").write_text("x\n")
    git(project, "add", "src/app.py")
    done = _commit(project, "-m", "out of scope")  # git really runs it
    assert done.returncode != 0 and "outside the scope of task demo" in done.stderr


@pytest.mark.parametrize("hooks_path", [".husky/_", ".husky"])
def test_git_hook_refuses_a_husky_hookspath_with_the_fix(project: Path, hooks_path: str) -> None:
    """husky sets core.hooksPath: a hook reported installed into .git/hooks never ran (typicode/husky #435)."""
    (project / ".husky" / "_").mkdir(parents=True)
    (project / ".husky" / "_" / "h").write_text("#!/bin/sh\n")
    git(project, "config", "core.hooksPath", hooks_path)
    result = run_cli("--install-hooks", "git", "--project", str(project))
    assert result.code == 1 and len(result.err.strip().splitlines()) == 1
    assert "husky" in result.err and f"{project / '.husky' / 'pre-commit'}" in result.err
    assert "--hook git" in result.err
    assert not (project / ".git/hooks/pre-commit").exists() and not (project / ".husky/_/pre-commit").exists()


def test_git_hook_refuses_a_global_hookspath_outside_the_project(project: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A global core.hooksPath (entireio/cli #228): git never runs .git/hooks, and a shared folder
    is no place for one project's hook."""
    shared = tmp_path / "shared-hooks"
    shared.mkdir()
    config = tmp_path / "gitconfig"
    config.write_text(f"[core]\n\thooksPath = {shared}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    result = run_cli("--install-hooks", "git", "--project", str(project))
    assert result.code == 1 and "outside this project" in result.err and str(shared) in result.err
    assert not (project / ".git/hooks/pre-commit").exists() and list(shared.iterdir()) == []
