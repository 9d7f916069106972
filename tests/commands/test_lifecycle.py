"""`--rearm-loop` and `--remove-loop`: human acts on real git, a fake crontab and a keyed log."""

from __future__ import annotations

import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.core.chain import parse_line, verify_text
from automaton.core.names import LoopName
from automaton.store import loops
from automaton.store.key import load_key
from automaton.store.layout import Project
from automaton.store.locks import locked
from automaton.store.looplog import log_finding
from tests.commands.loopkit import add_worktree, log_lines, loop_with, tick
from tests.helpers import Result, git, run_cli
from tests.schedulers.fakes import install_crontab


def cli(p: Project, *args: str) -> Result:
    return run_cli(*args, "--project", str(p.root))


def completed(project: Path, **top: Any) -> Project:
    p = loop_with(project, **top)
    tick(p, 0.5, {"implement": 0.5})
    tick(p, 1.0, {"implement": 0.25}, complete=True)
    assert loops.read_state(p, "demo").status == "complete"
    return p


@pytest.fixture
def crontab(fake_bin: Callable[[str, str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    table = tmp_path / "crontab.txt"
    install_crontab(fake_bin, table)
    return table


# ---- --rearm-loop ---------------------------------------------------------------------------

def test_rearm_gives_a_complete_loop_a_fresh_allowance(project: Path, approver: str) -> None:
    p = completed(project, brakes={"max_iterations": 2})
    assert cli(p, "--check-gate", "demo").code == 1  # complete is terminal
    r = cli(p, "--rearm-loop", "demo", "--json")
    assert r.code == 0, r.err
    assert log_lines(p)[-1].split(" ")[1] == "REARMED"
    assert r.json == {"loop": "demo", "status": "running", "by": "tester", "iterations_at_approval": 2,
                      "spent_usd_at_approval": 0.75}
    s = loops.read_state(p, "demo")
    assert (s.status, s.iteration_count, s.iterations_at_approval, s.spent_usd,
            s.spent_usd_at_approval, s.score_history) == ("running", 2, 2, 0.75, 0.75, ())
    last = parse_line(log_lines(p)[-1])
    assert last is not None and (last.event, last.fields["by"], last.fields["iterations_at_approval"]) == (
        "REARMED", "tester", "2")
    rec = loops.inspect(p, "demo")
    assert rec.tamper == "" and verify_text("\n".join(log_lines(p)) + "\n", load_key(create=False)).ok
    gate = cli(p, "--check-gate", "demo", "--json")
    assert gate.code == 0 and gate.json["remaining_iterations"] == 2 and gate.json["remaining_budget_usd"] == 10.0
    d = cli(p, "--loop-status", "demo", "--json").json
    assert d["spend_usd"]["used"] == 0.0 and d["spend_usd"]["known"] == 0.0 and len(d["scores"]) == 2


@pytest.mark.parametrize(("status", "hint"), [
    ("running", "it is running already"), ("paused", "automaton --resume-loop demo resumes a paused loop"),
    ("halted", "automaton --approve --loop demo clears a halt"),
])
def test_rearm_refuses_every_other_status_in_one_line(project: Path, approver: str, status: str, hint: str) -> None:
    p = loop_with(project, brakes={"max_iterations": 1})
    if status == "paused":
        assert cli(p, "--pause-loop", "demo").code == 0
    if status == "halted":
        tick(p, 0.1, {"implement": 0.1})
        assert cli(p, "--check-gate", "demo").code == 1
    before = log_lines(p)
    r = cli(p, "--rearm-loop", "demo")
    assert r.code == 1 and r.out == "" and len(r.err.splitlines()) == 1
    assert f"loop demo is {status}: --rearm-loop only re-arms a complete loop ({hint})" in r.err
    assert log_lines(p) == before


def test_rearm_says_how_to_move_the_goal(project: Path, approver: str) -> None:
    p = completed(project)
    out = cli(p, "--rearm-loop", "demo").out.splitlines()
    assert out[0] == "demo: complete -> running (re-armed by tester; a fresh allowance from iteration 2 and $0.7500)"
    assert "edit loop.json and run automaton --approve --loop demo" in out[1]


def test_rearm_needs_a_human_and_no_running_tick(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = completed(project)
    r = cli(p, "--rearm-loop", "demo")
    assert r.code == 1 and "--rearm-loop is a human sign-off" in r.err
    monkeypatch.setenv("AUTOMATON_APPROVER", "alice")
    monkeypatch.setenv("CLAUDECODE", "1")
    assert cli(p, "--rearm-loop", "demo").code == 1
    monkeypatch.delenv("CLAUDECODE")
    with locked(loops.tick_lock_path(p, "demo"), timeout_s=0):
        r = cli(p, "--rearm-loop", "demo")
    assert r.code == 1 and "a tick of loop demo is running" in r.err
    assert loops.read_state(p, "demo").status == "complete"
    assert cli(p, "--rearm-loop", "nope").code == 2


def test_rearmed_marks_may_move_like_an_approval_in_the_log_check(project: Path, approver: str) -> None:
    p = completed(project)
    assert cli(p, "--rearm-loop", "demo").code == 0
    lines = loops.inspect(p, "demo").chain.lines
    assert log_finding(lines, Path("log")) == ""
    low = dict(lines[-1].fields, iterations_at_approval="0")  # a mark moving down: allowed on REARMED only
    assert log_finding([*lines, type(lines[-1])(lines[-1].ts, "REARMED", low)], Path("log")) == ""
    assert "goes down" in log_finding([*lines, type(lines[-1])(lines[-1].ts, "TICK", low)], Path("log"))


# ---- --remove-loop --------------------------------------------------------------------------

def test_remove_uninstalls_removes_the_worktree_keeps_the_branch_and_archives(
        project: Path, approver: str, crontab: Path) -> None:
    p = loop_with(project)
    other = loop_with(project, "other")
    other_wt = add_worktree(other, "other")
    wt = add_worktree(p)
    (wt / "src.py").write_text("work\n")
    git(wt, "add", "-A")
    git(wt, "commit", "-q", "-m", "tick 1")
    (wt / "scratch.txt").write_text("uncommitted\n")
    tick(p, 0.5, {"implement": 0.1})
    assert cli(p, "--install-schedule", "demo").code == 0
    assert cli(p, "--install-schedule", "other").code == 0
    before = log_lines(p)

    r = cli(p, "--remove-loop", "demo", "--json")
    assert r.code == 0, r.err
    d = r.json
    assert (d["worktree_removed"], d["discarded_changes"], d["branch"], d["schedule_removed"]) == (
        True, 1, "kept", True)
    archive = Path(d["archive"])
    assert archive.parent == p.loops_dir / ".archive" and archive.name.startswith("demo-2")
    assert not p.loop_dir(LoopName("demo")).exists()
    table = crontab.read_text()
    assert "# automaton-loop:demo\n" not in table and "# automaton-loop:other\n" in table
    worktrees = git(project, "worktree", "list", "--porcelain")
    assert str(wt) not in worktrees and str(other_wt) in worktrees  # only that one path
    assert git(project, "rev-parse", "--verify", "loop/demo").strip()  # the branch keeps the commits
    archived = (archive / ".state.log").read_text().splitlines()
    assert archived[: len(before)] == before and len(archived) == len(before) + 2  # UNINSTALLED, REMOVED
    last = parse_line(archived[-1])
    assert last is not None and last.event == "REMOVED" and last.fields["by"] == "tester"
    assert last.fields["archive"] == archive.relative_to(p.root).as_posix() and last.fields["branch"] == "kept"
    assert verify_text("\n".join(archived) + "\n", load_key(create=False)).ok
    assert (archive / ".state.loop").is_file() and (archive / "loop.json").is_file()
    assert (archive / "runs" / "1" / "cost.json").is_file()
    assert not (archive / "worktree").exists() and not (archive / ".lock").exists()

    assert [r["name"] for r in cli(p, "--loop-list", "--json").json["loops"]] == ["other"]
    assert ".archive" not in cli(p, "--audit").out
    assert ".archive" not in git(project, "status", "--porcelain", "--untracked-files=all")
    again = cli(p, "--create-loop", "demo", "--from-template", "t-demo")
    assert again.code == 1 and "branch loop/demo" in again.err  # the kept branch would hand out a fresh start


def test_remove_with_delete_branch_lets_the_name_start_clean(project: Path, approver: str) -> None:
    p = loop_with(project)
    add_worktree(p)
    tick(p, 0.5, {"implement": 0.1})
    r = cli(p, "--remove-loop", "demo", "--delete-branch")
    assert r.code == 0, r.err
    assert "deleted branch loop/demo" in r.out and "kept branch" not in r.out
    assert git(project, "branch", "--list", "loop/demo").strip() == ""
    assert cli(p, "--create-loop", "demo", "--from-template", "t-demo").code == 0
    s = loops.read_state(p, "demo")
    assert (s.iteration_count, s.spent_usd) == (0, 0.0)
    assert len(list((p.loops_dir / ".archive").iterdir())) == 1
    assert cli(p, "--remove-loop", "demo").code == 0  # a second archive of the same name
    assert len(list((p.loops_dir / ".archive").iterdir())) == 2


def test_remove_deletes_the_verifiers_kept_export(project: Path, approver: str) -> None:
    from automaton.store.layout import kept_export_of

    p = loop_with(project)
    kept = kept_export_of(p.root, "demo")
    (kept / "src").mkdir(parents=True)
    (kept / "src" / "calc.py").write_text("x = 1\n")
    kept.with_name(kept.name + ".idle").touch()
    kept.with_name(kept.name + ".size").write_text("7\n")  # its recorded size (runner.exportcache)
    kept.with_name(kept.name + ".stat").write_text("x\n")  # its stat record (git.export.StatRecord)
    other = kept_export_of(p.root, "other")  # another loop's export stays
    other.mkdir(parents=True)
    assert cli(p, "--remove-loop", "demo").code == 0
    assert not kept.exists() and not kept.with_name(kept.name + ".idle").exists() and other.is_dir()
    assert not kept.with_name(kept.name + ".size").exists()  # no longer counted against the bound
    assert not kept.with_name(kept.name + ".stat").exists()


def test_remove_refuses_while_a_tick_runs_and_without_a_human(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = loop_with(project)
    r = cli(p, "--remove-loop", "demo")
    assert r.code == 1 and "--remove-loop is a human sign-off" in r.err
    monkeypatch.setenv("AUTOMATON_APPROVER", "alice")
    with locked(loops.tick_lock_path(p, "demo"), timeout_s=0):
        r = cli(p, "--remove-loop", "demo")
    assert r.code == 1 and "a tick of loop demo is running: --remove-loop only between ticks" in r.err
    assert loops.read_state(p, "demo").status == "running" and not (p.loops_dir / ".archive").exists()
    assert cli(p, "--remove-loop", "nope").code == 2
    assert cli(p, "--delete-branch", "--project", str(p.root)).code == 2  # a modifier alone is no action


def test_remove_keeps_a_tampered_loop_as_evidence(project: Path, approver: str) -> None:
    p = loop_with(project)
    state = p.loop_dir(LoopName("demo")) / loops.STATE_FILE
    state.write_text(state.read_text().replace('"iteration_count": 0', '"iteration_count": 0 '))
    assert loops.inspect(p, "demo").tamper
    r = cli(p, "--remove-loop", "demo", "--json")
    assert r.code == 0, r.err
    archive = Path(r.json["archive"])
    assert '"iteration_count": 0 ' in (archive / loops.STATE_FILE).read_text()  # kept as found


def test_remove_and_create_name_the_same_branch_step_and_it_works(project: Path, approver: str) -> None:
    p = loop_with(project)
    add_worktree(p)
    tick(p, 0.5, {"implement": 0.1})
    removed = cli(p, "--remove-loop", "demo")
    assert removed.code == 0, removed.err
    step = "git branch -m loop/demo loop/demo-old"
    assert step in removed.out and "branch -D" not in removed.out
    refused = cli(p, "--create-loop", "demo", "--from-template", "t-demo")
    assert refused.code == 1 and step in refused.err
    git(project, "branch", "-m", "loop/demo", "loop/demo-old")  # the step both name
    assert cli(p, "--create-loop", "demo", "--from-template", "t-demo").code == 0
    assert git(project, "rev-parse", "--verify", "loop/demo-old").strip()  # its commits kept
