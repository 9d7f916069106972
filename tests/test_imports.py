"""The fast path and its walls.

Two paths start a fresh Python process many times an hour and so carry a start-up budget: the
agent hook (`automaton --hook AGENT`, before every tool call; `--can-edit`, before every
edit) and the give-up path of a tick (`automaton-loop --mode tick` when another tick holds the
loop's lock). FAST names every module of automaton those paths may load: inside it, a module
keeps its imports few (no `dataclasses`, no run-time `typing`, a stdlib import only where it is
used), and the tests below check each path as a real process. Outside FAST, nothing is walled:
modules use `dataclasses`, `typing` and ordinary top-level imports, and bench/bench_list.py,
bench_gate.py measure what `--loop-list` and `--check-gate` cost.

The walls, both ways:
- each path imports no module of automaton outside FAST, and none of HOOK_NEVER;
- no module outside FAST uses the fast path's devices (`core.record`, `TYPE_CHECKING = False`).
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from automaton.store import loops
from automaton.store.locks import locked
from tests.commands.loopkit import add_worktree, loop_with
from tests.helpers import run_cli

SRC = Path(__file__).resolve().parents[1] / "src"

# Every module of automaton the hook, `--can-edit --task` and a tick that gives up may load;
# `automaton.hooks` (every module in it) is FAST as a whole: a payload picks which of its parsers run.
FAST = frozenset({
    "automaton", "automaton.install_paths", "automaton.resolve",
    "automaton.cli", "automaton.cli.fastpath", "automaton.cli.main", "automaton.cli.parser", "automaton.cli.render",
    "automaton.cli.verbs_agents", "automaton.cli.verbs_tasks",
    "automaton.commands", "automaton.commands.can_edit", "automaton.commands.focus", "automaton.commands.loop_views",
    "automaton.core", "automaton.core.approvals", "automaton.core.chain", "automaton.core.digest",
    "automaton.core.argv", "automaton.core.errors", "automaton.core.gates", "automaton.core.jsontext",
    "automaton.core.loopconfig", "automaton.core.loopstate",
    "automaton.core.names",
    "automaton.core.outcome", "automaton.core.phases", "automaton.core.record", "automaton.core.scope",
    "automaton.runner", "automaton.runner.cli", "automaton.runner.progress", "automaton.runner.schedlog",
    "automaton.runner.skip",
    "automaton.store", "automaton.store.anchor", "automaton.store.atomic", "automaton.store.chainlog",
    "automaton.store.checkpoint",
    "automaton.store.config", "automaton.store.key", "automaton.store.layout", "automaton.store.locks",
    "automaton.store.looplog", "automaton.store.loops", "automaton.store.project_config", "automaton.store.tasks",
})


def is_fast(module: str) -> bool:
    return module in FAST or module == "automaton.hooks" or module.startswith("automaton.hooks.")


# Never on the fast paths: each costs a share of a bare interpreter's start (`dataclasses`
# brings `inspect`, `ast`, `dis`, `tokenize`: about 13 ms, over a third of one), or is a layer
# those paths never reach. `hashlib`/`hmac` are allowed: the keyed logs are checked with them.
# `importlib` (with `importlib.resources`): cli.main imports a verb's adapter with `__import__`.
HOOK_NEVER = ("dataclasses", "typing", "inspect", "argparse", "contextlib", "unicodedata", "importlib",
              "tempfile", "shutil", "subprocess", "datetime", "filelock", "pathspec", "rich", "automaton.git",
              "automaton.runner", "automaton.harnesses", "automaton.sandbox", "automaton.commands.loops")
# In a loop worktree the hook reads the loop store and with a focus file the focus, each under
# store.locks (contextlib); a loop's file_scope `src/**`, `tests/**` is a plain pattern
# (core/scope.py), so pathspec stays out.
LOCKED_HOOK_NEVER = tuple(m for m in HOOK_NEVER if m != "contextlib")
# In a loop worktree it also reads the loop's typed state (core.loopstate.LoopState, a frozen
# dataclass parsed once at the store boundary), so `dataclasses` (with `inspect`, which imports
# `importlib.machinery`) comes in there.
WORKTREE_HOOK_NEVER = tuple(m for m in LOCKED_HOOK_NEVER if m not in ("dataclasses", "inspect", "importlib"))
# A tick that gives up: the runner proper, and what only a running tick needs; argparse too
# (a plain tick argv is parsed by runner.cli.plain_tick).
SKIP_NEVER = ("automaton.runner.tick", "automaton.harnesses", "automaton.commands", "automaton.git",
              "automaton.sandbox", "automaton.hooks", "rich", "filelock", "pathspec", "subprocess", "tempfile",
              "argparse", "gettext", "typing", "shutil", "datetime")
# `dataclasses` (with `inspect`) is not in SKIP_NEVER: the skip logs SKIPPED through the loop
# store (store.loops), which loads the loop's typed state (core.loopstate.LoopState, a frozen dataclass).


def imported(entry: str, args: list[str], cwd: Path, stdin: str = "", env: dict[str, str] | None = None) -> set[str]:
    """Every module in `sys.modules` when the process running `main()` of module `entry` with
    `args` exits, as its console script runs it (not `-m`: runpy imports importlib.util and
    contextlib). sys.modules, not `-X importtime`: it lists every module however it was loaded
    (cli.main imports a verb's adapter inside a function, with `__import__`)."""
    code = ("import sys, atexit\n"
            "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + ' '.join(sorted(sys.modules)) + '\\n'))\n"
            f"from {entry} import main\nsys.exit(main())\n")
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=120, check=False, env=env)
    found = [line for line in done.stderr.splitlines() if line.startswith("MODULES ")]
    assert found, done.stderr[-2000:]
    return set(found[-1].split()[1:])


def offending(names: set[str], never: tuple[str, ...]) -> set[str]:
    return {n for n in names if any(n == bad or n.startswith(bad + ".") for bad in never)}


def outside_fast(names: set[str]) -> set[str]:
    return {n for n in names if n.startswith("automaton") and n.split(".")[0] == "automaton" and not is_fast(n)}


@pytest.mark.parametrize("tool", ["Write", "Bash"])
def test_the_hook_imports_only_the_fast_package(project: Path, tool: str) -> None:
    assert run_cli("--create-task", "t", cwd=project).code == 0
    assert run_cli("--transition", "research", "--task", "t", cwd=project).code == 0
    given = ({"file_path": str(project / "tasks" / "t" / "SPEC.md"), "content": "# Spec\n"} if tool == "Write"
             else {"command": "python -m pytest tests/ -q 2>&1 | tail -n 20"})
    payload = json.dumps({"cwd": str(project), "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": given})
    env = {**os.environ, "AUTOMATON_TASK": "t"}
    names = imported("automaton.cli.main", ["--hook", "claude"], project, payload, env)
    assert {"automaton.hooks.policy", "automaton.cli.verbs_agents"} <= names  # it did decide
    if tool == "Write":
        assert {"automaton.store.tasks", "automaton.core.chain", "hmac"} <= names  # the task's state and keyed log
    assert outside_fast(names) == set()
    assert offending(names, HOOK_NEVER) == set()


@pytest.mark.parametrize("tool", ["write", "bash"])
def test_the_opencode_hook_imports_only_the_fast_package(project: Path, tool: str) -> None:
    """The same budget for the payload automaton's OpenCode plugin sends (hooks/opencode.py)."""
    assert run_cli("--create-task", "t", cwd=project).code == 0
    assert run_cli("--transition", "research", "--task", "t", cwd=project).code == 0
    given = ({"filePath": "tasks/t/SPEC.md", "content": "# Spec\n"} if tool == "write"
             else {"command": "python -m pytest tests/ -q 2>&1 | tail -n 20", "workdir": "."})
    payload = json.dumps({"hook_event_name": "tool.execute.before", "session_id": "s", "call_id": "c",
                          "tool_name": tool, "tool_input": given, "cwd": str(project)})
    names = imported("automaton.cli.main", ["--hook", "opencode"], project, payload,
                     {**os.environ, "AUTOMATON_TASK": "t"})
    assert {"automaton.hooks.opencode", "automaton.hooks.policy"} <= names  # it did decide
    assert outside_fast(names) == set()
    assert offending(names, HOOK_NEVER) == set()


def test_the_hook_with_a_focus_file_imports_only_the_fast_package(project: Path) -> None:
    """No AUTOMATON_TASK: the task comes from the project's focus (commands.focus)."""
    assert run_cli("--create-task", "t", cwd=project).code == 0
    assert run_cli("--focus", "t", cwd=project, human=True).code == 0
    given = {"file_path": str(project / "src" / "x.py"), "content": "x = 1\n"}
    payload = json.dumps({"cwd": str(project), "hook_event_name": "PreToolUse", "tool_name": "Write",
                          "tool_input": given})
    env = {k: v for k, v in os.environ.items() if k != "AUTOMATON_TASK"}
    names = imported("automaton.cli.main", ["--hook", "claude"], project, payload, env)
    assert "automaton.commands.focus" in names
    assert outside_fast(names) == set()
    assert offending(names, LOCKED_HOOK_NEVER) == set()


def test_can_edit_imports_only_the_fast_package(project: Path) -> None:
    assert run_cli("--create-task", "t", cwd=project).code == 0
    names = imported("automaton.cli.main", ["--can-edit", "--task", "t", "--file", "tasks/t/SPEC.md"], project)
    assert {"automaton.commands.can_edit", "automaton.cli.verbs_tasks"} <= names
    assert outside_fast(names) == set()
    assert offending(names, HOOK_NEVER) == set()


def test_the_hook_in_a_loop_worktree_imports_only_the_fast_package(project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("x = 1\n")
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "src"], cwd=project, check=True)
    wt = add_worktree(loop_with(project))
    for tool, given in (("Write", {"file_path": str(wt / "src" / "app.py"), "content": "x = 2\n"}),
                        ("Bash", {"command": "git commit -qam wip && rm -rf build"})):
        payload = json.dumps({"cwd": str(wt), "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": given})
        names = imported("automaton.cli.main", ["--hook", "claude"], wt, payload)
        assert {"automaton.hooks.policy", "automaton.store.loops", "automaton.core.scope"} <= names  # it did decide
        assert outside_fast(names) == set(), tool
        assert offending(names, WORKTREE_HOOK_NEVER) == set(), tool


def test_a_tick_that_gives_up_imports_only_the_fast_package(project: Path) -> None:
    p = loop_with(project)
    with locked(loops.tick_lock_path(p, "demo"), timeout_s=0):
        names = imported("automaton.runner.cli", ["--mode", "tick", "--loop", "demo", "--quiet", "--json"], project)
    assert "automaton.runner.skip" in names
    assert outside_fast(names) == set()
    assert offending(names, SKIP_NEVER) == set()
    assert "SKIPPED" in (p.loop_dir(loops.LoopName("demo")) / loops.LOG_FILE).read_text()


def test_fast_names_modules_that_exist() -> None:
    for module in FAST:
        path = SRC / module.replace(".", "/")
        assert path.with_suffix(".py").is_file() or (path / "__init__.py").is_file(), module


def _devices(path: Path) -> list[str]:
    """The fast path's devices `path` uses: `TYPE_CHECKING = False`, an import of core.record."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "TYPE_CHECKING"
                                                for t in node.targets):
            found.append(f"line {node.lineno}: TYPE_CHECKING = ...")
        elif isinstance(node, ast.ImportFrom) and (node.module == "automaton.core.record" or (
                node.module == "automaton.core" and any(a.name == "record" for a in node.names))):
            found.append(f"line {node.lineno}: imports core.record")
    return found


def test_outside_the_fast_package_modules_use_plain_python() -> None:
    """`dataclasses` instead of core.record, `typing.TYPE_CHECKING` instead of a local False."""
    # harnesses/_replay.py is a script of its own, run by path under `python -P -S` for every
    # role of a scripted tick, with its own import test (tests/harnesses/test_scripted.py).
    allowed = {"automaton.harnesses._replay"}
    bad = {}
    for path in sorted((SRC / "automaton").rglob("*.py")):
        module = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        if is_fast(module) or module in allowed:
            continue
        if found := _devices(path):
            bad[module] = found
    assert bad == {}


def _record_users() -> set[str]:
    """Every module of automaton that imports core.record."""
    users = set()
    for path in sorted((SRC / "automaton").rglob("*.py")):
        module = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        if any("core.record" in found for found in _devices(path)):
            users.add(module)
    return users


def test_core_record_is_used_only_where_dataclasses_is_not_loaded(project: Path) -> None:
    """`core.record` stands in for `dataclasses` only in modules the hook loads on the paths that
    never import `dataclasses` (a task's Write and Bash, `--can-edit`) and in `automaton.hooks`,
    where a payload picks the parsers. A module only a loop's paths load (the hook in a worktree,
    `--check-gate`, a tick that gives up) uses `dataclasses`: those paths load it for LoopState."""
    assert run_cli("--create-task", "t", cwd=project).code == 0
    assert run_cli("--transition", "research", "--task", "t", cwd=project).code == 0
    env = {**os.environ, "AUTOMATON_TASK": "t"}
    loaded: set[str] = set()
    for tool, given in (("Write", {"file_path": str(project / "tasks" / "t" / "SPEC.md"), "content": "# Spec\n"}),
                        ("Bash", {"command": "python -m pytest tests/ -q 2>&1 | tail -n 20"})):
        payload = json.dumps({"cwd": str(project), "hook_event_name": "PreToolUse", "tool_name": tool,
                              "tool_input": given})
        names = imported("automaton.cli.main", ["--hook", "claude"], project, payload, env)
        assert "dataclasses" not in names
        loaded |= names
    names = imported("automaton.cli.main", ["--can-edit", "--task", "t", "--file", "tasks/t/SPEC.md"], project)
    assert "dataclasses" not in names
    loaded |= names
    users = _record_users()
    assert "automaton.core.chain" in users  # the scan sees the users
    assert {m for m in users if m not in loaded and not m.startswith("automaton.hooks")} == set()


LAZY = re.compile(r"#\s*lazy:\s*\S")


def _unexplained_lazy_imports(path: Path) -> list[str]:
    """The imports inside a function of `path` that no `# lazy: <why>` comment explains: on the
    import's own lines, or in the comment lines just above it or just above the run of import
    statements it belongs to (one comment over a group of imports explains the group)."""
    text = path.read_text(encoding="utf-8")
    lines = ["", *text.splitlines()]  # lines[n] is line n
    inner = {node for fn in ast.walk(ast.parse(text)) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
             for node in ast.walk(fn) if isinstance(node, (ast.Import, ast.ImportFrom))}
    ending = {node.end_lineno: node for node in inner}

    def explained(node: ast.Import | ast.ImportFrom) -> bool:
        end = node.end_lineno or node.lineno
        while (above := ending.get(node.lineno - 1)) is not None:  # the first import of the run
            node = above
        first = node.lineno
        while first > 1 and lines[first - 1].lstrip().startswith("#"):  # the comment just above it
            first -= 1
        return any(LAZY.search(line) for line in lines[first:end + 1])

    return [f"line {node.lineno}: {ast.unparse(node)}" for node in sorted(inner, key=lambda n: n.lineno)
            if not explained(node)]


def test_outside_the_fast_package_imports_are_at_the_top_unless_a_comment_says_why() -> None:
    """Outside FAST an import goes at the top of its module. One inside a function says why on
    its line or in the comment just above (`# lazy: <why>`): an optional extra, an import cycle,
    a script or pytest plugin with import rules of its own, or a module a verb of the fast argv
    path (cli/fastpath.py FAST_VERBS: `--check-gate`, `--loop-list`, `--audit`, `--can-edit`)
    loads, where the import would add modules that verb never uses (bench/bench_gate.py, ...)."""
    bad = []
    for path in sorted((SRC / "automaton").rglob("*.py")):
        module = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        if not is_fast(module):
            bad += [f"{module} {where}" for where in _unexplained_lazy_imports(path)]
    assert not bad, "imports inside a function with no `# lazy: <why>`:\n" + "\n".join(bad)


def test_the_control_characters_the_resolver_refuses_are_unicode_category_cc() -> None:
    """resolve.check_text tests a fixed range instead of importing unicodedata on the hook path;
    the Unicode stability policy keeps Cc fixed, and this checks it against the running Python."""
    from automaton.resolve import _CONTROL

    for code in range(sys.maxunicode + 1):
        char = chr(code)
        assert (_CONTROL.match(char) is not None) == (unicodedata.category(char) == "Cc"), hex(code)


def test_the_path_edge_characters_are_unicode_categories_cc_cf_zs_zl_zp() -> None:
    """hooks.pathedge tests a fixed range instead of importing unicodedata on the hook path: every
    code point of categories Cc, Cf, Zs, Zl and Zp in the running Python's Unicode is in it, and
    nothing else that is assigned (it may hold format characters a later Unicode added)."""
    from automaton.hooks.pathedge import _EDGE

    edge = {code for low, high in _EDGE for code in range(low, high + 1)}
    for code in range(sys.maxunicode + 1):
        category = unicodedata.category(chr(code))
        if category in ("Cc", "Cf", "Zs", "Zl", "Zp"):
            assert code in edge, hex(code)
        elif code in edge:
            assert category == "Cn", (hex(code), category)
