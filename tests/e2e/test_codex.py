"""The real Codex CLI (pinned in clis.lock.json) against a scripted Responses API server.

Codex takes the model from a custom provider in `$CODEX_HOME/config.toml`
(`model_providers.<id>` with `base_url`, `wire_api = "responses"`, `env_key`); a tick seeds
its private CODEX_HOME from the user's `~/.codex/config.toml` (runner.agentconfig).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from automaton.core.sandbox import Policy
from automaton.harnesses import HarnessRequest, codex, get
from automaton.runner.tick import tick
from automaton.store import loops as store
from tests.e2e.install import pinned
from tests.e2e.loopkit import VERIFY, committed_tick, record
from tests.e2e.servers.openai_responses import USAGE, ResponsesServer, rate_limited, usage_limit
from tests.runner.loopkit import make_loop


def shell(cmd: str) -> dict[str, Any]:
    """A model turn that calls Codex's shell tool (`exec_command`, codex-cli 0.171.0)."""
    return {"calls": [{"name": "exec_command", "arguments": {"cmd": cmd}}]}


@pytest.fixture
def codex_bin(installed: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    exe = installed("codex")
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SCRIPTED_API_KEY", "test-key")
    return exe


@pytest.fixture
def scripted(codex_bin: Path) -> Iterator[Callable[[list[dict[str, Any]]], ResponsesServer]]:
    """Factory: start a Responses server with `steps` and point ~/.codex/config.toml at it."""
    servers: list[ResponsesServer] = []

    def start(steps: list[dict[str, Any]]) -> ResponsesServer:
        srv = ResponsesServer(steps).__enter__()
        servers.append(srv)
        home = Path(os.environ["HOME"]) / ".codex"
        home.mkdir(exist_ok=True)
        (home / "config.toml").write_text(
            'model_provider = "scripted"\n[model_providers.scripted]\nname = "scripted"\n'
            f'base_url = "{srv.url}/v1"\nwire_api = "responses"\nenv_key = "SCRIPTED_API_KEY"\n'
            "request_max_retries = 1\nstream_max_retries = 1\n")
        return srv

    yield start
    for srv in servers:
        srv.__exit__(None, None, None)


def codex_loop(project: Path) -> Any:
    return make_loop(project, roles=VERIFY, harness={"name": "codex", "model": "gpt-5",
                                                     "args": ["--skip-git-repo-check"], "timeout_s": 120})


def test_a_sandboxed_codex_tick_commits_its_work_and_charges_its_tokens(project: Path, scripted: Any) -> None:
    outside = Path(os.environ["HOME"]) / "outside.txt"
    srv = scripted([shell(f"mkdir -p src && echo 'x = 1' > src/app.py && echo wrote;"
                          f" echo no > {outside} || echo denied"), {"text": "Done: src/app.py written."}])
    proj = codex_loop(project)
    out, _, log = committed_tick(proj, "codex", "exec-tick.jsonl")
    # codex's turn.completed sums both model calls; gpt-5 list prices (harnesses.codex.PRICES_PER_MTOK)
    inp, cached, outp = 2 * USAGE["input_tokens"], 2 * 200, 2 * USAGE["output_tokens"]
    assert out.data["cost_usd"] == pytest.approx(((inp - cached) * 1.25 + cached * 0.125 + outp * 10.0) / 1e6)
    assert store.read_state(proj, "demo").spent_usd == pytest.approx(out.data["cost_usd"])
    events = [json.loads(line) for line in log.splitlines() if line.strip()]
    assert events[0]["type"] == "thread.started" and events[-1]["type"] == "turn.completed"
    done = [e["item"] for e in events if e["type"] == "item.completed" and e["item"]["type"] == "command_execution"]
    assert done and "wrote" in done[0]["aggregated_output"] and "denied" in done[0]["aggregated_output"]
    assert not outside.exists()  # the kernel sandbox held the write outside the worktree
    calls = list(srv.scripted_requests())
    assert len(calls) == 2 and calls[0].headers["authorization"] == "Bearer test-key"
    # the whole conversation again (0.171.0, `store: false`), or only the new items with
    # previous_response_id: the tool's output is among them either way
    sent = calls[1].body["input"]
    outputs = [i for i in sent if i.get("type") == "function_call_output"]
    assert outputs and "wrote" in outputs[0]["output"]


@pytest.mark.parametrize(("step", "said", "reset_known", "fixture"), [
    (usage_limit(3600), "You’ve hit your usage limit.", True, "usage-limit.jsonl"),
    (rate_limited(), "exceeded retry limit, last status: 429 Too Many Requests", False, "rate-limit-429.jsonl"),
])
def test_a_usage_limit_or_429_storm_defers_the_tick(project: Path, scripted: Any, step: dict[str, Any],
                                                     said: str, reset_known: bool, fixture: str) -> None:
    scripted([{**step, "repeat": True}])  # the provider keeps refusing, codex's retries included
    proj = codex_loop(project)
    out = tick(proj, "demo")
    if out.data is not None and out.data.get("run_dir"):
        record("codex", fixture, (Path(out.data["run_dir"]) / "implement.log").read_text())
    assert out.code == 0 and out.data is not None and out.data["iteration_counted"] is False, out.lines
    deferred = out.data["deferred"]
    assert said in deferred["message"] and deferred["harness"] == "codex"
    assert deferred["source"] == ("reported" if reset_known else "backoff"), deferred
    if reset_known:  # codex prints the reset as a local clock time to the minute: "try again at 4:57 AM"
        until = datetime.fromisoformat(deferred["until"].replace("Z", "+00:00")).timestamp()
        assert abs(until - step["body"]["error"]["resets_at"]) <= 180, deferred
    assert out.data["verdict"] is None and out.data["commit"] is None
    assert out.data["agent_version"] == pinned()["codex"].version  # a deferred tick records it too
    state = store.read_state(proj, "demo")
    assert state.iteration_count == 0
    # The provider refused before any model work: $0, never max_tick_usd (issue 24)
    assert (out.data["cost_usd"], out.data["cost_known"], state.spent_usd) == (0.0, True, 0.0)


def test_a_429_that_a_retry_gets_past_is_a_normal_charged_tick(project: Path, scripted: Any) -> None:
    scripted([rate_limited(), shell("mkdir -p src && echo 'x = 1' > src/app.py"), {"text": "Done."}])
    proj = codex_loop(project)
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and "deferred" not in out.data, out.lines
    log = (Path(out.data["run_dir"]) / "implement.log").read_text()
    record("codex", "retried-429.jsonl", log)
    assert "Reconnecting... 1/1" in log  # codex's own retry notice, an `error` event of a run that worked
    assert out.data["halt"] is None and out.data["commit"] and out.data["implement"]["error"] is None
    assert out.data["cost_known"] is True


def test_codex_that_cannot_write_its_home_is_unavailable(codex_bin: Path, tmp_path: Path) -> None:
    """The real failure: inside the kernel sandbox with CODEX_HOME read-only, codex 0.171.0
    exits 1 before printing a single event; the adapter calls that `unavailable`."""
    work, run, ro_home, tmp = tmp_path / "work", tmp_path / "run", tmp_path / "codex-home", tmp_path / "tmp"
    for folder in (work, ro_home, tmp):
        folder.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    policy = Policy((work, run, tmp), tmpdir=tmp, label="e2e codex",
                    visible=(ro_home, Path(os.environ["HOME"]), codex_bin.parent.parent.parent))
    req = HarnessRequest(role="implement", prompt="hi", cwd=work, timeout_s=60, run_dir=run, model="gpt-5",
                         args=("--skip-git-repo-check",), env={"CODEX_HOME": str(ro_home)}, sandbox=policy)
    res = get("codex").run(req)
    record("codex", "cannot-start.stderr", (run / "implement.stderr.log").read_text())
    assert res.exit_status == 1 and res.unavailable is not None, res
    assert res.unavailable.startswith("codex exited 1 before printing any output of its own (Error: failed to"
                                      " initialize in-process app-server client:"), res.unavailable
    assert (run / "implement.log").read_text() == ""
    assert codex.invocation(req).argv[3:5] == ["--sandbox", "danger-full-access"]


def test_automaton_sandbox_codex_writes_in_scope_only_and_keeps_its_state(project: Path, scripted: Any) -> None:
    from tests.helpers import git, run_exe

    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("x = 1\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "src")
    home = Path(os.environ["HOME"])
    outside = home / "outside.txt"
    scripted([shell(f"echo 'y = 2' > src/new.py && echo wrote; echo no > {outside} || echo denied"),
              {"text": "Done."}])
    config = (home / ".codex" / "config.toml").read_text()
    done = run_exe("automaton", "--sandbox", "--", "codex", "exec", "--json", "--sandbox", "danger-full-access", "-",
                   cwd=project, env=dict(os.environ), stdin="write src/new.py", timeout=120)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    ran = [e["item"] for e in events if e["type"] == "item.completed" and e["item"]["type"] == "command_execution"]
    assert ran and "wrote" in ran[0]["aggregated_output"] and "denied" in ran[0]["aggregated_output"], events
    assert "Read-only file system" in ran[0]["aggregated_output"] or "Permission denied" in ran[0]["aggregated_output"]
    assert (project / "src" / "new.py").read_text() == "y = 2\n" and not outside.exists()
    # its own state: rollouts in sessions/, SQLite state moved to the granted sqlite/ folder
    assert list((home / ".codex" / "sessions").rglob("rollout-*.jsonl"))
    assert (home / ".codex" / "sqlite" / "state_5.sqlite").exists()
    assert (home / ".codex" / "config.toml").read_text() == config
    assert not (home / ".codex" / "state_5.sqlite").exists()  # never beside config.toml


def test_automaton_sandbox_codex_names_the_sandbox_flag_it_needs(project: Path, scripted: Any) -> None:
    from tests.helpers import run_exe

    scripted([{"text": "Done."}])
    done = run_exe("automaton", "--sandbox", "--", "codex", "exec", "--json", "--skip-git-repo-check", "-",
                   cwd=project, env=dict(os.environ), stdin="hi", timeout=120)
    assert done.returncode == 0, done.stderr
    assert "start it with --sandbox danger-full-access; the kernel sandbox holds" in done.stderr


def test_the_installed_hook_sees_the_real_payload_and_codex_obeys_its_answers(project: Path, scripted: Any,
                                                                              approver: str) -> None:
    """`--install-hooks codex` seals `"sessions": "sandboxed"`: the session runs as a human
    would start it, `automaton --sandbox -- codex …`, with the project trusted."""
    from tests.helpers import git, run_cli, run_exe

    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("x = 1\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "src")
    done = run_cli("--install-hooks", "codex", cwd=project)
    assert done.code == 0, done.err
    settings = project / ".codex" / "hooks.json"
    installed = json.loads(settings.read_text())
    # Observe the payloads the real CLI sends: the installed command, its stdin copied first
    # into codex's log folder (writable in the session).
    payloads = Path(os.environ["HOME"]) / ".codex" / "log" / "payloads.jsonl"
    hook = installed["hooks"]["PreToolUse"][0]["hooks"][0]
    hook["command"] = f"tee -a {payloads} | {hook['command']}"
    settings.write_text(json.dumps(installed))
    before = settings.read_text()
    srv = scripted([shell("echo 'y = 2' > src/b.py && echo allowed"),
                    shell("echo planted > .codex/hooks.json && echo ran"), {"text": "Done."}])
    # trusted by the human beforehand (`codex exec --trust` writes this; inside the session
    # config.toml is read-only, so --trust there fails "failed to persist config")
    config = Path(os.environ["HOME"]) / ".codex" / "config.toml"
    config.write_text(config.read_text() + f'[projects."{project.resolve()}"]\ntrust_level = "trusted"\n')
    proc = run_exe("automaton", "--sandbox", "--", "codex", "exec", "--json",
                   "--dangerously-bypass-hook-trust", "--sandbox", "danger-full-access", "-", stdin="go", cwd=project,
                   env=dict(os.environ), timeout=120)
    assert proc.returncode == 0, proc.stderr
    sent = [i["output"] for c in srv.scripted_requests() for i in c.body["input"]
            if i.get("type") == "function_call_output"]
    outputs = list(dict.fromkeys(sent))  # each call repeats the earlier outputs
    assert len(outputs) == 2 and "allowed" in outputs[0], (outputs, proc.stderr)
    assert (project / "src" / "b.py").read_text() == "y = 2\n"  # allowed: run
    assert outputs[1].startswith("Command blocked by PreToolUse hook: automaton denied this tool call: Bash:"
                                 " .codex/hooks.json"), outputs
    assert settings.read_text() == before  # denied: never run
    seen = [json.loads(line) for line in payloads.read_text().replace("}{", "}\n{").splitlines()]
    assert [p["tool_input"]["command"] for p in seen] == ["echo 'y = 2' > src/b.py && echo allowed",
                                                          "echo planted > .codex/hooks.json && echo ran"]
    assert seen[0]["tool_name"] == "Bash" and seen[0]["hook_event_name"] == "PreToolUse"
    record("codex", "pretooluse.json", json.dumps(seen[0], indent=2) + "\n")


def test_without_project_trust_codex_runs_no_project_hook(project: Path, scripted: Any, approver: str) -> None:
    """What the install note warns about: codex 0.171.0 skips an untrusted project's `.codex/`
    layer, hooks included, even with --dangerously-bypass-hook-trust."""
    from tests.helpers import run_cli

    assert run_cli("--install-hooks", "codex", cwd=project).code == 0
    scripted([shell("echo planted > .codex/hooks.json"), {"text": "Done."}])
    proc = subprocess.run(["codex", "exec", "--json", "--dangerously-bypass-hook-trust", "--sandbox",
                           "danger-full-access", "-"], input="go", cwd=project, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))
    assert "Untrusted project-local configuration is disabled" in proc.stderr
    assert (project / ".codex" / "hooks.json").read_text() == "planted\n"  # no hook ran
