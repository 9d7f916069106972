"""Detached sign-offs: `--approve`/`--focus` stay refused for any process an agent started, however
it was detached, and when the process table cannot be read (fail closed). The OS is simulated
with a fake process reader (monkeypatched), never by breaking /proc."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from automaton.commands import ancestry, human
from automaton.commands.ancestry import Proc
from tests.helpers import run_cli
from tests.hooks.conftest import assert_denied

ME = os.getpid()
PR_SET_CHILD_SUBREAPER = 36  # prctl(2)
CLAUDE_JS = "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"
SHELL, TERMINAL = 900, 800


class FakeTable:
    """A process table: pid -> Proc, sessions computed from the entries."""

    def __init__(self, *procs: Proc) -> None:
        self.procs = {p.pid: p for p in procs}

    def proc(self, pid: int) -> Proc | None:
        return self.procs.get(pid)

    def session(self, sid: int) -> list[int] | None:
        return [p.pid for p in self.procs.values() if p.sid == sid]


def proc(pid: int, ppid: int, sid: int, comm: str, env: frozenset[str] | None = frozenset({"HOME"}),
         uid: int = 1000, argv: tuple[str, ...] = (), tty: int = 0) -> Proc:
    return Proc(pid, ppid, sid, uid, comm, argv or (comm,), env, tty)


def human_tree(*extra: Proc, me_sid: int = SHELL, me_ppid: int = SHELL) -> FakeTable:
    """automaton (this process) <- bash (session leader) <- terminal <- systemd --user <- init."""
    return FakeTable(proc(ME, me_ppid, me_sid, "automaton"), proc(SHELL, TERMINAL, SHELL, "bash"),
                     proc(TERMINAL, 700, TERMINAL, "gnome-terminal-"), proc(700, 1, 700, "systemd"),
                     proc(1, 0, 1, "systemd", env=None, uid=0), *extra)


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch) -> Callable[[FakeTable | None], None]:
    def use(fake: FakeTable | None) -> None:
        monkeypatch.setattr(human, "READER", lambda: fake)
    return use


def test_a_human_terminal_tree_is_a_human(table: Callable[[FakeTable | None], None]) -> None:
    table(human_tree())
    assert human.agent_ancestor() is None


@pytest.mark.parametrize("fake, needle", [
    (None, "cannot be read on this system"),  # no /proc, no ps (Windows, a locked-down sandbox)
    (FakeTable(), "its own entry"),  # /proc mounted but empty to us
    (human_tree(proc(SHELL, TERMINAL, SHELL, "bash", env=None)), "environment of ancestor process 900"),
    (FakeTable(proc(ME, SHELL, SHELL, "automaton")), "ancestor process 900 cannot be seen"),
])
def test_an_unreadable_ancestry_is_not_a_human(table: Callable[[FakeTable | None], None], fake: FakeTable | None,
                                               needle: str) -> None:
    table(fake)
    why = human.agent_ancestor()
    assert why is not None and needle in why


@pytest.mark.parametrize("fake, needle", [
    # env -i / env -u: the marker is gone from the child, still in the agent's shell above it
    (human_tree(proc(SHELL, TERMINAL, SHELL, "bash", env=frozenset({"CLAUDECODE"}))),
     "CLAUDECODE in the environment"),
    # the agent program itself above a cleaned shell
    (human_tree(proc(TERMINAL, 700, TERMINAL, "node", argv=("node", CLAUDE_JS))), "is an agent"),
    (human_tree(proc(TERMINAL, 700, TERMINAL, "codex")), "(codex) is an agent"),
    # setsid / double fork / nohup after the shell exited: reparented to init or a subreaper
    (human_tree(me_ppid=1, me_sid=ME), "its parent is systemd"),
    (human_tree(me_ppid=700, me_sid=ME), "its parent is systemd"),
    # in a container init may have any name: a parent that is pid 1 is init
    (FakeTable(proc(ME, 1, ME, "automaton"), proc(1, 0, 1, "process_api", env=None, uid=0)), "its parent is"),
    # one process removed: `(setsid bash -c "automaton …" &)`, `setsid timeout 60 automaton …`, under
    # init or under a desktop's systemd --user (a subreaper)
    (FakeTable(proc(ME, 600, 600, "automaton"), proc(600, 1, 600, "bash"),
               proc(1, 0, 1, "process_api", env=None, uid=0)), "ancestor process 600 (bash) leads a session"),
    (human_tree(proc(ME, 600, 600, "automaton"), proc(600, 700, 600, "timeout")), "(timeout) leads a session"),
    (human_tree(proc(ME, 601, 600, "automaton"), proc(601, 600, 600, "sh"),
                proc(600, 700, 600, "python3.12", argv=("/usr/bin/python3.12", "-c", "…"))),
     "(python3.12) leads a session"),
    # still in the agent's session, whose leader is gone
    (human_tree(proc(SHELL, TERMINAL, 555, "bash"), me_sid=555), "leader of its session (process 555)"),
    # at / cron / anacron
    (human_tree(proc(SHELL, 600, SHELL, "sh"), proc(600, 1, 600, "atd", uid=0)), "scheduler atd"),
    (human_tree(proc(SHELL, 600, SHELL, "sh"), proc(600, 1, 600, "cron", uid=0)), "scheduler cron"),
    # systemd-run: the unit's process is a child of the service manager
    (FakeTable(proc(ME, 700, ME, "automaton"), proc(700, 1, 700, "systemd"),
               proc(1, 0, 1, "systemd", env=None, uid=0)), "its parent is systemd"),
    # another process of the same session is the agent (it started us and exited, its sibling stays)
    (human_tree(proc(950, SHELL, SHELL, "gemini")), "same session"),
    (human_tree(proc(951, SHELL, SHELL, "python3", env=frozenset({"AUTOMATON_LOOP_DIR"}))), "same session"),
])
def test_an_agent_or_a_detached_start_is_not_a_human(table: Callable[[FakeTable | None], None], fake: FakeTable,
                                                     needle: str) -> None:
    table(fake)
    why = human.agent_ancestor()
    assert why is not None and needle in why, why


def test_terminals_and_multiplexers_hang_off_init_too(table: Callable[[FakeTable | None], None]) -> None:
    """A tmux server and a CI runner are session leaders without a terminal under init: their
    shells are humans' (a shell there with a terminal is a login's, too)."""
    tmux = FakeTable(proc(ME, SHELL, SHELL, "automaton"), proc(SHELL, 500, SHELL, "bash", tty=34816),
                     proc(500, 1, 500, "tmux: server"), proc(1, 0, 1, "systemd", env=None, uid=0))
    table(tmux)
    assert human.agent_ancestor() is None
    ci = FakeTable(proc(ME, SHELL, SHELL, "automaton"), proc(SHELL, 500, SHELL, "bash"),
                   proc(500, 1, 500, "Runner.Worker"), proc(1, 0, 1, "process_api", env=None, uid=0))
    table(ci)
    assert human.agent_ancestor() is None
    shell_with_terminal = FakeTable(proc(ME, SHELL, SHELL, "automaton"), proc(SHELL, 1, SHELL, "bash", tty=1025),
                                    proc(1, 0, 1, "systemd", env=None, uid=0))
    table(shell_with_terminal)
    assert human.agent_ancestor() is None


def test_a_login_boundary_ends_the_walk_but_an_agent_cannot_fake_one(
        table: Callable[[FakeTable | None], None]) -> None:
    """ssh: the user's shell under sshd-session (the user's uid, unreadable: started by root sshd)."""
    ssh = FakeTable(proc(ME, SHELL, SHELL, "automaton"), proc(SHELL, 500, SHELL, "bash"),
                    proc(500, 400, 400, "sshd-session", env=None), proc(400, 1, 400, "sshd", env=None, uid=0),
                    proc(1, 0, 1, "systemd", env=None, uid=0))
    table(ssh)
    assert human.agent_ancestor() is None
    # the same name on a process the agent owns (non-dumpable, parent the agent's) is no boundary
    fake = FakeTable(proc(ME, SHELL, SHELL, "automaton"), proc(SHELL, 500, SHELL, "bash"),
                     proc(500, 450, 450, "sshd-session", env=None), proc(450, 1, 450, "python3"),
                     proc(1, 0, 1, "systemd", env=None, uid=0))
    table(fake)
    assert "cannot be read" in (human.agent_ancestor() or "")


@pytest.mark.parametrize("action", [("--approve", "--task", "demo"), ("--focus", "demo")])
def test_the_cli_refuses_human_acts_when_proc_cannot_be_read(
        project: Path, make_task: Callable[..., Path], table: Callable[[FakeTable | None], None],
        monkeypatch: pytest.MonkeyPatch, action: tuple[str, ...]) -> None:
    make_task("demo", "research:awaiting_approval", focus=False)
    monkeypatch.setenv("AUTOMATON_APPROVER", "alice")
    table(None)
    done = run_cli(*action, "--project", str(project), tty=True)
    assert done.code == 1 and "may be an agent's" in done.err and "cannot be read" in done.err, done.err
    assert not (project / ".automaton/focus").exists()
    table(human_tree())  # the same human, once the table can be read
    assert run_cli(*action, "--project", str(project)).code == 0


def test_the_system_reader_sees_this_test_as_no_agent() -> None:
    """The real /proc: the test process (run from a developer's or CI's shell) is a human's."""
    if ancestry.system_reader() is None:
        pytest.skip("no process table on this system")
    assert human.agent_ancestor() is None


@pytest.mark.parametrize("how", ['(p=$BASHPID; setsid {py} &)', '(p=$BASHPID; setsid bash -c "{py}" &)',
                                 '(p=$BASHPID; setsid timeout 30 {py} &)'])
def test_a_real_double_fork_is_not_a_human(tmp_path: Path, how: str, request: pytest.FixtureRequest) -> None:
    """The real process table: what an agent's shell detaches with setsid and a double fork (its
    parent exits at once, so it hangs off init or the nearest subreaper)."""
    if not os.path.exists("/proc/self/stat") or shutil.which("setsid") is None:
        pytest.skip("needs Linux /proc and setsid")
    from automaton.sandbox import reaper

    if reaper._subreaper:  # an earlier test's tick made this process a subreaper: orphans would come here
        reaper.prctl(PR_SET_CHILD_SUBREAPER, 0, "prctl(PR_SET_CHILD_SUBREAPER)")
        request.addfinalizer(lambda: reaper.prctl(PR_SET_CHILD_SUBREAPER, 1, "prctl(PR_SET_CHILD_SUBREAPER)"))
    out = tmp_path / "why.txt"
    probe = tmp_path / "probe.py"
    # The probe first waits for the subshell that started it to be gone (its pid is the last
    # argument): until then its parent is that subshell, not what an orphan hangs off.
    probe.write_text("import os, pathlib, sys, time\nfrom automaton.commands import human\n"
                     "end = time.monotonic() + 20\n"
                     "while os.path.exists(f'/proc/{sys.argv[2]}') and time.monotonic() < end:\n"
                     "    time.sleep(0.02)\n"
                     "pathlib.Path(sys.argv[1]).write_text(str(human.agent_ancestor()))\n")
    subprocess.run(["bash", "-c", how.format(py=f"{sys.executable} {probe} {out} $p")], check=True, timeout=30)
    deadline = time.monotonic() + 20
    while not out.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    why = out.read_text() if out.exists() else "no answer"
    assert why != "None" and ("detached" in why or "parent is" in why), why


@pytest.mark.parametrize("command", [
    "setsid ./approve.sh", "setsid -f bash -c ./approve.sh", "nohup ./approve.sh &", "./approve.sh & disown",
    "env -i PATH=/usr/bin ./approve.sh", "env - ./approve.sh", "env --ignore-environment ./approve.sh",
    "env -u CLAUDECODE ./approve.sh", "unset GEMINI_CLI; ./approve.sh", "CODEX_SANDBOX= ./approve.sh",
    "echo ./approve.sh | at now", "at -f approve.sh now + 1 minute", "batch < approve.sh",
    "systemd-run --user ./approve.sh", "systemd-run --scope --user ./approve.sh", "/usr/bin/systemd-run -t ./x",
    "echo '* * * * * ./approve.sh' | crontab -", "crontab jobs.txt", "daemonize ./approve.sh",
    "ssh localhost ./approve.sh", "ssh -p 22 me@127.0.0.1 ./approve.sh", "sudo -i ./approve.sh",
])
def test_the_hook_denies_every_detaching_form(project: Path, hook: Callable[..., object], command: str) -> None:
    assert_denied(hook("claude", {"cwd": str(project), "tool_name": "Bash",  # type: ignore[arg-type]
                                  "tool_input": {"command": command}}))
