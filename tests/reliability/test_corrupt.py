"""Every state and config file corrupted every way: each verb that reads it fails closed.

"Reads fail closed" (docs/architecture.md#state-files-and-their-invariants): a state or config
file that is empty, truncated, not JSON, of the wrong types, of a newer schema_version, cut
mid-line, binary, a directory, unreadable or a looping link is an error naming the file, never
replaced by defaults. For each (file, way, verb): the exit code is 2 (bad input) or the
documented refusal 1 (tamper evidence: a broken log, a changed loop.json), the hook always exits
2 (deny), the output names the file, no loop counter goes down, the corrupted bytes are kept (in
place, or moved aside as `.state.log.broken` by a human-visible re-seal), and no agent is
started (the fake harness records every start).

One pristine project (task t1 at `implement`, focus t1, loop lp bound to t1 with one real
tick behind it, so its worktree exists) is built per module and restored before every verb.
Tests run as root, where chmod cannot make a file unreadable: "unreadable" makes every
open() and os.open() of that path raise EACCES in-process (all verbs run in-process).
"""

from __future__ import annotations

import builtins
import errno
import io
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from automaton.commands.focus import set_focus
from automaton.commands.tasks import approve, transition
from automaton.runner.tick import tick
from tests.helpers import GIT_ENV, Result, init_repo, run_cli
from tests.reliability.kit import LOOP, PY, TASK, agent_runs, setup_project

# ---- the pristine project -------------------------------------------------------------------


@dataclass
class World:
    root: Path
    record: Path  # one line per agent start
    home: Path  # AUTOMATON_HOME: a copy of the packaged framework folder
    backup: Path

    @property
    def worktree(self) -> Path:
        return self.root / ".automaton" / "loops" / LOOP / "worktree"

    def restore(self) -> None:
        # The project's files and the anchors of their logs (store/anchor.py) go back together:
        # a project restored alone would read as rolled back, which is what anchors are for.
        keyed = self.root.parent / "home" / ".config" / "automaton" / "keyed"
        for name, target in (("tasks", self.root / "tasks"), (".automaton", self.root / ".automaton"),
                             ("keyed", keyed)):
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(self.backup / name, target, symlinks=True)
        config = self.home / "config.md"
        if config.is_dir() and not config.is_symlink():
            shutil.rmtree(config)
        elif os.path.lexists(config):
            config.unlink()
        shutil.copyfile(self.backup / "config.md", config)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base = tmp_path_factory.mktemp("corrupt")
    home = base / "framework"
    shutil.copytree(Path(str(resources.files("automaton") / "resources")), home)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(base / "home"))
        for key, value in GIT_ENV.items():
            mp.setenv(key, value)
        mp.setenv("AUTOMATON_HOME", str(home))
        mp.setenv("AUTOMATON_APPROVER", "setup")
        mp.delenv("AUTOMATON_TASK", raising=False)
        root = init_repo(base / "proj")
        record = base / "agent.runs"
        project = setup_project(root, record, roles={
            "implement": {"prompt": "implement.md"},
            "verify": {"command": [PY, "-c", "print('1 passed, 1 failed')"], "score": "summary"},
            "orchestrate": {"builtin": True}})
        assert transition(project, TASK, "human_intervention").ok
        assert approve(project, TASK, to="implement").ok
        (project.tasks_dir / TASK / "IMPLEMENTATION.md").write_text("# done\n")
        assert set_focus(project, TASK).ok
        ran = tick(project, LOOP)
        assert ran.code == 0 and ran.data and ran.data["ran"], ran.lines
        backup = base / "backup"
        for name in ("tasks", ".automaton"):
            shutil.copytree(root / name, backup / name, symlinks=True)
        shutil.copytree(base / "home" / ".config" / "automaton" / "keyed", backup / "keyed")
        shutil.copyfile(home / "config.md", backup / "config.md")
        yield World(root, record, home, backup)


@pytest.fixture
def w(world: World, monkeypatch: pytest.MonkeyPatch) -> World:
    monkeypatch.setenv("AUTOMATON_HOME", str(world.home))
    monkeypatch.setenv("HOME", str(world.root.parent / "home"))  # holds the key that sealed the world's logs
    monkeypatch.setenv("AUTOMATON_APPROVER", "tester")  # so --approve gets past the human check and reads
    world.restore()
    return world


# ---- the files and the ways to corrupt them -------------------------------------------------

FILES: dict[str, str] = {  # key -> path relative to the project (config_md: to AUTOMATON_HOME)
    "task_state": f"tasks/{TASK}/.state",
    "task_log": f"tasks/{TASK}/.state.log",
    "loop_state": f".automaton/loops/{LOOP}/.state.loop",
    "loop_log": f".automaton/loops/{LOOP}/.state.log",
    "loop_json": f".automaton/loops/{LOOP}/loop.json",
    "focus": ".automaton/focus",
    "focus_log": ".automaton/focus.log",
    "config_md": "config.md",
}
NEEDLE = {  # how the error names the file
    "task_state": rf"tasks/{TASK}/\.state(?![.\w])", "task_log": r"\.state\.log", "loop_state": r"\.state\.loop",
    "loop_log": r"\.state\.log", "loop_json": r"loop\.json", "focus": r"\.automaton/focus",
    "focus_log": r"\.automaton/focus", "config_md": r"config\.md",
}
JSON_FILES = ("loop_state", "loop_json")
LOGS = ("task_log", "loop_log", "focus_log")
KINDS = ("empty", "truncated", "empty_object", "wrong_types", "newer_schema", "partial_last_line", "binary",
         "directory", "unreadable", "symlink_loop")
GARBAGE = b"\x00\xff\xfe\x89PNG\r\n\x1a\n\x00\x9c" * 16


def applies(file: str, kind: str) -> bool:
    if kind == "newer_schema":
        return file in JSON_FILES
    if kind == "partial_last_line":
        return file in LOGS or file == "task_state"
    return True


def wrong_types(file: str, data: bytes) -> bytes:
    if file == "loop_state":
        obj = json.loads(data)
        obj["iteration_count"] = str(obj["iteration_count"])
        return json.dumps(obj).encode()
    if file == "loop_json":
        obj = json.loads(data)
        obj["brakes"]["max_iterations"] = "25"
        return json.dumps(obj).encode()
    if file in LOGS:
        return data + b'{"event": 1, "state": [], "prev": null}\n'
    if file == "config_md":
        return data + b"- max_budget_usd: true\n"
    return {"task_state": b"[\"implement\"]\n", "focus": b"{\"task\": 1}\n"}[file]


def corrupted_bytes(file: str, kind: str, data: bytes) -> bytes:
    if kind == "empty":
        return b""
    if kind == "truncated":
        cut = max(1, len(data) // 2)
        while cut > 1 and data[cut - 1:cut] == b"\n":
            cut -= 1  # a cut that ends on a newline would be a complete shorter file
        return data[:cut]
    if kind == "empty_object":
        return b"{}\n"
    if kind == "wrong_types":
        return wrong_types(file, data)
    if kind == "newer_schema":
        obj = json.loads(data)
        obj["schema_version"] = 99
        return json.dumps(obj).encode()
    if kind == "partial_last_line":
        if file == "task_state":
            return data.rstrip(b"\n")
        return data + b"2026-01-01T00:00:00Z TICK n=9 sta"
    return GARBAGE


@contextmanager
def unreadable(path: Path) -> Iterator[None]:
    """Every open() of `path` raises EACCES (root ignores chmod 000)."""
    target = os.path.abspath(path)
    inner = builtins.open

    def fake(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, str | os.PathLike) and os.path.abspath(os.fspath(file)) == target:
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(file))
        return inner(file, *args, **kwargs)

    inner_os_open = os.open

    def fake_os_open(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        reading = not flags & (os.O_WRONLY | os.O_RDWR)  # like open(): only reads are refused here
        if reading and isinstance(file, str | os.PathLike) and os.path.abspath(os.fspath(file)) == target:
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(file))
        return inner_os_open(file, flags, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(builtins, "open", fake)
        mp.setattr(io, "open", fake)
        mp.setattr(os, "open", fake_os_open)  # readers that open by descriptor (the hook path) too
        yield


def target_of(w: World, file: str) -> Path:
    return w.home / "config.md" if file == "config_md" else w.root / FILES[file]


def corrupt(w: World, file: str, kind: str) -> Path:
    target = target_of(w, file)
    if kind in ("unreadable",):
        return target
    if kind == "directory":
        target.unlink()
        target.mkdir()
        (target / "junk").write_text("x")
    elif kind == "symlink_loop":
        target.unlink()
        os.symlink(target.name, target)
    else:
        target.write_bytes(corrupted_bytes(file, kind, target.read_bytes()))
    return target


# ---- the verbs ------------------------------------------------------------------------------

def _hook(w: World, cwd: Path, file: Path) -> Result:
    payload = {"session_id": "s", "hook_event_name": "PreToolUse", "cwd": str(cwd), "tool_name": "Write",
               "tool_input": {"file_path": str(file), "content": "x = 1\n"}}
    return run_cli("--hook", "claude", cwd=cwd, stdin=json.dumps(payload))


VERBS: dict[str, Callable[[World], Result]] = {
    "transition": lambda w: run_cli("--transition", "bug_find", "--task", TASK, "--project", str(w.root)),
    "phase": lambda w: run_cli("--phase", "--task", TASK, "--project", str(w.root)),
    "approve_task": lambda w: run_cli("--approve", "--task", TASK, "--project", str(w.root)),
    "can_edit_task": lambda w: run_cli("--can-edit", "--task", TASK, "--file", "src/a.py", cwd=w.root),
    "can_edit_focus": lambda w: run_cli("--can-edit", "--file", "src/a.py", cwd=w.root),
    "hook": lambda w: _hook(w, w.root, w.root / "src" / "a.py"),
    "hook_worktree": lambda w: _hook(w, w.worktree, w.worktree / "src" / "a.py"),
    "check_gate": lambda w: run_cli("--check-gate", LOOP, "--project", str(w.root)),
    "can_continue": lambda w: run_cli("--can-continue", LOOP, "--project", str(w.root)),
    "approve_loop": lambda w: run_cli("--approve", "--loop", LOOP, "--project", str(w.root)),
    "can_edit_loop": lambda w: run_cli("--can-edit", "--loop", LOOP, "--loop-worktree", "--file", "src/a.py",
                                       "--project", str(w.root)),
    "tick": lambda w: run_cli("--mode", "tick", "--loop", LOOP, "--project", str(w.root), "--quiet",
                              entry="automaton-loop"),
}
BASELINE = {"transition": 0, "phase": 0, "approve_task": 1, "can_edit_task": 0, "can_edit_focus": 0, "hook": 0,
            "hook_worktree": 0, "check_gate": 0, "can_continue": 0, "approve_loop": 1, "can_edit_loop": 0,
            "tick": 0}
TASK_READERS = ("transition", "phase", "approve_task", "can_edit_task", "can_edit_focus", "hook", "hook_worktree",
                "check_gate", "tick")
# file -> verb -> the exit code that is the documented answer (README.md#exit-codes).
EXPECT: dict[str, dict[str, int]] = {
    "task_state": {v: 2 for v in TASK_READERS},
    # a broken or missing chain is tamper evidence: a refusal (1) naming the log; hooks deny (2)
    "task_log": {**{v: 1 for v in TASK_READERS}, "hook": 2, "hook_worktree": 2},
    "loop_state": {v: 2 for v in ("transition", "check_gate", "can_continue", "approve_loop", "can_edit_loop",
                                  "hook_worktree", "tick")},
    # the gate halts a tampered loop (human_intervention); a human --approve re-seals it (0)
    "loop_log": {"transition": 1, "check_gate": 1, "can_continue": 1, "approve_loop": 0, "can_edit_loop": 1,
                 "hook_worktree": 2, "tick": 1},
    # loop.json is sealed: an invalid one halts the loop (config_changed: <file>: <error>) and
    # every reader says bad input (2)
    "loop_json": {"check_gate": 2, "approve_loop": 2, "can_edit_loop": 2, "hook_worktree": 2, "tick": 2},
    "focus": {"can_edit_focus": 2, "hook": 2},
    "focus_log": {"can_edit_focus": 2, "hook": 2},
    "config_md": {"check_gate": 2, "approve_loop": 2, "can_edit_loop": 2, "hook_worktree": 2, "tick": 2},
}
COUNTERS = ("iteration_count", "spent_usd", "resumed_count")


def expected(file: str, kind: str, verb: str) -> int:
    """EXPECT, except that a human's --approve --loop restores an unreadable `.state.loop` from
    its intact log (0); a directory, a symlink loop or a permission error it cannot replace (2);
    and a directory at a task's `.state.log` is corrupt state (2) like one at its `.state`."""
    if file == "loop_state" and verb == "approve_loop" and kind not in ("directory", "unreadable", "symlink_loop"):
        return 0
    if file == "task_log" and kind == "directory":  # a directory is corrupt state (2) for every task file
        return 2
    return EXPECT[file][verb]


def _counters(w: World) -> dict[str, float] | None:
    path = w.root / FILES["loop_state"]
    try:
        state = json.loads(path.read_text())
        return {k: float(state[k]) for k in COUNTERS}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def test_baseline_every_verb_works_on_the_pristine_project(w: World) -> None:
    """Without corruption each verb gives its normal answer: the matrix below tests corruption."""
    for verb, run in VERBS.items():
        w.restore()
        before = agent_runs(w.record)
        res = run(w)
        assert res.code == BASELINE[verb], (verb, res.out, res.err)
        assert agent_runs(w.record) == before + (1 if verb == "tick" else 0), verb


CASES = [(f, k, v) for f in FILES for k in KINDS if applies(f, k) for v in EXPECT[f]]


@pytest.mark.parametrize(("file", "kind", "verb"), CASES, ids=[f"{f}-{k}-{v}" for f, k, v in CASES])
def test_corrupt_file_fails_closed(w: World, file: str, kind: str, verb: str) -> None:
    pristine = _counters(w)
    assert pristine is not None
    target = corrupt(w, file, kind)
    kept = None if kind in ("directory", "symlink_loop", "unreadable") else target.read_bytes()
    runs = agent_runs(w.record)
    with unreadable(target) if kind == "unreadable" else _nothing():
        res = VERBS[verb](w)
    said = res.out + res.err
    assert res.code == expected(file, kind, verb), f"{file}/{kind}/{verb}: exit {res.code}: {said}"
    assert "Traceback" not in said
    assert re.search(NEEDLE[file], said), f"{file}/{kind}/{verb}: the message does not name the file: {said}"
    assert agent_runs(w.record) == runs, "an agent was started"
    after = _counters(w)
    if file != "loop_state" or res.code == 0:  # a restored state never lowers a counter either
        assert after is not None and all(after[k] >= pristine[k] for k in COUNTERS), (pristine, after)
    _assert_kept(target, kind, kept)


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _assert_kept(target: Path, kind: str, kept: bytes | None) -> None:
    """The corrupted file is still there as it was, or was moved aside as evidence."""
    places = [target, *sorted(target.parent.glob(target.name + ".broken*"))]
    if kind == "directory":
        assert any(p.is_dir() and (p / "junk").is_file() for p in places), places
    elif kind == "symlink_loop":
        assert any(p.is_symlink() for p in places), places
    elif kept:  # an empty file holds nothing to keep
        assert any(p.is_file() and not p.is_symlink() and p.read_bytes() == kept for p in places), places
