"""The commit is part of the tick's truth: real ticks against real git when committing fails, when
the identity is half set, when another worktree of the repository is away, and when the runner
itself runs inside a Claude Code session."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from automaton.runner.tick import tick
from automaton.store import loops as store
from automaton.store.layout import Project
from tests.helpers import git
from tests.runner.loopkit import make_loop

PY = sys.executable
SCORE_FROM_FILE = {"roles": {"implement": {"prompt": "implement.md"},
                             "verify": {"command": [PY, "-c", "import pathlib; print(pathlib.Path('src/score.txt')"
                                                              ".read_text())"], "score": "summary"},
                             "orchestrate": {"builtin": True}}}


def step(text: str) -> dict[str, Any]:
    return {"actions": [{"write": "src/score.txt", "content": text}], "text": "did it", "cost_usd": 0.01}


def log_lines(p: Project) -> list[str]:
    return (p.loop_dir(store.require_tracked(p, "demo")) / ".state.log").read_text().splitlines()


def test_a_commit_that_fails_halts_and_never_completes_the_loop(project: Path) -> None:
    proj = make_loop(project, script={"implement": [step("1 passed, 1 failed"), step("4 passed")]},
                     **SCORE_FROM_FILE)
    assert tick(proj, "demo").code == 0  # creates the worktree
    wt = Path(store.read_state(proj, "demo").worktree_path)
    lock = (wt / git(wt, "rev-parse", "--git-path", "index.lock").strip()).resolve()
    lock.write_text("")
    # A git process of this repository is running: the lock is not stale, whatever its age.
    holder = subprocess.Popen(["git", "cat-file", "--batch"], cwd=wt, stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        out = tick(proj, "demo")  # tick 2's agent writes "4 passed": the verifier would complete the loop
    finally:
        holder.communicate(input=b"", timeout=30)
    assert lock.exists()  # never removed while git may be using it
    assert out.code == 0 and out.data is not None and out.data["commit"] is None
    s = store.read_state(proj, "demo")
    assert (s.status, s.halt_reason) == ("halted", "human_intervention")
    assert s.halt_detail.startswith("commit_failed: git add failed:")
    assert "index.lock" in s.halt_detail and f"remove {lock}" in s.halt_detail
    halt = next(line for line in reversed(log_lines(proj)) if " HALT " in line)
    assert "commit_failed" in halt and "File exists" in halt  # git's own message
    assert out.data["verdict"]["score"] is None and s.score_history == (0.5,)  # never verified
    assert not (Path(out.data["run_dir"]) / "verify.log").exists()


@pytest.mark.parametrize("only", ["user.name", "user.email"])
def test_half_an_identity_commits_as_automaton(project: Path, monkeypatch: pytest.MonkeyPatch, only: str) -> None:
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(var, raising=False)
    git(project, "config", only, "Only Name" if only == "user.name" else "only@example.com")
    proj = make_loop(project, script={"implement": [step("1 passed, 1 failed")]}, **SCORE_FROM_FILE)
    out = tick(proj, "demo")
    assert out.data is not None and out.data["commit"] and out.data["halt"] is None
    who = git(project, "log", "-1", "--format=%an <%ae>|%cn <%ce>", "loop/demo").strip()
    assert who == "automaton <automaton@localhost>|automaton <automaton@localhost>"


def test_a_bystander_worktree_whose_folder_is_away_survives_ten_ticks(project: Path, tmp_path: Path) -> None:
    bystander, away = tmp_path / "bystander", tmp_path / "away"
    git(project, "worktree", "add", "-q", "-b", "by", str(bystander))
    shutil.move(str(bystander), str(away))  # e.g. on an unmounted disk
    steps = [step(f"{n} passed, {11 - n} failed") for n in range(1, 11)]
    proj = make_loop(project, script={"implement": steps},
                     brakes={"max_iterations": 20, "score_plateau_window": 20}, **SCORE_FROM_FILE)
    for n in range(10):
        out = tick(proj, "demo")
        assert out.code == 0 and out.data is not None and out.data["halt"] is None, (n, out.lines)
    assert store.read_state(proj, "demo").iteration_count == 10
    assert f"worktree {bystander}\n" in git(project, "worktree", "list", "--porcelain")
    shutil.move(str(away), str(bystander))
    assert git(bystander, "rev-parse", "--abbrev-ref", "HEAD").strip() == "by"  # still a working worktree


REFUSE_NESTED = """
    sys.stdin.read()
    if os.environ.get("CLAUDECODE"):
        sys.stderr.write("Error: Claude Code cannot be launched inside another Claude Code session.\\n"
                         "Nested sessions share runtime resources and will crash all active sessions.\\n"
                         "To bypass this check, unset the CLAUDECODE environment variable.\\n")
        sys.exit(1)
    os.makedirs("src", exist_ok=True)
    open("src/score.txt", "w").write("1 passed, 1 failed\\n")
    print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "done",
                      "total_cost_usd": 0.1, "usage": {}}))
    """


def test_a_tick_from_inside_a_claude_code_session(project: Path, fake_bin: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from automaton.harnesses import _env

    monkeypatch.setenv("CLAUDECODE", "1")
    monkeypatch.setenv("CLAUDE_CODE_ENTRYPOINT", "cli")
    fake_bin("claude", REFUSE_NESTED)
    # sandbox off: the fake claude records its argv beside itself, outside the worktree
    proj = make_loop(project, harness={"name": "claude", "args": []}, sandbox="off", **SCORE_FROM_FILE)
    out = tick(proj, "demo")  # the runner strips the markers: the agent starts
    assert out.code == 0 and out.data is not None and out.data["halt"] is None
    s = store.read_state(proj, "demo")
    assert (s.status, s.iteration_count, s.spent_usd) == ("running", 1, 0.1)

    # A marker forced through (as a wrapper or settings file would): claude refuses like the real one.
    monkeypatch.setattr(_env, "_EXACT", _env._EXACT - {"CLAUDECODE"})
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["cost_usd"] == 0.0
    s = store.read_state(proj, "demo")
    assert (s.status, s.halt_reason) == ("halted", "human_intervention")
    assert s.halt_detail.startswith("harness_unavailable: claude refused to start inside another Claude Code")
    assert s.spent_usd == 0.1  # the refused tick charged $0
    tick_line = [line for line in log_lines(proj) if " TICK n=2 " in line][-1]
    assert "cost=0.0000" in tick_line and "halted=True" in tick_line
    assert json.loads((Path(out.data["run_dir"]) / "cost.json").read_text())["counted_usd"] == 0.0


CANNOT_START = """
    sys.stdin.read()
    sys.stderr.write("Error: failed to initialize in-process app-server client: Permission denied (os error 13)\\n")
    sys.exit(1)
    """


def test_an_agent_cli_that_cannot_start_halts_and_charges_nothing(project: Path, fake_bin: Any) -> None:
    fake_bin("codex", CANNOT_START)  # what codex-cli 0.171.0 does when its home folder is not writable
    proj = make_loop(project, harness={"name": "codex", "model": "gpt-5", "args": []}, sandbox="off",
                     **SCORE_FROM_FILE)
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["cost_usd"] == 0.0
    s = store.read_state(proj, "demo")
    assert (s.status, s.halt_reason) == ("halted", "human_intervention")
    detail = s.halt_detail or ""
    assert detail.startswith("harness_unavailable: codex exited 1 before printing any output of its own"
                             " (Error: failed to initialize in-process app-server client")
    assert s.spent_usd == 0.0 and s.score_history == ()  # never verified, never charged
    assert not (Path(out.data["run_dir"]) / "verify.log").exists()


def test_an_agent_cli_that_edited_files_then_died_silently_is_charged(project: Path, fake_bin: Any) -> None:
    # An agent that makes its CLI exit before the CLI's own output (claude -p prints its result
    # only at the end) still halts harness_unavailable, but files it changed show it ran: charged.
    fake_bin("codex", """
        import pathlib
        sys.stdin.read()
        pathlib.Path("src").mkdir(exist_ok=True)
        pathlib.Path("src/score.txt").write_text("1 passed")
        sys.stderr.write("Error: failed to initialize in-process app-server client: Permission denied\\n")
        sys.exit(1)
        """)
    proj = make_loop(project, harness={"name": "codex", "model": "gpt-5", "args": []}, sandbox="off",
                     **SCORE_FROM_FILE)
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["commit"]
    s = store.read_state(proj, "demo")
    assert s.halt_reason == "human_intervention" and (s.halt_detail or "").startswith("harness_unavailable: ")
    assert out.data["cost_usd"] > 0 and s.spent_usd == out.data["cost_usd"]  # max_tick_usd: unknown, not free


@pytest.mark.parametrize("program", ["/nonexistent/agent-prog", "no-such-agent-prog-on-path"])
def test_a_command_harness_whose_program_is_missing_halts_before_counting(project: Path, program: str) -> None:
    proj = make_loop(project, harness={"name": "command", "command": [program], "args": []}, sandbox="off",
                     **SCORE_FROM_FILE)
    out = tick(proj, "demo")
    assert out.code == 1 and out.data is not None and out.data["ran"] is False
    assert out.data["reason"] == "harness_unavailable" and f"{program}: not found" in out.data["detail"]
    s = store.read_state(proj, "demo")
    assert (s.status, s.halt_reason) == ("halted", "human_intervention")
    assert (s.halt_detail or "").startswith(f"harness_unavailable: {program}: not found")
    assert s.iteration_count == 0 and s.spent_usd == 0.0  # not a tick: nothing counted, nothing charged
    assert not any(line.split()[1] == "TICK_START" for line in log_lines(proj))
