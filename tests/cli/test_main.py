"""The CLI edge: every verb dispatches, usage errors are one line (exit 2), bugs exit 3 with a log."""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from automaton import __version__
from automaton.cli import main as cli_main
from automaton.cli import parser as p
from automaton.core.errors import ExitCode
from automaton.core.outcome import Outcome
from tests.helpers import Result, run_cli, run_exe

FLAG_KWARGS = {flags[0]: kwargs for table in (p.TASK_FLAGS, p.LOOP_FLAGS, p.AGENT_FLAGS, p.COMMON_FLAGS)
               for flags, kwargs in table}


def argv_for(verb: str) -> list[str]:
    flag = "--" + verb.replace("_", "-")
    kwargs = FLAG_KWARGS[flag]
    return [flag] if kwargs.get("action") == "store_true" else [flag, "x"]


def test_every_verb_has_a_flag() -> None:
    assert all("--" + v.replace("_", "-") in FLAG_KWARGS for v in p.VERBS)


class _RecordingModule:
    """Stands in for an adapter module: any attribute is an adapter that records its call."""

    def __init__(self, name: str, seen: list[tuple[str, str]]) -> None:
        self._name, self._seen = name, seen

    def __getattr__(self, func: str) -> Any:
        def adapter(ns: Any) -> Outcome:
            self._seen.append((self._name, func))
            return Outcome(code=ExitCode.REFUSED, lines=[f"ran {self._name}:{func}"])

        return adapter


@pytest.mark.parametrize("verb", list(p.VERBS))
def test_every_verb_dispatches_to_its_adapter(verb: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, str]] = []
    monkeypatch.setattr(cli_main, "_adapter_module", lambda name: _RecordingModule(name, seen))
    res = run_cli(*argv_for(verb))
    module, _, func = p.VERBS[verb].partition(":")
    assert seen == [(module, func)]
    assert res.out == f"ran {module}:{func}\n"
    assert res.code == 1  # the adapter's outcome code is the exit code


@pytest.mark.parametrize("verb", list(p.VERBS))
def test_every_adapter_exists(verb: str) -> None:
    module, _, func = p.VERBS[verb].partition(":")
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} has not landed yet (owned by another issue)")
    assert callable(getattr(importlib.import_module(module), func))


def one_line(res: Result) -> str:
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.err and "Traceback" not in res.out, res.err
    return lines[0]


@pytest.mark.parametrize("argv", [
    [], ["--bogus"], ["--create-task"], ["--create-task", "a", "--phase"], ["--transition", "research"],
    ["--can-edit"], ["--phase"], ["--approve"], ["--audit", "--validate-folder"], ["--project"],
])
def test_usage_errors_are_one_line_exit_2(argv: list[str], tmp_path: Path) -> None:
    res = run_cli(*argv, cwd=tmp_path)
    assert res.code == 2
    assert one_line(res).startswith("automaton: usage: ")
    assert not (tmp_path / "tasks").exists()


def test_usage_error_under_json_ends_with_an_object(tmp_path: Path) -> None:
    res = run_cli("--phase", "--json", cwd=tmp_path)
    assert res.code == 2 and res.json == {"ok": False, "error": res.json["error"], "exit_code": 2}
    assert "--phase needs --task" in res.json["error"]


def test_internal_error_exits_3_with_a_crash_log(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from automaton.cli import verbs_tasks

    def broken(ns: Any) -> Outcome:
        raise RuntimeError("boom in phase")

    monkeypatch.setattr(verbs_tasks, "phase", broken)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    res = run_cli("--phase", "--task", "t")
    assert res.code == 3
    line = one_line(res)
    assert "internal error: RuntimeError: boom in phase" in line
    log = Path(line.rsplit("traceback in ", 1)[1])
    assert log.parent == tmp_path and log.is_file()
    text = log.read_text()
    assert "Traceback" in text and "boom in phase" in text


def _home(tmp_path: Path, config: str | None) -> Path:
    home = tmp_path / "framework"
    home.mkdir()
    if config is not None:
        (home / "config.md").write_text(config)
    return home


def test_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """automaton.__version__, whatever config.md says (it held a second copy once)."""
    monkeypatch.setenv("AUTOMATON_HOME", str(_home(tmp_path, "## Framework Version\n9.8.7\n\n## Loop Defaults\n")))
    res = run_cli("--version")
    assert (res.code, res.out, res.err) == (0, f"automaton {__version__}\n", "")


def test_version_wins_over_other_flags() -> None:
    res = run_cli("--version", "--audit")
    assert res.code == 0 and res.out == f"automaton {__version__}\n"


def test_version_of_the_installed_script(tmp_path: Path) -> None:
    done = run_exe("automaton", "--version", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"automaton {__version__}\n", "")


def test_help_exits_0() -> None:
    res = run_cli("--help")
    assert res.code == 0 and "exit codes" in res.out


@pytest.mark.parametrize("blocker, args", [
    ("tasks", ["--create-task", "a"]),
    (".automaton", ["--create-loop", "l", "--from-template", "ci-triage"]),
    (".automaton", ["--focus", "--clear"]),
])
def test_a_file_where_a_folder_should_be_is_bad_input_not_a_crash(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blocker: str, args: list[str]) -> None:
    monkeypatch.setenv("AUTOMATON_APPROVER", "tester")
    (tmp_path / blocker).write_text("x")
    res = run_cli(*args, "--project", str(tmp_path))
    assert res.code == 2, res.err
    assert f"cannot use {tmp_path / blocker}" in res.err and "Traceback" not in res.err
    assert len(res.err.strip().splitlines()) == 1


def test_usage_hint_is_not_repeated() -> None:
    res = run_cli()
    assert res.code == 2 and res.err.count("--help") == 1


@pytest.mark.parametrize("args, words", [
    (["--to", "design", "--phase", "--task", "t"], "--to does not go with --phase"),
    (["--create-loop", "l", "--from-template", "ci-triage", "--interval", "60"], "--interval does not go with"),
    (["--focus", "t", "--file", "x"], "--file does not go with --focus"),
    (["--approve", "--loop", "l", "--to", "design"], "--to goes with --approve --task"),
    (["--can-edit", "--file", "x", "--loop-worktree"], "--loop-worktree needs --loop"),
    (["--pause-loop", "l", "--task", "t"], "--task does not go with --pause-loop"),
])
def test_cross_flag_rules_are_checked_before_any_state_is_touched(tmp_path: Path, args: list[str],
                                                                 words: str) -> None:
    res = run_cli(*args, "--project", str(tmp_path))
    assert res.code == 2 and words in res.err
    assert list(tmp_path.iterdir()) == []


READ = '{"cwd": "%s", "tool_name": "Read", "tool_input": {"file_path": "x"}}'


@pytest.mark.parametrize("extra", [["--help"], ["--approve"], ["--bogus"]])
def test_hook_usage_errors_and_help_deny_with_exit_2(extra: list[str], project: Path) -> None:
    """Agents treat every exit but 2 as allow: `--hook --help` (exit 0) or a usage error must block."""
    res = run_cli("--hook", "claude", *extra, cwd=project, stdin=READ % project)
    assert res.code == 2
    assert res.err.strip()  # Gemini ignores an exit 2 with an empty stderr


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt(), SystemExit(0), OSError("disk")])
def test_hook_crash_outside_the_adapter_exits_2(error: BaseException, monkeypatch: pytest.MonkeyPatch,
                                                 project: Path, tmp_path: Path) -> None:
    """A failure around the hook adapter (import, dispatch, Ctrl-C) blocks: never exit 0, 1, 3 or 130."""
    from automaton.cli import verbs_agents

    def broken(ns: Any) -> Outcome:
        raise error

    monkeypatch.setattr(verbs_agents, "hook", broken)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    res = run_cli("--hook", "claude", cwd=project, stdin=READ % project)
    assert res.code == 2 and res.err.strip() and res.out == ""


def test_hook_emit_failure_still_exits_2(monkeypatch: pytest.MonkeyPatch, project: Path) -> None:
    """Even printing the denial failing (a closed stderr) leaves the exit code at 2."""
    def broken(*args: Any, **kwargs: Any) -> None:
        raise BrokenPipeError("stderr closed")

    monkeypatch.setattr(cli_main, "emit_error", broken)
    res = run_cli("--hook", "claude", "--bogus", cwd=project)
    assert res.code == 2


def test_allowed_hook_prints_nothing_even_under_json(project: Path) -> None:
    """An allow is exit 0 with empty stdout: JSON on stdout would be parsed by the agent."""
    res = run_cli("--hook", "claude", "--json", cwd=project, stdin=READ % project)
    assert (res.code, res.out, res.err) == (0, "", "")
    assert run_cli("--help").code == 0  # outside --hook, help still exits 0


@pytest.mark.parametrize("args", [["--vers"], ["--loop-lis"], ["--phase", "--tas", "t"], ["--audit", "--proj", "."]])
def test_an_abbreviated_flag_is_refused(args: list[str], tmp_path: Path) -> None:
    """Every flag is spelled in full: argparse's prefix matching is off (`allow_abbrev=False`)."""
    res = run_cli(*args, cwd=tmp_path)
    assert res.code == 2 and "unrecognized arguments" in res.err and res.out == ""


@pytest.mark.parametrize("args", [("--loop-status", "demo"), ("--loop-status", "demo", "--json"), ("--loop-list",),
                                  ("--loop-status", "nosuch")])
def test_a_closed_output_pipe_is_no_crash(project: Path, args: tuple[str, ...]) -> None:
    """`automaton --loop-status L | head -0`: the command's own exit status, no traceback, no
    crash log (a closed pipe once gave exit 1 and "Exception ignored ... BrokenPipeError")."""
    import os
    import subprocess
    import sys

    from tests.runner.loopkit import make_loop

    make_loop(project)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        res = subprocess.run([sys.executable, "-m", "automaton.cli.main", *args], cwd=project, stdout=write_end,
                             stderr=write_end, check=False, timeout=120)
    finally:
        os.close(write_end)
    assert res.returncode == (2 if "nosuch" in args else 0)


@pytest.mark.parametrize("args", [["--create-task", "t2"], ["--create-loop", "l", "--from-template", "ci-triage"],
                                  ["--install-hooks", "claude"]])
def test_state_is_never_created_outside_a_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  args: list[str]) -> None:
    import os

    monkeypatch.setenv("AUTOMATON_APPROVER", "tester")
    plain = tmp_path / "plain"
    plain.mkdir()
    res = run_cli(*args, cwd=plain)
    assert res.code == 2 and "not the top of a git repository" in res.err, res.err
    assert len(res.err.strip().splitlines()) == 1 and list(plain.iterdir()) == []
    res = run_cli(*args, cwd=Path("/"))
    assert res.code == 2 and "never a project" in res.err and not Path("/tasks/t2").exists()
    for never in ("/", os.environ["HOME"]):
        res = run_cli(*args, "--project", never)
        assert res.code == 2 and "never a project" in res.err


def test_a_linked_worktree_is_a_project_of_its_own(project: Path, tmp_path: Path) -> None:
    """Run from a linked worktree, automaton once put tasks/, .automaton/ and the hook settings
    in the main checkout (on another branch): a session in the worktree then ran with no hook."""
    import json

    from tests.helpers import git

    (project / "README").write_text("x\n")
    git(project, "add", "README")
    git(project, "commit", "-qm", "first")
    wt = tmp_path / "side"
    git(project, "worktree", "add", "-q", "-b", "side", str(wt))
    (wt / "src").mkdir()
    assert run_cli("--create-task", "t", cwd=wt / "src").code == 0
    assert (wt / "tasks" / "t" / ".state").is_file() and not (project / "tasks").exists()
    res = run_cli("--install-hooks", "claude", cwd=wt)
    assert res.code == 0, res.err
    settings = json.loads((wt / ".claude" / "settings.json").read_text())
    assert f"--project {wt.resolve()}" in json.dumps(settings) and not (project / ".claude").exists()


@pytest.mark.parametrize("yes", [True, False])
def test_an_approval_whose_review_meets_a_closed_pipe(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                      yes: bool) -> None:
    """`automaton --approve --loop L --yes | head -1`: the human decided without the review, so
    the closed pipe changes nothing (it once dropped the approval silently, exit 1, and the next
    tick halted config_changed). Without --yes nobody saw the review: refused, said on stderr."""
    import json
    import os
    import subprocess
    import sys

    from automaton.store import loops
    from automaton.store.layout import Project
    from tests.runner.loopkit import make_loop

    make_loop(project)
    config = project / ".automaton" / "loops" / "demo" / "loop.json"
    obj = json.loads(config.read_text())
    obj["description"] = "changed " * 20_000  # a review longer than any pipe buffer
    config.write_text(json.dumps(obj, indent=2))
    monkeypatch.setenv("AUTOMATON_APPROVER", "tester")
    read_end, write_end = os.pipe()
    os.close(read_end)
    args = ["--approve", "--loop", "demo", *(["--yes"] if yes else [])]
    try:
        res = subprocess.run([sys.executable, "-m", "automaton.cli.main", *args], cwd=project, stdout=write_end,
                             stderr=subprocess.PIPE, text=True, check=False, timeout=120, stdin=subprocess.DEVNULL)
    finally:
        os.close(write_end)
    sealed = loops.read_state(Project(project.resolve()), "demo").config_sha256
    changed = loops.Loop.resolve(Project(project.resolve()), "demo").config_sha256()
    if yes:
        assert (res.returncode, res.stderr) == (0, "") and sealed == changed
    else:
        assert res.returncode == 1 and "could not be shown" in res.stderr and sealed != changed


@pytest.mark.parametrize("argv", [("--loop-status", "a", "--loop-status", "b"),
                                  ("--approve", "--loop", "a", "--loop", "b"),
                                  ("--create-loop", "x", "--from-template", "a", "--from-template", "b")])
def test_a_value_flag_given_twice_is_a_usage_error(argv: tuple[str, ...]) -> None:
    res = run_cli(*argv)
    assert res.code == 2 and "given twice" in res.err and res.err.count("\n") == 1, res.err


def test_var_may_still_be_repeated() -> None:
    ns = p.build().parse_args(["--create-loop", "x", "--from-template", "t", "--var", "a=1", "--var", "b=2"])
    assert ns.var == ["a=1", "b=2"]


# The console script's entry, `script`: a hook call ends with os._exit once its output is
# flushed (no interpreter teardown before the agent's tool call runs); every other verb exits
# through sys.exit. The marker shows whether the interpreter's exit handlers ran.
_SCRIPT = ("import atexit, sys\n"
           "atexit.register(lambda: sys.stderr.write('EXIT HANDLERS RAN\\n'))\n"
           "from automaton.cli.main import script\n"
           "script()\n")
_WRITE = '{"cwd": "%s", "tool_name": "Write", "tool_input": {"file_path": "%s", "content": "x"}}'


def _script(args: list[str], cwd: Path, stdin: str = "", **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _SCRIPT, *args], cwd=cwd, input=stdin, text=True,
                          check=False, timeout=120, **{"capture_output": True, **kw})


def test_the_console_script_runs_script() -> None:
    from importlib.metadata import entry_points

    (entry,) = entry_points(group="console_scripts", name="automaton")
    assert entry.value == "automaton.cli.main:script"


def test_script_denies_a_hook_call_with_exit_2_and_its_line_without_teardown(project: Path) -> None:
    res = _script(["--hook", "claude"], project, _WRITE % (project, project / ".automaton" / "x.json"))
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.startswith("automaton denied this tool call: Write: .automaton/")
    assert "EXIT HANDLERS RAN" not in res.stderr  # os._exit: no teardown


def test_script_allows_a_hook_call_with_exit_0_and_no_output(project: Path) -> None:
    res = _script(["--hook", "claude"], project, READ % project)
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")


def test_script_exits_other_verbs_through_sys_exit(project: Path) -> None:
    res = _script(["--version"], project)
    assert res.returncode == 0 and __version__ in res.stdout
    assert "EXIT HANDLERS RAN" in res.stderr
    res = _script(["--phase", "--task", "nosuch"], project)
    assert res.returncode == 2 and "EXIT HANDLERS RAN" in res.stderr


def test_script_denial_on_a_closed_stderr_still_exits_2(project: Path) -> None:
    """A denial that cannot be printed (the agent closed the pipe) is still exit 2, never 0,
    1 or 120 (the interpreter's code for a failed final flush), which the agents read as allow."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        res = _script(["--hook", "claude"], project, _WRITE % (project, project / ".git" / "config"),
                      capture_output=False, stdout=subprocess.DEVNULL, stderr=write_end)
    finally:
        os.close(write_end)
    assert res.returncode == 2


def test_python_m_automaton_runs_script(project: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "automaton", "--hook", "claude"], cwd=project, check=False,
                         input=_WRITE % (project, project / ".git" / "config"), capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 2 and ".git internals are never edited" in res.stderr
