"""Task use cases: create, transition, approve, phase (README.md#tasks-phases-and-sign-offs).

Every change to a task happens under its lock (`store.tasks.lock_path`), on a record re-read
under that lock after finishing any interrupted commit, so concurrent commands never lose an
update and exactly one of several racing transitions wins.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from automaton.commands.excludes import TASK_RUNTIME, exclude
from automaton.commands.focus import clear_on_complete
from automaton.commands.human import Human, acting
from automaton.core import phases as ph
from automaton.core.approvals import demotion, format_bind, signoffs_passed
from automaton.core.errors import BadInput, ExitCode, Refused
from automaton.core.names import TaskName, TaskRef, did_you_mean
from automaton.core.outcome import Outcome
from automaton.store import anchor, chainlog, loops, tasks
from automaton.store.layout import COMPLETE_DIR, Project
from automaton.store.locks import locked

# Inferred phases a legacy folder may take without a human: nothing signed off yet.
MIGRATE_FREELY = frozenset({ph.NEW, "research"})
RESEAL_HINT = "a human re-seals it with: automaton --approve --task {ref} --to PHASE"


def _commit(rec: tasks.TaskRecord, phase: str, event: str, fields: dict[str, object]) -> None:
    chainlog.commit(rec.state_file, rec.log_file, f"{phase}\n".encode(), phase, event, fields, rec.chain)


def _require(project: Project, ref: TaskRef) -> str:
    """BadInput (exit 2) for an unknown task, before any lock file is created for it.

    Returns `tasks.deleted_state` (read before the lock exists): "" or why a folder without
    `.state` and `.state.log` must not be migrated as legacy."""
    folder = project.task_dir(ref)
    if not folder.is_dir():
        raise BadInput(f"unknown task {str(ref)!r}{tasks.task_hint(project, ref)} (no folder {folder});"
                       " create it with automaton --create-task")
    return tasks.deleted_state(project, ref)


def _fresh(project: Project, ref: TaskRef, *, strict: bool = True) -> tasks.TaskRecord:
    """Under the lock: finish or drop an interrupted commit, then read the task."""
    folder = project.task_dir(ref)
    chainlog.recover(folder / tasks.STATE, folder / tasks.LOG, tasks.phase_token)
    return tasks.load(project, ref, strict=strict)


def _place(project: Project, rec: tasks.TaskRecord, out: Outcome) -> tasks.TaskRecord:
    """Under the lock: a top-level task at `complete` lives in tasks/complete/, any other in tasks/.

    Also finishes a completion whose folder move was interrupted (the phase is logged first).
    """
    if rec.ref.parent is not None or rec.phase is None:
        return rec
    live = project.tasks_dir / rec.ref.name
    done = project.tasks_dir / COMPLETE_DIR / rec.ref.name
    src, dest = (live, done) if rec.phase == ph.COMPLETE else (done, live)
    if rec.dir != src:
        return rec
    if dest.exists():
        out.warnings.append(f"{rec.ref} is at {rec.phase!r} but {dest} exists: move one of them away")
        return rec
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(src, dest)
    anchor.move_tree(src, dest)  # its logs' anchors (sub-tasks' too) follow the folder
    out.lines.append(f"{rec.ref}: moved to {dest.relative_to(project.root)}/")
    return tasks.load_dir(rec.ref, dest)


def _settle(project: Project, rec: tasks.TaskRecord, out: Outcome, deleted: str = "") -> tasks.TaskRecord:
    """Under the lock: refuse a tampered task, migrate a legacy folder, apply a demotion.

    `deleted` (from `_require`): the folder is not legacy, its state files were deleted."""
    if rec.tamper:
        raise Refused(f"{rec.tamper}; {RESEAL_HINT.format(ref=rec.ref)}")
    if rec.phase is None and deleted:
        raise Refused(f"{deleted}; {RESEAL_HINT.format(ref=rec.ref)}")
    if rec.phase is None:
        inferred = ph.infer_phase(rec.present, _verdict(rec.dir))
        # A legacy folder's phase is inferred from its artifacts. Anyone can create files, so a phase past
        # the first sign-off is not trusted on its own: it goes to the human, who confirms it
        # with --approve --to (no sign-off is skipped by hand-making a folder).
        written = inferred if inferred in MIGRATE_FREELY else ph.HUMAN
        _commit(rec, written, "MIGRATED", {"task": str(rec.ref), "inferred_from": "artifacts",
                                           "inferred": inferred})
        if written == inferred:
            out.lines.append(f"migrated {rec.ref}: no .state, phase {inferred!r} inferred from artifacts")
        else:
            out.lines.append(
                f"migrated {rec.ref}: no .state; artifacts suggest {inferred!r}, which would skip"
                f" sign-offs, so it waits at human_intervention — a human confirms with:"
                f" automaton --approve --task {rec.ref} --to {inferred}"
            )
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
    return _place(project, rec, out)


def _refusal(out: Outcome, exc: Refused) -> Refused:
    """A refusal that also says what this command already did (a migration or demotion)."""
    done = [*out.lines, *out.warnings]
    return Refused(f"{'; '.join(done)}; then refused: {exc.message}") if done else exc


def _verdict(folder: Path) -> str | None:
    try:
        return ph.parse_verdict((folder / "VERDICT.md").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None


def create_task(project: Project, name: str, parent: str | None = None) -> Outcome:
    """Create `tasks/NAME/` (or `tasks/PARENT/NAME/`) with `.state` = `new`.

    Exit 2: invalid name, existing task, unknown parent. Exit 1: parent not at
    `decomposition:approved`. data: {"task", "phase", "path"}.
    """
    task = TaskName.of(name)
    if parent is None:
        ref = TaskRef(task)
        if (project.tasks_dir / COMPLETE_DIR / task).exists():
            raise BadInput(f"task {task!r} already exists in tasks/complete/: choose another name")
        project.tasks_dir.mkdir(parents=True, exist_ok=True)
        return _make(project, ref, project.tasks_dir / task, None)
    pref = TaskRef.parse(parent)
    if pref.parent is not None:
        raise BadInput(f"--parent {parent!r} is a sub-task: sub-tasks cannot have sub-tasks")
    deleted = _require(project, pref)
    with locked(tasks.lock_path(project, pref)):
        out = Outcome()
        prec = _settle(project, _fresh(project, pref), out, deleted)
        if prec.phase != f"decomposition:{ph.APPROVED}":
            raise _refusal(out, Refused(
                f"parent {pref} is at {prec.phase!r}: sub-tasks are created only at"
                " 'decomposition:approved' (approve DECOMPOSITION.md first)"
            ))
        made = _make(project, TaskRef(task, pref.name), prec.dir / task, prec.dir / "SPEC.md")
    made.lines[:0] = out.lines
    made.warnings[:0] = out.warnings
    return made


def _make(project: Project, ref: TaskRef, folder: Path, parent_spec: Path | None) -> Outcome:
    try:
        folder.mkdir()  # atomic: of two racing creates, exactly one gets here
    except FileExistsError:
        raise BadInput(f"task {str(ref)!r} already exists at {folder}") from None
    try:
        if parent_spec is not None and parent_spec.is_file():
            shutil.copyfile(parent_spec, folder / "PARENT_SPEC.md")
        with locked(tasks.lock_path(project, ref)):
            rec = tasks.load_dir(ref, folder)
            _commit(rec, ph.NEW, "CREATED", {"task": str(ref)})
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)  # nothing half-written
        raise
    rel = folder.relative_to(project.root)
    out = Outcome(lines=[f"created task {ref} at {rel}/ (phase: new)"],
                  data={"task": str(ref), "phase": ph.NEW, "path": str(folder)})

    if exclude(project, TASK_RUNTIME, "# automaton task locks and temp files"):
        out.lines.append("added task lock/temp patterns to .git/info/exclude (.state and .state.log stay trackable)")
    return out


def transition(project: Project, task: str, target: str) -> Outcome:
    """Move a task to `target` if every rule allows it (edges, artifacts, forbidden artifacts, halted owner loops).

    Exit 1 with the rule and files when refused; exit 2 for an unknown task/phase or a
    corrupt `.state`. data: {"task", "from", "to"}.
    """
    ref = TaskRef.parse(task)
    if not ph.is_phase(target):
        raise BadInput(_unknown_phase(target))
    deleted = _require(project, ref)
    with locked(tasks.lock_path(project, ref)):
        out = Outcome()
        rec = _settle(project, _fresh(project, ref), out, deleted)
        current = rec.phase
        assert current is not None
        try:
            for loop_name, reason in loops.halted_owners(project, ref):
                raise Refused(
                    f"task is bound to halted loop '{loop_name}' (halt_reason={reason})."
                    f" --approve --loop {loop_name} to resume."
                )
            _check_edge(rec, current, target)
            dest = project.tasks_dir / COMPLETE_DIR / ref.name
            if target == ph.COMPLETE and ref.parent is None and dest.exists():
                raise Refused(f"cannot complete {ref}: {dest} already exists; move it away first")
        except Refused as exc:
            raise _refusal(out, exc) from None
        _commit(rec, target, "TRANSITION", {"task": str(ref), "from": current, "to": target})
        out.lines.append(f"{ref}: {current} -> {target}")
        _place(project, tasks.load_dir(ref, rec.dir), out)
    _unfocus(project, ref, target, out)
    out.data = {"task": str(ref), "from": current, "to": target}
    return out


def _unfocus(project: Project, ref: TaskRef, phase: str, out: Outcome) -> None:
    """A task that reached `complete` is no longer the focus (`commands.focus.clear_on_complete`):
    a focus left on it would deny every agent edit with nothing naming why."""
    if phase != ph.COMPLETE:
        return
    line = clear_on_complete(project, ref)
    if line:
        out.lines.append(line)


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
    if need is not ph.Need.ESCALATION:  # stopping is always allowed; advancing is guarded
        for which, phase in (("current", current), ("target", target)):
            files = ph.forbidden_present(phase, rec.present)
            if files:
                raise Refused(
                    f"forbidden artifacts for {which} phase {phase!r} in {rec.dir}: {', '.join(files)};"
                    " remove them first"
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
    rec = tasks.load_dir(TaskRef(TaskName(folder.name), parent.name), folder, strict=False)
    return None if rec.tamper else rec.phase


def approve(project: Project, task: str, to: str | None = None, *, human: Human | None = None,
            seen: tuple[str, str] | None = None) -> Outcome:
    """Human sign-off: `X:awaiting_approval` -> `X:approved`, binding X's artifact SHA-256.

    With `to`: the human exit from `human_intervention`, or the re-seal of a tampered (also a
    corrupt) task; rebinds every approved artifact to its current content. Exit 1 without a
    human (no terminal and no AUTOMATON_APPROVER). data: {"task", "from", "to", "by"} (and
    "via" with `human`).

    `human`: a human the caller established (commands.human.Human) instead of the terminal
    check; logged as `by=` and `via=`. `seen`: (phase, artifact sha256 hex) the human was shown;
    the sign-off is refused (exit 1, nothing written) unless the task is still at that phase and
    its artifact still has that content.
    """
    ref = TaskRef.parse(task)
    if to is not None and not ph.is_phase(to):
        raise BadInput(_unknown_phase(to))
    deleted = _require(project, ref)  # a misspelt name is named (did you mean …) before the human check
    who, via = acting("--approve", human)
    with locked(tasks.lock_path(project, ref)):
        out = Outcome()
        if to is not None:
            return _approve_to(project, _fresh(project, ref, strict=False), to, who, out, via)
        rec = _settle(project, _fresh(project, ref), out, deleted)
        current = rec.phase
        assert current is not None
        if not ph.is_awaiting(current):
            raise _refusal(out, Refused(
                f"{ref} is at {current!r}: --approve needs an ':awaiting_approval' phase"
                " (or --to PHASE from human_intervention)"
            ))
        art = ph.ARTIFACT[ph.base(current)]
        if art not in rec.present:
            raise _refusal(out, Refused(f"nothing to approve: {rec.dir / art} is missing"))
        target = current.replace(ph.AWAITING, ph.APPROVED)
        digest = tasks.sha256_file(rec.dir / art)
        if digest == tasks.UNREADABLE:  # a FIFO, device or unreadable file: nothing a human can review
            raise _refusal(out, Refused(f"nothing to approve: {rec.dir / art} is not a readable regular file;"
                                        " replace it with the artifact itself"))
        if seen is not None and seen != (current, digest):
            raise _refusal(out, Refused(
                f"{ref} changed while you reviewed it (now {current!r}, {art} sha256 {digest[:12]}; you saw"
                f" {seen[0]!r}, sha256 {seen[1][:12]}): nothing was approved; review it again"
            ))
        _commit(rec, target, "APPROVED", {"task": str(ref), "from": current, "to": target, "by": who, **via,
                                          "bind": format_bind({art: digest})})
    out.lines.append(f"{ref}: {current} -> {target} (approved by {who}; {art} sha256 {digest[:12]})")
    out.data = {"task": str(ref), "from": current, "to": target, "by": who, **via}
    return out


def _approve_to(project: Project, rec: tasks.TaskRecord, to: str, who: str, out: Outcome,
                via: dict[str, object]) -> Outcome:
    # An unkeyed (legacy) log is vouched for like a tampered one: the human's line keys it.
    if not rec.tamper and not rec.chain.legacy and rec.phase is not None and rec.phase != ph.HUMAN:
        raise Refused(
            f"{rec.ref} is at {rec.phase!r}: --approve --to only leaves human_intervention or"
            " re-seals a tampered or unkeyed task; use --transition, or escalate to human_intervention first"
        )
    bad = ph.forbidden_present(to, rec.present)
    if bad:
        raise Refused(f"phase {to!r} forbids {', '.join(bad)} in {rec.dir}: remove them first")
    # The human vouches for the folder as it is now: every sign-off artifact up to `to`
    # is bound to its current content (MISSING included, so a later one is a change too).
    bind = {ph.ARTIFACT[p]: tasks.sha256_file(rec.dir / ph.ARTIFACT[p]) for p in signoffs_passed(to)}
    event = "RESEALED" if rec.tamper else "APPROVED"
    previous = rec.phase or ("corrupt" if rec.tamper else "none")
    fields: dict[str, object] = {"task": str(rec.ref), "from": previous, "to": to, "by": who, **via}
    if rec.tamper:
        fields["tamper"] = rec.tamper
        # A broken chain, or one copied from another task, is kept as evidence; the new line
        # starts a fresh one.
        if not rec.chain.ok or tasks.foreign_line(rec.chain, rec.ref):
            if os.path.lexists(rec.log_file):  # (a deleted log reads as rolled back: nothing to keep)
                aside = _aside(rec.log_file)
                os.replace(rec.log_file, aside)
                fields["broken_log"] = aside.name
            anchor.forget(rec.log_file)  # the human's line starts a new chain, anchored afresh
            rec.chain = chainlog.read_chain(rec.log_file)
    if bind:
        fields["bind"] = format_bind(bind)
    _commit(rec, to, event, fields)
    out.lines.append(f"{rec.ref}: {previous} -> {to} ({event.lower()} by {who})")
    _place(project, tasks.load_dir(rec.ref, rec.dir), out)
    _unfocus(project, rec.ref, to, out)
    out.data = {"task": str(rec.ref), "from": previous, "to": to, "by": who, **via, "event": event}
    return out


def _aside(log_file: Path) -> Path:
    """A new name for a broken log: `.state.log.broken`, then `.broken-2`, ... (never overwrites)."""
    candidate = log_file.with_name(log_file.name + ".broken")
    n = 1
    while candidate.exists():
        n += 1
        candidate = log_file.with_name(f"{log_file.name}.broken-{n}")
    return candidate


def phase(project: Project, task: str) -> Outcome:
    """Print the phase; a legacy folder is migrated and a demotion applied (both said).

    data: {"task", "phase"}.
    """
    ref = TaskRef.parse(task)
    deleted = _require(project, ref)
    with locked(tasks.lock_path(project, ref)):
        out = Outcome()
        rec = _settle(project, _fresh(project, ref), out, deleted)
    out.lines.append(str(rec.phase))
    out.data = {"task": str(ref), "phase": rec.phase}
    return out


__all__ = ["ExitCode", "approve", "create_task", "phase", "transition"]


def _unknown_phase(word: str) -> str:
    """The one-line error for a phase name that is none: the close ones, else every phase."""
    return f"unknown phase {word!r}{did_you_mean(word, ph.PHASES) or ': one of ' + ', '.join(ph.PHASES)}"
