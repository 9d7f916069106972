"""`--focus`: a human act, logged, and tamper-evident."""

from __future__ import annotations

from pathlib import Path

import pytest

from automaton.commands.focus import read_focus
from automaton.core.chain import verify_text
from automaton.core.errors import BadInput
from automaton.core.names import TaskRef
from automaton.store import chainlog
from automaton.store.key import load_key
from automaton.store.layout import Project
from tests.helpers import Result, run_cli


def cli(root: Path, *args: str, tty: bool = False) -> Result:
    return run_cli(*args, "--project", str(root), tty=tty)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "tasks" / "t"
    folder.mkdir(parents=True)
    chainlog.commit(folder / ".state", folder / ".state.log", b"research\n", "research", "SEEDED", {})
    return tmp_path


def test_focus_needs_a_human(root: Path) -> None:
    res = cli(root, "--focus", "t")
    assert res.code == 1 and "AUTOMATON_APPROVER" in res.err
    assert not (root / ".automaton" / "focus").exists()
    assert read_focus(Project(root)) is None


def test_focus_from_a_terminal_is_logged(root: Path) -> None:
    assert cli(root, "--focus", "t", tty=True).code == 0
    assert read_focus(Project(root)) == TaskRef.parse("t")


def test_focus_set_and_clear_are_logged(root: Path, approver: str) -> None:
    res = cli(root, "--focus", "t", "--json")
    assert res.code == 0 and res.json == {"focus": "t", "by": approver}
    assert (root / ".automaton" / "focus").read_text() == "t\n"
    assert read_focus(Project(root)) == TaskRef.parse("t")
    assert cli(root, "--focus", "--clear").code == 0
    assert read_focus(Project(root)) is None
    check = verify_text((root / ".automaton" / "focus.log").read_text(), load_key(create=False))
    assert check.ok
    assert [(x.event, x.fields.get("by"), x.state) for x in check.lines] == [
        ("FOCUS", approver, "t"), ("FOCUS_CLEARED", approver, "-")]
    assert not (root / ".automaton" / "focus.tmp").exists()


@pytest.mark.parametrize("args", [("--focus",), ("--focus", "t", "--clear"), ("--focus", "nope"),
                                  ("--focus", "Bad_Name")])
def test_focus_bad_input(root: Path, approver: str, args: tuple[str, ...]) -> None:
    res = cli(root, *args)
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1


@pytest.mark.parametrize("edit", ["other", "", "deleted", "no_log"])
def test_focus_written_outside_automaton_is_detected(root: Path, approver: str, edit: str) -> None:
    assert cli(root, "--focus", "t").code == 0
    focus, log = root / ".automaton" / "focus", root / ".automaton" / "focus.log"
    if edit == "deleted":
        focus.unlink()
    elif edit == "no_log":
        log.unlink()
        focus.write_text("t\n")
    else:
        focus.write_text(f"{edit}\n")
    with pytest.raises(BadInput) as err:
        read_focus(Project(root))
    # a deleted log is older than its anchor (store/anchor.py) before it disagrees with the file
    assert ("rolled back to line 0" if edit == "no_log" else "outside automaton") in err.value.message
    res = run_cli("--can-edit", "--file", "src/x.py", "--project", str(root))
    assert res.code == 2  # a hook treats 2 as deny
    assert cli(root, "--focus", "--clear").code == 0  # the human resets it
    assert read_focus(Project(root)) is None


def test_focus_file_without_log_is_not_obeyed(tmp_path: Path) -> None:
    (tmp_path / ".automaton").mkdir()
    (tmp_path / ".automaton" / "focus").write_text("t\n")
    with pytest.raises(BadInput):
        read_focus(Project(tmp_path))


@pytest.mark.parametrize("name", ["x\ny", "a\tb", "z" * 200])
def test_approver_name_must_be_one_printable_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    from tests.helpers import run_cli

    assert run_cli("--create-task", "t", "--project", str(tmp_path)).code == 0
    monkeypatch.setenv("AUTOMATON_APPROVER", name)
    res = run_cli("--focus", "t", "--project", str(tmp_path))
    assert res.code == 2 and "AUTOMATON_APPROVER must be a printable name" in res.err
    assert not (tmp_path / ".automaton" / "focus").exists()


@pytest.mark.parametrize("marker", ["CLAUDECODE", "GEMINI_CLI", "CODEX_SANDBOX", "AUTOMATON_LOOP",
                                    "AUTOMATON_LOOP_DIR"])
def test_an_agents_shell_is_never_a_human(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, marker: str) -> None:
    from tests.helpers import run_cli

    assert run_cli("--create-task", "t", "--project", str(tmp_path)).code == 0
    monkeypatch.setenv("AUTOMATON_APPROVER", "me")  # what an agent would set
    monkeypatch.setenv(marker, "1")
    for args in (["--focus", "t"], ["--approve", "--task", "t"]):
        res = run_cli(*args, "--project", str(tmp_path), tty=True)
        assert res.code == 1 and f"({marker} is set)" in res.err
    assert not (tmp_path / ".automaton" / "focus").exists()


def test_a_child_that_drops_the_marker_is_still_an_agents(tmp_path: Path) -> None:
    """`env -u MARKER automaton …` inside the agent's shell: the shell above still carries it."""
    import os
    import subprocess
    import sys

    from tests.helpers import run_cli

    assert run_cli("--create-task", "t", "--project", str(tmp_path)).code == 0
    automaton = str(Path(sys.executable).parent / "automaton")
    line = f"env -u AUTOMATON_LOOP_DIR AUTOMATON_APPROVER=agent {automaton} --focus t --project {tmp_path}"
    # The agent (like Claude Code's node process) stays alive and runs the line in a shell;
    # bash execs the single command, so only the agent process above still shows the marker.
    agent = f"import subprocess, sys; sys.exit(subprocess.run(['bash', '-c', {line!r}]).returncode)"
    env = dict(os.environ, AUTOMATON_LOOP_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", agent], env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 1, done.stderr
    assert "AUTOMATON_LOOP_DIR in the environment of process" in done.stderr
    assert not (tmp_path / ".automaton" / "focus").exists()


def test_agent_ancestor_without_proc_is_not_a_human(tmp_path: Path) -> None:
    """Fail closed: a process table that cannot be read is no proof that no agent started us."""
    from automaton.commands.human import agent_ancestor

    assert "cannot be read" in (agent_ancestor(proc=str(tmp_path / "no-proc")) or "")


@pytest.mark.parametrize("name", ["focus", "focus.log"])
def test_a_directory_where_the_focus_file_belongs_is_named(root: Path, approver: str, name: str) -> None:
    path = root / ".automaton" / name
    path.mkdir(parents=True)
    res = cli(root, "--focus", "t")
    assert res.code == 2, (res.code, res.err)
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and str(path) + ":" in lines[0] and "focus.tmp" not in lines[0]


def _focus_lines(root: Path, *tokens: str) -> str:
    """focus.log lines for `tokens`, unkeyed, with a correct SHA-256 chain."""
    from automaton.core.chain import GENESIS, format_line, line_hash

    prev, text = GENESIS, ""
    for token in tokens:
        line = format_line("2026-01-01T00:00:00Z", "FOCUS", {"task": token, "by": "x"}, token, prev)
        text, prev = text + line + "\n", line_hash(line)
    return text


def test_a_forged_focus_line_without_the_key_is_detected(root: Path, approver: str) -> None:
    from automaton.core.chain import format_line, line_hash

    (root / "tasks" / "other").mkdir()
    assert cli(root, "--focus", "t").code == 0
    focus, log = root / ".automaton" / "focus", root / ".automaton" / "focus.log"
    text = log.read_text()
    forged = format_line("2026-01-01T00:00:00Z", "FOCUS", {"task": "other", "by": approver}, "other",
                         line_hash(text.splitlines()[-1]))
    log.write_text(text + forged + "\n")
    focus.write_text("other\n")
    with pytest.raises(BadInput, match="line 2 has no mac"):
        read_focus(Project(root))
    assert run_cli("--can-edit", "--file", "tasks/other/SPEC.md", "--project", str(root)).code == 2
    res = cli(root, "--audit", "--json")
    assert res.code == 1 and any("TAMPERED" in v and "focus.log" in v for v in res.json["project"])
    assert cli(root, "--focus", "t").code == 0  # the human's reset starts a keyed chain
    assert read_focus(Project(root)) == TaskRef.parse("t") and (log.parent / "focus.log.broken").is_file()


def test_a_keyed_focus_log_rewritten_without_the_key_is_refused(root: Path, approver: str) -> None:
    (root / "tasks" / "other").mkdir()
    assert cli(root, "--focus", "t").code == 0
    log = root / ".automaton" / "focus.log"
    log.write_text(_focus_lines(root, "other"))
    (root / ".automaton" / "focus").write_text("other\n")
    with pytest.raises(BadInput, match="the whole log was replaced"):
        read_focus(Project(root))


def test_a_legacy_focus_log_reads_is_audited_and_the_next_focus_keys_it(root: Path, approver: str) -> None:
    (root / ".automaton").mkdir()
    log = root / ".automaton" / "focus.log"
    log.write_text(_focus_lines(root, "t"))
    (root / ".automaton" / "focus").write_text("t\n")
    assert read_focus(Project(root)) == TaskRef.parse("t")
    res = cli(root, "--audit", "--json")
    (finding,) = res.json["project"]
    assert res.code == 1 and finding.startswith("UNKEYED (legacy)") and "--focus TASK" in finding
    assert cli(root, "--focus", "t").code == 0
    check = chainlog.read_chain(log)
    assert check.ok and [bool(x.mac) for x in check.lines] == [False, True]
    assert cli(root, "--audit", "--json").json["project"] == []


def _referee_pass(root: Path, name: str = "r") -> None:
    from tests.helpers import seed_task

    seed_task(root, name, "referee", {"SPEC.md": "s\n", "IMPLEMENTATION.md": "i\n", "VERDICT.md": "Verdict: PASS\n"})


def test_completing_the_focused_task_clears_and_logs_the_focus(root: Path, approver: str) -> None:
    _referee_pass(root)
    assert cli(root, "--focus", "r").code == 0
    res = cli(root, "--task", "r", "--transition", "complete")
    assert res.code == 0, res.err
    assert "focus cleared: r is complete" in res.out and "automaton --focus TASK" in res.out
    assert read_focus(Project(root)) is None
    check = verify_text((root / ".automaton" / "focus.log").read_text(), load_key(create=False))
    assert check.ok
    last = check.lines[-1]
    assert (last.event, last.state, last.fields.get("by"), last.fields.get("completed")) == (
        "FOCUS_CLEARED", "-", "automaton", "r")


def test_completing_another_task_leaves_the_focus(root: Path, approver: str) -> None:
    _referee_pass(root)
    assert cli(root, "--focus", "t").code == 0
    res = cli(root, "--task", "r", "--transition", "complete")
    assert res.code == 0 and "focus cleared" not in res.out
    assert read_focus(Project(root)) == TaskRef.parse("t")


def test_completing_with_no_focus_writes_no_focus_log(root: Path) -> None:
    _referee_pass(root)
    assert cli(root, "--task", "r", "--transition", "complete").code == 0
    assert not (root / ".automaton" / "focus.log").exists()


def test_a_human_completion_from_human_intervention_clears_the_focus(root: Path, approver: str) -> None:
    from tests.helpers import seed_task

    seed_task(root, "h", "human_intervention", {"SPEC.md": "s\n"})
    assert cli(root, "--focus", "h").code == 0
    res = cli(root, "--approve", "--task", "h", "--to", "complete")
    assert res.code == 0, res.err
    assert read_focus(Project(root)) is None and "focus cleared" in res.out
