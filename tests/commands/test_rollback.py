"""`--accept-rollback` (a human accepts a restored older copy) and the deletions `--audit` reports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from automaton.core.names import TaskRef
from automaton.store import anchor, chainlog, loops, tasks
from automaton.store.layout import Project
from tests.commands.loopkit import loop_with, tick
from tests.helpers import run_cli


def _restored_task(project: Path) -> None:
    """Task t at `research`, stopped by a human, then its research-time files put back."""
    assert run_cli("--create-task", "t", cwd=project).code == 0
    assert run_cli("--transition", "research", "--task", "t", cwd=project).code == 0
    folder = project / "tasks/t"
    saved = {p: p.read_bytes() for p in (folder / tasks.STATE, folder / tasks.LOG)}
    assert run_cli("--transition", "human_intervention", "--task", "t", cwd=project).code == 0
    for path, data in saved.items():
        path.write_bytes(data)


def test_a_deleted_task_folder_is_a_violation(project: Path) -> None:
    assert run_cli("--create-task", "t", cwd=project).code == 0
    assert run_cli("--transition", "research", "--task", "t", cwd=project).code == 0
    assert run_cli("--audit", cwd=project).code == 0
    shutil.rmtree(project / "tasks/t")
    audit = run_cli("--audit", cwd=project)
    assert audit.code == 1
    assert json.loads(run_cli("--audit", "--json", cwd=project).out)["project"][0].startswith(
        "missing: tasks/t (anchored at line 2)")
    assert "VIOLATION missing: tasks/t (anchored at line 2)" in " ".join(audit.out.split())
    assert "automaton --accept-rollback --task t" in audit.out
    again = run_cli("--create-task", "t", cwd=project)  # no silent fresh start at the same path
    assert again.code == 2 and "rolled back to line 0 of 2" in again.err


def test_a_deleted_loop_folder_is_a_violation(project: Path) -> None:
    p = loop_with(project)
    tick(p, 0.5, {"implementer": 0.5})
    folder = p.loop_dir(loops.LoopName("demo"))
    lines = len((folder / ".state.log").read_text().splitlines())  # created, approved, the tick's
    shutil.rmtree(folder)
    audit = run_cli("--audit", cwd=project)
    assert audit.code == 1 and f"missing: .automaton/loops/demo (anchored at line {lines})" in audit.out


def test_a_removed_loop_is_not_missing(project: Path, approver: str) -> None:
    loop_with(project)
    assert run_cli("--remove-loop", "demo", cwd=project).code == 0
    assert run_cli("--audit", cwd=project).code == 0


def test_accepting_a_restored_task_shows_the_lost_lines_and_re_anchors(project: Path, approver: str) -> None:
    _restored_task(project)
    no = run_cli("--accept-rollback", "--task", "t", cwd=project, tty=True, stdin="n\n")
    assert no.code == 1 and "human_intervention" in no.out and "forgets what came after line 2" in no.out
    assert tasks.load(Project(project), TaskRef.parse("t")).tamper  # nothing accepted
    yes = run_cli("--accept-rollback", "--task", "t", cwd=project, tty=True, stdin="y\n")
    assert yes.code == 0, yes.err
    assert "  - 3: " in yes.out and "TRANSITION" in yes.out  # the lost line, as written
    log = (project / "tasks/t" / tasks.LOG).read_text().splitlines()
    assert len(log) == 3 and " ROLLBACK_ACCEPTED " in log[-1] and "by=tester" in log[-1]
    assert "lost_lines=1" in log[-1] and "from_line=3" in log[-1] and "to_line=2" in log[-1]
    rec = tasks.load(Project(project), TaskRef.parse("t"))
    assert rec.tamper == "" and rec.phase == "research"
    found = anchor.read(project / "tasks/t" / tasks.LOG)
    assert found is not None and found.count == 3
    assert run_cli("--audit", cwd=project).code == 0


def test_accepting_needs_a_human_and_a_yes(project: Path) -> None:
    _restored_task(project)
    assert run_cli("--accept-rollback", "--task", "t", "--yes", cwd=project).code == 1  # no terminal, no approver
    assert tasks.load(Project(project), TaskRef.parse("t")).tamper


def test_nothing_to_accept(project: Path, approver: str) -> None:
    assert run_cli("--create-task", "t", cwd=project).code == 0
    out = run_cli("--accept-rollback", "--task", "t", "--yes", cwd=project)
    assert out.code == 1 and "nothing to accept" in out.err


def test_accept_rollback_takes_one_target(project: Path) -> None:
    assert run_cli("--accept-rollback", cwd=project).code == 2
    assert run_cli("--accept-rollback", "--task", "t", "--config", cwd=project).code == 2


def test_accepting_a_deleted_task_drops_its_anchor(project: Path, approver: str) -> None:
    assert run_cli("--create-task", "t", cwd=project).code == 0
    shutil.rmtree(project / "tasks/t")
    done = run_cli("--accept-rollback", "--task", "t", "--yes", cwd=project)
    assert done.code == 0 and "deletion is accepted" in done.out
    assert run_cli("--audit", cwd=project).code == 0
    assert run_cli("--create-task", "t", cwd=project).code == 0


def test_accepting_a_restored_loop_lets_the_gate_run(project: Path, approver: str) -> None:
    p = loop_with(project, brakes={"max_iterations": 2})
    folder = p.loop_dir(loops.LoopName("demo"))
    saved = {f: f.read_bytes() for f in (folder / loops.STATE_FILE, folder / loops.LOG_FILE)}
    tick(p, 0.5, {"implementer": 0.5})
    for path, data in saved.items():
        path.write_bytes(data)
    done = run_cli("--accept-rollback", "--loop", "demo", "--yes", cwd=project)
    assert done.code == 0, done.err
    assert "TICK_START" in done.out and "TICK " in done.out
    assert loops.inspect(p, "demo").tamper == ""
    assert chainlog.read_chain(folder / loops.LOG_FILE).ok
    assert run_cli("--check-gate", "demo", cwd=project).code == 0


def test_accepting_a_restored_config(project: Path, approver: str) -> None:
    cfg = project / ".automaton" / "config.json"
    cfg.parent.mkdir()
    cfg.write_text(json.dumps({"schema_version": 1, "scopes": {"implement": ["src/**", "lib/**"]}}))
    assert run_cli("--approve", "--config", "--yes", cwd=project).code == 0
    dot = project / ".automaton"
    saved = {p: p.read_bytes() for p in (cfg, dot / "config.log", dot / "sealed" / "config.json")}
    cfg.write_text(json.dumps({"schema_version": 1, "scopes": {"implement": ["src/**"]}}))
    assert run_cli("--approve", "--config", "--yes", cwd=project).code == 0
    for path, data in saved.items():
        path.write_bytes(data)
    assert run_cli("--audit", cwd=project).code == 1
    done = run_cli("--accept-rollback", "--config", "--yes", cwd=project)
    assert done.code == 0, done.err
    assert run_cli("--audit", cwd=project).code == 0


def test_accepting_the_rollback_of_an_unknown_task_or_loop_is_bad_input(project: Path, approver: str) -> None:
    for flag, name in (("--task", "nope"), ("--loop", "nope")):
        r = run_cli("--accept-rollback", flag, name, "--yes", cwd=project)
        assert r.code == 2 and "has no log and no anchor: check the name" in r.err and r.err.count("\n") == 1


def test_a_restored_loop_the_gate_halted_is_cleared_by_the_one_command_it_names(project: Path,
                                                                                approver: str) -> None:
    """The gate meets a restored (older) loop state and log: it halts the loop, re-sealed with a
    new log (the restored one moved aside, the counters it lost still counted), so there is no
    rollback left to accept. Its advice, the recorded halt and `--accept-rollback` all name the
    act that clears it: `--approve --loop demo`, a human's."""
    p = loop_with(project)
    folder = p.loop_dir(loops.LoopName("demo"))
    saved = {f: f.read_bytes() for f in (folder / loops.STATE_FILE, folder / loops.LOG_FILE)}
    tick(p, 0.5, {"implementer": 0.5})
    for path, data in saved.items():
        path.write_bytes(data)
    gate = run_cli("--check-gate", "demo", cwd=project)
    assert gate.code == 1 and "rolled back to line" in gate.out, gate.out + gate.err
    assert "automaton --approve --loop demo" in gate.out and "--accept-rollback" not in gate.out, gate.out
    assert "--task T | --loop NAME" not in gate.out
    again = run_cli("--check-gate", "demo", cwd=project)  # the recorded halt says the same
    assert again.code == 1 and "--accept-rollback" not in again.out and "--approve --loop demo" in again.out
    refused = run_cli("--accept-rollback", "--loop", "demo", "--yes", cwd=project)
    assert refused.code == 1
    assert "rolled back" in refused.err and "automaton --approve --loop demo" in refused.err, refused.err
    assert loops.read_state(p, "demo").iteration_count == 1  # the tick the restore hid still counts
    assert run_cli("--approve", "--loop", "demo", "--yes", cwd=project).code == 0
    assert run_cli("--check-gate", "demo", cwd=project).code == 0


def test_a_rolled_back_log_names_the_exact_command_that_accepts_it(project: Path) -> None:
    _restored_task(project)
    shown = run_cli("--phase", "--task", "t", cwd=project)
    assert "automaton --accept-rollback --task t" in shown.err + shown.out, shown.err
    assert "--task T | --loop NAME" not in shown.err + shown.out
