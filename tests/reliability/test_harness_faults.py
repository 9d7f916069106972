"""Harness faults: every tick ends within its bound and records what happened.

Fake agents (the `command` harness, or a fake `claude` first on PATH) that hang, leave
grandchildren behind, ignore SIGTERM, print 10 MB, exit 0 with an error result, or print no
cost. Each tick must end within timeout + grace + slack, count the iteration, count an unknown
cost at max_tick_usd (never $0), keep the transcript, and leave no process behind.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.proc import GRACE_S, KILL_SETTLE_S
from automaton.runner.tick import tick
from automaton.store import loops as store
from automaton.store.layout import Project
from tests.reliability.kit import PY
from tests.runner.loopkit import make_loop

TIMEOUT_S = 1
MAX_TICK_USD = 0.75
# git worktree set-up, the commit and the verify command on a busy 2-core machine.
SLACK_S = 20.0
VERIFY = {"implement": {"prompt": "implement.md"},
          "verify": {"command": [PY, "-c", "print('1 passed, 1 failed')"], "score": "summary"},
          "orchestrate": {"builtin": True}}


def alive(pid: int) -> bool:
    """A process that exists and is not a zombie (an unreaped corpse runs nothing)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # pragma: no cover - no /proc: fall back to a signal probe
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def pids(folder: Path) -> list[int]:
    return [int(p.read_text()) for p in sorted(folder.glob("*.pid"))]


def agent(tmp: Path, body: str) -> list[str]:
    """argv of a Python agent that records its pid in tmp/agent.pid, then runs `body`."""
    script = tmp / "agent.py"
    script.write_text(
        "import os, signal, subprocess, sys, time, pathlib\n"
        f"pathlib.Path({str(tmp / 'agent.pid')!r}).write_text(str(os.getpid()))\n" + body)
    return [PY, str(script)]


def loop_with(project: Path, harness: dict[str, Any], roles: dict[str, Any] | None = None) -> Project:
    # The fake agents record their pids outside the worktree: unconfined on purpose. The same
    # lifetimes under the sandbox: tests/sandbox/test_reaper.py and redteam S09.
    return make_loop(project, "faulty", harness={"timeout_s": TIMEOUT_S, "args": [], **harness}, sandbox="off",
                     roles=roles or VERIFY,
                     brakes={"max_iterations": 50, "max_budget_usd": 100.0, "max_tick_usd": MAX_TICK_USD})


def run_tick(proj: Project) -> tuple[Any, float]:
    started = time.monotonic()
    out = tick(proj, "faulty")
    return out, time.monotonic() - started


def assert_recorded(proj: Project, out: Any, *, cost: float, known: bool) -> dict[str, Any]:
    """The tick ran, counted one iteration and `cost`, and kept its transcript."""
    assert out.code == 0, out.lines
    state = store.read_state(proj, "faulty")
    assert state.iteration_count == 1
    assert state.spent_usd == pytest.approx(cost)
    assert out.data["cost_usd"] == pytest.approx(cost) and out.data["cost_known"] is known
    run = Path(out.data["run_dir"])
    assert (run / "implement.log").is_file() and (run / "tick.json").is_file()
    log = (proj.loop_dir(store.require_tracked(proj, "faulty")) / store.LOG_FILE).read_text()
    assert " TICK n=1 " in log
    return dict(json.loads((run / "tick.json").read_text()))


def assert_no_leftovers(tmp: Path) -> None:
    found = pids(tmp)
    assert found, "the fake agent never started"
    assert [p for p in found if alive(p)] == [], "a harness process outlived its tick"


HANG = "time.sleep(1000)\n"
GRANDCHILD = (
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)'])\n"
    "pathlib.Path(os.environ['PIDS'] + '/grandchild.pid').write_text(str(child.pid))\n"
    "print('done, leaving my child running with our stdout')\n"
)
GRANDCHILD_HANG = GRANDCHILD + "time.sleep(1000)\n"
# A grandchild in a session of its own (setsid): the group kill cannot reach it, but it still
# holds the transcript open, which is how the runner finds it.
ESCAPED = GRANDCHILD.replace("time.sleep(1000)'])", "time.sleep(1000)'], start_new_session=True)")
IGNORE_TERM = "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" + GRANDCHILD + "time.sleep(1000)\n"
BIG = ("chunk = ('x' * 1023 + '\\n').encode()\n"
       "for _ in range(10 * 1024):\n    sys.stdout.buffer.write(chunk)\n"
       "sys.stdout.buffer.flush()\nsys.stderr.write('e' * 1_000_000)\n")


@pytest.mark.slow
@pytest.mark.parametrize(("body", "timed_out", "bound"), [
    (HANG, True, TIMEOUT_S + SLACK_S),
    (GRANDCHILD, False, SLACK_S),
    (GRANDCHILD_HANG, True, TIMEOUT_S + SLACK_S),
    (ESCAPED, False, SLACK_S),
    (IGNORE_TERM, True, TIMEOUT_S + GRACE_S + KILL_SETTLE_S + SLACK_S),
], ids=["hangs", "grandchild-holds-stdout", "grandchild-and-hang", "grandchild-in-own-session", "ignores-sigterm"])
def test_command_agent_faults_end_within_bound(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              body: str, timed_out: bool, bound: float) -> None:
    monkeypatch.setenv("PIDS", str(tmp_path))
    proj = loop_with(project, {"name": "command", "command": agent(tmp_path, body)})
    out, took = run_tick(proj)
    assert took < bound, f"tick took {took:.1f} s (bound {bound:.1f} s)"
    data = assert_recorded(proj, out, cost=MAX_TICK_USD, known=False)  # the command harness reports no cost
    assert data["implement"]["timed_out"] is timed_out
    if timed_out:
        assert took >= TIMEOUT_S
        assert "timed_out=True" in (proj.loop_dir(store.require_tracked(proj, "faulty")) / store.LOG_FILE).read_text()
    if body is IGNORE_TERM:
        assert took >= TIMEOUT_S + GRACE_S * 0.9, "SIGKILL came before the grace period"
    assert_no_leftovers(tmp_path)


@pytest.mark.slow
def test_ten_megabytes_of_output_do_not_deadlock(project: Path, tmp_path: Path) -> None:
    proj = loop_with(project, {"name": "command", "command": agent(tmp_path, BIG), "timeout_s": 60})
    out, took = run_tick(proj)
    assert took < 60 + SLACK_S
    data = assert_recorded(proj, out, cost=MAX_TICK_USD, known=False)
    assert data["implement"]["timed_out"] is False and data["implement"]["exit_status"] == 0
    run = Path(out.data["run_dir"])
    assert (run / "implement.log").stat().st_size == 10 * 1024 * 1024
    assert (run / "implement.stderr.log").stat().st_size == 1_000_000
    assert_no_leftovers(tmp_path)


def test_hanging_verify_command_is_stopped_and_unscored(project: Path, tmp_path: Path) -> None:
    roles = {**VERIFY, "verify": {"command": agent(tmp_path, HANG), "score": "summary"}}
    proj = loop_with(project, {"name": "command", "command": [PY, "-c", "print('ok')"]}, roles)
    out, took = run_tick(proj)
    assert took < TIMEOUT_S + SLACK_S
    assert_recorded(proj, out, cost=MAX_TICK_USD, known=False)
    assert out.data["verdict"]["score"] is None
    assert store.read_state(proj, "faulty").score_history == ()  # unscored never feeds the plateau window
    assert_no_leftovers(tmp_path)


def _claude(fake_bin: Callable[[str, str], Path], tmp_path: Path, result: dict[str, Any] | str,
            code: int = 0) -> None:
    text = result if isinstance(result, str) else json.dumps(result)
    fake_bin("claude", f"import os, sys, pathlib\n"
                       f"pathlib.Path({str(tmp_path / 'claude.pid')!r}).write_text(str(os.getpid()))\n"
                       f"sys.stdin.read()\nprint({text!r})\nsys.exit({code})\n")


ERROR_RESULT = {"type": "result", "subtype": "error_max_turns", "is_error": True, "result": "",
                "total_cost_usd": 0.31, "usage": {"input_tokens": 10, "output_tokens": 5}}
NO_COST = {"type": "result", "subtype": "success", "is_error": False, "result": "did it",
           "usage": {"input_tokens": 10, "output_tokens": 5}}


@pytest.mark.parametrize(("result", "cost", "known", "error"), [
    (ERROR_RESULT, 0.31, True, "error_max_turns"),
    (NO_COST, MAX_TICK_USD, False, None),
    ("not json at all", MAX_TICK_USD, False, "not json at all"),
    (json.dumps([{"type": "system"}, {**NO_COST, "total_cost_usd": "0.10"}]), MAX_TICK_USD, False, None),
], ids=["exit0-error-result", "cost-missing", "no-result", "cost-not-a-number"])
def test_claude_results_are_recorded(project: Path, tmp_path: Path, fake_bin: Callable[[str, str], Path],
                                     result: dict[str, Any] | str, cost: float, known: bool,
                                     error: str | None) -> None:
    _claude(fake_bin, tmp_path, result)
    proj = loop_with(project, {"name": "claude"})
    out, took = run_tick(proj)
    assert took < SLACK_S
    data = assert_recorded(proj, out, cost=cost, known=known)
    if error is None:
        assert data["implement"]["error"] is None
    else:
        assert error in str(data["implement"]["error"])
    assert_no_leftovers(tmp_path)
