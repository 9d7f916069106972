"""brakes.max_unscored, harness.max_output_mb, what a tick commits, and the hook note of every
tick: real ticks, real git, real processes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from automaton.commands.loops import approve_loop
from automaton.core.chain import LogLine
from automaton.runner.tick import tick
from automaton.runner.unscored import streak
from automaton.store import loops as store
from automaton.store.layout import Project
from tests.helpers import git
from tests.runner.loopkit import make_loop

PY = sys.executable
SCORE_FROM_FILE = {"roles": {"implement": {"prompt": "implement.md"},
                             "verify": {"command": [PY, "-c", "import pathlib; print(pathlib.Path('src/score.txt')"
                                                              ".read_text())"], "score": "summary"},
                             "orchestrate": {"builtin": True}}}


def step(text: str, *extra: dict[str, Any]) -> dict[str, Any]:
    return {"actions": [{"write": "src/score.txt", "content": text}, *extra], "text": "did it", "cost_usd": 0.01}


def st(p: Project) -> dict[str, Any]:
    return store.read_state(p, "demo")


# ---- brakes.max_unscored ----------------------------------------------------------------------

def test_three_unscored_ticks_in_a_row_halt_verifier_failed(project: Path) -> None:
    proj = make_loop(project, script={"implement": [step("no counts here")] * 4}, **SCORE_FROM_FILE)
    for n in (1, 2):
        out = tick(proj, "demo")
        assert out.code == 0 and out.data is not None and out.data["halt"] is None
        assert st(proj).status == "running", n
    out = tick(proj, "demo")
    want = ("unscored: 3 ticks in a row without a score; check the verify command with"
            " automaton --doctor --loop demo")
    assert out.data is not None and out.data["halt"] == f"verifier_failed: {want}"
    s = st(proj)
    assert (s.status, s.halt_reason, s.halt_detail) == ("halted", "verifier_failed", want)
    assert any("halted: verifier_failed" in w for w in out.warnings)
    assert tick(proj, "demo").code == 1  # the gate now refuses


def test_a_scored_tick_breaks_the_streak_and_an_approval_restarts_it(project: Path, approver: str) -> None:
    steps = [step("nothing"), step("1 passed, 1 failed"), step("nothing"), step("nothing"), step("nothing")]
    proj = make_loop(project, script={"implement": steps}, brakes={"max_unscored": 2}, **SCORE_FROM_FILE)
    for _ in range(3):
        assert tick(proj, "demo").code == 0
    assert st(proj).status == "running"  # unscored, scored, unscored: 1 in a row
    tick(proj, "demo")
    assert st(proj).halt_reason == "verifier_failed"
    assert approve_loop(proj, "demo").code == 0
    assert tick(proj, "demo").code == 0 and st(proj).status == "running"  # counted from the approval


def test_a_tick_halted_after_its_commit_is_not_unscored(project: Path) -> None:
    out_of_scope = {"write": "README.md", "content": "rewritten\n"}
    steps = [step("nothing"), step("nothing", out_of_scope)]
    proj = make_loop(project, script={"implement": steps}, brakes={"max_unscored": 2}, **SCORE_FROM_FILE)
    tick(proj, "demo")
    out = tick(proj, "demo")
    assert out.data is not None and str(out.data["halt"]).startswith("drift_detected")
    rec = store.inspect(proj, "demo")
    last_tick = [line for line in rec.chain.lines if line.event == "TICK"][-1]
    assert last_tick.fields["halted"] == "True" and last_tick.fields["score"] == "null"
    assert streak(rec.chain.lines) == 1 and st(proj).halt_reason == "drift_detected"


def test_streak_reads_the_log() -> None:
    def line(event: str, **fields: str) -> LogLine:
        return LogLine("2026-01-01T00:00:00Z", event, fields)

    lines = [line("TICK", score="null"), line("APPROVED"), line("TICK", score="null"),
             line("TICK", score="null", halted="True"), line("TICK_DEFERRED", n="4"), line("WARNING"),
             line("TICK", score="null")]
    assert streak(lines) == 2
    assert streak([*lines, line("TICK", score="0.5000")]) == 0
    assert streak([line("TICK", score="null"), line("HALT", reason="x", tamper="edited")]) == 0


@pytest.mark.parametrize("bad", [0, -1, 1001, "3", True, 2.5])
def test_max_unscored_is_bounded(project: Path, bad: Any) -> None:
    from automaton.core.errors import BadInput
    from automaton.core.loopconfig import parse_config
    from tests.runner.loopkit import loop_json

    defaults = {"max_iterations": 10, "max_budget_usd": 5.0, "max_tick_usd": 1.0, "score_plateau_window": 3,
                "plateau_epsilon": 0.0, "target_score": 1.0, "interval_seconds": 900, "timeout_s": 60}
    assert parse_config(loop_json(), "loop.json", defaults).brakes.max_unscored == 3
    with pytest.raises(BadInput, match=r"brakes\.max_unscored must be an integer >= 1 and <= 1000"):
        parse_config(loop_json(brakes={"max_unscored": bad}), "loop.json", defaults)


# ---- harness.max_output_mb --------------------------------------------------------------------

def test_max_output_mb_caps_every_role_and_the_verify_command(project: Path) -> None:
    noisy = "import sys; sys.stdout.write('x' * (3 * 1024 * 1024)); sys.stdout.write('\\nEND 1 passed\\n')"
    proj = make_loop(project, harness={"name": "command", "command": [PY, "-c", noisy], "args": [],
                                       "max_output_mb": 1},
                     roles={"implement": {"prompt": "implement.md"},
                            "verify": {"command": [PY, "-c", noisy], "score": "summary"},
                            "orchestrate": {"builtin": True}})
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None
    run = Path(out.data["run_dir"])
    for log in ("implement.log", "verify.log"):
        size = (run / log).stat().st_size
        assert 0 < size <= 1024 * 1024, (log, size)
        assert (run / log).read_text().rstrip().endswith("END 1 passed")  # the tail is kept
    assert out.data["verdict"]["score"] == 1.0


@pytest.mark.parametrize("bad", [0, 10241, "50", None])
def test_max_output_mb_is_bounded(bad: Any) -> None:
    from automaton.core.errors import BadInput
    from automaton.core.loopconfig import parse_config
    from tests.runner.loopkit import loop_json

    defaults = {"max_iterations": 10, "max_budget_usd": 5.0, "max_tick_usd": 1.0, "score_plateau_window": 3,
                "plateau_epsilon": 0.0, "target_score": 1.0, "interval_seconds": 900, "timeout_s": 60}
    assert parse_config(loop_json(), "loop.json", defaults).harness.max_output_mb == 50
    with pytest.raises(BadInput, match=r"harness\.max_output_mb must be an integer >= 1 and <= 10240"):
        parse_config(loop_json(harness={"max_output_mb": bad}), "loop.json", defaults)


# ---- what a tick commits ----------------------------------------------------------------------

def test_bytecode_and_caches_are_never_committed_and_never_halt(project: Path) -> None:
    litter = [{"write": "src/__pycache__/x.cpython-311.pyc", "content": "bytecode"},
              {"write": ".pytest_cache/v/cache/lastfailed", "content": "{}"},
              {"write": "src/pkg.egg-info/PKG-INFO", "content": "Name: pkg"}]
    proj = make_loop(project, script={"implement": [step("1 passed, 1 failed", *litter)]}, **SCORE_FROM_FILE)
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["halt"] is None and out.data["commit"]
    committed = git(project, "show", "--name-only", "--format=", "loop/demo").split()
    assert committed == ["src/score.txt"]
    assert st(proj).status == "running"
    assert tick(proj, "demo").code == 0  # the next gate sees no drift in what was left out


def test_a_tracked_file_under_an_excluded_name_is_still_committed(project: Path) -> None:
    (project / "build").mkdir()
    (project / "build" / "make.py").write_text("print('v1')\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "a tracked build/ folder")
    edit = {"replace": "build/make.py", "old": "v1", "new": "v2"}
    proj = make_loop(project, script={"implement": [step("1 passed, 1 failed", edit)]},
                     blast_radius={"file_scope": ["src/**", "build/**"]}, **SCORE_FROM_FILE)
    out = tick(proj, "demo")
    assert out.data is not None and out.data["halt"] is None
    assert sorted(git(project, "show", "--name-only", "--format=", "loop/demo").split()) == [
        "build/make.py", "src/score.txt"]


# ---- the hook note of every tick --------------------------------------------------------------

def test_every_tick_says_once_what_holds_for_a_hookless_harness(project: Path) -> None:
    proj = make_loop(project, harness={"name": "command", "command": [PY, "-c", "print('hi')"], "args": []},
                     roles={"implement": {"prompt": "implement.md"},
                            "verify": {"command": [PY, "-c", "print('1 passed, 1 failed')"], "score": "summary"},
                            "orchestrate": {"builtin": True}})
    out = tick(proj, "demo")
    notes = [w for w in out.warnings if "a command harness runs no hook" in w]
    assert notes == ["loop demo: a command harness runs no hook; the kernel sandbox is what holds"]
    off = make_loop(project, "loose", harness={"name": "command", "command": [PY, "-c", "print('hi')"], "args": []},
                    sandbox="off", roles={"implement": {"prompt": "implement.md"},
                                          "verify": {"command": [PY, "-c", "print('1 passed, 1 failed')"],
                                                     "score": "summary"}, "orchestrate": {"builtin": True}})
    out = tick(off, "loose")
    assert len([w for w in out.warnings if "a command harness runs no hook" in w]) == 1
    assert any("only the gates between ticks hold" in w for w in out.warnings)
