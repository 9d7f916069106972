"""Verify-role verdicts: scores from JUnit XML, test summaries or agent JSON.

A verdict is `{"score": 0..1 | None, "passed": bool, "done": bool, "summary": str,
"source": "junit" | "summary" | "stream" | "agent" | "none"}` ("stream": the per-test results
automaton's pytest plugin streamed, `core.testids`). A missing score means *unscored*: never
0 (it must not feed the plateau window) and never a pass.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Any

from automaton.core.loopstate import Verdict as Verdict  # a tick records it in `.state.loop`


def from_junit(xml_text: str) -> Verdict | None:
    """Score = passed / run from JUnit XML (`pytest --junitxml`): `<testsuite>` or
    `<testsuites>` with `tests`, `failures`, `errors`, `skipped` attributes. Skipped tests
    are not counted. None when the XML is unreadable or ran no test."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError:
        return None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    if not suites:
        return None
    tests = failed = skipped = 0
    for suite in suites:
        try:
            tests += int(suite.get("tests", "0"))
            failed += int(suite.get("failures", "0")) + int(suite.get("errors", "0"))
            skipped += int(suite.get("skipped", "0"))
        except ValueError:
            return None
    run = tests - skipped
    if run <= 0:
        return None
    passed = max(run - failed, 0)
    return _counted(passed, run - passed, "junit")


# One "<n> <word>" pair of a test summary line: pytest writes "3 failed, 5 passed in 0.12s",
# "5 passed", "1 failed, 2 passed, 1 error"; other runners write "N passed, M failed".
_PAIR = re.compile(r"(\d+)\s+(passed|failed|errors?|xfailed|xpassed|skipped|deselected|warnings?)\b")


def from_summary(output: str) -> Verdict | None:
    """Score from the last line of `output` that counts passed/failed tests; errors count as
    failures. None when no such line exists or it counts no test."""
    for line in reversed(output.splitlines()):
        pairs = _PAIR.findall(line)
        kinds = {kind for _, kind in pairs}
        if not kinds & {"passed", "failed", "error", "errors"}:
            continue
        counts: dict[str, int] = {}
        for n, kind in pairs:
            key = "error" if kind.startswith("error") else kind
            counts[key] = counts.get(key, 0) + int(n)
        passed = counts.get("passed", 0) + counts.get("xpassed", 0)
        failed = counts.get("failed", 0) + counts.get("error", 0)
        if passed + failed == 0:
            return None
        return _counted(passed, failed, "summary")
    return None


def _counted(passed: int, failed: int, source: str) -> Verdict:
    total = passed + failed
    ok = failed == 0
    return Verdict(passed / total, ok, ok, f"{passed}/{total} passed", source)


def from_command(exit_code: int, output: str, junit_xml: str | None = None) -> Verdict:
    """The verdict of a verify command: JUnit XML when given and readable, else the summary
    line of its output. A non-zero exit is never a pass; no score -> unscored."""
    verdict = (from_junit(junit_xml) if junit_xml else None) or from_summary(output)
    if verdict is None:
        return Verdict(None, False, False, f"no test counts found (exit {exit_code})", "none")
    if exit_code != 0 and verdict.passed:
        return Verdict(verdict.score, False, False, f"{verdict.summary}, but exit {exit_code}", verdict.source)
    return verdict


def normalise_score(value: object) -> float | None:
    """0..1 from a number in 0..1, "8/10", "85%", or a numeric string; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            if m := re.fullmatch(r"(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)", text):
                den = float(m.group(2))
                if den <= 0:
                    return None
                number = float(m.group(1)) / den
            elif m := re.fullmatch(r"(\d+(?:\.\d+)?)\s*%", text):
                number = float(m.group(1)) / 100
            else:
                number = float(text)
        except ValueError:
            return None
    else:
        return None
    if number != number or not 0.0 <= number <= 1.0:  # NaN, or out of range: unscored
        return None
    return number


def json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object in `text` (fenced or bare), in order of appearance."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    i = text.find("{")
    while i != -1:
        try:
            obj, end = decoder.raw_decode(text, i)
        except ValueError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            found.append(obj)
        i = text.find("{", end)
    return found


def from_agent(text: str) -> Verdict:
    """The verdict in an agent's reply: the last JSON object (fenced or bare) that has a
    `score` key. `passed`/`done` are read when they are booleans; `summary` when a string.
    No such object, or a score that does not normalise -> unscored."""
    for obj in reversed(json_objects(text)):
        if "score" not in obj:
            continue
        score = normalise_score(obj["score"])
        if score is None:
            return Verdict(None, False, False, f"unreadable score {obj['score']!r}", "agent")
        summary = obj.get("summary") if isinstance(obj.get("summary"), str) else ""
        passed = obj.get("passed") is True
        done = obj.get("done") is True
        return Verdict(score, passed, done, str(summary), "agent")
    return Verdict(None, False, False, "no JSON object with a score", "agent")
