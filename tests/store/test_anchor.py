"""Anchors: a keyed log restored to an earlier, self-consistent copy reads as TAMPERED.

Each attack copies a state file and its keyed log aside, lets automaton move on, then puts the
copy back with plain file writes (or git), exactly as an attacker without the key would. Every
one of these passed every check before anchors existed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from automaton.core.names import TaskRef
from automaton.store import anchor, chainlog, loops, tasks
from automaton.store import key as keys
from automaton.store.layout import Project
from tests.commands.loopkit import loop_with, tick
from tests.helpers import git, run_cli


def _save(*paths: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in paths}


def _restore(saved: dict[Path, bytes]) -> None:
    for path, data in saved.items():
        path.write_bytes(data)


def _task_files(project: Path, name: str = "t") -> tuple[Path, Path]:
    folder = project / "tasks" / name
    return folder / tasks.STATE, folder / tasks.LOG


def test_every_append_moves_the_anchor_to_the_new_head(project: Path) -> None:
    assert run_cli("--create-task", "t", cwd=project).code == 0
    assert run_cli("--transition", "research", "--task", "t", cwd=project).code == 0
    _, log = _task_files(project)
    found = anchor.read(log)
    lines = log.read_text().splitlines()
    assert found is not None and found.count == len(lines) == 2
    assert found.mac == lines[-1][-64:] and found.tail == tuple(lines)
    assert found.path == str(log.resolve())
    assert keys.was_anchored(log)
    assert chainlog.read_chain(log).anchor == 2


def test_a_restored_task_undoes_no_human_stop(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_cli("--create-task", "t", cwd=project).code == 0
    assert run_cli("--transition", "research", "--task", "t", cwd=project).code == 0
    saved = _save(*_task_files(project))
    assert run_cli("--transition", "human_intervention", "--task", "t", cwd=project).code == 0
    _restore(saved)  # back to `research`, with the log that sealed it
    rec = tasks.load(Project(project), TaskRef.parse("t"))
    assert "TAMPERED: rolled back to line 2 of 3" in rec.tamper
    moved = run_cli("--transition", "design", "--task", "t", cwd=project)
    assert moved.code != 0 and "rolled back to line 2 of 3" in moved.err
    assert (project / "tasks/t/.state").read_text() == "research\n"  # nothing written
    edit = run_cli("--can-edit", "--task", "t", "--file", "tasks/t/SPEC.md", cwd=project)
    assert edit.code != 0
    payload = json.dumps({"cwd": str(project), "hook_event_name": "PreToolUse", "tool_name": "Write",
                          "tool_input": {"file_path": str(project / "tasks/t/SPEC.md"), "content": "# Spec\n"}})
    monkeypatch.setenv("AUTOMATON_TASK", "t")
    hook = run_cli("--hook", "claude", cwd=project, stdin=payload)  # the agent's hook denies
    assert hook.code == 2 or '"deny"' in hook.out, (hook.code, hook.out, hook.err)
    assert "rolled back" in hook.out + hook.err


def test_another_history_of_the_same_length_is_caught(project: Path) -> None:
    assert run_cli("--create-task", "t", cwd=project).code == 0
    state, log = _task_files(project)
    saved = _save(state, log)
    assert run_cli("--transition", "research", "--task", "t", cwd=project).code == 0
    research = _save(state, log)
    _restore(saved)
    anchor.forget(log)  # as if the other history came first: its own anchor ...
    assert run_cli("--transition", "human_intervention", "--task", "t", cwd=project).code == 0
    _restore(research)  # ... then the first history, as long, is put back
    check = chainlog.read_chain(log)
    assert check.rolled_back and "another history: line 2" in check.error


def test_a_restored_loop_clears_no_exhausted_halt(project: Path) -> None:
    p = loop_with(project, brakes={"max_iterations": 2})
    folder = p.loop_dir(loops.LoopName("demo"))
    saved = _save(folder / loops.STATE_FILE, folder / loops.LOG_FILE)
    head = len((folder / loops.LOG_FILE).read_text().splitlines())  # created and first approval
    tick(p, 0.5, {"implementer": 0.5})
    tick(p, 0.6, {"implementer": 0.5})
    assert run_cli("--check-gate", "demo", cwd=project).code == 1
    assert loops.read_state(p, "demo").halt_reason == "iterations_exhausted"
    _restore(saved)  # iterations 0, spent 0, running
    assert f"rolled back to line {head} of" in loops.inspect(p, "demo").tamper
    assert run_cli("--audit", cwd=project).code == 1
    status = run_cli("--loop-status", "demo", "--json", cwd=project)
    assert "TAMPERED" in status.out + status.err
    from automaton.dashboard import views

    row = views.loop_rows([p])[0]  # the dashboard
    assert row["halt_reason"] == "state_tampered" and f"rolled back to line {head}" in row["halt_detail"]
    gate = run_cli("--check-gate", "demo", "--json", cwd=project)
    assert gate.code == 1
    state = loops.read_state(p, "demo")
    assert state.status == "halted" and state.halt_reason == "human_intervention"
    assert "state_tampered" in state.halt_detail and "rolled back" in state.halt_detail
    # the counters the restore lowered come back from what the anchor remembers of the lost lines
    assert state.iteration_count == 2 and state.spent_usd >= 1.0  # (the highest logged, as on any re-seal)
    assert loops.inspect(p, "demo").tamper == ""  # re-sealed as halted: the brake holds


def test_a_restored_config_reopens_no_narrowed_scope(project: Path, approver: str) -> None:
    cfg = project / ".automaton" / "config.json"
    cfg.parent.mkdir()
    cfg.write_text(json.dumps({"schema_version": 1, "scopes": {"implement": ["src/**", "lib/**"]}}))
    assert run_cli("--approve", "--config", "--yes", cwd=project).code == 0
    dot = project / ".automaton"
    saved = _save(cfg, dot / "config.log", dot / "sealed" / "config.json")
    cfg.write_text(json.dumps({"schema_version": 1, "scopes": {"implement": ["src/**"]}}))
    assert run_cli("--approve", "--config", "--yes", cwd=project).code == 0
    _restore(saved)
    from automaton.store import project_config as pc

    assert "rolled back to line 1 of 2" in (pc.problem(Project(project)) or "")
    assert run_cli("--audit", cwd=project).code == 1


def test_git_reset_undoes_no_human_stop(project: Path) -> None:
    assert run_cli("--create-task", "t", cwd=project).code == 0
    assert run_cli("--transition", "research", "--task", "t", cwd=project).code == 0
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "task t at research")
    assert run_cli("--transition", "human_intervention", "--task", "t", cwd=project).code == 0
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "a human stopped t")
    git(project, "reset", "-q", "--hard", "HEAD~1")
    assert (project / "tasks/t/.state").read_text() == "research\n"
    assert run_cli("--phase", "--task", "t", cwd=project).code != 0
    assert run_cli("--transition", "design", "--task", "t", cwd=project).code != 0
    assert run_cli("--can-edit", "--task", "t", "--file", "tasks/t/SPEC.md", cwd=project).code != 0
    audit = run_cli("--audit", cwd=project)
    assert audit.code == 1 and "rolled back to line 2 of 3" in audit.out


def test_git_stash_undoes_no_human_stop(project: Path) -> None:
    assert run_cli("--create-task", "t", cwd=project).code == 0
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "task t")
    assert run_cli("--transition", "human_intervention", "--task", "t", cwd=project).code == 0
    git(project, "stash", "-q")
    assert (project / "tasks/t/.state").read_text() == "new\n"
    assert "rolled back to line 1 of 2" in tasks.load(Project(project), TaskRef.parse("t")).tamper


def test_a_deleted_anchor_is_tampering_not_a_fresh_start(project: Path) -> None:
    assert run_cli("--create-task", "t", cwd=project).code == 0
    _, log = _task_files(project)
    anchor.file_of(log).unlink()
    check = chainlog.read_chain(log)
    assert check.rolled_back and "is missing" in check.error
    anchor.file_of(log).write_text("garbage\n")
    check = chainlog.read_chain(log)
    assert check.rolled_back and "not an anchor" in check.error


def test_a_log_one_line_ahead_is_accepted_and_rolled_forward_under_the_lock(project: Path) -> None:
    assert run_cli("--create-task", "t", cwd=project).code == 0
    _, log = _task_files(project)
    before = anchor.file_of(log).read_bytes()
    assert run_cli("--transition", "research", "--task", "t", cwd=project).code == 0
    anchor.file_of(log).write_bytes(before)  # as a crash between the append and the anchor leaves it
    check = chainlog.read_chain(log)
    assert check.ok and check.anchor == 1
    assert tasks.load(Project(project), TaskRef.parse("t")).tamper == ""
    chainlog.settle_anchor(log)
    found = anchor.read(log)
    assert found is not None and found.count == 2


def test_logs_keyed_before_anchors_are_read_as_before(project: Path) -> None:
    assert run_cli("--create-task", "t", cwd=project).code == 0
    _, log = _task_files(project)
    anchor.file_of(log).unlink()
    keys.mark_path(log).write_text(f"{log.resolve()}\n")  # a mark as automaton wrote it before anchors
    assert chainlog.read_chain(log).ok
    assert run_cli("--transition", "research", "--task", "t", cwd=project).code == 0  # the write anchors it
    found = anchor.read(log)
    assert found is not None and found.count == 2 and keys.was_anchored(log)


def test_a_completed_task_carries_its_anchor(project: Path, approver: str) -> None:
    assert run_cli("--create-task", "t", cwd=project).code == 0
    assert run_cli("--transition", "human_intervention", "--task", "t", cwd=project).code == 0
    done = run_cli("--approve", "--task", "t", "--to", "complete", cwd=project)
    assert done.code == 0, done.err
    old = project / "tasks/t" / tasks.LOG
    new = project / "tasks/complete/t" / tasks.LOG
    assert new.is_file() and anchor.read(old) is None
    found = anchor.read(new)
    assert found is not None and found.count == len(new.read_text().splitlines())
    assert run_cli("--audit", cwd=project).code == 0


def test_a_reader_in_the_sandbox_keeps_todays_behaviour(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_cli("--create-task", "t", cwd=project).code == 0
    state, log = _task_files(project)
    saved = _save(state, log)
    assert run_cli("--transition", "research", "--task", "t", cwd=project).code == 0
    _restore(saved)

    def hidden(create: bool) -> bytes:
        raise keys.KeyHidden("hidden")

    monkeypatch.setattr(keys, "load_key", hidden)
    check = chainlog.read_chain(log)  # neither the key nor the anchors can be read there
    assert check.ok and check.unverified and check.anchor == -1


def test_unreadable_anchor_files_are_not_anchors(tmp_path: Path) -> None:
    mac = b"a" * 64
    for bad in (b"", b"x y\n", b"2 " + mac + b"\n/p\n", b"1 " + mac + b"\n/p\nline mac=" + b"b" * 64 + b"\n"):
        (tmp_path / "a.anchor").write_bytes(bad)
        with pytest.raises(anchor.Unreadable):
            anchor.read_file(tmp_path / "a.anchor")


def test_a_copied_project_is_a_new_path(project: Path, tmp_path: Path) -> None:
    assert run_cli("--create-task", "t", cwd=project).code == 0
    moved = tmp_path / "moved"
    shutil.move(str(project), moved)
    log = moved / "tasks/t" / tasks.LOG
    assert anchor.read(log) is None and chainlog.read_chain(log).ok  # a new path: not anchored yet
    audit = run_cli("--audit", cwd=moved)
    assert "anchored 1 keyed log(s) that had no anchor yet" in audit.out
    assert "missing" not in audit.out
    assert "anchored 1" not in run_cli("--audit", cwd=moved).out  # once


@pytest.mark.parametrize(("log", "command"), [
    ("/p/tasks/t/.state.log", "automaton --accept-rollback --task t"),
    ("/p/tasks/complete/t/.state.log", "automaton --accept-rollback --task t"),
    ("/p/tasks/t/sub/.state.log", "automaton --accept-rollback --task t/sub"),
    ("/p/tasks/complete/t/sub/.state.log", "automaton --accept-rollback --task t/sub"),
    ("/p/.automaton/loops/l1/.state.log", "automaton --accept-rollback --loop l1"),
    ("/p/.automaton/config.log", "automaton --accept-rollback --config"),
    ("/p/.automaton/focus.log", "automaton --focus TASK"),
    ("/elsewhere/x.log", "automaton --accept-rollback --task T | --loop NAME | --config"),
])
def test_the_accepting_command_is_named_for_the_log(log: str, command: str) -> None:
    assert anchor.accept_command(log) == command
