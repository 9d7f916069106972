"""One tick of a loop (docs/architecture.md#the-life-of-a-tick): lock, leftovers of a dead tick,
gates, worktree, the reservation, implement, commit, verify, orchestrate, and the settling state
update. Every artefact lands in `runs/<n>/`.

`tick` resolves the loop's name once (`store.loops.Loop.resolve`) and every step below takes
that `Loop` handle: nothing in the pipeline looks the loop up by name again.

The reservation (`TICK_START n=… reserved_usd=…`): before any harness starts, ONE locked update
counts the iteration and charges the tick's worst case (`max_tick_usd` per role that runs the
agent, `core.gates.reservation_micro`; the budget gate let the tick start only because what is
left covers it); the closing `TICK` line corrects spent_usd by (counted − reserved). A tick
killed at any point (even `kill -9` of the runner by its own agent) leaves its iteration
counted and its reservation charged: never a free tick, and never
a reused `runs/<n>`."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from automaton import harnesses
from automaton.commands import holdout_git, loop_gate
from automaton.commands.halts import halt_now, stop_schedule
from automaton.core.errors import EnvironmentFailure, ExitCode, environment_errno
from automaton.core.gates import CONFIG_CHANGED, remaining
from automaton.core.loopconfig import MIB, LoopConfig
from automaton.core.loopstate import Event, LogEvent, LoopState
from automaton.core.outcome import Outcome
from automaton.core.sandbox import Policy
from automaton.core.scores import score_text
from automaton.core.verdicts import Verdict
from automaton.git.errors import DriftError
from automaton.git.harden import git_folder_of, probe_once
from automaton.git.worktree import WorktreeResult
from automaton.harnesses import HarnessRequest, HarnessResult, versions
from automaton.harnesses._unavailable import detect
from automaton.hooks.install import LOOP_SETTINGS, loop_settings
from automaton.notify import notify_completion
from automaton.proc import pinned_programs
from automaton.runner import (
    account,
    aftercommit,
    agentconfig,
    confine,
    deferral,
    freeze,
    iohalt,
    ledger,
    leftovers,
    orchestrate,
    prompts,
    skip,
    unscored,
)
from automaton.runner import verify as verify_mod
from automaton.runner.ledger import tick_cost as tick_cost  # re-exported: callers and tests read it here
from automaton.runner.progress import QUIET, Progress
from automaton.runner.worktree import ensure_for_tick
from automaton.sandbox import reaper
from automaton.store import claims, deferrals
from automaton.store.layout import Project, kept_export_of
from automaton.store.locks import Busy, locked
from automaton.store.loops import Loop

SANDBOX_UNAVAILABLE = "sandbox_unavailable"
TASK_CLAIMED = "task_claimed"  # another loop claimed, or is ticking on, a task this loop is bound to


@dataclass(frozen=True)
class TickOptions:
    """settings_path: agent settings with the automaton hooks for Claude `--settings`
    (default: `default_settings`, the loop's own hook settings);
    progress: where phases are shown."""

    settings_path: Path | None = None
    progress: Progress = QUIET
    # With a state remote (`commands.remote_state.claim`): called with n once the tick's
    # `TICK_START n` is written, before any agent starts; None when the claim landed, else
    # the Outcome that ends the tick there (its account reservation released at $0).
    claim: Callable[[int], Outcome | None] | None = None
    # The account ledger the tick reserves in (`runner.account.Book`): this machine's by
    # default; a state remote's (`commands.remote_account.Remote`) for a loop whose state lives there.
    account_book: account.Book = account.LOCAL


def default_settings(loop: Loop, harness: str, *, write: bool = True) -> Path | None:
    """Claude's `--settings` for a loop tick: the loop's own hook settings, i.e.
    the project's `.claude/settings.json` plus the automaton hook, written into the loop folder
    (`write=False`: only the path, for dry-run). None for harnesses that take no settings file."""
    if harness != "claude":
        return None

    if not write:
        return loop.dir / LOOP_SETTINGS
    return loop_settings(loop.project, loop.name)


def tick(project: Project, name: str, options: TickOptions | None = None, *, lock_held: bool = False) -> Outcome:
    """Run one tick of loop `name`. `lock_held`: the caller holds the loop's tick lock already
    (`runner.skip.tick_lock`, taken by `automaton-loop` before it imports the runner).

    Exit codes (Outcome.code): 0 a tick ran (any verdict, also one that completed the loop)
    or was skipped because another tick holds the loop's lock (logged `SKIPPED reason=busy`);
    1 a gate refused (data = the gate object of docs/architecture.md#stable-interfaces + `ran: false`). BadInput /
    CorruptState (exit 2) propagate. data keys: ran, skipped, iteration, verdict, cost_usd
    (USD counted against the budget), cost_known, status, worktree, worktree_fallback, run_dir.
    A gate that refuses because loop.json is invalid gives exit 2 (its data carries `error`).
    """
    opts = options or TickOptions()
    loop = Loop.resolve(project, name)  # the tick's one lookup by name: every step gets the handle
    # Every program the runner itself starts (git above all) comes from outside the project,
    # whose `.venv/bin` the agent may write; the roles keep their PATH (proc.pinned_programs).
    with ExitStack() as stack:
        stack.enter_context(pinned_programs(project.root))
        if not lock_held:
            try:
                stack.enter_context(locked(loop.tick_lock, timeout_s=0))
            except Busy:
                return skip.skipped(project, loop.name, opts.progress)
        try:
            held = iohalt.record_pending(loop)
            return held if held is not None else _locked_tick(loop, opts)
        except OSError as exc:  # a full disk or a refused write: halted io_error, never a crash
            if not environment_errno(exc):
                raise
            raise iohalt.on_error(loop, exc) from exc
        except EnvironmentFailure as exc:  # one already named (the worktree's git on a full disk)
            raise iohalt.on_error(loop, exc) from exc
    raise AssertionError("unreachable")  # pragma: no cover


def _locked_tick(loop: Loop, opts: TickOptions) -> Outcome:
    show, name, loop_dir = opts.progress, loop.name, loop.dir
    killed = leftovers.kill_leftovers(loop_dir)  # we hold the tick lock: no live tick owns them
    if killed:
        loop.log_event(LogEvent(Event.WARNING, {"reason": "leftover_harness", "pids": ",".join(map(str, killed))}))
        show.note(f"loop {name}: killed {len(killed)} process(es) left running by a dead tick")
    # One filter probe per repository for the whole gate (git.harden.probe_once): the worktree's
    # pointer names a folder inside the project's `.git`, which no agent may write.
    with show.phase(f"loop {name}: gates"), probe_once(trusted=git_folder_of(loop.project.root)):
        gate = loop_gate.check(loop)
    if gate.code != ExitCode.OK:
        data = dict(gate.data or {})
        data["ran"] = False
        reason = data.get("reason", "refused")
        show.note(f"loop {name}: gate refused ({reason})")
        code = ExitCode.BAD_INPUT if gate.code == ExitCode.BAD_INPUT else ExitCode.REFUSED
        # A halt the gate wrote just now turned the unit off already.
        idle = [] if data.get("halted_now") else _stop_idle_schedule(loop, data.get("status"))
        return Outcome(code, [*gate.lines, f"tick not run: gate says {reason}"], data, [*gate.warnings, *idle])
    cfg = loop.read_config()
    state = loop.read_state()
    if cfg.sha256 != state.config_sha256:  # rewritten since its gate checked the seal: never run on it
        line = (f"tick not run: {CONFIG_CHANGED}: {loop.config_file} changed after the gate checked its seal;"
                " the next gate halts the loop")
        show.result(f"loop {name}: {line}")
        return Outcome(ExitCode.REFUSED, [line], {"ran": False, "reason": CONFIG_CHANGED})
    # Read while this tick holds the loop's tick lock, which a claim by another loop must take
    # before it lands (store.claims): no claim comes between this check and the tick's end.
    taken = claims.tick_refusal(loop.project, loop.bound_tasks(state), str(name))
    if taken is not None:  # before the reservation: nothing is charged
        line = f"tick not run: {TASK_CLAIMED}: {taken}"
        show.result(f"loop {name}: {line}")
        return Outcome(ExitCode.REFUSED, [line], {"ran": False, "reason": TASK_CLAIMED, "detail": taken})
    return _confined_tick(loop, cfg, state, opts, gate.warnings)


def _confined_tick(loop: Loop, cfg: LoopConfig, state: LoopState, opts: TickOptions,
                   gate_warnings: list[str]) -> Outcome:
    """The tick once its gates passed and its tasks are its own: the sandbox, the worktree,
    the reservation, then the roles."""
    show, name, loop_dir = opts.progress, loop.name, loop.dir
    unavailable = confine.refusal(cfg)
    if unavailable is not None:  # before the reservation: a tick that cannot be confined costs nothing
        loop.log_event(LogEvent(Event.WARNING, {"reason": SANDBOX_UNAVAILABLE, "detail": unavailable}))
        line = f"tick not run: {SANDBOX_UNAVAILABLE}: {unavailable}"
        show.result(f"loop {name}: {line}")
        return Outcome(ExitCode.REFUSED, [line], {"ran": False, "reason": SANDBOX_UNAVAILABLE, "detail": unavailable})
    missing = _missing_command(cfg)
    if missing is not None:  # before the reservation: an agent that cannot start is not a tick
        detail = f"{aftercommit.HARNESS_UNAVAILABLE}: {missing}"
        halt_now(loop, "human_intervention", detail, "tick")
        line = f"tick not run: halted human_intervention: {detail}"
        show.result(f"loop {name}: {line}")
        return Outcome(ExitCode.REFUSED, [line], {"ran": False, "reason": aftercommit.HARNESS_UNAVAILABLE,
                                                  "detail": missing},
                       [f"loop {name}: halted; a human fixes it and runs automaton --approve --loop {name}"])
    committed = _holdout_committed(loop, cfg, state)
    if committed is not None:  # before the worktree and the reservation: nothing is checked out or charged
        show.result(f"loop {name}: {committed.lines[0]}")
        return committed
    with show.phase(f"loop {name}: worktree"):
        wt = ensure_for_tick(loop, cfg, state)
    said = confine.warnings(cfg, loop.project.root)
    # The gate ran before this tick made the worktree (or recorded its base in place): its "no
    # worktree yet" is stale now, and the drift check after the commit covers this tick.
    stale = wt.in_worktree or wt.base_commit is not None
    warnings = [*(w for w in gate_warnings if not (stale and loop_gate.NO_WORKTREE_YET in w)), *said]
    for warning in said:
        show.note(f"warning: {warning}")
    held_back = confine.left_out(cfg, loop.project.root, in_worktree=wt.in_worktree)
    if held_back is not None:
        warnings.append(held_back)
        show.note(f"warning: {held_back}")
    if wt.fallback:
        warnings.append(f"loop {name}: running in the main checkout: {wt.fallback}")
        show.note(f"warning: {wt.fallback}; running in {wt.path}")
    # The account-wide caps before the loop's own reservation: a reached cap refuses the tick
    # before its iteration is counted (runner/account.py).
    held = account.reserve(loop, cfg, opts.account_book)
    if isinstance(held, Outcome):
        show.result(f"loop {name}: {held.lines[0]}")
        return Outcome(held.code, held.lines, held.data, [*warnings, *held.warnings])
    before = loop.read_state()
    iters_left, usd_left = remaining(before, cfg.brakes)  # what the agent is told: before this tick
    state = ledger.reserve(loop, cfg)
    n = state.iteration_count
    if opts.claim is not None:
        lost = opts.claim(n)
        if lost is not None:  # another runner ticks: nothing ran, the account gets its reservation back
            account.settle(held, Outcome(data={"cost_usd": 0.0}), opts.account_book)
            show.note(f"loop {name}: {lost.lines[0]}")
            return Outcome(lost.code, lost.lines, lost.data, [*warnings, *lost.warnings])
    folder = loop.run_dir(n)
    if folder.exists():  # left by a tick of an older automaton that crashed before recording itself
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "runner.json").write_text(json.dumps(
        {"pid": os.getpid(), "pgid": os.getpgrp() if hasattr(os, "getpgrp") else None,
         "marker": leftovers.marker(loop_dir), "reserved_usd": ledger.reserved_usd(cfg),
         "sandbox": cfg.sandbox}) + "\n", encoding="utf-8")
    with confine.private_tmp(name, n) as tmp:
        out = _run_roles(loop, cfg, opts, wt, state, n, folder, tmp, iters_left, usd_left, warnings)
    # a tick that died before here stays reserved at its full amount
    unsettled = account.settle(held, out, opts.account_book)
    if unsettled is not None:
        show.note(f"warning: {unsettled}")
        out.warnings.append(unsettled)
    return out


def _holdout_committed(loop: Loop, cfg: LoopConfig, state: LoopState) -> Outcome | None:
    """Keep the holdout folder out of git (info/exclude, best effort), then halt the loop
    `human_intervention` (`holdout_committed: …`) when a commit the agent reaches holds a
    holdout test (`commands.holdout_git`, SECURITY.md S50); a tree git cannot read refuses the
    tick (fail closed, no halt). None: the tick goes on."""
    if cfg.roles.verify.holdout is None:
        return None
    with contextlib.suppress(OSError):  # best effort: the check below is the brake, and it reads git's objects
        holdout_git.exclude_holdout(loop, cfg)
    try:
        found = holdout_git.exposed(loop, cfg, state)
    except OSError as exc:  # a holdout file that cannot be read: the verifier could not copy it either
        found = holdout_git.Exposure(error=f"{exc.filename or loop.dir}: {exc.strerror or exc}")
    if found.error is not None:
        line = f"tick not run: cannot check whether git holds the holdout tests: {found.error}"
        return Outcome(ExitCode.REFUSED, [line], {"ran": False, "reason": holdout_git.HOLDOUT_COMMITTED,
                                                  "detail": found.error})
    if not found.paths:
        return None
    detail = holdout_git.detail(loop, cfg, found)
    halt_now(loop, "human_intervention", detail, "tick")
    return Outcome(ExitCode.REFUSED, [f"tick not run: halted human_intervention: {detail}"],
                   {"ran": False, "reason": holdout_git.HOLDOUT_COMMITTED, "detail": detail,
                    "paths": list(found.paths)},
                   [f"loop {loop.name}: halted; a human follows the steps above, then automaton --approve"
                    f" --loop {loop.name}"])


def _missing_command(cfg: LoopConfig) -> str | None:
    """The `unavailable` line (`harnesses._unavailable.detect`, as for exit 127) of a `command`
    harness whose program is not there: an absolute path that is no executable file, or a bare
    name not on PATH; None otherwise. A relative path (`./run.sh`) names a file of the worktree
    and is left to the run, which halts the same way (and charges nothing) if it cannot start."""
    argv0 = cfg.harness.command[0] if cfg.harness.name == "command" and cfg.harness.command else None
    if argv0 is None or (os.sep in argv0 and not os.path.isabs(argv0)):
        return None
    if shutil.which(argv0) is not None:
        return None
    if os.path.isabs(argv0) and os.path.exists(argv0):
        return detect(argv0, 126, None, f"{argv0}: cannot run (not an executable file)")
    return detect(argv0, 127, None, f"{argv0}: not found")


def _run_roles(loop: Loop, cfg: LoopConfig, opts: TickOptions, wt: WorktreeResult,
               state: LoopState, n: int, folder: Path, tmp: Path, iters_left: int, usd_left: float | None,
               warnings: list[str]) -> Outcome:
    """Steps 4–8 with the reservation made: implement, commit, the checks on the commit,
    verify on a clean export, orchestrate, and the settling record. A usage limit reported by
    any role ends the roles there and settles the tick as deferred (`runner.deferral`); an
    unscored tick may halt the loop (`runner.unscored`)."""
    show, started = opts.progress, time.time()
    project, name, loop_dir = loop.project, loop.name, loop.dir
    ctx = prompts.TickContext(cfg.task or state.current_task, n, iters_left, usd_left,
                              state.last_verdict, cfg.blast_radius.file_scope, wt.path)
    settings = opts.settings_path or default_settings(loop, cfg.harness.name)
    max_usd = cfg.brakes.max_tick_usd if usd_left is None else min(cfg.brakes.max_tick_usd, usd_left)
    costs: dict[str, float | None] = {}
    baseline = agentconfig.Baseline.take()  # the user's agent configuration before any role ran

    def policy_for(cwd: Path, role: str, harness: str, own_tmp: Path) -> Policy | None:
        # A worktree or the verifier's export is the tick's own: writable whole. The main
        # checkout (a loop without a worktree) is writable only outside brake state.
        own = wt.in_worktree or cwd != wt.path
        return confine.role_policy(cfg, cwd, own_tmp, project_root=project.root, in_worktree=own,
                                   label=f"loop {name} tick {n} {role}", harness=harness,
                                   network=not (role == "verify" and harness == "command"),
                                   hide=freeze.hidden_for(cfg, loop_dir, role, kept_export_of(project.root, name)))

    def request(role: str, prompt: str, *, cwd: Path | None = None) -> HarnessRequest:
        (folder / f"{role}.prompt.md").write_text(prompt, encoding="utf-8")
        where = cwd or wt.path
        own_tmp = confine.scratch(tmp, role)
        # A fresh copy of the user's CLI configuration for this role alone, never copied back.
        private = agentconfig.seed(cfg.harness.name, own_tmp / "agent-config")
        for problem in private.problems:
            show.note(f"  {role}: {problem}")
        return HarnessRequest(
            role=role, prompt=prompt, cwd=where, timeout_s=cfg.harness.timeout_s, run_dir=folder,
            model=cfg.harness.model, args=tuple(cfg.harness.args),
            # The cap covers the whole tick: a later role gets what earlier roles left of it
            # (an unknown cost used all of its cap), so a tick never overshoots by more than it.
            max_usd=round(max(0.0, max_usd - tick_cost(costs, cfg.brakes.max_tick_usd)[0]), 6),
            settings_path=settings,
            command=tuple(cfg.harness.command) if cfg.harness.command else None, loop_dir=loop_dir,
            iteration=n, env={"AUTOMATON_LOOP": name, "AUTOMATON_ITERATION": str(n), **leftovers.marker(loop_dir),
                              **private.env},
            sandbox=policy_for(where, role, cfg.harness.name, own_tmp),
            max_output_bytes=cfg.harness.max_output_mb * MIB,
        )

    watch = deferral.Watch(harnesses.get(cfg.harness.name))  # every role's usage limit, for the deferral
    adapter: harnesses.Harness = watch
    with show.phase(f"loop {name} tick {n}: implement ({cfg.harness.name})", folder / "implement.log"):
        impl = adapter.run(request("implement", prompts.implement_prompt(cfg, loop_dir, ctx)))
    costs["implement"] = impl.cost_usd
    _note_result(show, "implement", impl)
    # The agent's processes are dead where the runner is a child subreaper (Linux: run_streaming
    # kills every descendant when a role ends) and its sandbox left every `.git` folder
    # read-only: the filter drivers are probed once per repository for the commit and the checks
    # on it, not before each git call. Elsewhere a process it left behind could rewrite the
    # worktree's `.git` pointer and the config it leads to: there the worktree is probed anew
    # before every call (git.harden.probe_once).
    with probe_once(pointers_settled=reaper.become_subreaper(), trusted=git_folder_of(project.root)):
        after = aftercommit.settle(loop, cfg, wt, n, impl, state)
    _config_halt(loop, baseline, after)
    warnings += after.warnings
    for line in after.notes:
        show.note(f"  {line}")
    verdict = Verdict(None, False, False, after.skip_verify or "", "none")
    complete, decision = False, "continue"
    # Only a refusal that changed nothing is put off for free; changed work is verified and counted.
    put_off = watch.limit is not None and not after.changed
    if after.skip_verify is None and not put_off:
        with show.phase(f"loop {name} tick {n}: verify", folder / "verify.log"):
            said: list[str] = []
            verdict = _verify_clean(cfg, adapter, request, folder, wt, after.head, tmp, loop_dir, ctx, costs,
                                    policy_for, project, said)
        for line in said:  # the kept exports are over their bound (runner.exportcache)
            warnings.append(f"loop {name}: {line}")
            show.note(f"  warning: {line}")
        warnings += _verify_halt(loop, verdict, after)
        if watch.limit is None and verdict.halt is None:
            complete, decision = orchestrate.decide(cfg, adapter, request, loop_dir, ctx, verdict, costs)
        warnings += _config_halt(loop, baseline, after)  # the verifier and the orchestrator ran code too
    limit = None if after.changed else watch.limit  # the verifier's own limit too, on an unchanged tick
    if limit is not None and after.halt is None:  # put off: no verdict, the iteration given back
        done = deferral.settle(loop, cfg, n, folder, limit, costs, after.sha)
        show.note(f"  {done.line}")
        return deferral.outcome(done, name, n, cfg, after.sha, wt.path, warnings)
    return _record(loop, cfg, wt, _Roles(n, folder, ctx, impl, after, verdict, complete, decision, costs, watch),
                   started, warnings, show)


@dataclass(frozen=True)
class _Roles:
    """What the roles of tick `n` left for its settling record (`_record`)."""

    n: int
    folder: Path
    ctx: prompts.TickContext
    impl: HarnessResult
    after: aftercommit.After
    verdict: Verdict
    complete: bool
    decision: str
    costs: dict[str, float | None]
    watch: deferral.Watch


def _record(loop: Loop, cfg: LoopConfig, wt: WorktreeResult, roles: _Roles, started: float, warnings: list[str],
            show: Progress) -> Outcome:
    """Step 8: the verdict, the phase transition asked for, the cost and the tick's record; the
    tick's Outcome (exit 0, data as `tick.json`)."""
    project, name = loop.project, loop.name
    n, folder, ctx, impl, after, verdict = roles.n, roles.folder, roles.ctx, roles.impl, roles.after, roles.verdict
    complete, decision, costs, watch = roles.complete, roles.decision, roles.costs, roles.watch
    (folder / "verdict.json").write_text(json.dumps(verdict.to_dict(), indent=2) + "\n", encoding="utf-8")
    asked, applied = orchestrate.apply_transition(project, ctx.task, decision)
    if asked is not None:
        show.note(f"  orchestrate: transition {ctx.task} -> {asked}: {applied}")
        (folder / "transition.json").write_text(json.dumps({"task": ctx.task, "phase": asked, "result": applied})
                                                + "\n", encoding="utf-8")
    costs.update(watch.unpriced(costs))  # a limited role's "$0, refused" does not hold for changed work
    counted, known = tick_cost(costs, cfg.brakes.max_tick_usd)
    if after.free:  # the agent never started (not installed, refused to start): nothing was spent
        counted, known = 0.0, True
    (folder / "cost.json").write_text(json.dumps(
        {"by_role": costs, "known": known, "counted_usd": counted}, indent=2) + "\n", encoding="utf-8")
    new = ledger.record(loop, cfg, n, verdict, counted, known, complete, impl, after.sha,
                        halted=after.halt is not None)
    later = _after_record(loop, cfg, watch, verdict, new, started)  # None when after.halt: not running
    halt = after.halt or later
    if later is not None:
        warnings.append(f"loop {name}: halted: {halt}; a human fixes it and runs automaton --approve --loop {name}")
        show.note(f"  halted: {halt}")
    if new.status == "complete":
        notify_completion(project, name, new)  # never raises; a failure is logged as a WARNING
        warnings += _stop_idle_schedule(loop, new.status)
    score = score_text(verdict.score)
    line = (f"tick {n} of loop {name}: score {score} ({verdict.summary}), cost ${counted:.4f}"
            f"{'' if known else ' (unknown costs counted at max_tick_usd)'}, status {new.status}")
    show.result(line)  # also the Outcome's line on stdout: shown once
    data = {"ran": True, "skipped": None, "iteration": n, "verdict": verdict.to_dict(), "cost_usd": counted,
            "cost_known": known, "status": new.status, "decision": decision,
            "transition": None if asked is None else {"task": ctx.task, "phase": asked, "result": applied},
            "worktree": str(wt.path), "sandbox": cfg.sandbox, "halt": halt,
            "worktree_branch": wt.branch, "worktree_fallback": wt.fallback, "commit": after.sha,
            "run_dir": str(folder), "implement": {"exit_status": impl.exit_status, "error": impl.error,
                                                  "timed_out": impl.timed_out},
            # The agent CLI's version as installed (read from its package, never asked of it).
            "agent_version": versions.installed(cfg.harness.name)}
    (folder / "tick.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return Outcome(ExitCode.OK, [line], data, warnings)


def _stop_idle_schedule(loop: Loop, status: object) -> list[str]:
    """Turn off the OS unit of a loop that no tick may run (`status` complete, halted or
    paused): the loop that just completed, or a fire the status gate refused because an
    earlier disable failed or was undone. The gate's refusal is the brake; this only stops the
    wasted starts. Returns the warning line of a failed disable ([] otherwise); never raises."""
    if status not in ("complete", "halted", "paused"):
        return []
    warning = stop_schedule(loop)
    return [] if warning is None else [warning]


def _verify_clean(cfg: LoopConfig, adapter: harnesses.Harness, request: Any, folder: Path, wt: WorktreeResult,
                  head: str | None, tmp: Path, loop_dir: Path, ctx: prompts.TickContext,
                  costs: dict[str, float | None], policy_for: Any, project: Project, notes: list[str]) -> Verdict:
    """Step 6 on a clean export of the tick's commit (runner/verify.py); an export that fails is
    an unscored verdict, never a verification of the agent's own tree. `notes` gets the lines
    the export has for the user (`verify.place`)."""
    try:
        # In a worktree, or in place in the main checkout with a recorded base (runner.worktree
        # `_in_place`): the tick's commit is exported; otherwise the verifier runs where the tick ran.
        committed = wt.in_worktree or (not cfg.blast_radius.use_worktree and wt.base_commit is not None)
        where = verify_mod.place(cfg, project.root, head if committed else None, wt.base_commit, tmp, wt.path, notes)
    except (DriftError, OSError) as exc:
        return Verdict(None, False, False, f"verify not run: the tick's commit could not be exported ({exc})", "none")
    return verify_mod.run_verify(cfg, adapter, request, folder, where, tmp, loop_dir, policy_for,
                                 lambda: prompts.verify_prompt(cfg, loop_dir, ctx), costs)


def _after_record(loop: Loop, cfg: LoopConfig, watch: deferral.Watch, verdict: Verdict,
                  new: LoopState, started: float) -> str | None:
    """After a recorded (not deferred) tick: the account deferral (recorded when a role hit a
    usage limit, cleared when none did) and the max_unscored brake. Returns a new halt or None."""
    if watch.limit is not None:  # the tick halted after its commit, but the account still waits
        deferrals.record(cfg.harness.name, watch.limit.reset_epoch, watch.limit.message, loop.name)
    else:
        deferrals.clear(cfg.harness.name, started_at=started)
    if verdict.score is None and new.status == "running":
        return unscored.check(loop, cfg)
    return None


def _verify_halt(loop: Loop, verdict: Verdict, after: aftercommit.After) -> list[str]:
    """Halt `human_intervention` with the detail the verify run asked for (`Verdict.halt`:
    tests_removed, verdict_mismatch, holdout_changed; runner/pytest_verify.py), recorded in
    `after` like a halt after the commit. Returns the warning lines ([] without one)."""
    if verdict.halt is None or after.halt is not None:
        return []
    halt_now(loop, "human_intervention", verdict.halt, "verify")
    after.halt = f"human_intervention: {verdict.halt}"
    after.notes.append(f"halted: {after.halt}")
    return [f"loop {loop.name}: halted: {after.halt}; a human checks the tests, then automaton --approve"
            f" --loop {loop.name}"]


def _config_halt(loop: Loop, baseline: agentconfig.Baseline, after: aftercommit.After) -> list[str]:
    """Halt when an agent CLI's user-level configuration changed since `baseline`
    (`agentconfig.halt_if_changed`) and the tick has not halted yet: recorded in `after`
    (halt, skip_verify, warnings). Returns the new warning lines ([] when nothing changed)."""
    if after.halt is not None:
        return []
    halt = agentconfig.halt_if_changed(loop, baseline)
    if halt is None:
        return []
    after.halt = halt
    after.skip_verify = after.skip_verify or f"halted: {halt}"
    line = f"loop {loop.name}: halted: {halt}; a human checks those files, then automaton --approve --loop {loop.name}"
    after.warnings.append(line)
    after.notes.append(f"halted: {halt}")
    return [line]


def _note_result(show: Progress, role: str, res: HarnessResult) -> None:
    if res.usage_limit is not None:
        show.note(f"  {role}: usage limit: {res.usage_limit.message}")
    elif res.timed_out:
        show.note(f"  {role}: timed out; the iteration still counts")
    elif res.error:
        show.note(f"  {role}: {res.error}")


