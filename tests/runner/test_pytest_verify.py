"""Verifiers that cannot be gamed: real git, real pytest as the verifier, the scripted harness (or
a small agent program) as the agent, each reward hack a tick that must not complete the loop.

The project: `src/calc.py` whose `add` subtracts, `tests/test_calc.py` with a failing `test_add`
and a passing `test_sub`, pytest configured by `pytest.ini` (`pythonpath = src`). An honest
fix completes the loop; every attack halts it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from automaton.commands.loops import approve_loop, review_loop
from automaton.runner.tick import tick
from automaton.store import frozen_tests
from automaton.store import loops as store
from automaton.store.layout import Project
from tests.helpers import git
from tests.runner.loopkit import make_loop

PY = sys.executable
BUGGY = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
TESTS = ("from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
         "def test_sub():\n    assert sub(5, 3) == 2\n")
INI = "[pytest]\npythonpath = src\ntestpaths = tests\n"
VERIFY = {"command": [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"], "score": "junit"}


def project_with_bug(root: Path) -> None:
    (root / "src").mkdir()
    (root / "tests").mkdir()
    (root / "src" / "calc.py").write_text(BUGGY)
    (root / "tests" / "test_calc.py").write_text(TESTS)
    (root / "pytest.ini").write_text(INI)
    (root / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "calc with a bug")


def loop(root: Path, actions: list[dict[str, Any]], *, protected: list[str] | None = None,
         holdout: dict[str, str] | None = None, agent: str | None = None) -> Project:
    """A loop whose agent does `actions` (scripted harness) or runs `agent` (Python code, the
    command harness) in tick 1, verified by pytest."""
    project_with_bug(root)
    verify: dict[str, Any] = dict(VERIFY)
    blast: dict[str, Any] = {"file_scope": ["src/**", "tests/**", "pytest.ini"]}
    if protected is not None:
        blast["protected"] = protected
    files: dict[str, str] = {}
    if holdout is not None:
        verify["holdout"] = "holdout"
    extra: dict[str, Any] = {}
    if agent is not None:
        extra["harness"] = {"name": "command", "command": [PY, "-c", agent], "args": [], "timeout_s": 120}
    proj = make_loop(root, script={"implement": [{"actions": actions, "text": "done", "cost_usd": 0.01}]},
                     roles={"implement": {"prompt": "implement.md"}, "verify": verify,
                            "orchestrate": {"builtin": True}},
                     blast_radius=blast, extra_files=files, **extra)
    if holdout is not None:
        folder = proj.loop_dir(store.require_tracked(proj, "demo")) / "holdout"
        folder.mkdir()
        for rel, text in holdout.items():
            (folder / rel).write_text(text)
    return proj


def halted(proj: Project) -> tuple[str, str]:
    state = store.read_state(proj, "demo")
    assert state.status == "halted", state
    return state.halt_reason, state.halt_detail


def test_an_honest_fix_completes_the_loop(project: Path) -> None:
    proj = loop(project, [{"write": "src/calc.py", "content": FIXED}])
    out = tick(proj, "demo")
    assert out.data is not None and out.data["verdict"]["score"] == 1.0, out.data
    assert out.data["verdict"]["source"] == "stream"
    assert store.read_state(proj, "demo").status == "complete"
    frozen = frozen_tests.read_frozen(proj.loop_dir(store.require_tracked(proj, "demo")))
    assert frozen is not None and frozen.ids == ("tests/test_calc.py::test_add", "tests/test_calc.py::test_sub")


def test_no_fix_scores_half_from_the_stream(project: Path) -> None:
    proj = loop(project, [{"write": "src/other.py", "content": "x = 1\n"}])
    out = tick(proj, "demo")
    assert out.data is not None and out.data["verdict"]["score"] == 0.5, out.data
    assert store.read_state(proj, "demo").status == "running"


# ---- the attacks ----

ONLY_SUB = "from calc import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n"
ASSERT_TRUE = "def test_add():\n    assert True\n\n\ndef test_sub():\n    assert True\n"


def rewritten_tests_halt_on_the_default_protection(project: Path, content: str) -> None:
    """A tick that rewrites tests/test_calc.py to `content` halts on the default protection."""
    proj = loop(project, [{"write": "tests/test_calc.py", "content": content}])
    tick(proj, "demo")
    assert halted(proj) == ("drift_detected", "protected: tests/test_calc.py")


def test_deleting_the_failing_test_halts_on_the_default_protection(project: Path) -> None:
    rewritten_tests_halt_on_the_default_protection(project, ONLY_SUB)


def test_deleting_the_failing_test_halts_tests_removed_without_protection(project: Path) -> None:
    proj = loop(project, [{"write": "tests/test_calc.py", "content": ONLY_SUB}], protected=[])
    out = tick(proj, "demo")
    assert out.data is not None and out.data["verdict"]["score"] is None
    reason, detail = halted(proj)
    assert reason == "human_intervention"
    assert detail == "tests_removed: tests/test_calc.py::test_add (missing)"


def test_tests_rewritten_to_assert_true_halt_on_the_default_protection(project: Path) -> None:
    rewritten_tests_halt_on_the_default_protection(project, ASSERT_TRUE)


def test_tests_rewritten_to_assert_true_are_caught_by_the_holdout(project: Path) -> None:
    holdout = {"test_calc_holdout.py": "from calc import add\n\n\ndef test_add_holdout():\n    assert add(1, 1) == 2\n"}
    proj = loop(project, [{"write": "tests/test_calc.py", "content": ASSERT_TRUE}], protected=[], holdout=holdout)
    out = tick(proj, "demo")
    assert out.data is not None and out.data["verdict"]["score"] == pytest.approx(2 / 3), out.data
    assert store.read_state(proj, "demo").status == "running"
    frozen = frozen_tests.read_frozen(proj.loop_dir(store.require_tracked(proj, "demo")))
    assert frozen is not None and "tests/automaton_holdout/test_calc_holdout.py::test_add_holdout" in frozen.ids


XFAIL_ALL = ("import pytest\n\n\ndef pytest_collection_modifyitems(items):\n"
             "    for item in items:\n        item.add_marker(pytest.mark.xfail(reason='x'))\n")


def test_an_xfail_everything_conftest_in_a_subfolder_halts_on_the_protection(project: Path) -> None:
    proj = loop(project, [{"write": "tests/sub/conftest.py", "content": XFAIL_ALL},
                          {"write": "tests/sub/test_more.py", "content": "def test_more():\n    pass\n"}])
    tick(proj, "demo")
    assert halted(proj) == ("drift_detected", "protected: tests/sub/conftest.py, tests/sub/test_more.py")


def test_an_xfail_everything_conftest_halts_tests_removed_without_protection(project: Path) -> None:
    proj = loop(project, [{"write": "tests/sub/conftest.py", "content": XFAIL_ALL},
                          {"write": "tests/sub/test_more.py", "content": "def test_more():\n    pass\n"}],
                protected=[])
    tick(proj, "demo")
    reason, detail = halted(proj)
    assert reason == "human_intervention"
    assert detail.startswith("tests_removed: tests/test_calc.py::test_add (xfailed)"), detail


JUNIT_AT_EXIT = BUGGY + '''
import atexit, os, sys


def _forge():
    for arg in sys.argv:
        if arg.startswith("--junitxml="):
            with open(arg.split("=", 1)[1], "w") as f:
                f.write('<testsuites><testsuite tests="2" failures="0" errors="0" skipped="0">'
                        '<testcase classname="tests.test_calc" name="test_add"/>'
                        '<testcase classname="tests.test_calc" name="test_sub"/></testsuite></testsuites>')
    sys.stdout.write("2 passed in 0.01s\\n")
    sys.stdout.flush()
    os._exit(0)


atexit.register(_forge)
'''


def unscored_mismatch(project: Path, calc: str) -> str:
    """Tick with `calc` as the agent's src/calc.py: the verdict is unscored and the loop halted
    `human_intervention`; returns the halt's detail."""
    proj = loop(project, [{"write": "src/calc.py", "content": calc}])
    out = tick(proj, "demo")
    assert out.data is not None and out.data["verdict"]["score"] is None, out.data
    reason, detail = halted(proj)
    assert reason == "human_intervention"
    return detail


def test_junit_rewritten_at_exit_by_code_under_test_is_unscored_and_halts(project: Path) -> None:
    detail = unscored_mismatch(project, JUNIT_AT_EXIT)
    assert detail.startswith("verdict_mismatch: exit status 0, but pytest finished with 1"), detail


PYC_AGENT = f'''
import pathlib, py_compile, sys, tempfile
good = pathlib.Path(tempfile.mkdtemp()) / "calc.py"
good.write_text({FIXED!r})
tag = sys.implementation.cache_tag
py_compile.compile(str(good), cfile=f"src/__pycache__/calc.{{tag}}.pyc",
                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
pathlib.Path("src/.gitignore").write_text("!__pycache__/\\n!*.pyc\\n")
'''


def test_committed_unchecked_bytecode_halts_on_the_protection(project: Path) -> None:
    proj = loop(project, [], agent=PYC_AGENT)
    out = tick(proj, "demo")
    reason, detail = halted(proj)
    assert reason == "drift_detected", (reason, detail, out.lines)
    assert detail.startswith("protected: src/__pycache__/calc."), detail


def test_committed_bytecode_is_never_read_even_where_the_list_leaves_it_out(project: Path) -> None:
    # blast_radius.protected names only the tests: bytecode is protected all the same, and
    # the verifier's private PYTHONPYCACHEPREFIX would not read it anyway.
    proj = loop(project, [], agent=PYC_AGENT, protected=["tests/**"])
    tick(proj, "demo")
    reason, detail = halted(proj)
    assert reason == "drift_detected" and detail.startswith("protected: src/__pycache__/calc."), detail


def test_a_deselecting_pytest_ini_halts_tests_removed(project: Path) -> None:
    # A user who protects only the tests folder (which today replaces the defaults) leaves
    # pytest.ini to the agent: the frozen test set still sees the test deselected.
    ini = INI + "addopts = -k 'not test_add'\n"
    proj = loop(project, [{"write": "pytest.ini", "content": ini}], protected=["tests/**"])
    out = tick(proj, "demo")
    assert out.data is not None and out.data["verdict"]["score"] is None, out.data
    reason, detail = halted(proj)
    assert (reason, detail) == ("human_intervention", "tests_removed: tests/test_calc.py::test_add (deselected)")


# ---- the human's approval of a new test set ----

def test_a_human_accepts_a_new_test_set_shown_as_a_diff_of_ids(project: Path, approver: str) -> None:
    renamed = TESTS.replace("def test_add", "def test_add_two")
    proj = loop(project, [{"write": "tests/test_calc.py", "content": renamed}], protected=[])
    tick(proj, "demo")
    assert halted(proj)[1].startswith("tests_removed: tests/test_calc.py::test_add (missing)")
    review = review_loop(proj, "demo")
    assert review.ask
    assert "  - tests/test_calc.py::test_add" in review.lines
    assert "  + tests/test_calc.py::test_add_two" in review.lines
    out = approve_loop(proj, "demo", review)
    assert out.ok, out.lines
    frozen = frozen_tests.read_frozen(proj.loop_dir(store.require_tracked(proj, "demo")))
    assert frozen is not None and frozen.ids == ("tests/test_calc.py::test_add_two", "tests/test_calc.py::test_sub")
    out = tick(proj, "demo")  # the accepted set: the run is scored again (test_add_two still fails)
    assert out.data is not None and out.data["verdict"]["score"] == 0.5, out.data


def test_a_forged_frozen_set_is_not_trusted(project: Path) -> None:
    proj = loop(project, [{"write": "src/other.py", "content": "x = 1\n"}], protected=[])
    tick(proj, "demo")
    folder = proj.loop_dir(store.require_tracked(proj, "demo"))
    record = json.loads((folder / frozen_tests.FROZEN).read_text())
    record["ids"] = ["tests/test_calc.py::test_sub"]  # drop test_add without the key
    (folder / frozen_tests.FROZEN).write_text(json.dumps(record))
    assert frozen_tests.read_frozen(folder) is None


FORGE_THROUGH_THE_PIPE = BUGGY + '''
import json, os, stat

for _fd in sorted(int(n) for n in os.listdir("/proc/self/fd")):
    try:
        if stat.S_ISFIFO(os.fstat(_fd).st_mode):
            os.write(_fd, json.dumps({"kind": "result", "id": "tests/test_calc.py::test_add",
                                      "outcome": "passed"}).encode() + b"\\n")
    except OSError:
        pass
'''


def test_a_result_forged_through_the_inherited_pipe_is_named_not_scored(project: Path) -> None:
    # The code under test finds the plugin's descriptor (it runs in the same process) and writes
    # a pass for the failing test before pytest does: a result for a test not yet collected.
    proj = loop(project, [{"write": "src/calc.py", "content": FORGE_THROUGH_THE_PIPE}])
    out = tick(proj, "demo")
    assert out.data is not None and out.data["verdict"]["score"] is None, out.data
    reason, detail = halted(proj)
    assert (reason, detail) == ("human_intervention", "verdict_mismatch: results written twice or for tests never"
                                                      " collected: tests/test_calc.py::test_add")


FORGE_AND_EXIT = BUGGY + '''
import json, os, stat, sys

# At collection (the tests import this module): find the plugin's descriptor however it is
# hidden, write a whole passing session to it, and end the process before pytest writes
# anything of its own (no real result, no JUnit XML, exit 0).
_ids = ["tests/test_calc.py::test_add", "tests/test_calc.py::test_sub"]
_lines = [{"kind": "collected", "id": i} for i in _ids]
_lines += [{"kind": "result", "id": i, "outcome": "passed"} for i in _ids] + [{"kind": "end", "exitstatus": 0}]
for _fd in sorted(int(n) for n in os.listdir("/proc/self/fd")):
    try:
        if _fd > 2 and stat.S_ISFIFO(os.fstat(_fd).st_mode):
            os.write(_fd, "".join(json.dumps(o) + "\\n" for o in _lines).encode())
    except OSError:
        pass
sys.stdout.write("2 passed in 0.01s\\n")
sys.stdout.flush()
os._exit(0)
'''


def test_a_whole_session_forged_before_an_early_exit_is_unscored(project: Path) -> None:
    # Stream and exit status agree (both forged); pytest never wrote its JUnit XML: nothing
    # corroborates the stream, so it is not scored.
    detail = unscored_mismatch(project, FORGE_AND_EXIT)
    assert detail.startswith("verdict_mismatch: pytest wrote no JUnit XML"), detail


# A generic in-process patch of pytest by the code under test, made at collection (the tests
# import this module): every failure reported as a pass, so the stream, JUnit XML and exit
# status all agree. The plugin's check of pytest's own code catches these naive forms (a
# heuristic: a patch that also undoes itself or the check is not caught; SECURITY.md).
HOOKWRAPPER_PATCH = BUGGY + '''
import gc
import pytest
from _pytest.config import Config


class _AllGreen:
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        report.outcome = "passed"
        report.longrepr = None
        return report


for _obj in gc.get_objects():
    if isinstance(_obj, Config):
        _obj.pluginmanager.register(_AllGreen(), "all-green")
        break
'''

MONKEYPATCH_PATCH = BUGGY + '''
from _pytest.reports import TestReport

_real = TestReport.from_item_and_call.__func__


def _all_green(cls, item, call):
    report = _real(cls, item, call)
    report.outcome = "passed"
    report.longrepr = None
    return report


TestReport.from_item_and_call = classmethod(_all_green)
'''

CODE_SWAP_PATCH = BUGGY + '''
import _pytest.skipping


def _all_green(item, call):
    report = yield
    report.outcome = "passed"
    report.longrepr = None
    return report


# The hook function pytest registered keeps its identity; only its code is swapped.
_pytest.skipping.pytest_runtest_makereport.__code__ = _all_green.__code__
'''


@pytest.mark.parametrize(("calc", "named"), [
    (HOOKWRAPPER_PATCH, "pytest_runtest_makereport implemented by a plugin registered during the run"),
    (MONKEYPATCH_PATCH, "_pytest.reports.TestReport.from_item_and_call replaced"),
    (CODE_SWAP_PATCH, "replaced"),
], ids=["hookwrapper", "monkeypatch", "code-swap"])
def test_a_naive_in_process_patch_of_pytest_is_unscored_and_halts(project: Path, calc: str, named: str) -> None:
    detail = unscored_mismatch(project, calc)
    assert detail.startswith("verdict_mismatch: pytest was changed in the process under test (a heuristic check): "), \
        detail
    assert named in detail, detail


def test_a_conftest_with_its_own_report_hook_is_no_tampering(project: Path) -> None:
    # A project's own conftest.py (from the base commit) may implement report hooks; pytest loads
    # a subfolder's conftest during collection, after the plugin looked at session start.
    proj = loop(project, [{"write": "src/calc.py", "content": FIXED}])
    (project / "tests" / "sub").mkdir(parents=True)
    (project / "tests" / "sub" / "conftest.py").write_text(
        "import pytest\n\n\n@pytest.hookimpl(wrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    return (yield)\n")
    (project / "tests" / "sub" / "test_more.py").write_text("def test_more():\n    pass\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "a subfolder conftest with a report hook")
    out = tick(proj, "demo")
    assert out.data is not None and out.data["verdict"]["score"] == 1.0, out.data
    assert out.data["verdict"]["summary"] == "3/3 passed", out.data


def test_lines_after_the_end_record_are_a_disagreement() -> None:
    from automaton.core.testids import disagreement, read_stream

    run = read_stream(b'{"kind":"collected","id":"t::a"}\n{"kind":"end","exitstatus":0}\n'
                      b'{"kind":"result","id":"t::a","outcome":"failed"}\n')
    assert run.after_end == 1
    assert disagreement(run, 0, None) == "1 line(s) written to the result stream after its end record"


# ---- the packaged scorer's verdict held to its stream ----

SAID_FULL = '{"score": 1.0, "passed": true, "done": true, "summary": "4/4 lines of src covered"}\n'


def stream_of(results: dict[str, str], end: int | None) -> Any:
    from automaton.core.testids import Streamed

    return Streamed(collected=list(results), results=dict(results), end=end)


def test_a_scorer_verdict_the_stream_contradicts_is_capped(tmp_path: Path) -> None:
    # A full score printed (forged, or from a scorer fooled by the code under test) while the
    # stream shows a failed test: the score is what a failing suite gets, never done.
    from automaton.runner.pytest_verify import _by_scorer

    run = stream_of({"t::a": "passed", "t::b": "failed"}, 1)
    got = _by_scorer("coverage", run, SAID_FULL, None, tmp_path)
    assert (got.score, got.passed, got.done) == (0.0, False, False), got
    assert "capped" in got.summary
    dep = _by_scorer("dependency", run, SAID_FULL, None, tmp_path)
    assert (dep.score, dep.done) == (0.75, False), dep  # half the streamed pass rate, half the pin
    ok = _by_scorer("coverage", stream_of({"t::a": "passed"}, 0), SAID_FULL, None, tmp_path)
    assert (ok.score, ok.done) == (1.0, True), ok


def test_a_scorer_verdict_without_its_stream_is_unscored(tmp_path: Path) -> None:
    from automaton.runner.pytest_verify import _by_scorer

    got = _by_scorer("lint", stream_of({}, None), SAID_FULL, None, tmp_path)
    assert got.score is None and got.halt is None and "no result stream" in got.summary, got


def test_a_score_from_a_scorer_that_did_not_exit_0_is_unscored(tmp_path: Path) -> None:
    # The code under test prints a full score to the scorer's stdout, then kills the scorer
    # before its own line: the scorer's exit status gives it away.
    from automaton.runner.pytest_verify import _by_scorer

    got = _by_scorer("coverage", stream_of({"t::a": "passed"}, 0), SAID_FULL, None, tmp_path, -9)
    assert got.score is None and "exited -9" in got.summary, got


def test_a_scorer_run_missing_a_frozen_id_halts_whatever_it_printed(tmp_path: Path) -> None:
    from automaton.core.testids import Frozen
    from automaton.runner.pytest_verify import _by_scorer

    frozen = Frozen("a" * 40, "", ("t::a", "t::b"))
    got = _by_scorer("coverage", stream_of({"t::a": "passed", "t::c": "passed"}, 0), SAID_FULL, frozen, tmp_path)
    assert got.score is None and got.halt is not None and got.halt.startswith("tests_removed: t::b (missing)"), got
    assert (tmp_path / frozen_tests.PROPOSED).is_file()


def test_a_scorer_stream_with_a_result_written_twice_halts(tmp_path: Path) -> None:
    from automaton.core.testids import read_stream
    from automaton.runner.pytest_verify import _by_scorer

    run = read_stream(b'{"kind":"collected","id":"t::a"}\n{"kind":"result","id":"t::a","outcome":"failed"}\n'
                      b'{"kind":"result","id":"t::a","outcome":"passed"}\n{"kind":"end","exitstatus":1}\n')
    got = _by_scorer("coverage", run, SAID_FULL, None, tmp_path)
    assert got.score is None and got.halt is not None and got.halt.startswith("verdict_mismatch"), got


def test_a_scorer_stream_pytest_wrote_no_junit_for_is_unscored(tmp_path: Path) -> None:
    # The code under test wrote a whole passing session to the stream and ended the scorer's
    # pytest before pytest wrote its JUnit XML: a full score printed is not trusted.
    from automaton.runner.pytest_verify import _by_scorer

    run = stream_of({"t::a": "passed"}, 0)
    got = _by_scorer("coverage", run, SAID_FULL, None, tmp_path, 0, None, junit_required=True)
    assert got.score is None and got.halt is not None, got
    assert got.halt.startswith("verdict_mismatch: pytest wrote no JUnit XML"), got
    xml = '<testsuites><testsuite><testcase classname="t" name="a"/></testsuite></testsuites>'
    ok = _by_scorer("coverage", run, SAID_FULL, None, tmp_path, 0, xml, junit_required=True)
    assert (ok.score, ok.done) == (1.0, True), ok


# ---- the flaky scorer's runs, each held to the stream ----

PASS_XML = '<testsuites><testsuite><testcase classname="t" name="a"/></testsuite></testsuites>'
FAIL_XML = '<testsuites><testsuite><testcase classname="t" name="a"><failure/></testcase></testsuite></testsuites>'


def flaky_said(score: float, runs: list[int]) -> str:
    return json.dumps({"score": score, "passed": score == 1.0, "done": score == 1.0, "summary": "s", "runs": runs})


def repeats(repeat: int, outcomes: list[str], xmls: list[str | None] | None = None, code: int = 0) -> Any:
    from automaton.core.testids import read_runs
    from automaton.runner.pytest_verify import Repeats

    data = b"".join(b'{"kind":"collected","id":"t::a"}\n{"kind":"result","id":"t::a","outcome":"%s"}\n'
                    b'{"kind":"end","exitstatus":%d}\n' % (o.encode(), 0 if o == "passed" else 1) for o in outcomes)
    if xmls is None:
        xmls = [PASS_XML if o == "passed" else FAIL_XML for o in outcomes]
    return Repeats(repeat, read_runs(data), xmls, code)


def test_the_flaky_score_is_the_streams_and_agrees_with_the_scorer(tmp_path: Path) -> None:
    from automaton.runner.pytest_verify import _by_repeats

    got = _by_repeats(repeats(2, ["passed", "failed"]), flaky_said(0.5, [0, 1]), None, tmp_path)
    assert (got.score, got.done, got.halt) == (0.5, False, None), got
    got = _by_repeats(repeats(2, ["passed", "passed"]), flaky_said(1.0, [0, 0]), None, tmp_path)
    assert (got.score, got.done) == (1.0, True), got


@pytest.mark.parametrize(("got", "said", "why"), [
    # A full score printed (forged on the scorer's stdout) while the stream shows a failed run.
    (("failed", "passed"), flaky_said(1.0, [1, 0]), "the scorer says 1.00, the stream 1/2 runs passed"),
    # One run fewer in the stream than the sealed --repeat (a run that wrote no record at all).
    (("passed",), flaky_said(1.0, [0, 0]), "2 runs expected; the stream holds 1"),
    # Exit statuses the scorer saw that the stream's end records do not match.
    (("passed", "passed"), flaky_said(1.0, [0, 1]), "the scorer saw exit statuses [0, 1]"),
    # A whole extra session written to the pipe.
    (("passed", "passed", "passed"), flaky_said(1.0, [0, 0]), "2 runs expected; the stream holds 3"),
], ids=["score", "fewer-runs", "exits", "extra-run"])
def test_a_flaky_stream_that_contradicts_the_scorer_halts(tmp_path: Path, got: tuple[str, ...], said: str,
                                                          why: str) -> None:
    from automaton.runner.pytest_verify import _by_repeats

    verdict = _by_repeats(repeats(2, list(got)), said, None, tmp_path)
    assert verdict.score is None and verdict.halt is not None and verdict.halt.startswith("verdict_mismatch"), verdict
    assert why in verdict.halt, verdict


def test_a_flaky_run_without_its_junit_or_missing_a_frozen_id_halts(tmp_path: Path) -> None:
    from automaton.core.testids import Frozen
    from automaton.runner.pytest_verify import _by_repeats

    got = _by_repeats(repeats(2, ["passed", "passed"], [PASS_XML, None]), flaky_said(1.0, [0, 0]), None, tmp_path)
    assert got.halt is not None and got.halt.startswith("verdict_mismatch: run 2: pytest wrote no JUnit XML"), got
    frozen = Frozen("a" * 40, "", ("t::a", "t::b"))
    got = _by_repeats(repeats(2, ["passed", "passed"]), flaky_said(1.0, [0, 0]), frozen, tmp_path)
    assert got.halt is not None and got.halt.startswith("tests_removed: t::b (missing)"), got


def test_an_approval_refuses_a_holdout_with_symlinks_naming_each(project: Path, approver: str,
                                                                 tmp_path: Path) -> None:
    # Each tick would fail on them (unscored, at the tick's cost), one file at a time.
    from automaton.core.errors import BadInput

    proj = loop(project, [], holdout={"test_h.py": "def test_h():\n    assert True\n"})
    folder = proj.loop_dir(store.require_tracked(proj, "demo")) / "holdout"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_out.py").write_text("def test_out():\n    assert False\n")
    (folder / "test_link.py").symlink_to(outside / "test_out.py")
    (folder / "dirlink").symlink_to(outside)
    (folder / "test_dangling.py").symlink_to(tmp_path / "nonexistent")
    with pytest.raises(BadInput) as err:
        approve_loop(proj, "demo", review_loop(proj, "demo"))
    message = str(err.value)
    assert "roles.verify.holdout cannot be used" in message and "\n" not in message
    for name in ("test_link.py", "dirlink", "test_dangling.py"):
        assert f"{folder / name}: a symlink" in message, message
