"""Test ids and per-test outcomes: what the verifier's pytest plugin streamed, and what they mean.

The plugin (`resources/pytest_plugin/automaton_verdicts.py`) writes one JSON object per line
to a pipe the runner holds: `collected`, `deselected`, `result` (id, outcome) and `end`
(pytest's exit status) records. `read_stream` turns those bytes into a `Streamed`: the first
result of each test id wins (a later line for the same id, from whatever wrote it, is
ignored); `read_runs` splits the stream of several runs in turn at their `end` records.
`removed` compares a run with the frozen set of test ids (`store.frozen_tests`); `disagreement`
checks the JUnit XML and the exit status against the stream; `verdict` scores
the stream.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from automaton.core import jsontext
from automaton.core.verdicts import Verdict

# Outcomes that count as run (the score's denominator) and as a pass.
RAN = frozenset({"passed", "xpassed", "failed", "error"})
PASSED = frozenset({"passed", "xpassed"})
OUTCOMES = frozenset({*RAN, "skipped", "xfailed"})
MAX_LINE = 1 << 16  # bytes: a longer line is no record the plugin writes
MAX_IDS = 200_000  # records kept: a stream past this is read as broken


def runs_pytest(argv: list[str]) -> bool:
    """Whether `argv` runs pytest: a program named pytest / py.test (any folder, any `.exe`), or
    `-m pytest` anywhere (`python -m pytest`, `uv run python -m pytest`)."""
    for i, arg in enumerate(argv):
        base = arg.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".exe")
        if base in ("pytest", "py.test") or (arg == "-m" and i + 1 < len(argv) and argv[i + 1] == "pytest"):
            return True
    return False


@dataclass
class Streamed:
    """collected: ids in collection order (after deselection); deselected: ids; results: id ->
    outcome, first line per id; end: pytest's exit status from the `end` record (None: the
    stream ended before it); junk: lines that were no record (counted, never trusted);
    conflicts: ids with a second result that differs from the first, or a result for an id
    that was not collected (the plugin writes one result per collected test: anything else was
    written by someone else); after_end: non-empty lines after the `end` record (the plugin
    closes its descriptor after `end`: whatever follows was written by someone else);
    tampered: what the plugin's check of pytest's own code found changed during the run (a
    heuristic: the plugin's module docstring), None when nothing was reported."""

    collected: list[str] = field(default_factory=list)
    deselected: list[str] = field(default_factory=list)
    results: dict[str, str] = field(default_factory=dict)
    end: int | None = None
    junk: int = 0
    conflicts: list[str] = field(default_factory=list)
    after_end: int = 0
    tampered: str | None = None


def _record(line: bytes) -> dict[str, object] | None:
    if len(line) > MAX_LINE:
        return None
    try:
        obj = jsontext.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return obj if isinstance(obj, dict) and isinstance(obj.get("kind"), str) else None


def _session_record(out: Streamed, obj: dict[str, object]) -> None:
    """Apply an `end` (pytest's exit status; -1 when it is no integer) or a `tampered` record
    (the first one's text kept) to `out`."""
    if obj["kind"] == "end":
        status = obj.get("exitstatus")
        out.end = status if isinstance(status, int) and not isinstance(status, bool) else -1
    else:
        what = obj.get("what")
        out.tampered = out.tampered or (what[:300] if isinstance(what, str) else "(unnamed)")


def read_stream(data: bytes) -> Streamed:
    """The records in `data` (see the module docstring). Lines after `end` are counted
    (`after_end`), never read."""
    out = Streamed()
    seen: set[str] = set()
    for line in data.splitlines():
        if out.end is not None:
            out.after_end += int(bool(line.strip()))
            continue
        obj = _record(line)
        if obj is None:
            out.junk += int(bool(line.strip()))
            continue
        kind, ident = obj["kind"], obj.get("id")
        if kind in ("end", "tampered"):
            _session_record(out, obj)
        elif not isinstance(ident, str) or len(seen) >= MAX_IDS:
            out.junk += 1
        elif kind == "collected" and ident not in seen:
            seen.add(ident)
            out.collected.append(ident)
        elif kind == "deselected":
            out.deselected.append(ident)
        elif kind == "result" and obj.get("outcome") in OUTCOMES:
            first = out.results.setdefault(ident, str(obj["outcome"]))
            if (first != obj["outcome"] or ident not in seen) and ident not in out.conflicts:
                out.conflicts.append(ident)
        else:
            out.junk += int(kind != "collected")  # a collected id seen before is no junk
    return out


def read_runs(data: bytes) -> list[Streamed]:
    """The sessions in `data` when several pytest runs wrote to one pipe in turn (the packaged
    scorer's flaky mode): each ends at its `end` record and is read by `read_stream` (the first
    result per id per run wins). Non-empty lines after the last `end` record make a last run
    without one (`end` None): a run cut short, or lines someone else wrote."""
    runs: list[Streamed] = []
    lines: list[bytes] = []
    for line in data.splitlines():
        lines.append(line)
        obj = _record(line)
        if obj is not None and obj["kind"] == "end":
            runs.append(read_stream(b"\n".join(lines)))
            lines = []
    if any(line.strip() for line in lines):
        runs.append(read_stream(b"\n".join(lines)))
    return runs


def removed(frozen: list[str], run: Streamed) -> list[tuple[str, str]]:
    """(id, why) for each frozen id the run did not pass judgment on: `missing` (not collected,
    no result), `deselected`, `skipped`, `xfailed`; sorted by id."""
    gone: list[tuple[str, str]] = []
    deselected = set(run.deselected)
    for ident in sorted(set(frozen)):
        outcome = run.results.get(ident)
        if outcome in ("skipped", "xfailed"):
            gone.append((ident, outcome))
        elif outcome is None:
            gone.append((ident, "deselected" if ident in deselected else "missing"))
    return gone


def counts(run: Streamed) -> tuple[int, int, int]:
    """(passed, failed or error, skipped or xfailed) over the run's results."""
    passed = sum(1 for o in run.results.values() if o in PASSED)
    failed = sum(1 for o in run.results.values() if o in ("failed", "error"))
    return passed, failed, len(run.results) - passed - failed


def junit_counts(xml_text: str) -> tuple[int, int, int] | None:
    """(passed, failed or error, skipped) from JUnit XML's per-testcase elements; None when
    unreadable. A testcase with a `<failure>` or `<error>` child counts failed, one with
    `<skipped>` skipped (pytest writes an xfail as skipped)."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError:
        return None
    passed = failed = skipped = 0
    for case in root.iter("testcase"):
        tags = {child.tag for child in case}
        if tags & {"failure", "error"}:
            failed += 1
        elif "skipped" in tags:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def disagreement(run: Streamed, exit_code: int, junit_xml: str | None, junit_required: bool = False) -> str | None:
    """Why the run's other reports contradict the stream, or None: the plugin found pytest's own
    code changed (`tampered`); the stream ended without its
    `end` record while the process exited 0; a result written twice with different outcomes,
    or for an id never collected; lines after the `end` record; with `junit_required` (pytest
    was told to write JUnit XML), a stream with its `end` record but no JUnit XML (a process
    that ended before pytest wrote it: the stream was never corroborated, whoever wrote it);
    an exit status other than the stream's `end`; an exit 0 with
    failed tests streamed, or an exit 1 with none (pytest exits 0 when every test passed, 1
    when some failed: also for collection errors under `--continue-on-collection-errors`,
    which therefore read as a contradiction); JUnit XML
    that counts other passed tests, or fewer failed ones, than the stream (it may count more
    failures: a collection error is a testcase there and no test in the stream)."""
    passed, failed, _ = counts(run)
    if run.tampered is not None:
        return f"pytest was changed in the process under test (a heuristic check): {run.tampered}"
    if run.conflicts:
        more = f" (+{len(run.conflicts) - 3} more)" if len(run.conflicts) > 3 else ""
        return f"results written twice or for tests never collected: {', '.join(run.conflicts[:3])}{more}"
    if run.after_end:
        return f"{run.after_end} line(s) written to the result stream after its end record"
    if run.end is None:
        return "the result stream ended early, yet the process exited 0" if exit_code == 0 else None
    if junit_required and junit_xml is None:
        return "pytest wrote no JUnit XML, yet the result stream says the session finished"
    if run.end != exit_code:
        return f"exit status {exit_code}, but pytest finished with {run.end}"
    if exit_code == 0 and failed:
        return f"exit status 0 with {failed} failed test(s) streamed"
    if exit_code == 1 and not failed:
        return "exit status 1 (tests failed) with no failed test streamed"
    if junit_xml is not None:
        found = junit_counts(junit_xml)
        if found is None:
            return "the JUnit XML cannot be read"
        if found[0] != passed or found[1] < failed:
            return (f"the JUnit XML says {found[0]} passed, {found[1]} failed; the stream says"
                    f" {passed} passed, {failed} failed")
    return None


def verdict(run: Streamed, exit_code: int) -> Verdict:
    """Score = passed / (passed + failed + error) over the streamed results; unscored when none
    ran. A non-zero exit is never a pass."""
    passed, failed, _ = counts(run)
    total = passed + failed
    if total == 0:
        return Verdict(None, False, False, f"no test ran (exit {exit_code})", "stream")
    ok = failed == 0 and exit_code == 0
    return Verdict(passed / total, ok, ok, f"{passed}/{total} passed", "stream")


@dataclass(frozen=True)
class Frozen:
    """The frozen test set of a loop: base_commit (the commit it was collected at), holdout
    (SHA-256 of the holdout folder's files then, "" without one), ids (sorted, unique)."""

    base_commit: str
    holdout: str
    ids: tuple[str, ...]

    def body(self) -> bytes:
        """The canonical bytes the seal covers."""
        return json.dumps({"base_commit": self.base_commit, "holdout": self.holdout, "ids": list(self.ids)},
                          sort_keys=True, separators=(",", ":")).encode("utf-8")


def id_diff(old: list[str] | tuple[str, ...], new: list[str] | tuple[str, ...]) -> list[str]:
    """`- id` for each id only in `old`, `+ id` for each only in `new`, sorted by id."""
    a, b = set(old), set(new)
    return sorted([f"- {i}" for i in a - b] + [f"+ {i}" for i in b - a], key=lambda s: (s[2:], s[0]))
