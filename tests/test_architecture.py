"""What docs/architecture.md says about the code's shape holds, and stays so.

1. One loop handle: a tick and each loop command (the gate, pause, resume, review, approve,
   the status views, the lifecycle, the schedule, the doctor) look the loop's name up once
   (`store.loops.Loop.resolve`) and pass the `Loop` down; no step below an entry resolves
   the name again or reads the loop's files by name.
2. The import contracts in pyproject.toml that say "the runner (the hooks) import only these
   use cases" name every other module of commands/, and every module of the tick.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from automaton.commands.loop_gate import check_gate
from automaton.commands.loop_status import loop_status, loop_summary, status_data
from automaton.commands.loops import approve_loop, pause_loop, preview_loop, resume_loop, review_loop
from automaton.runner.tick import tick
from automaton.store import loops as store
from tests.commands.loopkit import add_worktree, loop_with
from tests.runner.loopkit import make_loop

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "automaton"

# ---- 1. one loop handle ----------------------------------------------------------------------

# The tick's modules and the loop commands that take the handle. Left out: runner/cli.py and
# runner/demo.py (delivery), runner/skip.py (the give-up path, which runs before the runner is
# imported and names the loop only to take its lock and log SKIPPED).
HANDLED = sorted({*(p.relative_to(PACKAGE).as_posix() for p in (PACKAGE / "runner").glob("*.py")),
                  "commands/loop_gate.py", "commands/halts.py", "commands/lifecycle.py",
                  "commands/schedule.py", "commands/doctor.py", "commands/loops.py",
                  "commands/loop_status.py"}
                 - {"runner/__init__.py", "runner/cli.py", "runner/demo.py", "runner/skip.py"})
# The entries: the only functions that turn a name into a `Loop` (each one call). create_loop
# is not one: the loop it makes does not exist to be looked up, and nothing after it reads the
# loop by name (it is still held to "no lookup below an entry").
ENTRIES = {
    ("runner/tick.py", "tick"), ("runner/modes.py", "dry_run"),
    ("commands/loop_gate.py", "check_gate"), ("commands/loop_gate.py", "can_continue"),
    ("commands/lifecycle.py", "rearm_loop"), ("commands/lifecycle.py", "remove_loop"),
    ("commands/schedule.py", "install_schedule"), ("commands/schedule.py", "uninstall_schedule"),
    ("commands/doctor.py", "doctor_loop"), ("commands/doctor.py", "doctor"),
    ("commands/loops.py", "pause_loop"), ("commands/loops.py", "resume_loop"),
    ("commands/loops.py", "review_loop"), ("commands/loops.py", "preview_loop"),
    ("commands/loops.py", "approve_loop"), ("commands/loops.py", "create_loop"),
    ("commands/loop_status.py", "loop_summary"), ("commands/loop_status.py", "status_data"),
    ("commands/loop_status.py", "loop_status"), ("commands/loop_status.py", "status_with_record"),
}
# The store's readers by name: each resolves the name again (store/loops.py keeps them for
# callers outside the tick, such as the hooks and the read-only views).
BY_NAME = {"require_tracked", "read_config", "read_state", "inspect", "session", "update_state", "log_event"}
# No lookup by name is left below an entry (`_Facts` takes the handle).
LEGACY: set[tuple[str, str, str]] = set()


def _store_aliases(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(names bound to the module automaton.store.loops, names bound to its by-name readers)."""
    modules, functions = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "automaton.store":
            modules |= {a.asname or a.name for a in node.names if a.name == "loops"}
        elif isinstance(node, ast.ImportFrom) and node.module == "automaton.store.loops":
            functions |= {a.asname or a.name for a in node.names if a.name in BY_NAME}
        elif isinstance(node, ast.Import):
            modules |= {a.asname for a in node.names if a.name == "automaton.store.loops" and a.asname}
    return modules, functions


def _calls(rel: str) -> list[tuple[str, str, int]]:
    """(enclosing top-level function, what is called, line) for each loop lookup by name in `rel`."""
    tree = ast.parse((PACKAGE / rel).read_text(encoding="utf-8"))
    modules, functions = _store_aliases(tree)
    found = []
    for top in tree.body:
        where = top.name if isinstance(top, ast.FunctionDef | ast.ClassDef) else "<module>"
        for node in ast.walk(top):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "resolve" and (
                    (isinstance(func.value, ast.Name) and func.value.id == "Loop")
                    or (isinstance(func.value, ast.Attribute) and func.value.attr == "Loop")):
                found.append((where, "Loop.resolve", node.lineno))
            elif (isinstance(func, ast.Attribute) and func.attr in BY_NAME and isinstance(func.value, ast.Name)
                  and func.value.id in modules):
                found.append((where, f"{func.value.id}.{func.attr}", node.lineno))
            elif isinstance(func, ast.Name) and func.id in functions:
                found.append((where, func.id, node.lineno))
    return found


def test_the_checked_modules_exist() -> None:
    assert "runner/tick.py" in HANDLED and len(HANDLED) > 15
    assert all((PACKAGE / rel).is_file() for rel in HANDLED)


@pytest.mark.parametrize("rel", HANDLED)
def test_only_the_entries_look_a_loop_up_by_name(rel: str) -> None:
    bad = [f"{rel}:{line}: {what} in {where}" for where, what, line in _calls(rel)
           if not ((what == "Loop.resolve" and (rel, where) in ENTRIES) or (rel, where, what) in LEGACY)]
    assert not bad, "take the Loop handle from the caller instead:\n" + "\n".join(bad)


@pytest.mark.parametrize(("rel", "entry"), sorted(ENTRIES))
def test_each_entry_resolves_once(rel: str, entry: str) -> None:
    assert [what for where, what, _ in _calls(rel) if where == entry] == ["Loop.resolve"]


def test_the_gate_facts_are_built_from_the_handle() -> None:
    """`_Facts(project, name, …)` would read loop.json by name again: only `_Facts.of` builds it."""
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_Facts":
                bad.append(f"{path.relative_to(PACKAGE).as_posix()}:{node.lineno}")
    assert not bad, "build the gate's facts with _Facts.of(loop, …):\n" + "\n".join(bad)


def _count_lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names `Loop.resolve` is called with from now on (it still resolves them)."""
    real = store.Loop.resolve.__func__  # type: ignore[attr-defined]
    names: list[str] = []

    def counted(cls: type[store.Loop], project: object, name: str) -> store.Loop:
        names.append(name)
        return real(cls, project, name)  # type: ignore[no-any-return]

    monkeypatch.setattr(store.Loop, "resolve", classmethod(counted))
    return names


def test_each_loop_command_looks_its_loop_up_once(project: Path, approver: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """At run time too: the status views, and the review and approval of a drift halt (the
    approval reads the drift through the gate's facts), then pause and resume."""
    p = loop_with(project)
    (add_worktree(p) / "README.md").write_text("out of scope\n")
    assert check_gate(p, "demo").code == 1
    names = _count_lookups(monkeypatch)
    calls: list[tuple[str, Callable[[], object]]] = [
        ("status_data", lambda: status_data(p, "demo")), ("loop_summary", lambda: loop_summary(p, "demo")),
        ("loop_status", lambda: loop_status(p, "demo")), ("preview_loop", lambda: preview_loop(p, "demo")),
        ("review_loop", lambda: review_loop(p, "demo")), ("approve_loop", lambda: approve_loop(p, "demo")),
        ("pause_loop", lambda: pause_loop(p, "demo")), ("resume_loop", lambda: resume_loop(p, "demo")),
    ]
    for what, call in calls:
        names.clear()
        call()
        assert names == ["demo"], what
    assert store.read_state(p, "demo").accepted_drift  # the approval did read the drift


def test_a_tick_looks_its_loop_up_once(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At run time too: a whole tick (gates, worktree, reservation, agent, commit, verify,
    record) of a loop without a task resolves its name once."""
    step = {"actions": [{"write": "src/score.txt", "content": "1 passed, 1 failed"}], "text": "did it",
            "cost_usd": 0.1}
    verify = [sys.executable, "-c", "import pathlib; print(pathlib.Path('src/score.txt').read_text())"]
    proj = make_loop(project, script={"implement": [step]}, sandbox="off",
                     roles={"verify": {"command": verify, "score": "summary"}})
    names = _count_lookups(monkeypatch)
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["ran"], out.lines
    assert names == ["demo"]


# ---- 2. the contracts name every module ------------------------------------------------------

RUNNER_USES = {"loop_gate", "halts", "writable", "tasks", "holdout_git"}
HOOKS_USE = {"can_edit", "loop_views"}
DELIVERY = {"cli", "demo"}  # runner/cli.py and runner/demo.py may use any use case


def _modules(package: str) -> set[str]:
    return {p.stem for p in (PACKAGE / package).glob("*.py") if p.stem != "__init__"}


def _contract(name_start: str) -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    found = [c for c in config["tool"]["importlinter"]["contracts"] if c["name"].startswith(name_start)]
    assert len(found) == 1, name_start
    return dict(found[0])


def _short(names: object, package: str) -> set[str]:
    assert isinstance(names, list)
    return {n.removeprefix(f"automaton.{package}.") for n in names}


def test_the_tick_contract_names_every_other_use_case_and_every_tick_module() -> None:
    contract = _contract("the tick imports five use-case modules")
    assert _short(contract["forbidden_modules"], "commands") == _modules("commands") - RUNNER_USES
    assert _short(contract["source_modules"], "runner") == _modules("runner") - DELIVERY


def test_the_hooks_contract_names_every_other_use_case() -> None:
    contract = _contract("the hooks import two use-case modules")
    assert _short(contract["forbidden_modules"], "commands") == _modules("commands") - HOOKS_USE


def test_the_reach_contract_covers_the_tick_and_the_hooks() -> None:
    contract = _contract("neither the tick nor the hooks reach")
    tick_modules = {f"automaton.runner.{m}" for m in _modules("runner") - DELIVERY}
    assert set(contract["source_modules"]) == tick_modules | {"automaton.hooks"}  # type: ignore[call-overload]
    assert not _short(contract["forbidden_modules"], "commands") & (RUNNER_USES | HOOKS_USE)
