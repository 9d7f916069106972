"""End to end (issue 5): a tick hands Claude the hook settings; the agent's own hook call from
inside the loop worktree denies an out-of-scope write and allows an in-scope one."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from automaton.runner.tick import tick
from automaton.store import loops as store
from tests.helpers import git, run_cli
from tests.runner.loopkit import make_loop

# A fake `claude` that behaves like Claude Code: before each Write it runs every PreToolUse
# command hook found in the --settings file, with the documented payload on stdin, and writes
# the file only when the hook exits 0 (exit 2 = blocked; code.claude.com/docs/en/hooks).
FAKE_CLAUDE = """
import subprocess
args = sys.argv[1:]
settings = json.load(open(args[args.index("--settings") + 1]))
commands = [h["command"] for group in settings["hooks"]["PreToolUse"] for h in group["hooks"]]
sys.stdin.read()
results = {}
for rel in ("NOTES.md", "src/fix.py"):
    target = os.path.join(os.getcwd(), rel)
    payload = {"session_id": "s", "hook_event_name": "PreToolUse", "cwd": os.getcwd(),
               "tool_name": "Write", "tool_input": {"file_path": target, "content": "x = 1\\n"}}
    runs = [subprocess.run(c, shell=True, input=json.dumps(payload), capture_output=True, text=True)
            for c in commands]
    blocked = [r for r in runs if r.returncode == 2]
    results[rel] = {"codes": [r.returncode for r in runs], "stdout": "".join(r.stdout for r in runs),
                    "stderr": "".join(r.stderr for r in blocked)}
    if not blocked:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "w").write("x = 1\\n")
open(os.environ["HOOK_RESULTS"], "w").write(json.dumps(results))
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "done",
                  "total_cost_usd": 0.01, "usage": {}}))
"""


def test_agent_hook_inside_worktree_denies_out_of_scope_write(project: Path, fake_bin: Any,
                                                                monkeypatch: Any, tmp_path: Path) -> None:
    fake_bin("claude", FAKE_CLAUDE)
    results = tmp_path / "hook-results.json"
    monkeypatch.setenv("HOOK_RESULTS", str(results))
    proj = make_loop(project, harness={"name": "claude", "args": []}, sandbox="off",  # fake writes outside
                     roles={"implement": {"prompt": "implement.md"},
                            "verify": {"command": [sys.executable, "-c", "print('1 passed')"], "score": "summary"},
                            "orchestrate": {"builtin": True}})
    out = tick(proj, "demo")
    assert out.code == 0, out.lines
    seen = json.loads(results.read_text())
    assert seen["NOTES.md"]["codes"] == [2]
    assert "automaton denied this tool call" in seen["NOTES.md"]["stderr"]
    assert "NOTES.md" in seen["NOTES.md"]["stderr"]
    assert seen["src/fix.py"] == {"codes": [0], "stdout": "", "stderr": ""}  # allowed: silent
    worktree = Path(store.read_state(proj, "demo").worktree_path)
    assert not (worktree / "NOTES.md").exists()
    assert "src/fix.py" in git(worktree, "show", "--name-only", "--format=", "HEAD").split()
    assert store.read_state(proj, "demo").status == "complete"  # no drift: nothing out of scope landed


# The same fake, for a sandboxed tick: it records what the hook said in its worktree (the one
# place the kernel lets it write), and carries no call log outside it.
FAKE_SANDBOXED = """#!{python}
import json, os, subprocess, sys
args = sys.argv[1:]
settings = json.load(open(args[args.index("--settings") + 1]))
commands = [h["command"] for group in settings["hooks"]["PreToolUse"] for h in group["hooks"]]
sys.stdin.read()
target = os.path.join(os.getcwd(), "src", "fix.py")
payload = {{"session_id": "s", "hook_event_name": "PreToolUse", "cwd": os.getcwd(),
           "tool_name": "Write", "tool_input": {{"file_path": target, "content": "x = 1\\\\n"}}}}
runs = [subprocess.run(c, shell=True, input=json.dumps(payload), capture_output=True, text=True) for c in commands]
os.makedirs(os.path.dirname(target), exist_ok=True)
with open(os.path.join(os.getcwd(), "src", "hook.json"), "w") as fh:
    json.dump({{"codes": [r.returncode for r in runs], "stderr": "".join(r.stderr for r in runs)}}, fh)
if all(r.returncode == 0 for r in runs):
    open(target, "w").write("x = 1\\n")
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": "done",
                  "total_cost_usd": 0.01, "usage": {{}}}}))
"""


def test_a_sandboxed_tick_passes_the_sessions_probe(project: Path, tmp_path: Path, monkeypatch: Any) -> None:
    """With `"sessions": "sandboxed"` sealed, a tick's agent runs in the kernel sandbox, so its hook
    (a child of the agent) passes the probe and judges the Write by the loop's scope."""
    import pytest

    from automaton.sandbox import available

    if not (available().ok and available().isolated):
        pytest.skip("needs the kernel sandbox with namespaces")
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    exe = bin_dir / "claude"
    exe.write_text(FAKE_SANDBOXED.format(python=sys.executable))
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    (project / ".automaton").mkdir(exist_ok=True)
    (project / ".automaton" / "config.json").write_text('{"schema_version": 1, "sessions": "sandboxed"}\n')
    assert run_cli("--approve", "--config", "--yes", cwd=project, human=True).code == 0
    proj = make_loop(project, harness={"name": "claude", "args": []},
                     roles={"implement": {"prompt": "implement.md"},
                            "verify": {"command": [sys.executable, "-c", "print('1 passed')"], "score": "summary"},
                            "orchestrate": {"builtin": True}})
    out = tick(proj, "demo")
    assert out.code == 0, out.lines
    worktree = Path(store.read_state(proj, "demo").worktree_path)
    seen = json.loads((worktree / "src" / "hook.json").read_text())
    assert seen == {"codes": [0], "stderr": ""}, seen
    assert (worktree / "src" / "fix.py").read_text() == "x = 1\n"
