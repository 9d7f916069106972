"""One tick of a loop (DESIGN §6): lock, leftovers of a dead tick, gates, worktree, the
reservation, implement, commit, verify, orchestrate, and the settling state update. Every
artefact lands in `runs/<n>/`.

The reservation (`TICK_START n=… reserved_usd=…`): before any harness starts, ONE locked update
counts the iteration and charges `max_tick_usd`; the closing `TICK` line corrects spent_usd by
(counted − reserved). A tick killed at any point (even `kill -9` of the runner by its own
agent) leaves its iteration counted and `max_tick_usd` charged: never a free tick, and never
a reused `runs/<n>`."""

from __future__ import annotations

import json
import math
import os
import shutil
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from automaton import harnesses
from automaton.commands import loops as loop_cmds
from automaton.core.errors import ExitCode
from automaton.core.gates import remaining
from automaton.core.loopconfig import LoopConfig
from automaton.core.outcome import Outcome
from automaton.core.verdicts import Verdict, json_objects
from automaton.core.sandbox import Policy
from automaton.git.worktree import WorktreeResult
from automaton.harnesses import HarnessRequest, HarnessResult
from automaton.runner import aftercommit, confine, leftovers, prompts
from automaton.runner import verify as verify_mod
from automaton.runner.progress import QUIET, Progress
from automaton.runner.worktree import ensure_for_tick
from automaton.store import loops as store
from automaton.store.chainlog import utc_now
from automaton.store.layout import Project
from automaton.store.locks import Busy, locked

RUNS_DIR = "runs"
SANDBOX_UNAVAILABLE = "sandbox_unavailable"


@dataclass(frozen=True)
class TickOptions:
    """settings_path: agent settings with the automaton hooks for Claude `--settings`
    (default: the project's `.claude/settings.json` when it exists, DESIGN §7);
    progress: where phases are shown."""

    settings_path: Path | None = None
    progress: Progress = QUIET


def run_dir(project: Project, name: str, n: int) -> Path:
    return project.loop_dir(store.require_tracked(project, name)) / RUNS_DIR / str(n)


def default_settings(project: Project, name: str, harness: str, *, write: bool = True) -> Path | None:
    """Claude's `--settings` for a loop tick: the loop's own hook settings (DESIGN §7), i.e.
    the project's `.claude/settings.json` plus the automaton hook, written into the loop folder
    (`write=False`: only the path, for dry-run). None for harnesses that take no settings file."""
    if harness != "claude":
        return None
    from automaton.hooks.install import LOOP_SETTINGS, loop_settings

    if not write:
        return project.loop_dir(store.require_tracked(project, name)) / LOOP_SETTINGS
    return loop_settings(project, name)


def tick(project: Project, name: str, options: TickOptions | None = None) -> Outcome:
    """Run one tick of loop `name`.

    Exit codes (Outcome.code): 0 a tick ran (any verdict, also one that completed the loop)
    or was skipped because another tick holds the loop's lock (logged `SKIPPED reason=busy`);
    1 a gate refused (data = the gate's seed 000 R4 object + `ran: false`). BadInput /
    CorruptState (exit 2) propagate. data keys: ran, skipped, iteration, verdict, cost_usd
    (USD counted against the budget), cost_known, status, worktree, worktree_fallback, run_dir.
    A gate that refuses because loop.json is invalid gives exit 2 (its data carries `error`).
    """
    opts = options or TickOptions()
    store.require_tracked(project, name)
    with ExitStack() as stack:
        try:
            stack.enter_context(locked(store.tick_lock_path(project, name), timeout_s=0))
        except Busy:
            store.log_event(project, name, "SKIPPED", {"reason": "busy"})
            opts.progress.note(f"loop {name}: another tick is running; skipped")
            return Outcome(ExitCode.OK, [f"tick skipped: another tick of loop {name} is running"],
                           {"ran": False, "skipped": "busy"})
        return _locked_tick(project, name, opts)
    raise AssertionError("unreachable")  # pragma: no cover


def _locked_tick(project: Project, name: str, opts: TickOptions) -> Outcome:
    show = opts.progress
    loop_dir = project.loop_dir(store.require_tracked(project, name))
    killed = leftovers.kill_leftovers(loop_dir)  # we hold the tick lock: no live tick owns them
    if killed:
        store.log_event(project, name, "WARNING", {"reason": "leftover_harness",
                                                   "pids": ",".join(map(str, killed))})
        show.note(f"loop {name}: killed {len(killed)} process(es) left running by a dead tick")
    with show.phase(f"loop {name}: gates"):
        gate = loop_cmds.check_gate(project, name)
    if gate.code != ExitCode.OK:
        data = dict(gate.data or {})
        data["ran"] = False
        reason = data.get("reason", "refused")
        show.note(f"loop {name}: gate refused ({reason})")
        code = ExitCode.BAD_INPUT if gate.code == ExitCode.BAD_INPUT else ExitCode.REFUSED
        return Outcome(code, [*gate.lines, f"tick not run: gate says {reason}"], data, gate.warnings)
    cfg = store.read_config(project, name)
    unavailable = confine.refusal(cfg)
    if unavailable is not None:  # before the reservation: a tick that cannot be confined costs nothing
        store.log_event(project, name, "WARNING", {"reason": SANDBOX_UNAVAILABLE, "detail": unavailable})
        line = f"tick not run: {SANDBOX_UNAVAILABLE}: {unavailable}"
        show.note(f"loop {name}: {line}")
        return Outcome(ExitCode.REFUSED, [line], {"ran": False, "reason": SANDBOX_UNAVAILABLE, "detail": unavailable})
    state = store.read_state(project, name)
    with show.phase(f"loop {name}: worktree"):
        wt = ensure_for_tick(project, name, cfg, state)
    warnings = [*gate.warnings, *confine.warnings(cfg)]
    for warning in confine.warnings(cfg):
        show.note(f"warning: {warning}")
    if wt.fallback:
        warnings.append(f"loop {name}: running in the main checkout: {wt.fallback}")
        show.note(f"warning: {wt.fallback}; running in {wt.path}")
    before = store.read_state(project, name)
    iters_left, usd_left = remaining(before, cfg.brakes)  # what the agent is told: before this tick
    state = _reserve(project, name, cfg)
    n = state["iteration_count"]
    folder = run_dir(project, name, n)
    if folder.exists():  # left by a tick of an older automaton that crashed before recording itself
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "runner.json").write_text(json.dumps(
        {"pid": os.getpid(), "pgid": os.getpgrp() if hasattr(os, "getpgrp") else None,
         "marker": leftovers.marker(loop_dir), "reserved_usd": cfg.brakes.max_tick_usd,
         "sandbox": cfg.sandbox}) + "\n", encoding="utf-8")
    with confine.private_tmp(name, n) as tmp:
        return _run_roles(project, name, cfg, opts, wt, state, n, folder, tmp, iters_left, usd_left, warnings)


def _run_roles(project: Project, name: str, cfg: LoopConfig, opts: TickOptions, wt: WorktreeResult,
               state: dict[str, Any], n: int, folder: Path, tmp: Path, iters_left: int, usd_left: float | None,
               warnings: list[str]) -> Outcome:
    """Steps 4–8 with the reservation made: implement, commit, the checks on the commit,
    verify on a clean export, orchestrate, and the settling record."""
    show = opts.progress
    loop_dir = project.loop_dir(store.require_tracked(project, name))
    ctx = prompts.TickContext(cfg.task or state["current_task"], n, iters_left, usd_left,
                              state["last_verdict"], cfg.blast_radius.file_scope, wt.path)
    settings = opts.settings_path or default_settings(project, name, cfg.harness.name)
    max_usd = cfg.brakes.max_tick_usd if usd_left is None else min(cfg.brakes.max_tick_usd, usd_left)
    costs: dict[str, float | None] = {}

    def policy_for(cwd: Path, role: str, harness: str) -> Policy | None:
        # A worktree or the verifier's export is the tick's own: writable whole. The main
        # checkout (a loop without a worktree) is writable only outside brake state.
        own = wt.in_worktree or cwd != wt.path
        return confine.role_policy(cfg, cwd, tmp, project_root=project.root, in_worktree=own,
                                   label=f"loop {name} tick {n} {role}", harness=harness)

    def request(role: str, prompt: str, *, cwd: Path | None = None, sandbox: Policy | None = None) -> HarnessRequest:
        (folder / f"{role}.prompt.md").write_text(prompt, encoding="utf-8")
        where = cwd or wt.path
        return HarnessRequest(
            role=role, prompt=prompt, cwd=where, timeout_s=cfg.harness.timeout_s, run_dir=folder,
            model=cfg.harness.model, args=tuple(cfg.harness.args),
            # The cap covers the whole tick: a later role gets what earlier roles left of it
            # (an unknown cost used all of its cap), so a tick never overshoots by more than it.
            max_usd=round(max(0.0, max_usd - tick_cost(costs, cfg.brakes.max_tick_usd)[0]), 6),
            settings_path=settings,
            command=tuple(cfg.harness.command) if cfg.harness.command else None, loop_dir=loop_dir,
            iteration=n, env={"AUTOMATON_LOOP": name, "AUTOMATON_ITERATION": str(n), **leftovers.marker(loop_dir)},
            sandbox=sandbox if cwd is not None else policy_for(where, role, cfg.harness.name),
        )

    adapter = harnesses.get(cfg.harness.name)
    with show.phase(f"loop {name} tick {n}: implement ({cfg.harness.name})", folder / "implement.log"):
        impl = adapter.run(request("implement", prompts.implement_prompt(cfg, loop_dir, ctx)))
    costs["implement"] = impl.cost_usd
    _note_result(show, "implement", impl)
    after = aftercommit.settle(project, name, cfg, wt, n, impl)
    warnings += after.warnings
    for line in after.notes:
        show.note(f"  {line}")
    verdict = Verdict(None, False, False, after.skip_verify or "", "none")
    complete, decision = False, "continue"
    if after.skip_verify is None:
        with show.phase(f"loop {name} tick {n}: verify", folder / "verify.log"):
            verdict = _verify_clean(cfg, adapter, request, folder, wt, after.head, tmp, loop_dir, ctx, costs,
                                    policy_for, project)
        complete, decision = _orchestrate(cfg, adapter, request, loop_dir, ctx, verdict, costs)
    (folder / "verdict.json").write_text(json.dumps(verdict.to_dict(), indent=2) + "\n", encoding="utf-8")
    asked, applied = _apply_transition(project, ctx.task, decision)
    if asked is not None:
        show.note(f"  orchestrate: transition {ctx.task} -> {asked}: {applied}")
        (folder / "transition.json").write_text(json.dumps({"task": ctx.task, "phase": asked, "result": applied})
                                                + "\n", encoding="utf-8")
    counted, known = tick_cost(costs, cfg.brakes.max_tick_usd)
    if after.free:  # the agent never started (not installed, refused to start): nothing was spent
        counted, known = 0.0, True
    (folder / "cost.json").write_text(json.dumps(
        {"by_role": costs, "known": known, "counted_usd": counted}, indent=2) + "\n", encoding="utf-8")
    new = _record(project, name, cfg, n, verdict, counted, known, complete, impl, after.sha)
    if new["status"] == "complete":
        from automaton.notify import notify_completion

        notify_completion(project, name, new)  # never raises; a failure is logged as a WARNING
    score = "unscored" if verdict.score is None else f"{verdict.score:.4f}"
    line = (f"tick {n} of loop {name}: score {score} ({verdict.summary}), cost ${counted:.4f}"
            f"{'' if known else ' (unknown costs counted at max_tick_usd)'}, status {new['status']}")
    show.note(line)
    data = {"ran": True, "skipped": None, "iteration": n, "verdict": verdict.to_dict(), "cost_usd": counted,
            "cost_known": known, "status": new["status"], "decision": decision,
            "transition": None if asked is None else {"task": ctx.task, "phase": asked, "result": applied},
            "worktree": str(wt.path), "sandbox": cfg.sandbox, "halt": after.halt,
            "worktree_branch": wt.branch, "worktree_fallback": wt.fallback, "commit": after.sha,
            "run_dir": str(folder), "implement": {"exit_status": impl.exit_status, "error": impl.error,
                                                  "timed_out": impl.timed_out}}
    (folder / "tick.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return Outcome(ExitCode.OK, [line], data, warnings)


def _verify_clean(cfg: LoopConfig, adapter: harnesses.Harness, request: Any, folder: Path, wt: WorktreeResult,
                  head: str | None, tmp: Path, loop_dir: Path, ctx: prompts.TickContext,
                  costs: dict[str, float | None], policy_for: Any, project: Project) -> Verdict:
    """Step 6 on a clean export of the tick's commit (runner/verify.py); an export that fails is
    an unscored verdict, never a verification of the agent's own tree."""
    from automaton.git.errors import DriftError

    try:
        where = verify_mod.place(cfg, project.root, head if wt.in_worktree else None, wt.base_commit, tmp, wt.path)
    except (DriftError, OSError) as exc:
        return Verdict(None, False, False, f"verify not run: the tick's commit could not be exported ({exc})", "none")
    return verify_mod.run_verify(cfg, adapter, request, folder, where, tmp, loop_dir, policy_for,
                                 lambda: prompts.verify_prompt(cfg, loop_dir, ctx), costs)


def _note_result(show: Progress, role: str, res: HarnessResult) -> None:
    if res.timed_out:
        show.note(f"  {role}: timed out; the iteration still counts")
    elif res.error:
        show.note(f"  {role}: {res.error}")


def _orchestrate(cfg: LoopConfig, adapter: harnesses.Harness, request: Any, loop_dir: Path,
                 ctx: prompts.TickContext, verdict: Verdict, costs: dict[str, float | None]) -> tuple[bool, str]:
    """Step 7. Builtin: complete when the verdict is done or its score reaches target_score.
    Otherwise the orchestrate prompt's last JSON object with a `decision` key:
    `{"decision": "complete"|"continue", "transition": PHASE?}`; an unreadable decision
    continues (the brakes still bound the loop). A `transition` is applied to the loop's task
    later, through the enforced task API (see `_apply_transition`)."""
    reached = verdict.score is not None and verdict.score >= cfg.brakes.target_score
    if cfg.roles.orchestrate.builtin:
        return (verdict.done or reached), ("complete" if (verdict.done or reached) else "continue")
    res = adapter.run(request("orchestrate", prompts.orchestrate_prompt(cfg, loop_dir, ctx, verdict.to_dict())))
    costs["orchestrate"] = res.cost_usd
    decision = "continue"
    for obj in reversed(json_objects(res.final_text)):
        if obj.get("decision") in ("complete", "continue"):
            decision = str(obj["decision"])
            if isinstance(obj.get("transition"), str):
                decision += f" transition={obj['transition']}"
            break
    return decision.startswith("complete"), decision


def _apply_transition(project: Project, task: str | None, decision: str) -> tuple[str | None, str | None]:
    """Apply an orchestrator's `transition=PHASE` to the loop's task through the same enforced
    task API a human uses (`commands.tasks.transition`: sign-offs, artifacts, forbidden files,
    R8 all apply). Returns (phase asked, result line); a refusal is recorded, never forced."""
    _, _, phase = decision.partition(" transition=")
    if not phase:
        return None, None
    if not task:
        return phase, "refused: the loop has no task to transition"
    from automaton.commands.tasks import transition
    from automaton.core.errors import AutomatonError

    try:
        out = transition(project, task, phase)
    except AutomatonError as exc:
        return phase, f"refused: {exc.message}"
    return phase, "; ".join(out.lines)


def _reserve(project: Project, name: str, cfg: LoopConfig) -> dict[str, Any]:
    """Before any harness: ONE locked update counts the iteration and charges max_tick_usd
    (logged `TICK_START n=… reserved_usd=…`); returns the new state (its iteration_count is n)."""
    reserved = cfg.brakes.max_tick_usd

    def mutate(s: dict[str, Any]) -> None:
        s["iteration_count"] += 1
        s["spent_usd"] = round(float(s["spent_usd"]) + reserved, 6)
        s["last_tick_at"] = utc_now()

    n = store.read_state(project, name)["iteration_count"] + 1
    # reserved_usd exactly as the float (repr round-trips): the log check gives back no more.
    new = store.update_state(project, name, "TICK_START", {"n": n, "reserved_usd": repr(reserved)}, mutate)
    if new["iteration_count"] != n:  # impossible under the tick lock; never mis-number runs/<n>
        raise RuntimeError(f"loop {name}: iteration moved under the tick lock ({n} -> {new['iteration_count']})")
    return new


def tick_cost(costs: dict[str, float | None], max_tick_usd: float) -> tuple[float, bool]:
    """(USD counted against the budget, whether every role's cost was known).

    An unknown cost is never $0 (DESIGN §5 gate 3): each role whose cost could not be read
    counts at `max_tick_usd`, on top of what the known roles reported, so a tick with a known
    expensive role and an unknown one is never counted below what it is known to have spent.
    A negative or non-finite reported cost is unknown too.
    """
    # A negative or non-finite "cost" is not a reading: counted as unknown (a refund would lower spent_usd).
    readable = [c for c in costs.values() if c is not None and math.isfinite(c) and c >= 0]
    unknown = len(costs) - len(readable)
    known_sum = sum(readable)
    return round(known_sum + unknown * max_tick_usd, 6), unknown == 0


def _record(project: Project, name: str, cfg: LoopConfig, n: int, verdict: Verdict, counted: float, known: bool,
            complete: bool, impl: HarnessResult, commit_sha: str | None) -> dict[str, Any]:
    """Step 8: ONE locked read-modify-write settling the reservation (spent_usd += counted −
    max_tick_usd; the iteration was counted by `_reserve`), the verdict and the score window."""
    window = cfg.brakes.score_plateau_window
    reserved = cfg.brakes.max_tick_usd

    def mutate(s: dict[str, Any]) -> None:
        s["spent_usd"] = round(max(0.0, float(s["spent_usd"]) + counted - reserved), 6)
        s["last_tick_at"] = utc_now()
        s["last_verdict"] = verdict.to_dict()
        if verdict.score is not None:  # unscored iterations never feed the plateau window
            s["score_history"] = [*s["score_history"], verdict.score][-window:]
        if complete and s["status"] == "running":
            s["status"] = "complete"

    score = "null" if verdict.score is None else f"{verdict.score:.4f}"
    fields: dict[str, object] = {"n": n, "score": score, "cost": f"{counted:.4f}",
                                 "cost_known": known, "complete": complete}
    if impl.timed_out:
        fields["timed_out"] = True
    if commit_sha:
        fields["commit"] = commit_sha[:12]
    return store.update_state(project, name, "TICK", fields, mutate, refund_usd=max(0.0, reserved - counted))
