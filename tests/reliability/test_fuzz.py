"""Property-based fuzz of every input an attacker or a typo controls (README.md#exit-codes).

CLI arguments (names, phases, paths, agents), hook payloads (JSON on stdin), loop.json and
`.state.loop` contents: whatever comes in, the command never crashes (exit 3 / a traceback),
and a failure is exit 1 or 2 with one clear line (the hook: exit 0 or 2 only).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automaton.core.errors import BadInput, message_lines
from automaton.core.loopconfig import parse_config, validate_state
from automaton.store import loops as store
from automaton.store.config import loop_defaults
from tests.helpers import Result, run_cli
from tests.reliability.kit import LOOP, TASK, loop_dir, setup_project
from tests.runner.loopkit import loop_json

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

VALUE_FLAGS = ["--create-task", "--parent", "--transition", "--task", "--to", "--file", "--create-loop",
               "--from-template", "--interval", "--pause-loop", "--resume-loop", "--loop", "--can-continue",
               "--check-gate", "--hook", "--install-hooks", "--install-prompts", "--focus", "--project"]
BOOL_FLAGS = ["--approve", "--clear", "--phase", "--validate-folder", "--audit", "--can-edit", "--loop-list",
              "--loop-worktree", "--json", "--version"]
INTERESTING = [TASK, LOOP, "t1/sub", "complete", "", "-", "--", ".", "..", "../x", "/etc/passwd", "a/b/c",
               "UPPER", "x" * 70, "a" * 5000, "research", "implement", "research:approved", "human_intervention",
               "a\nb", "\n", "fix\n", " t1", "é", "日本", "claude", "codex", "gemini", "git", "bogus",
               "ci-triage", "src/a.py", "tasks/t1/SPEC.md", ".automaton/focus", "~", "~root/x", "0", "-5",
               "99999999999999999999", "1e9", "nan", "\x1b[31mred", "C:\\x", "tasks/t1/.state"]
# A real argv cannot hold NUL (execve); everything else may come in.
TEXT = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]), max_size=40)
VALUES = st.one_of(st.sampled_from(INTERESTING), TEXT)


@st.composite
def argvs(draw: st.DrawFn, value_flags: list[str], bool_flags: list[str], values: Any = VALUES) -> list[str]:
    argv: list[str] = []
    for _ in range(draw(st.integers(0, 5))):
        if draw(st.booleans()):
            argv += [draw(st.sampled_from(value_flags)), draw(values)]
        else:
            argv.append(draw(st.sampled_from(bool_flags)))
    if draw(st.integers(0, 9)) == 0:
        argv.append(draw(values))  # a stray positional
    return argv


def assert_clean(res: Result, allowed: tuple[int, ...] = (0, 1, 2)) -> None:
    said = res.out + res.err
    assert res.code in allowed, f"exit {res.code}: {said}"
    assert "Traceback" not in said, said
    if res.code != 0:
        errors = [line for line in res.err.splitlines() if ": warning: " not in line]
        assert said.strip(), "a failure must say why"
        for line in errors:
            assert line.startswith(("automaton: ", "automaton-loop: ", "automaton denied")), line
        # One error, or one line per invalid field of one file (core.errors.InvalidFields): never
        # a second, unrelated error after the first.
        assert len({line.split(": ")[1] for line in errors if line.count(": ") >= 2}) <= 1 \
            and (len(errors) <= 1 or all(line.count(": ") >= 2 for line in errors)), \
            f"more than one error: {res.err!r}"


@pytest.fixture
def fuzz_project(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    setup_project(project, tmp_path / "agent.runs", bound=False)
    monkeypatch.setenv("AUTOMATON_APPROVER", "fuzzer")  # reach the code behind the human check
    monkeypatch.chdir(project)
    return project


@FUZZ
@given(argv=argvs(VALUE_FLAGS, BOOL_FLAGS))
def test_cli_arguments_never_crash(fuzz_project: Path, argv: list[str]) -> None:
    assert_clean(run_cli(*argv, cwd=fuzz_project))


RUNNER_VALUE = ["--mode", "--loop", "--project", "--max-ticks", "--settings"]
RUNNER_BOOL = ["--json", "--quiet", "--demo"]
# The fuzz project's real loop is left out: a valid --mode run would tick an agent.
RUNNER_VALUES = st.one_of(st.sampled_from([v for v in INTERESTING if v != LOOP] + ["tick", "run", "dry-run"]), TEXT)


@FUZZ
@given(argv=argvs(RUNNER_VALUE, RUNNER_BOOL, RUNNER_VALUES))
def test_runner_arguments_never_crash(fuzz_project: Path, argv: list[str]) -> None:
    if "--demo" in argv:  # the demo runs a whole offline loop: covered by the runner's own tests
        argv = [a for a in argv if a != "--demo"]
    assert_clean(run_cli(*argv, cwd=fuzz_project, entry="automaton-loop"))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT | st.sampled_from(INTERESTING),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
ANY_JSON_TEXT = st.one_of(JSON.map(json.dumps), st.text(max_size=60))


@st.composite
def payloads(draw: st.DrawFn, root: Path) -> str:
    """A PreToolUse-shaped payload with fuzzed fields, or any JSON/text at all."""
    if draw(st.integers(0, 4)) == 0:
        return draw(ANY_JSON_TEXT)
    path = draw(st.one_of(st.sampled_from([str(root / "src" / "a.py"), str(root / "tasks" / TASK / ".state"),
                                           "relative.py", "", "/", str(root / ".automaton" / "x")]), VALUES, JSON))
    tool = draw(st.one_of(st.sampled_from(["Write", "Edit", "MultiEdit", "NotebookEdit", "Bash", "Read", "Task",
                                           "write_file", "replace", "run_shell_command", "apply_patch", "shell"]),
                          JSON))
    given_input = draw(st.one_of(
        st.fixed_dictionaries({"file_path": st.just(path)}),
        st.fixed_dictionaries({"command": st.one_of(VALUES, st.just(f"echo x > {path}"), JSON)}),
        st.fixed_dictionaries({"notebook_path": st.just(path)}),
        st.fixed_dictionaries({"absolute_path": st.just(path)}),
        JSON))
    payload: dict[str, Any] = {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": tool,
                               "tool_input": given_input}
    cwd = draw(st.one_of(st.just(str(root)), VALUES, JSON, st.just(None)))
    if cwd is not None:
        payload["cwd"] = cwd
    return json.dumps(payload)


@FUZZ
@given(data=st.data(), agent=st.sampled_from(["claude", "codex", "gemini"]))
def test_hook_payloads_allow_or_deny_never_crash(fuzz_project: Path, data: st.DataObject, agent: str) -> None:
    stdin = data.draw(payloads(fuzz_project))
    res = run_cli("--hook", agent, cwd=fuzz_project, stdin=stdin)
    assert_clean(res, allowed=(0, 2))
    if res.code == 0:
        assert res.out == "" and res.err == "", "an allow prints nothing"
    else:
        assert res.err.count("\n") == 1 and res.err.startswith("automaton denied this tool call: "), res.err


def _mutations() -> st.SearchStrategy[dict[str, Any]]:
    """Valid loop.json objects with one or two keys replaced by anything JSON can hold."""
    keys = ["schema_version", "name", "task", "harness", "roles", "brakes", "blast_radius", "schedule",
            "harness.name", "harness.args", "harness.timeout_s", "harness.command", "harness.local",
            "harness.kv_kib_per_token", "roles.implement", "roles.implement.prompt", "roles.verify",
            "roles.verify.command", "roles.verify.prompt", "roles.verify.score", "roles.orchestrate.builtin",
            "roles.orchestrate.prompt", "brakes.max_iterations", "brakes.max_budget_usd", "brakes.max_tick_usd",
            "brakes.score_plateau_window", "brakes.plateau_epsilon", "brakes.target_score",
            "blast_radius.file_scope", "blast_radius.use_worktree", "schedule.interval_seconds", "max_iteration"]

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        obj = loop_json(name=LOOP)
        for _ in range(draw(st.integers(1, 2))):
            key = draw(st.sampled_from(keys))
            value = draw(st.one_of(JSON, st.sampled_from([None, True, 0, -1, 1.5, 1e308, "25", [], {}, "a\x00b",
                                                          "../../etc/passwd", "/abs", ["a\x00"]])))
            *head, last = key.split(".")
            node: Any = obj
            for part in head:
                node = node.setdefault(part, {}) if isinstance(node, dict) else {}
            if isinstance(node, dict):
                if draw(st.integers(0, 5)) == 0:
                    node.pop(last, None)
                else:
                    node[last] = value
        return obj

    return build()


@FUZZ
@given(obj=st.one_of(_mutations(), JSON))
def test_loop_json_contents_parse_or_fail_cleanly(obj: Any) -> None:
    try:
        config = parse_config(obj, "loop.json", loop_defaults())
    except BadInput as exc:
        for line in message_lines(exc):  # one line per invalid field, each naming the file
            assert "\n" not in line and line.startswith("loop.json"), exc.message
        return
    brakes = config.brakes  # what parses is bounded and usable
    assert brakes.max_iterations >= 1 and brakes.max_tick_usd > 0
    assert brakes.max_budget_usd is None or brakes.max_budget_usd > 0
    for text in [config.name, *config.blast_radius.file_scope, *(config.harness.command or []), *config.harness.args]:
        assert "\x00" not in text


@FUZZ
@given(obj=st.one_of(_mutations(), JSON))
def test_loop_json_on_disk_through_the_cli(fuzz_project: Path, obj: Any) -> None:
    from automaton.store.layout import Project

    folder = loop_dir(Project(fuzz_project))
    (folder / store.CONFIG_FILE).write_text(json.dumps(obj))
    assert_clean(run_cli("--can-edit", "--loop", LOOP, "--loop-worktree", "--file", "src/a.py", cwd=fuzz_project))
    assert_clean(run_cli("--loop-list", cwd=fuzz_project))
    assert_clean(run_cli("--mode", "dry-run", "--loop", LOOP, cwd=fuzz_project, entry="automaton-loop"))


@FUZZ
@given(obj=st.one_of(JSON, JSON.map(lambda v: {"iteration_count": v})))
def test_loop_state_contents_validate_or_fail_cleanly(obj: Any) -> None:
    from automaton.core.errors import CorruptState

    try:
        validate_state(obj, ".state.loop")
    except CorruptState as exc:
        assert "\n" not in exc.message and exc.message.startswith(".state.loop"), exc.message


def test_fuzz_project_is_usable(fuzz_project: Path) -> None:
    """The fuzz runs against a real project (the fixture's loop and task answer normally)."""
    assert run_cli("--check-gate", LOOP, cwd=fuzz_project).code == 0
    assert run_cli("--phase", "--task", TASK, cwd=fuzz_project).code == 0
    assert os.path.isdir(fuzz_project / ".automaton")
