"""The real Gemini CLI (pinned in clis.lock.json) against a scripted Gemini API server.

Gemini CLI takes the server from `GOOGLE_GEMINI_BASE_URL`, with any `GEMINI_API_KEY` and
`security.auth.selectedType = "gemini-api-key"` in `~/.gemini/settings.json` (alone, the base
URL selects a "gateway" auth that `-p` refuses: "Invalid auth method selected.", exit 41).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from automaton.runner.tick import tick
from automaton.store import loops as store
from tests.e2e.install import pinned
from tests.e2e.loopkit import VERIFY, committed_tick, record
from tests.e2e.servers.gemini import GeminiServer, quota_exceeded, rate_limited
from tests.runner.loopkit import make_loop


@pytest.fixture
def gemini_bin(installed: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    exe = installed("gemini")
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    settings = Path(os.environ["HOME"]) / ".gemini" / "settings.json"
    settings.parent.mkdir(exist_ok=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    return exe


@pytest.fixture
def scripted(gemini_bin: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[list[dict[str, Any]]],
                                                                                     GeminiServer]]:
    servers: list[GeminiServer] = []

    def start(steps: list[dict[str, Any]]) -> GeminiServer:
        srv = GeminiServer(steps).__enter__()
        servers.append(srv)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", srv.url)
        return srv

    yield start
    for srv in servers:
        srv.__exit__(None, None, None)


def gemini_loop(project: Path) -> Any:
    return make_loop(project, roles=VERIFY, harness={"name": "gemini", "model": None, "args": [], "timeout_s": 150})


def test_a_sandboxed_gemini_tick_commits_its_work_and_counts_its_tokens(project: Path, scripted: Any) -> None:
    srv = scripted([{"calls": [{"name": "write_file", "args": {"file_path": "src/app.py", "content": "x = 1\n"}}]},
                    {"text": "Done: src/app.py written."}])
    proj = gemini_loop(project)
    out, _, log = committed_tick(proj, "gemini", "tick.json")
    result = json.loads(log)
    assert result["response"] == "Done: src/app.py written."
    # Gemini prints tokens, no cost: the tick counts max_tick_usd (harnesses.gemini)
    assert out.data["cost_known"] is False and out.data["cost_usd"] == 1.0
    assert store.read_state(proj, "demo").spent_usd == 1.0
    calls = list(srv.scripted_requests())
    assert calls and calls[0].headers["x-goog-api-key"] == "test-key"
    assert any(p.get("functionResponse", {}).get("name") == "write_file"
               for c in calls[1:] for msg in c.body["contents"] for p in msg.get("parts", []))


def test_a_daily_quota_defers_the_tick(project: Path, scripted: Any) -> None:
    scripted([{**quota_exceeded(30), "repeat": True}])  # every retry refused too
    proj = gemini_loop(project)
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["iteration_counted"] is False, out.lines
    assert out.data["agent_version"] == pinned()["gemini"].version  # a deferred tick records it too
    run = Path(out.data["run_dir"])
    record("gemini", "quota.stderr", (run / "implement.stderr.log").read_text())
    deferred = out.data["deferred"]
    assert deferred["harness"] == "gemini" and deferred["source"] == "backoff", deferred
    assert "exhausted your daily quota" in deferred["message"], deferred
    assert (run / "implement.log").read_text() == ""  # 0.61.0 writes the JSON error to stderr, exit 173
    assert store.read_state(proj, "demo").iteration_count == 0


def test_without_skip_trust_gemini_refuses_a_new_folder(gemini_bin: Path, tmp_path: Path) -> None:
    """Why the adapter passes --skip-trust: the real refusal, matched by the adapter's Refusal."""
    from automaton.harnesses import gemini

    work = tmp_path / "fresh"
    work.mkdir()
    done = subprocess.run(["gemini", "-o", "json", "-p", "hi"], cwd=work, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:9"))
    record("gemini", "untrusted.stderr", done.stderr)
    assert done.returncode == 55 and done.stdout == "", done.stderr
    assert any(n in done.stderr for r in gemini.REFUSALS for n in r.needles), done.stderr


def test_the_installed_hook_sees_the_real_payload_and_gemini_obeys_its_answers(project: Path,
                                                                               scripted: Any) -> None:
    """`--install-hooks gemini` run without a human's sign-off (so no `"sessions": "sandboxed"`
    seal: a sandboxed Gemini session cannot start, see the README's table). Project hooks load
    only in a trusted folder, and with 0.61.0 `GEMINI_CLI_TRUST_WORKSPACE=true` makes it one
    for hooks while `--skip-trust` does not (it sets that variable after the settings are read:
    "Hook registry initialized with 0 hook entries")."""
    from tests.helpers import git, run_cli

    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("x = 1\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "src")
    os.environ.pop("AUTOMATON_APPROVER", None)
    done = run_cli("--install-hooks", "gemini", cwd=project, human=False)
    assert done.code == 0, done.err
    settings = project / ".gemini" / "settings.json"
    installed = json.loads(settings.read_text())
    payloads = project.parent / "payloads.jsonl"
    hook = installed["hooks"]["BeforeTool"][0]["hooks"][0]
    hook["command"] = f"tee -a {payloads} | {hook['command']}"
    settings.write_text(json.dumps(installed))
    before = settings.read_text()
    srv = scripted([{"calls": [{"name": "write_file", "args": {"file_path": "src/b.py", "content": "y = 2\n"}}]},
                    {"calls": [{"name": "write_file", "args": {"file_path": ".gemini/settings.json",
                                                               "content": "{}"}}]},
                    {"text": "Done."}])
    proc = subprocess.run(["gemini", "-o", "json", "--approval-mode", "auto_edit", "-p", "go"], cwd=project,
                          capture_output=True, text=True, timeout=150,
                          env=dict(os.environ, GEMINI_CLI_TRUST_WORKSPACE="true", PWD=str(project)))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (project / "src" / "b.py").read_text() == "y = 2\n"  # allowed: written
    assert settings.read_text() == before  # denied: never written
    answers = [p["functionResponse"] for c in list(srv.scripted_requests())[1:] for m in c.body["contents"]
               for p in m.get("parts", []) if "functionResponse" in p]
    denial = json.dumps(answers[-1])
    assert "agent hook configuration is changed only by a human" in denial, answers
    seen = [json.loads(line) for line in payloads.read_text().replace("}{", "}\n{").splitlines()]
    assert [p["tool_input"]["file_path"] for p in seen] == ["src/b.py", ".gemini/settings.json"]
    assert seen[0]["tool_name"] == "write_file" and seen[0]["hook_event_name"] == "BeforeTool"
    record("gemini", "beforetool.json", json.dumps(seen[0], indent=2) + "\n")



def test_automaton_sandbox_gemini_writes_in_scope_only_and_keeps_its_state(project: Path, scripted: Any) -> None:
    """gemini-cli 0.61.0 must create files in its home folder to start (`projects.json`):
    the session gives it a private copy (`sandbox.private_home`), its chats still in ~/.gemini/tmp."""
    from tests.helpers import git, run_exe

    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("x = 1\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "src")
    home = Path(os.environ["HOME"])
    outside = home / "outside.txt"
    srv = scripted([{"calls": [{"name": "write_file", "args": {"file_path": "src/new.py", "content": "y = 2\n"}}]},
                    {"calls": [{"name": "run_shell_command",
                                "args": {"command": f"echo no > {outside} || echo denied"}}]},
              {"text": "Done."}])
    settings = (home / ".gemini" / "settings.json").read_text()
    done = run_exe("automaton", "--sandbox", "--", "gemini", "-o", "json", "--skip-trust", "--approval-mode", "yolo",
                   "-p", "write src/new.py", cwd=project, env=dict(os.environ, PWD=str(project)), timeout=150)
    record("gemini", "session-stderr.txt", done.stderr)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["response"] == "Done."
    assert (project / "src" / "new.py").read_text() == "y = 2\n"  # in scope: written
    assert not outside.exists()  # out of scope: the kernel refused it
    answers = [p["functionResponse"] for c in list(srv.scripted_requests())[1:] for m in c.body["contents"]
               for p in m.get("parts", []) if "functionResponse" in p]
    shell = json.dumps(answers[-1])
    assert "denied" in shell and ("Read-only file system" in shell or "Permission denied" in shell), answers
    assert (home / ".gemini" / "settings.json").read_text() == settings
    assert not (home / ".gemini" / "projects.json").exists()  # registered in the private copy only
    assert list((home / ".gemini" / "tmp").rglob("chats/session-*.jsonl"))  # its chat, in the granted folder



def test_a_per_minute_rate_limit_storm_defers_the_tick_until_the_retry_it_names(project: Path,
                                                                               scripted: Any) -> None:
    """gemini-cli 0.61.0 retries a 429 with RetryInfo three times, then exits 173 with
    {"error": {"message": "… Suggested retry after 1s.", "code": 429}} on stderr. Gemini prints
    no cost and the same error whether or not the model worked before: max_tick_usd is counted."""
    srv = scripted([{**rate_limited(1), "repeat": True}])
    proj = gemini_loop(project)
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["iteration_counted"] is False, out.lines
    run = Path(out.data["run_dir"])
    record("gemini", "rate-limit.stderr", (run / "implement.stderr.log").read_text())
    assert len(list(srv.scripted_requests())) == 3  # its own retries
    deferred = out.data["deferred"]
    assert deferred["harness"] == "gemini" and deferred["source"] == "reported", deferred
    assert "exceeded your current quota" in deferred["message"], deferred
    assert out.data["verdict"] is None and out.data["commit"] is None
    assert (out.data["cost_usd"], out.data["cost_known"]) == (1.0, False)
    state = store.read_state(proj, "demo")
    assert state.iteration_count == 0 and state.spent_usd == 1.0


def test_a_rate_limit_after_gemini_worked_is_an_ordinary_counted_tick(project: Path, scripted: Any) -> None:
    """The limit came after an edit: the tick is verified, committed and counted (runner.deferral)."""
    scripted([{"calls": [{"name": "write_file", "args": {"file_path": "src/app.py", "content": "x = 1\n"}}]},
              {**rate_limited(1), "repeat": True}])
    proj = gemini_loop(project)
    out = tick(proj, "demo")
    assert out.data is not None and "deferred" not in out.data, out.lines
    assert out.data["implement"]["exit_status"] == 173 and out.data["commit"] and out.data["halt"] is None
    assert out.data["verdict"]["score"] == 1.0 and (out.data["cost_usd"], out.data["cost_known"]) == (1.0, False)
    assert store.read_state(proj, "demo").iteration_count == 1


def test_gemini_that_cannot_write_its_home_is_unavailable(gemini_bin: Path, tmp_path: Path) -> None:
    """The real failure: inside the kernel sandbox with its home read-only, gemini-cli 0.61.0
    exits 1 before any model call ("An unexpected critical error occurred:Error: EROFS …
    projects.json…"); the adapter's refusal calls that `unavailable` (a tick halts
    harness_unavailable, never verifies)."""
    from automaton.core.sandbox import Policy
    from automaton.harnesses import HarnessRequest, get

    work, run, ro_home, tmp = tmp_path / "work", tmp_path / "run", tmp_path / "gemini-home", tmp_path / "tmp"
    for folder in (work, ro_home / ".gemini", tmp):
        folder.mkdir(parents=True)
    (ro_home / ".gemini" / "settings.json").write_text(json.dumps({"security": {"auth": {
        "selectedType": "gemini-api-key"}}}))
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    policy = Policy((work, run, tmp), tmpdir=tmp, label="e2e gemini",
                    visible=(ro_home, Path(os.environ["HOME"]), gemini_bin.parent.parent.parent))
    req = HarnessRequest(role="implement", prompt="hi", cwd=work, timeout_s=60, run_dir=run, model=None,
                         args=(), env={"GEMINI_CLI_HOME": str(ro_home), "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9"},
                         sandbox=policy)
    res = get("gemini").run(req)
    record("gemini", "cannot-start.stderr", (run / "implement.stderr.log").read_text())
    assert res.exit_status == 1 and res.unavailable is not None, res
    assert res.unavailable.startswith("gemini crashed before it could run the task (An unexpected critical error"
                                      " occurred:Error: EROFS"), res.unavailable
