"""Loop use cases: create, gates, pause/resume, approve, can-edit, list/audit (seed 000 R1–R10, DESIGN §5)."""

from __future__ import annotations

import copy
import importlib
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from automaton.commands.can_edit import Decision, protected, task_scope_allows
from automaton.commands.human import require_human
from automaton.core.errors import BadInput, CorruptState, ExitCode, Refused
from automaton.core.gates import (
    CONFIG_CHANGED,
    STATE_TAMPERED,
    DriftFacts,
    GateResult,
    TaskFacts,
    VramFacts,
    out_of_scope,
    remaining,
    run_gates,
    scope_spec,
)
from automaton.core.loopconfig import LoopConfig, initial_state, loads_strict
from automaton.core.names import NAME_RE, LoopName, TaskRef
from automaton.core.outcome import Outcome
from automaton.git import run_git
from automaton.git.drift import DriftError, GitMissing, branch_changed_paths, changed_paths
from automaton.git.worktree import branch_name
from automaton.resolve import posix, real, relative_parts
from automaton.store import loops, tasks
from automaton.store.chainlog import utc_now
from automaton.store.layout import Project, framework_home

HALTED_MSG = "loop is halted, use --approve --loop to clear halt"  # seed 000 R3, verbatim
# DESIGN §3: runtime files git must never see; the last three are what --install-schedule writes.
EXCLUDES = ("worktree/", "runs/", ".lock", ".state*", "run-tick.*", "schedule.json", "schedule.log")


def _optional(module: str, func: str, *args: object) -> str | None:
    """Call a best-effort hook of another module (schedules); its absence or failure is a warning."""
    try:
        fn = getattr(importlib.import_module(module), func)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return None  # not built yet: nothing was scheduled either
        raise
    try:
        found = fn(*args)
    except Exception as exc:  # best effort by contract: a halt must never fail on the scheduler
        return f"{module}.{func} failed: {type(exc).__name__}: {exc}"
    return str(found) if found else None


# ---- create ---------------------------------------------------------------------------------

def _template_dir(project: Project, template: str) -> Path:
    if not isinstance(template, str) or not NAME_RE.match(template):
        raise BadInput(f"invalid template name {template!r}: templates are kebab-case folder names like 'ci-triage'")
    name = template
    places = [project.dot / "templates" / "loops" / name, framework_home() / "templates" / "loops" / name]
    for place in places:
        if (place / loops.CONFIG_FILE).is_file():
            return place
    raise BadInput(f"no loop template {name!r}: looked for loop.json in {places[0]} and {places[1]}")


def create_loop(project: Project, name: str, template: str, task: str | None = None) -> Outcome:
    """Create `.automaton/loops/NAME/` from a template (R1, R2): loop.json (name/task patched,
    validated, sealed), the role prompts, `.state.loop` and `.state.log` (CREATED).

    Exit 2: invalid name, existing loop, missing/invalid template, unknown task. Nothing is
    created on any error; nothing existing is overwritten.
    """
    loop = LoopName.of(name)
    src = _template_dir(project, template)
    source = str(src / loops.CONFIG_FILE)
    obj = loads_strict((src / loops.CONFIG_FILE).read_bytes().decode("utf-8", "replace"), source)
    if not isinstance(obj, dict):
        raise BadInput(f"{source}: must be a JSON object")
    obj["name"], obj["template"] = str(loop), src.name
    if task is not None:
        obj["task"] = str(TaskRef.parse(task))
    data = (json.dumps(obj, indent=2) + "\n").encode("utf-8")
    config = loops.parse_config_bytes(data, f"{source} (as loop {loop})")
    if config.task is not None:
        tasks.load(project, TaskRef.parse(config.task))  # BadInput: unknown task
    files = {loops.CONFIG_FILE: data}
    wanted = {p for p in (config.roles.implement.prompt, config.roles.verify.prompt, config.roles.orchestrate.prompt)
              if p is not None}
    wanted |= {p.name for p in src.iterdir() if p.is_file() and p.suffix == ".md"}
    for rel in sorted(wanted):
        try:
            files[rel] = (src / rel).read_bytes()
        except OSError:
            raise BadInput(f"{source}: role prompt {rel!r} is missing from the template {src}") from None
    state = initial_state(loop, config.task, config.sha256, utc_now())
    folder = loops.create(project, loop, files, state, {"loop": loop, "template": src.name,
                                                         "task": config.task})
    out = Outcome(lines=[f"created loop {loop} at {folder.relative_to(project.root)}/ from template {src.name}"],
                  data={"loop": loop, "path": str(folder), "template": src.name, "state": state})
    added = _exclude_runtime(project)
    if added:
        out.lines.append(f"added {len(added)} pattern(s) to .git/info/exclude so git never sees loop runtime files")
    return out


def _exclude_runtime(project: Project) -> list[str]:
    """Append the loop runtime patterns to the repo's info/exclude (git repos only)."""
    from automaton.commands.excludes import exclude

    return exclude(project, tuple(f".automaton/loops/*/{p}" for p in EXCLUDES),
                   "# automaton loop runtime files (DESIGN §3)")


# ---- gates ----------------------------------------------------------------------------------

class _Facts:
    """The I/O behind core.gates.GateFacts for one loop."""

    def __init__(self, project: Project, loop: LoopName, state: dict[str, Any], task: str | None,
                 drift_cwd: Path | None) -> None:
        self.project, self.loop, self.state, self.task_arg, self.drift_cwd = project, loop, state, task, drift_cwd
        self.task_seen: TaskFacts | None = None
        self._config: LoopConfig | None = None

    def config_sha256(self) -> str:
        return loops.config_sha256(self.project, self.loop)

    def config(self) -> LoopConfig:
        if self._config is None:
            self._config = loops.read_config(self.project, self.loop)
        return self._config

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
        name = self.task_arg or self.config().task or self.state["current_task"]
        if name is None:
            return None
        rec = tasks.load(self.project, TaskRef.parse(name))
        self.task_seen = TaskFacts(str(rec.ref), rec.phase, rec.tamper)
        return self.task_seen

    def drift(self) -> DriftFacts:
        """Changes since base_commit in the worktree; with the worktree folder gone, the commits
        of branch `loop/<name>` read from the main repository (never skipped while that branch
        and base_commit exist). A worktree path that is a symlink, or a worktree not on
        `loop/<name>`, is an error (the gate halts)."""
        where = self.drift_cwd or self.state["worktree_path"]
        if where is not None and self.drift_cwd is None and os.path.islink(where):
            return DriftFacts(error=f"{where} is a symlink, not the loop's worktree")
        worktree = real(where, self.project.root) if where is not None else None
        if worktree is not None and worktree.is_dir():
            if self.state["base_commit"] is None:
                return DriftFacts(error="base_commit is unknown, so committed changes cannot be listed")
            try:
                if self.drift_cwd is None:
                    self._check_branch(worktree)
                return DriftFacts(tuple(changed_paths(worktree, self.state["base_commit"])))
            except GitMissing as exc:
                return DriftFacts(skipped=str(exc))
            except DriftError as exc:
                return DriftFacts(error=str(exc))
        return self._branch_drift(worktree)

    def _check_branch(self, worktree: Path) -> None:
        want = f"refs/heads/{branch_name(self.loop)}"
        head = run_git(worktree, ["symbolic-ref", "-q", "HEAD"])
        if head.code == 127:
            raise GitMissing("git is not installed")
        got = head.out.strip()
        if head.code == 0 and got != want:
            raise DriftError(f"the worktree {worktree} is on {got.removeprefix('refs/heads/')},"
                             f" not {branch_name(self.loop)}")
        if head.code != 0 and run_git(worktree, ["rev-parse", "--verify", "--quiet", "HEAD"]).code == 0:
            raise DriftError(f"the worktree {worktree} is on a detached HEAD, not {branch_name(self.loop)}")

    def _branch_drift(self, worktree: Path | None) -> DriftFacts:
        gone = ("the loop has no worktree yet (worktree_path is null)" if worktree is None
                else f"worktree {worktree} does not exist (the next tick re-creates it)")
        base, branch = self.state["base_commit"], branch_name(self.loop)
        if base is None:
            return DriftFacts(skipped=gone)
        probe = run_git(self.project.root, ["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}"])
        if probe.code == 127:
            return DriftFacts(skipped="git is not installed")
        if probe.code != 0:  # no branch (or no repository): nothing committed is left to merge
            return DriftFacts(skipped=f"{gone}, and branch {branch} does not exist")
        try:
            return DriftFacts(tuple(branch_changed_paths(self.project.root, base, branch)))
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


def _config_error(project: Project, loop: LoopName) -> str | None:
    """Why loop.json is not a valid config now (one line naming the file and key), None when it is."""
    try:
        loops.read_config(project, loop)
    except BadInput as exc:
        return exc.message
    return None


def check_gate(project: Project, name: str, task: str | None = None, *, drift_cwd: Path | None = None) -> Outcome:
    """Run the six gates (DESIGN §5) and apply a halt atomically (logged `HALT reason=…`,
    schedule disabled best-effort). data: the seed 000 R4 shape {ok, reason, halt_reason,
    remaining_iterations, remaining_budget_usd (USD | null), task_phase, task_in_halt_loop,
    out_of_scope_files} plus loop, status, halt_detail, halted_now, worktree_fallback, task.
    Exit 0 ok, 1 not ok, 2 unknown/untracked loop or task, corrupt state, or an invalid
    loop.json (then also halted `config_changed: <file>: <error>`, and data carries `error` and
    `exit_code` besides the R4 keys). The loop's task is `task`, else loop.json `task`, else
    the state's current_task.

    A tampered `.state.loop` (edited, deleted, forged log) is halted (human_intervention,
    halt_detail "state_tampered: …") with counters the tamper cannot lower
    (store.loops.untampered_counters).
    """
    loop = loops.require_tracked(project, name)
    if task is not None:
        task = str(TaskRef.parse(task))
    invalid: str | None = None
    with loops.session(project, loop) as s:
        facts = _Facts(project, loop, s.rec.state, task, drift_cwd)
        config: LoopConfig | None = None
        if s.rec.tamper:
            detail = f"{STATE_TAMPERED}: {s.rec.tamper}"
            result = GateResult(False, STATE_TAMPERED, "tamper", "human_intervention", detail)
            state = s.reseal_tampered("HALT", {"reason": "human_intervention", "detail": STATE_TAMPERED},
                                      lambda new: new.update(status="halted", halt_reason="human_intervention",
                                                             halt_detail=detail))
        else:
            result, config = run_gates(s.rec.state, facts)
            state = s.rec.state
            if result.halt is not None and result.detail == CONFIG_CHANGED:
                invalid = _config_error(project, loop)
                if invalid is not None:  # say which file and what is wrong, not only "changed"
                    result = replace(result, detail=f"{CONFIG_CHANGED}: {invalid}")
            if result.halt is not None:
                new = copy.deepcopy(state)
                new.update(status="halted", halt_reason=result.halt, halt_detail=result.detail)
                state = s.commit("HALT", {"reason": result.halt, "detail": result.detail, "gate": result.gate}, new)
    if invalid is None and not result.ok and config is None:
        invalid = _config_error(project, loop)  # a halted loop whose loop.json is invalid now
    code = ExitCode.BAD_INPUT if invalid is not None else ExitCode.OK if result.ok else ExitCode.REFUSED
    out = Outcome(code=code, warnings=list(result.warnings))
    if result.halt is not None:
        warning = _optional("automaton.commands.schedule", "disable_best_effort", project, loop)
        if warning:
            out.warnings.append(warning)
    if config is None and invalid is None and loops.config_sha256(project, loop) == state["config_sha256"]:
        try:
            config = loops.read_config(project, loop)
        except BadInput:  # changed under us since: no remaining counts, the next gate says why
            config = None
    left_iter, left_usd = remaining(state, config.brakes) if config else (None, None)
    task_name = task or (config.task if config else None) or state["current_task"]
    phase = facts.task_seen.phase if facts.task_seen else _task_phase(project, task_name)
    in_halt = False
    if task_name:
        try:
            in_halt = bool(loops.halted_owners(project, TaskRef.parse(str(task_name))))
        except (BadInput, loops.StateTampered):  # another loop's state is unreadable or tampered
            in_halt = state["status"] == "halted"
    out.data = {
        "ok": result.ok, "reason": result.reason, "halt_reason": state["halt_reason"],
        "remaining_iterations": left_iter, "remaining_budget_usd": left_usd, "task_phase": phase,
        "task_in_halt_loop": in_halt, "out_of_scope_files": list(result.out_of_scope_files),
        "loop": loop, "status": state["status"], "halt_detail": state["halt_detail"],
        "halted_now": result.halt is not None, "worktree_fallback": state["worktree_fallback"],
        "task": task_name,
    }
    if invalid is not None:
        out.data.update(error=invalid, exit_code=int(ExitCode.BAD_INPUT))
    head = f"{loop}: gate ok" if result.ok else f"{loop}: gate not ok: {result.reason}"
    out.lines.append(head + (f" ({result.detail})" if result.detail and not result.ok else ""))
    if invalid is not None:
        out.lines.append(f"  invalid loop.json: {invalid}; fix it, then a human runs automaton --approve --loop {loop}")
    elif not result.ok and (state["halt_detail"] or "").startswith(CONFIG_CHANGED):
        out.lines.append(f"  {project.loop_dir(loop) / loops.CONFIG_FILE} is not the sealed loop.json: review it,"
                         f" then a human runs automaton --approve --loop {loop}")
    out.lines += [f"  out of scope: {f}" for f in result.out_of_scope_files]
    out.lines.append(f"  remaining_iterations={left_iter} remaining_budget_usd={left_usd} task_phase={phase}")
    if state["worktree_fallback"]:
        out.lines.append(f"  note: ticks ran in the main checkout: {state['worktree_fallback']}")
    return out


def can_continue(project: Project, name: str) -> Outcome:
    """Is the loop alive at all (R5): data {ok, status} (+ tamper when tampered); exit 0 / 1."""
    rec = loops.inspect(project, name)
    status = rec.state["status"]
    ok = status == "running" and not rec.tamper
    data: dict[str, Any] = {"ok": ok, "status": status}
    if rec.tamper:
        data["tamper"] = rec.tamper
    line = f"{rec.name}: {status}" + (f" (TAMPERED: {rec.tamper})" if rec.tamper else "")
    return Outcome(ExitCode.OK if ok else ExitCode.REFUSED, [line], data)


# ---- pause / resume / approve ---------------------------------------------------------------

def _status_change(project: Project, name: str, want: str) -> Outcome:
    """pause (want "paused") or resume (want "running")."""
    with loops.session(project, name) as s:
        if s.rec.tamper:
            raise loops.StateTampered(f"{s.rec.tamper}; a human clears it with: automaton --approve --loop {name}")
        status = s.rec.state["status"]
        if status == "halted":
            raise Refused(HALTED_MSG if want == "running" else f"loop {name} is halted: nothing to pause")
        if status == "complete":
            raise Refused(f"loop {name} is complete: complete is terminal")
        if status == want:
            return Outcome(lines=[f"{name}: already {want}"], data={"loop": name, "status": want})
        new = copy.deepcopy(s.rec.state)
        new["status"] = want
        s.commit("PAUSED" if want == "paused" else "RESUMED", {"loop": name}, new)
    func = "disable_best_effort" if want == "paused" else "enable_best_effort"
    warning = _optional("automaton.commands.schedule", func, project, LoopName(name))
    return Outcome(lines=[f"{name}: {status} -> {want}"], data={"loop": name, "status": want},
                   warnings=[warning] if warning else [])


def pause_loop(project: Project, name: str) -> Outcome:
    """running -> paused (logged PAUSED; schedule disabled best-effort). Exit 1 on halted/complete."""
    return _status_change(project, str(loops.require_tracked(project, name)), "paused")


def resume_loop(project: Project, name: str) -> Outcome:
    """paused -> running (logged RESUMED). Never clears a halt: exit 1 with the seed's message."""
    return _status_change(project, str(loops.require_tracked(project, name)), "running")


def approve_loop(project: Project, name: str) -> Outcome:
    """The only way out of `halted` (a human act): running again with a fresh allowance
    (iterations/spend marks at their current values, score_history emptied, a drift halt's
    current out-of-scope files accepted), loop.json re-sealed, resumed_count += 1, logged
    APPROVED, schedule re-enabled best-effort. Also re-seals a tampered state, and a loop.json a
    human edited while the loop runs or is paused (logged RESEALED, status unchanged). A deleted
    or unreadable `.state.loop` whose log is intact is rebuilt from the log's counters and
    approved the same way. An approval also clears `worktree_fallback` (the human has seen it)
    and binds `current_task` to loop.json's `task` when that is set. Exit 1 on any other status
    or without a human; exit 2 when the new loop.json is invalid (still halted).
    """
    who = require_human("--approve --loop")
    loop = loops.require_tracked(project, name)
    with loops.session(project, loop, rebuild=True) as s:
        old, tampered, tamper = s.rec.state, bool(s.rec.tamper), s.rec.tamper
        if not tampered and old["status"] in ("running", "paused"):
            resealed = _reseal_config(project, loop, s, old, who)
            if resealed is not None:
                return resealed
        if not tampered and old["status"] != "halted":
            raise Refused(f"loop {loop} is {old['status']}: --approve --loop only clears a halt"
                          + (" (use --resume-loop for a paused loop)" if old["status"] == "paused" else ""))
        config = loops.read_config(project, loop)
        accepted: list[str] = []
        if old["halt_reason"] == "drift_detected" and not tampered:
            drift = _Facts(project, loop, old, None, None).drift()
            accepted = out_of_scope(drift.files, config.blast_radius.file_scope, old["accepted_drift"])

        def fresh(new: dict[str, Any]) -> None:
            new.update(status="running", halt_reason=None, halt_detail=None, resumed_count=new["resumed_count"] + 1,
                       iterations_at_approval=new["iteration_count"], spent_usd_at_approval=new["spent_usd"],
                       score_history=[], config_sha256=config.sha256, worktree_fallback=None,
                       current_task=config.task or new["current_task"],
                       accepted_drift=sorted({*new["accepted_drift"], *accepted}))

        fields: dict[str, object] = {"loop": loop, "by": who,
                                     "cleared": STATE_TAMPERED if tampered else old["halt_reason"]}
        if accepted:
            fields["accepted"] = ",".join(accepted)
        if config.sha256 != old["config_sha256"]:
            fields["resealed"] = config.sha256[:12]
        if tampered:
            state = s.reseal_tampered("APPROVED", fields, fresh)
        else:
            state = copy.deepcopy(old)
            fresh(state)
            s.commit("APPROVED", fields, state)
    cleared = f"{STATE_TAMPERED}; the file said {old['status']}" if tampered else old["halt_reason"]
    out = Outcome(lines=[f"{loop}: halted ({cleared}) -> running (approved by {who};"
                         f" resumed_count={state['resumed_count']})"],
                  data={"loop": loop, "status": "running", "by": who, "cleared": fields["cleared"],
                        "resumed_count": state["resumed_count"], "accepted_drift": accepted})
    out.lines += [f"  accepted drift: {f}" for f in accepted]
    if tampered:  # say what the human vouched for (a broken log is kept as .state.log.broken*)
        out.lines.append(f"  re-sealed: {tamper}")
    warning = _optional("automaton.commands.schedule", "enable_best_effort", project, loop)
    if warning:
        out.warnings.append(warning)
    return out


def _reseal_config(project: Project, loop: LoopName, s: loops.Session, old: dict[str, Any], who: str) -> Outcome | None:
    """A human who edited loop.json of a running or paused loop seals the new config without
    waiting for the gate to halt on it (status and counters unchanged). None: nothing to seal."""
    config = loops.read_config(project, loop)
    if config.sha256 == old["config_sha256"]:
        return None
    state = copy.deepcopy(old)
    state["config_sha256"] = config.sha256
    s.commit("RESEALED", {"loop": loop, "by": who, "config": config.sha256[:12]}, state)
    return Outcome(lines=[f"{loop}: loop.json re-sealed (approved by {who}); status stays {old['status']}"],
                   data={"loop": loop, "status": old["status"], "by": who, "resealed": config.sha256})


# ---- can-edit, list, audit ------------------------------------------------------------------

def can_edit_loop(project: Project, name: str, file: str, *, loop_worktree: bool, task: str | None = None,
                  cwd: Path | None = None) -> Decision:
    """R7: `file` must be inside the loop's worktree, match its file_scope (relative to the
    worktree root) and not be protected; with `task`, also that task's phase scope. A relative
    `file` is anchored at the worktree (`loop_worktree`) or at `cwd` (default: project root)."""
    config = loops.read_config(project, name)
    state = loops.read_state(project, name)
    root = real(project.root, project.root)
    worktree = real(state["worktree_path"] or project.worktree_dir(LoopName(config.name)), root)
    path = real(file, worktree if loop_worktree else (cwd or root))
    parts = relative_parts(path, worktree)
    if parts is None:
        return Decision(False, f"{path} is outside the worktree {worktree} of loop {config.name}", str(path))
    why = protected(parts)
    if why:
        return Decision(False, f"{posix(parts)}: {why}", str(path))
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
                               "started_at": None, "task": None, "flag": None}
        try:
            rec = loops.inspect(project, loop)
        except CorruptState as exc:
            row["flag"] = f"CORRUPT: {exc.message}"
        except BadInput as exc:
            row["flag"] = f"UNTRACKED: {loops.UNTRACKED_HINT}" if "UNTRACKED" in exc.message else exc.message
        else:
            row.update({k: rec.state[k] for k in ("status", "halt_reason", "iteration_count", "started_at")})
            row["task"] = next(iter(loops.bound_tasks(project, loop, rec.state)), None)
            if rec.tamper:
                row["flag"] = f"TAMPERED: {rec.tamper}"
            elif rec.state["status"] == "halted":
                row["flag"] = f"HALTED: {rec.state['halt_reason']}; a human runs automaton --approve --loop {loop}"
        rows.append(row)
    return rows


def _table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [f"  {'NAME':24} {'STATUS':9} {'HALT_REASON':21} {'ITER':>5} STARTED_AT"]
    for r in rows:
        lines.append(f"  {r['name']:24} {r['status'] or '-':9} {r['halt_reason'] or '-':21}"
                     f" {'-' if r['iteration_count'] is None else r['iteration_count']:>5} {r['started_at'] or '-'}")
        if r["flag"]:
            lines.append(f"      ! {r['flag']}")
    return lines


def loop_list(project: Project) -> Outcome:
    """R9 `--loop-list`: a table; data {"loops": [{name, status, halt_reason, iteration_count, started_at, task,
    flag}]} (task: loop.json `task`, else current_task)."""
    rows = _rows(project)
    return Outcome(lines=_table(rows) if rows else ["no loops"], data={"loops": rows})


def audit_section(project: Project) -> tuple[list[str], list[dict[str, object]], int]:
    """R9: the Loops section of --audit: (text lines, rows, number flagged: halted/corrupt/untracked/tampered)."""
    rows = _rows(project)
    flagged = sum(1 for r in rows if r["flag"])
    lines = [f"Loops: {len(rows)} loop(s), {flagged} flagged", *(_table(rows) if rows else [])]
    return lines, list(rows), flagged
