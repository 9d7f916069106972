"""One explicit case for each fault the reliability suite found (the matrix and fuzz find the kind)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from automaton.core.errors import BadInput, one_line
from automaton.proc import run_capture, run_streaming
from automaton.store import loops as store
from automaton.store.config import loop_defaults
from automaton.store.layout import Project
from tests.helpers import run_cli
from tests.reliability.kit import LOOP, TASK, loop_dir, setup_project


@pytest.mark.parametrize(("body", "why"), [
    ("## Loop Defaults\n- max_budget_usd: inf\n", "finite"),
    ("## Loop Defaults\n- max_budget_usd: nan\n", "finite"),
    ("## Loop Defaults\n- max_iteration: 5\n", "unknown key 'max_iteration'"),
    ("## Loop Defaults\n- max_iterations: 5\n- max_iterations: 50\n", "twice"),
    ("## Loop Defaults\n- max_iterations: 5 per day\n", "is not '- max_iterations: NUMBER'"),
    ("## Loop Defaults\n- plateau_epsilon: -1\n", ">= 0"),
    ("## Framework Version\n1.0\n", "no '## Loop Defaults' section"),
    ("## Loop Defaults\n- max_iterations: 5", "partial"),
    ("  \n", "empty"),
])
def test_config_md_brake_defaults_fail_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str,
                                              why: str) -> None:
    (tmp_path / "config.md").write_text(body)
    monkeypatch.setenv("AUTOMATON_HOME", str(tmp_path))
    with pytest.raises(BadInput, match=r"config\.md") as err:
        loop_defaults()
    assert why in err.value.message


def test_config_md_missing_or_valid_gives_finite_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOMATON_HOME", str(tmp_path))
    assert loop_defaults()["max_iterations"] == 25  # no config.md: the built-in values
    (tmp_path / "config.md").write_text("## Loop Defaults\nProse is fine.\n- max_iterations: 3\n")
    assert loop_defaults()["max_iterations"] == 3


def test_nul_in_loop_json_is_bad_input_not_a_crash(project: Path, tmp_path: Path) -> None:
    proj = setup_project(project, tmp_path / "runs", bound=False)
    path = loop_dir(proj) / store.CONFIG_FILE
    obj = json.loads(path.read_text())
    obj["roles"]["implement"]["prompt"] = "a\x00b"
    path.write_text(json.dumps(obj))
    res = run_cli("--mode", "dry-run", "--loop", LOOP, "--project", str(proj.root), entry="automaton-loop")
    assert res.code == 2 and "roles.implement.prompt" in res.err and "NUL" in res.err


def test_an_argv_no_process_can_take_is_an_exit_status(tmp_path: Path) -> None:
    assert run_capture(["echo", "a\x00b"]).code == 126
    done = run_streaming(["echo", "a\x00b"], out_path=tmp_path / "out.log", timeout_s=5)
    assert done.code == 126 and "cannot run" in (tmp_path / "out.log").read_text()


def test_error_messages_stay_one_line(project: Path) -> None:
    res = run_cli("stray\nline", cwd=project)
    assert res.code == 2 and res.err.count("\n") == 1 and "stray\\nline" in res.err
    res = run_cli("--mode", "tick", "--loop", "x\ny", "--project", str(project), entry="automaton-loop")
    assert res.code == 2 and res.err.count("\n") == 1
    assert one_line("a\r\nb\x1b[0m\u2028") == "a\\r\\nb\\x1b[0m\\u2028"


def test_a_tampered_loop_blocks_its_task(project: Path, tmp_path: Path) -> None:
    """A tampered `.state.loop` cannot vouch for 'running': transitions of its task refuse."""
    proj = setup_project(project, tmp_path / "runs", bound=True)
    state = loop_dir(proj) / store.STATE_FILE
    obj = json.loads(state.read_text())
    obj["status"], obj["halt_reason"] = "running", None
    obj["iteration_count"] = 0
    state.write_text(json.dumps(obj, indent=1))  # valid, but not the state the log sealed
    res = run_cli("--transition", "research:awaiting_approval", "--task", TASK, "--project", str(proj.root))
    assert res.code == 1 and ".state.loop" in res.err and "--approve --loop" in res.err


def test_a_directory_as_state_loop_is_corrupt_not_untracked(project: Path, tmp_path: Path) -> None:
    proj = setup_project(project, tmp_path / "runs", bound=True)
    state = loop_dir(proj) / store.STATE_FILE
    state.unlink()
    state.mkdir()
    for argv in (["--check-gate", LOOP], ["--transition", "research:awaiting_approval", "--task", TASK]):
        res = run_cli(*argv, "--project", str(Project(proj.root).root))
        assert res.code == 2 and "not a regular file" in res.err, res.err
