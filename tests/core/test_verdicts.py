"""Verdict parsing: JUnit XML, summary lines, agent JSON, unscored."""

from __future__ import annotations

import pytest

from automaton.core.verdicts import from_agent, from_command, from_junit, from_summary, normalise_score

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1" failures="2"
 skipped="1" tests="10" time="0.1"><testcase name="a"/></testsuite></testsuites>"""


def test_junit_score_is_passed_over_run() -> None:
    v = from_junit(JUNIT)
    assert v is not None and v.score == pytest.approx(6 / 9) and not v.passed and v.source == "junit"


def test_junit_single_suite_all_passed() -> None:
    v = from_junit('<testsuite tests="4" failures="0" errors="0" skipped="0"/>')
    assert v is not None and v.score == 1.0 and v.passed and v.done


@pytest.mark.parametrize("bad", ["", "<not xml", '<testsuite tests="0"/>', '<testsuite tests="x"/>'])
def test_junit_unreadable_or_empty(bad: str) -> None:
    assert from_junit(bad) is None


@pytest.mark.parametrize(("line", "score"), [
    ("======= 3 failed, 5 passed in 0.12s =======", 5 / 8),
    ("3 failed, 5 passed in 0.1s", 5 / 8),
    ("5 passed in 0.01s", 1.0),
    ("1 failed, 2 passed, 1 error in 0.3s", 2 / 4),
    ("2 failed, 1 passed, 3 warnings in 1.00s", 1 / 3),
    ("Ran: 8 passed, 2 failed", 8 / 10),
    ("==== 4 failed in 0.2s ====", 0.0),
])
def test_summary_lines(line: str, score: float) -> None:
    v = from_summary(f"collected\nsome output 99 passed earlier? no\n{line}\n")
    assert v is not None and v.score == pytest.approx(score)


def test_summary_uses_the_closing_line() -> None:
    v = from_summary("10 passed\n...\n1 failed, 1 passed in 0.1s\n")
    assert v is not None and v.score == 0.5


def test_summary_absent_is_none() -> None:
    assert from_summary("no tests ran in 0.01s\n") is None


def test_from_command_prefers_junit_and_never_passes_a_failed_exit() -> None:
    v = from_command(1, "5 passed", '<testsuite tests="2" failures="1"/>')
    assert v.score == 0.5 and v.source == "junit"
    v = from_command(2, "5 passed in 0.1s")
    assert v.score == 1.0 and not v.passed and not v.done
    none = from_command(4, "ERROR: file not found")
    assert none.score is None and not none.passed


@pytest.mark.parametrize(("raw", "want"), [(0.5, 0.5), (1, 1.0), ("8/10", 0.8), ("85%", 0.85), ("0.3", 0.3),
                                           (True, None), (1.5, None), ("-1", None), ("3/0", None), (None, None),
                                           ("abc", None), (float("nan"), None)])
def test_normalise_score(raw: object, want: float | None) -> None:
    got = normalise_score(raw)
    assert got == (pytest.approx(want) if want is not None else None)


def test_agent_last_fenced_or_bare_json_with_score() -> None:
    text = ('Plan: {"step": 1}\n```json\n{"score": "8/10", "summary": "old"}\n```\n'
            'Final: {"score": "85%", "passed": true, "done": false, "summary": "nearly"} trailing {"other": 1}')
    v = from_agent(text)
    assert v.score == pytest.approx(0.85) and v.passed and not v.done and v.summary == "nearly"


def test_agent_without_score_is_unscored_never_zero_never_pass() -> None:
    v = from_agent('I think it works. {"passed": true, "done": true}')
    assert v.score is None and not v.passed and not v.done
    bad = from_agent('{"score": "great", "passed": true}')
    assert bad.score is None and not bad.passed
