"""The packaged templates' verifier (resources/scorer.py), run as loop.json runs it: by path, in a tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from automaton.store.layout import framework_home

SCORER = framework_home() / "scorer.py"
PYPROJECT = '[tool.pytest.ini_options]\npythonpath = ["src"]\n'


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {"pyproject.toml": PYPROJECT, **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def score(root: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    environ = {k: v for k, v in os.environ.items() if k != "AUTOMATON_LOOP_DIR"}
    done = subprocess.run([sys.executable, str(SCORER), *args], cwd=root, env={**environ, **(env or {})},
                          capture_output=True, text=True, timeout=120, check=False)
    lines = done.stdout.strip().splitlines()
    assert lines, f"no verdict line (exit {done.returncode}): {done.stderr[-2000:]}"
    return done.returncode, json.loads(lines[-1])


def test_coverage_counts_pragma_lines_and_ignores_the_projects_omit(tmp_path: Path) -> None:
    root = tree(tmp_path, {
        "pyproject.toml": PYPROJECT + '\n[tool.coverage.run]\nomit = ["*/other.py"]\n'
                                      '[tool.coverage.report]\nexclude_lines = ["never"]\n',
        "src/calc.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):  # pragma: no cover\n    return a - b\n",
        "src/other.py": "def f():\n    return 1\n",
        "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"})
    code, verdict = score(root, "coverage", "--target", "src")
    assert code == 0
    # calc.py: 4 statements (`sub` counted despite its pragma), 3 run at import and by the test;
    # other.py: 2 statements, none run (counted despite the project's omit). With the project's
    # config it would be 2/2.
    assert verdict["summary"] == "3/6 lines of src covered"
    assert verdict["score"] == pytest.approx(3 / 6, abs=1e-6) and verdict["passed"] is False


def test_flaky_a_skipped_run_is_not_a_pass(tmp_path: Path) -> None:
    root = tree(tmp_path, {"tests/test_x.py": "import pytest\n\n\n@pytest.mark.skip\ndef test_x():\n    pass\n\n\n"
                                              "@pytest.mark.xfail\ndef test_y():\n    assert False\n\n\n"
                                              "def test_z():\n    pass\n"})
    for test in ("tests/test_x.py::test_x", "tests/test_x.py::test_y"):
        code, verdict = score(root, "flaky", "--repeat", "1", test)
        assert code == 0 and verdict["score"] == 0.0, verdict
    code, verdict = score(root, "flaky", "--repeat", "2", "tests/test_x.py::test_z")
    assert verdict["score"] == 1.0 and verdict["done"] is True, verdict


def test_flaky_a_missing_test_is_not_a_pass(tmp_path: Path) -> None:
    root = tree(tmp_path, {"tests/test_x.py": "def test_z():\n    pass\n"})
    assert score(root, "flaky", "--repeat", "1", "tests/test_x.py::test_gone")[1]["score"] == 0.0


def test_types_a_suppression_is_cut_before_mypy_counts(tmp_path: Path) -> None:
    root = tree(tmp_path, {"src/calc.py": "def add(a: int) -> int:\n    return str(a)  # type: ignore[return-value]\n"})
    code, verdict = score(root, "types", "--target", "src")
    assert code == 0
    assert verdict["summary"] == "1 mypy errors (base: 1)" and verdict["score"] == 0.0  # outside a tick: base = tree
    assert "# type: ignore" in (root / "src" / "calc.py").read_text()  # the tree itself is left alone


def test_lint_outside_a_tick_clean_is_done(tmp_path: Path) -> None:
    root = tree(tmp_path, {"src/calc.py": "def add(a, b):\n    return a + b\n"})
    assert score(root, "lint", "--target", "src") == (0, {"score": 1.0, "passed": True, "done": True,
                                                          "summary": "0 ruff violations (base: 0)"})


def test_a_loop_without_a_base_commit_is_unscored(tmp_path: Path) -> None:
    loop_dir = tmp_path / "proj" / ".automaton" / "loops" / "x"
    loop_dir.mkdir(parents=True)
    (loop_dir / ".state.loop").write_text(json.dumps({"base_commit": None}))
    root = tree(tmp_path / "export", {"src/calc.py": "import os\n"})
    code, verdict = score(root, "lint", "--target", "src", env={"AUTOMATON_LOOP_DIR": str(loop_dir)})
    assert code == 2 and "score" not in verdict and "no base commit" in verdict["summary"]


def test_dependency_not_installed_is_unscored(tmp_path: Path) -> None:
    root = tree(tmp_path, {"requirements.txt": "surely-not-installed-dist==1.0\n"})
    code, verdict = score(root, "dependency", "--name", "surely-not-installed-dist")
    assert code == 2 and "score" not in verdict and "is not installed" in verdict["summary"]


def test_lint_with_suite_scores_nothing_while_the_tests_fail(tmp_path: Path) -> None:
    # Gutting a function leaves no violation, but its test fails.
    root = tree(tmp_path, {"src/calc.py": "def add(a, b):\n    return 0\n",
                           "tests/test_calc.py": "from calc import add\n\n\n"
                                                 "def test_add():\n    assert add(1, 2) == 3\n"})
    code, verdict = score(root, "lint", "--target", "src", "--suite")
    assert code == 0 and verdict["score"] == 0.0 and verdict["summary"].startswith("the suite fails (exit 1")
    assert score(root, "lint", "--target", "src")[1]["score"] == 1.0  # without --suite: clean


def streamed(root: Path, tmp: Path, *args: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The scorer run as the runner runs it in a tick: the plugin's folder on PYTHONPATH and a
    pipe's write end named by AUTOMATON_VERDICT_FD; (its verdict line, the records streamed)."""
    from automaton.runner import freeze

    plugin = freeze.plugin_copy(tmp)
    environ = {k: v for k, v in os.environ.items() if k != "AUTOMATON_LOOP_DIR"}
    with freeze.pipe() as p:
        done = subprocess.run([sys.executable, str(SCORER), *args], cwd=root,
                              env=freeze.python_env(environ, plugin, tmp, p.write_fd), capture_output=True,
                              text=True, timeout=120, check=False, pass_fds=(p.write_fd,))
        freeze.close_writer(p)
        assert p.thread is not None
        p.thread.join(timeout=30)
        records = [json.loads(line) for line in bytes(p.data).splitlines()]
    return json.loads(done.stdout.strip().splitlines()[-1]), records


CALC = {"src/calc.py": "def add(a, b):\n    return a + b\n",
        "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
                              "def test_add_zero():\n    assert add(0, 0) == 0\n"}


@pytest.mark.parametrize("args", [("coverage", "--target", "src"), ("lint", "--target", "src", "--suite"),
                                  ("types", "--target", "src", "--suite")], ids=["coverage", "lint", "types"])
def test_in_a_tick_the_one_suite_run_streams_to_the_runners_pipe(tmp_path: Path, args: tuple[str, ...]) -> None:
    root = tree(tmp_path / "proj", CALC)
    verdict, records = streamed(root, tmp_path / "run", *args)
    assert verdict["score"] == 1.0, verdict
    ends = [r for r in records if r["kind"] == "end"]
    assert ends == [{"kind": "end", "exitstatus": 0}], records  # one pytest session, and only pytest
    results = {r["id"]: r["outcome"] for r in records if r["kind"] == "result"}
    assert results == {"tests/test_calc.py::test_add": "passed", "tests/test_calc.py::test_add_zero": "passed"}


def test_collect_only_streams_the_ids_the_suite_run_would_run(tmp_path: Path) -> None:
    root = tree(tmp_path / "proj", CALC)
    verdict, records = streamed(root, tmp_path / "run", "coverage", "--target", "src", "--collect-only")
    assert "score" not in verdict, verdict
    assert [r["id"] for r in records if r["kind"] == "collected"] == ["tests/test_calc.py::test_add",
                                                                      "tests/test_calc.py::test_add_zero"]
    assert not [r for r in records if r["kind"] == "result"]


def test_outside_a_tick_nothing_is_streamed_and_no_plugin_is_asked_for(tmp_path: Path) -> None:
    root = tree(tmp_path, CALC)
    code, verdict = score(root, "coverage", "--target", "src", env={"AUTOMATON_VERDICT_FD": ""})
    assert code == 0 and verdict["score"] == 1.0, verdict  # no `-p automaton_verdicts` without the pipe


@pytest.mark.parametrize("hider", [{"src/.ignore": "*.py\n"}, {"src/.gitignore": "*.py\n"},
                                   {".ignore": "src/\n"}, {"src/sub/.ignore": "*\n"}],
                         ids=["dot-ignore", "gitignore", "root-ignore", "nested-ignore"])
def test_lint_an_ignore_file_hides_no_file_from_ruff(tmp_path: Path, hider: dict[str, str]) -> None:
    # ruff skips what .ignore / .gitignore files list, even outside a git repository (the export).
    root = tree(tmp_path, {"src/calc.py": "import os\n", "src/sub/more.py": "import sys\n", **hider})
    code, verdict = score(root, "lint", "--target", "src")
    assert code == 0 and verdict["summary"] == "2 ruff violations (base: 2)", verdict


@pytest.mark.parametrize(("body", "why"), [
    # exit 0 before pytest writes its report (a forged run that skipped the real one)
    ("import os\n\n\ndef test_x():\n    os._exit(0)\n", "wrote no JUnit report"),
    # the report rewritten at exit to a pass while pytest still exits 1
    ("import atexit, sys\n\n\ndef _clean():\n    path = [a for a in sys.argv if a.startswith('--junitxml=')][0][11:]\n"
     "    open(path, 'w').write('<testsuite><testcase name=\"test_x\"/></testsuite>')\n\n\n"
     "atexit.register(_clean)\n\n\ndef test_x():\n    assert False\n", "shows every test passing"),
], ids=["exit-0-no-report", "report-rewritten"])
def test_flaky_a_run_whose_exit_and_report_disagree_is_unscored(tmp_path: Path, body: str, why: str) -> None:
    root = tree(tmp_path, {"tests/test_x.py": body})
    code, verdict = score(root, "flaky", "--repeat", "2", "tests/test_x.py::test_x")
    assert code == 2 and "score" not in verdict and why in verdict["summary"], verdict


def test_dependency_a_line_added_behind_the_pin_is_a_change_beyond_it(tmp_path: Path) -> None:
    # Only the pin's version may change: a second line that starts like the pin (carrying
    # another pin, or test options) is a change beyond it.
    import importlib.util

    spec = importlib.util.spec_from_file_location("packaged_scorer", SCORER)
    assert spec is not None and spec.loader is not None
    scorer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scorer)
    base = tree(tmp_path / "base", {"requirements.txt": "requests==2.0\nidna==3.0\n"})
    upgraded = tree(tmp_path / "now", {"requirements.txt": "requests==2.31\nidna==3.0\n"})
    assert scorer.dependency_problem(upgraded, base, "requests") is None
    sneaky = tree(tmp_path / "sneaky", {"requirements.txt": "requests==2.31\nrequests==2.31 ; idna==9\nidna==3.0\n"})
    assert "changed beyond the pin of requests" in scorer.dependency_problem(sneaky, base, "requests")
    inline = tree(tmp_path / "inline", {"requirements.txt": "requests==2.31 ; python_version<'4' \nidna==3.0\n"})
    assert "changed beyond the pin of requests" in scorer.dependency_problem(inline, base, "requests")


def scorer_module() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("automaton_scorer_under_test", SCORER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_types_casts_and_type_ignores_are_counted_with_the_parser_not_the_text(tmp_path: Path) -> None:
    source = ("import typing as t\nfrom typing import cast as c, Any\nfrom typing_extensions import cast\n\n"
              "x = c(int, '1')\ny = t.cast(int, '2')\nz = cast(int, '3')\nalias = t.cast\n"
              "text = '# type: ignore and cast(int, x) in a string'\n"
              "def cast2(v: int) -> int:\n    return v  # type: ignore[return-value]\n"
              "w = 1  # type:ignore\nother.cast(1)\n")
    root = tree(tmp_path, {"src/m.py": source, "src/broken.py": "def (:\n"})
    got = scorer_module().source_counts(root, "src")
    assert got == {"cast": {"src/m.py": 4}, "ignore": {"src/m.py": 2}}, got


def test_types_a_file_with_more_of_a_silencer_than_at_the_base_is_named() -> None:
    added = scorer_module().silencers_added
    base = {"explicit-any": {"a.py": 1}, "cast": {"a.py": 2}}
    assert added({"explicit-any": {"a.py": 1, "b.py": 0}, "cast": {"a.py": 1}}, base) is None
    assert added({"explicit-any": {"a.py": 2}}, base) == ("explicit Any added: more explicit Any than at the base"
                                                          " in a.py")
    assert added({"ignore": {"b.py": 1}}, base) == ("# type: ignore comments added: more # type: ignore comments than"
                                                    " at the base in b.py")
