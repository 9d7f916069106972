"""`--validate-folder` and `--audit`: read-only reports that flag every violation (seed 003 §4, §6)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from automaton.store import chainlog
from tests.helpers import Result, run_cli
from tests.helpers import seed_task as seed

SEED_WORDING = ("Task '{task}' was created manually (no .state file). Use 'python ~/.automaton/scripts/status.py"
                " --create-task' to create tasks properly.")




def cli(root: Path, *args: str) -> Result:
    return run_cli(*args, "--project", str(root))


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("verb", ["--audit", "--validate-folder"])
def test_clean_project(tmp_path: Path, verb: str) -> None:
    seed(tmp_path, "a", "research", {"SPEC.md": "s"})
    seed(tmp_path, "b", "implement", {"SPEC.md": "s", "DESIGN.md": "d"})
    res = cli(tmp_path, verb, "--json")
    assert res.code == 0, res.out
    assert res.json["ok"] is True
    assert [(r["task"], r["phase"], r["violations"]) for r in res.json["tasks"]] == [
        ("a", "research", []), ("b", "implement", [])]


def test_empty_project(tmp_path: Path) -> None:
    res = cli(tmp_path, "--audit", "--json")
    assert res.code == 0 and res.json["tasks"] == []


@pytest.mark.parametrize("verb", ["--audit", "--validate-folder"])
def test_legacy_folder_is_flagged_with_the_seeds_wording_and_nothing_is_written(tmp_path: Path, verb: str) -> None:
    legacy = tmp_path / "tasks" / "by-hand"
    legacy.mkdir(parents=True)
    (legacy / "SPEC.md").write_text("s")
    seed(tmp_path, "ok-task", "new")
    before = snapshot(tmp_path)
    res = cli(tmp_path, verb)
    assert res.code == 1
    assert SEED_WORDING.format(task="by-hand") in res.out
    assert snapshot(tmp_path) == before
    assert not (legacy / ".state").exists()


def test_every_kind_of_violation_is_reported(tmp_path: Path, approver: str) -> None:
    seed(tmp_path, "forbidden", "research", {"SPEC.md": "s", "VERDICT.md": "v", "DESIGN.md": "d"})
    (seed(tmp_path, "edited", "research") / ".state").write_text("complete\n")
    (seed(tmp_path, "corrupt", "research") / ".state").write_text("")
    (tmp_path / "tasks" / "Not_A_Task").mkdir()
    demoted = seed(tmp_path, "demoted", "research:awaiting_approval", {"SPEC.md": "v1"})
    assert cli(tmp_path, "--approve", "--task", "demoted").code == 0
    (demoted / "SPEC.md").write_text("v2")
    before = snapshot(tmp_path)
    res = cli(tmp_path, "--audit", "--json")
    assert res.code == 1 and res.json["ok"] is False
    rows = {r["task"]: r for r in res.json["tasks"]}
    assert rows["forbidden"]["violations"] == [
        "forbidden artifacts for phase 'research': DESIGN.md, VERDICT.md"]
    assert rows["edited"]["violations"][0].startswith("TAMPERED:")
    assert str(tmp_path / "tasks" / "corrupt" / ".state") in rows["corrupt"]["violations"][0]
    assert rows["corrupt"]["phase"] is None
    assert "SPEC.md changed" in rows["demoted"]["violations"][0]
    assert "research:approved -> research:awaiting_approval" in rows["demoted"]["violations"][0]
    assert "not a task" in rows["tasks/Not_A_Task"]["violations"][0]
    assert snapshot(tmp_path) == before  # --audit is read-only, even for what a command would fix


def test_audit_covers_sub_tasks_and_completed_tasks(tmp_path: Path) -> None:
    seed(tmp_path, "p", "decomposition:approved", {"DECOMPOSITION.md": "d"})
    (seed(tmp_path, "p/s", "research") / ".state").write_text("implement\n")
    seed(tmp_path, "complete/done", "complete")
    (seed(tmp_path, "complete/done/child", "complete") / ".state").write_text("new\n")
    res = cli(tmp_path, "--audit", "--json")
    rows = {r["task"]: r for r in res.json["tasks"]}
    assert set(rows) == {"p", "p/s", "done", "done/child"}
    assert rows["p/s"]["violations"] and rows["done/child"]["violations"]
    assert not rows["p"]["violations"] and not rows["done"]["violations"]


def test_validate_one_task(tmp_path: Path) -> None:
    seed(tmp_path, "a", "research", {"SPEC.md": "s"})
    (seed(tmp_path, "b", "research") / ".state").write_text("x\n")
    res = cli(tmp_path, "--validate-folder", "--task", "a", "--json")
    assert res.code == 0 and [r["task"] for r in res.json["tasks"]] == ["a"]
    res = cli(tmp_path, "--validate-folder", "--task", "b", "--json")
    assert res.code == 1 and "not a valid phase" in res.json["tasks"][0]["violations"][0]
    res = cli(tmp_path, "--validate-folder", "--task", "nope")
    assert res.code == 2 and "unknown task 'nope'" in res.err


def test_interrupted_commit_is_not_a_violation(tmp_path: Path) -> None:
    from automaton.store.atomic import write_tmp

    folder = seed(tmp_path, "t", "new")
    write_tmp(folder / ".state", b"research\n")
    chainlog.append_event(folder / ".state.log", "TRANSITION", {}, "research")
    res = cli(tmp_path, "--audit", "--json")
    assert res.code == 0 and res.json["tasks"][0]["phase"] == "research"


@pytest.mark.parametrize("where", ["tasks", ".automaton"])
def test_audit_flags_tasks_or_automaton_that_is_a_file(tmp_path: Path, where: str) -> None:
    (tmp_path / where).write_text("not a folder\n")
    res = cli(tmp_path, "--audit")
    assert res.code == 1, (res.code, res.out, res.err)
    assert f"VIOLATION {tmp_path / where}: not a folder" in " ".join(res.out.split())
    data = cli(tmp_path, "--audit", "--json")
    assert data.code == 1 and data.json["ok"] is False
    assert [str(tmp_path / where) in v for v in data.json["project"]] == [True]


@pytest.mark.parametrize("text, needle", [
    ("{", "not valid JSON"), ("[]", "expected a JSON object"), ('{"schema_version": 9}', "schema_version"),
    ('{"schema_version": 1, "scopes": {"implement": 3}}', "config.json"),
])
def test_audit_flags_an_invalid_project_config(tmp_path: Path, text: str, needle: str) -> None:
    (tmp_path / ".automaton").mkdir()
    (tmp_path / ".automaton/config.json").write_text(text)
    res = cli(tmp_path, "--audit", "--json")
    assert res.code == 1, (res.code, res.out, res.err)
    (found,) = res.json["project"]
    assert str(tmp_path / ".automaton/config.json") in found and needle in found
    seed(tmp_path, "t", "research")  # a clean task does not hide it
    assert cli(tmp_path, "--audit").code == 1
