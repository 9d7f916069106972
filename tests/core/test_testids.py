"""The plugin's stream read back: first result per id wins, contradictions are found, frozen ids are checked."""

from __future__ import annotations

import json

from automaton.core.testids import (
    Frozen,
    disagreement,
    id_diff,
    read_runs,
    read_stream,
    removed,
    runs_pytest,
    verdict,
)


def lines(*objs: object) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objs)


def res(ident: str, outcome: str) -> dict[str, str]:
    return {"kind": "result", "id": ident, "outcome": outcome}


def col(*idents: str) -> list[dict[str, str]]:
    return [{"kind": "collected", "id": i} for i in idents]


def test_the_first_result_of_each_id_wins_and_nothing_after_the_end_counts() -> None:
    data = lines({"kind": "collected", "id": "t::a"}, res("t::a", "failed"), res("t::a", "passed"),
                 {"kind": "end", "exitstatus": 1}, res("t::b", "passed"))
    run = read_stream(data + b"not json\n")
    assert run.results == {"t::a": "failed"}
    assert run.end == 1 and run.collected == ["t::a"]
    assert run.conflicts == ["t::a"]  # a second, different result: someone else wrote one
    assert disagreement(run, 1, None) == "results written twice or for tests never collected: t::a"


def test_a_result_for_a_test_never_collected_is_a_conflict() -> None:
    run = read_stream(lines(*col("t::a"), res("t::a", "passed"), res("t::b", "passed"),
                            {"kind": "end", "exitstatus": 0}))
    assert run.conflicts == ["t::b"]
    assert disagreement(run, 0, None) is not None


def test_junk_lines_are_counted_never_read_as_results() -> None:
    run = read_stream(b"garbage\n" + lines({"kind": "result", "id": "t::a", "outcome": "great"},
                                           {"kind": "result", "id": 3, "outcome": "passed"}, [1, 2]))
    assert run.results == {} and run.junk == 4 and run.end is None


def test_removed_names_missing_skipped_xfailed_and_deselected_ids() -> None:
    run = read_stream(lines({"kind": "deselected", "id": "t::d"}, *col("t::s", "t::x", "t::p", "t::new"),
                            res("t::s", "skipped"), res("t::x", "xfailed"), res("t::p", "passed"),
                            res("t::new", "passed"), {"kind": "end", "exitstatus": 0}))
    assert removed(["t::p", "t::s", "t::x", "t::d", "t::gone"], run) == [
        ("t::d", "deselected"), ("t::gone", "missing"), ("t::s", "skipped"), ("t::x", "xfailed")]
    assert removed(["t::p"], run) == []  # a new test is fine


def test_an_exit_status_that_contradicts_the_stream_is_found() -> None:
    failed = read_stream(lines(*col("t::a", "t::b"), res("t::a", "failed"), res("t::b", "passed"),
                               {"kind": "end", "exitstatus": 1}))
    assert disagreement(failed, 0, None) == "exit status 0, but pytest finished with 1"
    assert disagreement(failed, 1, None) is None
    cut = read_stream(lines(*col("t::a"), res("t::a", "failed")))
    assert disagreement(cut, 0, None) == "the result stream ended early, yet the process exited 0"
    assert disagreement(cut, 1, None) is None  # unscored later, not a contradiction
    forged_end = read_stream(lines(*col("t::a"), res("t::a", "failed"), {"kind": "end", "exitstatus": 0}))
    assert disagreement(forged_end, 0, None) == "exit status 0 with 1 failed test(s) streamed"
    forged_pass = read_stream(lines(*col("t::a"), res("t::a", "passed"), {"kind": "end", "exitstatus": 1}))
    assert disagreement(forged_pass, 1, None) == "exit status 1 (tests failed) with no failed test streamed"


def test_junit_that_counts_more_passes_than_the_stream_is_found() -> None:
    run = read_stream(lines(*col("t::a", "t::b"), res("t::a", "failed"), res("t::b", "passed"),
                            {"kind": "end", "exitstatus": 1}))
    honest = ('<testsuite><testcase name="a"><failure/></testcase><testcase name="b"/>'
              '<testcase name="collect"><error/></testcase></testsuite>')
    assert disagreement(run, 1, honest) is None  # a collection error is one more failure there
    forged = '<testsuite><testcase name="a"/><testcase name="b"/></testsuite>'
    assert disagreement(run, 1, forged) == "the JUnit XML says 2 passed, 0 failed; the stream says 1 passed, 1 failed"
    assert disagreement(run, 1, "<testsuite") == "the JUnit XML cannot be read"


def test_the_score_counts_passed_over_run_and_never_passes_a_non_zero_exit() -> None:
    run = read_stream(lines(res("a", "passed"), res("b", "xpassed"), res("c", "failed"), res("d", "error"),
                            res("e", "skipped"), res("f", "xfailed"), {"kind": "end", "exitstatus": 1}))
    v = verdict(run, 1)
    assert (v.score, v.passed, v.summary, v.source) == (0.5, False, "2/4 passed", "stream")
    assert verdict(read_stream(lines({"kind": "end", "exitstatus": 5})), 5).score is None


def test_runs_pytest() -> None:
    assert runs_pytest(["pytest", "-q"]) and runs_pytest(["/venv/bin/py.test"]) and runs_pytest(["pytest.exe"])
    assert runs_pytest(["python", "-m", "pytest"]) and runs_pytest(["uv", "run", "python", "-m", "pytest", "-x"])
    assert not runs_pytest(["python", "verify.py"]) and not runs_pytest(["make", "test"])
    assert not runs_pytest(["python", "-m"])


def test_frozen_body_is_canonical_and_the_diff_names_ids() -> None:
    assert Frozen("b", "", ("x", "y")).body() == b'{"base_commit":"b","holdout":"","ids":["x","y"]}'
    assert id_diff(["a", "b"], ["b", "c"]) == ["- a", "+ c"]


def test_several_runs_in_turn_are_split_at_their_end_records_first_result_per_id_per_run() -> None:
    end0, end1 = {"kind": "end", "exitstatus": 0}, {"kind": "end", "exitstatus": 1}
    data = lines(*col("t::a"), res("t::a", "passed"), end0,
                 *col("t::a"), res("t::a", "failed"), res("t::a", "passed"), end1,
                 res("t::a", "passed"))
    runs = read_runs(data)
    assert [r.results for r in runs] == [{"t::a": "passed"}, {"t::a": "failed"}, {"t::a": "passed"}]
    assert [r.end for r in runs] == [0, 1, None]
    assert runs[1].conflicts == ["t::a"]  # the second run's second result, not the first run's
    assert runs[2].conflicts == ["t::a"]  # after the last end: a result for a test never collected
    assert read_runs(lines(*col("t::a"), res("t::a", "passed"), end0) + b"\n  \n") == runs[:1]


def test_a_tampered_record_is_a_disagreement_whatever_else_agrees() -> None:
    data = lines(*col("t::a"), res("t::a", "passed"), {"kind": "tampered", "what": "x replaced"},
                 {"kind": "tampered", "what": "y"}, {"kind": "end", "exitstatus": 0})
    run = read_stream(data)
    assert run.tampered == "x replaced" and run.junk == 0
    assert disagreement(run, 0, None) == "pytest was changed in the process under test (a heuristic check): x replaced"
    assert read_stream(lines({"kind": "tampered", "what": 3})).tampered == "(unnamed)"
