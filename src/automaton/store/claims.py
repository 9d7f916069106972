"""Task claims: at most one loop works a task (`automaton --claim-loop-task NAME --task T`).

A claim is `.automaton/claims/<task>.claim` (a sub-task `P/S` is `P--S`: task names never hold
`--`), JSON `{"schema_version": 1, "task", "loop", "claimed_at"}`, written whole
(`store.atomic`). Every read-check-write of a task's claim holds the task's kernel lock
`.automaton/claims/<task>.lock` (`store.locks`), so two claims of one task are ordered; and
while it writes, it holds the tick lock of every other loop bound to the task (loop.json
`task` or `current_task`), taken without waiting: a tick of such a loop either runs already
(the claim is refused, Busy) or starts after the claim and reads it (`tick_refusal`, which
every tick checks while it holds its own tick lock, before it reserves anything). So a
claim never lands while another loop's tick works the task, and no tick starts on a task
another loop holds.

A claim holds while its loop exists and is running or paused (`live`). A halted or complete
loop's claim holds no longer: another loop may claim the task, and a tick of any loop bound
to it runs; a removed loop's claims are deleted (`release_all`). One a halted loop still
has when a human approves it holds again, unless another loop claimed the task meanwhile.
Without a claim nothing changes: two loops bound to one task tick as before. The folder is
read-only to every agent (it lies in `.automaton/`), so an agent can neither forge nor
delete a claim. Machines that do not share the folder do not share claims: a loop whose state
lives in a git remote claims there (`commands.remote_claims`), and that claim is not written
here.
"""

from __future__ import annotations

import json
import os
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from automaton.core import jsontext
from automaton.core.errors import AutomatonError, BadInput, CorruptState
from automaton.core.names import LoopName, TaskRef
from automaton.store.atomic import atomic_write
from automaton.store.chainlog import utc_now
from automaton.store.layout import Project
from automaton.store.locks import Busy, locked
from automaton.store.loops import Loop, list_loops, state_files

CLAIMS_DIR = "claims"
SCHEMA = 1
CLAIM_LOCK_TIMEOUT_S = 10.0  # a claim's read-check-write takes milliseconds; a tick holds it longer
LIVE = frozenset({"running", "paused"})


@dataclass(frozen=True)
class Claim:
    """Loop `loop` claimed task `task` (`TaskRef` text) at `claimed_at` (UTC ISO 8601)."""

    task: str
    loop: str
    claimed_at: str


def folder(project: Project) -> Path:
    """`.automaton/claims/`."""
    return project.dot / CLAIMS_DIR


def _stem(task: str) -> str:
    return str(TaskRef.parse(task)).replace("/", "--")


def claim_file(project: Project, task: str) -> Path:
    """The claim file of `task`; BadInput for an invalid task name."""
    return folder(project) / f"{_stem(task)}.claim"


def lock_file(project: Project, task: str) -> Path:
    """The kernel lock of `task`'s claim; BadInput for an invalid task name."""
    return folder(project) / f"{_stem(task)}.lock"


def read(project: Project, task: str) -> Claim | None:
    """The claim of `task`, None when there is none. CorruptState (exit 2) for a file that is
    not a claim of `task`: fail closed, a human removes it."""
    path = claim_file(project, task)
    try:
        data = jsontext.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptState(f"{path}: unreadable task claim ({exc}); remove it if no loop works task {task}") from None
    ref = str(TaskRef.parse(task))
    if (not isinstance(data, dict) or data.get("schema_version") != SCHEMA or data.get("task") != ref
            or not isinstance(data.get("loop"), str) or not isinstance(data.get("claimed_at"), str)):
        raise CorruptState(f"{path}: not a claim of task {task}; remove it if no loop works task {task}")
    return Claim(data["task"], data["loop"], data["claimed_at"])


def live(project: Project, loop: str) -> bool:
    """Whether a claim of `loop` holds: the loop exists and is running or paused. A state that
    cannot be read counts as live (fail closed: the claim is not taken over)."""
    try:
        return Loop.resolve(project, loop).read_state().status in LIVE
    except AutomatonError:  # only a loop that is gone or was never tracked lets the claim go
        return not _gone(project, loop)


def _gone(project: Project, loop: str) -> bool:
    """Whether loop `loop` has no folder, or a folder with neither its state nor its log (what
    `Loop.resolve` calls unknown or untracked). A tampered or unreadable state, a hidden key
    or a failing disk is not gone: its claim holds (fail closed)."""
    try:
        folder = project.loop_dir(LoopName.of(loop))
    except AutomatonError:
        return False
    if not os.path.lexists(folder):
        return True
    return folder.is_dir() and not state_files(folder)


def holder(project: Project, task: str, loop: str) -> Claim | None:
    """The live claim of `task` by a loop other than `loop`, None when there is none."""
    found = read(project, task)
    if found is None or found.loop == loop or not live(project, found.loop):
        return None
    return found


def _bound_others(project: Project, task: str, loop: str) -> list[Loop]:
    """The loops other than `loop` bound to `task` (`Loop.bound_tasks`); a loop whose state
    cannot be read counts as bound (fail closed)."""
    ref = TaskRef.parse(task)
    found = []
    for name in list_loops(project):
        if name == loop:
            continue
        try:
            other = Loop.resolve(project, name)
            bound = other.bound_tasks(other.read_state())
        except AutomatonError:  # untracked: it has no tick; any other error counts as bound
            if not _gone(project, name):
                found.append(Loop(project, LoopName.of(name), project.loop_dir(LoopName.of(name))))
            continue
        if any(_is(task_name, ref) for task_name in bound):
            found.append(other)
    return found


def _is(name: str, ref: TaskRef) -> bool:
    try:
        return TaskRef.parse(name) == ref
    except BadInput:
        return False


def claim(project: Project, task: str, loop: str) -> tuple[Claim, Claim | None]:
    """Loop `loop` claims `task`: (the claim, the stale claim it replaced or None). Idempotent
    for the same loop. Raises Busy (exit 1) when another loop's live claim holds the task, when
    a tick of another loop bound to the task runs now, or when another claim of the task holds
    its lock past CLAIM_LOCK_TIMEOUT_S."""
    with locked(lock_file(project, task), timeout_s=CLAIM_LOCK_TIMEOUT_S), ExitStack() as ticks:
        found = read(project, task)
        if found is not None and found.loop == loop:
            return found, None
        if found is not None and live(project, found.loop):
            raise Busy(f"task {task} is claimed by loop {found.loop} since {found.claimed_at}: it is released when"
                       f" {found.loop} completes, halts or is removed")
        for other in _bound_others(project, task, loop):
            try:
                ticks.enter_context(locked(other.tick_lock, timeout_s=0))
            except Busy:
                raise Busy(f"a tick of loop {other.name}, which is bound to task {task}, runs now: claim it when the"
                           " tick has ended") from None
        made = Claim(str(TaskRef.parse(task)), loop, utc_now())
        body = {"schema_version": SCHEMA, "task": made.task, "loop": made.loop, "claimed_at": made.claimed_at}
        atomic_write(claim_file(project, task), (json.dumps(body) + "\n").encode("utf-8"))
        return made, found


def release_all(project: Project, loop: str) -> list[str]:
    """Delete every claim of `loop` (its removal), each under its task's lock; the tasks released."""
    try:
        files = sorted(folder(project).glob("*.claim"))
    except OSError:
        return []
    released = []
    for path in files:
        task = path.stem.replace("--", "/")
        try:
            with locked(lock_file(project, task), timeout_s=CLAIM_LOCK_TIMEOUT_S):
                found = read(project, task)
                if found is not None and found.loop == loop:
                    path.unlink(missing_ok=True)
                    released.append(found.task)
        except BadInput:  # a file that is no claim's name: not ours to judge here
            continue
    return released


def tick_refusal(project: Project, tasks: list[str], loop: str) -> str | None:
    """Why a tick of `loop`, bound to `tasks`, may not run (one line), None when it may: another
    loop's live claim holds one of them. Read without the claim lock (a claim file is written
    whole); the caller holds the loop's tick lock, which a claim of another loop must take
    first (see the module text)."""
    for task in tasks:
        try:
            other = holder(project, task, loop)
        except BadInput:  # not a task name: the gates report that
            continue
        if other is not None:
            return f"task {task} is claimed by loop {other.loop} (--claim-loop-task, since {other.claimed_at})"
    return None
