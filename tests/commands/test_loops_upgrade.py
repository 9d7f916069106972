"""--upgrade-loops: a human act that bootstraps the state of a loop folder that has only loop.json."""

from __future__ import annotations

import json
from pathlib import Path

from automaton.core.chain import verify_text
from automaton.store import loops
from automaton.store.key import load_key
from automaton.store.layout import Project
from tests.core.test_loopconfig import DESIGN_EXAMPLE
from tests.helpers import Result, run_cli


def cli(project: Path, *args: str, tty: bool = False, stdin: str = "") -> Result:
    return run_cli(*args, "--project", str(project), tty=tty, stdin=stdin)


def bare_loop(project: Path, name: str = "old") -> Path:
    """A loop folder as a loop made before loops had state: loop.json and a prompt, nothing else."""
    folder = project / ".automaton" / "loops" / name
    folder.mkdir(parents=True)
    (folder / "loop.json").write_text(json.dumps({**DESIGN_EXAMPLE, "name": name}, indent=2) + "\n")
    (folder / "implement.md").write_text("do the work\n")
    return folder


def test_a_folder_with_only_loop_json_is_bootstrapped_sealed_zeroed_logged_and_halted(
        project: Path, approver: str) -> None:
    folder = bare_loop(project)
    before = cli(project, "--check-gate", "old")
    assert before.code == 2 and "automaton --upgrade-loops --loop old" in before.err  # the hint names a real step
    res = cli(project, "--upgrade-loops", "--yes", "--json")
    assert res.code == 0, res.err
    assert res.json == {"bootstrapped": ["old"], "by": approver}
    assert "old: " in res.err and "has no state" in res.err  # what it would do is shown (stderr under --json)
    state = loops.read_state(Project(project.resolve()), "old")
    assert (state.iteration_count, state.spent_micro_usd, state.resumed_count) == (0, 0, 0)
    assert state.status == "halted" and str(state.halt_detail).startswith("first_approval: bootstrapped")
    data = (folder / "loop.json").read_bytes()
    assert (folder / "sealed" / "loop.json").read_bytes() == data
    log = (folder / ".state.log").read_text()
    assert log.split(" ")[1] == "CREATED" and f"bootstrapped_by={approver}" in log
    assert verify_text(log, load_key(create=False)).ok  # keyed
    assert "/.automaton/loops/*/.state*" in (project / ".git" / "info" / "exclude").read_text()
    gate = cli(project, "--check-gate", "old", "--json")
    assert gate.code == 1 and gate.json["halt_reason"] == "human_intervention"  # not running before a human saw it
    assert cli(project, "--approve", "--loop", "old", "--yes").code == 0
    assert cli(project, "--check-gate", "old").code == 0


def test_a_folder_that_has_state_is_refused_and_left_alone(project: Path, approver: str) -> None:
    folder = bare_loop(project)
    assert cli(project, "--upgrade-loops", "--loop", "old", "--yes").code == 0
    log = (folder / ".state.log").read_bytes()
    again = cli(project, "--upgrade-loops", "--loop", "old", "--yes")
    assert again.code == 1 and "already has state" in again.err
    (folder / ".state.loop").unlink()  # a deleted state is tampering, not a fresh start
    third = cli(project, "--upgrade-loops", "--loop", "old", "--yes")
    assert third.code == 1 and "already has state (.state.log)" in third.err
    assert (folder / ".state.log").read_bytes() == log
    none = cli(project, "--upgrade-loops", "--yes")
    assert none.code == 0 and "nothing to bootstrap" in none.out


def test_a_deleted_log_that_the_anchor_remembers_is_not_bootstrapped(project: Path, approver: str) -> None:
    folder = bare_loop(project)
    assert cli(project, "--upgrade-loops", "--yes").code == 0
    for name in (".state.loop", ".state.log"):
        (folder / name).unlink()
    res = cli(project, "--upgrade-loops", "--loop", "old", "--yes")
    assert res.code == 2 and "rolled back" in res.err
    assert not (folder / ".state.loop").exists()


def test_it_is_a_human_act_and_asks_first(project: Path) -> None:
    folder = bare_loop(project)
    no_human = run_cli("--upgrade-loops", "--yes", "--project", str(project), human=False)
    assert no_human.code == 1 and "human" in no_human.err
    said_no = cli(project, "--upgrade-loops", tty=True, stdin="n\n")
    assert said_no.code == 1 and "Bootstrap 1 loop(s)? [y/N]" in said_no.out and "nothing was changed" in said_no.err
    assert not (folder / ".state.loop").exists()
    said_yes = cli(project, "--upgrade-loops", tty=True, stdin="y\n")
    assert said_yes.code == 0, said_yes.err
    assert (folder / ".state.loop").is_file()


def test_no_terminal_without_yes_is_refused_naming_yes(project: Path, approver: str) -> None:
    bare_loop(project)
    res = cli(project, "--upgrade-loops")
    assert res.code == 1 and "--yes" in res.err


def test_an_invalid_or_misnamed_loop_json_is_bad_input_and_nothing_is_written(project: Path, approver: str) -> None:
    folder = bare_loop(project)
    (folder / "loop.json").write_text(json.dumps({**DESIGN_EXAMPLE, "name": "other"}))
    res = cli(project, "--upgrade-loops", "--yes")
    assert res.code == 2 and "loop.json" in res.err and len(res.err.strip().splitlines()) == 1
    assert not (folder / ".state.loop").exists() and not (folder / ".state.log").exists()
