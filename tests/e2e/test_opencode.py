"""The real OpenCode CLI (pinned in clis.lock.json) against a scripted Chat Completions server.

OpenCode reaches a local model through a custom provider in `~/.config/opencode/opencode.json`
(`provider.<id>` with `npm: "@ai-sdk/openai-compatible"`, `options.baseURL`, and per-model
`cost` in USD per million tokens, from which it prices each step). It fetches that npm package
at run time into its cache (a tick's cache is private and empty: each run needs the registry).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from automaton.runner.tick import tick
from automaton.store import loops as store
from tests.e2e.install import pinned
from tests.e2e.loopkit import VERIFY, committed_tick, record
from tests.e2e.servers.openai_chat import USAGE, ChatServer, out_of_credits, rate_limited
from tests.runner.loopkit import make_loop

PRICE_IN, PRICE_OUT = 1.0, 10.0  # USD per million tokens, in the provider's config


def opencode_loop(project: Path, timeout_s: int = 240) -> Any:
    return make_loop(project, roles=VERIFY, harness={"name": "opencode", "model": "scripted/m1", "args": [],
                                                     "timeout_s": timeout_s})


@pytest.fixture
def scripted(installed: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[
        Callable[[list[dict[str, Any]]], ChatServer]]:
    exe = installed("opencode")
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    servers: list[ChatServer] = []

    def start(steps: list[dict[str, Any]]) -> ChatServer:
        srv = ChatServer(steps).__enter__()
        servers.append(srv)
        config = Path(os.environ["HOME"]) / ".config" / "opencode" / "opencode.json"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(json.dumps({
            "$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
            "provider": {"scripted": {"npm": "@ai-sdk/openai-compatible", "name": "Scripted",
                                      "options": {"baseURL": f"{srv.url}/v1", "apiKey": "test-key"},
                                      "models": {"m1": {"name": "M1", "cost": {"input": PRICE_IN,
                                                                               "output": PRICE_OUT}}}}}}))
        return srv

    yield start
    for srv in servers:
        srv.__exit__(None, None, None)


def test_a_sandboxed_opencode_tick_commits_its_work_and_charges_its_step_costs(project: Path, scripted: Any,
                                                                                monkeypatch: pytest.MonkeyPatch
                                                                                ) -> None:
    monkeypatch.setenv("PWD", str(project.parent))  # the runner's own folder: never where opencode works
    outside = Path(os.environ["HOME"]) / "outside.txt"
    srv = scripted([{"calls": [{"name": "write", "arguments": {"filePath": "src/app.py", "content": "x = 1\n"}}]},
                    {"calls": [{"name": "bash", "arguments": {"command": f"echo no > {outside} || echo denied",
                                                              "description": "try outside"}}]},
                    {"text": "Done: src/app.py written."}])
    proj = make_loop(project, roles=VERIFY, harness={"name": "opencode", "model": "scripted/m1", "args": [],
                                                     "timeout_s": 240})
    out, _, log = committed_tick(proj, "opencode", "tick.jsonl")
    events = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    steps = [e for e in events if e["type"] == "step_finish"]
    assert len(steps) == 3
    per_step = (USAGE["prompt_tokens"] * PRICE_IN + USAGE["completion_tokens"] * PRICE_OUT) / 1e6
    assert out.data["cost_known"] is True and out.data["cost_usd"] == pytest.approx(3 * per_step)
    assert store.read_state(proj, "demo").spent_usd == pytest.approx(3 * per_step)
    bash = [e["part"] for e in events if e["type"] == "tool_use" and e["part"]["tool"] == "bash"]
    assert bash and "denied" in bash[0]["state"]["output"] and not outside.exists()
    assert not (project.parent / "src").exists()  # PWD pointed nowhere near the worktree's edits
    assert len(list(srv.scripted_requests())) == 3


def test_automaton_sandbox_opencode_writes_in_scope_only_and_keeps_its_state(project: Path, scripted: Any) -> None:
    """opencode 1.18.33 must create ~/.cache/opencode and write its configuration folder to
    start: the session gives it private ones (`sandbox.private_home`); its sessions database
    stays in the granted ~/.local/share/opencode."""
    from tests.helpers import git, run_exe

    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("x = 1\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "src")
    home = Path(os.environ["HOME"])
    outside = home / "outside.txt"
    scripted([{"calls": [{"name": "write", "arguments": {"filePath": "src/new.py", "content": "y = 2\n"}}]},
              {"calls": [{"name": "bash", "arguments": {"command": f"echo no > {outside} || echo denied",
                                                        "description": "try outside"}}]},
              {"text": "Done."}])
    done = run_exe("automaton", "--sandbox", "--", "opencode", "run", "--format", "json", "-m", "scripted/m1",
                   "write src/new.py", cwd=project, env=dict(os.environ, PWD=str(project)), timeout=240)
    record("opencode", "session.jsonl", done.stdout)
    assert done.returncode == 0, done.stderr[-3000:]
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [e["part"]["text"] for e in events if e["type"] == "text"] == ["Done."]
    assert (project / "src" / "new.py").read_text() == "y = 2\n"  # in scope: written
    bash = [e["part"]["state"]["output"] for e in events if e["type"] == "tool_use" and e["part"]["tool"] == "bash"]
    assert bash and "Read-only file system" in bash[0] and "denied" in bash[0] and not outside.exists()
    config = home / ".config" / "opencode"
    assert sorted(p.name for p in config.iterdir()) == ["opencode.json"]  # its .gitignore went to the copy
    assert not (home / ".cache").exists()
    assert (home / ".local" / "share" / "opencode" / "opencode.db").exists()  # its own state


def test_a_provider_refusal_opencode_does_not_retry_defers_the_tick_at_no_cost(project: Path,
                                                                              scripted: Any) -> None:
    """opencode 1.18.33 ends a run on an answer it does not retry (402: credits used up) with
    one `error` event {name: APIError, data: {statusCode, responseBody, …}} and exit 1."""
    scripted([{**out_of_credits(), "repeat": True}])
    proj = opencode_loop(project)
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["iteration_counted"] is False, out.lines
    run = Path(out.data["run_dir"])
    record("opencode", "out-of-credits.jsonl", (run / "implement.log").read_text())
    deferred = out.data["deferred"]
    assert deferred["harness"] == "opencode" and deferred["source"] == "backoff", deferred
    assert "Insufficient credits" in deferred["message"], deferred
    assert out.data["agent_version"] == pinned()["opencode"].version
    assert (out.data["cost_usd"], out.data["cost_known"]) == (0.0, True)  # refused before any model work
    state = store.read_state(proj, "demo")
    assert state.iteration_count == 0 and state.spent_usd == 0.0


def test_a_429_that_opencode_retries_past_is_a_normal_charged_tick(project: Path, scripted: Any) -> None:
    scripted([rate_limited(),
              {"calls": [{"name": "write", "arguments": {"filePath": "src/app.py", "content": "x = 1\n"}}]},
              {"text": "Done."}])
    proj = opencode_loop(project)
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and "deferred" not in out.data, out.lines
    record("opencode", "retried-429.jsonl", (Path(out.data["run_dir"]) / "implement.log").read_text())
    assert out.data["halt"] is None and out.data["commit"] and out.data["cost_known"] is True
    per_step = (USAGE["prompt_tokens"] * PRICE_IN + USAGE["completion_tokens"] * PRICE_OUT) / 1e6
    assert out.data["cost_usd"] == pytest.approx(2 * per_step)


def test_a_429_storm_runs_to_the_timeout_and_is_charged_max_tick_usd(project: Path, scripted: Any) -> None:
    """opencode 1.18.33 retries a 429 without end and prints nothing: nothing tells the adapter
    it is a limit, so the run ends at harness.timeout_s, its cost unknown."""
    srv = scripted([{**rate_limited(), "repeat": True}])
    proj = opencode_loop(project, timeout_s=20)
    out = tick(proj, "demo")
    assert out.data is not None, out.lines
    assert (Path(out.data["run_dir"]) / "implement.log").read_text() == ""
    assert len(list(srv.scripted_requests())) >= 2  # it did retry
    assert "deferred" not in out.data and out.data["implement"]["timed_out"] is True, out.data
    assert (out.data["cost_usd"], out.data["cost_known"]) == (1.0, False)  # max_tick_usd
    assert store.read_state(proj, "demo").spent_usd == 1.0


def test_opencode_that_cannot_write_its_cache_is_unavailable(scripted: Any, tmp_path: Path) -> None:
    """The real failure: inside the kernel sandbox with its folders read-only, opencode 1.18.33
    exits 1 with nothing on stdout ("EROFS: read-only file system, mkdir '~/.local'", recorded);
    the adapter (`silent`) calls that `unavailable`."""
    from automaton.core.sandbox import Policy
    from automaton.harnesses import HarnessRequest, get

    scripted([{"text": "Done."}])
    exe = Path(shutil.which("opencode") or "opencode")
    work, run, ro, tmp = tmp_path / "work", tmp_path / "run", tmp_path / "ro", tmp_path / "tmp"
    for folder in (work, ro, tmp):
        folder.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    home = Path(os.environ["HOME"])
    policy = Policy((work, run, tmp, home / ".local" / "share" / "opencode", home / ".config" / "opencode"),
                    tmpdir=tmp, label="e2e opencode", visible=(ro, home, exe.parent.parent.parent))
    req = HarnessRequest(role="implement", prompt="hi", cwd=work, timeout_s=60, run_dir=run, model="scripted/m1",
                         args=(), env={"XDG_CACHE_HOME": str(ro / "cache")}, sandbox=policy)
    res = get("opencode").run(req)
    record("opencode", "cannot-start.stderr", (run / "implement.stderr.log").read_text())
    assert res.exit_status == 1 and res.unavailable is not None, res
    assert res.unavailable.startswith("opencode exited 1 before printing any output of its own"), res.unavailable
    assert (run / "implement.log").read_text() == ""


def test_the_installed_plugin_sends_the_real_calls_to_the_hook_and_opencode_obeys_its_answers(
        project: Path, scripted: Any) -> None:
    """`--install-hooks opencode` writes `.opencode/plugin/automaton.js`; opencode 1.18.33
    loads it from the project and runs its `tool.execute.before` before each call. Run without
    a human's sign-off, so no `"sessions": "sandboxed"` seal (this session runs unconfined)."""
    from automaton.hooks.install import OPENCODE_PLUGIN
    from tests.helpers import git, run_cli

    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("x = 1\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "src")
    os.environ.pop("AUTOMATON_APPROVER", None)
    done = run_cli("--install-hooks", "opencode", cwd=project, human=False)
    assert done.code == 0, done.err
    plugin = project / OPENCODE_PLUGIN
    payloads = project.parent / "payloads.jsonl"
    text = plugin.read_text()
    line = next(x for x in text.splitlines() if x.startswith("const COMMAND = "))
    command = json.loads(line.removeprefix("const COMMAND = ").removesuffix(";"))
    plugin.write_text(text.replace(line, f"const COMMAND = {json.dumps(f'tee -a {payloads} | {command}')};"))
    evil = project / ".opencode" / "plugin" / "evil.js"
    srv = scripted([{"calls": [{"name": "write", "arguments": {"filePath": "src/b.py", "content": "y = 2\n"}}]},
                    {"calls": [{"name": "write", "arguments": {"filePath": ".opencode/plugin/evil.js",
                                                               "content": "export const X = 1;\n"}}]},
                    {"calls": [{"name": "bash", "arguments": {"command": "echo '{}' > opencode.json",
                                                              "description": "config"}}]},
                    {"calls": [{"name": "bash", "arguments": {"command": "echo z > c.txt", "workdir": "src",
                                                              "description": "allowed"}}]},
                    {"text": "Done."}])
    proc = subprocess.run(["opencode", "run", "--format", "json", "-m", "scripted/m1", "go"], cwd=project,
                          capture_output=True, text=True, timeout=240, env=dict(os.environ, PWD=str(project)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (project / "src" / "b.py").read_text() == "y = 2\n"  # allowed: written
    assert (project / "src" / "c.txt").read_text() == "z\n"  # allowed shell call: ran
    assert not evil.exists() and not (project / "opencode.json").exists()  # denied: never written
    events = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    states = [e["part"]["state"] for e in events if e["type"] == "tool_use"]
    assert [s["status"] for s in states] == ["completed", "error", "error", "completed"], states
    for denied in states[1:3]:
        assert "automaton denied this tool call" in denied["error"], denied
        assert "agent hook configuration is changed only by a human" in denied["error"], denied
    seen = [json.loads(x) for x in payloads.read_text().replace("}{", "}\n{").splitlines()]
    assert [p["tool_name"] for p in seen] == ["write", "write", "bash", "bash"]
    assert seen[0]["tool_input"] == {"filePath": "src/b.py", "content": "y = 2\n"}
    assert seen[0]["cwd"] == str(project) and seen[0]["hook_event_name"] == "tool.execute.before"
    assert seen[3]["tool_input"]["workdir"] == "src"
    assert len(list(srv.scripted_requests())) == 5
    record("opencode", "tool-execute-before.json", json.dumps(seen[0], indent=2) + "\n")
    record("opencode", "tool-execute-before-bash.json", json.dumps(seen[3], indent=2) + "\n")


def test_a_sandboxed_session_runs_the_installed_plugin_under_the_sealed_sessions_rule(project: Path,
                                                                                       scripted: Any) -> None:
    """A human's `--install-hooks opencode` also seals `"sessions": "sandboxed"` (where this
    machine has the sandbox): inside `automaton --sandbox -- opencode` the plugin's hook allows
    an in-scope write and denies one into `.opencode/`, which the kernel grants to nobody either.
    OpenCode's own first-run writes into `.opencode/` (package.json, node_modules) are refused by
    the kernel there; it starts anyway."""
    from tests.helpers import git, run_cli, run_exe

    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("x = 1\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "src")
    done = run_cli("--install-hooks", "opencode", cwd=project, human=True)
    assert done.code == 0, done.err
    if '"sandboxed"' not in done.out:
        pytest.skip(f"no kernel sandbox here: {done.out}")
    scripted([{"calls": [{"name": "write", "arguments": {"filePath": "src/new.py", "content": "y = 2\n"}}]},
              {"calls": [{"name": "write", "arguments": {"filePath": ".opencode/plugin/evil.js",
                                                         "content": "export const X = 1;\n"}}]},
              {"text": "Done."}])
    session = run_exe("automaton", "--sandbox", "--", "opencode", "run", "--format", "json", "-m", "scripted/m1",
                      "go", cwd=project, env=dict(os.environ, PWD=str(project)), timeout=240)
    assert session.returncode == 0, session.stderr[-3000:]
    assert (project / "src" / "new.py").read_text() == "y = 2\n"
    assert not (project / ".opencode" / "plugin" / "evil.js").exists()
    events = [json.loads(x) for x in session.stdout.splitlines() if x.startswith("{")]
    states = [e["part"]["state"] for e in events if e["type"] == "tool_use"]
    assert [s["status"] for s in states] == ["completed", "error"], states
    assert "agent hook configuration is changed only by a human" in states[1]["error"], states
    scripted([{"calls": [{"name": "write", "arguments": {"filePath": "src/late.py", "content": "z = 3\n"}}]},
              {"text": "Done."}])
    unconfined = subprocess.run(["opencode", "run", "--format", "json", "-m", "scripted/m1", "go"], cwd=project,
                                capture_output=True, text=True, timeout=240, env=dict(os.environ, PWD=str(project)))
    errors = [e["part"]["state"].get("error", "") for e in
              (json.loads(x) for x in unconfined.stdout.splitlines() if x.startswith("{")) if e["type"] == "tool_use"]
    assert errors and all("outside automaton's sandbox" in e for e in errors), unconfined.stdout[-3000:]
    assert not (project / "src" / "late.py").exists()
