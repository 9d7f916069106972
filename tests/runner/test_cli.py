"""`automaton-loop` entry point: --demo, usage errors, the stable-path shims (resources/scripts/)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_cli

SCRIPTS = Path(__file__).resolve().parents[2] / "src" / "automaton" / "resources" / "scripts"


# Four loops, a dozen pytest verify runs, and one `--collect-only` run per loop to freeze its
# test ids at the base commit: on a loaded 2-core machine past the suite's 120 s default.
@pytest.mark.timeout(300)
def test_demo_runs_offline_and_exits_0(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    # The user's own caps say no spend today, and their key folder holds only that: the demo
    # must neither obey nor touch it (it has a HOME of its own).
    config = Path.home() / ".config" / "automaton"
    config.mkdir(parents=True, exist_ok=True)
    (config / "caps.json").write_text('{"day_usd": 0}')
    res = run_cli("--demo", "--json", entry="automaton-loop")
    assert res.code == 0, res.err
    assert sorted(p.name for p in config.iterdir()) == ["caps.json"]  # no key, account ledger or deferral
    rows = {r["loop"]: r for r in res.json["loops"]}
    assert rows["fix-ci"]["status"] == "complete" and rows["fix-ci"]["last_score"] == 1.0
    assert rows["drift-check"]["status"] == "complete" and rows["drift-check"]["resumed_count"] == 1
    assert rows["stuck-agent"]["status"] == "halted" and rows["stuck-agent"]["halt_reason"] == "verifier_failed"
    assert "AUTOMATON_APPROVER=demo" in res.out
    assert "halted:drift_detected" in res.out and "out of scope: NOTES.md" in res.out
    for score in ("0.50", "0.75", "1.00"):
        assert f"score {score}" in res.out
    assert "counted at max_tick_usd" in res.out
    # The greedy agent: its brakes' files, the main checkout's chmod and the human's socket.
    assert rows["greedy-agent"]["status"] == "complete" and rows["greedy-agent"]["refused_writes"] == 5
    for attempt in ("attempt_chmod ../../../../src/calc.py: denied (EROFS)",
                    "attempt_chmod ../../../../.git/config: denied (EROFS)",
                    "attempt_connect ../../../../../human.sock: denied (ENOENT)"):
        assert attempt in res.out
    assert "received nothing" in res.out


def test_usage_errors_exit_2() -> None:
    for args in (("--mode", "tick"), ("--loop", "x"), ("--mode", "tick", "--loop", "x", "--max-ticks", "2"),
                 ("--demo", "--mode", "tick"), ("--mode", "bogus", "--loop", "x")):
        res = run_cli(*args, entry="automaton-loop")
        assert res.code == 2, args
        assert res.err.startswith("automaton-loop: usage:") and len(res.err.strip().splitlines()) == 1


def test_missing_settings_file_is_bad_input(tmp_path: Path) -> None:
    res = run_cli("--mode", "tick", "--loop", "x", "--settings", str(tmp_path / "nope.json"), entry="automaton-loop")
    assert res.code == 2 and "--settings" in res.err


def test_seed_path_shims_run_the_package() -> None:
    runner = subprocess.run([sys.executable, str(SCRIPTS / "loop-runner.py"), "--help"], capture_output=True,
                            text=True, check=False, timeout=60)
    assert runner.returncode == 0 and "automaton-loop" in runner.stdout
    status = subprocess.run([sys.executable, str(SCRIPTS / "status.py"), "--version"], capture_output=True,
                            text=True, check=False, timeout=60)
    assert status.returncode == 0 and status.stdout.startswith("automaton ")


def _closed_pipe_run(cwd: Path, *args: str, module: str) -> subprocess.CompletedProcess[bytes]:
    """Run `python -m module args` with stdout and stderr a pipe whose reader has gone
    (`… 2>&1 | head -0`): every write fails with EPIPE."""
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, stdout=write_end,
                              stderr=write_end, check=False, timeout=120)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("extra", [(), ("--json",)])
def test_a_closed_output_pipe_changes_neither_the_tick_nor_its_exit_status(project: Path,
                                                                           extra: tuple[str, ...]) -> None:
    """`automaton-loop --mode tick --loop L 2>&1 | head -1`: once died half-way (BrokenPipeError,
    exit 1, a crash log), leaving its reservation unsettled."""
    from automaton.store import loops as store
    from tests.helpers import git
    from tests.runner.loopkit import make_loop

    (project / "verify.py").write_text("print('1 passed, 1 failed')\n")
    git(project, "add", "verify.py")
    git(project, "commit", "-qm", "verify")
    proj = make_loop(project)
    res = _closed_pipe_run(project, "--mode", "tick", "--loop", "demo", *extra, module="automaton.runner.cli")
    assert res.returncode == 0
    state = store.read_state(proj, "demo")
    assert state.iteration_count == 1 and state.last_verdict is not None and state.last_verdict.score == 0.5
    assert (proj.loop_dir(store.require_tracked(proj, "demo")) / "runs" / "1" / "tick.json").is_file()


@pytest.mark.parametrize("argv", [("--mode", "tick", "--mode", "run", "--loop", "x"),
                                  ("--mode", "tick", "--loop", "a", "--loop", "b"),
                                  ("--mode", "run", "--loop", "a", "--max-ticks", "1", "--max-ticks", "9")])
def test_a_value_flag_given_twice_is_a_usage_error(argv: tuple[str, ...]) -> None:
    res = run_cli(*argv, entry="automaton-loop")
    assert res.code == 2 and "given twice" in res.err and res.err.count("\n") == 1, res.err
