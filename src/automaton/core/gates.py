"""The six pre-tick gates (README.md#the-six-gates-and-how-to-clear-a-halt): pure rules, facts in, GateResult out.

Order: status -> (config seal) -> iterations -> budget -> task phase -> drift -> plateau.
The first gate that says no decides. Facts that cost I/O (task phase, git drift, VRAM probe)
are asked for lazily through `GateFacts`, so a loop halted at gate 2 never runs git.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from automaton.core.loopstate import micro_to_usd, usd_to_micro

# `--check-gate`, every tick and the hook in a loop's worktree import this module, and each of
# them loads `dataclasses` already (core.loopstate's LoopState): annotations only under
# TYPE_CHECKING (`typing` stays off those paths), pathspec only for patterns that are not plain
# (core/scope.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Protocol

    from automaton.core.loopconfig import Brakes, LoopConfig
    from automaton.core.loopstate import Death, LoopState
    from automaton.core.scope import Scope
else:
    Protocol = object

WAITING = "waiting:approval"
DEFERRED = "deferred"  # reason `deferred:<ISO UTC until>`: the agent's account hit a usage limit
CONFIG_CHANGED = "config_changed"
STATE_TAMPERED = "state_tampered"
# halt_detail prefix of a loop created halted: no human has seen its loop.json yet (commands.first_approval)
FIRST_APPROVAL = "first_approval"
_SHOWN_FILES = 10  # out-of-scope files named in halt_detail (all are in out_of_scope_files)


@dataclass(frozen=True)
class GateResult:
    """The verdict. `halt` is a NEW halt to apply (one of the five deaths) or None.

    `reason`: "ok", "halted:<death>", "paused", "complete", "waiting:approval",
    "task_tampered", "task_untracked", "budget_unknown" or "deferred:<ISO UTC>". `detail`
    becomes halt_detail.
    """

    ok: bool
    reason: str
    gate: str
    halt: Death | None = None
    detail: str | None = None
    out_of_scope_files: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskFacts:
    """The bound task: its phase (None: legacy folder without `.state`) and tamper finding."""

    task: str
    phase: str | None
    tamper: str = ""


@dataclass(frozen=True)
class DriftFacts:
    """Changed files of the worktree, or why they are unknown.

    `skipped`: no worktree / no git (gate skipped with this warning).
    `error`: git is there but the diff failed (the gate halts, never "0 files").
    `nested`: repositories nested in the worktree, or gitlinks changed since the base commit
    (the gate halts whatever the scope: `automaton.git.nested`).
    """

    files: tuple[str, ...] = ()
    skipped: str | None = None
    error: str | None = None
    blobs: tuple[tuple[str, str], ...] = ()  # (path, git blob id or "deleted") of accepted-drift paths
    nested: tuple[str, ...] = ()


@dataclass(frozen=True)
class VramFacts:
    """The VRAM probe's answer for a local harness; `error` when it could not run."""

    eligible: bool = False
    context_tokens: int | None = None
    error: str | None = None


class GateFacts(Protocol):
    """Lazy facts the gates ask for, in gate order; each is asked at most once."""

    def config_sha256(self) -> str: ...  # SHA-256 hex of loop.json now ("" when missing)
    def config(self) -> LoopConfig: ...
    def vram(self, kv_kib_per_token: float | None) -> VramFacts: ...
    def task(self) -> TaskFacts | None: ...
    def drift(self) -> DriftFacts: ...


def _halt(gate: str, death: Death, detail: str, files: Iterable[str] = ()) -> GateResult:
    return GateResult(False, f"halted:{death}", gate, death, detail, tuple(files))


def gate_status(state: LoopState) -> GateResult | None:
    """Gate 1: a loop that is not `running` is not ok; no new halt is written."""
    status = state.status
    if status == "running":
        return None
    if status == "halted":
        return GateResult(False, f"halted:{state.halt_reason}", "status", detail=state.halt_detail)
    return GateResult(False, str(status), "status")


def gate_config_seal(state: LoopState, current_sha256: str) -> GateResult | None:
    """Right after gate 1: loop.json must still be the sealed one."""
    if current_sha256 == state.config_sha256:
        return None
    return _halt("config", "human_intervention", CONFIG_CHANGED)


def remaining(state: LoopState, brakes: Brakes) -> tuple[int, float | None]:
    """(iterations left, USD left or None when the budget is not in USD), floored at 0."""
    iters, micro = state.used()
    left_usd = None if brakes.max_budget_usd is None else \
        micro_to_usd(max(0, usd_to_micro(brakes.max_budget_usd) - micro))
    return max(0, brakes.max_iterations - iters), left_usd


def agent_roles(config: LoopConfig) -> int:
    """How many roles of one tick run the loop's agent harness: implement always, verify when it
    is a prompt (not a command), orchestrate when it is not the builtin rule (1..3)."""
    roles = config.roles
    return 1 + (roles.verify.command is None) + (not roles.orchestrate.builtin)


def reservation_micro(config: LoopConfig) -> int:
    """A tick's worst-case charge, in integer micro-USD: `max_tick_usd` for each role that runs
    the agent harness (`agent_roles`), since each role's cost may be unknown and an unknown cost
    is counted at `max_tick_usd` (`runner.ledger.tick_cost`). The tick reserves exactly this
    before any agent starts (`TICK_START reserved_usd=`), and the budget gate lets a tick start
    only when what is left of `max_budget_usd` covers it. A harness that reports a cost above
    its cap (one with no cap of its own) is counted at what it reported: the reservation bounds
    only what automaton can bound."""
    return agent_roles(config) * usd_to_micro(config.brakes.max_tick_usd)


def gate_iterations(state: LoopState, brakes: Brakes) -> GateResult | None:
    """Gate 2: iteration_count - iterations_at_approval >= max_iterations -> iterations_exhausted."""
    iters, _ = state.used()
    if iters < brakes.max_iterations:
        return None
    return _halt("iterations", "iterations_exhausted", f"{iters} of {brakes.max_iterations} iterations used")


def gate_budget(state: LoopState, brakes: Brakes, vram: VramFacts | None,
                reserve_micro: int = 0) -> GateResult | None:
    """Gate 3: budget_exhausted when what is left of `max_budget_usd` since the approval does
    not cover the next tick's reservation (`reserve_micro`, micro-USD: `reservation_micro`),
    so that a tick never starts that could take spent past the budget; detail
    `spent $S of $B` (+ `; $L left, a tick reserves $R` when something is left). For a local
    harness (`vram` given) a probe that says not loop-mode eligible -> budget_exhausted, and a
    probe that could not run -> not ok without a halt ("budget_unknown")."""
    _, micro = state.used()
    if brakes.max_budget_usd is not None:
        left = usd_to_micro(brakes.max_budget_usd) - micro
        if left <= 0 or left < reserve_micro:
            more = f"; ${micro_to_usd(left):.4f} left, a tick reserves ${micro_to_usd(reserve_micro):.4f}" \
                if left > 0 else ""
            return _halt("budget", "budget_exhausted",
                         f"spent ${micro_to_usd(micro):.4f} of ${brakes.max_budget_usd:.2f}{more}")
    if vram is None:
        return None
    if vram.error is not None:
        return GateResult(False, "budget_unknown", "budget", detail=f"VRAM probe failed: {vram.error}")
    if not vram.eligible:
        return _halt("budget", "budget_exhausted",
                     f"local model context {vram.context_tokens} tokens < 16000 (VRAM probe)")
    return None


def gate_task_phase(task: TaskFacts | None) -> GateResult | None:
    """Gate 4: task in human_intervention -> halt; at :awaiting_approval -> not ok, no halt."""
    if task is None:
        return None
    if task.tamper:
        return GateResult(False, "task_tampered", "task", detail=f"task {task.task}: {task.tamper}")
    if task.phase is None:
        return GateResult(False, "task_untracked", "task",
                          detail=f"task {task.task} has no .state: run automaton --phase --task {task.task}")
    if task.phase == "human_intervention":
        return _halt("task", "human_intervention", f"task {task.task} is at human_intervention")
    if task.phase.endswith(":awaiting_approval"):
        return GateResult(False, WAITING, "task", detail=f"task {task.task} is at {task.phase}")
    return None


def scope_spec(file_scope: Iterable[str]) -> Scope:
    """gitignore-style patterns (`src/**`, `!src/secret.py`), as `pathspec` reads them
    (`core.scope`: plain patterns without importing it)."""
    from automaton.core.scope import Scope

    return Scope(file_scope)


def accepted_entry(path: str, blob: str) -> str:
    """An `accepted_drift` entry: `path@<git blob sha1 or "deleted">` (content-bound: a later
    write to the same path is drift again)."""
    return f"{path}@{blob}"


def out_of_scope(files: Iterable[str], file_scope: Iterable[str], accepted: Iterable[str],
                 blobs: Iterable[tuple[str, str]] = ()) -> list[str]:
    """Sorted `files` (posix, relative to the worktree root) not matched by `file_scope`, minus
    those accepted: `path@blob` in `accepted` where `blobs` gives that path's current blob. A
    plain-path entry (older states) accepts nothing."""
    spec, ok, now = scope_spec(file_scope), set(accepted), dict(blobs)
    return sorted({f for f in files if not spec.match_file(f)
                   and not (f in now and accepted_entry(f, now[f]) in ok)})


def accepted_paths(accepted: Iterable[str]) -> list[str]:
    """The paths named by `accepted_drift` entries (`path@blob`), sorted, without duplicates."""
    return sorted({e.rpartition("@")[0] for e in accepted if "@" in e})


def gate_drift(drift: DriftFacts, config: LoopConfig, accepted: Iterable[str]) -> GateResult | None:
    """Gate 5: changed files outside file_scope (minus accepted_drift) -> drift_detected; a
    nested repository -> drift_detected `nested repository: <paths>` (never accepted)."""
    if drift.skipped is not None:
        return None
    if drift.nested:
        more = f" (+{len(drift.nested) - _SHOWN_FILES} more)" if len(drift.nested) > _SHOWN_FILES else ""
        return _halt("drift", "drift_detected", f"nested repository: {', '.join(drift.nested[:_SHOWN_FILES])}{more}")
    if drift.error is not None:
        return _halt("drift", "drift_detected", f"drift could not be computed: {drift.error}")
    bad = out_of_scope(drift.files, config.blast_radius.file_scope, accepted, drift.blobs)
    if not bad:
        return None
    shown = ", ".join(bad[:_SHOWN_FILES]) + (f" (+{len(bad) - _SHOWN_FILES} more)" if len(bad) > _SHOWN_FILES else "")
    return _halt("drift", "drift_detected", f"out of scope: {shown}", bad)


def gate_score_plateau(history: Sequence[float], brakes: Brakes) -> GateResult | None:
    """Gate 6: a full window whose max - min <= epsilon and whose last score < target -> verifier_failed."""
    window = history[-brakes.score_plateau_window:]
    if len(window) < brakes.score_plateau_window:
        return None
    spread = max(window) - min(window)
    if spread > brakes.plateau_epsilon or window[-1] >= brakes.target_score:
        return None
    return _halt("plateau", "verifier_failed",
                 f"last {len(window)} scores flat (spread {spread:g} <= {brakes.plateau_epsilon:g})"
                 f" below target {brakes.target_score:g}")


def gate_deferred(harness: str, until_iso: str | None, why: str = "") -> GateResult | None:
    """After the six gates pass: a deferral of the loop's harness account that has not ended
    (`until_iso`, ISO-8601 UTC; None: none) refuses the tick without a halt, reason
    `deferred:<until>`; `why`: the agent's line that caused it."""
    if until_iso is None:
        return None
    said = f" ({why})" if why else ""
    return GateResult(False, f"{DEFERRED}:{until_iso}", DEFERRED,
                      detail=f"{harness} usage limit{said}: every loop using {harness} here waits until {until_iso}")


def run_gates(state: LoopState, facts: GateFacts) -> tuple[GateResult, LoopConfig | None]:
    """Run every gate in order; returns (first failure or an ok result, the config if it was read).

    Warnings (a skipped drift gate) are carried on the result either way.
    """
    warnings: list[str] = []
    first = gate_status(state) or gate_config_seal(state, facts.config_sha256())
    if first is not None:
        return first, None
    config = facts.config()
    # The config used must be the one sealed, not only the file hashed a moment before it.
    first = gate_config_seal(state, config.sha256)
    if first is not None:
        return first, None
    brakes = config.brakes
    result = gate_iterations(state, brakes)
    if result is None:
        vram = facts.vram(config.harness.kv_kib_per_token) if config.harness.local else None
        result = gate_budget(state, brakes, vram, reservation_micro(config))
    if result is None:
        result = gate_task_phase(facts.task())
    if result is None:
        drift = facts.drift()
        if drift.skipped is not None:
            warnings.append(f"drift gate skipped: {drift.skipped}")
        result = gate_drift(drift, config, state.accepted_drift)
    if result is None:
        result = gate_score_plateau(state.score_history, brakes)
    if result is None:
        result = GateResult(True, "ok", "all")
    return replace(result, warnings=(*result.warnings, *warnings)), config
