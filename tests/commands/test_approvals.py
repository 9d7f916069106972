"""Approvals a human can judge, through the real CLI: the diff of what a loop or config approval
seals, the y/N question (a terminal simulated by run_cli's tty stdin), `--yes`, the sealed
`.automaton/config.json`, and the note when a project template shadows a packaged one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from automaton.commands import loops as uc
from automaton.core.errors import Refused
from automaton.store import loops
from automaton.store.layout import Project, framework_home
from automaton.store.locks import locked
from tests.commands.test_loops import gate, set_state, state
from tests.helpers import Result, run_cli, seed_task
from tests.store.test_loops import log_text, make_loop

QUESTION = "Approve this loop.json? [y/N]"


def cli(p: Project | Path, *args: str, tty: bool = False, stdin: str = "") -> Result:
    """The real CLI on project `p`; `tty` makes stdin a terminal that answers `stdin`."""
    root = p.root if isinstance(p, Project) else p
    return run_cli(*args, "--project", str(root), tty=tty, stdin=stdin)


def loop_json(p: Project) -> Path:
    return p.loop_dir(loops.LoopName("demo")) / loops.CONFIG_FILE


def widen_scope(p: Project) -> str:
    """What an agent would do: widen its own file_scope. Returns the sealed SHA-256 it replaced."""
    path = loop_json(p)
    data = json.loads(path.read_text())
    data["blast_radius"]["file_scope"] = ["**"]
    path.write_text(json.dumps(data, indent=2) + "\n")
    return str(state(p).config_sha256)


@pytest.fixture
def widened(project: Path, approver: str) -> tuple[Project, str]:
    """A loop halted `config_changed` because its file_scope was widened to everything."""
    p = make_loop(project)
    old = widen_scope(p)
    halted = gate(p)
    assert halted.code == 1 and halted.json["halt_detail"] == "config_changed"
    return p, old


# ---- loop.json: the diff and the question ---------------------------------------------------

def test_the_diff_of_a_widened_file_scope_is_shown_and_y_approves_it(widened: tuple[Project, str]) -> None:
    p, _ = widened
    r = cli(p, "--approve", "--loop", "demo", tty=True, stdin="y\n")
    assert r.code == 0, r.err
    out = r.out.splitlines()
    assert "demo: halted (human_intervention: config_changed)" in out
    assert "--- .automaton/loops/demo/sealed/loop.json" in out and "+++ .automaton/loops/demo/loop.json" in out
    changed = [line for line in out if line.startswith(("-  ", "+  "))]
    assert changed == ['-      "src/**",', '-      "tests/**"', '+      "**"']
    assert out.index("+++ .automaton/loops/demo/loop.json") < next(
        i for i, line in enumerate(out) if line.startswith(QUESTION))
    assert state(p).status == "running"
    assert state(p).config_sha256 == loops.config_sha256(p, loops.LoopName("demo"))
    assert (loop_json(p).parent / loops.SEALED_COPY).read_bytes() == loop_json(p).read_bytes()
    # the next approval of that loop.json has nothing new to show
    widen_scope(p)  # the same content again: nothing changed
    assert gate(p).code == 0


@pytest.mark.parametrize("answer", ["n\n", "\n", "", "yess\n", "maybe y\n"])
def test_any_answer_but_y_refuses_and_changes_nothing(widened: tuple[Project, str], answer: str) -> None:
    p, old = widened
    before = log_text(p)
    r = cli(p, "--approve", "--loop", "demo", tty=True, stdin=answer)
    assert r.code == 1
    assert r.err.strip() == "automaton: not approved: loop.json was not sealed and nothing was changed"
    assert QUESTION in r.out
    assert (state(p).status, state(p).config_sha256) == ("halted", old)
    assert log_text(p) == before


@pytest.mark.parametrize("answer", ["y\n", "Y\n", "yes\n", " YES \n"])
def test_y_or_yes_in_any_case_approves(widened: tuple[Project, str], answer: str) -> None:
    p, _ = widened
    assert cli(p, "--approve", "--loop", "demo", tty=True, stdin=answer).code == 0
    assert state(p).status == "running"


def test_no_terminal_and_no_yes_refuses_with_one_line_naming_yes(widened: tuple[Project, str]) -> None:
    p, old = widened
    r = cli(p, "--approve", "--loop", "demo")  # AUTOMATON_APPROVER set, stdin not a terminal
    assert r.code == 1
    (line,) = r.err.splitlines()
    assert "--yes" in line and "no terminal" in line
    assert '+      "**"' in r.out  # the diff is still shown: a CI log records what was refused
    assert QUESTION not in r.out
    assert (state(p).status, state(p).config_sha256) == ("halted", old)


def test_yes_approves_without_the_question(widened: tuple[Project, str]) -> None:
    p, _ = widened
    r = cli(p, "--approve", "--loop", "demo", "--yes")
    assert r.code == 0, r.err
    assert QUESTION not in r.out and '+      "**"' in r.out
    assert state(p).status == "running" and "APPROVED loop=demo by=tester" in log_text(p)


def test_json_keeps_stdout_one_object_and_carries_the_diff(widened: tuple[Project, str]) -> None:
    p, _ = widened
    r = cli(p, "--approve", "--loop", "demo", "--yes", "--json")
    assert r.code == 0, r.err
    assert len(r.out.splitlines()) == 1
    assert '+      "**"' in r.json["diff"] and '+      "**"' in r.err


def test_an_older_loop_without_a_sealed_copy_shows_the_new_file(widened: tuple[Project, str]) -> None:
    p, _ = widened
    (loop_json(p).parent / loops.SEALED_COPY).unlink()
    r = cli(p, "--approve", "--loop", "demo", "--yes")
    assert r.code == 0, r.err
    out = r.out.splitlines()
    assert "no sealed copy; showing the new file" in out and "--- /dev/null" in out
    assert '+      "**"' in out and '+      "src/**",' not in out
    assert not any(line.startswith("-  ") for line in out)
    assert (loop_json(p).parent / loops.SEALED_COPY).is_file()  # kept from now on


def test_a_sealed_copy_of_another_file_is_not_shown_as_the_sealed_one(widened: tuple[Project, str]) -> None:
    p, _ = widened
    (loop_json(p).parent / loops.SEALED_COPY).write_text('{"forged": true}\n')
    r = cli(p, "--approve", "--loop", "demo", "--yes")
    assert r.code == 0 and "no sealed copy; showing the new file" in r.out and "forged" not in r.out


def test_other_halts_print_reason_and_detail_and_approve_without_a_question(project: Path, approver: str) -> None:
    p = make_loop(project, brakes={"max_iterations": 1})
    set_state(p, iteration_count=1)
    assert gate(p).json["halt_reason"] == "iterations_exhausted"
    r = cli(p, "--approve", "--loop", "demo")  # no terminal, no --yes: nothing to ask about
    assert r.code == 0, r.err
    assert r.out.splitlines()[0] == "demo: halted (iterations_exhausted: 1 of 1 iterations used)"
    assert QUESTION not in r.out and "---" not in r.out


def test_raising_a_brake_of_a_halted_loop_is_shown_too(project: Path, approver: str) -> None:
    """The halt was not config_changed, but the approval seals the edited loop.json: same question."""
    p = make_loop(project, brakes={"max_iterations": 1})
    set_state(p, iteration_count=1)
    gate(p)
    path = loop_json(p)
    path.write_text(path.read_text().replace('"max_iterations": 1,', '"max_iterations": 50,'))
    r = cli(p, "--approve", "--loop", "demo")
    assert r.code == 1 and "--yes" in r.err
    r = cli(p, "--approve", "--loop", "demo", tty=True, stdin="y\n")
    assert r.code == 0 and '+    "max_iterations": 50,' in r.out
    assert gate(p).json["remaining_iterations"] == 50


def test_a_diff_cannot_hide_behind_terminal_controls(widened: tuple[Project, str]) -> None:
    p, _ = widened
    data = json.loads(loop_json(p).read_text())
    data["description"] = "safe\u202e)**"  # a right-to-left override would reorder what the human reads
    loop_json(p).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\r\n")
    r = cli(p, "--approve", "--loop", "demo", "--yes")
    assert r.code == 0, r.err
    assert "\u202e" not in r.out and "\\u202e" in r.out and "\r" not in r.out


def test_the_approval_is_bound_to_the_loop_json_that_was_shown(widened: tuple[Project, str]) -> None:
    p, old = widened
    review = uc.review_loop(p, "demo")
    assert review.ask and '+      "**"' in review.diff
    loop_json(p).write_text(loop_json(p).read_text().replace('"max_iterations": 25', '"max_iterations": 9999'))
    with pytest.raises(Refused, match="changed while you reviewed it"):
        uc.approve_loop(p, "demo", reviewed=review)
    with pytest.raises(Refused, match="nobody reviewed the diff"):
        uc.approve_loop(p, "demo")  # the Python API without a review never seals a changed file
    assert (state(p).status, state(p).config_sha256) == ("halted", old)
    assert uc.approve_loop(p, "demo", reviewed=uc.review_loop(p, "demo")).code == 0


def test_a_loop_json_written_between_the_review_and_the_seal_is_never_sealed(
        widened: tuple[Project, str], monkeypatch: pytest.MonkeyPatch) -> None:
    # The approval hashes loop.json for the review and reads it again to seal: a write in
    # between (by a process outside the sandbox) must not be sealed without being seen.
    p, old = widened
    review = uc.review_loop(p, "demo")
    real = loops.Loop.read_config

    def racing(self: loops.Loop) -> object:
        loop_json(p).write_text(loop_json(p).read_text().replace('"max_iterations": 25', '"max_iterations": 9999'))
        return real(self)

    monkeypatch.setattr(loops.Loop, "read_config", racing)
    with pytest.raises(Refused, match="changed while it was being approved"):
        uc.approve_loop(p, "demo", reviewed=review)
    assert (state(p).status, state(p).config_sha256) == ("halted", old)


def test_an_invalid_new_loop_json_is_refused_before_any_question(widened: tuple[Project, str]) -> None:
    p, _ = widened
    loop_json(p).write_text(loop_json(p).read_text().replace('"max_iterations"', '"max_iteration"'))
    r = cli(p, "--approve", "--loop", "demo", tty=True, stdin="y\n")
    assert r.code == 2 and "brakes.max_iteration" in r.err and QUESTION not in r.out
    assert state(p).status == "halted"


# ---- .automaton/config.json: sealed by a human ----------------------------------------------

SCOPES = {"schema_version": 1, "scopes": {"implement": ["src/**"]}}


def write_config(root: Path, data: object) -> Path:
    path = root / ".automaton" / "config.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def can_edit(root: Path, rel: str) -> tuple[int, str]:
    res = run_cli("--can-edit", "--file", rel, "--task", "t", "--project", str(root))
    return res.code, res.out + res.err


def hook(root: Path, rel: str) -> tuple[int, str]:
    payload = {"session_id": "s", "hook_event_name": "PreToolUse", "cwd": str(root), "tool_name": "Write",
               "tool_input": {"file_path": str(root / rel), "content": "x = 1\n"}}
    res = run_cli("--hook", "claude", cwd=root, stdin=json.dumps(payload))
    return res.code, res.err


def test_an_unsealed_config_denies_until_a_human_approves_it(tmp_path: Path, approver: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    seed_task(tmp_path, "t", "implement")
    path = write_config(tmp_path, SCOPES)  # an existing config.json from before seals: treated as changed
    code, said = can_edit(tmp_path, "src/app.py")
    assert code == 2 and said.count("\n") == 1
    assert f"{path} has no seal" in said and "automaton --approve --config" in said
    monkeypatch.setenv("AUTOMATON_TASK", "t")
    code, said = hook(tmp_path, "src/app.py")
    assert code == 2 and str(path) in said and "automaton --approve --config" in said
    monkeypatch.delenv("AUTOMATON_TASK")

    assert run_cli("--approve", "--config", "--project", str(tmp_path)).code == 1  # no terminal, no --yes
    r = run_cli("--approve", "--config", "--project", str(tmp_path), tty=True, stdin="y\n")
    assert r.code == 0, r.err
    out = r.out.splitlines()
    assert "no sealed copy; showing the new file" in out and '+    "implement": [' in out
    assert "Approve this config.json? [y/N] .automaton/config.json: sealed (approved by tester; sha256" in r.out
    assert (tmp_path / ".automaton" / "sealed" / "config.json").read_bytes() == path.read_bytes()
    assert "CONFIG_APPROVED by=tester" in (tmp_path / ".automaton" / "config.log").read_text()

    assert can_edit(tmp_path, "src/app.py")[0] == 0
    assert can_edit(tmp_path, "README.md")[0] == 1  # the sealed override narrows implement
    monkeypatch.setenv("AUTOMATON_TASK", "t")
    assert hook(tmp_path, "src/app.py")[0] == 0
    again = run_cli("--approve", "--config", "--project", str(tmp_path))
    assert again.code == 0 and "nothing to approve" in again.out


def test_a_config_changed_after_its_seal_fails_closed_and_shows_the_diff(tmp_path: Path, approver: str) -> None:
    seed_task(tmp_path, "t", "implement")
    write_config(tmp_path, SCOPES)
    assert run_cli("--approve", "--config", "--yes", "--project", str(tmp_path)).code == 0
    write_config(tmp_path, {"schema_version": 1, "scopes": {"implement": ["**"]}})  # widened
    code, said = can_edit(tmp_path, "README.md")
    assert code == 2 and "is not the sealed project config" in said and "automaton --approve --config" in said
    r = run_cli("--approve", "--config", "--project", str(tmp_path), tty=True, stdin="n\n")
    assert r.code == 1 and can_edit(tmp_path, "README.md")[0] == 2
    changed = [line for line in r.out.splitlines() if line.startswith(("-  ", "+  "))]
    assert changed == ['-      "src/**"', '+      "**"']
    assert "--- .automaton/sealed/config.json" in r.out
    assert run_cli("--approve", "--config", "--yes", "--project", str(tmp_path)).code == 0
    assert can_edit(tmp_path, "README.md")[0] == 0


def test_a_removed_config_is_sealed_as_a_removal(tmp_path: Path, approver: str) -> None:
    seed_task(tmp_path, "t", "implement")
    path = write_config(tmp_path, SCOPES)
    assert run_cli("--approve", "--config", "--yes", "--project", str(tmp_path)).code == 0
    path.unlink()  # removing a narrowing config widens the scope: a human approves that too
    code, said = can_edit(tmp_path, "README.md")
    assert code == 2 and "was removed after a human sealed it" in said
    r = run_cli("--approve", "--config", "--yes", "--project", str(tmp_path))
    assert r.code == 0 and '-    "implement": [' in r.out and "removal is sealed" in r.out
    assert "CONFIG_REMOVED by=tester" in (tmp_path / ".automaton" / "config.log").read_text()
    assert can_edit(tmp_path, "README.md")[0] == 0  # the built-in implement scope


def test_no_config_and_no_seal_keeps_the_defaults(tmp_path: Path, approver: str) -> None:
    seed_task(tmp_path, "t", "implement")
    assert can_edit(tmp_path, "README.md")[0] == 0
    r = run_cli("--approve", "--config", "--project", str(tmp_path))
    assert r.code == 0 and "nothing to approve" in r.out
    assert not (tmp_path / ".automaton" / "config.log").exists()


def test_a_broken_config_log_denies_and_the_human_starts_a_new_chain(tmp_path: Path, approver: str) -> None:
    seed_task(tmp_path, "t", "implement")
    write_config(tmp_path, SCOPES)
    assert run_cli("--approve", "--config", "--yes", "--project", str(tmp_path)).code == 0
    log = tmp_path / ".automaton" / "config.log"
    log.write_text(log.read_text().replace("by=tester", "by=mallory"))
    code, said = can_edit(tmp_path, "src/app.py")
    assert code == 2 and "cannot be checked against its seal" in said
    assert run_cli("--approve", "--config", "--yes", "--project", str(tmp_path)).code == 0
    assert (tmp_path / ".automaton" / "config.log.broken").is_file()
    assert can_edit(tmp_path, "src/app.py")[0] == 0


def test_approve_config_is_a_human_act_and_never_seals_an_invalid_file(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(tmp_path, SCOPES)
    r = run_cli("--approve", "--config", "--yes", "--project", str(tmp_path))  # no terminal, no approver
    assert r.code == 1 and "human sign-off" in r.err
    monkeypatch.setenv("AUTOMATON_APPROVER", "alice")
    monkeypatch.setenv("CLAUDECODE", "1")
    assert run_cli("--approve", "--config", "--yes", "--project", str(tmp_path)).code == 1
    monkeypatch.delenv("CLAUDECODE")
    write_config(tmp_path, {"schema_version": 1, "scopes": {"implemnt": ["**"]}})
    r = run_cli("--approve", "--config", "--yes", "--project", str(tmp_path))
    assert r.code == 2 and "implemnt" in r.err and "Traceback" not in r.err
    assert not (tmp_path / ".automaton" / "config.log").exists()


def test_audit_flags_an_unsealed_config(tmp_path: Path, approver: str) -> None:
    path = write_config(tmp_path, SCOPES)
    res = run_cli("--audit", "--json", "--project", str(tmp_path))
    assert res.code == 1 and res.json["project"] == [
        f"{path} has no seal (a human never approved it): a human reviews it and runs automaton --approve --config"]
    assert run_cli("--approve", "--config", "--yes", "--project", str(tmp_path)).code == 0
    assert run_cli("--audit", "--json", "--project", str(tmp_path)).json["project"] == []


def test_approve_config_waits_for_a_running_tick(project: Path, approver: str) -> None:
    p = make_loop(project)
    write_config(project, SCOPES)
    with locked(loops.tick_lock_path(p, "demo"), timeout_s=0):
        r = run_cli("--approve", "--config", "--yes", "--project", str(project))
    assert r.code == 1 and "a tick of loop demo is running" in r.err
    assert run_cli("--approve", "--config", "--yes", "--project", str(project)).code == 0


def test_a_config_changed_under_a_loop_halts_its_gate(project: Path, approver: str) -> None:
    p = make_loop(project)
    assert gate(p).code == 0
    write_config(project, SCOPES)  # no seal
    r = gate(p)
    assert r.code == 1 and r.json["halt_reason"] == "human_intervention"
    assert r.json["halt_detail"] == "config_changed: .automaton/config.json"
    assert "HALT reason=human_intervention" in log_text(p)
    text = cli(p, "--check-gate", "demo")
    assert "automaton --approve --config" in text.out
    refused = cli(p, "--approve", "--loop", "demo")  # the config first: the next gate would halt again
    assert refused.code == 1 and "automaton --approve --config first" in refused.err
    assert run_cli("--approve", "--config", "--yes", "--project", str(project)).code == 0
    approved = cli(p, "--approve", "--loop", "demo")  # loop.json unchanged: no question
    assert approved.code == 0, approved.err
    assert "demo: halted (human_intervention: config_changed: .automaton/config.json)" in approved.out
    assert gate(p).code == 0
    write_config(project, {"schema_version": 1, "scopes": {"implement": ["**"]}})  # changed after its seal
    assert gate(p).json["halt_detail"] == "config_changed: .automaton/config.json"


# ---- usage ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "needle"), [
    (["--approve", "--config", "--loop", "demo"], "--approve --config takes no --task, --loop or --to"),
    (["--approve", "--config", "--task", "t"], "--approve --config takes no --task, --loop or --to"),
    (["--approve", "--task", "t", "--yes"], "--yes goes with --approve --loop or --approve --config"),
    (["--check-gate", "demo", "--yes"], "--yes does not go with --check-gate"),
    (["--can-edit", "--file", "x", "--config"], "--config does not go with --can-edit"),
])
def test_usage_errors_are_one_line_exit_2(tmp_path: Path, args: list[str], needle: str) -> None:
    r = run_cli(*args, "--project", str(tmp_path))
    assert r.code == 2 and needle in r.err and len(r.err.splitlines()) == 1


# ---- templates that shadow a packaged one ---------------------------------------------------

def test_a_project_template_shadowing_a_packaged_one_says_so(project: Path) -> None:
    mine = project / ".automaton" / "templates" / "loops" / "ci-triage"
    shutil.copytree(framework_home() / "templates" / "loops" / "ci-triage", mine)
    r = cli(project, "--create-loop", "nightly", "--from-template", "ci-triage")
    assert r.code == 0, r.err
    assert ("template ci-triage: using the project's copy at .automaton/templates/loops/ci-triage,"
            " which shadows the packaged one") in r.out.splitlines()
    assert cli(project, "--create-loop", "other", "--from-template", "ci-triage", "--json").json[
        "shadows_packaged"] is True


def test_no_shadow_note_for_a_packaged_or_a_project_only_template(project: Path) -> None:
    r = cli(project, "--create-loop", "nightly", "--from-template", "ci-triage")
    assert r.code == 0 and "shadows" not in r.out
    make_loop(project, "mine")  # project template t-mine: nothing packaged of that name
    r = cli(project, "--create-loop", "again", "--from-template", "t-mine")
    assert r.code == 0 and "shadows" not in r.out
