"""`--install-hooks AGENT` records `"sessions"` in the sealed `.automaton/config.json` (a human
act), and `--doctor`, `--audit` and the dashboard's task board say how sessions are held,
labelling hooks-only "best effort"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from automaton.commands.config_seal import record_sessions
from automaton.dashboard.board import task_board
from automaton.sandbox import available
from automaton.store import project_config as pc
from automaton.store.layout import Project
from tests.helpers import run_cli

SANDBOX = available().ok and available().isolated


def config(project: Path) -> dict[str, object]:
    return json.loads((project / ".automaton" / "config.json").read_text())


@pytest.mark.skipif(not SANDBOX, reason="needs the kernel sandbox with namespaces")
def test_install_hooks_records_sandboxed_and_seals_it(project: Path, approver: str) -> None:
    done = run_cli("--install-hooks", "claude", cwd=project)
    assert done.code == 0, done.err
    assert config(project) == {"schema_version": 1, "sessions": "sandboxed"}
    assert pc.read_seal(Project(project)).ok  # sealed: every hook call reads it
    assert 'sessions: "sandboxed" recorded in .automaton/config.json and sealed (approved by tester)' in done.out
    (project / ".claude" / "settings.json").unlink()
    assert run_cli("--install-hooks", "claude", "--json", cwd=project).json["sessions"]["sessions"] == "sandboxed"
    log = (project / ".automaton" / "config.log").read_text()
    assert "CONFIG_APPROVED by=tester via=install_hooks" in log
    again = run_cli("--install-hooks", "codex", cwd=project)  # kept: a human chose it
    assert 'sessions: "sandboxed" (kept: sealed in .automaton/config.json)' in again.out
    assert log == (project / ".automaton" / "config.log").read_text()


def test_install_hooks_records_hooks_only_where_no_sandbox(project: Path, approver: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOMATON_SANDBOX_UNAVAILABLE", "1")
    done = run_cli("--install-hooks", "gemini", cwd=project)
    assert done.code == 0, done.err
    assert config(project)["sessions"] == "hooks-only"
    assert "no kernel sandbox for sessions here (AUTOMATON_SANDBOX_UNAVAILABLE is set" in done.out
    assert "best effort" in done.out


def test_install_hooks_keeps_the_other_keys_of_a_sealed_config(project: Path, approver: str) -> None:
    (project / ".automaton").mkdir()
    (project / ".automaton" / "config.json").write_text('{"schema_version": 1, "isolation": "landlock-only"}\n')
    assert run_cli("--approve", "--config", "--yes", cwd=project).code == 0
    assert run_cli("--install-hooks", "claude", cwd=project).code == 0
    assert config(project)["isolation"] == "landlock-only"
    assert config(project)["sessions"] in pc.SESSION_MODES
    assert pc.read_seal(Project(project)).ok


def test_install_hooks_without_a_human_records_nothing(project: Path) -> None:
    done = run_cli("--install-hooks", "claude", cwd=project)
    assert done.code == 0, done.err  # the hook itself is installed
    assert not (project / ".automaton" / "config.json").exists()
    assert "sessions: not recorded in .automaton/config.json (--install-hooks is a human sign-off" in done.err


def test_install_hooks_never_seals_a_config_a_human_did_not(project: Path, approver: str) -> None:
    (project / ".automaton").mkdir()
    path = project / ".automaton" / "config.json"
    path.write_text('{"schema_version": 1, "scopes": {"implement": ["**"]}}\n')  # unsealed widening
    done = run_cli("--install-hooks", "claude", cwd=project)
    assert done.code == 0
    assert "sessions: not recorded" in done.err and "has no seal" in done.err
    assert path.read_text() == '{"schema_version": 1, "scopes": {"implement": ["**"]}}\n'
    assert not pc.read_seal(Project(project)).ok


def test_install_hooks_git_records_nothing(project: Path, approver: str) -> None:
    assert run_cli("--install-hooks", "git", cwd=project).code == 0
    assert not (project / ".automaton" / "config.json").exists()


def test_a_failed_seal_puts_the_old_config_back(project: Path, approver: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from automaton.core.errors import Refused

    def refuse(*args: object, **kwargs: object) -> None:
        raise Refused("changed while you reviewed it")

    monkeypatch.setattr(pc, "record_seal", refuse)
    with pytest.raises(Refused):
        record_sessions(Project(project))
    assert not (project / ".automaton" / "config.json").exists()


def _seal(project: Path, mode: str | None) -> None:
    (project / ".automaton").mkdir(exist_ok=True)
    obj = {"schema_version": 1, **({"sessions": mode} if mode else {})}
    (project / ".automaton" / "config.json").write_text(json.dumps(obj) + "\n")
    assert run_cli("--approve", "--config", "--yes", cwd=project, human=True).code == 0


@pytest.mark.parametrize(("mode", "level", "needle"), [
    ("hooks-only", "warning", '"sessions": "hooks-only" sealed'),
    (None, "warning", 'no "sessions" key'),
])
def test_doctor_labels_hooks_only_best_effort(project: Path, mode: str | None, level: str, needle: str) -> None:
    _seal(project, mode)
    done = run_cli("--doctor", "--json", cwd=project)
    found = [f for f in done.json["findings"] if f["check"] == "sessions"]
    assert len(found) == 1, done.json
    assert found[0]["level"] == level
    assert "best effort" in found[0]["message"] and needle in found[0]["message"]
    if mode is None and SANDBOX:
        assert "automaton --install-hooks claude" in found[0]["fix"]


@pytest.mark.skipif(not SANDBOX, reason="needs the kernel sandbox with namespaces")
def test_doctor_sandboxed_is_ok_and_a_problem_without_a_sandbox(project: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _seal(project, "sandboxed")
    found = [f for f in run_cli("--doctor", "--json", cwd=project).json["findings"] if f["check"] == "sessions"]
    assert found[0]["level"] == "ok" and found[0]["message"].startswith("sandboxed")
    monkeypatch.setenv("AUTOMATON_SANDBOX_UNAVAILABLE", "1")
    found = [f for f in run_cli("--doctor", "--json", cwd=project).json["findings"] if f["check"] == "sessions"]
    assert found[0]["level"] == "problem" and "every session's writing tool calls are denied" in found[0]["message"]


@pytest.mark.parametrize(("mode", "needle"), [("hooks-only", "best effort"), (None, "best effort"),
                                              ("sandboxed", "sandboxed: ")])
def test_audit_and_dashboard_say_how_sessions_are_held(project: Path, mode: str | None, needle: str) -> None:
    _seal(project, mode)
    done = run_cli("--audit", "--json", cwd=project)
    assert needle in done.json["sessions"]
    text = run_cli("--audit", cwd=project).out
    assert f"  sessions: {done.json['sessions']}" in text.splitlines()
    board = task_board([Project(project)])
    assert [s["text"] for s in board["sessions"]] == [done.json["sessions"]]
