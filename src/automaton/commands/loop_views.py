"""Read-side loop use cases: `--can-edit --loop`, `--loop-list` and the Loops
section of `--audit` (docs/architecture.md#stable-interfaces)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from automaton.commands.can_edit import Decision, own_install, protected, task_scope_allows
from automaton.core import jsontext
from automaton.core.digest import sha256_hex
from automaton.core.errors import BadInput, CorruptState, ExitCode
from automaton.core.loopconfig import SANDBOX_MODES
from automaton.core.loopstate import SCHEMA_VERSION, LoopState
from automaton.core.names import LoopName, TaskRef
from automaton.core.outcome import Outcome
from automaton.resolve import posix, real, relative_parts
from automaton.store import loops, tasks
from automaton.store.config import loop_defaults
from automaton.store.layout import Project

TYPE_CHECKING = False  # typing (with contextlib and collections.abc) stays off --loop-list's path
if TYPE_CHECKING:
    from typing import Any

    from automaton.core.loopconfig import LoopConfig

# ---- can-edit, list, audit ------------------------------------------------------------------

@dataclass(frozen=True)
class LoopFacts:
    """What an edit decision in a loop's worktree reads of the loop, read once per decision call
    (a hook call or `--can-edit --loop`, however many paths it names): the resolved `loop`, its
    validated `state`, and loop.json as `config`, or as `error` the BadInput that says why it is
    not valid now (an edit is then denied; the loop's tasks are the state's alone)."""

    loop: loops.Loop
    state: LoopState
    config: LoopConfig | None
    error: BadInput | None

    @property
    def tasks(self) -> list[str]:
        """The task(s) the loop works on, as `store.loops.Loop.bound_tasks` orders them."""
        return loops.bound_task_names(self.config.task if self.config else None, self.state)


def loop_facts(project: Project, name: str, *, config_first: bool = False) -> LoopFacts:
    """`LoopFacts` of loop `name`. BadInput for an unknown or untracked loop, CorruptState for
    an unreadable state, StateTampered for a state its log did not seal; `config_first`: an
    invalid loop.json raises its BadInput before the state is read (`--can-edit --loop` reports
    it first, as the gate does), instead of being carried in `error`."""
    loop = loops.Loop.resolve(project, name)
    try:
        config, error = loop.read_config(), None
    except BadInput as exc:
        if config_first:
            raise
        config, error = None, exc
    return LoopFacts(loop, loop.read_state(), config, error)


def can_edit_loop(project: Project, name: str, file: str, *, loop_worktree: bool, task: str | None = None,
                  cwd: Path | None = None, facts: LoopFacts | None = None) -> Decision:
    """`file` must be inside the loop's worktree, match its file_scope (relative to the
    worktree root) and not be protected; with `task`, also that task's phase scope. A relative
    `file` is anchored at the worktree (`loop_worktree`) or at `cwd` (default: project root).
    `facts`: the loop as the caller read it for this decision (`loop_facts`), else read here.
    BadInput for an invalid loop.json (the edit is refused), and as `loop_facts` says."""
    facts = facts or loop_facts(project, name, config_first=True)
    if facts.loop.name != name:
        raise BadInput(f"loop {name!r}: the facts handed over are loop {facts.loop.name!r}'s")
    if facts.error is not None:
        raise facts.error
    config, state = facts.config, facts.state
    assert config is not None  # read without error
    root = real(project.root, project.root)
    worktree = real(state.worktree_path or project.worktree_dir(LoopName(config.name)), root)
    path = real(file, worktree if loop_worktree else (cwd or root))
    parts = relative_parts(path, worktree)
    if parts is None:
        return Decision(False, f"{path} is outside the worktree {worktree} of loop {config.name}", str(path))
    why = protected(parts)
    if why:
        return Decision(False, f"{posix(parts)}: {why}", str(path))
    why = own_install(path)
    if why:
        return Decision(False, why, str(path))
    from automaton.core.gates import scope_spec  # here: --loop-list never matches a path

    if not scope_spec(config.blast_radius.file_scope).match_file(posix(parts)):
        return Decision(False, f"{posix(parts)} is outside the file_scope of loop {config.name}"
                        f" ({', '.join(config.blast_radius.file_scope)})", str(path))
    if task is not None:
        rec = tasks.load(project, TaskRef.parse(task))
        task_parts = relative_parts(real(rec.dir, root), root)
        if rec.tamper or rec.phase is None or task_parts is None or not task_scope_allows(rec.phase, parts, task_parts):
            return Decision(False, f"{posix(parts)} is outside the scope of task {rec.ref} at {rec.phase}", str(path))
    return Decision(True, f"{posix(parts)} is in the worktree and file_scope of loop {config.name}", str(path))


def _rows(project: Project) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for loop in loops.list_loops(project):
        row: dict[str, Any] = {"name": loop, "status": None, "halt_reason": None, "iteration_count": None,
                               "started_at": None, "task": None, "flag": None, "spent_usd": None, "last_score": None,
                               "sandbox": None}
        try:
            # Resolved once, then read through the handle: the by-name readers resolve the
            # loop again on every call (a few `stat` calls each).
            handle = loops.Loop.resolve(project, loop)
            rec = handle.inspect()
        except CorruptState as exc:
            row["flag"] = f"CORRUPT: {exc.message}"
        except BadInput as exc:
            row["flag"] = f"UNTRACKED: {loops.untracked_hint(loop)}" if "UNTRACKED" in exc.message else exc.message
        else:
            st = rec.state
            row.update(status=st.status, halt_reason=st.halt_reason, iteration_count=st.iteration_count,
                       started_at=st.started_at, spent_usd=st.spent_usd,
                       last_score=st.last_verdict.score if st.last_verdict is not None else None)
            # loop.json read once for both (Loop.bound_tasks reads it for the task alone): the
            # task is loop.json's `task`, else the state's current_task, as bound_tasks orders them
            task, row["sandbox"] = _shown_config(handle, rec)
            row["task"] = task or rec.state.current_task
            if rec.tamper:
                row["flag"] = f"TAMPERED: {rec.tamper}"
            elif rec.state.status == "halted":
                row["flag"] = f"HALTED: {rec.state.halt_reason}; a human runs automaton --approve --loop {loop}"
            elif rec.chain.legacy and rec.state.status != "complete":  # nothing runs a complete loop
                fix = (f"automaton --resume-loop {loop} keys it" if rec.state.status == "paused"
                       else "the loop's next tick keys it")
                row["flag"] = (f"UNKEYED (legacy): {rec.log_file} has no keyed line: written before automaton"
                               f" keyed its logs, or wholly replaced by someone without the key; {fix}")
        rows.append(row)
    for stray in _stray_entries(project):
        rows.append({"name": stray, "status": None, "halt_reason": None, "iteration_count": None,
                     "started_at": None, "task": None, "flag": f"NOT A LOOP: {loops.not_a_folder(project, stray)}",
                     "spent_usd": None, "last_score": None, "sandbox": None})
    return sorted(rows, key=lambda r: str(r["name"]))


def _stray_entries(project: Project) -> list[LoopName]:
    """`loops.stray_entries`, without its look at every entry when one listing shows nothing but
    real folders (none of which can be stray): that look cost a few stat calls per loop."""
    import os

    try:
        with os.scandir(project.loops_dir) as listing:
            if all(entry.is_dir(follow_symlinks=False) for entry in listing):
                return []
    except OSError:
        pass
    return loops.stray_entries(project)


def _shown_config(loop: loops.Loop, rec: loops.LoopRecord) -> tuple[str | None, str | None]:
    """loop.json's `task` and `sandbox` ("on" | "off") for a row; (None, None) when loop.json
    cannot be read or does not validate now (the gate says why; the row's sandbox is then null).

    Bytes whose SHA-256 is the seal of an untampered state are decoded, not validated again:
    only a validated loop.json is ever sealed (`--create-loop` and `--approve --loop` seal the
    `LoopConfig` that `Loop.read_config` returned), and the keyed log vouches for the seal. Of
    what else validity depends on, this automaton's schema version, the name and a readable
    config.md are checked; a config.md whose new default values make the sealed file invalid
    (a default budget below its tick cap) still shows the sealed task and sandbox here, while
    the gate and `--loop-status` report the error. Validating 500 sealed files cost a fifth of
    `--loop-list` (bench/bench_list.py). Any other bytes are validated in full; a brake never
    reads this."""
    data = loop.config_bytes()
    if data is not None and not rec.tamper and sha256_hex(data) == rec.state.config_sha256:
        try:
            sealed = jsontext.loads(data)
            loop_defaults()  # what validation reads besides the bytes: a broken config.md fails it
        except (ValueError, BadInput):  # validate in full below, which says so
            sealed = None
        if (isinstance(sealed, dict) and sealed.get("schema_version") == SCHEMA_VERSION
                and sealed.get("name") == loop.name):  # as `Loop.read_config` checks it
            task, sandbox = sealed.get("task"), sealed.get("sandbox", "on")
            if (task is None or isinstance(task, str)) and sandbox in SANDBOX_MODES:
                return task, sandbox
    try:
        config = loop.read_config()
    except BadInput:
        return None, None
    return config.task, config.sandbox


def _table(rows: list[dict[str, Any]]) -> list[str]:
    from automaton.core.scores import score_text

    lines = [f"  {'NAME':24} {'STATUS':9} {'HALT_REASON':21} {'ITER':>5} {'SPENT_USD':>10} {'SCORE':>8} STARTED_AT"]
    for r in rows:
        spent = "-" if r["spent_usd"] is None else f"{r['spent_usd']:.4f}"
        score = "-" if r["last_score"] is None else score_text(r["last_score"])
        lines.append(f"  {r['name']:24} {r['status'] or '-':9} {r['halt_reason'] or '-':21}"
                     f" {'-' if r['iteration_count'] is None else r['iteration_count']:>5} {spent:>10} {score:>8}"
                     f" {r['started_at'] or '-'}")
        if r["flag"]:
            lines.append(f"      ! {r['flag']}")
        if r.get("sandbox") == "off":
            lines.append('      warning: sandbox off: loop.json says "sandbox": "off", so its agents run unconfined')
    return lines


def loop_list(project: Project) -> Outcome:
    """`--loop-list`: a table; data {"loops": [{name, status, halt_reason, iteration_count, started_at, task,
    flag, spent_usd (USD, all ticks), last_score (0..1 of the last verdict, or null), sandbox ("on" | "off",
    null when loop.json is unreadable)}]} (task:
    loop.json `task`, else current_task). Exit 2 (after the whole table) when a
    file sits where a loop folder should be (flag "NOT A LOOP: …")."""
    rows = _rows(project)
    stray = [r for r in rows if str(r["flag"] or "").startswith("NOT A LOOP")]
    data: dict[str, Any] = {"loops": rows}
    if stray:
        data.update(error=str(stray[0]["flag"]), exit_code=int(ExitCode.BAD_INPUT))
    return Outcome(ExitCode.BAD_INPUT if stray else ExitCode.OK, _table(rows) if rows else ["no loops"], data)


def audit_section(project: Project) -> tuple[list[str], list[dict[str, object]], int]:
    """The Loops section of --audit: (text lines, rows, number flagged: halted/corrupt/untracked/tampered)."""
    rows = _rows(project)
    flagged = sum(1 for r in rows if r["flag"])
    lines = [f"Loops: {len(rows)} loop(s), {flagged} flagged", *(_table(rows) if rows else [])]
    return lines, list(rows), flagged

