"""The frequent paths import only what they need: the agent hook (before every tool call), a
tick that gives up because another tick holds the loop's lock, `--check-gate` and `--loop-list`.

Each runs as a real process under `python -X importtime`, whose report names every module the
process imported (bench/bench_hook.py, bench_race.py and bench_gate.py measure what they cost).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from automaton.store import loops
from automaton.store.locks import locked
from tests.commands.loopkit import add_worktree, loop_with, tick
from tests.helpers import run_cli

# Never on the hook path: each is an import the hook does not need (the reasons are in
# core/record.py, core/digest.py and cli/fastpath.py), or a whole layer it never reaches.
HOOK_NEVER = ("dataclasses", "typing", "inspect", "hashlib", "hmac", "_hashlib", "argparse", "contextlib",
              "unicodedata", "importlib.resources", "tempfile", "shutil", "subprocess", "datetime", "filelock",
              "pathspec", "rich", "automaton.store.loops", "automaton.git", "automaton.runner", "automaton.harnesses",
              "automaton.sandbox", "automaton.commands.loops")
# The loop store (store.loops, store.looplog, store.chainlog, store.config) imports none of these:
# records instead of dataclasses, core.digest instead of hashlib/hmac, copy and shutil only where
# a writer needs them, `time` for its log's clock; every path that reads or logs a loop loads it.
# The typed loop state (core.loopstate) is a dataclass: `dataclasses` (with `inspect` and `copy`)
# is loaded wherever a loop's state is read.
LOOP_STORE_NEVER = ("hashlib", "hmac", "_hashlib", "shutil", "datetime")
# Never on the give-up path of a tick: the runner and what only a running tick needs, argparse
# (a plain tick argv is parsed by runner.cli.plain_tick) and typing (annotations only).
SKIP_NEVER = ("automaton.runner.tick", "automaton.harnesses", "automaton.commands", "automaton.git",
              "automaton.sandbox", "automaton.hooks", "rich", "filelock", "pathspec", "subprocess", "tempfile",
              "argparse", "gettext", "typing", *LOOP_STORE_NEVER)
# Never on --loop-list: the loop store's own, and typing (annotations under TYPE_CHECKING).
LIST_NEVER = (*LOOP_STORE_NEVER, "typing")
# The loop model, the gates, the gate's last step and proc (every git call) import none of these
# themselves (records instead of dataclasses, annotations under TYPE_CHECKING, pathspec when a
# file is matched): the gate and every tick load them, and so does a tick that gives up.
MODEL_NEVER = ("typing", "pathspec", "argparse")
# Never on --check-gate: the parser's help machinery, the runner, and the other loop verbs.
GATE_NEVER = ("argparse", "gettext", "rich", "filelock", "importlib.resources", "automaton.runner",
              "automaton.harnesses", "automaton.sandbox", "automaton.hooks", "automaton.commands.loops",
              "automaton.commands.schedule", "automaton.commands.human")


def imported(entry: str, args: list[str], cwd: Path, stdin: str = "", env: dict[str, str] | None = None) -> set[str]:
    """Every module `python -X importtime` imported running `main()` of module `entry` with
    `args`, as its console script does (not `-m`: runpy imports importlib.util and contextlib)."""
    code = f"import sys; from {entry} import main; sys.exit(main())"
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code, *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=120, check=False, env=env)
    names = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert names, done.stderr[-2000:]
    return names


def offending(names: set[str], never: tuple[str, ...]) -> set[str]:
    return {n for n in names if any(n == bad or n.startswith(bad + ".") for bad in never)}


@pytest.mark.parametrize("tool", ["Write", "Bash"])
def test_the_hook_imports_only_what_it_needs(project: Path, tool: str) -> None:
    assert run_cli("--create-task", "t", cwd=project).code == 0
    assert run_cli("--transition", "research", "--task", "t", cwd=project).code == 0
    given = ({"file_path": str(project / "tasks" / "t" / "SPEC.md"), "content": "# Spec\n"} if tool == "Write"
             else {"command": "python -m pytest tests/ -q 2>&1 | tail -n 20"})
    payload = json.dumps({"cwd": str(project), "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": given})
    env = {**os.environ, "AUTOMATON_TASK": "t"}
    names = imported("automaton.cli.main", ["--hook", "claude"], project, payload, env)
    assert "automaton.hooks.policy" in names  # it did decide
    if tool == "Write":
        assert {"automaton.store.tasks", "automaton.core.chain"} <= names  # the task's state and keyed log
    assert offending(names, HOOK_NEVER) == set()


# In a loop worktree the hook reads the loop store too (with contextlib), and matches the
# loop's file_scope: `src/**`, `tests/**` are plain patterns (core/scope.py), and the
# worktree's project is known from its path (store/layout.py find_root), so neither pathspec
# nor a git process comes in.
# It reads the loop's typed state (core.loopstate, a dataclass), so `dataclasses` comes in there.
WORKTREE_HOOK_NEVER = tuple(m for m in HOOK_NEVER if m not in ("automaton.store.loops", "contextlib", "dataclasses",
                                                                "inspect"))


def test_the_hook_in_a_loop_worktree_imports_only_what_it_needs(project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("x = 1\n")
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "src"], cwd=project, check=True)
    p = loop_with(project)
    wt = add_worktree(p)
    given = {"file_path": str(wt / "src" / "app.py"), "content": "x = 2\n"}
    payload = json.dumps({"cwd": str(wt), "hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": given})
    names = imported("automaton.cli.main", ["--hook", "claude"], wt, payload)
    assert {"automaton.hooks.policy", "automaton.store.loops", "automaton.core.scope"} <= names  # it did decide
    assert offending(names, WORKTREE_HOOK_NEVER) == set()


def test_a_tick_that_gives_up_imports_no_runner(project: Path) -> None:
    p = loop_with(project)
    with locked(loops.tick_lock_path(p, "demo"), timeout_s=0):
        names = imported("automaton.runner.cli", ["--mode", "tick", "--loop", "demo", "--quiet", "--json"], project)
    assert "automaton.runner.skip" in names
    assert offending(names, SKIP_NEVER) == set()
    assert "SKIPPED" in (p.loop_dir(loops.LoopName("demo")) / loops.LOG_FILE).read_text()


def loaded_by(modules: str) -> set[str]:
    """Every module a fresh interpreter holds after `import <modules>` (a comma-separated list)."""
    code = f"import sys; import {modules}; print(' '.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return set(done.stdout.split())


def test_the_loop_model_and_the_gates_import_little() -> None:
    names = loaded_by("automaton.core.loopconfig, automaton.core.gates, automaton.commands.gate_next, automaton.proc")
    assert "automaton.core.gates" in names
    assert offending(names, MODEL_NEVER) == set()


def test_the_loop_store_imports_little() -> None:
    names = loaded_by("automaton.store.loops, automaton.store.looplog, automaton.store.chainlog,"
                      " automaton.store.config")
    assert "automaton.store.loops" in names
    assert offending(names, (*LOOP_STORE_NEVER, "typing")) == set()


def test_loop_list_imports_only_what_it_needs(project: Path) -> None:
    p = loop_with(project)
    tick(p, 0.5, {"implement": 0.1})  # a verdict, a reservation and its settlement to read
    names = imported("automaton.cli.main", ["--loop-list", "--json"], project)
    assert "automaton.commands.loop_views" in names
    assert offending(names, LIST_NEVER) == set()


def test_check_gate_imports_only_what_it_needs(project: Path) -> None:
    p = loop_with(project)
    add_worktree(p)
    names = imported("automaton.cli.main", ["--check-gate", "demo", "--json"], project)
    assert "automaton.git.drift" in names
    assert offending(names, GATE_NEVER) == set()


def test_the_control_characters_the_resolver_refuses_are_unicode_category_cc() -> None:
    """resolve.check_text tests a fixed range instead of importing unicodedata on the hook path;
    the Unicode stability policy keeps Cc fixed, and this checks it against the running Python."""
    from automaton.resolve import _CONTROL

    for code in range(sys.maxunicode + 1):
        char = chr(code)
        assert (_CONTROL.match(char) is not None) == (unicodedata.category(char) == "Cc"), hex(code)
