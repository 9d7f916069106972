"""The tick pipeline end to end: real git, real processes, fake agents (docs/architecture.md#the-life-of-a-tick)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from automaton.commands.loops import pause_loop
from automaton.runner.tick import tick
from automaton.store import loops as store
from automaton.store.layout import Project
from tests.helpers import calls, run_cli
from tests.runner.loopkit import make_loop

PY = sys.executable


def verify_cmd(code: str, score: str = "summary") -> dict[str, Any]:
    return {"roles": {"implement": {"prompt": "implement.md"},
                      "verify": {"command": [PY, "-c", code], "score": score}, "orchestrate": {"builtin": True}}}


SCORE_FROM_FILE = verify_cmd("import pathlib; print(pathlib.Path('src/score.txt').read_text())")


def st(project: Project, name: str = "demo") -> dict[str, Any]:
    return store.read_state(project, name)


def log_lines(project: Project, name: str = "demo") -> list[str]:
    return (project.loop_dir(store.require_tracked(project, name)) / ".state.log").read_text().splitlines()


def events(project: Project, name: str = "demo") -> list[str]:
    return [line.split(" ")[1] for line in log_lines(project, name)]


def score_step(text: str, cost: float | None = 0.1) -> dict[str, Any]:
    step: dict[str, Any] = {"actions": [{"write": "src/score.txt", "content": text}], "text": "did it"}
    if cost is not None:
        step["cost_usd"] = cost
    return step


def test_two_ticks_at_once_exactly_one_runs(project: Path, tmp_path: Path) -> None:
    started, release = tmp_path / "started", tmp_path / "release"
    agent = (f"import pathlib, time\npathlib.Path({str(started)!r}).write_text('x')\n"
             f"while not pathlib.Path({str(release)!r}).exists(): time.sleep(0.05)\nprint('done')")
    # The agent signals through files outside its worktree: this test is about the tick lock,
    # so it runs unconfined (the sandbox has its own suite: tests/redteam/test_sandbox_attacks.py).
    proj = make_loop(project, harness={"name": "command", "command": [PY, "-c", agent], "args": []}, sandbox="off",
                     **verify_cmd("print('1 passed')"))
    exe = str(Path(PY).parent / "automaton-loop")
    argv = [exe, "--mode", "tick", "--loop", "demo", "--project", str(project), "--quiet"]
    first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(1200):  # wait (up to a minute) until the first tick's agent is running
            if started.exists() or first.poll() is not None:
                break
            time.sleep(0.05)
        assert started.exists(), first.communicate()
        second = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        assert second.returncode == 0, second.stderr
        assert "skipped" in second.stdout
    finally:
        release.write_text("go")
        out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert "tick 1 of loop demo" in out
    assert events(proj).count("TICK") == 1
    skipped = [line for line in log_lines(proj) if " SKIPPED " in line]
    assert len(skipped) == 1 and "reason=busy" in skipped[0]
    assert st(proj).iteration_count == 1


def test_gate_refusal_exits_1_and_runs_nothing(project: Path) -> None:
    proj = make_loop(project, script={"implement": [score_step("1 passed")]}, **SCORE_FROM_FILE)
    assert pause_loop(proj, "demo").ok
    res = run_cli("--mode", "tick", "--loop", "demo", "--project", str(project), "--json", entry="automaton-loop")
    assert res.code == 1
    assert res.json["ok"] is False and res.json["ran"] is False and res.json["reason"] == "paused"
    assert "TICK" not in events(proj) and st(proj).iteration_count == 0


def test_a_loop_json_rewritten_after_its_gate_never_runs_a_tick(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer that swaps loop.json between the gate (which checked the seal) and the tick's
    read of it (sandbox off, or another process) must not get a tick on the new config."""
    from automaton.commands import loop_gate

    proj = make_loop(project, script={"implement": [score_step("1 passed")]}, **SCORE_FROM_FILE)
    config = proj.loop_dir(store.require_tracked(proj, "demo")) / "loop.json"
    real = loop_gate.check

    def then_rewrite(*args: Any, **kw: Any) -> Any:
        out = real(*args, **kw)
        data = json.loads(config.read_text())
        data["blast_radius"]["file_scope"] = ["**"]
        config.write_text(json.dumps(data))
        return out

    monkeypatch.setattr(loop_gate, "check", then_rewrite)
    out = tick(proj, "demo")
    assert out.code == 1 and out.data["ran"] is False and out.data["reason"] == "config_changed"
    assert "TICK_START" not in events(proj) and st(proj).iteration_count == 0


def test_bad_input_exits_2_with_one_line(project: Path) -> None:
    res = run_cli("--mode", "tick", "--loop", "nope", "--project", str(project), entry="automaton-loop")
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1 and "unknown loop 'nope'" in res.err
    proj = make_loop(project, script={"implement": []}, **SCORE_FROM_FILE)
    state_file = proj.loop_dir(store.require_tracked(proj, "demo")) / ".state.loop"
    state_file.write_text("{not json")
    res = run_cli("--mode", "tick", "--loop", "demo", "--project", str(project), entry="automaton-loop")
    assert res.code == 2 and "Traceback" not in res.err and ".state.loop" in res.err
    res = run_cli("--mode", "tick", entry="automaton-loop")
    assert res.code == 2 and "usage" in res.err


def test_unknown_cost_counts_at_max_tick_usd(project: Path) -> None:
    proj = make_loop(project, script={"implement": [score_step("1 passed, 1 failed", cost=None)]}, **SCORE_FROM_FILE)
    out = tick(proj, "demo")
    assert out.data is not None and out.data["cost_known"] is False
    assert st(proj).spent_usd == 1.0  # max_tick_usd, never $0
    assert "cost=1.0000" in log_lines(proj)[-1] and "cost_known=False" in log_lines(proj)[-1]


def test_timed_out_iteration_counts(project: Path) -> None:
    proj = make_loop(project, harness={"name": "command", "command": [PY, "-c", "import time; time.sleep(600)"],
                                       "args": [], "timeout_s": 1}, **verify_cmd("print('1 failed')"))
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["implement"]["timed_out"]
    s = st(proj)
    assert s.iteration_count == 1 and s.spent_usd == 1.0
    assert "timed_out=True" in log_lines(proj)[-1]


def test_score_window_is_capped_and_unscored_is_not_appended(project: Path) -> None:
    steps = [score_step("1 passed, 3 failed"), score_step("no counts here"), score_step("2 passed, 2 failed"),
             score_step("3 passed, 1 failed"), score_step("3 failed, 2 passed in 0.1s")]
    proj = make_loop(project, script={"implement": steps}, **SCORE_FROM_FILE)
    histories = []
    for _ in steps:
        assert tick(proj, "demo").code == 0
        histories.append(list(st(proj).score_history))
    assert histories[0] == [0.25]
    assert histories[1] == [0.25] and st(proj).iteration_count == 5
    assert histories[2] == [0.25, 0.5]
    assert histories[4] == [0.5, 0.75, 0.4]  # FIFO capped at score_plateau_window = 3
    run = proj.loop_dir(store.require_tracked(proj, "demo")) / "runs" / "2"
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict["score"] is None and verdict["passed"] is False
    assert {"implement.prompt.md", "implement.log", "verify.log", "verdict.json", "cost.json", "tick.json"} <= {
        p.name for p in run.iterdir()}


def test_target_reached_completes_and_the_next_gate_refuses(project: Path) -> None:
    proj = make_loop(project, script={"implement": [score_step("4 passed")]}, **SCORE_FROM_FILE)
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["status"] == "complete"
    assert st(proj).status == "complete"
    assert tick(proj, "demo").code == 1


def test_agent_verdict_from_verify_prompt(project: Path) -> None:
    script = {"implement": [score_step("x")],
              "verify": [{"text": 'Checked.\n```json\n{"score": "8/10", "summary": "two left"}\n```', "cost_usd": 0.2}]}
    proj = make_loop(project, script=script, template_files={"verify.md": "Check the work.\n"},
                     roles={"implement": {"prompt": "implement.md"},
                            "verify": {"prompt": "verify.md", "score": "agent"}, "orchestrate": {"builtin": True}})
    out = tick(proj, "demo")
    assert out.data is not None and out.data["verdict"]["score"] == 0.8 and out.data["verdict"]["source"] == "agent"
    assert st(proj).spent_usd == 0.3  # implement 0.1 + verify 0.2
    prompt = (proj.loop_dir(store.require_tracked(proj, "demo")) / "runs/1/verify.prompt.md").read_text()
    assert prompt.startswith("Check the work.") and '"score"' in prompt


def test_claude_gets_the_budget_cap_and_the_hook_settings(project: Path, fake_bin: Any) -> None:
    fake_bin("claude", """
        sys.stdin.read()
        print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "ok",
                          "total_cost_usd": 4.8, "usage": {}}))
        """)
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"env": {"USER_SETTING": "kept"}}')
    # The fake claude records its argv beside itself, outside the worktree: unconfined on purpose.
    proj = make_loop(project, harness={"name": "claude", "args": []}, sandbox="off",
                     **verify_cmd("print('1 failed, 1 passed')"))
    assert tick(proj, "demo").code == 0
    # Claude checks its cap between turns, so one turn can pass it (here $4.8 of a $1 cap): what
    # it reports is counted. What is left ($0.20) no longer covers a tick's $1 reservation.
    refused = tick(proj, "demo")
    assert refused.code == 1 and refused.data is not None and refused.data["reason"] == "halted:budget_exhausted"
    assert st(proj).halt_detail == "spent $4.8000 of $5.00; $0.2000 left, a tick reserves $1.0000"
    [first] = calls(fake_bin.dir, "claude")
    assert first[first.index("--max-budget-usd") + 1] == "1.0000"  # min(max_tick_usd 1.0, budget left 5.0)
    passed = Path(first[first.index("--settings") + 1])
    assert passed == proj.loop_dir(store.require_tracked(proj, "demo")) / "claude-settings.json"
    doc = json.loads(passed.read_text())
    assert doc["env"] == {"USER_SETTING": "kept"}  # the project's own settings travel along
    assert "--hook claude" in doc["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert st(proj).spent_usd == 4.8


def test_dry_run_changes_nothing(project: Path) -> None:
    proj = make_loop(project, script={"implement": [score_step("1 passed")]}, **SCORE_FROM_FILE)
    loop_dir = proj.loop_dir(store.require_tracked(proj, "demo"))
    before = {p: p.read_bytes() for p in loop_dir.rglob("*") if p.is_file()}
    res = run_cli("--mode", "dry-run", "--loop", "demo", "--project", str(project), entry="automaton-loop")
    assert res.code == 0, res.err
    assert "Make the tests pass." in res.out and "harnesses/_replay.py" in res.out and "verify argv" in res.out
    after = {p: p.read_bytes() for p in loop_dir.rglob("*") if p.is_file()}
    assert after == before and not (loop_dir / "worktree").exists()


def test_run_mode_ticks_until_complete(project: Path) -> None:
    steps = [score_step("1 passed, 1 failed"), score_step("2 passed")]
    make_loop(project, script={"implement": steps}, **SCORE_FROM_FILE)
    res = run_cli("--mode", "run", "--loop", "demo", "--project", str(project), "--json", "--quiet",
                  entry="automaton-loop")
    assert res.code == 0, res.err
    assert res.json["stopped"] == "complete" and [t["iteration"] for t in res.json["ticks"]] == [1, 2]


def test_the_reservation_is_taken_before_the_harness_and_settled_after(project: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """TICK_START counts the iteration and charges max_tick_usd before any agent runs; the TICK
    line settles it to the counted cost. A tick that dies in between keeps the charge, and the
    next tick takes the next runs/<n>."""
    from automaton import harnesses

    proj = make_loop(project, script={"implement": [score_step("1 passed, 1 failed\n", 0.25)] * 3},
                     **SCORE_FROM_FILE)
    assert tick(proj, "demo").code == 0
    lines = log_lines(proj)
    start = next(line for line in lines if " TICK_START " in line)
    assert " n=1 reserved_usd=1.0 " in start and " iterations=1 spent_usd=1.0 " in start
    assert st(proj).spent_usd == 0.25 and st(proj).iteration_count == 1
    assert events(proj)[-2:] == ["TICK_START", "TICK"]

    real = harnesses.get

    class Dies:
        def run(self, req: Any) -> Any:
            raise RuntimeError("the runner died mid-tick")

        def invocation(self, req: Any) -> Any:
            return real("scripted").invocation(req)

    monkeypatch.setattr(harnesses, "get", lambda name: Dies())
    with pytest.raises(RuntimeError):
        tick(proj, "demo")
    s = st(proj)
    assert (s.iteration_count, s.spent_usd) == (2, 1.25)  # counted, charged max_tick_usd
    assert events(proj)[-1] == "TICK_START"
    monkeypatch.setattr(harnesses, "get", real)
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["iteration"] == 3
    assert out.data["run_dir"].endswith("runs/3")
    assert (st(proj).iteration_count, st(proj).spent_usd) == (3, 1.5)


def test_tick_cost_never_counts_an_unknown_role_below_its_cap() -> None:
    from automaton.runner.tick import tick_cost

    assert tick_cost({"implement": 0.4, "verify": 0.1}, 2.0) == (0.5, True)
    assert tick_cost({"implement": None}, 2.0) == (2.0, False)
    # a known expensive role plus an unknown one: never less than what is known + the cap
    assert tick_cost({"implement": 1.9, "verify": None}, 2.0) == (3.9, False)
    assert tick_cost({"implement": None, "verify": None}, 2.0) == (4.0, False)


def test_the_tick_cap_is_shared_by_its_roles(project: Path, fake_bin: Any) -> None:
    fake_bin("claude", """
        sys.stdin.read()
        print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                          "result": '{"score": 0.5}', "total_cost_usd": 0.8, "usage": {}}))
        """)
    proj = make_loop(project, harness={"name": "claude", "args": []}, sandbox="off",  # the fake records outside
                     template_files={"verify.md": "Check.\n"},
                     roles={"implement": {"prompt": "implement.md"},
                            "verify": {"prompt": "verify.md", "score": "agent"}, "orchestrate": {"builtin": True}})
    assert tick(proj, "demo").code == 0
    implement, verify = calls(fake_bin.dir, "claude")
    assert implement[implement.index("--max-budget-usd") + 1] == "1.0000"  # max_tick_usd 1.0
    assert verify[verify.index("--max-budget-usd") + 1] == "0.2000"  # what implement left of it
    assert st(proj).spent_usd == 1.6


@pytest.mark.parametrize("bad", [-5.0, float("nan"), float("inf"), float("-inf")])
def test_tick_cost_counts_a_negative_or_non_finite_cost_at_its_cap(bad: float) -> None:
    """A harness reporting cost -5 (or NaN/inf) must not refund the budget: unknown, at the cap."""
    from automaton.runner.tick import tick_cost

    assert tick_cost({"implement": bad}, 2.0) == (2.0, False)
    assert tick_cost({"implement": 0.5, "verify": bad}, 2.0) == (2.5, False)


def test_a_git_the_agent_plants_in_the_projects_venv_never_runs_for_the_runner(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The project's `.venv/bin` comes first on a tick's PATH and the agent may write it: the
    `git` it plants there at implement runs for none of the runner's git calls (gates, commit,
    drift, export) in this tick or the next; the agent's own role keeps that PATH."""
    marker = tmp_path / "planted-git-ran"
    seen = tmp_path / "role-path"
    plant = ("import os, pathlib, sys\n"
             "p = pathlib.Path(os.environ['PLANT_AT'])\n"
             "p.mkdir(parents=True, exist_ok=True)\n"
             f"(p / 'git').write_text('#!/bin/sh\\necho ran > {marker}\\nexit 1\\n'); (p / 'git').chmod(0o755)\n"
             f"pathlib.Path({str(seen)!r}).write_text(os.environ['PATH'])\n"
             "pathlib.Path('src').mkdir(exist_ok=True); pathlib.Path('src/a.txt').write_text('work\\n')\n")
    venv_bin = project / ".venv" / "bin"
    monkeypatch.setenv("PLANT_AT", str(venv_bin))
    monkeypatch.setenv("PATH", f"{venv_bin}{os.pathsep}{os.environ['PATH']}")
    proj = make_loop(project, harness={"name": "command", "command": [sys.executable, "-c", plant], "args": []},
                     sandbox="off", roles={"verify": {"command": [sys.executable, "-c", "print('1 passed, 1 failed')"],
                                                      "score": "summary"}})
    first = tick(proj, "demo")
    assert not marker.exists()
    assert first.data is not None and first.data["commit"] and first.data["status"] == "running", first.lines
    assert (venv_bin / "git").exists() and str(venv_bin) in seen.read_text()  # the role kept its PATH
    second = tick(proj, "demo")
    assert second.data is not None and second.data["ran"] is True, second.lines
    assert not marker.exists()


def test_a_tick_scores_code_that_lives_in_a_submodule(project: Path, tmp_path: Path) -> None:
    """The loop worktree and the verifier's export hold the submodule's files (from the project's
    own `.git/modules`; no network): an honest tick once scored nothing there."""
    from tests.helpers import GIT_ENV, git, init_repo

    lib = init_repo(tmp_path / "lib")
    (lib / "score.txt").write_text("3 passed, 1 failed\n")
    git(lib, "add", ".")
    git(lib, "commit", "-qm", "lib")
    subprocess.run(["git", "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "vendor/lib"],
                   cwd=project, check=True, capture_output=True, env={**os.environ, **GIT_ENV})
    git(project, "commit", "-qm", "submodule")
    read = [sys.executable, "-c", "import pathlib; print(pathlib.Path('vendor/lib/score.txt').read_text())"]
    proj = make_loop(project, roles={"implement": {"prompt": "implement.md"},
                                     "verify": {"command": read, "score": "summary"},
                                     "orchestrate": {"builtin": True}})
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None, out.lines
    assert out.data["verdict"]["score"] == 0.75 and out.data["halt"] is None
    assert (Path(out.data["worktree"]) / "vendor/lib/score.txt").is_file()
def test_a_task_claimed_by_another_loop_gets_no_tick_and_nothing_charged(project: Path) -> None:
    from automaton.commands.halts import halt_now
    from automaton.store import claims
    from automaton.store.loops import Loop
    from tests.helpers import seed_task

    seed_task(project, "t", "implement")
    make_loop(project, "one", script={"implement": [score_step("1 passed")]}, task="t", **SCORE_FROM_FILE)
    proj = make_loop(project, "two", script={"implement": [score_step("1 passed")]}, task="t", **SCORE_FROM_FILE)
    claims.claim(proj, "t", "one")
    out = tick(proj, "two")
    assert out.code == 1 and out.data["ran"] is False and out.data["reason"] == "task_claimed"
    assert "claimed by loop one" in out.lines[0]
    assert "TICK_START" not in events(proj, "two") and st(proj, "two").iteration_count == 0
    halt_now(Loop.resolve(proj, "one"), "human_intervention", "test", "test")  # a halted holder holds nothing
    assert tick(proj, "two").data["ran"] is True
