"""`automaton --sandbox [--task T] -- CMD`: an interactive agent confined by the kernel to its phase scope.

Each case runs the real console script in a subprocess (it confines itself, then becomes CMD)
with a Python one-liner as the agent that tries one write and prints what happened.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import bring_task, git, run_exe
from tests.ownkit import project_venv, run_in

TRY = ("import sys, pathlib\n"
       "for rel in sys.argv[1:]:\n"
       "    p = pathlib.Path(rel)\n"
       "    try:\n"
       "        p.write_text('agent was here\\n')\n"
       "        print('written', rel)\n"
       "    except OSError as exc:\n"
       "        print('denied', rel, exc.errno)\n")


@pytest.fixture
def session(project: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., tuple[int, str, str]]:
    """session(task, *paths): run the try-agent on `paths` (relative to the project) under --sandbox."""

    def run(task: str | None, *paths: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        head = ["--sandbox", "--project", str(project), *(["--task", task] if task else [])]
        done = run_exe("automaton", *head, "--", sys.executable, "-c", TRY, *paths, cwd=project,
                       env={**os.environ, **(env or {})})
        return done.returncode, done.stdout, done.stderr

    return run


def denied(rel: str, out: str) -> bool:
    """Whether the try-agent was refused writing `rel`: EACCES (Landlock) or EROFS (the
    read-only mounts of the namespace layer)."""
    return f"denied {rel} 13" in out or f"denied {rel} 30" in out


@pytest.fixture
def human(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOMATON_APPROVER", "alice")


def test_research_writes_its_spec_only(project: Path, session: Callable[..., tuple[int, str, str]],
                                       human: None) -> None:
    bring_task(project, "t", "research", focus=False)
    (project / "src").mkdir()
    (project / ".automaton").mkdir(exist_ok=True)
    code, out, err = session("t", "tasks/t/SPEC.md", "src/app.py", "README.md", ".automaton/focus")
    assert code == 0, err
    assert "written tasks/t/SPEC.md" in out
    for rel in ("src/app.py", "README.md", ".automaton/focus"):
        assert denied(rel, out), out
    assert "writable: tasks/t/SPEC.md" in err


def test_implement_writes_project_files_but_no_brake_state(project: Path, session: Callable[..., tuple[int, str, str]],
                                                          human: None) -> None:
    bring_task(project, "t", "implement", focus=True)
    (project / "src").mkdir()
    code, out, _ = session(None, "src/app.py", "README.md", ".automaton/focus", ".git/config",
                           ".claude-settings-probe", "tasks/other.md")
    assert code == 0
    assert "written src/app.py" in out and "written README.md" in out
    for rel in (".automaton/focus", ".git/config", ".claude-settings-probe", "tasks/other.md"):
        assert denied(rel, out), out  # a new top-level entry is not creatable either
    assert "agent was here" not in (project / ".git" / "config").read_text()


def test_awaiting_approval_writes_nothing(project: Path, session: Callable[..., tuple[int, str, str]],
                                          human: None) -> None:
    bring_task(project, "t", "research:awaiting_approval", focus=True)
    code, out, err = session(None, "tasks/t/SPEC.md", "README.md")
    assert code == 0 and denied("tasks/t/SPEC.md", out) and denied("README.md", out)
    assert "writable: nothing in the project" in err


def test_the_key_is_hidden_in_a_session(project: Path, session: Callable[..., tuple[int, str, str]],
                                        human: None) -> None:
    from automaton.store.key import key_path, load_key

    load_key(create=True)
    code, out, _ = session(None, str(key_path()))
    assert code == 0 and denied(str(key_path()), out)


READ = ("import sys\n"
        "for p in sys.argv[1:]:\n"
        "    try:\n"
        "        open(p, 'rb').read()\n"
        "        print('read', p)\n"
        "    except OSError as exc:\n"
        "        print('denied', p, exc.errno)\n")


def test_browser_cookie_stores_are_hidden_in_a_session(project: Path) -> None:
    # The dashboard's session cookie lives in the browser's profile: an agent that read it
    # could approve its own halt. A file beside the profiles stays readable.
    home = Path.home()
    cookies = [home / ".config" / "chromium" / "Default" / "Cookies", home / ".mozilla" / "firefox" / "cookies.sqlite"]
    for c in cookies:
        c.parent.mkdir(parents=True, exist_ok=True)
        c.write_bytes(b"SQLite format 3\x00session=stolen")
    other = home / ".config" / "editor.conf"
    other.write_text("ok\n")
    done = run_exe("automaton", "--sandbox", "--project", str(project), "--", sys.executable, "-c", READ,
                   *map(str, cookies), str(other), cwd=project)
    assert done.returncode == 0, done.stderr
    for c in cookies:
        assert f"denied {c} 13" in done.stdout
    assert f"read {other}" in done.stdout


def test_bad_input_and_no_sandbox(project: Path, session: Callable[..., tuple[int, str, str]]) -> None:
    done = run_exe("automaton", "--sandbox", "--project", str(project))
    assert done.returncode == 2 and "--sandbox" in done.stderr and "Traceback" not in done.stderr
    done = run_exe("automaton", "--sandbox", "--project", str(project), "--")
    assert done.returncode == 2 and "needs a command" in done.stderr
    done = run_exe("automaton", "--sandbox", "--task", "nope", "--project", str(project), "--", "true")
    assert done.returncode == 2 and "nope" in done.stderr
    done = run_exe("automaton", "--sandbox", "--project", str(project), "--", "no-such-agent-cli")
    assert done.returncode == 127 and "not found" in done.stderr
    code, out, err = session(None, "README.md", env={"AUTOMATON_SANDBOX_UNAVAILABLE": "1"})
    assert code == 1 and "sandbox_unavailable" in err and out == ""


def test_without_namespaces_a_session_refuses_unless_the_sealed_config_allows_landlock_only(
        project: Path, session: Callable[..., tuple[int, str, str]], human: None) -> None:
    from automaton.store import project_config
    from automaton.store.layout import Project

    no_ns = {"AUTOMATON_NAMESPACES_UNAVAILABLE": "1"}
    code, out, err = session(None, ".automaton/x", env=no_ns)
    assert code == 1 and out == "" and "sandbox_unavailable: " in err and '"isolation": "landlock-only"' in err
    assert err.count("\n") == 1
    (project / ".automaton").mkdir(exist_ok=True)
    config = project / ".automaton" / "config.json"
    config.write_text(json.dumps({"schema_version": 1, "isolation": "landlock-only"}))
    code, out, err = session(None, ".automaton/x", env=no_ns)
    assert code == 2 and "has no seal" in err  # an unsealed config.json decides nothing
    p = Project.at(str(project))
    project_config.record_seal(p, project_config.read_seal(p).seen, {"by": "alice"})
    code, out, err = session(None, ".automaton/x", env=no_ns)
    assert code == 0 and denied(".automaton/x", out), err
    assert '"isolation": "landlock-only" and' in err and "UNIX sockets in /tmp and /run stay reachable" in err


def test_a_bad_isolation_value_in_config_json_is_bad_input(project: Path,
                                                           session: Callable[..., tuple[int, str, str]]) -> None:
    (project / ".automaton").mkdir(exist_ok=True)
    (project / ".automaton" / "config.json").write_text(json.dumps({"schema_version": 1, "isolation": "none"}))
    code, _, err = session(None, "README.md")
    assert code == 2 and "config.json: isolation must be" in err and err.count("\n") == 1


def _commit(project: Path) -> None:
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "links")


def test_a_committed_link_out_of_the_project_is_never_granted(project: Path, tmp_path: Path, human: None) -> None:
    bring_task(project, "t", "implement", focus=True)
    rc = Path(os.environ["HOME"]) / ".bashrc"
    rc.write_text("# rc\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "shellrc").symlink_to(rc)
    (project / "notes").symlink_to(outside)
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("x = 1\n")
    _commit(project)
    done = run_exe("automaton", "--sandbox", "--project", str(project), "--", "sh", "-c",
                   "echo x >> shellrc; a=$?; echo y > notes/new; b=$?; echo z >> src/app.py; echo $a $b $?",
                   cwd=project, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert [code != "0" for code in done.stdout.split()[-3:]] == [True, True, False], done.stdout  # only src/
    assert rc.read_text() == "# rc\n" and not (outside / "new").exists()
    assert "not writable: notes (links out of the project" in done.stderr
    assert "shellrc (links out of the project" in done.stderr


def test_automatons_own_venv_in_the_project_is_never_granted(project: Path, human: None) -> None:
    python = project_venv(project)
    (project / "src").mkdir()
    script = project / ".venv" / "bin" / "automaton"
    before = script.read_text()
    done = run_in(python, "--sandbox", "--project", str(project), "--", "sh", "-c",
                  "echo 'exit 0' >> .venv/bin/automaton; a=$?; echo z > src/app.py; echo $a $?", cwd=project)
    assert done.returncode == 0, done.stderr
    assert [code != "0" for code in done.stdout.split()[-2:]] == [True, False], done.stdout
    assert script.read_text() == before
    assert "not writable: .venv (holds or lies in automaton's own install" in done.stderr
    assert "pipx install automaton-framework" in done.stderr


# ---- the session supervises its command: nothing it started outlives it ------------------------

DAEMON = ("import os, subprocess, sys\n"
          "subprocess.Popen(['setsid', 'sh', '-c', 'sleep 2; echo daemon >> ' + sys.argv[1]],\n"
          "                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
          "print('left a daemon')\n")


def test_a_daemon_left_by_the_session_dies_with_it(project: Path, human: None) -> None:
    # The daemon keeps the session's grants (SPEC.md is writable at research); without the
    # supervisor it would append to SPEC.md two seconds after the session ended.
    task = bring_task(project, "t", "research", focus=False)
    spec = task / "SPEC.md"
    done = run_exe("automaton", "--sandbox", "--project", str(project), "--task", "t", "--", sys.executable,
                   "-c", DAEMON, str(spec), cwd=project)
    assert done.returncode == 0 and "left a daemon" in done.stdout, done.stderr
    time.sleep(3)
    assert "daemon" not in spec.read_text()


def test_a_hangup_ends_the_command_and_its_daemons(project: Path, human: None) -> None:
    # The terminal closing sends SIGHUP: the command gets it, the daemon is killed with it.
    task = bring_task(project, "t", "research", focus=False)
    spec = task / "SPEC.md"
    script = DAEMON + "import time\nprint('waiting', flush=True)\ntime.sleep(60)\n"
    exe = Path(sys.executable).parent / "automaton"
    with subprocess.Popen([str(exe), "--sandbox", "--project", str(project), "--task", "t", "--", sys.executable,
                           "-c", script, str(spec)], cwd=project, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "left a daemon\n"
        assert proc.stdout.readline() == "waiting\n"
        proc.send_signal(signal.SIGHUP)
        code = proc.wait(timeout=20)
    assert code == 128 + signal.SIGHUP
    time.sleep(3)
    assert "daemon" not in spec.read_text()


def test_the_command_keeps_this_processs_stdin_and_its_exit_status(project: Path) -> None:
    done = run_exe("automaton", "--sandbox", "--project", str(project), "--", "sh", "-c", "cat; exit 7",
                   stdin="typed by the human\n", cwd=project)
    assert done.returncode == 7 and done.stdout == "typed by the human\n", done.stderr


# ---- the task folder is not granted: the artifact file is ---------------------------------------

def test_research_grants_the_spec_file_but_not_the_state(project: Path, session: Callable[..., tuple[int, str, str]],
                                                          human: None) -> None:
    task = bring_task(project, "t", "research", focus=False)
    state, log = (task / ".state").read_bytes(), (task / ".state.log").read_bytes()
    code, out, err = session("t", "tasks/t/SPEC.md", "tasks/t/.state", "tasks/t/.state.log", "tasks/t/NOTES.md")
    assert code == 0, err
    assert "written tasks/t/SPEC.md" in out
    for rel in ("tasks/t/.state", "tasks/t/.state.log", "tasks/t/NOTES.md"):
        assert denied(rel, out), out
    assert (task / ".state").read_bytes() == state and (task / ".state.log").read_bytes() == log
    assert "writable: tasks/t/SPEC.md" in err


SWAP = ("import os, sys\n"
        "for a, b in zip(sys.argv[1::2], sys.argv[2::2]):\n"
        "    try:\n"
        "        os.replace(a, b)\n"
        "        print('renamed', a, b)\n"
        "    except OSError as exc:\n"
        "        print('denied', a, b, exc.errno)\n")


def test_an_older_state_pair_cannot_be_restored(project: Path, human: None) -> None:
    # An agent that kept a copy of .state/.state.log (in its temp dir) cannot rename it over the
    # current pair to undo a human's stop: the task folder takes no rename, no new file.
    task = bring_task(project, "t", "research", focus=False)
    done = run_exe("automaton", "--sandbox", "--project", str(project), "--task", "t", "--", sys.executable, "-c",
                   SWAP, "tasks/t/SPEC.md", "tasks/t/.state", "tasks/t/.state.log", "tasks/t/old.log", cwd=project)
    assert done.returncode == 0, done.stderr
    assert any(f"denied tasks/t/SPEC.md tasks/t/.state {e}" in done.stdout for e in (13, 30))
    assert any(f"denied tasks/t/.state.log tasks/t/old.log {e}" in done.stdout for e in (13, 30))
    assert (task / ".state").is_file() and (task / ".state.log").is_file()


def test_an_atomic_save_of_the_artifact_is_refused(project: Path, human: None) -> None:
    # What users see: an editor that writes a temp file beside SPEC.md and renames it over is
    # refused (EACCES) in the task folder; writing in place works.
    bring_task(project, "t", "research", focus=False)
    save = ("import os\n"
            "try:\n"
            "    with open('tasks/t/.SPEC.md.swp', 'w') as f: f.write('new\\n')\n"
            "    os.replace('tasks/t/.SPEC.md.swp', 'tasks/t/SPEC.md'); print('atomic ok')\n"
            "except OSError as exc: print('atomic denied', exc.errno)\n"
            "with open('tasks/t/SPEC.md', 'w') as f: f.write('in place\\n')\n"
            "print('in place ok')\n")
    done = run_exe("automaton", "--sandbox", "--project", str(project), "--task", "t", "--", sys.executable, "-c",
                   save, cwd=project)
    assert done.returncode == 0, done.stderr
    assert any(f"atomic denied {e}" in done.stdout for e in (13, 30)) and "in place ok" in done.stdout
    assert (project / "tasks" / "t" / "SPEC.md").read_text() == "in place\n"


def test_an_artifact_linked_to_the_state_is_not_granted(project: Path, human: None) -> None:
    # A SPEC.md hard-linked to .state (left by an unconfined process) shares its inode: granting
    # the file would grant .state. The session grants nothing and says why.
    task = bring_task(project, "t", "research", focus=False)
    os.link(task / ".state", task / "SPEC.md")
    before = (task / ".state").read_bytes()
    done = run_exe("automaton", "--sandbox", "--project", str(project), "--task", "t", "--", sys.executable, "-c",
                   TRY, "tasks/t/SPEC.md", cwd=project)
    assert done.returncode == 0, done.stderr
    assert any(f"denied tasks/t/SPEC.md {e}" in done.stdout for e in (13, 30))
    assert "hard links" in done.stderr and (task / ".state").read_bytes() == before


def test_implement_grants_its_artifact_not_the_task_folder(project: Path, session: Callable[..., tuple[int, str, str]],
                                                           human: None) -> None:
    bring_task(project, "t", "implement", focus=True)
    code, out, _ = session(None, "tasks/t/IMPLEMENTATION.md", "tasks/t/.state", "tasks/t/SPEC.md")
    assert code == 0
    assert "written tasks/t/IMPLEMENTATION.md" in out
    assert denied("tasks/t/.state", out) and denied("tasks/t/SPEC.md", out)


def test_the_agent_cannot_kill_its_supervisor(project: Path, human: None) -> None:
    # Killing the supervisor first would let the daemon outlive the session. From Landlock ABI 6
    # the confined processes cannot signal a process outside their sandbox (EPERM).
    from automaton.sandbox import available

    if available().abi < 6:
        pytest.skip(f"Landlock ABI {available().abi} cannot scope signals (ABI 6 can)")
    task = bring_task(project, "t", "research", focus=False)
    spec = task / "SPEC.md"
    kill = DAEMON + ("import os, signal\n"
                     "try:\n"
                     "    os.kill(os.getppid(), signal.SIGKILL); print('killed the supervisor')\n"
                     "except OSError as exc: print('denied', exc.errno)\n")
    done = run_exe("automaton", "--sandbox", "--project", str(project), "--task", "t", "--", sys.executable,
                   "-c", kill, str(spec), cwd=project)
    assert done.returncode == 0 and "denied 1" in done.stdout, (done.stdout, done.stderr)
    time.sleep(3)
    assert "daemon" not in spec.read_text()


# ---- --sandbox is a human's way to start an agent, never an agent's way to widen ----------------

def test_sandbox_from_inside_an_agents_session_is_refused(project: Path) -> None:
    for marker in ("CLAUDECODE", "GEMINI_CLI", "CODEX_SANDBOX"):
        done = run_exe("automaton", "--sandbox", "--project", str(project), "--", "true", cwd=project,
                       env={**os.environ, marker: "1", "AUTOMATON_APPROVER": "alice"})
        assert done.returncode == 1, done.stderr
        assert f"may be an agent's ({marker} is set)" in done.stderr and done.stderr.count("\n") == 1


def test_sandbox_for_a_task_other_than_the_focus_needs_a_human(project: Path, human: None) -> None:
    bring_task(project, "t", "research", focus=True)
    bring_task(project, "other", "implement", focus=False)
    env = {k: v for k, v in os.environ.items() if k != "AUTOMATON_APPROVER"}
    wider = run_exe("automaton", "--sandbox", "--project", str(project), "--task", "other", "--", "true",
                    cwd=project, env=env)
    assert wider.returncode == 1 and "--sandbox --task other (not the focused task)" in wider.stderr
    assert run_exe("automaton", "--sandbox", "--project", str(project), "--task", "t", "--", "true",
                   cwd=project, env=env).returncode == 0  # the focused task: no human needed
    human = run_exe("automaton", "--sandbox", "--project", str(project), "--task", "other", "--", "true",
                    cwd=project, env={**env, "AUTOMATON_APPROVER": "alice"})
    assert human.returncode == 0, human.stderr


def test_a_supervisor_killed_outright_takes_its_command_with_it(project: Path) -> None:
    (project / "src").mkdir()
    marker = project / "src" / "late.txt"  # writable to the session (no task: the project's entries)
    script = (f"import time, pathlib\nprint('up', flush=True)\ntime.sleep(3)\n"
              f"pathlib.Path({str(marker)!r}).write_text('x')\n")
    exe = Path(sys.executable).parent / "automaton"
    with subprocess.Popen([str(exe), "--sandbox", "--project", str(project), "--", sys.executable, "-c", script],
                          cwd=project, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None and proc.stdout.readline() == "up\n"
        proc.kill()  # SIGKILL: the supervisor gets no chance to clean up
        proc.wait(timeout=10)
    time.sleep(4)
    assert not marker.exists()  # the command died with its supervisor


def test_a_program_linked_from_node_modules_bin_starts_with_its_sibling_packages(
        project: Path, tmp_path: Path, human: None) -> None:
    # npm's layout, outside the project under /tmp (private in the sandbox): `.bin/tool` is a
    # link to the package's script, which loads a sibling package. Before, the link's folder was
    # kept visible but not its target: exec failed with ENOENT ("command not found", exit 127).
    modules = tmp_path / "npm" / "node_modules"
    (modules / "tool" / "bin").mkdir(parents=True)
    (modules / "dep").mkdir()
    (modules / "dep" / "dep.py").write_text("WORD = 'sibling loaded'\n")
    script = modules / "tool" / "bin" / "tool.py"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(modules / 'dep')!r})\n"
                      "import dep\nprint(dep.WORD)\n")
    script.chmod(0o755)
    (modules / ".bin").mkdir()
    (modules / ".bin" / "tool").symlink_to("../tool/bin/tool.py")
    bring_task(project, "t", "implement", focus=True)
    done = run_exe("automaton", "--sandbox", "--project", str(project), "--", str(modules / ".bin" / "tool"),
                   cwd=project)
    assert done.returncode == 0, done.stderr
    assert "sibling loaded" in done.stdout
