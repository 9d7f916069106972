"""`--mode run` (tick until a gate says no) and `--mode dry-run` (show, change nothing)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from automaton import harnesses
from automaton.core.errors import ExitCode
from automaton.core.gates import remaining
from automaton.core.outcome import Outcome
from automaton.git.worktree import branch_name, worktree_path
from automaton.harnesses import HarnessRequest
from automaton.runner import prompts
from automaton.runner.tick import TickOptions, default_settings, tick
from automaton.store.layout import Project
from automaton.store.loops import Loop


def run_loop(project: Project, name: str, max_ticks: int | None = None,
             options: TickOptions | None = None, emit: Callable[[list[str]], None] | None = None) -> Outcome:
    """Tick until a gate refuses, the loop completes, a tick is skipped as busy, or
    `max_ticks` ticks ran. Exit 0 when it stopped because the loop completed, max_ticks was
    reached or another tick held the lock; 1 when a gate refused (halted, paused, waiting); 2
    when it refused because loop.json is invalid.
    data: {ticks: [tick data…], stopped: "complete"|"max_ticks"|"busy"|"gate", gate: {...}|None}.
    `emit`: prints each ran tick's lines as it ends (they are then not in the Outcome's lines),
    so a long run shows every tick's result once, when it happens."""
    opts = options or TickOptions()
    ticks: list[dict[str, Any]] = []
    lines: list[str] = []
    warnings: list[str] = []
    while max_ticks is None or len(ticks) < max_ticks:
        out = tick(project, name, opts)
        warnings += out.warnings
        data = out.data or {}
        if out.code != ExitCode.OK:
            lines += out.lines
            code = ExitCode.BAD_INPUT if out.code == ExitCode.BAD_INPUT else ExitCode.REFUSED
            return Outcome(code, lines, {"ticks": ticks, "stopped": "gate", "gate": data}, warnings)
        if emit is not None and not data.get("skipped"):
            emit(out.lines)
        else:
            lines += out.lines
        if data.get("skipped"):
            return Outcome(ExitCode.OK, lines, {"ticks": ticks, "stopped": "busy", "gate": None}, warnings)
        ticks.append(data)
        if data.get("status") == "complete":
            return Outcome(ExitCode.OK, lines, {"ticks": ticks, "stopped": "complete", "gate": None}, warnings)
    lines.append(f"stopped after {len(ticks)} tick(s) (--max-ticks)")
    return Outcome(ExitCode.OK, lines, {"ticks": ticks, "stopped": "max_ticks", "gate": None}, warnings)


def dry_run(project: Project, name: str, options: TickOptions | None = None) -> Outcome:
    """What the next tick would do, changing nothing: no lock, no gate halts, no worktree,
    no harness, no state write. data: {loop, iteration, cwd, implement_prompt, implement_argv,
    verify_argv | verify_prompt, status}."""
    opts = options or TickOptions()
    loop = Loop.resolve(project, name)
    loop_dir = loop.dir
    cfg = loop.read_config()
    state = loop.read_state()
    n = state.iteration_count + 1
    if not cfg.blast_radius.use_worktree:
        cwd, where = project.root, "the project root (blast_radius.use_worktree is false)"
    else:
        cwd = worktree_path(loop_dir)
        where = f"{cwd} on {branch_name(name)}" + ("" if cwd.is_dir() else " (created by the tick)")
    left_iter, left_usd = remaining(state, cfg.brakes)
    ctx = prompts.TickContext(cfg.task or state.current_task, n, left_iter, left_usd, state.last_verdict,
                              cfg.blast_radius.file_scope, cwd)
    implement = prompts.implement_prompt(cfg, loop_dir, ctx)
    max_usd = cfg.brakes.max_tick_usd if left_usd is None else min(cfg.brakes.max_tick_usd, left_usd)
    run_dir = loop.run_dir(n)
    settings = opts.settings_path or default_settings(loop, cfg.harness.name, write=False)
    req = HarnessRequest(role="implement", prompt=implement, cwd=cwd, timeout_s=cfg.harness.timeout_s,
                         run_dir=run_dir, model=cfg.harness.model, args=tuple(cfg.harness.args), max_usd=max_usd,
                         settings_path=settings,
                         command=tuple(cfg.harness.command) if cfg.harness.command else None,
                         loop_dir=loop_dir, iteration=n)
    inv = harnesses.get(cfg.harness.name).invocation(req)
    data: dict[str, Any] = {"loop": loop.name, "status": state.status, "iteration": n, "cwd": str(cwd),
                            "implement_prompt": implement, "implement_argv": inv.argv}
    lines = [f"dry run of loop {loop.name}: status {state.status}, next iteration {n}; nothing is changed",
             f"cwd: {where}", f"implement ({cfg.harness.name}) argv: {json.dumps(inv.argv)}"]
    if cfg.roles.verify.command:
        argv = list(cfg.roles.verify.command)
        if cfg.roles.verify.score == "junit":
            argv.append(f"--junitxml={run_dir / 'junit.xml'}")
        data["verify_argv"] = argv
        lines.append(f"verify argv: {json.dumps(argv)} (score from {cfg.roles.verify.score})")
    else:
        vprompt = prompts.verify_prompt(cfg, loop_dir, ctx)
        data["verify_prompt"] = vprompt
        vinv = harnesses.get(cfg.harness.name).invocation(replace(req, role="verify", prompt=vprompt))
        lines.append(f"verify ({cfg.harness.name}) argv: {json.dumps(vinv.argv)}")
    lines += ["--- implement prompt ---", *implement.rstrip().splitlines(), "--- end ---"]
    if state.status != "running":
        lines.append(f"note: the gate would refuse: status is {state.status}")
    return Outcome(ExitCode.OK, lines, data)
