"""`hooks.run`: the hook answers within its own deadline, and denies when it runs out."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import automaton.hooks as hooks
from automaton.hooks import shell


@pytest.mark.timeout(30)
def test_a_stuck_reading_is_denied_at_the_deadline(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def stuck(command: str, cwd: Path, *, powershell: bool = False) -> shell.Analysis:
        time.sleep(20)
        return shell.Analysis()  # what the old hook would have allowed, 20 s later

    monkeypatch.setattr(shell, "analyze", stuck)
    monkeypatch.setattr(hooks, "DEADLINE_S", 0.3)
    payload = f'{{"cwd": "{project}", "tool_name": "Bash", "tool_input": {{"command": "ls"}}}}'
    started = time.monotonic()
    answer = hooks.run("claude", payload, str(project))
    assert time.monotonic() - started < 5
    assert answer.code == hooks.DENY_CODE
    assert "deadline" in answer.message and "\n" not in answer.message


def test_the_deadline_timer_is_disarmed_after_an_answer(project: Path) -> None:
    import signal

    payload = f'{{"cwd": "{project}", "tool_name": "Read", "tool_input": {{"file_path": "x"}}}}'
    before, running = signal.getsignal(signal.SIGALRM), signal.getitimer(signal.ITIMER_REAL)[0]
    assert hooks.run("claude", payload, str(project)).code == hooks.ALLOW_CODE
    left = signal.getitimer(signal.ITIMER_REAL)[0]
    # no 5 s deadline left behind: nothing running, or what ran before (pytest-timeout's)
    assert left == 0 if running == 0 else running - 5 < left <= running
    assert signal.getsignal(signal.SIGALRM) == before


def test_a_callers_own_timer_and_handler_are_put_back(project: Path) -> None:
    import signal

    def mine(signum: int, frame: object) -> None:
        raise AssertionError("the caller's timer fired during the test")

    old = signal.signal(signal.SIGALRM, mine)
    signal.setitimer(signal.ITIMER_REAL, 100)
    try:
        payload = f'{{"cwd": "{project}", "tool_name": "Read", "tool_input": {{"file_path": "x"}}}}'
        assert hooks.run("claude", payload, str(project)).code == hooks.ALLOW_CODE
        left = signal.getitimer(signal.ITIMER_REAL)[0]
        assert signal.getsignal(signal.SIGALRM) is mine
        assert 90 < left <= 100
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_the_deadline_is_well_under_the_agents_timeout() -> None:
    assert 0 < hooks.DEADLINE_S <= 10  # Claude Code and Gemini CLI allow a call whose hook passes 60 s
