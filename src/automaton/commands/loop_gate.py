"""The pre-tick gate as a use case: `--check-gate`, `--can-continue` (docs/architecture.md#stable-interfaces).

The rules are pure (core/gates.py); this module gathers their facts (state, config, task
phase, drift, VRAM) and applies a halt atomically. `check_gate` and `can_continue` take a
loop's name (the CLI's entry); a tick, which resolved its loop already, calls `check` and
`drift_after_commit` with the `Loop` handle.
"""

from __future__ import annotations

import importlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from automaton import notify
from automaton.commands.gate_next import PENDING_STEP, deferral_gate, next_step, pending_line
from automaton.commands.halts import halt_now, stop_schedule
from automaton.commands.loops_common import project_config_problem
from automaton.core import account as account_core
from automaton.core.errors import BadInput, ExitCode
from automaton.core.gates import (
    CONFIG_CHANGED,
    STATE_TAMPERED,
    DriftFacts,
    GateResult,
    TaskFacts,
    VramFacts,
    accepted_paths,
    gate_config_seal,
    gate_drift,
    remaining,
    reservation_micro,
)
from automaton.core.loopconfig import LoopConfig
from automaton.core.loopgate import GateDecision, decide
from automaton.core.loopstate import LoopState
from automaton.core.names import TaskRef
from automaton.core.outcome import Outcome
from automaton.git import run_git
from automaton.git.drift import (
    DEFAULT_EXCLUDES,
    DriftError,
    GitMissing,
    NestedRepository,
    PrivateIndex,
    Reading,
    branch_blobs,
    branch_changed_paths,
    read_changes,
    worktree_blobs,
)
from automaton.git.harden import git_folder_of, probe_once
from automaton.git.worktree import IN_PLACE_EXCLUDES, branch_name, pointer_problem, registered
from automaton.resolve import real
from automaton.store import account, loops, tasks
from automaton.store.key import seal_bytes
from automaton.store.layout import Project
from automaton.store.loops import Loop

# ---- gates ----------------------------------------------------------------------------------

# Why the drift gate is skipped before a loop's first tick made its worktree (a tick drops it
# once it has one: the check after its commit judges that tick's work).
NO_WORKTREE_YET = "the loop has no worktree yet (worktree_path is null)"


class _Facts:
    """The I/O behind core.gates.GateFacts for one loop."""

    def __init__(self, handle: Loop, state: LoopState, task: str | None, drift_cwd: Path | None, *,
                 given: Reading | None = None, add_excludes: Path | None = None) -> None:
        self.handle, self.project, self.loop = handle, handle.project, handle.name
        self.state, self.task_arg, self.drift_cwd = state, task, drift_cwd
        self.task_seen: TaskFacts | None = None
        self._config: LoopConfig | None = None
        # `given`: a reading of the worktree made earlier in this tick with nothing changed since
        # (used when it was asked the same questions, else read anew); `reading`: the one used.
        self.given, self.add_excludes = given, add_excludes
        self.reading: Reading | None = None

    @classmethod
    def of(cls, loop: Loop, state: LoopState, task: str | None, drift_cwd: Path | None, *,
           given: Reading | None = None, add_excludes: Path | None = None) -> _Facts:
        """The facts of a resolved loop, read through its handle (`given`, `add_excludes`: see
        `read_before_commit` and `drift_after_commit`)."""
        return cls(loop, state, task, drift_cwd, given=given, add_excludes=add_excludes)

    def config_sha256(self) -> str:
        return self.handle.config_sha256()

    def config(self) -> LoopConfig:
        if self._config is None:
            self._config = self.handle.read_config()
        return self._config

    def unsealed_project_config(self) -> str | None:
        """`.automaton/config.json` (posix, relative to the project) when it is not the sealed one."""
        if project_config_problem(self.project) is None:
            return None
        return self.project.config_file.relative_to(self.project.root).as_posix()

    def deferral(self, harness: str, passed: GateResult) -> GateResult:
        return deferral_gate(harness, passed)

    def config_error(self) -> str | None:
        return _config_error(self.handle)

    def vram(self, kv_kib_per_token: float | None) -> VramFacts:
        try:
            probe = importlib.import_module("automaton.vram").probe
            found = probe(kv_kib_per_token=kv_kib_per_token or 128.0)
            return VramFacts(bool(found["loop_mode_eligible"]), int(found["context_tokens"]))
        except Exception as exc:  # no probe is not a pass: the gate says budget_unknown
            return VramFacts(error=f"{type(exc).__name__}: {exc}")

    def task(self) -> TaskFacts | None:
        """The loop's task: `--task`, else loop.json `task`, else the state's current_task. A
        corrupt `.state` raises CorruptState (exit 2 naming the file): never ignored."""
        name = self.task_arg or self.config().task or self.state.current_task
        if name is None:
            return None
        rec = tasks.load(self.project, TaskRef.parse(name))
        self.task_seen = TaskFacts(str(rec.ref), rec.phase, rec.tamper)
        return self.task_seen

    def drift(self) -> DriftFacts:
        """Changes since base_commit in the worktree; with the worktree folder gone, the commits
        of branch `loop/<name>` read from the main repository (never skipped while that branch
        and base_commit exist). A worktree path that is a symlink, or a worktree not on
        `loop/<name>`, is an error (the gate halts). `blobs` carries the current blob of each
        changed file that accepted_drift names (accepted only at that content)."""
        return self.drift_of(accepted_paths(self.state.accepted_drift))

    def drift_of(self, hash_paths: list[str] | None) -> DriftFacts:
        """`drift()` with blobs for the changed files among `hash_paths` (None: every changed file)."""
        where = self.drift_cwd or self.state.worktree_path
        if where is None and self.state.base_commit is not None and self._in_place():
            return self._in_place_drift(hash_paths)
        if where is not None and self.drift_cwd is None and os.path.islink(where):
            return DriftFacts(error=f"{where} is a symlink, not the loop's worktree")
        worktree = real(where, self.project.root) if where is not None else None
        if worktree is not None and worktree.is_dir() and self.drift_cwd is None:
            if not registered(self.project.root, worktree):  # another repository's: not read here
                return self._branch_drift(worktree, hash_paths)
            lost = pointer_problem(self.project.root, worktree)
            if lost is not None:  # never run git through a `.git` the agent rewrote (git/worktree.py)
                return DriftFacts(error=f"worktree_lost: {lost}")
        if worktree is not None and worktree.is_dir():
            if self.state.base_commit is None:
                return DriftFacts(error="base_commit is unknown, so committed changes cannot be listed")
            return self._changes(worktree, self.state.base_commit, hash_paths,
                                 branch=None if self.drift_cwd else f"refs/heads/{branch_name(self.loop)}")
        return self._branch_drift(worktree, hash_paths)

    def _changes(self, where: Path, base: str, hash_paths: list[str] | None, *,
                 excludes: tuple[str, ...] = DEFAULT_EXCLUDES, branch: str | None = None) -> DriftFacts:
        """The drift facts of `where` since `base` (`git.drift.changed_paths` with `excludes`
        and `branch`), blobs hashed for `hash_paths` (None: every changed path)."""
        try:
            # The drift check's own index lives in the loop folder (git/content.py says why).
            given = self.given
            if given is not None and (given.worktree, given.base_commit, given.excludes, given.branch) == (
                    where, base, excludes, branch):
                self.reading = given
            else:
                index = PrivateIndex(self.project.loop_dir(self.loop) / "drift.index", seal_bytes)
                self.reading = read_changes(where, base, excludes=excludes, index=index, branch=branch,
                                            add_excludes=self.add_excludes)
            files = self.reading.changed()
            want = [f for f in files if hash_paths is None or f in hash_paths]
            return DriftFacts(tuple(files), blobs=tuple(sorted(worktree_blobs(where, want).items())))
        except GitMissing as exc:
            return DriftFacts(skipped=str(exc))
        except NestedRepository as exc:
            return DriftFacts(nested=tuple(exc.paths))
        except DriftError as exc:
            return DriftFacts(error=str(exc))

    def _in_place(self) -> bool:
        """Whether the loop ticks in the main checkout (`blast_radius.use_worktree` false); an
        unreadable loop.json is not (the seal and config gates say why)."""
        try:
            return not self.config().blast_radius.use_worktree
        except BadInput:
            return False

    def _in_place_drift(self, hash_paths: list[str] | None) -> DriftFacts:
        """Changes in the main checkout since the base commit its first tick recorded: what is
        committed on its branch, staged, changed or untracked, but automaton's own folder
        (`IN_PLACE_EXCLUDES`). The human's own edits there count as well: nothing tells them apart."""
        return self._changes(self.project.root, str(self.state.base_commit), hash_paths,
                             excludes=(*DEFAULT_EXCLUDES, *IN_PLACE_EXCLUDES))

    def _branch_drift(self, worktree: Path | None, hash_paths: list[str] | None) -> DriftFacts:
        gone = (NO_WORKTREE_YET if worktree is None
                else f"worktree {worktree} does not exist (the next tick re-creates it)")
        base, branch = self.state.base_commit, branch_name(self.loop)
        if base is None and worktree is None:
            # Never had a worktree (base_commit is recorded with it, in the keyed state): the
            # tick about to run creates it from the base branch, so nothing can have drifted,
            # and no "skipped" warning is shown after that tick made it.
            return DriftFacts()
        if base is None:
            return DriftFacts(skipped=gone)
        probe = run_git(self.project.root, ["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}"])
        if probe.code == 127:
            return DriftFacts(skipped="git is not installed")
        if probe.code != 0:
            # base_commit is recorded, so this loop had a worktree on that branch. A missing branch
            # or a broken repository now hides whatever was committed there: halt, never "0 files".
            return DriftFacts(error=f"{gone}, and branch {branch} cannot be read in {self.project.root}"
                              " (deleted, or the repository is broken): its commits cannot be checked")
        try:
            files = branch_changed_paths(self.project.root, base, branch)
            want = [f for f in files if hash_paths is None or f in hash_paths]
            return DriftFacts(tuple(files), blobs=tuple(sorted(branch_blobs(self.project.root, branch, want).items())))
        except GitMissing as exc:
            return DriftFacts(skipped=str(exc))
        except DriftError as exc:
            return DriftFacts(error=str(exc))


def _task_phase(project: Project, name: str | None) -> str | None:
    if name is None:
        return None
    try:
        return tasks.load(project, TaskRef.parse(name)).phase
    except BadInput:
        return None


def _config_error(loop: Loop) -> str | None:
    """Why loop.json is not a valid config now (one line naming the file and key), None when it is."""
    try:
        loop.read_config()
    except BadInput as exc:
        return exc.message
    return None


def check_gate(project: Project, name: str, task: str | None = None, *, drift_cwd: Path | None = None) -> Outcome:
    """`--check-gate NAME`: `check` of the loop named `name` (exit 2, BadInput, for an unknown
    or untracked loop), then, when every gate passed, the account caps (`store.account`): a
    tick that a reached cap would refuse is shown refused (`_account_cap`)."""
    with probe_once(trusted=git_folder_of(project.root)):  # one filter probe per repository for the gate
        loop = Loop.resolve(project, name)
        out = check(loop, task, drift_cwd=drift_cwd)
    return _account_cap(loop, _io_pending(loop, out))


def _io_pending(loop: Loop, out: Outcome) -> Outcome:
    """`out` with the halt a tick could not record (`Loop.pending_io_halt`: a full disk) shown:
    data `io_error_pending` (the `io_error: …` detail) and a `pending halt:` line; a gate that
    passed is refused (exit 1, reason `io_error_pending`), since the next tick records that
    halt and does not run. Read-only: the tick, holding its lock, records it."""
    detail = loop.pending_io_halt()
    if detail is None or not isinstance(out.data, dict):
        return out
    data = out.data
    data["io_error_pending"] = detail
    lines = list(out.lines)
    if out.code == ExitCode.OK and data.get("ok"):
        data.update(ok=False, reason="io_error_pending")
        lines[0] = f"{loop.name}: gate not ok: io_error_pending"
        lines.insert(1, f"  next step: {PENDING_STEP.format(loop=loop.name)}")
        out = Outcome(ExitCode.REFUSED, lines, data, out.warnings)
    out.lines = [lines[0], pending_line(detail), *lines[1:]]
    return out


def _account_cap(loop: Loop, out: Outcome) -> Outcome:
    """`out` as it is, or, when its gates passed but the account cap would refuse the tick's
    reservation now, refused (exit 1, no halt, nothing written): reason `deferred:<ISO UTC>`,
    data `deferred` {reason: "account_cap", until (ISO UTC), caps: [{kind, cap_micro_usd,
    used_micro_usd}]} and `deferred_until`, as the tick's own refusal (runner.account). A caps
    file or account ledger that cannot be read raises BadInput/CorruptState (exit 2, the file
    named): the tick fails closed on it too."""
    data = out.data if isinstance(out.data, dict) else None
    if out.code != ExitCode.OK or data is None or not data.get("ok"):
        return out
    refusal = account.refusal_now(reservation_micro(loop.read_config()), int(time.time()))
    if refusal is None:
        return out
    until = account_core.iso(refusal.until)
    data.update(ok=False, reason=f"deferred:{until}", deferred_until=until,
                deferred={"reason": account_core.REASON, "until": until,
                          "caps": [{"kind": u.window.kind, "cap_micro_usd": u.cap, "used_micro_usd": u.used}
                                   for u in refusal.reached]})
    lines = [f"{loop.name}: gate not ok: deferred:{until} ({refusal.line()})",
             f"  next step: none: the first tick after {until} runs (automaton --spend shows the account's spend,"
             f" {account.caps_path()} its caps)", *out.lines[1:]]
    return Outcome(ExitCode.REFUSED, lines, data, out.warnings)


def check(loop: Loop, task: str | None = None, *, drift_cwd: Path | None = None) -> Outcome:
    """Run the six gates and apply a halt atomically (logged `HALT reason=…`,
    schedule disabled best-effort). data: the gate object {ok, reason, halt_reason,
    remaining_iterations, remaining_budget_usd (USD | null), task_phase, task_in_halt_loop,
    out_of_scope_files} plus loop, status, halt_detail, halted_now, worktree_fallback, task, and
    for a loop that was halted before this call `halted_since` (ISO UTC of its last HALT log
    line, or of the CREATED line of a loop created halted; or null). halt_reason/halt_detail
    are as recorded at the halt; task_phase and the config error are read now (the text labels
    the recorded halt "halted since …: …").
    Exit 0 ok, 1 not ok, 2 unknown/untracked loop or task, corrupt state, or an invalid
    loop.json (then also halted `config_changed: <file>: <error>`, and data carries `error` and
    `exit_code` besides the gate object's keys). The loop's task is `task`, else loop.json `task`, else
    the state's current_task.

    A tampered `.state.loop` (edited, deleted, forged log) is halted (human_intervention,
    halt_detail "state_tampered: …") with counters the tamper cannot lower
    (store.loops.untampered_counters). A `.automaton/config.json` that is not the sealed one
    halts a running loop (human_intervention, "config_changed: .automaton/config.json").
    With every brake passing, a deferral of the loop's harness account (`store.deferrals`: an
    agent's usage limit) refuses with reason `deferred:<ISO UTC>` and no halt (data also
    carries deferred_until and harness). Every refusal's text ends with the next step.
    A new halt, a wait for a task sign-off and a tick put off are sent to loop.json `notify`
    (`automaton.notify.after_gate`); a failed notification is a warning, never an error.

    Three steps: decide (`core.loopgate.decide`, pure), apply (`_apply`: the halt and its log
    line, under the state lock), report (`_report`: the Outcome's data and text).
    """
    if task is not None:
        task = str(TaskRef.parse(task))
    with loop.session() as s:
        facts = _Facts.of(loop, s.rec.state, task, drift_cwd)
        was_halted = not s.rec.tamper and s.rec.state.status == "halted"
        # A loop created halted (waiting for its first approval) has its halt on the CREATED line.
        # Only for a halted loop (the walk back reads the log's lines: a running loop's last HALT may be its first line)
        since = next((line.ts for line in reversed(s.rec.chain.lines) if line.event in ("HALT", "CREATED")),
                     None) if was_halted else None
        seen = _Seen(s.rec.state, was_halted, since)
        decision = decide(s.rec.state, loops.resealed_finding(s.rec), facts)
        state = _apply(s, decision)
    return _report(loop, decision, state, seen, facts)


@dataclass(frozen=True)
class _Seen:
    """What the gate found before it decided: the state, whether it was halted already, and when
    (ISO UTC of its last HALT or CREATED line; None when unlogged)."""

    state: LoopState
    was_halted: bool
    since: str | None


def _apply(s: loops.Session, decision: GateDecision) -> LoopState:
    """Write the decided halt (a tampered state re-sealed with it); returns the state as it is now."""
    step = decision.halt_step()
    if step is None:
        return s.rec.state
    return s.reseal_tampered(step) if decision.tamper else s.commit(*step(s.rec.state))


def _report(loop: Loop, decision: GateDecision, state: LoopState, seen: _Seen, facts: _Facts) -> Outcome:
    """The gate's Outcome (see `check`): exit code, data, text, warnings; notifications sent."""
    result, invalid = decision.result, decision.invalid
    code = ExitCode.BAD_INPUT if invalid is not None else ExitCode.OK if result.ok else ExitCode.REFUSED
    out = Outcome(code=code, warnings=list(result.warnings))
    if result.halt is not None:
        warning = stop_schedule(loop)
        if warning:
            out.warnings.append(warning)
    config = decision.config
    if config is None and invalid is None and loop.config_sha256() == state.config_sha256:
        try:
            config = loop.read_config()
        except BadInput:  # changed under us since: no remaining counts, the next gate says why
            config = None
    task_name = facts.task_arg or (config.task if config else None) or state.current_task
    out.data = _gate_data(loop, decision, state, seen, config, task_name,
                          facts.task_seen.phase if facts.task_seen else _task_phase(loop.project, task_name))
    out.lines = _gate_lines(loop, decision, state, seen, config, out.data)

    failed = notify.after_gate(loop.project, loop.name, out.data, state, detail=result.detail)
    if failed is not None:
        out.warnings.append(failed)
    return out


def _in_halt_loop(project: Project, task_name: str | None) -> bool:
    """Whether a halted loop owns the task (fail closed: an unreadable or tampered loop may own it)."""
    if not task_name:
        return False
    try:
        return bool(loops.halted_owners(project, TaskRef.parse(str(task_name))))
    except (BadInput, loops.StateTampered):  # another loop's state is unreadable or tampered:
        return True  # it may own the task (fail closed, as halted_owners says)


def _gate_data(loop: Loop, decision: GateDecision, state: LoopState, seen: _Seen, config: LoopConfig | None,
               task_name: str | None, phase: str | None) -> dict[str, Any]:
    """The gate object of `--check-gate --json` (keys: see `check`)."""
    result = decision.result
    left_iter, left_usd = remaining(state, config.brakes) if config else (None, None)
    data: dict[str, Any] = {
        "ok": result.ok, "reason": result.reason, "halt_reason": state.halt_reason,
        "remaining_iterations": left_iter, "remaining_budget_usd": left_usd, "task_phase": phase,
        "task_in_halt_loop": _in_halt_loop(loop.project, task_name),
        "out_of_scope_files": list(result.out_of_scope_files),
        "loop": loop.name, "status": state.status, "halt_detail": state.halt_detail,
        "halted_now": result.halt is not None, "worktree_fallback": state.worktree_fallback,
        "task": task_name,
    }
    if decision.invalid is not None:
        data.update(error=decision.invalid, exit_code=int(ExitCode.BAD_INPUT))
    if result.gate == "deferred" and config is not None:
        data.update(deferred_until=result.reason.partition(":")[2], harness=config.harness.name)
    if seen.was_halted:
        data["halted_since"] = seen.since
    return data


def _gate_lines(loop: Loop, decision: GateDecision, state: LoopState, seen: _Seen, config: LoopConfig | None,
                data: dict[str, Any]) -> list[str]:
    """The text of `--check-gate`: the verdict, the next step, the facts read now."""
    result, name = decision.result, loop.name
    head = f"{name}: gate ok" if result.ok else f"{name}: gate not ok: {result.reason}"
    lines: list[str] = []
    if seen.was_halted and result.halt is None:  # the recorded halt, labelled: the facts below are current
        recorded = str(state.halt_reason) + (f": {state.halt_detail}" if state.halt_detail else "")
        lines += [head, f"  halted since {seen.since or 'an unlogged time'}: {recorded}"
                        " (as recorded at the halt; the lines below are current)"]
    else:
        lines.append(head + (f" ({result.detail})" if result.detail and not result.ok else ""))
    if not result.ok:
        lines += _next_lines(loop, decision, state, config, data["task"])
    lines += [f"  out of scope: {f}" for f in result.out_of_scope_files]
    lines.append(f"  remaining_iterations={data['remaining_iterations']}"
                 f" remaining_budget_usd={data['remaining_budget_usd']} task_phase={data['task_phase']}")
    if state.worktree_fallback:
        lines.append(f"  note: ticks ran in the main checkout: {state.worktree_fallback}")
    return lines


def _next_lines(loop: Loop, decision: GateDecision, state: LoopState, config: LoopConfig | None,
                task_name: str | None) -> list[str]:
    """The next step after a refusal: what is wrong with loop.json or the project config, else
    the step `gate_next.next_step` names."""
    name, lines = loop.name, []
    stepped = True  # a line below already names the next step
    problems = (decision.invalid or "").splitlines()
    if len(problems) > 1:  # one line for each invalid field
        lines += [f"  invalid loop.json ({len(problems)} problems):", *(f"    {p}" for p in problems),
                  f"  fix them, then a human runs automaton --approve --loop {name}"]
    elif decision.invalid is not None:
        lines.append(f"  invalid loop.json: {decision.invalid}; fix it, then a human runs"
                     f" automaton --approve --loop {name}")
    elif (state.halt_detail or "").startswith(CONFIG_CHANGED) and loop.config_sha256() != state.config_sha256:
        lines.append(f"  {loop.config_file} is not the sealed loop.json: review it,"
                     f" then a human runs automaton --approve --loop {name}")
    else:
        stepped = False
    unsealed = project_config_problem(loop.project)
    if unsealed is not None:
        lines.append(f"  {unsealed}, then automaton --approve --loop {name}")
    elif not stepped:
        lines.append(f"  next step: {next_step(name, decision.result.reason, state, task_name, config)}")
    return lines


def can_continue(project: Project, name: str) -> Outcome:
    """Is the loop alive at all: data {ok, status} (+ tamper when tampered); exit 0 / 1."""
    rec = Loop.resolve(project, name).inspect()
    status = rec.state.status
    ok = status == "running" and not rec.tamper
    data: dict[str, Any] = {"ok": ok, "status": status}
    if rec.tamper:
        data["tamper"] = rec.tamper
    line = f"{rec.name}: {status}" + (f" (TAMPERED: {rec.tamper})" if rec.tamper else "")
    return Outcome(ExitCode.OK if ok else ExitCode.REFUSED, [line], data)




# ---- checks a tick makes after its agent ran ------------------------------------------------

@dataclass(frozen=True)
class CommitDrift:
    """What `drift_after_commit` found: `result`, the failed gate (the loop is then halted) or
    None when the changes are in scope; `reading`, the reading of the worktree the drift gate
    judged (None: it judged no worktree, or git could not read it), for the checks after it."""

    result: GateResult | None
    reading: Reading | None


def read_before_commit(loop: Loop, state: LoopState, add_excludes: Path) -> Reading | None:
    """The drift gate's reading of the loop's worktree (`git.drift.read_changes`) made before
    the runner's commit, with the excludes file that commit's `git add -A` uses
    (`add_excludes`): when it shows nothing to commit (`Reading.nothing_to_commit`), the tick
    commits nothing and `drift_after_commit` judges this same reading. None when there is no
    worktree reading to make (no worktree, no base commit) or git cannot make it. `state`: the
    loop's state as this tick recorded its worktree (where, and since which base commit)."""
    facts = _Facts.of(loop, state, None, None, add_excludes=add_excludes)
    facts.drift_of([])
    return facts.reading


def drift_after_commit(loop: Loop, cfg: LoopConfig, reading: Reading | None = None) -> CommitDrift:
    """The drift gate alone, run by a tick right after the runner committed the agent's work:
    a tick whose changes leave `file_scope` halts `drift_detected` before its verdict can
    complete the loop (the pre-tick gate of the next fire would come too late). `cfg` is the
    loop.json the tick started with (its gates checked the seal): the scope is judged by it,
    never by a loop.json read now, which an agent without the sandbox could have widened; a
    loop.json that is no longer the sealed one halts `human_intervention` (config_changed) here.
    `reading`: the worktree's reading from before a commit that found nothing to commit
    (`read_before_commit`): the worktree is unchanged since, so it is judged instead of a new
    one (used only where it answers the same questions: same worktree, base, excludes and branch).
    The other gates are not run here: the iteration of this very tick is already counted."""
    with loop.session() as s:
        tamper = loops.resealed_finding(s.rec)
        if not tamper:
            facts = _Facts.of(loop, s.rec.state, None, None, given=reading)
            result = (gate_config_seal(s.rec.state, loop.config_sha256())
                      or gate_drift(facts.drift(), cfg, s.rec.state.accepted_drift))
    if tamper:  # a forged accepted_drift must not excuse anything: the full gate halts for the tamper
        check(loop)
        return CommitDrift(GateResult(False, STATE_TAMPERED, "tamper", "human_intervention",
                                      f"{STATE_TAMPERED}: {tamper}"), None)
    if result is not None and result.halt is not None:
        halt_now(loop, result.halt, result.detail or "out of scope", "drift_after_commit",
                 {"files": len(result.out_of_scope_files)})
    return CommitDrift(result, facts.reading)
