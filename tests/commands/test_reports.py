"""`--validate-folder` and `--audit`: read-only reports that flag every violation."""

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


# ---- keyed logs ------------------------------------------------------------------------------

def _legacy_task(root: Path, name: str, *phases: str) -> Path:
    """A task whose log automaton wrote before keys existed: unkeyed lines, a valid SHA-256 chain."""
    from automaton.core.chain import GENESIS, format_line, line_hash

    folder = root / "tasks" / name
    folder.mkdir(parents=True)
    prev, text = GENESIS, ""
    for phase in phases:
        line = format_line("2025-01-01T00:00:00Z", "TRANSITION", {"task": name}, phase, prev)
        text, prev = text + line + "\n", line_hash(line)
    (folder / ".state.log").write_text(text)
    (folder / ".state").write_text(f"{phases[-1]}\n")
    return folder


def test_read_only_commands_never_create_the_key(tmp_path: Path, forbid_real_home: Path) -> None:
    import json

    from automaton.store.key import key_path

    _legacy_task(tmp_path, "old", "new", "research")
    payload = {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "PreToolUse", "tool_name": "Write",
               "tool_input": {"file_path": str(tmp_path / "tasks/old/SPEC.md"), "content": "x"}}
    assert cli(tmp_path, "--audit").code == 1  # the unkeyed log is flagged
    assert cli(tmp_path, "--validate-folder").code == 0
    assert cli(tmp_path, "--can-edit", "--task", "old", "--file", "tasks/old/SPEC.md").code == 0
    assert run_cli("--hook", "claude", "--project", str(tmp_path), stdin=json.dumps(payload)).code == 0
    assert not key_path().exists() and not (forbid_real_home / ".config").exists()


def test_audit_flags_a_legacy_log_with_its_fix_and_a_human_approval_keys_it(tmp_path: Path, approver: str) -> None:
    _legacy_task(tmp_path, "old", "new", "research")
    res = cli(tmp_path, "--audit", "--json")
    assert res.code == 1 and res.json["key"] is None
    (found,) = res.json["tasks"][0]["violations"]
    assert found.startswith("UNKEYED (legacy):") and "automaton --approve --task old --to research" in found
    assert cli(tmp_path, "--approve", "--task", "old", "--to", "research").code == 0
    res = cli(tmp_path, "--audit", "--json")
    assert res.code == 0 and res.json["tasks"][0]["violations"] == [] and res.json["key"]
    assert cli(tmp_path, "--approve", "--task", "old", "--to", "design").code == 1  # keyed now: the usual rule


def test_a_forged_line_with_a_recomputed_chain_is_tampering_for_audit_and_transitions(tmp_path: Path) -> None:
    from automaton.core.chain import format_line, line_hash

    folder = seed(tmp_path, "t", "implement", {"SPEC.md": "s", "DESIGN.md": "d"})
    log = folder / ".state.log"
    text = log.read_text()
    forged = format_line("2026-01-01T00:00:00Z", "APPROVED", {"task": "t", "by": "alice"}, "bug_find",
                         line_hash(text.splitlines()[-1]))
    log.write_text(text + forged + "\n")
    (folder / ".state").write_text("bug_find\n")
    res = cli(tmp_path, "--audit", "--json")
    assert res.code == 1 and "TAMPERED" in res.json["tasks"][0]["violations"][0]
    assert "line 2 has no mac" in res.json["tasks"][0]["violations"][0]
    res = cli(tmp_path, "--transition", "implement", "--task", "t")
    assert res.code == 1 and "line 2 has no mac" in res.err and "--approve --task t --to" in res.err
    assert cli(tmp_path, "--can-edit", "--task", "t", "--file", "src/x.py").code == 1


def test_without_the_key_keyed_logs_are_flagged_naming_the_key(tmp_path: Path) -> None:
    from automaton.store import key

    seed(tmp_path, "t", "research")
    key.key_path().unlink()
    key.forget()
    res = cli(tmp_path, "--audit", "--json")
    assert res.code == 1 and res.json["key"] is None
    found = res.json["tasks"][0]["violations"][0]
    assert "TAMPERED" in found and "no key to verify it" in found and str(key.key_path()) in found
    assert not key.key_path().exists()


def test_a_key_others_can_read_is_a_project_violation(tmp_path: Path) -> None:
    from automaton.store import key

    seed(tmp_path, "t", "research")
    key.key_path().chmod(0o644)
    key.forget()
    res = cli(tmp_path, "--audit", "--json")
    assert res.code == 1 and any("chmod 600" in v for v in res.json["project"])
    res = cli(tmp_path, "--phase", "--task", "t")
    assert res.code == 2 and "chmod 600" in res.err and "Traceback" not in res.err


def test_a_log_copied_from_another_task_is_flagged_and_a_human_reseal_starts_afresh(tmp_path: Path,
                                                                                    approver: str) -> None:
    done = seed(tmp_path, "done", "referee")
    (done / "VERDICT.md").write_text("Verdict: PASS\n")
    assert cli(tmp_path, "--transition", "complete", "--task", "done").code == 0
    done = tmp_path / "tasks" / "complete" / "done"
    victim = seed(tmp_path, "t", "research")
    for name in (".state", ".state.log"):
        (victim / name).write_bytes((done / name).read_bytes())
    res = cli(tmp_path, "--audit", "--json")
    rows = {r["task"]: r for r in res.json["tasks"]}
    # t's own anchor sees another history before the foreign lines are looked at (store/anchor.py)
    assert res.code == 1 and "rolled back to another history" in rows["t"]["violations"][0]
    assert cli(tmp_path, "--transition", "complete", "--task", "t").code == 1
    assert cli(tmp_path, "--approve", "--task", "t", "--to", "research").code == 0
    assert (victim / ".state.log.broken").read_bytes() == (done / ".state.log").read_bytes()
    assert cli(tmp_path, "--audit", "--json").code == 0
