"""`--accept-rollback`: a human accepts that a keyed log is older than its anchor.

A restored earlier copy of a task's, a loop's, the project config's or the focus's state and
log (or a deleted task or loop folder) reads as TAMPERED (`store.anchor`). When the human
meant it, this act shows what the anchor remembers of the lines that will be forgotten, asks
(`cli.confirm`, or `--yes`), then re-anchors the log at its present head and appends a keyed
`ROLLBACK_ACCEPTED by=… from_line=… to_line=… lost_lines=…` line to it (a deleted folder's
anchor is dropped instead: there is no log left to write in).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from automaton.commands.human import require_human
from automaton.commands.reviews import Review
from automaton.core.chain import ChainCheck
from automaton.core.errors import BadInput, Refused
from automaton.core.names import LoopName, TaskRef
from automaton.core.outcome import Outcome
from automaton.store import anchor, chainlog, loops, project_config, tasks
from automaton.store.layout import Project
from automaton.store.locks import locked

ACTION = "--accept-rollback"
EVENT = "ROLLBACK_ACCEPTED"


@dataclass(frozen=True)
class Target:
    """The log a rollback is accepted for: its `log`, the writer's `lock`, a `label` for humans
    (`tasks/T`, `loop L`, `config`, `focus`) and the fields naming it in its log line."""

    log: Path
    lock: Path
    label: str
    fields: dict[str, object]


def target(project: Project, *, task: str | None = None, loop: str | None = None, config: bool = False) -> Target:
    """The Target named by exactly one of the arguments; BadInput (exit 2) otherwise. (A
    rolled-back focus needs no such act: `--focus TASK` by a human starts its log afresh.)"""
    if sum((task is not None, loop is not None, config)) != 1:
        raise BadInput(f"{ACTION} takes exactly one of --task T, --loop NAME or --config")
    if task is not None:
        ref = TaskRef.parse(task)
        folder = project.task_dir(ref)
        return Target(folder / tasks.LOG, tasks.lock_path(project, ref), f"task {ref}", {"task": str(ref)})
    if loop is not None:
        name = LoopName.of(loop)
        folder = project.loop_dir(name)
        # The loop's own state lock; a deleted loop's folder is not made again for a lock.
        lock = folder / loops.STATE_LOCK if folder.is_dir() else project.dot / f".rollback-{name}.lock"
        return Target(folder / loops.LOG_FILE, lock, f"loop {name}", {"loop": str(name)})

    return Target(project.config_log, project.dot / project_config.LOCK, "the project config", {})


def _facts(t: Target) -> tuple[ChainCheck, anchor.Anchor | None, str]:
    """(the chain now, its anchor, the `seen` line binding an approval to both)."""
    chainlog.settle_anchor(t.log)
    chain = chainlog.read_chain(t.log)
    try:
        found = anchor.read(t.log)
    except anchor.Unreadable:
        found = None
    except anchor.Hidden:
        raise Refused(f"{ACTION} cannot read the anchors here (an agent's sandbox): run it outside") from None
    seen = f"{len(chain.lines)}:{chain.last_hash}:{found.count if found else 0}:{found.mac if found else ''}"
    return chain, found, seen


def _kept(chain: ChainCheck, found: anchor.Anchor | None) -> int:
    """How many leading lines the log shares with what the anchor remembers."""
    if found is None:
        return len(chain.lines)
    kept = min(len(chain.lines), found.count)
    first = found.count - len(found.tail) + 1
    for n in range(max(first, 1), kept + 1):
        if chain.lines[n - 1].raw != found.tail[n - first]:
            return n - 1
    return kept


def review(project: Project, t: Target) -> Review:
    """What accepting the rollback of `t` forgets. Refused (exit 1) when its log is not behind
    its anchor (nothing to accept); the Review asks the human."""
    with locked(t.lock):
        chain, found, seen = _facts(t)
    if not chain.rolled_back:
        if not os.path.lexists(t.log):  # no log and no anchor of one: a name nothing knows
            raise BadInput(f"{ACTION}: {t.label} has no log and no anchor: check the name (automaton --audit"
                           " lists the tasks and loops it knows, and the missing ones)")
        why = f" ({chain.error})" if not chain.ok else ""
        raise Refused(f"nothing to accept: the log of {t.label} is not older than its anchor{why}"
                      f"{_resealed(project, t)}")
    rel = _rel(project, t.log)
    kept = _kept(chain, found)
    gone = "" if os.path.lexists(t.log) else " (the log is gone)"
    lines = [f"{rel}: {chain.error}",
             f"{rel} has {len(chain.lines)} lines{gone}; automaton last wrote line"
             f" {found.count if found else '?'}. Accepting forgets what came after line {kept}:"]
    lost = found.lost_from(kept) if found is not None else []
    if found is not None and found.count - kept > len(lost):
        lines.append(f"  ({found.count - kept - len(lost)} earlier lines are not kept by the anchor)")
    lines += [f"  - {n}: {raw}" for n, raw in lost]
    if len(chain.lines) > kept:
        lines.append(f"and keeps the restored lines {kept + 1}..{len(chain.lines)} in their place")
    return Review(subject=f"rollback of {t.label}", seen=seen, ask=True, lines=lines)


def _resealed(project: Project, t: Target) -> str:
    """For a loop its gate halted because its log was rolled back: that the gate re-sealed it in
    a new log (so no rollback is left here) and the human act that clears the halt, as the gate
    says it (`store.loops.resealed_finding`); "" for anything else."""
    name = t.fields.get("loop")
    if not isinstance(name, str):
        return ""
    try:
        state = loops.inspect(project, name).state
    except (BadInput, OSError, ValueError):  # unreadable or untracked: the plain answer stands
        return ""
    detail = state.halt_detail or ""
    if state.status != "halted" or "rolled back" not in detail:
        return ""
    return (f": its gate found it rolled back, re-sealed loop {name} halted in a new log and still counts what"
            f" the restore undid; a human who meant the restore clears the halt with automaton --approve --loop {name}")


def accept(project: Project, t: Target, reviewed: Review) -> Outcome:
    """Re-anchor `t`'s log as it is now (a human act) and log `ROLLBACK_ACCEPTED` in it.
    data: {"log": path, "by", "from_line": int, "to_line": int, "lost_lines": int}. Exit 1
    without a human, or when the log or its anchor changed since `reviewed`."""
    who = require_human(ACTION)
    with locked(t.lock):
        chain, found, seen = _facts(t)
        if seen != reviewed.seen or not chain.rolled_back:
            raise Refused(f"the log of {t.label} or its anchor changed while you reviewed it: nothing was"
                          f" accepted; run automaton {ACTION} again")
        before = found.count if found is not None else 0
        kept = _kept(chain, found)
        anchor.forget(t.log)
        data: dict[str, object] = {"log": str(t.log), "by": who, "from_line": before,
                                   "to_line": len(chain.lines), "lost_lines": max(before - kept, 0)}
        if os.path.lexists(t.log):
            fields = {**t.fields, "by": who, "from_line": before, "to_line": len(chain.lines),
                      "lost_lines": data["lost_lines"]}
            chainlog.append_event(t.log, EVENT, fields, chain.last_state or "none", chainlog.read_chain(t.log))
            line = f"{t.label}: rollback accepted by {who}; its log is anchored again at line {len(chain.lines) + 1}"
        else:
            line = f"{t.label}: its deletion is accepted by {who}; its anchor is dropped"
    return Outcome(lines=[line], data=data)


def _rel(project: Project, path: Path) -> str:
    try:
        return path.relative_to(project.root).as_posix()
    except ValueError:
        return str(path)
