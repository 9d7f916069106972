"""`.automaton/config.json` scope overrides (README.md#tasks-phases-and-sign-offs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.commands.test_can_edit import allowed, check, seed
from tests.helpers import run_cli


def write_config(root: Path, data: object, *, seal: bool = True) -> None:
    """Write `.automaton/config.json`; with `seal`, a human (AUTOMATON_APPROVER) approves it the
    way a script does, through the real CLI with --yes."""
    (root / ".automaton").mkdir(exist_ok=True)
    (root / ".automaton" / "config.json").write_text(json.dumps(data))
    if seal:
        with pytest.MonkeyPatch.context() as human:
            human.setenv("AUTOMATON_APPROVER", "config-owner")
            res = run_cli("--approve", "--config", "--yes", "--project", str(root))
        assert res.code == 0, res.err


def test_implement_scope_narrowed_by_project_patterns(tmp_path: Path) -> None:
    seed(tmp_path, "t", "implement")
    assert allowed(tmp_path, "README.txt")  # built-in: anything outside tasks/ and .automaton/
    write_config(tmp_path, {"schema_version": 1, "scopes": {"implement": ["src/**", "tests/*.py"]}})
    assert allowed(tmp_path, "src/pkg/mod.py")
    assert allowed(tmp_path, "tests/test_x.py")
    assert not allowed(tmp_path, "README.txt")
    assert not allowed(tmp_path, "tests/data/x.bin")
    assert allowed(tmp_path, "tasks/t/IMPLEMENTATION.md")  # the phase's own artifact stays allowed


def test_override_never_reaches_tasks_automaton_or_state(tmp_path: Path) -> None:
    seed(tmp_path, "t", "design")
    write_config(tmp_path, {"schema_version": 1, "scopes": {"design": ["**"]}})
    assert allowed(tmp_path, "docs/architecture.svg")
    assert not allowed(tmp_path, "tasks/t/SPEC.md")
    assert not allowed(tmp_path, ".automaton/config.json")
    assert not allowed(tmp_path, "src/.state")


def test_sign_off_sub_states_get_nothing_even_with_overrides(tmp_path: Path) -> None:
    seed(tmp_path, "t", "design:awaiting_approval")
    write_config(tmp_path, {"schema_version": 1, "scopes": {"design": ["**"]}})
    assert not allowed(tmp_path, "docs/architecture.svg")


@pytest.mark.parametrize("data, words", [
    ({"schema_version": 1, "scope": {}}, "unknown key"),
    ({"schema_version": 2, "scopes": {}}, "schema_version"),
    ({"schema_version": 1, "scopes": {"implemnt": ["src/**"]}}, "implemnt"),
    ({"schema_version": 1, "scopes": {"implement": "src/**"}}, "list of non-empty"),
    ([1, 2], "JSON object"),
])
def test_invalid_config_fails_closed_naming_the_file(tmp_path: Path, data: object, words: str) -> None:
    seed(tmp_path, "t", "implement")
    write_config(tmp_path, data, seal=False)  # an invalid file is never sealed: its own error comes first
    res = check(tmp_path, "src/x.py", "--task", "t")
    assert res.code == 2
    assert "config.json" in res.err and words in res.err
    assert "Traceback" not in res.err
