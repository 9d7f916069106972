"""The loop enforcement surface (docs/architecture.md#stable-interfaces), one test per behaviour, through the CLI."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from automaton.store import loops
from automaton.store.layout import Project
from tests.commands.test_loops import add_worktree, cli, gate, seed_layout, set_state, state
from tests.helpers import git
from tests.store.test_loops import log_text, make_loop

R2_FIELDS = {"schema_version", "name", "status", "halt_reason", "iteration_count", "resumed_count", "last_tick_at",
             "last_verdict", "score_history", "current_task", "worktree_branch", "worktree_path"}
ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


# ---- cmd_create_loop ------------------------------------------------------------------------

def test_cmd_create_loop_creates_dir_loop_json_and_default_state(project: Path) -> None:
    r = cli(project, "--create-loop", "demo", "--from-template", "ci-triage")
    assert r.code == 0, r.err
    folder = project / ".automaton" / "loops" / "demo"
    assert json.loads((folder / "loop.json").read_text())["name"] == "demo"
    s = json.loads((folder / ".state.loop").read_text())
    assert (s["status"], s["halt_reason"], s["iteration_count"], s["resumed_count"]) == ("running", None, 0, 0)
    assert (s["score_history"], s["worktree_path"], s["last_verdict"]) == ([], None, None)
    assert re.fullmatch(rf"{ISO} CREATED .*", (folder / ".state.log").read_text().strip())
    assert not (folder / "worktree").exists() and not (folder / "run-tick.sh").exists()


def test_cmd_create_loop_refuses_duplicate(project: Path) -> None:
    assert cli(project, "--create-loop", "demo", "--from-template", "ci-triage").code == 0
    before = (project / ".automaton/loops/demo/.state.loop").read_bytes()
    r = cli(project, "--create-loop", "demo", "--from-template", "ci-triage")
    assert r.code == 2 and "already exists" in r.err
    assert (project / ".automaton/loops/demo/.state.loop").read_bytes() == before


def test_cmd_create_loop_refuses_missing_template(project: Path) -> None:
    r = cli(project, "--create-loop", "demo", "--from-template", "no-such-template")
    assert r.code == 2 and "no loop template 'no-such-template'" in r.err
    assert not (project / ".automaton" / "loops" / "demo").exists()


def test_state_loop_schema_initialization_has_all_r2_fields(project: Path) -> None:
    p = make_loop(project)
    s = json.loads((p.loop_dir(loops.LoopName("demo")) / ".state.loop").read_text())
    assert set(s) >= R2_FIELDS and s["schema_version"] == 1 and s["name"] == "demo"
    assert {"started_at", "spent_usd", "iterations_at_approval", "spent_usd_at_approval", "accepted_drift",
            "base_commit", "config_sha256"} <= set(s)


# ---- --approve --loop -----------------------------------------------------------------------

def test_approve_loop_clears_halt_and_increments_resumed_count(project: Path, approver: str) -> None:
    p = make_loop(project, brakes={"max_iterations": 1})
    set_state(p, iteration_count=1)
    assert gate(p).json["halt_reason"] == "iterations_exhausted"
    r = cli(p, "--approve", "--loop", "demo")
    assert r.code == 0, r.err
    s = state(p)
    assert (s.status, s.halt_reason, s.resumed_count) == ("running", None, 1)


def test_approve_loop_refuses_running_loop(project: Path, approver: str) -> None:
    p = make_loop(project)
    r = cli(p, "--approve", "--loop", "demo")
    assert r.code == 1 and state(p).resumed_count == 0


def test_approve_loop_refuses_untracked_loop(project: Path, approver: str) -> None:
    (project / ".automaton" / "loops" / "old").mkdir(parents=True)
    r = cli(project, "--approve", "--loop", "old")
    assert r.code == 2 and "Run --upgrade-loops to bootstrap" in r.err


# ---- --resume-loop / --pause-loop -----------------------------------------------------------

def test_resume_loop_clears_paused(project: Path, approver: str) -> None:  # resuming is a human act
    p = make_loop(project)
    assert cli(p, "--pause-loop", "demo").code == 0 and state(p).status == "paused"
    assert cli(p, "--resume-loop", "demo").code == 0 and state(p).status == "running"


def test_resume_loop_refuses_halted(project: Path, approver: str) -> None:
    p = make_loop(project)
    set_state(p, score_history=[0.2] * 5)
    gate(p)
    r = cli(p, "--resume-loop", "demo")
    assert r.code == 1 and r.err.strip() == "automaton: loop is halted, use --approve --loop to clear halt"
    assert state(p).status == "halted"


def test_pause_loop_invalidates_can_continue(project: Path) -> None:
    p = make_loop(project)
    assert cli(p, "--can-continue", "demo", "--json").json == {"ok": True, "status": "running"}
    cli(p, "--pause-loop", "demo")
    r = cli(p, "--can-continue", "demo", "--json")
    assert r.code == 1 and r.json == {"ok": False, "status": "paused"}


def test_can_continue_unknown_loop_is_exit_2(project: Path) -> None:
    assert cli(project, "--can-continue", "ghost", "--json").code == 2


# ---- --check-gate JSON ----------------------------------------------------------------------

R4_KEYS = ["ok", "reason", "halt_reason", "remaining_iterations", "remaining_budget_usd", "task_phase",
           "task_in_halt_loop", "out_of_scope_files"]


def test_check_gate_json_clean_running(project: Path) -> None:
    p = make_loop(project)
    r = gate(p)
    assert r.code == 0
    assert {k: r.json[k] for k in R4_KEYS} == {
        "ok": True, "reason": "ok", "halt_reason": None, "remaining_iterations": 25, "remaining_budget_usd": 10.0,
        "task_phase": None, "task_in_halt_loop": False, "out_of_scope_files": []}


def test_check_gate_json_halted_on_iterations(project: Path) -> None:
    p = make_loop(project, brakes={"max_iterations": 3})
    set_state(p, iteration_count=3)
    r = gate(p)
    assert r.code == 1
    assert {k: r.json[k] for k in R4_KEYS[:4]} == {"ok": False, "reason": "halted:iterations_exhausted",
                                                   "halt_reason": "iterations_exhausted", "remaining_iterations": 0}


def test_check_gate_json_halted_on_verifier_failed_flat_score(project: Path) -> None:
    assert cli(project, "--create-task", "fix-ci").code == 0
    assert cli(project, "--transition", "research", "--task", "fix-ci").code == 0
    p = make_loop(project, task="fix-ci")
    set_state(p, score_history=[0.6, 0.6, 0.6, 0.6, 0.6])
    r = gate(p)
    assert r.code == 1
    assert (r.json["reason"], r.json["halt_reason"]) == ("halted:verifier_failed", "verifier_failed")
    assert (r.json["task_phase"], r.json["task_in_halt_loop"]) == ("research", True)


def test_check_gate_json_halted_on_drift(project: Path) -> None:
    seed_layout(project)
    p = make_loop(project)
    wt = add_worktree(p)
    (wt / "setup.cfg").write_text("[x]\n")
    (wt / "src" / "ok.py").write_text("in scope\n")
    r = gate(p)
    assert r.code == 1
    assert (r.json["halt_reason"], r.json["out_of_scope_files"]) == ("drift_detected", ["setup.cfg"])


def test_check_gate_json_paused_loop(project: Path) -> None:
    p = make_loop(project)
    cli(p, "--pause-loop", "demo")
    r = gate(p)
    assert r.code == 1 and (r.json["ok"], r.json["reason"], r.json["halt_reason"]) == (False, "paused", None)


def test_check_gate_unknown_loop_is_exit_2(project: Path) -> None:
    r = gate(Project(project.resolve()), "ghost")
    assert r.code == 2 and r.json["ok"] is False


# ---- --can-edit --loop ----------------------------------------------------------------------

def test_can_edit_loop_allowed_when_file_under_worktree(project: Path) -> None:
    seed_layout(project)
    p = make_loop(project)
    wt = add_worktree(p)
    assert cli(p, "--can-edit", "--loop", "demo", "--file", str(wt / "src" / "app.py")).code == 0


def test_can_edit_loop_denied_when_outside_worktree(project: Path) -> None:
    seed_layout(project)
    p = make_loop(project)
    add_worktree(p)
    assert cli(p, "--can-edit", "--loop", "demo", "--file", str(project / "src" / "app.py")).code == 1


# ---- --transition and halted owners ---------------------------------------------------------

def _bound(project: Path) -> Project:
    assert cli(project, "--create-task", "fix-ci").code == 0
    return make_loop(project, task="fix-ci")


def test_transition_refused_when_owning_loop_halted(project: Path) -> None:
    p = _bound(project)
    set_state(p, score_history=[0.1] * 5)
    gate(p)
    r = cli(p, "--transition", "research", "--task", "fix-ci")
    assert r.code == 1
    assert ("task is bound to halted loop 'demo' (halt_reason=verifier_failed)."
            " --approve --loop demo to resume.") in r.err


@pytest.mark.parametrize("status", ["running", "paused"])
def test_transition_allowed_when_owning_loop_running_or_paused(project: Path, status: str) -> None:
    p = _bound(project)
    if status == "paused":
        cli(p, "--pause-loop", "demo")
    assert cli(p, "--transition", "research", "--task", "fix-ci").code == 0


# ---- --install-schedule ---------------------------------------------------------------------

FAKE_CRONTAB = """\
import pathlib
table = pathlib.Path(__file__).with_name("crontab.table")
if sys.argv[1:] == ["-l"]:
    if not table.exists():
        sys.stderr.write("no crontab for tester\\n")
        sys.exit(1)
    sys.stdout.write(table.read_text())
elif sys.argv[1:] == ["-"]:
    table.write_text(sys.stdin.read())
"""


def test_install_schedule_writes_run_tick_sh_and_crontab_block(project: Path, fake_bin: Callable[..., Path],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import platform

    monkeypatch.setattr(platform, "system", lambda: "Linux")
    fake_bin("crontab", FAKE_CRONTAB)
    p = make_loop(project)
    r = cli(p, "--install-schedule", "demo", "--interval", "900")
    assert r.code == 0, r.err
    tick = p.loop_dir(loops.LoopName("demo")) / "run-tick.sh"
    assert tick.is_file() and '--mode tick --loop "demo"' in tick.read_text()
    table = (fake_bin.dir / "crontab.table").read_text()  # type: ignore[attr-defined]
    assert "# automaton-loop:demo" in table and "*/15 * * * *" in table


def test_install_schedule_writes_a_plist_on_darwin(project: Path, fake_bin: Callable[..., Path],
                                                   monkeypatch: pytest.MonkeyPatch, forbid_real_home: Path) -> None:
    import platform

    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    fake_bin("launchctl", "sys.exit(0)\n")
    p = make_loop(project)
    r = cli(p, "--install-schedule", "demo", "--interval", "600")
    assert r.code == 0, r.err
    plists = list((forbid_real_home / "Library" / "LaunchAgents").glob("*.plist"))
    assert len(plists) == 1 and "demo" in plists[0].name
    assert (p.loop_dir(loops.LoopName("demo")) / "run-tick.sh").is_file()


# ---- the tick log -------------------------------------------------------------

def test_tick_log_records_paused_resumed_halt_approved(project: Path, approver: str) -> None:
    p = make_loop(project, brakes={"max_iterations": 1})
    cli(p, "--pause-loop", "demo")
    cli(p, "--resume-loop", "demo")
    set_state(p, iteration_count=1)
    gate(p)
    cli(p, "--approve", "--loop", "demo")
    events = [line.split(" ")[1] for line in log_text(p).splitlines()]
    assert events == ["CREATED", "APPROVED", "PAUSED", "RESUMED", "TICK", "HALT", "APPROVED"]  # first approval
    for line in log_text(p).splitlines():
        chained = r"state=sha256:[0-9a-f]{64} prev=[0-9a-f]{64} mac=[0-9a-f]{64}$"
        assert re.match(rf"^{ISO} [A-Z_]+ .* {chained}", line), line
    assert "HALT reason=iterations_exhausted" in log_text(p)
    assert git(project, "status", "--porcelain").count(".state") == 0
