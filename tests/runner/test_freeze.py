"""The pytest verifier's parts on their own: the plugin's pipe, the private bytecode cache, the
holdout hidden from the agent and gone from the export after the run."""

from __future__ import annotations

import os
import py_compile
import sys
from pathlib import Path

from automaton.core.loopconfig import parse_config
from automaton.runner import freeze, pytest_verify
from automaton.runner.tick import tick
from automaton.store import loops as store
from automaton.store.config import loop_defaults
from automaton.store.layout import kept_export_of
from tests.runner.loopkit import loop_json
from tests.runner.test_pytest_verify import BUGGY, FIXED, INI, JUNIT_AT_EXIT, TESTS, VERIFY, halted, loop

PY = sys.executable


def pytest_cfg(**verify: object) -> object:
    data = loop_json(roles={"implement": {"prompt": "implement.md"}, "verify": {**VERIFY, **verify},
                            "orchestrate": {"builtin": True}})
    return parse_config(data, "loop.json", loop_defaults())


def tree(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "calc.py").write_text(BUGGY)
    (root / "tests" / "test_calc.py").write_text(TESTS)
    (root / "pytest.ini").write_text(INI)
    return root


def run_here(tmp_path: Path, cwd: Path) -> pytest_verify.Verdict:  # type: ignore[name-defined]
    folder, tmp = tmp_path / "run", tmp_path / "tmp"
    folder.mkdir()
    tmp.mkdir()
    return pytest_verify.run(pytest_cfg(), folder, cwd, tmp, tmp_path, lambda *a: None,  # type: ignore[arg-type]
                             dict(os.environ), None)


def test_in_tree_bytecode_is_never_read(tmp_path: Path) -> None:
    cwd = tree(tmp_path / "export")
    good = tmp_path / "good" / "calc.py"
    good.parent.mkdir()
    good.write_text(FIXED)
    py_compile.compile(str(good), cfile=str(cwd / "src" / "__pycache__" / f"calc.{sys.implementation.cache_tag}.pyc"),
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    verdict = run_here(tmp_path, cwd)
    assert verdict.score == 0.5 and verdict.source == "stream", verdict  # calc.py, not the planted bytecode
    assert not any((cwd / "tests").rglob("*.pyc"))  # and nothing was written into the tree


def test_the_plugin_streams_each_result_and_the_stream_outranks_the_junit(tmp_path: Path) -> None:
    cwd = tree(tmp_path / "export")
    verdict = run_here(tmp_path, cwd)
    assert (verdict.score, verdict.summary, verdict.halt) == (0.5, "1/2 passed", None)
    assert (tmp_path / "run" / "plugin" / "automaton_verdicts.py").is_file()
    assert (tmp_path / "run" / "junit.xml").is_file()


def test_junit_rewritten_at_exit_without_touching_the_exit_status_is_named(tmp_path: Path) -> None:
    cwd = tree(tmp_path / "export")
    (cwd / "src" / "calc.py").write_text(JUNIT_AT_EXIT.replace("os._exit(0)", "pass"))
    verdict = run_here(tmp_path, cwd)
    assert verdict.score is None
    assert verdict.halt == ("verdict_mismatch: the JUnit XML says 2 passed, 0 failed; the stream says 1 passed,"
                            " 1 failed"), verdict


def test_the_pipe_is_passed_by_descriptor_and_its_variable_is_gone_before_the_tests(tmp_path: Path) -> None:
    cwd = tree(tmp_path / "export")
    (cwd / "tests" / "test_env.py").write_text(
        "import os\n\n\ndef test_env():\n    assert 'AUTOMATON_VERDICT_FD' not in os.environ\n")
    verdict = run_here(tmp_path, cwd)
    assert verdict.summary == "2/3 passed", verdict


def test_the_descriptor_is_no_module_attribute_nor_left_at_its_number(tmp_path: Path) -> None:
    # The plugin's module holds no global that names the descriptor (the old `_stream["fd"]`),
    # and the number it came in on is closed: the descriptor sits at a random high number,
    # close-on-exec. (Code in the process can still find it through /proc/self/fd.)
    cwd = tree(tmp_path / "export")
    (cwd / "tests" / "test_fd.py").write_text(
        "import os, sys\n\n\ndef test_fd():\n"
        "    mod = sys.modules['automaton_verdicts']\n"
        "    assert not any(isinstance(v, (dict, int)) and not isinstance(v, bool) for k, v in vars(mod).items()\n"
        "                   if not k.startswith('__') and k not in ('ENV_FD', '_RANK', '_WATCHED'))\n"
        "    pipes = []\n"
        "    for n in os.listdir('/proc/self/fd'):\n"
        "        try:\n"
        "            if os.readlink(f'/proc/self/fd/{n}').startswith('pipe:'):\n"
        "                pipes.append(int(n))\n"
        "        except OSError:\n"
        "            pass\n"
        "    high = [n for n in pipes if n >= 256]\n"
        "    assert len(high) == 1 and not os.get_inheritable(high[0]), pipes\n")
    verdict = run_here(tmp_path, cwd)
    assert verdict.summary == "2/3 passed", verdict


def test_the_holdout_is_hidden_from_the_agent_and_removed_from_the_export(project: Path) -> None:
    holdout = {"test_calc_holdout.py": "from calc import add\n\n\ndef test_add_holdout():\n    assert add(1, 1) == 2\n"}
    spy = ("import pathlib\nhold = pathlib.Path('../holdout/test_calc_holdout.py')\n"
           "try:\n    text = hold.read_text()\nexcept OSError as exc:\n    text = f'denied {exc.errno}'\n"
           "pathlib.Path('src/seen.txt').write_text(text)\n")
    proj = loop(project, [], protected=[], holdout=holdout, agent=spy)
    out = tick(proj, "demo")
    assert out.data is not None and out.data["verdict"]["summary"] == "1/3 passed", out.data  # the holdout ran
    worktree = Path(out.data["worktree"])
    assert worktree.parent == proj.loop_dir(store.require_tracked(proj, "demo"))  # ../holdout is the loop's holdout
    assert (worktree / "src" / "seen.txt").read_text().startswith("denied"), (worktree / "src" / "seen.txt").read_text()
    kept = kept_export_of(proj.root, "demo")  # the export kept for the next tick holds none of it
    assert kept.is_dir() and (kept / "tests" / "test_calc.py").is_file()
    assert not list(kept.rglob(freeze.HOLDOUT_DIR)) and not list(Path.home().rglob("test_calc_holdout.py"))


def test_a_changed_holdout_halts_until_a_human_approves_it(project: Path) -> None:
    holdout = {"test_calc_holdout.py": "def test_h():\n    pass\n"}
    proj = loop(project, [{"write": "src/other.py", "content": "x = 1\n"}], protected=[], holdout=holdout)
    tick(proj, "demo")
    folder = proj.loop_dir(store.require_tracked(proj, "demo")) / "holdout"
    (folder / "test_calc_holdout.py").write_text("def test_h():\n    assert False\n")
    out = tick(proj, "demo")
    assert out.data is not None and out.data["verdict"]["score"] is None
    reason, detail = halted(proj)
    assert reason == "human_intervention" and detail.startswith("holdout_changed: "), detail


def test_a_holdout_copy_the_verifier_leaves_in_the_kept_export_is_hidden_from_the_next_agent(project: Path) -> None:
    holdout = {"test_secret_holdout.py": "def test_secret():\n    assert 'secret-name'\n"}
    kept = kept_export_of(project.resolve(), "demo")
    # Tick 1: code under test copies the holdout into the export (kept for the next tick).
    # Tick 2: the agent reads it back from the kept export.
    leak = ("import glob, shutil\nfor f in glob.glob('tests/automaton_holdout/*.py'):\n"
            "    shutil.copy(f, 'leak.txt')\n")
    agent = ("import os, pathlib\n"
             f"leak = {leak!r}\n"
             "if os.environ['AUTOMATON_ITERATION'] == '1':\n"
             f"    pathlib.Path('src/calc.py').write_text({BUGGY!r} + leak)\n"
             "else:\n"
             "    try:\n"
             f"        text = pathlib.Path({str(kept / 'leak.txt')!r}).read_text()\n"
             "    except OSError as exc:\n"
             "        text = f'denied {exc.errno}'\n"
             "    pathlib.Path('src/seen.txt').write_text(text)\n")
    proj = loop(project, [], protected=[], holdout=holdout, agent=agent)
    tick(proj, "demo")
    assert (kept / "leak.txt").is_file()  # the verifier's code did leave it there
    out = tick(proj, "demo")
    assert out.data is not None
    seen = (Path(out.data["worktree"]) / "src" / "seen.txt").read_text()
    assert seen.startswith("denied"), seen


def test_the_verify_logs_that_show_the_holdout_are_hidden_from_the_next_agent(project: Path) -> None:
    holdout = {"test_calc_holdout.py": "from calc import add\n\n\ndef test_add_holdout():\n    assert add(1, 1) == 2\n"}
    agent = ("import os, pathlib\n"
             "if os.environ['AUTOMATON_ITERATION'] == '2':\n"
             "    try:\n"
             "        text = pathlib.Path('../runs/1/verify.log').read_text()\n"
             "    except OSError as exc:\n"
             "        text = f'denied {exc.errno}'\n"
             "    pathlib.Path('src/seen.txt').write_text(text)\n")
    proj = loop(project, [], protected=[], holdout=holdout, agent=agent)
    tick(proj, "demo")
    log = proj.loop_dir(store.require_tracked(proj, "demo")) / "runs" / "1" / "verify.log"
    assert "test_add_holdout" in log.read_text()  # the log names the holdout test and its failing line
    out = tick(proj, "demo")
    assert out.data is not None
    seen = (Path(out.data["worktree"]) / "src" / "seen.txt").read_text()
    assert seen.startswith("denied"), seen


def scorer_cfg(loop_dir: Path, *args: str, score: str = "agent") -> object:
    return pytest_cfg(command=[PY, str(loop_dir / "scorer.py"), *args], score=score)


def test_the_packaged_scorer_applies_in_the_modes_that_run_the_suite_once(tmp_path: Path) -> None:
    for args in (("coverage", "--target", "src"), ("dependency", "--name", "x"),
                 ("lint", "--target", "src", "--suite"), ("types", "--target", "src", "--suite")):
        cfg = scorer_cfg(tmp_path, *args)
        assert freeze.applies(cfg, tmp_path) and freeze.scorer_mode(cfg, tmp_path) == args[0]  # type: ignore[arg-type]
        assert freeze.collect_argv(cfg, tmp_path)[-1] == "--collect-only"  # type: ignore[arg-type]
    for args in (("lint", "--target", "src"), ("types", "--target", "src")):
        assert not freeze.applies(scorer_cfg(tmp_path, *args), tmp_path)  # type: ignore[arg-type]


def test_the_flaky_scorer_is_streamed_run_by_run(tmp_path: Path) -> None:
    cfg = scorer_cfg(tmp_path, "flaky", "--repeat", "3", "t::x")
    assert freeze.applies(cfg, tmp_path) and freeze.scorer_mode(cfg, tmp_path) == "flaky"  # type: ignore[arg-type]
    assert freeze.collect_argv(cfg, tmp_path)[-1] == "--collect-only"  # type: ignore[arg-type]
    assert freeze.repeat_of(["s", "flaky", "--repeat", "3", "t::x"]) == 3
    assert freeze.repeat_of(["s", "flaky", "--repeat=7", "t::x"]) == 7
    assert freeze.repeat_of(["s", "flaky", "t::x"]) == freeze.REPEAT_DEFAULT
    assert freeze.repeat_of(["s", "flaky", "--repeat", "0", "t::x"]) is None
    assert freeze.run_junit(tmp_path / "junit.xml", 2) == tmp_path / "junit-2.xml"


def test_a_scorer_elsewhere_or_not_scored_as_agent_is_no_packaged_scorer(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    assert not freeze.applies(scorer_cfg(other, "coverage", "--target", "src"), tmp_path)  # type: ignore[arg-type]
    assert not freeze.applies(scorer_cfg(tmp_path, "coverage", "--target", "src", score="junit"),  # type: ignore[arg-type]
                              tmp_path)
    assert not freeze.applies(scorer_cfg(tmp_path, "coverage", "--target", "src"))  # type: ignore[arg-type]


def test_a_pytest_command_still_applies_and_collects_with_q(tmp_path: Path) -> None:
    cfg = pytest_cfg()
    assert freeze.applies(cfg) and freeze.applies(cfg, tmp_path)  # type: ignore[arg-type]
    assert freeze.collect_argv(cfg, tmp_path)[-2:] == ["--collect-only", "-q"]  # type: ignore[arg-type]


def test_pytests_own_late_plugin_under_lf_is_no_tampering(tmp_path: Path) -> None:
    # `--lf` registers pytest's file skipper during collection, after the plugin's look at
    # session start: pytest's own, not the code under test's (no `tampered` record).
    cwd = tree(tmp_path / "export")
    (cwd / "tests" / "test_other.py").write_text("def test_other():\n    pass\n")
    cfg = pytest_cfg(command=[PY, "-m", "pytest", "-q", "-p", "no:randomly", "--lf"])
    for n, summary in ((1, "2/3 passed"), (2, "0/1 passed")):
        folder, tmp = tmp_path / f"run{n}", tmp_path / f"tmp{n}"
        folder.mkdir()
        tmp.mkdir()
        verdict = pytest_verify.run(cfg, folder, cwd, tmp, tmp_path, lambda *a: None,  # type: ignore[arg-type]
                                    dict(os.environ), None)
        assert verdict.summary == summary and verdict.halt is None, verdict
