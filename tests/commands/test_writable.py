"""commands.writable.secret_stores: the credential stores in force, widened and narrowed by the sealed config.json."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from automaton.commands.writable import configured_installs, grants, secret_stores
from automaton.core.errors import BadInput
from automaton.install_paths import own_roots
from automaton.store.project_config import ConfigNotSealed
from tests.commands.test_can_edit_config import write_config
from tests.helpers import bring_task, run_exe


def plant(home: Path, *rels: str) -> None:
    for rel in rels:
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text("secret\n")


def test_the_packaged_list_in_force_names_only_what_exists(project: Path, forbid_real_home: Path) -> None:
    home = forbid_real_home
    plant(home, ".ssh/id_ed25519", ".netrc", ".config/gh/hosts.yml")
    got = secret_stores(project, "claude", home, {})
    assert set(got.paths) == {home / ".ssh", home / ".netrc", home / ".config/gh"}
    assert "~/.aws" in got.entries and got.unhidden == () and got.provider == () and got.notes() == []


def test_a_sealed_config_adds_and_takes_out_entries(project: Path, forbid_real_home: Path) -> None:
    home = forbid_real_home
    plant(home, ".netrc", ".config/mytool/token", "elsewhere.key")
    write_config(project, {"schema_version": 1, "sandbox": {"hide": ["~/.config/mytool", str(home / "elsewhere.key")],
                                                            "unhide": ["~/.netrc"]}})
    got = secret_stores(project, "command", home, {})
    assert set(got.paths) == {home / ".config/mytool", home / "elsewhere.key"}
    assert got.unhidden == ("~/.netrc",) and "~/.netrc" not in got.entries
    assert got.notes() == ["sandbox: ~/.netrc is readable to agents: .automaton/config.json unhides it"
                           " (sealed by a human)"]


def test_an_unsealed_sandbox_list_is_not_used(project: Path, forbid_real_home: Path) -> None:
    write_config(project, {"schema_version": 1, "sandbox": {"unhide": ["~/.ssh"]}}, seal=False)
    with pytest.raises(ConfigNotSealed):
        secret_stores(project, "command", forbid_real_home, {})


def test_a_provider_switch_leaves_its_store_readable_to_its_agent_only(project: Path, forbid_real_home: Path) -> None:
    home = forbid_real_home
    plant(home, ".aws/credentials")
    env = {"CLAUDE_CODE_USE_BEDROCK": "1"}
    assert secret_stores(project, "claude", home, env).paths == ()
    assert secret_stores(project, "claude", home, env).provider == ("~/.aws",)
    assert secret_stores(project, "command", home, env).paths == (home / ".aws",)


@pytest.mark.parametrize("sandbox, words", [
    ({"hide": "~/.x"}, "must be lists"),
    ({"hide": ["relative/path"]}, "~/"),
    ({"hide": ["~/"]}, "not ~ or /"),
    ({"hide": ["~/../etc"]}, "no '..'"),
    ({"hide": [""]}, "non-empty"),
    ({"unhide": ["~/.not-in-the-list"]}, "not in the packaged list"),
    ({"hidden": []}, "unknown key"),
    ({"hide": ["~/.claude"]}, "an agent CLI must write"),
    ({"hide": ["~/.local"]}, "an agent CLI must write"),
    (["~/.x"], "must be an object"),
])
def test_a_bad_entry_is_one_line_exit_2(project: Path, sandbox: object, words: str) -> None:
    write_config(project, {"schema_version": 1, "sandbox": sandbox}, seal=False)
    with pytest.raises(BadInput) as caught:
        secret_stores(project, "command")
    assert "config.json" in caught.value.message and words in caught.value.message
    done = run_exe("automaton", "--sandbox", "--project", str(project), "--", sys.executable, "-c", "print('ran')",
                   cwd=project)
    assert done.returncode == 2 and "ran" not in done.stdout
    assert words in done.stderr and len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


NO_OWN: tuple[str, ...] = ()


def names(paths: tuple[Path, ...], root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in paths}


def test_links_out_of_the_project_are_left_out(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("# rc\n")
    (project / "src").mkdir()
    (project / "shellrc").symlink_to(home / ".bashrc")
    (project / "notes").symlink_to("/etc")
    (project / "homedir").symlink_to(home)
    (project / "self").symlink_to(".")
    (project / "gitdir").symlink_to(".git")
    got = grants(project, None, None, own=NO_OWN)
    kept = names(got.paths, project)
    assert "src" in kept
    assert not kept & {"shellrc", "notes", "homedir", "self", "gitdir"}
    why = dict((p.name, w) for p, w in got.left_out)
    assert why["shellrc"] == f"links out of the project to {os.path.realpath(home / '.bashrc')}"
    assert why["self"] == "links to the project root itself"  # tasks/, .git and .automaton with it
    assert why["gitdir"] == "links to .git, which no agent writes"
    note = got.note(project)
    assert note is not None and note.startswith("not writable: ") and "shellrc (links out" in note
    assert "\n" not in note


def test_a_link_inside_the_project_is_kept(project: Path) -> None:
    (project / "src").mkdir()
    (project / "lib").symlink_to("src")
    got = grants(project, None, None, own=NO_OWN)
    assert {"src", "lib"} <= names(got.paths, project) and got.left_out == ()
    assert got.note(project) is None


def test_implement_leaves_out_a_link_into_tasks(project: Path, approver: str) -> None:
    task = bring_task(project, "t", "implement", focus=False)
    (project / "specs").symlink_to("tasks")
    got = grants(project, "implement", task, own=NO_OWN)
    kept = names(got.paths, project)
    assert "tasks/t/IMPLEMENTATION.md" in kept and "specs" not in kept


def test_doc_review_leaves_out_a_markdown_link_out(project: Path, tmp_path: Path) -> None:
    task = project / "tasks" / "t"
    task.mkdir(parents=True)
    outside = tmp_path / "profile.md"
    outside.write_text("x\n")
    (project / "README.md").write_text("# r\n")
    (project / "CHANGES.md").symlink_to(outside)
    kept = names(grants(project, "doc_review", task, own=NO_OWN).paths, project)
    assert "README.md" in kept and "CHANGES.md" not in kept


def test_a_task_folder_that_links_elsewhere_is_left_out(project: Path, approver: str) -> None:
    task = bring_task(project, "t", "research", focus=False)
    (project / "src").mkdir()
    moved = project / "tasks" / "u"
    os.symlink(project / "src", moved)
    got = grants(project, "research", moved, own=NO_OWN)
    assert got.paths == () and "the task's SPEC.md links to" in got.left_out[0][1]
    assert names(grants(project, "research", task, own=NO_OWN).paths, project) == {"tasks/t/SPEC.md"}


def test_automatons_own_venv_in_the_project_is_left_out(project: Path) -> None:
    venv = project / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "automaton").write_text("#!/bin/sh\n")
    (project / "src").mkdir()
    own = own_roots(prefixes=[str(venv)], files=[str(venv / "bin" / "automaton")])
    got = grants(project, None, None, own=own)
    kept = names(got.paths, project)
    assert "src" in kept and ".venv" not in kept
    assert "automaton's own install" in dict((p.name, w) for p, w in got.left_out)[".venv"]
    assert ".venv" in names(grants(project, None, None, own=NO_OWN).paths, project)  # only because it is automaton's


def test_an_entry_holding_automatons_package_is_left_out(project: Path) -> None:
    package = project / "vendor" / "automaton"
    package.mkdir(parents=True)
    (project / "src").mkdir()
    got = grants(project, None, None, own=own_roots(prefixes=[], files=[str(package)]))
    assert "src" in names(got.paths, project)
    assert [p.name for p, _ in got.left_out] == ["vendor"]


def test_the_installs_the_hooks_and_the_schedule_run_are_left_out(project: Path) -> None:
    hooked = project / "tools" / "env"
    (hooked / "bin").mkdir(parents=True)
    (hooked / "pyvenv.cfg").write_text("home = /usr/bin\n")
    scheduled = project / "py"
    (scheduled / "bin").mkdir(parents=True)
    (scheduled / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (project / "src").mkdir()
    command = f"'{hooked}/bin/automaton' --hook claude --project '{project}' || exit 2"
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps(
        {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]}}))
    loop = project / ".automaton" / "loops" / "nightly"
    loop.mkdir(parents=True)
    (loop / "schedule.json").write_text(json.dumps({"python": f"{scheduled}/bin/python", "runner": "/elsewhere/r.py"}))
    assert configured_installs(project) == [f"{hooked}/bin/automaton", f"{scheduled}/bin/python", "/elsewhere/r.py"]
    got = grants(project, None, None)  # the running automaton's install, and the configured ones
    assert names(got.paths, project) == {"src", "README.md"}
    assert sorted(p.name for p, _ in got.left_out) == ["py", "tools"]


def test_the_install_the_opencode_plugin_runs_is_left_out(project: Path) -> None:
    from automaton.hooks.install import OPENCODE_PLUGIN, opencode_plugin

    hooked = project / "tools" / "env"
    (hooked / "bin").mkdir(parents=True)
    (hooked / "pyvenv.cfg").write_text("home = /usr/bin\n")
    plugin = project / OPENCODE_PLUGIN
    plugin.parent.mkdir(parents=True)
    plugin.write_text(opencode_plugin(f"'{hooked}/bin/automaton' --hook opencode --project '{project}' || exit 2"))
    assert configured_installs(project) == [f"{hooked}/bin/automaton"]
    assert "tools" in [p.name for p, _ in grants(project, None, None).left_out]


def test_opencode_configuration_is_never_writable(project: Path) -> None:
    (project / ".opencode" / "plugin").mkdir(parents=True)
    (project / "opencode.json").write_text("{}\n")
    (project / "src").mkdir()
    got = names(grants(project, None, None).paths, project)
    assert "src" in got and ".opencode" not in got and "opencode.json" not in got


def test_unreadable_settings_name_no_install(project: Path) -> None:
    (project / ".codex").mkdir()
    (project / ".codex" / "hooks.json").write_text("{not json")
    (project / ".git" / "hooks").mkdir(exist_ok=True)
    (project / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n'unclosed --hook git\nrelative --hook git\n")
    assert configured_installs(project) == []


def test_a_handed_key_file_is_hidden_from_every_agent(tmp_path: Path) -> None:
    from automaton.commands.writable import handed_key_file, hidden_paths

    key = tmp_path / "mounted" / "record-key"
    assert handed_key_file({"AUTOMATON_RECORD_KEY_FILE": str(key)}) == key
    assert key in hidden_paths(tmp_path, {"AUTOMATON_RECORD_KEY_FILE": str(key)})
    assert handed_key_file({"AUTOMATON_RECORD_KEY_FILE": "relative/key"}) is None
    assert handed_key_file({}) is None


# Run as the runner is: a process started with the key in its environment, which confines an
# agent process exactly as a tick does (commands.writable.agent_policy) and reports what it read.
_RUNNER = r"""
import os, subprocess, sys
from pathlib import Path
from automaton.commands.writable import agent_policy
from automaton.sandbox import preexec
from automaton.sandbox.agents import own_install, program_paths
project, work = Path(sys.argv[1]), Path(sys.argv[2])
policy = agent_policy(project, [work], work, "test", agent="command", cwd=work, argv=[sys.executable],
                      isolation="namespaces")
AGENT = '''
import os, sys
def attempt(path):
    try:
        return open(path, "rb").read()
    except OSError as exc:
        return type(exc).__name__.encode()
secret = sys.argv[1].encode()
key = attempt(os.environ.get("AUTOMATON_RECORD_KEY_FILE") or sys.argv[2])
parent = attempt(f"/proc/{os.getppid()}/environ")
print("key", "LEAK" if secret in key else key.decode(errors="replace")[:40])
print("environ", "LEAK" if secret in parent else parent.decode(errors="replace")[:40])
'''
env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOMATON_RECORD_KEY")}
done = subprocess.run([sys.executable, "-c", AGENT, os.environ["SECRET"], os.environ["KEY_PATH"]],
                      preexec_fn=preexec(policy), capture_output=True, text=True, env=env, cwd=work)
print(done.stdout, done.stderr)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Landlock")
@pytest.mark.parametrize("how", ["file", "variable"])
def test_an_agent_reads_the_handed_key_neither_from_its_file_nor_from_the_runners_environ(
        project: Path, tmp_path: Path, how: str) -> None:
    from automaton.sandbox import available

    if not available().ok:
        pytest.skip(f"no kernel sandbox here: {available().detail}")
    secret = "0123456789abcdef" * 4
    key = Path.home() / "mounted" / "record-key"  # HOME stays visible to the agent: only the hiding hides it
    key.parent.mkdir()
    if how == "file":
        key.write_text(secret + "\n")
        key.chmod(0o400)
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, SECRET=secret, KEY_PATH=str(key))
    env["AUTOMATON_RECORD_KEY_FILE" if how == "file" else "AUTOMATON_RECORD_KEY"] = str(key) if how == "file" \
        else secret
    import subprocess

    done = subprocess.run([sys.executable, "-c", _RUNNER, str(project), str(work)], capture_output=True, text=True,
                          env=env, timeout=60, check=False)
    out = done.stdout + done.stderr
    assert "key " in out and "environ " in out, out
    assert "LEAK" not in out, out
    # The runner's environ: Landlock scopes ptrace-mode reads of processes outside the domain.
    assert "environ PermissionError" in out, out
    if how == "file":
        assert "key PermissionError" in out or "key FileNotFoundError" in out, out
