"""Red team: a config nested too deeply, or with a key given twice, is one line and exit 2 (or a
halted loop), never exit 3 "internal error"; one bad loop.json never hides the other loops."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from automaton.harnesses import claude
from tests.helpers import run_cli
from tests.runner.loopkit import make_loop

DEEP = "[" * 60000


def caps_file() -> Path:
    path = Path.home() / ".config" / "automaton" / "caps.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@pytest.mark.parametrize(("text", "said"), [(DEEP, "nested too deeply"),
                                            ('{"day_usd": 1, "day_usd": 100}', "duplicate key 'day_usd'")])
def test_a_bad_caps_file_is_one_line_exit_2(project: Path, text: str, said: str) -> None:
    path = caps_file()
    path.write_text(text)
    out = run_cli("--spend", cwd=project)
    assert out.code == 2 and said in out.err and str(path) in out.err, out.err
    assert len(out.err.strip().splitlines()) == 1


@pytest.mark.parametrize("verb", [["--loop-status", "bad"], ["--check-gate", "bad"], ["--doctor"], ["--loop-list"],
                                  ["--audit"]])
def test_a_deep_loop_json_is_named_and_the_other_loops_still_show(project: Path, verb: list[str]) -> None:
    proj = make_loop(project, "bad")
    make_loop(project, "good")
    (proj.dot / "loops" / "bad" / "loop.json").write_text(DEEP)
    out = run_cli(*verb, cwd=project)
    assert out.code in (0, 1, 2), (out.code, out.err)
    assert "Traceback" not in out.err and "internal error" not in out.err
    if verb[0] in ("--loop-list", "--audit"):
        assert "good" in out.out and "bad" in out.out


def test_a_deep_loop_json_stops_the_tick_with_a_named_halt(project: Path) -> None:
    proj = make_loop(project, "bad")
    (proj.dot / "loops" / "bad" / "loop.json").write_text(DEEP)
    out = run_cli("--mode", "tick", "--loop", "bad", cwd=project, entry="automaton-loop")
    assert out.code in (1, 2) and "Traceback" not in out.err, (out.code, out.err)
    assert "nested too deeply" in out.out + out.err


def test_a_duplicate_key_in_the_project_config_is_refused(project: Path) -> None:
    make_loop(project, "demo")
    path = project / ".automaton" / "config.json"
    path.write_text('{"isolation": "none", "isolation": "none"}')
    out = run_cli("--check-gate", "demo", cwd=project)
    assert "duplicate key 'isolation'" in out.out + out.err, (out.code, out.out, out.err)


def test_a_duplicate_key_in_template_json_is_refused(project: Path) -> None:
    tpl = project / ".automaton" / "templates" / "loops" / "dup"
    tpl.mkdir(parents=True)
    (tpl / "loop.json").write_text((Path(__file__).parents[2] / "src" / "automaton" / "resources" / "templates" /
                                    "loops" / "lint-fix" / "loop.json").read_text())
    (tpl / "template.json").write_text('{"vars": {}, "vars": {}}')
    out = run_cli("--create-loop", "x", "--from-template", "dup", cwd=project)
    assert out.code == 2 and "duplicate key 'vars'" in out.err and "template.json" in out.err, out.err


def test_claude_output_nested_too_deeply_is_skipped_not_a_crash() -> None:
    result: dict[str, Any] = {"type": "result", "subtype": "success", "is_error": False, "result": "ok",
                              "total_cost_usd": 0.25, "usage": {}}
    res = claude.parse('{"a":' * 30000 + "\n" + json.dumps(result) + "\n", "", 0)
    assert res.final_text == "ok" and res.error is None


def test_a_loop_json_with_several_invalid_fields_names_each_on_its_own_line(project: Path) -> None:
    proj = make_loop(project, "bad")
    path = proj.dot / "loops" / "bad" / "loop.json"
    data = json.loads(path.read_text())
    data["harness"]["timeout_s"] = -1
    data["brakes"]["max_budget_usd"] = "ten"
    path.write_text(json.dumps(data))
    out = run_cli("--approve", "--loop", "bad", "--yes", cwd=project, human=True)
    assert out.code == 2 and out.err.splitlines() == [
        f"automaton: {path}: harness.timeout_s must be an integer >= 1 and <= 86400, got -1",
        f'automaton: {path}: brakes.max_budget_usd must be a finite number > 0 and <= 100000, got "ten"'], out.err
    gate = run_cli("--check-gate", "bad", cwd=project)
    assert gate.code == 2 and "  invalid loop.json (2 problems):" in gate.out.splitlines()
    assert f"    {path}: harness.timeout_s must be an integer >= 1 and <= 86400, got -1" in gate.out.splitlines()
