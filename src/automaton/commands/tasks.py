"""Task use cases: create, transition, approve, phase (seed 003 §1–§6, DESIGN §4)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from automaton.commands.human import require_human
from automaton.core import phases as ph
from automaton.core.approvals import demotion, format_bind, signoffs_passed
from automaton.core.errors import BadInput, ExitCode, Refused
from automaton.core.names import TaskName, TaskRef
from automaton.core.outcome import Outcome
from automaton.store import chainlog, loops, tasks
from automaton.store.layout import COMPLETE_DIR, Project
from automaton.store.locks import locked

RESEAL_HINT = "a human re-seals it with: automaton --approve --task {ref} --to PHASE"


def _commit(rec: tasks.TaskRecord, phase: str, event: str, fields: dict[str, object]) -> None:
    chainlog.commit(rec.state_file, rec.log_file, f"{phase}\n".encode(), phase, event, fields, rec.chain)


def _fresh(project: Project, ref: TaskRef) -> tasks.TaskRecord:
    """Re-read under the lock, finishing an interrupted commit first."""
    rec = tasks.load(project, ref)
    tasks.recover(rec)
    return tasks.load(project, ref)


def _settle(rec: tasks.TaskRecord, out: Outcome) -> tasks.TaskRecord:
    """Under the lock: migrate a legacy folder, refuse a tampered one, apply a demotion."""
    if rec.tamper:
        raise Refused(f"{rec.tamper}; {RESEAL_HINT.format(ref=rec.ref)}")
    if rec.phase is None:
        inferred = ph.infer_phase(rec.present, _verdict(rec.dir))
        _commit(rec, inferred, "MIGRATED", {"task": str(rec.ref), "inferred_from": "artifacts"})
        out.lines.append(f"migrated {rec.ref}: no .state, phase {inferred!r} inferred from artifacts")
        rec = tasks.load_dir(rec.ref, rec.dir)
    assert rec.phase is not None
    dem = demotion(rec.phase, rec.bound(), rec.current_hashes())
    if dem is not None:
        _commit(rec, dem.to_phase, "DEMOTED", {"task": str(rec.ref), "from": dem.from_phase,
                                                "to": dem.to_phase, "file": dem.artifact})
        out.warnings.append(
            f"{rec.ref}: approved {dem.artifact} changed after sign-off; demoted"
            f" {dem.from_phase} -> {dem.to_phase}"
        )
        rec = tasks.load_dir(rec.ref, rec.dir)
    return rec


def _verdict(folder: Path) -> str | None:
    try:
        return ph.parse_verdict((folder / "VERDICT.md").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None


def create_task(project: Project, name: str, parent: str | None = None) -> Outcome:
    """Create `tasks/NAME/` (or `tasks/PARENT/NAME/`) with `.state` = `new`.

    Exit 2: invalid name, existing task, unknown parent. Exit 1: parent not at
    `decomposition:approved` (DESIGN §4 sub-tasks).
    """
    task = TaskName.of(name)
    if parent is None:
        ref = TaskRef(task)
        folder = project.tasks_dir / task
        if (project.tasks_dir / COMPLETE_DIR / task).exists():
            raise BadInput(f"task {task!r} already exists in tasks/complete/: choose another name")
        project.tasks_dir.mkdir(parents=True, exist_ok=True)
        return _make(project, ref, folder, None)
    pref = TaskRef.parse(parent)
    if pref.parent is not None:
        raise BadInput(f"--parent {parent!r} is a sub-task: sub-tasks cannot have sub-tasks")
    prec = tasks.load(project, pref)
    with locked(tasks.lock_path(prec.dir)):
        out = Outcome()
        prec = _settle(_fresh(project, pref), out)
        if prec.phase != f"decomposition:{ph.APPROVED}":
            raise Refused(
                f"parent {pref} is at {prec.phase!r}: sub-tasks are created only at"
                " 'decomposition:approved' (approve DECOMPOSITION.md first)"
            )
        made = _make(project, TaskRef(task, pref.name), prec.dir / task, prec.dir / "SPEC.md")
        made.lines[:0] = out.lines
        made.warnings[:0] = out.warnings
        return made


def _make(project: Project, ref: TaskRef, folder: Path, parent_spec: Path | None) -> Outcome:
    try:
        folder.mkdir()
    except FileExistsError:
        raise BadInput(f"task {str(ref)!r} already exists at {folder}") from None
    try:
        if parent_spec is not None and parent_spec.is_file():
            shutil.copyfile(parent_spec, folder / "PARENT_SPEC.md")
        rec = tasks.load_dir(ref, folder)
        with locked(tasks.lock_path(folder)):
            _commit(rec, ph.NEW, "CREATED", {"task": str(ref)})
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)  # nothing half-written
        raise
    rel = folder.relative_to(project.root)
    return Outcome(lines=[f"created task {ref} at {rel}/ (phase: new)"],
                   data={"task": str(ref), "phase": ph.NEW, "path": str(folder)})


def transition(project: Project, task: str, target: str) -> Outcome:
    """Move a task to `target` if every rule allows it (seed 003 §2, §4; seed 000 R8).

    Exit 1 with the rule and files when refused; exit 2 for an unknown task/phase or a
    corrupt `.state`.
    """
    ref = TaskRef.parse(task)
    if not ph.is_phase(target):
        raise BadInput(f"unknown phase {target!r}: one of {', '.join(ph.PHASES)}")
    rec = tasks.load(project, ref)
    with locked(tasks.lock_path(rec.dir)):
        out = Outcome()
        rec = _settle(_fresh(project, ref), out)
        current = rec.phase
        assert current is not None
        for loop_name, reason in loops.halted_owners(project, ref):
            raise Refused(
                f"task is bound to halted loop '{loop_name}' (halt_reason={reason})."
                f" --approve --loop {loop_name} to resume."
            )
        _check_edge(rec, current, target)
        moved = target == ph.COMPLETE and ref.parent is None
        dest = project.tasks_dir / COMPLETE_DIR / ref.name
        if moved and dest.exists():
            raise Refused(f"cannot complete {ref}: {dest} already exists; move it away first")
        fields: dict[str, object] = {"task": str(ref), "from": current, "to": target}
        if moved:
            fields["moved_to"] = f"tasks/{COMPLETE_DIR}/{ref.name}"
        _commit(rec, target, "TRANSITION", fields)
    if moved:
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(rec.dir, dest)
        out.lines.append(f"{ref}: {current} -> {target} (moved to tasks/{COMPLETE_DIR}/{ref.name}/)")
    else:
        out.lines.append(f"{ref}: {current} -> {target}")
    out.data = {"task": str(ref), "from": current, "to": target}
    return out


def _check_edge(rec: tasks.TaskRecord, current: str, target: str) -> None:
    need = ph.edge(current, target)
    if need is None:
        if ph.is_awaiting(current) and target == current.replace(ph.AWAITING, ph.APPROVED):
            raise Refused(
                f"{rec.ref} is at {current!r}: only a human sign-off moves it on —"
                f" run: automaton --approve --task {rec.ref}"
            )
        if ph.is_awaiting(current):
            raise Refused(
                f"{rec.ref} is at {current!r}: no transition past a sign-off without approval;"
                f" a human runs: automaton --approve --task {rec.ref}"
            )
        allowed = ", ".join(ph.successors(current)) or "none (a human decides with --approve --to)"
        raise Refused(f"no transition {current} -> {target} for {rec.ref}; allowed: {allowed}")
    if need is not ph.Need.ESCALATION:
        bad = {f: ph.forbidden_present(current, rec.present) for f in ("current", "target")}
        bad["target"] = ph.forbidden_present(target, rec.present)
        for which, files in bad.items():
            if files:
                phase = current if which == "current" else target
                raise Refused(
                    f"forbidden artifacts for {which} phase {phase!r} in {rec.dir}: {', '.join(files)};"
                    " remove them first (seed 003 §4)"
                )
    if need is ph.Need.ARTIFACT:
        art = ph.ARTIFACT[ph.base(current)]
        if art not in rec.present:
            raise Refused(f"{current} -> {target} needs {rec.dir / art}: write it first")
    elif need in (ph.Need.VERDICT_PASS, ph.Need.VERDICT_FAIL):
        verdict = _verdict(rec.dir)
        want = ("PASS",) if need is ph.Need.VERDICT_PASS else ("FAIL", "NEEDS_REVIEW")
        if verdict not in want:
            raise Refused(
                f"{current} -> {target} needs {rec.dir / 'VERDICT.md'} with a line"
                f" 'Verdict: {'|'.join(want)}' (found: {verdict or 'none'})"
            )
    elif need is ph.Need.SUBTASKS_COMPLETE:
        subs = rec.subtasks()
        if not subs:
            raise Refused(f"{rec.ref} has no sub-tasks: create them with --create-task NAME --parent {rec.ref}")
        open_subs = [s.name for s in subs if _sub_phase(rec.ref, s) != ph.COMPLETE]
        if open_subs:
            raise Refused(f"{rec.ref} cannot complete: sub-tasks not complete: {', '.join(open_subs)}")


def _sub_phase(parent: TaskRef, folder: Path) -> str | None:
    rec = tasks.load_dir(TaskRef(TaskName(folder.name), parent.name), folder)
    return None if rec.tamper else rec.phase


def approve(project: Project, task: str, to: str | None = None) -> Outcome:
    """Human sign-off: `X:awaiting_approval` -> `X:approved`, binding X's artifact SHA-256.

    With `to`: the human exit from `human_intervention`, or the re-seal of a tampered task;
    rebinds every approved artifact to its current content. Exit 1 without a human.
    """
    who = require_human("--approve")
    ref = TaskRef.parse(task)
    if to is not None and not ph.is_phase(to):
        raise BadInput(f"unknown phase {to!r}: one of {', '.join(ph.PHASES)}")
    rec = tasks.load(project, ref)
    with locked(tasks.lock_path(rec.dir)):
        out = Outcome()
        rec = _fresh(project, ref)
        if to is not None:
            return _approve_to(rec, to, who, out)
        rec = _settle(rec, out)
        current = rec.phase
        assert current is not None
        if not ph.is_awaiting(current):
            raise Refused(
                f"{ref} is at {current!r}: --approve needs an ':awaiting_approval' phase"
                " (or --to PHASE from human_intervention)"
            )
        art = ph.ARTIFACT[ph.base(current)]
        if art not in rec.present:
            raise Refused(f"nothing to approve: {rec.dir / art} is missing")
        target = current.replace(ph.AWAITING, ph.APPROVED)
        digest = tasks.sha256_file(rec.dir / art)
        _commit(rec, target, "APPROVED", {"task": str(ref), "from": current, "to": target, "by": who,
                                          "bind": format_bind({art: digest})})
    out.lines.append(f"{ref}: {current} -> {target} (approved by {who}; {art} sha256 {digest[:12]})")
    out.data = {"task": str(ref), "from": current, "to": target, "by": who}
    return out


def _approve_to(rec: tasks.TaskRecord, to: str, who: str, out: Outcome) -> Outcome:
    if not rec.tamper and rec.phase is not None and rec.phase != ph.HUMAN:
        raise Refused(
            f"{rec.ref} is at {rec.phase!r}: --approve --to only leaves human_intervention or"
            " re-seals a tampered task; use --transition, or escalate to human_intervention first"
        )
    bad = ph.forbidden_present(to, rec.present)
    if bad:
        raise Refused(f"phase {to!r} forbids {', '.join(bad)} in {rec.dir}: remove them first")
    bind = {ph.ARTIFACT[p]: tasks.sha256_file(rec.dir / ph.ARTIFACT[p]) for p in signoffs_passed(to)}
    event = "RESEALED" if rec.tamper else "APPROVED"
    previous = rec.phase or "unknown"
    fields: dict[str, object] = {"task": str(rec.ref), "from": previous, "to": to, "by": who}
    if rec.tamper:
        fields["tamper"] = rec.tamper
        # A broken chain is sealed off: the new line starts a fresh chain after a marker file.
        if not rec.chain.ok:
            os.replace(rec.log_file, rec.log_file.with_name(rec.log_file.name + ".broken"))
            rec = tasks.load_dir(rec.ref, rec.dir) if rec.state_file.exists() else rec
            rec.chain = chainlog.read_chain(rec.log_file)
    if bind:
        fields["bind"] = format_bind(bind)
    _commit(rec, to, event, fields)
    out.lines.append(f"{rec.ref}: {previous} -> {to} ({event.lower()} by {who})")
    out.data = {"task": str(rec.ref), "from": previous, "to": to, "by": who, "event": event}
    return out


def phase(project: Project, task: str) -> Outcome:
    """Print the phase; a legacy folder is migrated and a demotion applied (both said)."""
    ref = TaskRef.parse(task)
    rec = tasks.load(project, ref)
    with locked(tasks.lock_path(rec.dir)):
        out = Outcome()
        rec = _settle(_fresh(project, ref), out)
    out.lines.append(str(rec.phase))
    out.data = {"task": str(ref), "phase": rec.phase}
    return out


__all__ = ["ExitCode", "approve", "create_task", "phase", "transition"]
