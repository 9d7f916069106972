"""Claude Code, the real CLI (version pinned in clis.lock.json), against a scripted Anthropic
Messages server: automaton's installed hooks, `automaton --sandbox`, a loop tick with the
`claude` harness, usage limits, subagents. Each test runs the CLI a few times (about 2 s each).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from automaton.runner.tick import tick
from automaton.sandbox import available
from automaton.store import loops as store
from automaton.store.layout import Project
from tests.e2e import claudekit as ck
from tests.e2e.install import pinned
from tests.e2e.servers.anthropic import AnthropicServer
from tests.helpers import bring_task, git, run_cli

FIXTURES = Path(__file__).parent / "fixtures"


def needs_sandbox() -> None:
    if not (available().ok and available().isolated):
        pytest.skip("needs the kernel sandbox with namespaces")


@pytest.fixture
def task_project(project: Path, approver: str) -> Path:
    """`project` with `src/app.py` and task `demo` at implement (focused), committed."""
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("x = 1\n")
    bring_task(project, "demo", "implement")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "task demo")
    return project


def kernel_refused(text: str) -> bool:
    low = text.lower()
    return any(n in low for n in ("eacces", "permission denied", "erofs", "read-only file system"))


def install_hooks(project: Path) -> None:
    result = run_cli("--install-hooks", "claude", "--project", str(project), human=True)
    assert result.code == 0, result.err
    git(project, "add", "-A")
    git(project, "commit", "-qm", "hooks")


def test_installed_hooks_allow_and_deny_and_the_cli_obeys(task_project: Path, claude_bin: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """In a sandboxed session with the hooks installed: in-scope Write/Edit/Bash run; an
    out-of-scope Write, a human act in Bash and ScheduleWakeup are denied, the file stays
    unwritten, and the model receives the hook's reason as the tool result. A subagent's tool
    calls reach the hook too. The real PreToolUse payloads are recorded as a fixture."""
    needs_sandbox()
    install_hooks(task_project)
    monkeypatch.delenv("AUTOMATON_APPROVER")
    home = Path(os.environ["HOME"])
    payloads = home / ".claude" / "debug" / "payloads.jsonl"  # a state folder the sandbox grants the CLI
    (task_project / ".claude" / "settings.local.json").write_text(json.dumps(ck.recorder_settings(payloads)))
    p = task_project
    steps = [
        ck.tool_use("t_read", "Read", file_path=str(p / "src/app.py")),
        ck.tool_use("t_edit", "Edit", file_path=str(p / "src/app.py"), old_string="x = 1", new_string="x = 2"),
        ck.tool_use("t_spec", "Write", file_path=str(p / "tasks/demo/SPEC.md"), content="rewritten\n"),
        ck.tool_use("t_sh_ok", "Bash", command="echo ok > src/b.txt", description="write b"),
        ck.tool_use("t_sh_no", "Bash", command="automaton --approve --task demo", description="approve"),
        ck.tool_use("t_wake", "ScheduleWakeup", delaySeconds=60, reason="poll", prompt="<<autonomous-loop-dynamic>>"),
        ck.tool_use("t_agent", "Agent", description="write a file", prompt="[lane:sub] Write src/sub.py",
                    subagent_type="general-purpose", run_in_background=False),
        {"text": "All done."},
    ]
    subagent = [  # the subagent's own turns
        ck.tool_use("t_sub_ok", "Write", file_path=str(p / "src/sub.py"), content="y = 1\n"),
        ck.tool_use("t_sub_no", "Write", file_path=str(p / "tasks/demo/DESIGN.md"), content="x\n"),
        {"text": "Subagent done."},
    ]
    with AnthropicServer(steps, tmp_path / "requests.jsonl", lanes={"sub": subagent}) as server:
        env = ck.claude_env(server.url, claude_bin)
        debug = home / ".claude" / "debug" / "session.log"
        argv = [str(ck.VENV_BIN / "automaton"), "--sandbox", "--",
                *ck.print_argv(claude_bin, "--permission-mode", "acceptEdits", "--debug-file", str(debug))]
        out = ck.run(argv, p, env)
    assert out.code == 0, (out.stdout[-2000:], out.stderr[-2000:])
    assert out.result()["subtype"] == "success" and out.result()["result"] == "All done."
    # The settings --install-hooks wrote loaded: the CLI's debug log names no rejected entry.
    assert debug.exists() and ck.settings_errors(debug) == []
    results = ck.tool_results(server.requests)
    texts = {k: ck.result_text(v) for k, v in results.items()}
    assert (p / "src/app.py").read_text() == "x = 2\n" and not results["t_edit"].get("is_error")
    assert (p / "src/b.txt").read_text() == "ok\n" and not results["t_sh_ok"].get("is_error")
    assert (p / "src/sub.py").read_text() == "y = 1\n"
    assert (p / "tasks/demo/SPEC.md").read_text() == "# spec\n"
    assert not (p / "tasks/demo/DESIGN.md").exists()
    for denied, needle in [("t_spec", "tasks/demo/SPEC.md"), ("t_sh_no", "sign-offs and focus are human acts"),
                           ("t_wake", "ScheduleWakeup schedules a prompt"), ("t_sub_no", "tasks/demo/DESIGN.md")]:
        assert results[denied].get("is_error") is True, (denied, texts[denied])
        assert "automaton denied this tool call" in texts[denied] and needle in texts[denied], texts[denied]
    seen = [json.loads(line) for line in payloads.read_text().splitlines()]
    by_id = {s["tool_use_id"]: s for s in seen}
    assert {"t_read", "t_edit", "t_spec", "t_sh_ok", "t_wake", "t_agent", "t_sub_ok", "t_sub_no"} <= set(by_id)
    assert "agent_id" in by_id["t_sub_ok"] and "agent_id" not in by_id["t_edit"]  # the subagent's call reached it
    record_fixture("claude-pretooluse.json", {"main": by_id["t_edit"], "subagent": by_id["t_sub_ok"],
                                              "bash": by_id["t_sh_ok"]}, p, home)


def record_fixture(name: str, doc: Any, project: Path, home: Path) -> None:
    """Write a recorded real document to fixtures/ when AUTOMATON_E2E_RECORD=1, with this run's
    temporary paths replaced by placeholders (the fixture is compared for fields and shapes)."""
    if os.environ.get("AUTOMATON_E2E_RECORD") != "1":
        return
    text = json.dumps(doc, indent=2, sort_keys=True)
    text = text.replace(str(project), "/project").replace(str(home), "/home/user")
    (FIXTURES / name).write_text(text + "\n")


def test_sandboxed_session_writes_in_scope_and_gets_eacces_out_of_scope(task_project: Path, claude_bin: Path,
                                                                       tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`automaton --sandbox -- claude` without hooks: the kernel alone holds the phase scope.
    The in-scope Write lands; a Write and a shell write into the task folder fail
    with the kernel's error (EACCES or EROFS); the CLI's own state (its session transcript under
    ~/.claude/projects) is written."""
    needs_sandbox()
    monkeypatch.delenv("AUTOMATON_APPROVER")
    p = task_project
    steps = [
        ck.tool_use("t_in", "Write", file_path=str(p / "src/new.py"), content="z = 3\n"),
        ck.tool_use("t_out", "Write", file_path=str(p / "tasks/demo/SPEC.md"), content="rewritten\n"),
        ck.tool_use("t_sh_out", "Bash", command="echo x > tasks/demo/notes.txt", description="write notes"),
        {"text": "Finished."},
    ]
    with AnthropicServer(steps, tmp_path / "requests.jsonl") as server:
        argv = [str(ck.VENV_BIN / "automaton"), "--sandbox", "--",
                *ck.print_argv(claude_bin, "--permission-mode", "acceptEdits")]
        out = ck.run(argv, p, ck.claude_env(server.url, claude_bin))
    assert out.code == 0, (out.stdout[-2000:], out.stderr[-2000:])
    result = out.result()
    texts = {k: ck.result_text(v) for k, v in ck.tool_results(server.requests).items()}
    assert (p / "src/new.py").read_text() == "z = 3\n", texts["t_in"]
    assert (p / "tasks/demo/SPEC.md").read_text() == "# spec\n"
    assert not (p / "tasks/demo/notes.txt").exists()
    # The kernel's refusal: EACCES from Landlock, or EROFS where the namespace layer mounted the
    # folder read-only (it comes first).
    assert kernel_refused(texts["t_out"]), texts["t_out"]
    assert kernel_refused(texts["t_sh_out"]), texts["t_sh_out"]
    transcripts = list((Path(os.environ["HOME"]) / ".claude" / "projects").glob(f"*/{result['session_id']}.jsonl"))
    assert transcripts and transcripts[0].stat().st_size > 0


def claude_loop(project: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch, server_url: str) -> Project:
    """Loop `demo` with harness `claude` (found on PATH, as a tick finds it), verify by a summary
    line; the tick's agent gets the scripted server through the inherited environment."""
    from tests.runner.loopkit import make_loop

    for key, value in ck.claude_env(server_url, claude_bin).items():
        monkeypatch.setenv(key, value)
    return make_loop(project, harness={"name": "claude", "args": [], "timeout_s": 120},
                     roles={"implement": {"prompt": "implement.md"},
                            "verify": {"command": [sys.executable, "-c", "print('1 passed')"], "score": "summary"},
                            "orchestrate": {"builtin": True}})


def test_a_loop_tick_runs_the_real_cli_commits_and_charges_its_cost(project: Path, claude_bin: Path,
                                                                    tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A tick with the `claude` harness: the real CLI accepts the adapter's argv, its in-scope
    Write is committed, its out-of-scope Write is denied by the hook the tick passes with
    --settings, the tick charges the real `total_cost_usd`, keeps the transcript in runs/1/ and
    records the CLI's version."""
    needs_sandbox()
    worktree = project / ".automaton" / "loops" / "demo" / "worktree"
    steps = [
        ck.tool_use("t_fix", "Write", file_path=str(worktree / "src/fix.py"), content="x = 1\n"),
        ck.tool_use("t_notes", "Write", file_path=str(worktree / "NOTES.md"), content="notes\n"),
        {"text": "Fixed.", "usage": {"input_tokens": 1000, "output_tokens": 200}},
    ]
    with AnthropicServer(steps, tmp_path / "requests.jsonl") as server:
        proj = claude_loop(project, claude_bin, monkeypatch, server.url)
        out = tick(proj, "demo")
    assert out.code == 0, out.lines
    run_dir = proj.loop_dir(store.require_tracked(proj, "demo")) / "runs" / "1"
    transcript = (run_dir / "implement.log").read_text()
    real = json.loads(transcript)
    assert real["type"] == "result" and real["subtype"] == "success" and real["result"] == "Fixed."
    assert real["total_cost_usd"] > 0
    tick_json = json.loads((run_dir / "tick.json").read_text())
    assert tick_json["cost_usd"] == pytest.approx(real["total_cost_usd"]) and tick_json["cost_known"] is True
    assert tick_json["agent_version"] == pinned()["claude"].version
    assert (run_dir / "implement.prompt.md").exists()
    shown = git(worktree, "show", "--name-only", "--format=", "HEAD").split()
    assert "src/fix.py" in shown and "NOTES.md" not in shown
    texts = {k: ck.result_text(v) for k, v in ck.tool_results(server.requests).items()}
    assert "automaton denied this tool call" in texts["t_notes"] and "NOTES.md" in texts["t_notes"], texts
    # The prompt the tick wrote reached the model.
    first = next(server.scripted_requests()).body
    assert "Make the tests pass." in json.dumps(first["messages"])
    assert store.read_state(proj, "demo").status in ("running", "complete")
    record_fixture("claude-result.json", real, proj.root, Path(os.environ["HOME"]))


@pytest.mark.parametrize("error, source", [("rate_limit", "backoff"), ("spend_limit", "reported")])
@pytest.mark.parametrize("work", [True, False], ids=["after-a-write", "before-any-work"])
def test_a_usage_limit_from_the_server_defers_and_charges_what_was_spent(
        project: Path, claude_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        error: str, source: str, work: bool) -> None:
    """The model refuses: a 429 `rate_limit_error` (Claude Code prints "API Error: Request
    rejected (429) · …", `api_error_status` 429, no reset time: the runner backs off) or the
    API's spend limit (a 400 "You have reached your specified API usage limits. You will regain
    access on … UTC": deferred until then). Refused before any work, the tick is deferred and its
    iteration given back. Refused after a tool call that wrote a file, the tick changed its
    worktree: an ordinary counted, verified tick (a refusal never makes work free); the account
    still waits. Either way the cost the CLI reported is what is charged."""
    needs_sandbox()
    from automaton.store import deferrals

    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "1")  # the CLI's own retries, kept short
    reset = 1_899_999_960  # a whole minute: the message gives HH:MM
    worktree = project / ".automaton" / "loops" / "demo" / "worktree"
    refuse = {"error": error, "retry_after": 1, "reset_epoch": reset, "repeat": True}
    steps = [ck.tool_use("t_fix", "Write", file_path=str(worktree / "src/fix.py"), content="x = 1\n"), refuse]
    with AnthropicServer(steps if work else [refuse], tmp_path / "requests.jsonl") as server:
        proj = claude_loop(project, claude_bin, monkeypatch, server.url)
        out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None, out.lines
    data = out.data
    loop_dir = proj.loop_dir(store.require_tracked(proj, "demo"))
    state = store.read_state(proj, "demo")
    found = deferrals.read("claude")
    assert found is not None and found.active() and found.source == source  # the account waits
    if work:
        assert data.get("deferred") is None and data["iteration"] == 1 and data["verdict"] is not None, data
        real = json.loads((loop_dir / "runs" / "1" / "implement.log").read_text())
        assert real["is_error"] is True and real["total_cost_usd"] > 0
        assert state.iteration_count == 1
        record_fixture(f"claude-result-{error}.json", real, proj.root, Path(os.environ["HOME"]))
    else:
        assert data.get("iteration_counted") is False and data["deferred"]["source"] == source, (out.lines, data)
        [kept] = list((loop_dir / "runs").glob("1.deferred-*"))
        real = json.loads((kept / "implement.log").read_text())
        assert real["is_error"] is True
        assert state.iteration_count == 0
        deferred = json.loads((kept / "deferred.json").read_text())
        if source == "reported":
            assert deferred["reported_reset_epoch"] == reset
        else:
            assert deferred["reported_reset_epoch"] is None and "429" in deferred["message"]
    assert data["cost_usd"] == pytest.approx(real["total_cost_usd"]) and data["cost_known"] is True
    assert state.spent_usd == pytest.approx(real["total_cost_usd"])


def test_the_settings_check_sees_an_entry_the_cli_skipped(project: Path, claude_bin: Path, tmp_path: Path) -> None:
    """The check above can fail: a malformed hook entry is skipped silently in `-p` (nothing on
    stderr, exit 0), and only the debug log says so."""
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text('{"hooks": {"PreToolUse": "not a list"}}')
    debug = tmp_path / "debug.log"
    with AnthropicServer([{"text": "hi"}]) as server:
        out = ck.run(ck.print_argv(claude_bin, "--debug-file", str(debug)), project,
                     ck.claude_env(server.url, claude_bin))
    assert out.code == 0 and out.stderr == ""
    assert any("PreToolUse" in line for line in ck.settings_errors(debug)), debug.read_text()[-2000:]
